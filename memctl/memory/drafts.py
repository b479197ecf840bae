"""The drafts of `memctl edit`, in `.memctl/edit/`: no typing is ever lost.

An edit happens on a copy, `<id>.md`. A save that does not validate leaves the copy there, and
the next `memctl edit ID` opens it again (as `git commit` does with a message after a failed
hook) with the reason at its top, in lines starting `# memctl:`; `--fresh` drops it instead.

Those lines are removed again on save, and only those: `<id>.json` records the exact lines
memctl put there, and only leading lines equal to them (in their order; a person may delete
some) are removed. A line a person changed is not memctl's any more: it stays, and the save
is refused naming it, so nothing a person typed is ever dropped (docs/format.md).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from memctl.core.errors import MemctlError, cmd
from memctl.core.hashing import sha256
from memctl.disk.atomic import atomic_write_bytes

try:
    import fcntl
except ImportError:  # Windows: no memctl can change a store there (memctl.disk.locking)
    fcntl = None  # type: ignore[assignment]

MARK = "# memctl:"


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
        if fcntl is None:
            yield
            return
        fd = os.open(self._lock, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise MemctlError(f"note {self.note_id} is being edited already (another "
                                  f"{cmd('edit')} has it open); finish that edit first, "
                                  "then edit it again") from None
            yield
        finally:
            os.close(fd)

    def exists(self) -> bool:
        return self.path.is_file()

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

    def header(self) -> list[bytes]:
        lines = self._load_state().get("header")
        if not isinstance(lines, list):
            return []
        return [line.encode("utf-8") for line in lines if isinstance(line, str)]

    def start(self, original: bytes) -> None:
        """A fresh copy of the note."""
        self._save_state(fingerprint(original), [])
        atomic_write_bytes(self.path, original)

    def reopen(self, content: bytes, header: list[str], base: str | None) -> None:
        """The kept edit, `content`, with `header` lines on top. They are left out when the
        content could be taken for them (it starts with a byte order mark or `# memctl:`, or
        has a line the same as one of them), so removing them later is never ambiguous."""
        newline = b"\r\n" if content.split(b"\n", 1)[0].endswith(b"\r") else b"\n"
        encoded = [line.encode("utf-8") for line in header]
        own = {_bare(line) for line in content.splitlines()}
        if content.startswith((b"\xef\xbb\xbf", MARK.encode())) or any(line in own for line in encoded):
            encoded = []
        self._save_state(base, [line.decode("utf-8") for line in encoded])
        atomic_write_bytes(self.path, b"".join(line + newline for line in encoded) + content)

    def read(self) -> tuple[bytes, int, int | None]:
        """The draft without memctl's lines at its top: (content, how many lines were
        removed, the line of the draft still holding one of memctl's lines, if any)."""
        data = self.path.read_bytes()
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

    def discard(self) -> None:
        self.path.unlink(missing_ok=True)
        self._state.unlink(missing_ok=True)

    def _save_state(self, base: str | None, header: list[str]) -> None:
        atomic_write_bytes(self._state, json.dumps({"base": base, "header": header}).encode())
