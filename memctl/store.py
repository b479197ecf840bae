"""The `Store` façade: a store's folder (`memctl.disk.storefiles.StoreFiles`) plus what needs git
and the index: creating and opening a store, finding a note by id, committing a change."""

from __future__ import annotations

import os
from pathlib import Path

from memctl.core.errors import MemctlError, UsageError, arg
from memctl.disk.layout import GLOBAL, STATE_DIR, TOMBSTONE_DIR, belongs_in_store
from memctl.disk.settings import SETTINGS_FILE, default_toml
from memctl.disk.storefiles import StoreFiles, first_foreign_file
from memctl.disk.templates import STORE_TEMPLATE_DIR, packaged_templates
from memctl.index.db import find_entry, index_path, open_index

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (start-up)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from memctl.core.note import Note
    from memctl.index.db import Index


def _refuse_odd_settings_file(root: Path) -> None:
    """A `memctl.toml` that is there but no file (a folder, a pipe, a link to nothing): every
    command said the folder was no store and `memctl init` that it already was one."""
    settings = root / SETTINGS_FILE
    if os.path.lexists(settings) and not settings.is_file():
        raise MemctlError(f"{settings} is not a file (a folder, a pipe or a broken link); remove "
                          f"it, then run `memctl init {root}`")


class Store(StoreFiles):
    # --- opening --------------------------------------------------------------------------

    @classmethod
    def open(cls, root: Path, create_if_missing: bool = False) -> Store:
        root = Path(root)
        if root.exists() and not root.is_dir():
            raise MemctlError(f"store path {root} is a file, not a folder; pass --store with a folder")
        if not (root / SETTINGS_FILE).is_file():
            _refuse_odd_settings_file(root)
            if create_if_missing:
                return cls.init(root)[0]
            if not root.exists():
                raise MemctlError(f"store {root} does not exist; create it with `memctl init {root}`")
            raise MemctlError(f"{root} is not a memctl store (no {SETTINGS_FILE}); create one with `memctl init {root}`")
        return cls(root)

    @classmethod
    def init(cls, root: Path, force: bool = False) -> tuple[Store, bool]:
        """Create the store, or complete a partial one. Never overwrites an existing file.
        A folder that is not a store and holds other files than memory (a code repository)
        is refused unless `force`: its history would get memctl's commits, its
        `.gitattributes` memctl's merge driver, and its Markdown files would become notes."""
        from memctl.disk import gitops  # lazy, as in `commit`
        from memctl.disk.atomic import atomic_write_text, make_dirs
        from memctl.disk.locking import require_file_locks

        require_file_locks()  # before the first file: no half-made store where none can be locked
        root = Path(root)
        if root.exists() and not root.is_dir():
            raise MemctlError(f"{root} is a file, not a folder")
        _refuse_odd_settings_file(root)
        if not force and root.is_dir() and not (root / SETTINGS_FILE).is_file():
            foreign = first_foreign_file(root) or next(
                (p for p in gitops.committed_paths(root) if not belongs_in_store(p)), None)
            if foreign is not None:
                raise MemctlError(
                    f"{root} is not a memctl store and holds files that are not memory "
                    f"({foreign}): making it a store would commit into its git history and "
                    f"read its Markdown files as notes. Create the store in an empty folder, "
                    f"or pass {arg('force')} to make this folder a store anyway")
        if gitops.is_repo(root):
            gitops.require_sha1(root, root, "nothing was changed; make the store in a new "
                                "folder, or in a SHA-1 repository")
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
        store = cls(root)
        with store.lock("init"):
            # An `init` killed while git wrote `.git/config` left `config.lock`: under the
            # lock, a rerun knows it for a dead memctl's and goes on
            # (tests/test_interrupted_git.py).
            gitops.settle_index_lock(root, keep_crash=True)
            # Every machine needs the driver in its own .git/config, so a hand `git pull`
            # never leaves conflict markers in a note.
            created_anything = gitops.install_merge_driver(root) or created_anything
            if created_anything:
                gitops.commit_all(root, "memctl init: create the store")
        return store, created_anything

    def find_note(self, id_or_prefix: str) -> Note:
        """The note with this id or unambiguous id prefix (looked up in the fresh index).
        A file that no longer parses raises `NoteFormatError`; `find_entry` gives its last
        good fields."""
        return self.read_note(self.find_entry(id_or_prefix)["path"])

    def find_entry(self, id_or_prefix: str,
                   then: Callable[[Index, dict[str, Any]], object] | None = None
                   ) -> dict[str, Any]:
        """The index's entry (front matter fields and path) of the note or episode with this
        id or unambiguous id prefix: for a file that no longer parses, its last good version.
        `then(index, entry)` runs on the index the lookup used, before it is closed."""
        wanted = id_or_prefix.strip().lower()
        if not wanted:
            raise UsageError("an id is required")
        # Raises MemctlError for unknown or ambiguous ids; a whole id whose file is unchanged
        # is answered without walking the store (memctl.index.db.find_entry).
        return find_entry(self, wanted, then=then)

    def commit(self, message: str, paths: list[str] | None = None,
               index: Index | None = None, close_index: bool = False,
               then: Callable[[Index], object] | None = None,
               allow_empty: bool = False) -> str | None:
        """Commit `paths` (everything when None) and index them again (`allow_empty`: commit
        even when nothing changed, for the message). `index`: the
        connection the command already holds (`add`'s checks read through it), so the
        index is not opened and closed once more: closing SQLite's last connection
        checkpoints its write-ahead log to disk (bench/bench_write.py). While git works:
        `then` is run on `index` once the change is indexed, and `close_index` closes it."""
        # Lazy: git's module (subprocess) and the atomic writer (tempfile) are not needed by
        # a read, and every `memctl search` opens a Store (tests/test_layers.py).
        from memctl.disk import gitops

        if not paths:
            return gitops.commit_all(self.root, message, paths, allow_empty=allow_empty)
        # git works in its own processes while this one indexes the change: on two cores the
        # refresh adds next to nothing to the command (~8 ms of `add`, bench/bench_write.py).
        # Both are done when this returns: one commit, and the index fresh.
        committing = gitops.Committing(self.root, message, paths, allow_empty=allow_empty)
        try:
            self._refresh_index(paths, index)
            if index is not None:
                if then is not None:
                    then(index)
                if close_index:
                    index.close()
        finally:
            commit_id = committing.result()
        return commit_id

    def _refresh_index(self, paths: list[str], held: Index | None = None) -> None:
        """Read-your-writes: the next search sees this change even while a watcher (which
        lets commands skip their own walk) has not yet picked it up."""
        import sqlite3

        if held is None and not index_path(self).exists():
            return

        try:
            index = open_index(self) if held is None else held
            try:
                index.refresh(paths)
            finally:
                if held is None:
                    index.close()
        except (sqlite3.Error, MemctlError):
            pass  # best effort: the next command's freshness check catches up

