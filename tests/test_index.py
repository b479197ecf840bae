"""The derived index: always in step with the files, never writing them, rebuilt at will."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import run_memctl, tree_snapshot
from conftest import write_memory_file as write
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memctl.core.errors import MemctlError
from memctl.core.noteformat import parse_text
from memctl.disk import counters
from memctl.index import db
from memctl.index.db import ensure_fresh, index_path, open_index
from memctl.index.docs import fast_parse
from memctl.index.search import search


def ids(hits: list) -> list[str]:
    return [hit.id for hit in hits]


def find(root: Path, query: str, **kwargs: object) -> list[str]:
    kwargs.setdefault("project", "blog")
    return ids(search(root, query, **kwargs))


@pytest.fixture
def root(store_path: Path) -> Path:
    write(store_path, "blog/notes/decision/pg-aaaaaaaaaaaaaaaa.md",
          "The blog backend uses PostgreSQL 16 through Kysely.",
          id="aaaaaaaaaaaaaaaa", type="decision", project="blog", importance=8,
          tags=["database", "postgres"], updated="2026-11-30T09:00:00.000Z")
    write(store_path, "blog/notes/fact/cache-bbbbbbbbbbbbbbbb.md",
          "分布式缓存层用 Redis，连接池大小为 20。",
          id="bbbbbbbbbbbbbbbb", type="fact", project="blog", tags=["cache"])
    return store_path


def test_hand_edits_are_seen_by_the_next_read(root: Path) -> None:
    assert find(root, "kysely") == ["aaaaaaaaaaaaaaaa"]
    path = root / "blog/notes/decision/pg-aaaaaaaaaaaaaaaa.md"
    path.write_text(path.read_text().replace("Kysely", "Drizzle"))
    assert find(root, "kysely") == []
    assert find(root, "drizzle") == ["aaaaaaaaaaaaaaaa"]


def test_a_hand_dropped_file_without_front_matter_is_a_note(root: Path) -> None:
    write(root, "blog/ideas.md", "# Ideas\nTry pgbouncer for pooling.")
    hits = search(root, "pgbouncer", project="blog")
    assert len(hits) == 1 and hits[0].path == "blog/ideas.md"
    assert (hits[0].type, hits[0].importance, hits[0].title) == ("fact", 5, "Ideas")


def test_deleted_notes_leave_no_phantom_rows(root: Path) -> None:
    assert find(root, "redis") == ["bbbbbbbbbbbbbbbb"]
    (root / "blog/notes/fact/cache-bbbbbbbbbbbbbbbb.md").unlink()
    assert find(root, "redis") == []
    index = ensure_fresh(root)
    assert [row["id"] for row in index.list_notes()] == ["aaaaaaaaaaaaaaaa"]
    with pytest.raises(MemctlError, match="no note"):
        index.get("bbbbbbbbbbbbbbbb")
    rows = index.conn.execute("SELECT count(*) FROM fts").fetchone()[0]
    assert rows == index.count()


def test_a_move_keeps_the_id_and_changes_the_path(root: Path) -> None:
    ensure_fresh(root)
    old = root / "blog/notes/fact/cache-bbbbbbbbbbbbbbbb.md"
    new = root / "blog/notes/moved/elsewhere.md"
    new.parent.mkdir(parents=True)
    old.rename(new)
    index = ensure_fresh(root)
    assert index.last_refresh is not None
    assert index.last_refresh.updated == ["bbbbbbbbbbbbbbbb"]
    assert index.last_refresh.removed == []
    assert index.get("bbbb")["path"] == "blog/notes/moved/elsewhere.md"
    assert [hit.path for hit in search(root, "redis", project="blog")] == [
        "blog/notes/moved/elsewhere.md"]


def test_whole_folders_appear_and_vanish(root: Path, tmp_path: Path) -> None:
    write(tmp_path / "src", "shop/notes/a.md", "checkout uses stripe")
    write(tmp_path / "src", "shop/notes/deep/er/b.md", "refunds go through stripe too")
    assert find(root, "stripe", all_projects=True) == []
    shutil.copytree(tmp_path / "src/shop", root / "shop")
    assert len(find(root, "stripe", all_projects=True)) == 2
    shutil.rmtree(root / "shop")
    assert find(root, "stripe", all_projects=True) == []


def test_a_file_that_stops_parsing_keeps_its_last_good_entry(root: Path) -> None:
    path = root / "blog/notes/decision/pg-aaaaaaaaaaaaaaaa.md"
    good = path.read_text()
    assert find(root, "kysely") == ["aaaaaaaaaaaaaaaa"]
    path.write_text(good.replace("tags: [database, postgres]", "tags: [database, postgres")
                    .replace("Kysely", "Drizzle"))
    index = ensure_fresh(root)
    assert index.last_refresh is not None and index.last_refresh.errors
    assert [str(e) for e in index.parse_errors()] == [
        f"blog/notes/decision/pg-aaaaaaaaaaaaaaaa.md:{index.parse_errors()[0].line}: "
        + index.parse_errors()[0].message]
    assert find(root, "kysely") == ["aaaaaaaaaaaaaaaa"]  # the last good version
    assert ensure_fresh(root).parse_errors()  # still reported on the next read
    path.write_text(good.replace("Kysely", "Drizzle"))
    assert ensure_fresh(root).parse_errors() == []
    assert find(root, "drizzle") == ["aaaaaaaaaaaaaaaa"]


def test_indexing_never_changes_a_file(root: Path) -> None:
    write(root, "blog/raw.md", "no front matter, no final newline")
    (root / "blog/crlf.md").write_bytes(b"---\r\ntype: rule\r\ntags: [a]\r\n---\r\nCRLF body")
    (root / "blog/broken.md").write_text("---\ntags: [x\n---\nbody\n")
    before = tree_snapshot(root)
    times = {p: p.stat().st_mtime_ns for p in root.rglob("*.md")}
    open_index(root).rebuild()
    ensure_fresh(root)
    search(root, "body", project="blog")
    assert tree_snapshot(root) == before
    assert {p: p.stat().st_mtime_ns for p in root.rglob("*.md")} == times


def test_refresh_of_named_paths(root: Path) -> None:
    index = ensure_fresh(root)
    write(root, "blog/new.md", "brand new pgvector note")
    (root / "blog/notes/fact/cache-bbbbbbbbbbbbbbbb.md").unlink()
    stats = index.refresh(["blog/new.md", "blog/notes/fact/cache-bbbbbbbbbbbbbbbb.md"])
    assert len(stats.added) == 1 and stats.removed == ["bbbbbbbbbbbbbbbb"]
    write(root, "blog/sub/x/one.md", "inside a new folder")
    stats = index.refresh(["blog/sub"])
    assert len(stats.added) == 1
    shutil.rmtree(root / "blog/sub")
    stats = index.refresh(["blog/sub"])
    assert len(stats.removed) == 1
    write(root, "blog/abs.md", "named by an absolute path")
    assert len(index.refresh([str(root / "blog/abs.md")]).added) == 1
    write(root, "blog/dot.md", "the store itself named: a full walk")
    assert len(index.refresh(["."]).added) == 1
    # Debris and paths outside the store are ignored.
    assert not index.refresh(["blog/.new.md.swp", "../etc/passwd", ".git/config"]).changed


def test_memory_sections_are_hits_pointing_at_the_section(root: Path) -> None:
    (root / "blog/MEMORY.md").write_text(
        "# blog memory\n\n## Constraints\n<!-- guidance -->\n- Python 3.11 only\n\n"
        "## Decisions\n- [11-30] Use Kysely, not Prisma\n\n## Lessons\n<!-- empty -->\n")
    hits = search(root, "prisma", project="blog")
    assert [(h.id, h.kind, h.section, h.line) for h in hits] == [
        ("blog/MEMORY.md#decisions", "memory", "Decisions", 7)]
    assert search(root, "guidance", project="blog") == []  # template comments are not memory
    assert not any(h.id.endswith("#lessons") for h in search(root, "lessons", project="blog"))


def test_scratchpads_and_episodes_are_indexed(root: Path) -> None:
    (root / "blog/SCRATCHPAD.md").write_text("# Scratchpad\n\n## Focus\nfix the flaky login test\n")
    write(root, "blog/episodes/2026-11/2026-11-30-login-cccccccccccccccc.md",
          "# Fix login\n## Steps\n- bisect the flaky test → found a race\n",
          id="cccccccccccccccc", type="episode", project="blog")
    kinds = {h.kind: h.id for h in search(root, "flaky", project="blog")}
    assert kinds == {"scratchpad": "blog/SCRATCHPAD.md", "episode": "cccccccccccccccc"}


def test_deleted_index_is_rebuilt(root: Path) -> None:
    assert find(root, "redis") == ["bbbbbbbbbbbbbbbb"]
    for path in index_path(root).parent.glob("index.sqlite*"):
        path.unlink()
    assert find(root, "redis") == ["bbbbbbbbbbbbbbbb"]


@pytest.mark.parametrize("garbage", [b"", b"not a database at all" * 100,
                                     b"SQLite format 3\x00" + b"\xff" * 5000])
def test_corrupt_index_is_rebuilt(root: Path, garbage: bytes) -> None:
    ensure_fresh(root).close()
    for path in index_path(root).parent.glob("index.sqlite-*"):
        path.unlink()
    index_path(root).write_bytes(garbage)
    assert find(root, "redis") == ["bbbbbbbbbbbbbbbb"]


def test_tokenizer_version_change_rebuilds(root: Path) -> None:
    index = ensure_fresh(root)
    index.conn.execute("UPDATE meta SET value = '0' WHERE key = 'tokenizer'")
    index.close()
    index = ensure_fresh(root)
    assert index.conn.execute("SELECT value FROM meta WHERE key = 'tokenizer'").fetchone()[0] != "0"
    assert index.last_refresh is not None and len(index.last_refresh.added) == 2


def _set_version(root: Path, key: str, value: str) -> None:
    with sqlite3.connect(index_path(root)) as conn:
        conn.execute("UPDATE meta SET value = ? WHERE key = ?", (value, key))
    conn.close()


def _head(root: Path) -> str:
    return subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], check=True,
                          capture_output=True, text=True).stdout


def _versions(root: Path) -> dict[str, str]:
    conn = sqlite3.connect(index_path(root))
    try:
        return dict(conn.execute("SELECT key, value FROM meta"))
    finally:
        conn.close()


@pytest.mark.parametrize("key", ["schema", "tokenizer", "extract"])
def test_an_index_of_a_newer_memctl_is_refused_and_left_as_it_is(root: Path, key: str) -> None:
    """A memctl older than the index (a `memctl mcp` started before an upgrade) rebuilt it for
    its own version, and the newer one rebuilt it back on its next command: over and over.
    Now the older one says so, writes nothing, and `memctl reindex` takes the index over."""
    ensure_fresh(root).close()
    newer = str(int(_versions(root)[key]) + 1)
    _set_version(root, key, newer)
    before = _versions(root)
    snapshot, head = tree_snapshot(root), _head(root)
    for args in (["search", "postgresql", "-a"], ["list", "-a"],
                 ["add", "a note for the newer index", "--project", "blog"]):
        result = run_memctl(*args, store=root)
        assert result.exit_code == 1, (args, result)
        assert result.stdout == ""
        [line] = result.stderr.splitlines()
        assert line.startswith(f"error: the index was made by a newer memctl ({key} {newer}, "
                               f"this memctl's {int(newer) - 1}): "), line
        assert line.endswith("run `memctl reindex`"), line
        assert _versions(root) == before
        assert tree_snapshot(root) == snapshot and _head(root) == head  # no note, no commit
    with pytest.raises(MemctlError, match="made by a newer memctl"):
        open_index(root)
    result = run_memctl("reindex", store=root)
    assert result.exit_code == 0, result
    assert _versions(root)[key] == str(int(newer) - 1)
    assert find(root, "postgresql") == ["aaaaaaaaaaaaaaaa"]


def test_a_reindex_never_writes_under_the_versions_of_a_newer_memctl(root: Path) -> None:
    """`memctl reindex` opens the index for its version, then rebuilds it in a second
    transaction: a newer memctl that made it anew in between kept its versions over this
    version's rows. Now the rebuild says so and writes nothing."""
    ensure_fresh(root).close()
    index = open_index(root, replace_newer=True)
    try:
        newer = str(int(_versions(root)["tokenizer"]) + 1)
        _set_version(root, "tokenizer", newer)
        before = index.conn.execute("SELECT count(*) FROM docs").fetchone()[0]
        with pytest.raises(db.IndexReplacedError, match="made anew by another memctl"):
            index.rebuild()
        assert index.conn.execute("SELECT count(*) FROM docs").fetchone()[0] == before
    finally:
        index.close()
    assert _versions(root)["tokenizer"] == newer


def test_a_refresh_never_deletes_an_index_a_newer_memctl_made_meanwhile(root: Path) -> None:
    """A newer memctl made the index anew, with other columns, between a command's open and
    its refresh: the refresh's read fails, and that failure was taken for corruption (the
    index deleted and made again for this version). Now it is said as a newer index."""
    ensure_fresh(root).close()
    index = open_index(root)
    newer = str(int(_versions(root)["schema"]) + 1)
    conn = sqlite3.connect(index_path(root))
    with conn:
        conn.execute("ALTER TABLE files RENAME COLUMN mtime_ns TO mtime_ns_v2")
        conn.execute("UPDATE meta SET value = ? WHERE key = 'schema'", (newer,))
    conn.close()
    write(root, "blog/notes/fact/new-cccccccccccccccc.md", "A note written meanwhile.",
          id="cccccccccccccccc", type="fact", project="blog")
    with pytest.raises(db.NewerIndexError):
        db._walk(root, index)
    assert _versions(root)["schema"] == newer


def test_sync_with_an_index_of_a_newer_memctl_commits_and_pushes_nothing(root: Path,
                                                                         tmp_path: Path) -> None:
    """The refusal comes before sync commits or pushes: it used to come after both."""
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    assert run_memctl("sync", "--remote", str(remote), store=root).exit_code == 0
    heads = (_head(root), subprocess.run(["git", "-C", str(remote), "rev-parse", "HEAD"],
                                          capture_output=True, text=True).stdout)
    ensure_fresh(root).close()
    _set_version(root, "schema", str(int(_versions(root)["schema"]) + 1))
    (root / "blog/notes/fact/by-hand.md").write_text("Written by hand before the sync.\n")
    result = run_memctl("sync", store=root)
    assert result.exit_code == 1, result
    [line] = result.stderr.splitlines()
    assert line.startswith("error: the index was made by a newer memctl (schema "), line
    assert (_head(root), subprocess.run(["git", "-C", str(remote), "rev-parse", "HEAD"],
                                        capture_output=True, text=True).stdout) == heads


@pytest.mark.parametrize("found", [{"schema": "-1"}, {"schema": "x"},
                                   {"schema": "+1", "tokenizer": "-1"}])
def test_an_index_of_an_older_or_unreadable_version_is_rebuilt(root: Path,
                                                                found: dict[str, str]) -> None:
    """Older in any part, or versions that are no numbers: rebuilt as before, not refused."""
    ensure_fresh(root).close()
    current = _versions(root)
    for key, change in found.items():
        value = change if change == "x" else str(int(current[key]) + int(change))
        _set_version(root, key, value)
    assert find(root, "postgresql") == ["aaaaaaaaaaaaaaaa"]
    assert _versions(root) == current


def test_get_by_prefix_and_its_errors(root: Path) -> None:
    index = ensure_fresh(root)
    assert index.get("AAAA")["id"] == "aaaaaaaaaaaaaaaa"
    write(root, "blog/x.md", "x", id="aaaaaaaaaaaaaaab")
    index = ensure_fresh(root)
    with pytest.raises(MemctlError, match="ambiguous.*aaaaaaaaaaaaaaaa.*aaaaaaaaaaaaaaab"):
        index.get("aaaa")
    shutil.copy(root / "blog/x.md", root / "blog/copy.md")
    index = ensure_fresh(root)
    with pytest.raises(MemctlError, match="more than one file"):
        index.get("aaaaaaaaaaaaaaab")


def test_list_notes_filters(root: Path) -> None:
    write(root, "global/notes/tabs.md", "prefer tabs", type="preference", tags=["style"])
    write(root, "blog/notes/old.md", "old", status="superseded")
    write(root, "blog/notes/gone.md", "expired", expires="2020-01-01")
    write(root, "blog/archive/fact/arch.md", "archived one")
    index = ensure_fresh(root)

    def listed(**kwargs: object) -> set[str]:
        return {row["path"].rsplit("/", 1)[-1] for row in index.list_notes(**kwargs)}

    assert listed(projects=["blog", "global"]) == {
        "pg-aaaaaaaaaaaaaaaa.md", "cache-bbbbbbbbbbbbbbbb.md", "tabs.md"}
    assert listed(projects=["blog"], include_stale=True) == {
        "pg-aaaaaaaaaaaaaaaa.md", "cache-bbbbbbbbbbbbbbbb.md", "old.md", "gone.md", "arch.md"}
    assert listed(status="archived") == {"arch.md"}
    assert listed(types=["preference"]) == {"tabs.md"}
    assert listed(tags=["POSTGRES"]) == {"pg-aaaaaaaaaaaaaaaa.md"}
    assert listed(since="2026-11-30") <= listed()
    row = index.list_notes(types=["decision"])[0]
    assert row["tags"] == ["database", "postgres"] and row["importance"] == 8 and "body" not in row


def test_an_unchanged_store_is_not_rewritten(root: Path) -> None:
    index = ensure_fresh(root)
    os.utime(root / "blog/notes/fact/cache-bbbbbbbbbbbbbbbb.md")  # touched, same content
    time.sleep(0.01)
    stats = index.refresh()
    assert (stats.added, stats.updated, stats.removed, stats.files_changed) == ([], [], [], 0)
    assert not index.refresh().changed


def test_concurrent_readers_and_a_writer(root: Path) -> None:
    first, second = open_index(root), open_index(root)
    first.refresh()
    write(root, "blog/n.md", "concurrency works")
    second.refresh()
    assert len(first.list_notes()) == len(second.list_notes()) == 3


# --- access counters ------------------------------------------------------------------------


def test_counters_count_and_survive_reindex_and_index_deletion(root: Path) -> None:
    counters.record_access(root, ["aaaaaaaaaaaaaaaa", "aaaaaaaaaaaaaaaa"], "2026-11-01T00:00:00Z")
    counters.record_access(root, ["aaaaaaaaaaaaaaaa"], "2026-11-02T00:00:00Z")
    open_index(root).rebuild()
    for path in index_path(root).parent.glob("index.sqlite*"):
        path.unlink()
    ensure_fresh(root)
    assert counters.get_counters(root, ["aaaaaaaaaaaaaaaa", "zzzz"]) == {
        "aaaaaaaaaaaaaaaa": (2, "2026-11-02T00:00:00.000Z"), "zzzz": (0, None)}


def test_counters_of_machines_add_up_and_merging_twice_changes_nothing(root: Path) -> None:
    counters.record_access(root, ["aaaaaaaaaaaaaaaa"], "2026-11-01T00:00:00Z")
    other = {"machine": "laptop", "notes": {
        "aaaaaaaaaaaaaaaa": {"count": 3, "last": "2026-11-20T00:00:00.000Z"},
        "bbbbbbbbbbbbbbbb": {"count": 1, "last": None}, "junk": {"count": -1}}}
    assert counters.import_machine(root, other) == 2
    assert counters.import_machine(root, other) == 0
    assert counters.get_counters(root, ["aaaaaaaaaaaaaaaa"]) == {
        "aaaaaaaaaaaaaaaa": (4, "2026-11-20T00:00:00.000Z")}
    mine = counters.export_machine(root)
    assert mine["machine"] == counters.machine_id(root) != "laptop"
    assert mine["notes"] == {"aaaaaaaaaaaaaaaa": {"count": 1, "last": "2026-11-01T00:00:00.000Z"}}
    # An older copy of this machine's own rows never lowers its counts.
    counters.import_machine(root, {"machine": mine["machine"], "notes": {
        "aaaaaaaaaaaaaaaa": {"count": 0, "last": "2020-01-01T00:00:00Z"}}})
    assert counters.export_machine(root)["notes"] == mine["notes"]
    assert set(counters.machines(root)) == {mine["machine"], "laptop"}
    assert counters.top_accessed(root, "2026-10-01")[0] == ("aaaaaaaaaaaaaaaa", 1)


def test_machine_id_is_stable(root: Path) -> None:
    first = counters.machine_id(root)
    assert counters.machine_id(root) == first and len(first) == 16


# --- the front matter fast path ----------------------------------------------------------------

_VALUE = st.lists(st.sampled_from(
    ["a", " ", "x y", ":", ": ", "#", " #", "[", "]", ",", ", ", "-", "'", '"', "中文", "~",
     "{", "}", "&", "*", "!", "|", ">", "é", "0123", "12:30", "no", "\t", "\u00a0", "%", "@",
     "`", "?", "\\", "\x85", "\u2028", "\u200b", "\U0001F600", "\r"]), max_size=8).map("".join)
_LINE = st.tuples(st.sampled_from(["id", "tags", "a-b", "_x", "K", "9k", "a b", "id"]),
                  st.sampled_from([": ", ":", ":  ", " : "]), _VALUE,
                  st.sampled_from(["\n", "\r\n", " \n", "\r"]))


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_LINE, max_size=6), st.sampled_from(["---", "...", "--- ", "---\u3000", "- --"]),
       st.sampled_from(["\n", "\r\n", ""]), st.booleans())
def test_fast_front_matter_reading_agrees_with_the_yaml_loader(
        lines: list, closer: str, eol: str, bom: bool) -> None:
    text = ("\ufeff" if bom else "") + "---\n" + "".join(
        key + sep + value + end for key, sep, value, end in lines) + closer + eol + "body\n"
    fast = fast_parse(text)
    if fast is not None:
        assert fast == parse_text(text)


def test_fast_path_answers_for_what_memctl_writes() -> None:
    text = ("---\nid: 01jdz4k2m8x7b3qv\ntype: decision\nproject: blog-backend\nimportance: 8\n"
            "tags: [database, postgres]\ncreated: 2026-11-30T09:12:44.120Z\n"
            "expires: 2027-03-01\nstatus: active\n---\nbody\n")
    assert fast_parse(text) == parse_text(text)


def test_busy_index_is_a_clear_error(root: Path) -> None:
    ensure_fresh(root).close()
    blocker = sqlite3.connect(index_path(root), timeout=0)
    blocker.execute("BEGIN EXCLUSIVE")
    try:
        import memctl.index.db as module

        old = module.BUSY_TIMEOUT_MS
        module.BUSY_TIMEOUT_MS = 50
        try:
            write(root, "blog/late.md", "written while locked")
            with pytest.raises(MemctlError, match="busy"):
                ensure_fresh(root)
        finally:
            module.BUSY_TIMEOUT_MS = old
    finally:
        blocker.rollback()
        blocker.close()


def test_a_rewrite_in_the_same_clock_tick_with_the_same_size_is_not_missed(root: Path) -> None:
    """Racy stamps: file systems keep mtimes at clock-tick resolution, so a second write right
    after the index read the first may leave mtime and size as they were."""
    path = root / "blog/notes/fact/cache-bbbbbbbbbbbbbbbb.md"
    ensure_fresh(root).close()
    stamp = path.stat().st_mtime_ns
    original = path.read_text(encoding="utf-8")
    changed = original.replace("Redis", "Valky")  # same length in bytes
    assert len(changed.encode()) == len(original.encode())
    path.write_text(changed, encoding="utf-8")
    os.utime(path, ns=(stamp, stamp))  # the same tick: mtime and size both unchanged
    index = ensure_fresh(root)
    try:
        assert find(root, "Valky") == ["bbbbbbbbbbbbbbbb"]
        assert find(root, "Redis") == []
    finally:
        index.close()


def test_a_rename_within_a_folder_keeping_stamp_and_size_is_seen(root: Path) -> None:
    """The check compares a digest per folder: a same-size, same-mtime rename must change it."""
    ensure_fresh(root).close()
    old = root / "blog/notes/fact/cache-bbbbbbbbbbbbbbbb.md"
    stamp = old.stat().st_mtime_ns
    new = old.with_name("renamed.md")
    old.rename(new)
    os.utime(new, ns=(stamp, stamp))
    index = ensure_fresh(root)
    try:
        assert index.get("bbbb")["path"] == "blog/notes/fact/renamed.md"
        assert [row[0] for row in index.conn.execute("SELECT path FROM files ORDER BY path")] == [
            "blog/notes/decision/pg-aaaaaaaaaaaaaaaa.md", "blog/notes/fact/renamed.md"]
    finally:
        index.close()


def test_a_check_with_nothing_changed_reads_no_stamps(root: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """After any refresh, the index's digest of each folder is the walk's: nothing differs."""
    index = ensure_fresh(root)
    # Stamps recorded as they are: mtimes older than the racy window, and no racy window for
    # the ctimes (which no one can set back).
    monkeypatch.setattr(db, "RACY_NS", 0)
    old = time.time() - 60
    for path in root.glob("blog/**/*.md"):
        os.utime(path, (old, old))
    write(root, "blog/notes/fact/new.md", "a new fact")
    os.utime(root / "blog/notes/fact/new.md", (old, old))
    assert index.refresh().added
    try:
        known, current, total = index._differing_keys()
        assert (known, current, total) == (set(), set(), 3)
        (root / "blog/notes/fact/new.md").unlink()
        known, current, _ = index._differing_keys()
        assert {key.split("\t")[0] for key in known} == {
            "blog/notes/fact/cache-bbbbbbbbbbbbbbbb.md", "blog/notes/fact/new.md"}
        assert {key.split("\t")[0] for key in current} == {
            "blog/notes/fact/cache-bbbbbbbbbbbbbbbb.md"}
    finally:
        index.close()


def test_a_file_whose_name_is_not_utf8_leaves_its_folder_as_indexed(
        root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file whose name is not UTF-8 is no memory (memctl.disk.layout.classify): the walk
    leaves it out, so its folder's digest stays the index's and no check compares that
    folder again, nor writes anything (with such files in more than 40 folders, every
    search compared the whole store file by file)."""
    monkeypatch.setattr(db, "RACY_NS", 0)  # stamps recorded as they are (see above)
    old = time.time() - 60
    for path in root.glob("blog/**/*.md"):
        os.utime(path, (old, old))
    index = ensure_fresh(root)
    try:
        (root / "blog/notes/fact" / os.fsdecode(b"caf\xe9.md")).write_text("not a note\n")
        changes = index.conn.total_changes
        for _ in range(2):
            stats = index.refresh()
            assert (stats.added, stats.updated, stats.removed, stats.unchanged) == ([], [], [], 2)
            assert index._differing_keys() == (set(), set(), 2)
        assert index.conn.total_changes == changes
    finally:
        index.close()


def test_a_folder_with_a_utf8_name_is_no_trouble_to_a_memctl_reading_names_as_ascii(
        root: Path) -> None:
    """With `LC_ALL=C PYTHONUTF8=0` names are read as ASCII: a folder named `笔记` reads as
    surrogate escapes, which are not UTF-8 (no memory, as before schema 14), and every read
    command still works (each ended in a UnicodeEncodeError traceback)."""
    write(root, "blog/notes/笔记/kiosk-eeeeeeeeeeeeeeee.md", "The kiosk serves espresso.",
          id="eeeeeeeeeeeeeeee", type="fact", project="blog")
    assert "eeeeeeeeeeeeeeee" in run_memctl("search", "-p", "blog", "espresso", store=root).stdout
    ascii_names = {"LC_ALL": "C", "PYTHONUTF8": "0"}
    for workers in ("0", "2"):
        found = run_memctl("search", "-p", "blog", "kysely", store=root,
                           env={**ascii_names, "MEMCTL_WALK_WORKERS": workers})
        assert found.exit_code == 0 and "Traceback" not in found.stderr, found.stderr
        assert "aaaaaaaaaaaaaaaa" in found.stdout


@pytest.mark.parametrize("workers", ["0", "2"])
def test_a_folder_whose_name_is_not_utf8_is_not_walked(root: Path, workers: str) -> None:
    """A folder whose name is not UTF-8 holds no memory (memctl.disk.layout.classify): the
    walk leaves it out, as it leaves out such a file, and every read command still works
    (its path, with surrogate escapes, could be neither looked up in the index nor written
    to it: each of them ended in a traceback)."""
    write(root, "shop/notes/fact/till-cccccccccccccccc.md", "The till prints receipts.",
          id="cccccccccccccccc", type="fact", project="shop")
    bad = root / "blog/notes" / os.fsdecode(b"caf\xe9")
    bad.mkdir()
    (bad / "inside.md").write_text("---\ntype: fact\n---\nKysely inside a bad folder\n")
    env = {"MEMCTL_WALK_WORKERS": workers}
    for args in (("search", "--all-projects", "kysely"), ("list", "--all-projects"),
                 ("add", "-p", "blog", "Backups run nightly at three"), ("health",)):
        result = run_memctl(*args, store=root, env=env)
        assert result.exit_code == 0, (args, result.stderr)
        assert "Traceback" not in result.stderr
    found = run_memctl("search", "--all-projects", "kysely", store=root, env=env)
    assert "aaaaaaaaaaaaaaaa" in found.stdout and "inside" not in found.stdout


def test_a_name_indexed_as_utf8_is_no_trouble_to_a_memctl_reading_names_as_ascii(
        root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An index made where names are read as UTF-8 holds `café.md` as text; a memctl run
    with `LC_ALL=C PYTHONUTF8=0` (names read as ASCII) that writes that folder's digest
    cannot encode that name in its file system's encoding: `add` and `search` (and a
    watcher's pass) ended in a UnicodeEncodeError traceback. The name's UTF-8 bytes, which
    the walk lists, are hashed instead."""
    monkeypatch.setattr(db, "RACY_NS", 0)  # stamps recorded as they are: the folder as indexed
    write(root, "blog/notes/fact/café.md", "The café serves espresso only.",
          id="dddddddddddddddd", type="fact", project="blog")
    ensure_fresh(root).close()
    ascii_names = {"LC_ALL": "C", "PYTHONUTF8": "0", "MEMCTL_WALK_WORKERS": "0"}
    added = run_memctl("add", "-p", "blog", "Backups run nightly at three", store=root,
                       env=ascii_names)
    assert added.exit_code == 0 and "Traceback" not in added.stderr, added.stderr
    found = run_memctl("search", "-p", "blog", "backups", store=root, env=ascii_names)
    assert found.exit_code == 0 and "Traceback" not in found.stderr, found.stderr
    assert "Backups run nightly" in found.stdout
    assert "espresso" in run_memctl("search", "-p", "blog", "espresso", store=root).stdout


@pytest.fixture
def opened_ahead() -> Iterator[None]:
    """A connection `open_ahead` made and no test took is closed afterwards."""
    yield
    left, db._opened_ahead = db._opened_ahead, None
    if left is not None:
        left[0].close()


def test_an_index_opened_ahead_is_taken_by_the_next_open_of_its_file(
        root: Path, opened_ahead: None) -> None:
    ensure_fresh(root).close()
    db.open_ahead(root)
    assert db._opened_ahead is not None
    ahead = db._opened_ahead[0]
    index = open_index(root)
    try:
        assert index.conn is ahead and db._opened_ahead is None
        assert ids(search(root, "PostgreSQL", project="blog", index=index)) == ["aaaaaaaaaaaaaaaa"]
    finally:
        index.close()


def test_an_index_opened_ahead_sees_what_another_process_indexed_after(
        root: Path, opened_ahead: None) -> None:
    """No read transaction is left open by `open_ahead`: the search sees the index as it is
    when it runs, as the watcher keeps it."""
    ensure_fresh(root).close()
    db.open_ahead(root)
    ahead = db._opened_ahead[0]  # type: ignore[index]
    write(root, "blog/notes/fact/argo-cccccccccccccccc.md", "Deploys go through Argo Rollouts.",
          id="cccccccccccccccc", type="fact", project="blog")
    subprocess.run([sys.executable, "-c", "import sys; from memctl.index.db import ensure_fresh;"
                    " ensure_fresh(sys.argv[1]).close()", str(root)], check=True)
    index = open_index(root)
    try:
        assert index.conn is ahead
        # Read through the connection itself: a search would first bring the index up to date.
        assert index.conn.execute("SELECT path FROM docs WHERE id = 'cccccccccccccccc'"
                                  ).fetchone() == ("blog/notes/fact/argo-cccccccccccccccc.md",)
    finally:
        index.close()


def test_an_index_opened_ahead_is_left_once_its_file_is_replaced(
        root: Path, opened_ahead: None) -> None:
    ensure_fresh(root).close()
    db.open_ahead(root)
    ahead = db._opened_ahead[0]  # type: ignore[index]
    for suffix in ("", "-wal", "-shm"):
        Path(f"{index_path(root)}{suffix}").unlink(missing_ok=True)
    index = ensure_fresh(root)  # a new index file, made from the notes
    try:
        assert index.conn is not ahead and db._opened_ahead is None
        assert ids(search(root, "PostgreSQL", project="blog", index=index)) == ["aaaaaaaaaaaaaaaa"]
    finally:
        index.close()
    with pytest.raises(sqlite3.ProgrammingError):  # closed, not left open on the old file
        ahead.execute("SELECT 1")


def test_opening_ahead_makes_nothing(store_path: Path, opened_ahead: None) -> None:
    db.open_ahead(store_path)
    assert db._opened_ahead is None
    assert not index_path(store_path).exists()


@pytest.mark.parametrize("folders", [3, 60])  # folder by folder, and all at once (> 40)
def test_edits_in_many_folders_at_once_are_all_seen(store_path: Path, folders: int) -> None:
    for number in range(folders):
        write(store_path, f"p{number}/notes/fact/n.md", f"alpha{number} original")
    index = ensure_fresh(store_path)
    try:
        for number in range(folders):
            write(store_path, f"p{number}/notes/fact/n.md", f"alpha{number} edited text")
        stats = index.refresh()
        assert stats.files_changed == folders
        for number in (0, folders - 1):
            assert len(search(store_path, f"alpha{number} edited", all_projects=True,
                              index=index)) == 1
        shutil.rmtree(store_path / "p1")
        assert len(index.refresh().removed) == 1
        assert index.conn.execute("SELECT count(*) FROM folders WHERE path LIKE 'p1/%'"
                                  ).fetchone()[0] == 0
    finally:
        index.close()


_SEGMENTS = st.sampled_from(["blog", "global", ".tombstones", ".conflicts", ".hidden", "", ".",
                             "..", "notes", "episodes", "archive", "fact", "2026-11", "a b",
                             "-x", "MEMORY.md", "SCRATCHPAD.md", "x.md", "x.MD", ".x.md",
                             "x.md.swp", "x.md~", "x.txt", "数据库.md"])


@given(st.lists(_SEGMENTS, min_size=1, max_size=5))
def test_classifying_once_per_folder_agrees_with_classifying_each_file(parts: list[str]) -> None:
    from memctl.index.db import _indexed_kind, _kind_of

    path = "/".join(parts)
    assert _kind_of(path) == _indexed_kind(path)


# --- the fuzzy fallback's vocabulary, kept with the index -------------------------------------


def _recounted(index) -> dict[tuple[str, str], int]:
    """The vocabulary counted afresh from the entries (what `fuzzy_words` must hold)."""
    from collections import Counter

    from memctl.index.fuzzy import vocabulary

    counts: Counter[tuple[str, str]] = Counter()
    for project, title, tags, subject, predicate in index.conn.execute(
            "SELECT project, title, tags, subject, predicate FROM docs"):
        counts.update((project, word) for word in vocabulary([(title, tags, subject, predicate)]))
    return dict(counts)


def _kept(index) -> dict[tuple[str, str], int]:
    rows = index.conn.execute("SELECT project, length, word, docs FROM fuzzy_words").fetchall()
    assert all(length == len(word) and docs > 0 for _, length, word, docs in rows)
    return {(project, word): docs for project, _, word, docs in rows}


def test_the_fuzzy_vocabulary_follows_every_change_of_the_entries(root: Path) -> None:
    """A search that finds nothing reads the words of titles, tags, subjects and predicates
    from `fuzzy_words`, counted up and down as entries come and go (index/fuzzy.py): after
    adds, edits, moves, deletions and a rebuild it holds what counting afresh gives."""
    index = ensure_fresh(root)
    assert _kept(index) == _recounted(index) and ("blog", "postgres") in _kept(index)
    write(root, "blog/notes/fact/k8s-cccccccccccccccc.md", "Kubernetes upgrade plan\nDrain nodes.",
          id="cccccccccccccccc", project="blog", tags=["kubernetes", "infra"],
          subject="cluster", predicate="upgrade")
    write(root, "ops/notes/fact/k8s-dddddddddddddddd.md", "Kubernetes on call rota",
          id="dddddddddddddddd", tags=["kubernetes"])  # its project: the folder's
    index = ensure_fresh(root)
    assert _kept(index)[("blog", "kubernetes")] == 1 and _kept(index)[("ops", "kubernetes")] == 1
    assert _kept(index) == _recounted(index)
    path = root / "blog/notes/fact/k8s-cccccccccccccccc.md"
    path.write_text(path.read_text().replace("Kubernetes upgrade plan", "Nomad upgrade plan")
                    .replace("kubernetes, ", ""))
    index = ensure_fresh(root)
    assert ("blog", "kubernetes") not in _kept(index) and ("blog", "nomad") in _kept(index)
    assert _kept(index) == _recounted(index)
    (root / "ops/notes/fact/k8s-dddddddddddddddd.md").rename(root / "blog/notes/fact/moved.md")
    index = ensure_fresh(root)
    assert ("ops", "kubernetes") not in _kept(index) and _kept(index) == _recounted(index)
    (root / "blog/notes/decision/pg-aaaaaaaaaaaaaaaa.md").unlink()
    (root / "blog/SCRATCHPAD.md").write_text("# Scratchpad\n\n## Focus\nmigrate the queue\n")
    index = ensure_fresh(root)
    assert ("blog", "postgres") not in _kept(index) and ("blog", "scratchpad") in _kept(index)
    assert _kept(index) == _recounted(index)
    before = _kept(index)
    index.rebuild()
    assert _kept(index) == before == _recounted(index)


def test_a_search_that_finds_nothing_reads_the_kept_vocabulary(root: Path) -> None:
    """The fuzzy fallback asks `fuzzy_words` for the words of the projects in scope whose
    length could be close, and no longer reads every title in scope (index/fuzzy.py)."""
    write(root, "ops/notes/fact/k8s-dddddddddddddddd.md", "Kubernetes on call rota",
          id="dddddddddddddddd", project="ops", tags=["kubernetes"])
    index = ensure_fresh(root)
    statements: list[str] = []
    index.conn.set_trace_callback(statements.append)
    assert ids(search(root, "kubernets", project="ops", index=index)) == ["dddddddddddddddd"]
    assert ids(search(root, "kubernets", project="blog", index=index)) == []  # not in scope
    assert ids(search(root, "postgress", project="blog", index=index)) == ["aaaaaaaaaaaaaaaa"]
    assert any("FROM fuzzy_words" in sql for sql in statements)
    assert not any("SELECT d.title, d.tags" in sql for sql in statements)


def _indexed_rows(index) -> list[tuple]:
    return sorted(index.conn.execute("SELECT path, mtime_ns, size, hash FROM files"))


def test_a_folder_refresh_compares_only_the_sub_folders_that_changed(
        root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`refresh([folder])` (what `add` walks: its project and `global`) reads the stamps the
    index keeps only for the sub-folders whose digest differs, and ends exactly where a
    rebuild from the files does: edits in place, new files, a sub-folder gone, a new one,
    a file that became a folder."""
    import re

    # Stamps recorded as they are: mtimes outside the racy window, and no racy window for the
    # ctimes (which no one can set back).
    monkeypatch.setattr(db, "RACY_NS", 0)
    old = time.time() - 60
    for number in range(3):
        write(root, f"blog/notes/t{number}/n.md", f"topic {number} original")
    write(root, "blog/episodes/x.md", "a file that will become a folder")
    for path in root.glob("blog/**/*.md"):
        os.utime(path, (old, old))
    index = ensure_fresh(root)
    statements: list[str] = []
    index.conn.set_trace_callback(statements.append)

    def looked() -> list[str]:
        """The folders whose stamps the walk read, before the write that follows it (SQLite
        hands the statements over with their values in place)."""
        walk = statements[:next((n for n, sql in enumerate(statements)
                                 if sql.startswith("BEGIN")), len(statements))]
        return sorted(folder for sql in walk if "mtime_ns, ctime_ns, size FROM files" in sql
                      for folder in re.findall(r"path > '([^']*)'", sql))

    try:
        assert not index.refresh(["blog"]).changed and looked() == []
        write(root, "blog/notes/t0/n.md", "topic zero edited in place")
        write(root, "blog/notes/t1/new.md", "a new note beside another")
        shutil.rmtree(root / "blog/notes/t2")
        write(root, "blog/notes/t3/n.md", "a new sub-folder")
        (root / "blog/episodes/x.md").unlink()
        write(root, "blog/episodes/x.md/inside.md", "a folder where a file was")
        statements.clear()
        stats = index.refresh(["blog"])
        assert looked() == ["blog/episodes/", "blog/episodes/x.md/", "blog/notes/t0/",
                            "blog/notes/t1/", "blog/notes/t2/", "blog/notes/t3/"]
        assert len(stats.added) == 3 and len(stats.updated) == 1 and len(stats.removed) == 2
        walked = _indexed_rows(index)
    finally:
        index.close()
    index_path(root).unlink()
    rebuilt = ensure_fresh(root)
    try:
        assert walked == _indexed_rows(rebuilt)
    finally:
        rebuilt.close()


def test_a_racily_clean_file_still_as_indexed_is_not_indexed_again(root: Path) -> None:
    """A file indexed less than RACY_NS after it was written keeps no mtime, so every check
    looks at it again: while its bytes are the indexed ones it is only hashed, never parsed
    nor written again (`add` after `add`); a same-size rewrite is still found."""
    path = root / "blog/notes/fact/cache-bbbbbbbbbbbbbbbb.md"
    index = ensure_fresh(root)  # just written: recorded without its mtime
    try:
        assert index.conn.execute("SELECT mtime_ns FROM files WHERE path = ?",
                                  (str(path.relative_to(root)),)).fetchone()[0] == 0
        before = index.conn.total_changes
        stats = index.refresh(["blog"])
        assert not stats.changed and index.conn.total_changes == before
        stamp = path.stat().st_mtime_ns
        path.write_text(path.read_text(encoding="utf-8").replace("Redis", "Valky"),
                        encoding="utf-8")
        os.utime(path, ns=(stamp, stamp))
        assert len(index.refresh(["blog"]).updated) == 1
        assert find(root, "Valky") == ["bbbbbbbbbbbbbbbb"]
    finally:
        index.close()


def test_a_racily_clean_file_once_old_enough_has_its_stamp_recorded_without_the_parser(
        root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Once a racily clean file is older than RACY_NS and still holds the indexed bytes,
    the next refresh records its stamp with one UPDATE: its entry is not read again, the
    parser not even imported (a search seconds after an `add`), and the walk after that finds
    it as indexed. Where the bytes changed meanwhile, it is parsed as any changed file."""
    relpath = "blog/notes/fact/cache-bbbbbbbbbbbbbbbb.md"
    index = ensure_fresh(root)  # just written: recorded without its mtime
    try:
        rows = index.conn.execute("SELECT rowid, * FROM docs ORDER BY rowid").fetchall()
        assert index.conn.execute("SELECT mtime_ns FROM files WHERE path = ?",
                                  (relpath,)).fetchone()[0] == 0
    finally:
        index.close()
    # The parser is imported by this process already: whether a refresh needs it is asked
    # of a Python of its own, with the clock's margin at 0 (every stamp old enough).
    probe = ("import sys; from memctl.index import db; db.RACY_NS = 0; "
             "index = db.open_index(sys.argv[1]); stats = index.refresh(); "
             "print(stats.changed, 'memctl.index.docs' in sys.modules)")
    ran = subprocess.run([sys.executable, "-c", probe, str(root)], capture_output=True,
                         text=True, check=True)
    assert ran.stdout.split() == ["False", "False"], ran.stdout  # nothing changed, no parser
    index = open_index(root)
    try:
        path = root / relpath
        info = path.stat()
        assert index.conn.execute("SELECT mtime_ns, ctime_ns FROM files WHERE path = ?",
                                  (relpath,)).fetchone() == (info.st_mtime_ns, info.st_ctime_ns)
        assert index.conn.execute("SELECT rowid, * FROM docs ORDER BY rowid").fetchall() == rows
        monkeypatch.setattr(db, "RACY_NS", 0)
        before = index.conn.total_changes
        assert not index.refresh().changed and index.conn.total_changes == before
        path.write_text(path.read_text(encoding="utf-8").replace("Redis", "Valky"),
                        encoding="utf-8")
        assert len(index.refresh().updated) == 1
        assert find(root, "Valky") == ["bbbbbbbbbbbbbbbb"]
    finally:
        index.close()


def test_a_stamp_to_record_never_makes_a_refresh_wait_for_another_writer(
        root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """While another process holds the index's write lock, a refresh that has only stamps to
    record (`_record_stamps`) answers at once with the index as it is, and leaves them to the next
    refresh; it does not wait out the lock, nor fail with "database is locked"."""
    relpath = "blog/notes/fact/cache-bbbbbbbbbbbbbbbb.md"
    ensure_fresh(root).close()  # just written: recorded without its mtime
    monkeypatch.setattr(db, "BUSY_TIMEOUT_MS", 300)
    monkeypatch.setattr(db, "RACY_NS", 0)
    writer = sqlite3.connect(index_path(root), isolation_level=None)
    index = open_index(root)
    try:
        writer.execute("BEGIN IMMEDIATE")
        assert not index.refresh().changed
        assert index.conn.execute("SELECT mtime_ns FROM files WHERE path = ?",
                                  (relpath,)).fetchone()[0] == 0
        writer.execute("ROLLBACK")
        assert not index.refresh().changed
        assert index.conn.execute("SELECT mtime_ns FROM files WHERE path = ?",
                                  (relpath,)).fetchone()[0] == (root / relpath).stat().st_mtime_ns
    finally:
        index.close()
        writer.close()


@pytest.mark.parametrize("size", [0, 1, 4095, 65536, 65537, (1 << 20) + 5])
@pytest.mark.parametrize("max_bytes", [10, 1 << 20, 10 << 20])
def test_the_indexer_reads_a_file_whole_or_up_to_one_byte_past_the_limit(
        tmp_path: Path, size: int, max_bytes: int) -> None:
    """`read_file` reads the size the stat gave, and one byte more: a file as its stat says
    whole; one over the limit, the limit and one byte (the caller says it is too big)."""
    from memctl.index.docs import read_file

    data = bytes(range(256)) * (size // 256) + bytes(size % 256)
    path = tmp_path / "n.md"
    path.write_bytes(data)
    read = read_file(str(path), max_bytes)
    assert isinstance(read, tuple)
    assert read[0] == data[:max_bytes + 1]
    assert (read[1].st_size, read[1].st_mtime_ns) == (size, path.stat().st_mtime_ns)
    os.symlink(path, tmp_path / "link.md")
    assert read_file(str(tmp_path / "link.md"), max_bytes) is None


def test_a_project_folder_replaced_by_a_link_to_where_it_went_is_not_read_through_it(
        root: Path, tmp_path: Path) -> None:
    """`mv blog elsewhere; ln -s elsewhere blog`: the walk never follows the link, so it found
    the project's notes gone, and then "there again" under the write lock (a path through a
    link exists), and read them through it: they stayed searchable, their text followed
    edits made at the link's target, while a note added there was never seen and a `reindex`
    dropped them all. Now they leave the index, as a project folder linked anew is never in
    it (docs/security.md)."""
    assert find(root, "kysely") == ["aaaaaaaaaaaaaaaa"]
    away = tmp_path / "elsewhere"
    os.rename(root / "blog", away)
    os.symlink(away, root / "blog")
    assert find(root, "kysely") == []
    path = away / "notes/decision/pg-aaaaaaaaaaaaaaaa.md"
    path.write_text(path.read_text().replace("Kysely", "Drizzle"))
    assert find(root, "drizzle") == []
    assert ensure_fresh(root).list_notes() == []
