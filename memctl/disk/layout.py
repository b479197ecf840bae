"""A store's layout: where the store is, its folders and files, which paths are memory
(`classify`), project names. Names and paths only: reading and writing are
`memctl.disk.storefiles`. See docs/architecture.md for the layout."""

from __future__ import annotations

import os
import re
from pathlib import Path

from memctl.core.arguments import project_name
from memctl.core.errors import (
    ArgumentError,
    MemctlError,
    UsageError,
    VariableError,
    arg,
    write_advice,
)
from memctl.core.textfile import is_utf8_name
from memctl.core.vocab import DEBRIS_SUFFIXES as _DEBRIS_SUFFIXES
from memctl.core.vocab import GLOBAL as GLOBAL  # the global scope is a folder of the layout too
from memctl.core.vocab import PROJECT_NAME_RULE, project_from_folder, valid_project_name

DEFAULT_PROJECT = "default"
STATE_DIR = ".memctl"
TOMBSTONE_DIR = ".tombstones"
CONFLICT_DIR = ".conflicts"
MEMORY_FILE = "MEMORY.md"
SCRATCHPAD_FILE = "SCRATCHPAD.md"
NOTES_DIR = "notes"
EPISODES_DIR = "episodes"
ARCHIVE_DIR = "archive"

# Kinds of memory file, as `classify` names them.
NOTE, ARCHIVED, MEMORY, SCRATCHPAD, EPISODE, TOMBSTONE, CONFLICT = (
    "note", "archived", "memory", "scratchpad", "episode", "tombstone", "conflict",
)


TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (start-up)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Protocol, Union

    class HasRoot(Protocol):
        """A `StoreFiles` / `Store` as the lower layers see it: its folder."""

        root: Path

    # What the disk and index layers take for a store: a `StoreFiles` (or `Store`) or a path.
    StoreLike = Union[HasRoot, Path, str, os.PathLike[str]]
    # A git working tree's folder -> (its project, the folder name that stands for, None or
    # the folder of another repository holding that name): memctl.disk.repositories.lookup.
    RepositoryLookup = Callable[[Path], tuple[str, str, Union[str, None]]]


def root_of(store: StoreLike) -> Path:
    """A store's folder, from a `Store` (anything with `.root`) or a path (whose own `.root`
    would be "/")."""
    if isinstance(store, (str, os.PathLike)):
        return Path(store)
    return Path(store.root)


def state_path(store: StoreLike, name: str = "") -> Path:
    """The store's machine-local `.memctl/` folder (never committed), or a file in it. A
    `.memctl` that is a symbolic link is refused: the index, locks and drafts would be
    written wherever it points (docs/security.md)."""
    folder = root_of(store) / STATE_DIR
    if folder.is_symlink():
        raise MemctlError(f"{folder} is a symbolic link; memctl keeps its local state only in a "
                          "real folder of the store: remove the link (the folder is rebuilt)")
    return folder / name


def state_file_error(path: Path, exc: OSError) -> MemctlError:
    """The one line for a file of `.memctl/` that cannot be opened or replaced: most often a
    folder made where the file goes (by hand, or a tool), which nothing of memctl removes."""
    if path.is_dir() and not path.is_symlink():
        return MemctlError(f"{path} is a folder where memctl keeps a file of its own: remove "
                           "the folder (memctl makes the file again)")
    return MemctlError(f"cannot write {path}: {exc.strerror or exc}; "
                       + write_advice(exc, "the store's .memctl folder"))


class StoreGoneError(MemctlError):
    """The store's folder went from its path while memctl ran (moved, deleted, or another
    folder put in its place): nothing was changed, and the watcher waits for it to return."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        super().__init__(f"the store folder {os.fspath(root)} is gone or was replaced while "
                         f"memctl ran; nothing was changed")


def path_identity(path: str | os.PathLike[str]) -> tuple[int, int] | None:
    """(device, inode) of what is at `path` (links followed), or None when nothing is: a file
    or folder replaced by another (`mv`, a rebuilt index) has another."""
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_dev, found.st_ino


def make_state_folder(path: Path) -> None:
    """The store's `.memctl/` (`path`), made inside the store's folder and never the folder
    itself: a store moved away while a command or watcher starts is not made again, empty,
    where it was (tests/test_watch.py)."""
    try:
        path.mkdir(mode=0o755, exist_ok=True)
    except FileNotFoundError:
        raise StoreGoneError(path.parent) from None
    except FileExistsError:  # a file (or a link) stands where the folder goes
        raise MemctlError(
            f"{path} is not a folder: memctl keeps the store's index, lock and watcher state "
            f"in it; move that file away, then run the command again") from None


def default_store_path() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "memctl"


def resolve_store_path(option: str | None) -> tuple[Path, bool]:
    """The store from `--store`, else `MEMCTL_STORE`, else the per-user default.

    Returns the path and whether it is the default (only the default is created on first use;
    a mistyped explicit path must not silently become a new store). An empty `--store` or
    `MEMCTL_STORE` (a script's unset variable) is bad usage, never the default store."""
    chosen = chosen_store(option)
    if chosen:
        return Path(chosen).expanduser().absolute(), False
    return default_store_path(), True


def chosen_store(option: str | None, environ: dict[str, str] | None = None) -> str | None:
    """`--store`, else `MEMCTL_STORE`, else None (the default store). Either one given but
    empty is a UsageError: `memctl --store "$STORE" add …` with STORE unset would otherwise
    write into the default store (docs/security.md)."""
    if option is not None:
        if not option.strip():
            raise UsageError(f"{arg('store')} is empty (an unset variable?); give the store's "
                             f"folder, or leave {arg('store')} out for the default store")
        return option
    value = (os.environ if environ is None else environ).get("MEMCTL_STORE")
    if value is not None and not value.strip():
        raise VariableError("MEMCTL_STORE is set but empty; set it to the store's folder, or "
                         "unset it for the default store")
    return value


def resolve_project(option: str | None, store_root: Path | None = None, cwd: Path | None = None,
                    repository: RepositoryLookup | None = None) -> str:
    """`--project`, else `MEMCTL_PROJECT`, else the git repository the shell stands in, else
    `default`. Inside the store itself, the project folder one stands in."""
    return choose_project(option, store_root, cwd, repository)[0]


def choose_project(option: str | None, store_root: Path | None = None,
                   cwd: Path | None = None, repository: RepositoryLookup | None = None
                   ) -> tuple[str, str | None]:
    """`resolve_project`, and a note for the user when the project is a git repository's
    folder whose name had to change to be a project name (`my app (old)` → `my-app-old`),
    else None. `repository` tells which project a git working tree stands for
    (`memctl.disk.repositories.lookup`: worktrees share one, namesakes do not); without it,
    its folder's name."""
    if option:
        return project_name(option), None
    from_env = os.environ.get("MEMCTL_PROJECT")
    if from_env is not None and not from_env.strip():
        # A script's unset variable (`MEMCTL_PROJECT="$PROJECT"`): never the project of the
        # folder it happens to run in, as an empty MEMCTL_STORE is never the default store.
        raise VariableError("MEMCTL_PROJECT is set but empty; set it to a project's name, or "
                            "unset it for the project of the folder you are in")
    if from_env:
        try:
            return project_name(from_env, "MEMCTL_PROJECT"), None
        except ArgumentError as exc:  # worded for the variable in every front end
            raise VariableError(f"invalid value for MEMCTL_PROJECT: {exc.problem}") from None
    here = (cwd or Path.cwd()).absolute()
    if store_root is not None:
        # Both as the kernel names them: a store given as `--store ..` or through a link is
        # still the store one stands in (its own git repository is never a project).
        try:
            inside = Path(os.path.realpath(here)).relative_to(os.path.realpath(store_root))
        except ValueError:
            inside = None
        if inside is not None:
            first = inside.parts[0] if inside.parts else ""
            return (first if first and valid_project_name(first) else DEFAULT_PROJECT), None
    for folder in (here, *here.parents):
        if (folder / ".git").exists():
            name, folder_name, holder = repository(folder) if repository is not None \
                else (project_from_folder(folder.name) or DEFAULT_PROJECT, folder.name, None)
            if holder is not None:
                return name, (f"project {name!r}: the project of the folder name {folder_name!r} "
                              f"is another repository's ({holder}); {arg('project')} or "
                              "MEMCTL_PROJECT chooses another")
            if name == folder_name:
                return name, None
            return name, (f"project {name!r} stands for the folder {folder_name!r}, whose name "
                          f"is not a project name ({PROJECT_NAME_RULE}); {arg('project')} or "
                          "MEMCTL_PROJECT chooses another")
    return DEFAULT_PROJECT, None


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
    if not is_utf8_name(relpath):
        return None
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


# What a store holds besides memory: memctl's own files and folders.
_STORE_FILES = ("memctl.toml", ".gitignore", ".gitattributes")
_STORE_FOLDERS = (STATE_DIR, TOMBSTONE_DIR, CONFLICT_DIR, ".templates", ".counters", ".git")


def belongs_in_store(relpath: str) -> bool:
    """Whether a file can be part of a store: memory, memctl's own files and folders, or a
    hidden file or editor debris inside a project (which memctl ignores). A folder holding
    anything else (a code repository) is not made a store unless asked (`memctl init
    --force`, docs/sync.md)."""
    parts = relpath.split("/")
    if classify(relpath) is not None or relpath in _STORE_FILES:
        return True
    if parts[0] in _STORE_FOLDERS or parts[-1] == ".gitkeep":
        return True
    return len(parts) >= 2 and valid_project_name(parts[0]) and (
        any(part.startswith(".") for part in parts[1:]) or parts[-1].endswith(_DEBRIS_SUFFIXES))


class MemoryFile:
    __slots__ = ("relpath", "kind", "project", "stamp")

    def __init__(self, relpath: str, kind: str, project: str,
                 stamp: tuple[int, int, int]) -> None:
        self.relpath = relpath
        self.kind = kind
        self.project = project
        self.stamp = stamp  # memctl.core.stamp.file_stamp, as the walk read it

    @property
    def size(self) -> int:
        return self.stamp[2]

    def __repr__(self) -> str:
        return f"MemoryFile({self.relpath!r}, {self.kind!r}, {self.project!r})"


def slugify(text: str, limit: int = 48) -> str:
    words = re.sub(r"[^\w]+", "-", text.lower(), flags=re.UNICODE).strip("-_")
    slug = re.sub(r"-{2,}", "-", words)[:limit].strip("-_")
    return slug
