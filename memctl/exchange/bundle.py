"""Bundles: the files that travel between machines, as a zip or a folder, with a manifest.

Reading validates everything before the store is touched. Hazards (a path escaping the
store, an absolute path, a link or other non-regular entry, a file that is not UTF-8 text,
an unsafe YAML tag, a zip bomb, too many entries, an unknown manifest format, a hash that
does not match) always refuse the whole bundle; merely invalid entries (front matter that
does not parse) refuse it unless the caller skips them. Every problem is collected first,
then reported in one `BundleError`.

Writing is deterministic: the same files give the same zip, byte for byte (sorted entries,
fixed timestamps and permissions, sorted manifest keys).
"""

from __future__ import annotations

import hashlib
import io
import json
import lzma
import os
import re
import stat
import time
import zipfile
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

try:
    import fcntl
except ImportError:  # Windows: no POSIX locks; a killed export's temp file is left
    fcntl = None  # type: ignore[assignment]

from memctl.core.clock import ahead, parse_time
from memctl.core.errors import MemctlError
from memctl.core.ids import valid_id
from memctl.core.merge import (
    CONFLICT_DIR,
    COUNTERS,
    COUNTERS_DIR,
    TOMBSTONE,
    Entry,
    MergeKey,
    conflict_source,
)
from memctl.core.note import note_from_parsed
from memctl.core.noteformat import (
    MAX_FRONT_MATTER_BYTES,
    compute_checksum,
    parse_file,
    parse_text,
    salvage_id,
)
from memctl.core.textfile import decode_file
from memctl.core.tomlkeys import long_key_problem
from memctl.core.vocab import MAX_FILE_BYTES
from memctl.disk.atomic import fsync_dir, make_dirs, refuse_special_target
from memctl.disk.layout import ARCHIVED, EPISODE, NOTE, classify
from memctl.disk.settings import SETTINGS_FILE
from memctl.disk.templates import STORE_TEMPLATE_DIR

# What reading a damaged compressed stream raises (a zip entry, a .gz inside one): zlib's and
# lzma's own errors are no OSError, bz2's is. Each is a one-line refusal, never a traceback.
DECOMPRESS_ERRORS = (zipfile.BadZipFile, OSError, RuntimeError, NotImplementedError, EOFError,
                     zlib.error, lzma.LZMAError)

MANIFEST_NAME = "memctl-manifest.json"
FORMAT_NAME = "memctl-bundle"
FORMAT_VERSION = 1
SETTINGS = "settings"
TEMPLATE = "template"
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)
_SAFE_TAGS = {"str", "int", "float", "bool", "null", "seq", "map", "timestamp"}
_WINDOWS_DRIVE = re.compile(r"^[A-Za-z]:")


@dataclass(frozen=True)
class Limits:
    # A store of 100k notes (bench/README.md's largest) holds ~103k files, and every one is an
    # entry: its export must import. Opening a zip of 250k entries costs ~170 MB and 2 s.
    max_entries: int = 250_000
    max_total_bytes: int = 512 * 1024 * 1024
    max_entry_bytes: int = 16 * 1024 * 1024
    # An entry past `ratio_floor_bytes` that expands more than `max_ratio` times its
    # compressed size is a bomb. Deflate, the only method `memctl export` writes, cannot pass
    # 1032:1 (a run of one byte; tests/test_bundle.py measures it), so every zip memctl (or
    # any deflate tool) writes is under the ratio whatever its text, and only an entry of
    # another method (bzip2, LZMA: millions to one) is refused on its ratio. The absolute
    # caps above bound what any entry and archive may cost; sizes are counted while
    # decompressing (docs/security.md).
    max_ratio: int = 1100
    ratio_floor_bytes: int = 1024 * 1024


@dataclass(frozen=True)
class BundleFile:
    path: str  # store-relative, with `/`
    data: bytes
    updated: str | None = None  # the file's time on the machine that made the bundle
    history: tuple[str, ...] = ()  # git blob ids of its earlier versions there


@dataclass(frozen=True)
class Problem:
    path: str
    reason: str
    hazard: bool = True
    line: int | None = None  # the line to fix, for a file's content

    def __post_init__(self) -> None:
        # A file name that is not UTF-8 (read from a folder as surrogate escapes) is shown
        # escaped, `caf\\xe9.md`: never a traceback when it is printed or put in JSON.
        try:
            raw = self.path.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:  # a lone surrogate of another origin (a JSON "\\ud800")
            raw = self.path.encode("utf-8", "backslashreplace")
        object.__setattr__(self, "path", raw.decode("utf-8", "backslashreplace"))

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else self.path
        return f"{where}: {self.reason}" if self.path else self.reason

    def to_dict(self) -> dict[str, str]:
        if self.line is None:
            return {"path": self.path, "reason": self.reason}
        return {"path": self.path, "line": self.line, "reason": self.reason}


class BundleError(MemctlError):
    """The bundle was refused; `problems` lists every reason."""

    def __init__(self, source: str, problems: list[Problem], *, skippable: bool = True) -> None:
        """`skippable`: whether `--skip-invalid` would leave something valid to import."""
        self.problems = problems
        # One line, as every error is (`print_error` writes a line break as `\n`): the
        # problems one after another, each ended by `;`.
        shown = "; ".join(str(p) for p in problems[:50])
        more = f"; … and {len(problems) - 50} more" if len(problems) > 50 else ""
        hazardous = any(p.hazard for p in problems)
        hint = "" if hazardous or not skippable else \
            " (use --skip-invalid to import the valid entries)"
        super().__init__(f"refusing to import {source}; the store is unchanged: {shown}{more}{hint}")


@dataclass
class Bundle:
    source: str
    files: dict[str, BundleFile]
    manifest: dict[str, Any] | None = None
    invalid: list[Problem] = field(default_factory=list)  # skipped with skip_invalid
    invalid_data: dict[str, bytes] = field(default_factory=dict)  # their bytes, by path
    ignored: list[str] = field(default_factory=list)  # not memory: never imported
    # merge key -> blob ids of a file the sender had and removed (see snapshot.Snapshot)
    removed: dict[str, frozenset[str]] = field(default_factory=dict)


# --- what a path is ----------------------------------------------------------------------------


def path_kind(relpath: str) -> str | None:
    """The kind of a store file that travels in bundles, or None for anything else."""
    parts = relpath.split("/")
    if relpath == SETTINGS_FILE:
        return SETTINGS
    if len(parts) == 2 and parts[0] == COUNTERS_DIR and parts[1].endswith(".json") \
            and not parts[1].startswith("."):
        return COUNTERS
    if len(parts) == 2 and parts[0] == STORE_TEMPLATE_DIR and parts[1].endswith(".md") \
            and not parts[1].startswith("."):
        return TEMPLATE
    found = classify(relpath)
    return found[0] if found else None


def kept_local(relpath: str) -> bool:
    """Whether a bundle or a remote may never change this store's file at `relpath`
    (docs/security.md): the settings and the templates every later note is made from, and a
    conflict copy of either, which no merge makes (these are never merged) and `memctl
    conflicts keep` would install. `import` (held back), `sync` (refused) and `conflicts
    keep` all ask here."""
    if relpath.startswith(CONFLICT_DIR + "/"):
        relpath = conflict_source(relpath)
    return relpath == SETTINGS_FILE or relpath.startswith(STORE_TEMPLATE_DIR + "/")


MAX_NAME_BYTES = 255  # one name in a path: the limit of ext4, APFS, NTFS…
MAX_PATH_BYTES = 1024


def clashes(paths: Iterable[str]) -> list[str]:
    """Paths that are also another path's folder (`a.md` and `a.md/b.md`): both cannot be
    written, so the bundle is refused before anything is (docs/security.md)."""
    names = set(paths)
    folders = {path[:position] for path in names for position in range(len(path))
               if path[position] == "/"}
    return sorted(names & folders)


NOT_UTF8_NAME = "a file name that is not UTF-8 text (rename it)"


def not_utf8_name(name: str) -> bool:
    """A name read from a folder that was not UTF-8 (Python holds its bytes as surrogate
    escapes): refused by every import, never written, hashed or printed as it is
    (tests/test_bundle.py)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def length_problem(name: str) -> str | None:
    """Why no file system here can hold `name` (a bundle's entry, a remote commit's path:
    memctl.exchange.snapshot.tree_of), or None."""
    if any(len(part.encode("utf-8")) > MAX_NAME_BYTES for part in name.rstrip("/").split("/")):
        return f"a name longer than {MAX_NAME_BYTES} bytes (no file system can hold it)"
    if len(name.encode("utf-8")) > MAX_PATH_BYTES:
        return f"a path longer than {MAX_PATH_BYTES} bytes"
    return None


CONTROL_NAME = "a name with control characters"
BACKSLASH_NAME = "a backslash in the path (could escape the store on Windows)"


def character_problem(name: str) -> str | None:
    """Why the characters of `name` make it a path memctl never writes (control characters,
    a backslash), or None: the one rule for a bundle's entries (`path_problem`), the paths of
    a remote's commit (memctl.exchange.snapshot.tree_of) and what an export writes."""
    if not name or not name.isprintable() and any(ord(ch) < 32 for ch in name):
        return CONTROL_NAME
    if "\\" in name:
        return BACKSLASH_NAME
    return None


def shown_name(name: str) -> str:
    """`name` in a one-line message: its control characters written as `\\xNN`."""
    if name.isprintable():
        return name
    return "".join(f"\\x{ord(ch):02x}" if ord(ch) < 32 else ch for ch in name)


def path_problem(name: str) -> str | None:
    """Why an entry name is hazardous, or None when it is a plain relative path."""
    characters = character_problem(name)
    if characters == CONTROL_NAME:
        return characters
    if not_utf8_name(name):
        return NOT_UTF8_NAME
    if characters:
        return characters
    if name.startswith("/") or _WINDOWS_DRIVE.match(name):
        return "an absolute path"
    too_long = length_problem(name)
    if too_long:
        return too_long
    parts = name.rstrip("/").split("/")
    if any(part == ".." for part in parts):
        return "a path that escapes the store (..)"
    if any(part in ("", ".") for part in parts):
        return "a malformed path (empty or '.' component)"
    if parts[0] in (".git", ".memctl"):
        return f"a path inside {parts[0]}/ (git and memctl's own state are never imported)"
    return None


# --- validation of one file ---------------------------------------------------------------------


def unsafe_yaml_tags(front_matter: str) -> list[str]:
    """Tags other than YAML's standard scalar/collection tags (`!!python/object`, `!foo`)."""
    import yaml

    bad: list[str] = []
    try:
        for token in yaml.scan(front_matter, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
            if isinstance(token, yaml.TagToken):
                handle, suffix = token.value
                if handle == "!!" and suffix in _SAFE_TAGS:
                    continue
                if handle is None and suffix.startswith("tag:yaml.org,2002:") \
                        and suffix.split(":")[-1] in _SAFE_TAGS:
                    continue
                bad.append(f"{handle or ''}{suffix}")
    except yaml.YAMLError:
        pass  # the parse step reports it as invalid front matter
    return bad


def check_file(path: str, data: bytes) -> tuple[list[Problem], str | None]:
    """Problems of one file's content, and its text when it is text."""
    text = decode_file(data)
    if not isinstance(text, str):
        return [Problem(path, text[1], line=text[0])], None
    kind = path_kind(path)
    problems: list[Problem] = []
    if kind == COUNTERS:
        try:
            value = json.loads(text)
        except (ValueError, RecursionError) as exc:  # RecursionError: nested too deeply
            return [Problem(path, f"counters are not JSON: {exc}", hazard=False)], text
        if not isinstance(value, dict):
            problems.append(Problem(path, "counters are not a JSON object", hazard=False))
        return problems, text
    if kind == SETTINGS:
        import tomllib

        too_long = long_key_problem(text)  # before tomllib, quadratic in a key's parts
        if too_long is not None:
            problems.append(Problem(path, f"settings do not parse: {too_long}", hazard=False))
            return problems, text
        try:
            tomllib.loads(text)
        except (ValueError, RecursionError) as exc:  # ValueError: a number past 4,300 digits too
            reason = "a number of thousands of digits" \
                if type(exc) is ValueError and "digits" in str(exc) else exc
            problems.append(Problem(path, f"settings do not parse: {reason}", hazard=False))
        return problems, text

    parsed = parse_file(text)
    if parsed.has_front_matter and parsed.close_line is not None:
        lines = (text[1:] if parsed.bom else text).splitlines(keepends=True)
        block = "".join(lines[1:parsed.close_line])
        tags = unsafe_yaml_tags(block) if "!" in block else []
        if tags:
            return [Problem(path, f"unsafe YAML tag {', '.join(sorted(set(tags)))}")], text
    if parsed.problem is not None and kind != TEMPLATE:
        problems.append(Problem(path, parsed.problem.message, hazard=False,
                                line=parsed.problem.line))
    elif kind == TOMBSTONE and not (parsed.meta.get("id") and parsed.meta.get("deleted")):
        problems.append(Problem(path, "a tombstone needs `id` and `deleted`", hazard=False))
    return problems, text


# --- reading ------------------------------------------------------------------------------------


def read_bundle(source: Path, limits: Limits | None = None) -> Bundle:
    """Read and validate a zip or a folder. Raises BundleError for any hazard; invalid
    entries are returned in `invalid` for the caller to refuse or skip."""
    limits = limits or Limits()
    source = Path(source)
    if source.is_dir():
        raw, problems = read_dir(source, limits)
    elif source.is_file():
        if not zipfile.is_zipfile(source):
            raise MemctlError(f"{source} is neither a zip file nor a folder")
        raw, problems = _read_zip(source, limits)
    else:
        raise MemctlError(f"{source} does not exist")
    return validate(str(source), raw, problems)


def validate(source: str, raw: dict[str, bytes], problems: list[Problem] | None = None,
             require_manifest: bool = False,
             extra: dict[str, tuple[str | None, tuple[str, ...]]] | None = None) -> Bundle:
    """Check raw files (path -> bytes) against the manifest and the content rules."""
    problems = list(problems or [])
    manifest = None
    manifest_data = raw.pop(MANIFEST_NAME, None)
    if manifest_data is not None:
        manifest, manifest_problems = _check_manifest(manifest_data, raw)
        problems.extend(manifest_problems)
    elif require_manifest:
        problems.append(Problem(MANIFEST_NAME, f"missing: not a memctl bundle (unknown bundle format; "
                                               f"expected {MANIFEST_NAME})"))
    bundle = Bundle(source=source, files={}, manifest=manifest)
    for key, info in ((manifest or {}).get("removed") or {}).items():
        if isinstance(info, dict) and isinstance(info.get("history"), list):
            bundle.removed[str(key)] = frozenset(h for h in info["history"] if isinstance(h, str))
    entries = (manifest or {}).get("entries", {}) if manifest else {}
    for path in clashes(raw):
        problems.append(Problem(path, "a file and a folder of the same name in one bundle"))
    for path in sorted(raw):
        # Names are checked here too, not only when a zip is read: importers of other tools'
        # formats hand their own names to this function.
        reason = path_problem(path)
        if reason:
            problems.append(Problem(path, reason))
            continue
        if path_kind(path) is None:
            bundle.ignored.append(path)
            continue
        file_problems, _text = check_file(path, raw[path])
        hazards = [p for p in file_problems if p.hazard]
        problems.extend(hazards)
        if file_problems and not hazards:
            bundle.invalid.extend(file_problems)
            bundle.invalid_data[path] = raw[path]
            continue
        if hazards:
            continue
        info = entries.get(path, {}) if isinstance(entries, dict) else {}
        # a `history` that is no list is a problem of _check_manifest: never iterated here
        listed = info.get("history")
        updated, history = info.get("updated"), tuple(listed) if isinstance(listed, list) else ()
        if extra and path in extra:
            updated, history = extra[path]
        bundle.files[path] = BundleFile(path, raw[path], updated if isinstance(updated, str) else None,
                                        tuple(h for h in history if isinstance(h, str)))
    if problems:
        raise BundleError(source, problems + bundle.invalid)
    return bundle


def _check_manifest(data: bytes, raw: dict[str, bytes]
                    ) -> tuple[dict[str, Any] | None, list[Problem]]:
    try:
        manifest = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        return None, [Problem(MANIFEST_NAME, f"unknown bundle format: the manifest is not JSON ({exc})")]
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT_NAME:
        return None, [Problem(MANIFEST_NAME, f"unknown bundle format (expected format {FORMAT_NAME!r})")]
    version = manifest.get("version")
    if version != FORMAT_VERSION:
        return None, [Problem(MANIFEST_NAME, f"unknown bundle format version {version!r}; this memctl "
                                             f"reads version {FORMAT_VERSION} (upgrade memctl?)")]
    entries = manifest.get("entries")
    if not isinstance(entries, dict):
        return None, [Problem(MANIFEST_NAME, "unknown bundle format: no entries")]
    if not isinstance(manifest.get("removed", {}), dict):
        return None, [Problem(MANIFEST_NAME, "unknown bundle format: `removed` is not an object")]
    problems = []
    for path, info in sorted(entries.items()):
        if path not in raw:
            problems.append(Problem(path, "listed in the manifest but missing from the bundle"))
        elif not isinstance(info, dict) or info.get("sha256") != hashlib.sha256(raw[path]).hexdigest():
            problems.append(Problem(path, "content does not match the manifest's sha256 (corrupt bundle)"))
        elif not isinstance(info.get("history", []), list) \
                or not all(isinstance(h, str) for h in info.get("history", [])):
            problems.append(Problem(path, "malformed manifest: `history` is not a list of blob ids"))
        elif not isinstance(info.get("updated"), (str, type(None))):
            problems.append(Problem(path, "malformed manifest: `updated` is not a time"))
    for path in sorted(set(raw) - set(entries)):
        if path_kind(path) is not None:
            problems.append(Problem(path, "not listed in the manifest"))
    return manifest, problems


def read_zip_members(source: Path, limits: Limits | None = None) -> tuple[dict[str, bytes], list[Problem]]:
    """Every entry of a zip (name -> bytes) read with the bundle's limits, and the hazards met
    (links, absolute or escaping names, bombs, oversized entries): for importers of other
    tools' zips, which must be read as carefully as a bundle."""
    return _read_zip(Path(source), limits or Limits())


def _read_zip(source: Path, limits: Limits) -> tuple[dict[str, bytes], list[Problem]]:
    problems: list[Problem] = []
    raw: dict[str, bytes] = {}
    hostile = False  # a bomb or an entry over a limit met: nothing more is decompressed

    def met(problem: Problem) -> None:
        nonlocal hostile
        problems.append(problem)
        # Told as each problem comes: a pass over every problem met so far, made for each
        # entry, was quadratic in them (tests/test_linear_time.py).
        hostile = hostile or "bomb" in problem.reason or "over the" in problem.reason
    try:
        archive = zipfile.ZipFile(source)
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        # ValueError: a name flagged UTF-8 whose bytes are not (UnicodeDecodeError), read by
        # zipfile before any entry can be looked at (tests/test_hostile_input.py)
        raise MemctlError(f"{source} is not a readable zip file: {exc}") from None
    with archive:
        archive_bytes = source.stat().st_size
        infos = archive.infolist()
        if len(infos) > limits.max_entries:
            raise BundleError(str(source), [Problem("", f"too many entries ({len(infos)} > {limits.max_entries})")])
        total = 0
        for info in infos:
            name = info.filename
            reason = path_problem(name)
            if reason:
                met(Problem(name, reason))
                continue
            mode = info.external_attr >> 16
            if info.is_dir():
                continue
            if stat.S_IFMT(mode) not in (0, stat.S_IFREG):  # 0: the zip tool recorded no type
                what = "a symbolic link" if stat.S_ISLNK(mode) else "not a regular file"
                met(Problem(name, what))
                continue
            if info.flag_bits & 0x1:
                met(Problem(name, "encrypted entry"))
                continue
            if name in raw:
                met(Problem(name, "appears twice in the archive"))
                continue
            if hostile:
                continue  # stop decompressing anything once the archive is known hostile
            budget = min(limits.max_entry_bytes, limits.max_total_bytes - total)
            try:
                data, reason = _bounded_read(archive, info, budget, limits, archive_bytes)
            except DECOMPRESS_ERRORS as exc:
                met(Problem(name, f"cannot be read: {exc}"))
                continue
            if reason:
                met(Problem(name, reason))
                continue
            assert data is not None
            total += len(data)
            raw[name] = data
    return raw, problems


def _bounded_read(archive: zipfile.ZipFile, info: zipfile.ZipInfo, budget: int,
                  limits: Limits, archive_bytes: int) -> tuple[bytes | None, str | None]:
    """Decompress at most `budget` bytes, whatever the header claims; refuse bomb ratios."""
    # The compressed size is the header's word: never more than the archive holds.
    compressed = max(min(info.compress_size, archive_bytes), 1)
    ratio_cap = max(limits.ratio_floor_bytes, compressed * limits.max_ratio)
    buffer = io.BytesIO()
    with archive.open(info) as handle:
        while True:
            chunk = handle.read(64 * 1024)
            if not chunk:
                break
            buffer.write(chunk)
            size = buffer.tell()
            if size > ratio_cap:
                return None, (f"zip bomb: expands more than {limits.max_ratio}x "
                              f"({info.compress_size} compressed bytes)")
            if size > budget:
                if budget < limits.max_entry_bytes:
                    return None, f"the archive is over the {limits.max_total_bytes // 2**20} MB size limit"
                return None, f"entry is over the {limits.max_entry_bytes // 2**20} MB size limit"
    return buffer.getvalue(), None


def read_dir(source: Path, limits: Limits) -> tuple[dict[str, bytes], list[Problem]]:
    """A folder laid out like a store. Links and special files are hazards, never followed."""
    problems: list[Problem] = []
    raw: dict[str, bytes] = {}
    total = 0
    stack = [("", source)]
    count = 0
    while stack:
        prefix, folder = stack.pop()
        for entry in sorted(os.scandir(folder), key=lambda e: e.name):
            rel = f"{prefix}{entry.name}"
            if prefix == "" and entry.name in (".git", ".memctl"):
                continue
            count += 1
            if count > limits.max_entries:
                raise BundleError(str(source), [Problem("", f"too many entries (over {limits.max_entries})")])
            if entry.is_symlink():
                problems.append(Problem(rel, "a symbolic link"))
                continue
            if entry.is_dir(follow_symlinks=False):
                stack.append((rel + "/", Path(entry.path)))
                continue
            if not entry.is_file(follow_symlinks=False):
                problems.append(Problem(rel, "not a regular file"))
                continue
            if path_kind(rel) is None and rel != MANIFEST_NAME:
                raw[rel] = b""  # listed as ignored; never read
                continue
            size = entry.stat(follow_symlinks=False).st_size
            if size > limits.max_entry_bytes:
                problems.append(Problem(rel, f"entry is over the {limits.max_entry_bytes // 2**20} MB size limit"))
                continue
            total += size
            if total > limits.max_total_bytes:
                raise BundleError(str(source), [Problem("", f"over the {limits.max_total_bytes // 2**20} MB size limit")])
            flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)
            fd = os.open(entry.path, flags)
            with os.fdopen(fd, "rb") as handle:
                raw[rel] = handle.read(limits.max_entry_bytes + 1)
    return raw, problems


# --- turning files into merge entries ---------------------------------------------------------


def entry_for(path: str, data: bytes, fallback_time: str | None = None) -> Entry:
    """The merge core's view of one file. `fallback_time` is used when the file carries no
    time of its own (a note without front matter, MEMORY.md, settings)."""
    kind = path_kind(path) or "file"
    # A note over what the index reads (a file dropped by hand) is read from its head alone
    # and merged by its `id:` line, as one that does not parse: parsed whole, a file of
    # 100 MB held ~1 GB during a sync or an export (tests/test_hostile_input.py).
    whole = kind not in (NOTE, ARCHIVED, EPISODE) or len(data) <= MAX_FILE_BYTES
    text = (data if whole else data[:MAX_FRONT_MATTER_BYTES]).decode("utf-8", "replace")
    if kind in (NOTE, ARCHIVED, EPISODE, TOMBSTONE):
        parsed = parse_text(text) if whole else None
        if parsed is not None and parsed.problem is None:
            meta = parsed.meta
            if kind == TOMBSTONE:
                tomb_id = str(meta.get("id") or path.rsplit("/", 1)[-1][:-3]).strip().lower()
                if not valid_id(tomb_id):  # never a path: keyed by its own path instead
                    return Entry(key=MergeKey.for_path(path), path=path, data=data,
                                 kind=TOMBSTONE, updated=_text(meta.get("deleted")))
                return Entry(key=MergeKey.for_id(tomb_id), path=path, data=data, kind=TOMBSTONE,
                             updated=_text(meta.get("deleted")))
            project = path.split("/", 1)[0]
            note = note_from_parsed(parsed, text=text, relpath=path, project=project)
            stamp = _text(meta.get("checksum"))
            stamped = stamp == compute_checksum(text) if stamp else kind == EPISODE
            updated = note.updated or fallback_time
            if stamp and not stamped and note.updated and fallback_time:
                # Its text was changed after memctl stamped it (by hand), and the change was
                # committed unstamped (`memctl watch --commit`, a person's `git commit`): it
                # is as new as the first time it was seen, when that is later. Newest-wins and
                # an edit after a deletion then hold for it (tests/test_sync.py).
                updated = _later(note.updated, fallback_time)
            return Entry(key=MergeKey.for_id(note.id), path=path, data=data, kind="note",
                         updated=updated, created=_text(meta.get("created")), stamped=stamped)
        found = salvage_id(text) if kind != TOMBSTONE else None
        if found and valid_id(found):
            # A note whose front matter does not parse (a typo by hand) is still a version of
            # the note its `id:` line names, never a second file beside it: merged by id, one
            # file per id, the loser kept as a conflict copy (docs/sync.md,
            # tests/test_sync.py). A hand edit, dated by when it was first seen.
            return Entry(key=MergeKey.for_id(found), path=path, data=data, kind="note",
                         updated=fallback_time, stamped=False)
    return Entry(key=MergeKey.for_path(path), path=path, data=data, kind=kind, updated=fallback_time)


def _later(stamped: str, seen: str) -> str:
    """The later of two times (`seen` only when both read as times). A `stamped` more than
    a day ahead of this clock is not carried forward: the merge counts it as no time at all,
    and the hand edit would lose to an earlier edit made elsewhere (as `monotonic_stamp`
    dates memctl's own edits; docs/sync.md, tests/test_sync.py)."""
    first, second = parse_time(stamped), parse_time(seen)
    if first is None or second is None:
        return stamped
    if second > first or ahead(first):
        return seen
    return stamped


def _text(value: object) -> str | None:
    if value is None or isinstance(value, (list, dict)):
        return None
    return str(value).strip() or None


# --- writing ------------------------------------------------------------------------------------


def manifest_for(files: Iterable[BundleFile], *, machine: str, time: str,
                 extra: dict[str, Any] | None = None) -> dict[str, Any]:
    entries = {}
    for item in sorted(files, key=lambda f: f.path):
        entries[item.path] = {
            "sha256": hashlib.sha256(item.data).hexdigest(),
            "size": len(item.data),
            "updated": item.updated,
            "history": list(item.history),
        }
    manifest: dict[str, Any] = {"format": FORMAT_NAME, "version": FORMAT_VERSION,
                                "machine": machine, "time": time, "entries": entries}
    manifest.update(extra or {})
    return manifest


def manifest_bytes(manifest: dict[str, Any]) -> bytes:
    return (json.dumps(manifest, sort_keys=True, indent=1, ensure_ascii=False) + "\n").encode()


def size_problem(files: list[BundleFile], manifest: bytes,
                 limits: Limits | None = None) -> str | None:
    """Why an import would refuse a zip of `files` and `manifest` (`manifest_bytes`) for its
    size alone (more entries, or more bytes in all, than `limits` take); None when it would
    not. The same counts `_read_zip` makes: every file and the manifest are entries, and
    their bytes."""
    limits = limits or Limits()
    entries = len(files) + 1
    total = sum(len(item.data) for item in files) + len(manifest)
    if entries > limits.max_entries:
        return f"{entries:,} files, over the {limits.max_entries:,} an import takes"
    if total > limits.max_total_bytes:
        return (f"{total / 2**20:,.0f} MB, over the {limits.max_total_bytes // 2**20:,} MB "
                "an import takes")
    return None


def write_zip(target: Path, files: list[BundleFile], manifest: dict[str, Any] | bytes,
              progress: Callable[[int], None] | None = None) -> None:
    """Write the bundle via a temp file and an atomic rename; identical input, identical bytes.
    `manifest`: its dict, or the bytes `manifest_bytes` made of it already."""
    data = manifest if isinstance(manifest, bytes) else manifest_bytes(manifest)
    target = Path(target)
    refuse_special_target(target)
    make_dirs(target.parent)
    _remove_left_temps(target)
    # An export's own temp file, made anew under a random name (never one already there, nor
    # a link) and locked while it is written: two exports to one zip at once shared
    # `.NAME.tmp`, and one wrote into the other's and then failed on a file the other had
    # renamed; a temp file that nothing holds locked is a killed export's (tests/test_bundle.py).
    temp = target.with_name(f"{_TEMP_PREFIX.format(target.name)}{os.urandom(6).hex()}.tmp")
    try:
        descriptor = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        with open(descriptor, "wb") as handle:
            if fcntl is not None:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
            with zipfile.ZipFile(handle, "w") as archive:
                _add(archive, MANIFEST_NAME, data)
                for done, item in enumerate(sorted(files, key=lambda f: f.path), 1):
                    _add(archive, item.path, item.data)
                    if progress:
                        progress(done)
            handle.flush()
            os.fsync(handle.fileno())
        # Renamed once closed (Windows renames no open file); unlocked then, but just written:
        # a cleaner leaves a temp file alone for a minute after its last change.
        os.chmod(temp, os.stat(temp).st_mode & 0o775)  # the umask's, never world-writable
        os.replace(temp, target)
    except OSError as exc:
        temp.unlink(missing_ok=True)
        if exc.filename is None and exc.errno is not None:
            # A write into the zip (ENOSPC, EFBIG) names no file: the one-line error names the
            # zip it was for (memctl.core.errors.machine_error).
            raise OSError(exc.errno, exc.strerror, str(target)) from exc
        raise
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    fsync_dir(target.parent)


_TEMP_PREFIX = ".{}."  # the temp file of an export to NAME: `.NAME.<random>.tmp`
_LEFT_FOR = 60  # seconds a temp file has not changed before it can be a killed export's
_TEMP_MIDDLE = re.compile(r"[0-9a-f]{12}")  # the random part: os.urandom(6).hex()


def _remove_left_temps(target: Path) -> None:
    """The temp files of exports to `target` killed while they wrote: a `.NAME.<random>.tmp`
    that no process holds locked (a running export, on this machine or another of a shared
    folder, holds its own) and that has not changed for a minute (one just made may not be
    locked yet). Without POSIX locks (Windows), none is removed."""
    if fcntl is None:
        return
    prefix = _TEMP_PREFIX.format(target.name)
    try:
        # Only a name an export makes: a person's own `.NAME.notes.tmp` a minute old was
        # removed too (tests/test_bundle.py).
        names = [name for name in os.listdir(target.parent)
                 if name.startswith(prefix) and name.endswith(".tmp")
                 and _TEMP_MIDDLE.fullmatch(name[len(prefix):-len(".tmp")])]
    except OSError:
        return
    for name in names:
        path = target.parent / name
        try:
            # A regular file only, opened without waiting: a FIFO of that name blocked the
            # open (for reading, until a writer came), and the export hung.
            if not stat.S_ISREG(os.lstat(path).st_mode):
                continue
            descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK
                                 | getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            continue
        try:
            info = os.fstat(descriptor)
            if not stat.S_ISREG(info.st_mode) or time.time() - info.st_mtime < _LEFT_FOR:
                continue
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if os.path.samestat(info, os.stat(path, follow_symlinks=False)):
                os.unlink(path)
        except OSError:
            continue  # locked: an export writes it
        finally:
            os.close(descriptor)


def _add(archive: zipfile.ZipFile, name: str, data: bytes) -> None:
    info = zipfile.ZipInfo(name, date_time=_ZIP_TIME)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.create_system = 3  # unix, so the mode bits below are read as such
    info.external_attr = (stat.S_IFREG | 0o644) << 16
    archive.writestr(info, data, compresslevel=6)
