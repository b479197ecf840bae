"""A store's folder and its files: walking, reading, writing, the lock. What the index, the
watcher and the lower layers need of a store; `memctl.store.Store` builds on it with what needs
git and the index (creating, opening, finding a note by id, committing)."""

from __future__ import annotations

import errno
import os
import stat as stat_module
import unicodedata
from collections.abc import Iterable, Iterator
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime
from pathlib import Path

from memctl.core.arguments import project_name
from memctl.core.errors import MemctlError, NoteFormatError, arg, cmd
from memctl.core.stamp import file_stamp
from memctl.core.vocab import valid_project_name
from memctl.disk.layout import (
    ARCHIVED,
    CONFLICT_DIR,
    EPISODE,
    NOTE,
    NOTES_DIR,
    STATE_DIR,
    TOMBSTONE_DIR,
    MemoryFile,
    belongs_in_store,
    classify,
    slugify,
)
from memctl.disk.settings import Settings

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (start-up)
if TYPE_CHECKING:
    from memctl.core.note import Note
    from memctl.core.noteformat import ParsedFile

# The note model, the parser (and with it YAML), the atomic writer and the lock are imported
# where they are used: a search with a fresh index needs none of them, and start-up time is
# part of every command (tests/test_layers.py pins what `memctl search` loads).


def case_twin_problem(relpath: str, twin: str, *, existing: bool = True) -> str:
    """What is wrong with making the project folder of `relpath` beside `twin` (a folder of
    the store, or with `existing` False, one the same write makes)."""
    return (f"project {relpath.partition('/')[0]!r} differs from the "
            f"{'existing ' if existing else ''}project {twin!r} only in case: a disk that "
            f"ignores case (macOS, Windows) cannot keep them apart")


def case_key(name: str) -> str:
    """`name` with each letter in capitals where that is one letter: two names with the same
    key differ only in case, letter by letter, as on disks that ignore case (`ΟΔΟΣ`, `οδος`
    and `οδοσ` alike), not by Unicode's folding (`ß` and `ss` stay two names)."""
    capitals = name.upper()
    if len(capitals) == len(name):  # no letter became two (each gives one at least): done
        return capitals
    return "".join(upper if len(upper := char.upper()) == 1 else char for char in name)


def twin_among(name: str, names: set[str]) -> str | None:
    """The project name of `names` that differs from `name` only in case (`case_key`): the
    first in order, if there are more."""
    return CaseTwins(names).twin(name)


class CaseTwins:
    """Project names by `case_key`, for many questions about one set: each is one look-up,
    where `twin_among` goes through every name (an import making thousands of project
    folders asked it for each one: quadratic, tests/test_linear_time.py)."""

    def __init__(self, names: Iterable[str] = ()) -> None:
        self._by_key: dict[str, list[str]] = {}
        for name in sorted(names):
            self.add(name)

    def add(self, name: str) -> None:
        """One more name (the first of its key stays the one `twin` gives)."""
        if valid_project_name(name):
            self._by_key.setdefault(case_key(name), []).append(name)

    def twin(self, name: str) -> str | None:
        """The name here that differs from `name` only in case, else None."""
        for other in self._by_key.get(case_key(name), ()):
            if other != name:
                return other
        return None


def same_name_key(name: str) -> str:
    """`name` as a disk that ignores case and Unicode form compares it (macOS: `Deploy.md` and
    `deploy.md`, and `café` composed and decomposed, are one name there): NFC, then
    `case_key`. Two names with one key cannot both be kept on such a disk."""
    return case_key(unicodedata.normalize("NFC", name))


def new_case_twin(root: Path, writes: Iterable[str],
                  removes: Iterable[str] = ()) -> tuple[str, str, bool] | None:
    """The first name that writing `writes` (store-relative) would make below the top level,
    a file or a folder on the way to one, beside a name in the same folder that differs from
    it only in case or Unicode form (`same_name_key`), on disk or made by `writes` too: (the
    new path, the other, whether the other is on disk), else None. A path on disk as it is
    written is no new name, even beside a twin the store holds already, and a file the same
    import removes frees its name (a note renamed from `deploy.md` to `Deploy.md`). Two
    folders differing only in case are a pair one level up (the top level is `CaseTwins`'s,
    for project names). Each folder on disk is listed once: linear in the paths, their
    parts and those folders' entries."""
    freed = set(removes)
    by_key: dict[tuple[str, str], str] = {}  # (folder, key of a name) -> the first path
    on_disk: set[str] = set()
    listed: set[str] = set()
    for path in sorted(writes):
        parent, _, rest = path.partition("/")
        while rest:
            name, _, rest = rest.partition("/")
            if parent not in listed:
                listed.add(parent)
                try:
                    names = os.listdir(root / parent)
                except OSError:
                    names = []  # not there yet (the write makes it), or unreadable
                for there in sorted(names):
                    known = f"{parent}/{there}"
                    if known not in freed:
                        on_disk.add(known)
                        by_key.setdefault((parent, same_name_key(there)), known)
            here = f"{parent}/{name}"
            if here not in on_disk:
                other = by_key.setdefault((parent, same_name_key(name)), here)
                if other != here:
                    return here, other, other in on_disk
            parent = here
    return None


def new_twin_in_tree(before: Iterable[str], after: Iterable[str]) -> tuple[str, str] | None:
    """Two names of the tree `after` (its file paths; folders on the way count, project
    folders at the top too) that are one name on a disk ignoring case and Unicode form
    (`same_name_key`), in one folder, where `before` did not have both already: (a name
    `before` did not have, the other), else None. A sync neither takes nor pushes such a pair
    (docs/sync.md). Each folder is a number, so the cost is linear in the paths' lengths
    however deep they go."""
    nodes: dict[tuple[int, str], int] = {}  # (folder's number, name) -> its number
    parents: list[tuple[int, str]] = [(0, "")]  # number -> (folder's number, name)

    def numbers(path: str) -> Iterator[int]:
        """The number of each folder and file on `path`, its top-level folder first."""
        number, rest = 0, path
        while rest:
            name, _, rest = rest.partition("/")
            parent, number = number, nodes.setdefault((number, name), len(parents))
            if number == len(parents):
                parents.append((parent, name))
            yield number

    def shown(number: int) -> str:
        names = []
        while number:
            number, name = parents[number]
            names.append(name)
        return "/".join(reversed(names))

    before, after = set(before), set(after)
    if after <= before:
        return None  # no new name: a pair is one both had (a push with nothing new)
    old = {number for path in before for number in numbers(path)}
    first: dict[tuple[int, str], int] = {}  # (folder's number, same_name_key) -> a number
    for path in sorted(after):
        for number in numbers(path):
            parent, name = parents[number]
            other = first.setdefault((parent, same_name_key(name)), number)
            if other != number and not (number in old and other in old):
                new, before_too = (other, number) if number in old else (number, other)
                return shown(new), shown(before_too)
    return None


def twin_names_shown(one: str, other: str) -> tuple[str, str]:
    """Two names of a pair `same_name_key` makes one, as a person can tell them apart: with
    every letter that is not ASCII escaped (`cafe\\u0301.md`) when they differ in Unicode form
    alone, which a terminal shows as the same name twice."""
    if unicodedata.normalize("NFC", one) != unicodedata.normalize("NFC", other):
        return one, other

    def escaped(name: str) -> str:
        return name.encode("ascii", "backslashreplace").decode("ascii")

    return escaped(one), escaped(other)


class StoreFiles:
    """A store's folder and its files: what the index, the watcher and the lower layers need.
    No git, no index: see `memctl.store.Store` for those."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self._settings: Settings | None = None

    # --- settings and layout --------------------------------------------------------------

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            self._settings = Settings.load(self.root)
        return self._settings

    def forget_settings(self) -> None:
        """`memctl.toml` read again at the next use of the settings, for a process that
        outlives an edit of it (`memctl mcp`: `memctl.services.serving.ServedStore`). As at
        the first read, a file that does not parse raises there, at each use."""
        self._settings = None

    @property
    def state_dir(self) -> Path:
        path = self.resolve(STATE_DIR)  # a `.memctl` link (planted by a remote) is refused
        if not path.is_dir():
            from memctl.disk.atomic import make_dirs  # lazy: search start-up (see above)

            make_dirs(path)
        return path

    def resolve(self, relpath: str) -> Path:
        """The one way from a store-relative path to a file on disk (docs/security.md): a path
        that could leave the store (absolute, `..`, empty parts, NUL) or that passes through a
        symbolic link — file or folder, reading or writing — is refused, so nothing outside
        the store is ever read into a prompt or written over."""
        self._checked(relpath)
        return self.root / relpath

    def _checked(self, relpath: str, folders: set[str] | None = None, *,
                 file_too: bool = True) -> str:
        """`resolve`, as text. `folders`: the folders this pass of reads already found to be
        no link (a health report reads every file of a store: each folder is checked once).
        Without `file_too`, the last part is left to the caller, which opens it with
        O_NOFOLLOW (`read_regular_file`): one system call less per file read."""
        parts = relpath.split("/")
        if not relpath or relpath.startswith("/") or "\x00" in relpath \
                or any(part in ("", ".", "..") for part in parts):
            raise MemctlError(f"{relpath!r} is not a path inside the store")
        root = str(self.root)  # joined as text: pathlib costs more than the lstat calls
        current = root
        last = len(parts) - 1
        for number, part in enumerate(parts if file_too else parts[:-1]):
            current = os.path.join(current, part)
            if folders is not None and number < last and current in folders:
                continue
            try:
                info = os.lstat(current)
            except FileNotFoundError:
                break  # not there yet: a write makes it, inside the store
            except OSError:
                break  # unreadable: the read or write that follows says so
            if stat_module.S_ISLNK(info.st_mode):
                raise _link_error(relpath, "/".join(parts[:number + 1]))
            if folders is not None and number < last:
                folders.add(current)
        return os.path.join(root, relpath)

    def path(self, relpath: str) -> Path:
        return self.resolve(relpath)

    def relpath(self, path: Path) -> str:
        return Path(path).absolute().relative_to(self.root.absolute()).as_posix()

    def projects(self) -> list[str]:
        names = []
        for entry in os.scandir(self.root):
            if entry.is_dir(follow_symlinks=False) and valid_project_name(entry.name):
                names.append(entry.name)
        return sorted(names)

    def project_dir(self, project: str) -> Path:
        project_name(project)
        return self.root / project

    def new_note_relpath(self, project: str, note_type: str, note_id: str, title: str) -> str:
        slug = slugify(title)
        name = f"{slug}-{note_id}.md" if slug else f"{note_id}.md"
        return f"{project}/{NOTES_DIR}/{note_type}/{name}"

    # --- walking --------------------------------------------------------------------------

    def walk(self) -> Iterator[MemoryFile]:
        """Every memory file, found with scandir (no parsing): the freshness check's input."""
        stack = [("", self.root)]
        while stack:
            prefix, folder = stack.pop()
            try:
                entries = list(os.scandir(folder))
            except (FileNotFoundError, NotADirectoryError, PermissionError):
                continue
            except OSError as exc:
                if exc.errno != errno.ENAMETOOLONG:
                    raise
                # A folder deeper than a path can name (PATH_MAX, made with relative
                # steps): nothing in it can be opened by its path, as for the index's walk;
                # `health` and `export` stopped at it (tests/test_rough_edges.py).
                continue
            for entry in entries:
                name = entry.name
                rel = f"{prefix}{name}"
                try:
                    if entry.is_dir(follow_symlinks=False):
                        if prefix == "":
                            if name in (TOMBSTONE_DIR, CONFLICT_DIR) or valid_project_name(name):
                                stack.append((rel + "/", Path(entry.path)))
                        elif not name.startswith("."):
                            stack.append((rel + "/", Path(entry.path)))
                        continue
                    if not entry.is_file(follow_symlinks=False):
                        continue
                except OSError:
                    continue
                kind = classify(rel)
                if kind is None:
                    continue
                try:
                    info = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                yield MemoryFile(rel, kind[0], kind[1], file_stamp(info))

    # --- reading --------------------------------------------------------------------------

    def read_text(self, relpath: str, folders: set[str] | None = None
                  ) -> tuple[str, os.stat_result]:
        """The text of a file (UTF-8, no NUL) and its stat. `folders`: see `_checked`."""
        # (Where the file itself cannot be opened without following a link, `_checked`
        # looks at it first, as at every folder on its way.)
        path = self._checked(relpath, folders, file_too=not _NOFOLLOW)
        try:
            data, info = read_regular_file(path)
        except FileNotFoundError:
            raise MemctlError(f"{relpath} does not exist") from None
        except PermissionError:
            raise MemctlError(f"{relpath}: permission denied; check the file's permissions") from None
        except IsADirectoryError:
            raise MemctlError(f"{relpath} is a folder, not a note") from None
        except OSError as exc:
            if exc.errno in LINK_ERRNOS:
                raise _link_error(relpath, relpath) from None
            if exc.errno in NOT_A_FILE_ERRNOS:
                raise MemctlError(f"{relpath} is not a regular file") from None
            raise
        if data is None:
            raise MemctlError(f"{relpath} is not a regular file")
        from memctl.core.textfile import decode_file  # lazy: search start-up

        text = decode_file(data)
        if not isinstance(text, str):
            raise NoteFormatError(relpath, *text, data)
        return text, info

    def parse_file(self, relpath: str) -> tuple[str, ParsedFile, os.stat_result]:
        text, info = self.read_text(relpath)
        from memctl.core.noteformat import parse_file  # lazy: YAML, search start-up

        return text, parse_file(text), info

    def read_note(self, relpath: str) -> Note:
        kind = classify(relpath)
        if kind is not None and kind[0] == EPISODE:
            # An episode's id given where a note's is (forget, update, supersede): say what
            # it is and what does work on it.
            raise MemctlError(f"{relpath} is an episode, not a note: {cmd('episode update')} "
                              "changes it; to remove it, delete its file (memctl takes the "
                              "deletion as any change by hand)")
        if kind is None or kind[0] not in (NOTE, ARCHIVED):
            raise MemctlError(f"{relpath} is not a note")
        text, parsed, info = self.parse_file(relpath)
        if parsed.problem is not None:
            raise NoteFormatError(relpath, parsed.problem.line, parsed.problem.message,
                                  text.encode("utf-8"))
        from memctl.core.note import note_from_parsed  # lazy: search start-up

        return note_from_parsed(
            parsed, text=text, relpath=relpath, project=kind[1],
            file_time=datetime.fromtimestamp(info.st_mtime, UTC),
            archived=kind[0] == ARCHIVED,
        )

    def iter_notes(self, include_archived: bool = True) -> Iterator[Note]:
        """Every note that parses (slow path: reads every file; the index is the fast one)."""
        for memory_file in self.walk():
            if memory_file.kind == NOTE or (include_archived and memory_file.kind == ARCHIVED):
                try:
                    yield self.read_note(memory_file.relpath)
                except MemctlError:
                    continue

    # --- writing --------------------------------------------------------------------------

    def write_text(self, relpath: str, text: str) -> None:
        from memctl.disk.atomic import atomic_write_text  # lazy: search start-up

        path = self.resolve(relpath)
        twin = self.case_twin(relpath)
        if twin is not None:
            raise MemctlError(f"{case_twin_problem(relpath, twin)}; use {arg('project')} {twin} "
                              f"(nothing was written)")
        atomic_write_text(path, text)

    def case_twin(self, relpath: str) -> str | None:
        """The project folder there whose name differs only in case from the one a write to
        `relpath` would make (`Demo` beside `demo`), else None. Such a write is refused, by
        `write_text` and by an import (memctl.exchange.transfer.check_targets): a disk that
        ignores case (macOS, Windows) holds the two as one folder, where one project's files
        land in the other's, and a clone or sync of the store there cannot check both out
        (docs/format.md, "Project names")."""
        top, slash, _rest = relpath.partition("/")
        if not slash or not valid_project_name(top):
            return None
        folders = self.top_folders()
        return None if top in folders else twin_among(top, folders)

    def top_folders(self) -> set[str]:
        """The names of the folders at the top of the store, as they are on disk (whatever
        the disk's rule for case); none when it cannot be read (the write says why)."""
        try:
            with os.scandir(self.root) as entries:
                return {entry.name for entry in entries if entry.is_dir(follow_symlinks=False)}
        except OSError:
            return set()

    @contextmanager
    def read_lock(self, what: str = "") -> Iterator[None]:
        """The store lock for a command that only reads (export): taken when the store can be
        written, so no writer changes files under it; skipped when the store is read-only,
        or on a system without file locks (Windows), where no memctl can write."""
        from memctl.disk.locking import NoFileLocks, ReadOnlyStore

        with ExitStack() as held:
            try:
                held.enter_context(self.lock(what))
            except (ReadOnlyStore, NoFileLocks):
                pass
            yield

    @contextmanager
    def lock(self, what: str = "") -> Iterator[None]:
        from memctl.disk.journal import recover_pending  # lazy: search start-up (git)
        from memctl.disk.locking import store_lock

        with store_lock(self.root, what):
            # A killed import may have left a journal: finish or undo it before anything else.
            recover_pending(self.root, self.root / STATE_DIR)
            yield


def first_foreign_file(root: Path) -> str | None:
    """The first file (store-relative, `/`) in `root` that a store would not hold
    (`belongs_in_store`), or None: a folder of memory files and an empty folder have none,
    a code repository has many (the walk stops at the first). `.git/` is not looked into."""
    stack = [("", Path(root))]
    while stack:
        prefix, folder = stack.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            continue
        for entry in entries:
            rel = f"{prefix}{entry.name}"
            try:
                is_folder = entry.is_dir(follow_symlinks=False)
            except OSError:
                is_folder = False
            if is_folder:
                if rel not in (".git", STATE_DIR):
                    stack.append((rel + "/", Path(entry.path)))
            elif not belongs_in_store(rel):
                return rel
    return None


def _link_error(relpath: str, where: str) -> MemctlError:
    return MemctlError(
        f"{relpath}: {where} is a symbolic link; memctl never follows links inside a store "
        "(one could point anywhere). Replace it with the file or folder itself")


# Opening a store file to read it: never through a link (the file itself a link fails to
# open: LINK_ERRNOS) and never waiting (a FIFO opens at once and its stat then says it is no
# note; a socket or a device without a driver refuses to open: NOT_A_FILE_ERRNOS). A device
# file is opened before it is refused: only root can make one, and no sync, bundle or import
# brings one. Windows: O_BINARY, no newline change.
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
READ_FLAGS = os.O_RDONLY | getattr(os, "O_BINARY", 0) | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0)
LINK_ERRNOS = (errno.ELOOP, errno.EMLINK)  # (FreeBSD says EMLINK)
NOT_A_FILE_ERRNOS = (errno.ENXIO, errno.ENODEV)


def read_open(fd: int, size: int, limit: int | None = None) -> bytes:
    """The bytes of the open file whose stat gave `size`, at most `limit` + 1 of them (the
    caller then knows it is over `limit`). A file as its stat says is one read of its size
    and a byte more: no read for its end, no buffer much bigger than the file (each system
    call costs ~5-20 µs on a VM, bench/README.md). One that grew or shrank meanwhile, or
    a file system's short read, reads on to its end."""
    chunks = [os.read(fd, (size if limit is None else min(size, limit)) + 1)]
    if len(chunks[0]) == size:
        return chunks[0]
    left = None if limit is None else limit + 1 - len(chunks[0])
    while chunks[-1] and (left is None or left > 0):
        chunks.append(os.read(fd, 1 << 16 if left is None else min(left, 1 << 16)))
        if left is not None:
            left -= len(chunks[-1])
    return b"".join(chunks)


def read_regular_file(path: str) -> tuple[bytes | None, os.stat_result]:
    """The whole of a regular file, as `open(path, "rb").read()` gives it, and its stat as
    of its opening (None for anything else: a folder raises IsADirectoryError); the file
    itself is never followed if it is a link. Four system calls (open, fstat, read, close),
    without the buffered file object around the descriptor: a health report reads every
    file of a store."""
    fd = os.open(path, READ_FLAGS)
    try:
        info = os.fstat(fd)
        if not stat_module.S_ISREG(info.st_mode):
            if stat_module.S_ISDIR(info.st_mode):
                raise IsADirectoryError(errno.EISDIR, "Is a directory", path)
            return None, info
        return read_open(fd, info.st_size), info
    finally:
        os.close(fd)
