"""A file's stamp (memctl.core.stamp: mtime, ctime, size) is what every check of
the index against the files compares. A note replaced by another file of the same size with
the same mtime (`cp -p`, `rsync -t`, `tar x`, `touch -r`, a rename into place) keeps neither
its ctime nor its text: the next search, with or without `memctl watch`, serves the new text,
and health counts it as changed (docs/watch.md, "What a pass compares")."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest
from conftest import git, run_memctl
from test_watch import WatchProcess, note_text, search_ids

from memctl.core import stamp as stamps
from memctl.disk import filescan
from memctl.index import db
from memctl.index.db import ensure_fresh, open_index

OLD_TIME = 1_767_261_600_000_000_000  # 2026-01-01 10:00 UTC, in ns: an mtime long past


def _store_with_note(store: Path) -> Path:
    """One committed note (`demo/notes/fact/h.md`) holding `wordaaaa1`, its mtime long past,
    indexed; returns its path."""
    folder = store / "demo" / "notes" / "fact"
    folder.mkdir(parents=True)
    note = folder / "h.md"
    note.write_text(note_text("01stampnote000001", "holds wordaaaa1 only"), encoding="utf-8")
    os.utime(note, ns=(OLD_TIME, OLD_TIME))
    git(store, "add", "-A")
    git(store, "commit", "-qm", "one note")
    return note


def _same_size_same_mtime(note: Path, how: str) -> None:
    """Replace `note` by a file of the same size and the same mtime holding `wordbbbb2`."""
    replacement = note.parent.parent.parent.parent / "replacement.md"
    replacement.write_text(note_text("01stampnote000001", "holds wordbbbb2 only"),
                           encoding="utf-8")
    os.utime(replacement, ns=(OLD_TIME, OLD_TIME))
    before = os.stat(note)
    if how == "cp -p":  # the bytes written into the same file, then its times set back
        shutil.copy2(replacement, note)
        os.utime(note, ns=(OLD_TIME, OLD_TIME))
        replacement.unlink()
    else:  # a new file renamed into place
        os.replace(replacement, note)
    after = os.stat(note)
    assert (after.st_mtime_ns, after.st_size) == (before.st_mtime_ns, before.st_size)


def test_the_walk_keys_are_the_stamp_keys(store_path: Path) -> None:
    """The walk writes each key out (the hot path): it is `stamp_key` of `file_stamp`."""
    note = _store_with_note(store_path)
    (note.parent / "other.md").write_text(note_text("01stampnote000002", "x"), encoding="utf-8")
    expected = {filescan.stamp_key(str(path.relative_to(store_path)),
                                   stamps.file_stamp(os.lstat(path)))
                for path in note.parent.iterdir()}
    assert filescan.scan_keys(str(store_path)) == expected
    assert all(len(stamp) == 3 for stamp in filescan.walk_stats(store_path).values())


@pytest.mark.parametrize("how", ["cp -p", "rename"])
def test_a_same_size_same_mtime_replacement_is_found_by_the_next_search(
        store_path: Path, how: str) -> None:
    note = _store_with_note(store_path)
    assert search_ids(store_path, "wordaaaa1") == ["01stampnote000001"]
    _same_size_same_mtime(note, how)
    assert search_ids(store_path, "wordbbbb2") == ["01stampnote000001"]
    assert search_ids(store_path, "wordaaaa1") == []


@pytest.mark.parametrize("how", ["cp -p", "rename"])
def test_a_same_size_same_mtime_replacement_is_found_with_a_watcher(
        store_path: Path, how: str) -> None:
    """The watcher is told about the path; its pass compares the whole stamp, so it indexes
    the file again (and a search asks it, instead of walking)."""
    note = _store_with_note(store_path)
    watcher = WatchProcess(store_path).ready()
    try:
        assert search_ids(store_path, "wordaaaa1") == ["01stampnote000001"]
        mark = watcher.mark()
        _same_size_same_mtime(note, how)
        watcher.settle(mark, lambda totals: totals["updated"] >= 1, f"the {how} replacement")
        assert search_ids(store_path, "wordbbbb2") == ["01stampnote000001"]
        assert search_ids(store_path, "wordaaaa1") == []
    finally:
        watcher.stop()


def test_health_counts_a_same_size_same_mtime_replacement_as_changed(store_path: Path) -> None:
    note = _store_with_note(store_path)
    assert search_ids(store_path, "wordaaaa1") == ["01stampnote000001"]
    _same_size_same_mtime(note, "cp -p")
    result = run_memctl("health", "--json", store=store_path, project=None)
    assert result.stdout, (result.exit_code, result.stderr)
    index = json.loads(result.stdout)["index"]
    assert index["changed_since_last_update"] == 1
    assert index["drifted"] == 0
    assert search_ids(store_path, "wordbbbb2") == ["01stampnote000001"]


def test_a_new_ctime_alone_is_no_change_and_no_loop(store_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """What changes a file's ctime and not its bytes (the journal's hard-link backups, a
    chmod) makes the next pass hash it once, find it the same and record its stamp: nothing
    is indexed again, the pass after finds every file as indexed, health reports no drift."""
    note = _store_with_note(store_path)
    ensure_fresh(store_path).close()
    os.link(note, store_path / ".memctl" / "backup")  # as memctl.disk.journal.keep_backup
    os.unlink(store_path / ".memctl" / "backup")
    os.chmod(note, 0o600)
    os.chmod(note, 0o644)
    # The stamp of a file changed this very second is not trusted (RACY_NS): not waited for.
    monkeypatch.setattr(db, "RACY_NS", 0)
    with open_index(store_path) as index:
        first = index.refresh()
        assert (first.added, first.updated, first.removed, first.files_changed) == ([], [], [], 0)
        stamp, _digest = index.indexed_files()["demo/notes/fact/h.md"]
        assert stamp == stamps.file_stamp(os.stat(note))
        second = index.refresh()
        assert not second.changed and second.unchanged == 1
    result = run_memctl("health", "--json", store=store_path, project=None)
    index_report = json.loads(result.stdout)["index"]
    assert (index_report["changed_since_last_update"], index_report["drifted"]) == (0, 0)


def test_an_index_of_the_schema_before_the_ctime_is_rebuilt(store_path: Path) -> None:
    """An index that keeps no ctime (schema 10) is made again, not read with missing columns."""
    note = _store_with_note(store_path)
    ensure_fresh(store_path).close()
    with open_index(store_path) as index:
        index.conn.execute("ALTER TABLE files DROP COLUMN ctime_ns")
        index.conn.execute("UPDATE meta SET value = '10' WHERE key = 'schema'")
    _same_size_same_mtime(note, "rename")
    assert search_ids(store_path, "wordbbbb2") == ["01stampnote000001"]


def test_a_served_store_reads_memctl_toml_replaced_keeping_size_and_mtime(
        store_path: Path) -> None:
    """`memctl mcp` reads the settings again when the stamp of `memctl.toml` changes: a copy
    of the same size and mtime written into the same file (`cp -p`) changes its ctime."""
    from memctl.services.serving import ServedStore
    from memctl.store import Store

    settings = store_path / "memctl.toml"
    settings.write_text("[recall]\nmax_notes = 1\n", encoding="utf-8")
    os.utime(settings, ns=(OLD_TIME, OLD_TIME))
    served = ServedStore(Store(store_path))
    assert served.store.settings.get("recall.max_notes") == 1
    copy = store_path.parent / "memctl.toml"
    copy.write_text("[recall]\nmax_notes = 2\n", encoding="utf-8")
    shutil.copy2(copy, settings)
    os.utime(settings, ns=(OLD_TIME, OLD_TIME))
    served.check()
    assert served.store.settings.get("recall.max_notes") == 2


@pytest.mark.parametrize("change", ["chmod", "touch"])
def test_health_reports_no_drift_for_a_file_whose_stamp_alone_changed(store_path: Path,
                                                                       change: str) -> None:
    """A chmod (a new ctime) or a touch (a new mtime) leaves the bytes as indexed: health's
    own update stamps the file anew, and what it reports as drift, what still differs after
    that update, is nothing (docs/health.md)."""
    note = _store_with_note(store_path)
    time.sleep(2.1)  # past RACY_NS: the stamps recorded now are trusted ones
    ensure_fresh(store_path).close()
    if change == "chmod":
        os.chmod(note, 0o600)
    else:
        os.utime(note)
    result = run_memctl("health", "--json", store=store_path, project=None)
    assert result.stdout, (result.exit_code, result.stderr)
    index = json.loads(result.stdout)["index"]
    assert index["changed_since_last_update"] == 1
    assert (index["drifted"], index["drift"]["stale"]) == (0, [])
