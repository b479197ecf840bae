"""Finding the files the index covers, and telling cheaply which folders changed.

Every read first checks the index against the files. An edit in place changes nothing but
the file's own stamp, so every file is stat'ed: that is the floor. What this module saves is
the rest: the stamps are grouped by folder, and each folder gets one digest of its sorted
`path\\tmtime_ns\\tsize` keys. The index keeps the same digest of what it indexed in each
folder (computed from its `files` table, inside the transaction that changes it), so a check
that finds nothing changed compares a few hundred digests instead of loading every file's
stamp from SQLite, and a change is looked at only in the folders whose digest differs.
"""

from __future__ import annotations

import os
import stat as stat_module

from memctl.core.vocab import valid_project_name

_MD_SUFFIXES = (".md", ".MD", ".Md", ".mD")


def scan(root: str, folders: list[tuple[str, str]] | None = None) -> dict[str, list[str]]:
    """`path\\tmtime_ns\\tsize` keys of every file the index covers, by store-relative folder
    (`blog/notes/fact/`); folders without such files are left out.

    Mirrors `store.classify` for indexed kinds without classifying each file: top-level
    folders with a project name, no dot folders or dot files, `*.md`. Each folder is opened
    once and its entries are stat'ed relative to it (cheaper than full paths).
    """
    found: dict[str, list[str]] = {}
    if folders is None:
        folders = []
        try:
            with os.scandir(root) as top:
                for entry in top:
                    try:
                        if entry.is_dir(follow_symlinks=False) and valid_project_name(entry.name):
                            folders.append((entry.name + "/", entry.path))
                    except OSError:
                        continue
        except OSError:
            return found
    s_isreg, s_isdir = stat_module.S_ISREG, stat_module.S_ISDIR
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)
    while folders:
        here, folder = folders.pop()
        keys: list[str] = []
        add = keys.append
        try:
            fd = os.open(folder, flags)
        except OSError:
            continue
        try:
            with os.scandir(fd) as entries:
                for entry in entries:
                    name = entry.name
                    if name[0] == ".":
                        continue
                    try:
                        if name.endswith(_MD_SUFFIXES):
                            info = entry.stat(follow_symlinks=False)
                            if s_isreg(info.st_mode):
                                add(f"{here}{name}\t{info.st_mtime_ns}\t{info.st_size}")
                            elif s_isdir(info.st_mode):
                                folders.append((f"{here}{name}/", f"{folder}/{name}"))
                        elif entry.is_dir(follow_symlinks=False):
                            folders.append((f"{here}{name}/", f"{folder}/{name}"))
                    except OSError:
                        continue
        except OSError:
            pass
        finally:
            os.close(fd)
        if keys:
            found[here] = keys
    return found


def project_folders(root: str) -> set[str]:
    """The names of the top-level folders `scan` walks (and `memctl watch` watches): real
    folders, not links, with a project's name."""
    names: set[str] = set()
    try:
        with os.scandir(root) as top:
            for entry in top:
                try:
                    if entry.is_dir(follow_symlinks=False) and valid_project_name(entry.name):
                        names.add(entry.name)
                except OSError:
                    continue
    except OSError:
        pass
    return names


def scan_keys(root: str, folders: list[tuple[str, str]] | None = None) -> set[str]:
    """Every key of `scan`, in one set."""
    keys: set[str] = set()
    for folder_keys in scan(root, folders).values():
        keys.update(folder_keys)
    return keys


def folder_digest(keys: list[str]) -> str:
    """The digest of one folder's keys, in any order."""
    return _blake2b_hex("\n".join(sorted(keys)).encode("utf-8", "surrogateescape"))


def content_digest(data: bytes) -> str:
    """The hash the index keeps of a file's bytes (memctl.index.docs records it; `show`
    compares a file with it without loading the parser: memctl.index.db.current_entry)."""
    return _blake2b_hex(data)


def _blake2b_hex(data: bytes) -> str:
    try:
        from _blake2 import blake2b  # what hashlib.blake2b is, without loading OpenSSL (~5 ms)
    except ImportError:  # pragma: no cover - a Python built without it
        from hashlib import blake2b

    return blake2b(data, digest_size=16).hexdigest()


def folder_of(path: str) -> str:
    """`blog/notes/fact/` for `blog/notes/fact/x.md`."""
    return path[:path.rfind("/") + 1]


def split_key(key: str) -> tuple[str, tuple[int, int]]:
    path, mtime, size = key.rsplit("\t", 2)
    return path, (int(mtime), int(size))


def walk_stats(root: str | os.PathLike[str]) -> dict[str, tuple[int, int]]:
    """(mtime_ns, size) of every file the index covers, by store-relative path."""
    return dict(split_key(key) for key in scan_keys(str(root)))
