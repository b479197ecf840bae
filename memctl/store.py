"""The store on disk: where it is, its layout, which files are memory, reading and writing
them. See docs/architecture.md for the layout."""

from __future__ import annotations

import os
import re
import stat as stat_module
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from memctl.core.errors import MemctlError, UsageError
from memctl.disk.settings import SETTINGS_FILE, Settings
from memctl.core.vocab import valid_project_name

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (start-up)
if TYPE_CHECKING:
    from memctl.core.note import Note
    from memctl.core.noteformat import ParsedFile

# The note model, the parser and the atomic writer are imported where they are used: a
# search with a fresh index needs none of them, and start-up time is part of every command.

GLOBAL = "global"
DEFAULT_PROJECT = "default"
STATE_DIR = ".memctl"
TOMBSTONE_DIR = ".tombstones"
CONFLICT_DIR = ".conflicts"
MEMORY_FILE = "MEMORY.md"
SCRATCHPAD_FILE = "SCRATCHPAD.md"
NOTES_DIR = "notes"
EPISODES_DIR = "episodes"
ARCHIVE_DIR = "archive"
MAX_NOTE_BYTES = 1024 * 1024

# Kinds of memory file, as `classify` names them.
NOTE, ARCHIVED, MEMORY, SCRATCHPAD, EPISODE, TOMBSTONE, CONFLICT = (
    "note", "archived", "memory", "scratchpad", "episode", "tombstone", "conflict",
)
_DEBRIS_SUFFIXES = ("~", ".swp", ".swx", ".tmp", ".bak", ".orig")


def root_of(store: object) -> Path:
    """A store's folder, from a `Store` (anything with `.root`) or a path (whose own `.root`
    would be "/")."""
    if isinstance(store, (str, os.PathLike)):
        return Path(store)
    return Path(store.root)  # type: ignore[attr-defined]


def state_path(store: object, name: str = "") -> Path:
    """The store's machine-local `.memctl/` folder (never committed), or a file in it."""
    return root_of(store) / STATE_DIR / name


def default_store_path() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "memctl"


def resolve_store_path(option: str | None) -> tuple[Path, bool]:
    """The store from `--store`, else `MEMCTL_STORE`, else the per-user default.

    Returns the path and whether it is the default (only the default is created on first use;
    a mistyped explicit path must not silently become a new store)."""
    chosen = option or os.environ.get("MEMCTL_STORE")
    if chosen:
        return Path(chosen).expanduser().absolute(), False
    return default_store_path(), True


def check_project_name(name: str, option: str = "--project") -> str:
    if not valid_project_name(name):
        raise UsageError(
            f"invalid value for {option}: {name!r} is not a project name "
            "(letters, digits, '-', '_', '.'; not starting with '.')"
        )
    return name


def resolve_project(option: str | None, store_root: Path | None = None, cwd: Path | None = None) -> str:
    """`--project`, else `MEMCTL_PROJECT`, else the git repository the shell stands in, else
    `default`. Inside the store itself, the project folder one stands in."""
    if option:
        return check_project_name(option)
    from_env = os.environ.get("MEMCTL_PROJECT")
    if from_env:
        return check_project_name(from_env, "MEMCTL_PROJECT")
    here = (cwd or Path.cwd()).absolute()
    if store_root is not None:
        try:
            inside = here.relative_to(Path(store_root).absolute())
        except ValueError:
            inside = None
        if inside is not None:
            first = inside.parts[0] if inside.parts else ""
            return first if first and valid_project_name(first) else DEFAULT_PROJECT
    for folder in (here, *here.parents):
        if (folder / ".git").exists():
            name = re.sub(r"[^A-Za-z0-9_.-]", "-", folder.name).lstrip(".")
            return name if name and valid_project_name(name) else DEFAULT_PROJECT
    return DEFAULT_PROJECT


def is_memory_name(name: str) -> bool:
    """A file name memory can have: `*.md`, not hidden, not an editor's or a merge's debris."""
    return name.lower().endswith(".md") and not name.startswith(".") \
        and not name.endswith(_DEBRIS_SUFFIXES) and name not in ("", ".", "..")


def classify(relpath: str) -> tuple[str, str] | None:
    """What a store-relative path (with `/`) is: (kind, project), or None if not memory.

    Two folders deep or more, the answer depends on the folders alone once the name passes
    `is_memory_name` (the index relies on that to classify a folder once)."""
    parts = relpath.split("/")
    name = parts[-1]
    if any(part in ("", ".", "..") for part in parts):
        return None  # never a path that could leave the store
    if not is_memory_name(name):
        return None
    top = parts[0]
    if top == TOMBSTONE_DIR:
        return (TOMBSTONE, "") if len(parts) == 2 else None
    if top == CONFLICT_DIR:
        if len(parts) >= 3 and valid_project_name(parts[1]):
            return CONFLICT, parts[1]
        return None
    if len(parts) < 2 or not valid_project_name(top):
        return None
    if any(part.startswith(".") for part in parts[1:-1]):
        return None
    if len(parts) == 2:
        if name == MEMORY_FILE:
            return MEMORY, top
        if name == SCRATCHPAD_FILE:
            return SCRATCHPAD, top
        return NOTE, top
    if parts[1] == EPISODES_DIR:
        return EPISODE, top
    if parts[1] == ARCHIVE_DIR:
        return ARCHIVED, top
    return NOTE, top


class MemoryFile:
    __slots__ = ("relpath", "kind", "project", "mtime_ns", "size")

    def __init__(self, relpath: str, kind: str, project: str, mtime_ns: int, size: int) -> None:
        self.relpath = relpath
        self.kind = kind
        self.project = project
        self.mtime_ns = mtime_ns
        self.size = size

    def __repr__(self) -> str:
        return f"MemoryFile({self.relpath!r}, {self.kind!r}, {self.project!r})"


def slugify(text: str, limit: int = 48) -> str:
    words = re.sub(r"[^\w]+", "-", text.lower(), flags=re.UNICODE).strip("-_")
    slug = re.sub(r"-{2,}", "-", words)[:limit].strip("-_")
    return slug


class Store:
    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self._settings: Settings | None = None

    # --- opening --------------------------------------------------------------------------

    @classmethod
    def open(cls, root: Path, create_if_missing: bool = False) -> Store:
        root = Path(root)
        if root.exists() and not root.is_dir():
            raise MemctlError(f"store path {root} is a file, not a folder; pass --store with a folder")
        if not (root / SETTINGS_FILE).is_file():
            if create_if_missing:
                return cls.init(root)[0]
            if not root.exists():
                raise MemctlError(f"store {root} does not exist; create it with `memctl init {root}`")
            raise MemctlError(f"{root} is not a memctl store (no {SETTINGS_FILE}); create one with `memctl init {root}`")
        return cls(root)

    @classmethod
    def init(cls, root: Path) -> tuple[Store, bool]:
        """Create the store, or complete a partial one. Never overwrites an existing file."""
        from memctl.disk import gitops
        from memctl.disk.atomic import atomic_write_text, make_dirs
        from memctl.disk.settings import default_toml
        from memctl.disk.templates import STORE_TEMPLATE_DIR, packaged_templates

        root = Path(root)
        if root.exists() and not root.is_dir():
            raise MemctlError(f"{root} is a file, not a folder")
        created_anything = False
        make_dirs(root)
        if not gitops.is_repo(root):
            gitops.init_repo(root)
            created_anything = True
        defaults = {
            SETTINGS_FILE: default_toml(),
            ".gitignore": f"{STATE_DIR}/\n",
            f"{GLOBAL}/.gitkeep": "",
            f"{TOMBSTONE_DIR}/.gitkeep": "",
        }
        for template in packaged_templates():
            defaults[f"{STORE_TEMPLATE_DIR}/{template.name}"] = template.read_text(encoding="utf-8")
        for relpath, text in defaults.items():
            path = root / relpath
            if not path.exists():
                atomic_write_text(path, text)
                created_anything = True
        make_dirs(root / STATE_DIR)
        from memctl.exchange.sync import install_merge_driver

        # Every machine needs the driver in its own .git/config, so a hand `git pull` never
        # leaves conflict markers in a note.
        created_anything = install_merge_driver(root) or created_anything
        store = cls(root)
        if created_anything:
            with store.lock("init"):
                gitops.commit_all(root, "memctl init: create the store")
        return store, created_anything

    # --- settings and layout --------------------------------------------------------------

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            self._settings = Settings.load(self.root)
        return self._settings

    @property
    def state_dir(self) -> Path:
        from memctl.disk.atomic import make_dirs
        path = self.root / STATE_DIR
        if not path.is_dir():
            make_dirs(path)
        return path

    def path(self, relpath: str) -> Path:
        return self.root / relpath

    def relpath(self, path: Path) -> str:
        return Path(path).absolute().relative_to(self.root.absolute()).as_posix()

    def projects(self) -> list[str]:
        names = []
        for entry in os.scandir(self.root):
            if entry.is_dir(follow_symlinks=False) and valid_project_name(entry.name):
                names.append(entry.name)
        return sorted(names)

    def project_dir(self, project: str) -> Path:
        check_project_name(project)
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
                yield MemoryFile(rel, kind[0], kind[1], info.st_mtime_ns, info.st_size)

    # --- reading --------------------------------------------------------------------------

    def read_text(self, relpath: str) -> tuple[str, os.stat_result]:
        path = self.root / relpath
        try:
            info = path.stat()
            if not stat_module.S_ISREG(info.st_mode):
                raise MemctlError(f"{relpath} is not a regular file")
            data = path.read_bytes()
        except FileNotFoundError:
            raise MemctlError(f"{relpath} does not exist") from None
        except PermissionError:
            raise MemctlError(f"{relpath}: permission denied; check the file's permissions") from None
        except IsADirectoryError:
            raise MemctlError(f"{relpath} is a folder, not a note") from None
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data[: exc.start].count(b"\n") + 1
            raise MemctlError(f"{relpath}:{line}: not UTF-8 text") from None
        if "\x00" in text:
            raise MemctlError(f"{relpath}: binary content (NUL bytes), not a Markdown note")
        return text, info

    def parse_file(self, relpath: str) -> tuple[str, ParsedFile, os.stat_result]:
        from memctl.core.noteformat import parse_text
        text, info = self.read_text(relpath)
        return text, parse_text(text), info

    def read_note(self, relpath: str) -> Note:
        from memctl.core.note import note_from_parsed
        kind = classify(relpath)
        if kind is None or kind[0] not in (NOTE, ARCHIVED):
            raise MemctlError(f"{relpath} is not a note")
        text, parsed, info = self.parse_file(relpath)
        if parsed.problem is not None:
            raise MemctlError(f"{relpath}:{parsed.problem.line}: {parsed.problem.message}")
        if not text.strip():
            # As the index sees it: an empty file is a save in progress (or a git checkout
            # cut short), not a note; the index keeps the last good version.
            raise MemctlError(f"{relpath}:1: the file is empty")
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

    def find_note(self, id_or_prefix: str) -> Note:
        """The note with this id or unambiguous id prefix (looked up in the fresh index)."""
        from memctl.index.db import ensure_fresh

        wanted = id_or_prefix.strip().lower()
        if not wanted:
            raise UsageError("an id is required")
        index = ensure_fresh(self)
        row = index.get(wanted)  # raises MemctlError for unknown or ambiguous ids
        return self.read_note(row["path"])

    # --- writing --------------------------------------------------------------------------

    def write_text(self, relpath: str, text: str) -> None:
        from memctl.disk.atomic import atomic_write_text
        atomic_write_text(self.root / relpath, text)

    @contextmanager
    def lock(self, what: str = "") -> Iterator[None]:
        from memctl.disk.locking import store_lock

        with store_lock(self.root, what):
            if any((self.root / STATE_DIR).glob("txn-*")):
                # A killed import left a journal: finish or undo it before anything else.
                from memctl.exchange.transfer import recover_pending

                recover_pending(self)
            yield

    def commit(self, message: str, paths: list[str] | None = None) -> str | None:
        from memctl.disk import gitops
        commit_id = gitops.commit_all(self.root, message, paths)
        if paths:
            self._refresh_index(paths)
        return commit_id

    def _refresh_index(self, paths: list[str]) -> None:
        """Read-your-writes: the next search sees this change even while a watcher (which
        lets commands skip their own walk) has not yet picked it up."""
        import sqlite3

        from memctl.index.db import index_path, open_index

        if not index_path(self).exists():
            return

        try:
            index = open_index(self)
            try:
                index.refresh(paths)
            finally:
                index.close()
        except (sqlite3.Error, MemctlError):
            pass  # best effort: the next command's freshness check catches up


def stamp(text: str, updates: dict[str, object], moment: datetime, note: Note | None = None) -> str:
    """Apply field updates, set `updated` and a fresh `checksum`, touching nothing else.

    A hand-made file without an `id` gets its derived id written down, so the id it was known
    by survives the change."""
    from memctl.core.clock import format_time
    from memctl.core.noteformat import compute_checksum, set_fields

    changes = dict(updates)
    changes["updated"] = format_time(monotonic_stamp(moment, note.updated if note else None))
    if note is not None and not note.has_id:
        changes.setdefault("id", note.id)
    try:
        text = set_fields(text, changes)
        text = set_fields(text, {"checksum": compute_checksum(text)})
    except ValueError as exc:
        raise MemctlError(f"cannot change a file whose front matter does not parse ({exc})") from exc
    if len(text.encode("utf-8")) > MAX_NOTE_BYTES * 10:
        raise MemctlError("note is too large to rewrite")
    return text


def monotonic_stamp(moment: datetime, previous: str | None) -> datetime:
    """A new `updated` is never older than the one it replaces (clocks differ between
    machines; newest-wins merging relies on a change looking newer than what it changed)."""
    from datetime import timedelta

    from memctl.core.clock import parse_time

    before = parse_time(previous) if previous else None
    if before is not None and before >= moment:
        return before + timedelta(milliseconds=1)
    return moment
