"""The drafts of `memctl edit`, in `.memctl/edit/`: no typing is ever lost.

An edit happens on a copy, `<id>.md`. A save that does not validate leaves the copy there, and
the next `memctl edit ID` opens it again (as `git commit` does with a message after a failed
hook) with the reason at its top, in lines starting `# memctl:`; `--fresh` drops it instead.

Those lines are removed again on save, and only those: `<id>.json` records the exact lines
memctl put there, and only leading lines equal to them (in their order; a person may delete
some) are removed. A line a person changed is not memctl's any more: it stays, and the save
is refused naming it, so nothing a person typed is ever dropped (docs/format.md).

`<id>.json` also records the note the edit began from (its fingerprint, and its bytes): when
the note changed before a kept draft is reopened, the lifecycle fields the person left alone
are taken from the note as it is now (memctl.memory.notes), so an old `status: active` in the
draft does not undo an `archive` or a `supersede`. A note forgotten meanwhile has nowhere to
be saved to: its draft is set aside in `forgotten/` (`set_aside`), never deleted.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from memctl.core.errors import MemctlError, cmd
from memctl.core.hashing import sha256
from memctl.disk.atomic import atomic_write_bytes
from memctl.disk.storefiles import LINK_ERRNOS, NOT_A_FILE_ERRNOS, read_regular_file

try:
    import fcntl
except ImportError:  # Windows: no memctl can change a store there (memctl.disk.locking)
    fcntl = None  # type: ignore[assignment]

MARK = "# memctl:"
FORGOTTEN = "forgotten"  # the subfolder a forgotten note's kept edit is set aside in


def fingerprint(data: bytes) -> str:
    return sha256(data).hexdigest()


def _bare(line: bytes) -> bytes:
    return line.rstrip(b"\r\n")


class Draft:
    """The kept copy of one note's edit and what memctl wrote at its top."""

    def __init__(self, folder: Path, note_id: str) -> None:
        self.note_id = note_id
        self.path = folder / f"{note_id}.md"
        self._state = folder / f"{note_id}.json"
        # Held while an editor has the draft open. Never removed: a lock file deleted while
        # another process opens it would let two edits each hold "the" lock.
        self._lock = folder / f"{note_id}.lock"

    @contextmanager
    def editing(self) -> Iterator[None]:
        """Held from before the draft is read until the edit is saved or kept: a second
        `memctl edit` of the same note meanwhile is refused. It used to take the first one's
        live draft for a kept one, save it, and lose whichever edit was saved first
        (tests/test_notes_cli.py). The kernel lets go of it when the process dies, so a
        kept draft (a failed save, a killed edit) is opened again as before."""
        with self._held() as held:
            if not held:
                raise MemctlError(f"note {self.note_id} is being edited already (another "
                                  f"{cmd('edit')} has it open); finish that edit first, "
                                  "then edit it again")
            yield

    @contextmanager
    def _held(self) -> Iterator[bool]:
        """The edit lock, taken without waiting: whether this process holds it."""
        if fcntl is None:
            yield True
            return
        fd = os.open(self._lock, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                yield False
                return
            yield True
        finally:
            os.close(fd)

    def exists(self) -> bool:
        """Whether a kept draft is there: a regular file, never a link (`start` replaces
        anything else)."""
        try:
            return stat.S_ISREG(os.lstat(self.path).st_mode)
        except OSError:
            return False

    def _load_state(self) -> dict[str, object]:
        try:
            state = json.loads(self._state.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}  # no record (or a damaged one): nothing is memctl's to remove
        return state if isinstance(state, dict) else {}

    @property
    def base(self) -> str | None:
        """The fingerprint of the note the edit started from (None when not recorded)."""
        base = self._load_state().get("base")
        return base if isinstance(base, str) else None

    @property
    def base_note(self) -> bytes | None:
        """The bytes of the note the draft's lifecycle fields came from: the note the edit
        started from, or the note a reopen last took them from. None for a draft kept
        before memctl recorded them (nothing is merged into such a draft)."""
        text = self._load_state().get("base_note")
        # surrogateescape: a file that is not UTF-8 (edited for fixing) is kept byte for byte.
        return text.encode("utf-8", "surrogateescape") if isinstance(text, str) else None

    def header(self) -> list[bytes]:
        lines = self._load_state().get("header")
        if not isinstance(lines, list):
            return []
        return [line.encode("utf-8") for line in lines if isinstance(line, str)]

    def start(self, original: bytes) -> None:
        """A fresh copy of the note. What an editor left in the draft's place that is no
        file goes first: a folder is moved aside (`<id>.md.aside`, or `.aside-2`…), never
        deleted, so what is in it stays; a link, a FIFO or a socket, which hold no text of
        the draft, are removed (a link's target is left as it is)."""
        self._save_state(fingerprint(original), [], original)
        try:
            mode = os.lstat(self.path).st_mode
        except FileNotFoundError:
            mode = stat.S_IFREG
        if stat.S_ISDIR(mode):
            aside, number = self.path.with_name(f"{self.path.name}.aside"), 1
            while os.path.lexists(aside):
                number += 1
                aside = self.path.with_name(f"{self.path.name}.aside-{number}")
            os.rename(self.path, aside)
        elif not stat.S_ISREG(mode):
            os.unlink(self.path)
        atomic_write_bytes(self.path, original)

    def reopen(self, content: bytes, header: list[str], base: str | None,
               base_note: bytes | None) -> None:
        """The kept edit, `content`, with `header` lines on top. They are left out when the
        content could be taken for them (it starts with a byte order mark or `# memctl:`, or
        has a line the same as one of them), so removing them later is never ambiguous.
        `base` and `base_note` are recorded as `base` and `base_note` give them back."""
        newline = b"\r\n" if content.split(b"\n", 1)[0].endswith(b"\r") else b"\n"
        encoded = [line.encode("utf-8") for line in header]
        own = {_bare(line) for line in content.splitlines()}
        if content.startswith((b"\xef\xbb\xbf", MARK.encode())) or any(line in own for line in encoded):
            encoded = []
        self._save_state(base, [line.decode("utf-8") for line in encoded], base_note)
        atomic_write_bytes(self.path, b"".join(line + newline for line in encoded) + content)

    def read(self) -> tuple[bytes, int, int | None]:
        """The draft without memctl's lines at its top: (content, how many lines were
        removed, the line of the draft still holding one of memctl's lines, if any)."""
        data = self._read()
        header = [_bare(line) for line in self.header()]
        if not header:
            return data, 0, None
        lines = data.splitlines(keepends=True)
        removed, position = 0, 0
        for line in lines:
            bare = _bare(line)
            found = next((n for n in range(position, len(header)) if header[n] == bare), None)
            if found is None:
                break
            position = found + 1
            removed += 1
        rest = lines[removed:]
        known = set(header)
        leftover = next((removed + number for number, line in enumerate(rest, 1)
                         if _bare(line) in known
                         or (number == 1 and _bare(line).startswith(MARK.encode()))), None)
        return b"".join(rest), removed, leftover

    def _read(self) -> bytes:
        """The draft's bytes: a regular file, never read through a link. An editor may leave
        a link or a folder in its place; memctl reads nothing through a link
        (docs/security.md), and `--fresh` starts again from the note (`start`)."""
        again = f"{cmd(f'edit {self.note_id} --fresh')} starts again from the note"
        try:
            data, _info = read_regular_file(os.fspath(self.path))
        except IsADirectoryError:
            data, what = None, "a folder"
        except OSError as exc:
            if exc.errno in LINK_ERRNOS:
                raise MemctlError(f"{self.path} is a symbolic link now, not the draft (the "
                                  f"editor left it): memctl reads no file through a link; "
                                  f"{again}") from None
            if exc.errno not in NOT_A_FILE_ERRNOS:
                raise
            data, what = None, "no file"
        else:
            what = "no file"
        if data is None:
            aside = ", and moves the folder aside" if what == "a folder" else ""
            raise MemctlError(f"{self.path} is {what} now, not the draft (the editor left it); "
                              f"{again}{aside}")
        return data

    def discard(self) -> None:
        self.path.unlink(missing_ok=True)
        self._state.unlink(missing_ok=True)

    def set_aside(self, locked: bool) -> Path | None:
        """Move the kept draft of a note that was forgotten to `forgotten/<id>.md` (a name
        beside it when that is taken) and drop its record; returns where it went, or None
        when there is none. It can be saved nowhere now, and `memctl edit ID` no longer
        finds the note to reopen it, but it may hold typing never saved: it is moved out of
        the way, never deleted. `locked`: the caller holds the edit lock (an edit whose save
        found the note forgotten). Otherwise (`forget`) the lock is taken without waiting,
        and a draft an editor has open is left to that edit, which sets it aside itself."""
        if not self.exists():
            return None
        if locked:
            return self._move_aside()
        with self._held() as held:
            return self._move_aside() if held else None

    def _move_aside(self) -> Path | None:
        if not self.exists():  # gone while the lock was taken
            return None
        folder = self.path.parent / FORGOTTEN
        folder.mkdir(exist_ok=True)
        target = folder / self.path.name
        number = 2
        while target.exists():  # the same id set aside before (as many tries as there were)
            target = folder / f"{self.note_id}-{number}.md"
            number += 1
        os.replace(self.path, target)
        self._state.unlink(missing_ok=True)
        return target

    def _save_state(self, base: str | None, header: list[str], base_note: bytes | None) -> None:
        note = None if base_note is None else base_note.decode("utf-8", "surrogateescape")
        atomic_write_bytes(self._state, json.dumps(
            {"base": base, "header": header, "base_note": note}).encode())
