"""The health report: what a person or a CI job learns about a store, and --strict."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import Cli, git, run_memctl, tree_snapshot
from hypothesis import given, settings
from hypothesis import strategies as st

KEY = "AKIAIOSFODNN7EXAMPLE"
NOW = {"MEMCTL_NOW": "2026-11-30T12:00:00Z"}


def _hand_commit(store: Path, relpath: str, text: str) -> None:
    path = store / relpath
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    git(store, "add", "-A")
    git(store, "commit", "-qm", f"hand edit {relpath}")


@pytest.fixture
def troubled(cli: Cli) -> Cli:
    """A store with one of each problem health looks for."""
    cli.ok("add", "use port 5432 for the dev database", env=NOW)
    cli.ok("add", "use port 5433 for the dev database", env=NOW)
    cli.ok("add", "Deploys need approval from ops", env=NOW)
    cli.ok("add", "Deploys need approval from ops!", "--force", env=NOW)
    cli.ok("add", "Launch banner is shown", "--expires", "2026-11-01",
           env={"MEMCTL_NOW": "2026-10-01T00:00:00Z"})
    _hand_commit(cli.store, "demo/notes/fact/aws.md",
                 f"---\ntype: fact\n---\nThe uploader uses {KEY} as its key id.\n")
    _hand_commit(cli.store, "demo/notes/fact/broken.md",
                 "---\ntype: fact\ntags: [unclosed\n---\nBroken front matter\n")
    _hand_commit(cli.store, "demo/MEMORY.md", "# demo\n\n## Decisions\n\n" + "- x\n" * 3000)
    return cli


def test_health_json_reports_every_kind_of_problem(troubled: Cli) -> None:
    result = troubled("health", "--json", env=NOW)
    assert result.exit_code == 0, result.stderr  # without --strict, problems are not errors
    report = result.json()
    assert report["ok"] is False
    kinds = {p["kind"] for p in report["problems"]}
    assert {"contradictions", "near_duplicates", "expired", "parse_errors", "secrets",
            "memory_over_budget"} <= kinds
    pair = report["contradictions"][0]
    assert {pair["a"]["title"], pair["b"]["title"]} == {
        "use port 5432 for the dev database", "use port 5433 for the dev database"}
    assert "number" in pair["reasons"]
    assert len(report["near_duplicates"]) == 1
    assert report["expired"][0]["title"] == "Launch banner is shown"
    broken = report["parse_errors"][0]
    assert broken["path"] == "demo/notes/fact/broken.md" and broken["line"] >= 2
    assert "does not parse" in broken["message"]
    secret = report["secrets"][0]
    assert (secret["path"], secret["line"], secret["kind"]) == (
        "demo/notes/fact/aws.md", 4, "aws-access-key")
    assert secret["masked"] == "AKIA****"
    assert KEY not in result.stdout  # masked everywhere in the output
    assert report["memory_over_budget"][0]["path"] == "demo/MEMORY.md"
    totals = report["totals"]
    assert totals["by_type"]["fact"] == totals["notes"] == 6
    assert totals["by_project"] == {"demo": 6}


def test_health_terminal_and_markdown_mask_the_secret(troubled: Cli, tmp_path: Path) -> None:
    shown = troubled("health", env=NOW)
    assert shown.exit_code == 0
    assert KEY not in shown.stdout + shown.stderr and "AKIA****" in shown.stdout
    assert "█" in shown.stdout  # the bar chart of types
    assert "demo/notes/fact/broken.md:" in shown.stdout
    report_file = tmp_path / "report.md"
    written = troubled("health", "--markdown", str(report_file), env=NOW)
    assert written.exit_code == 0
    text = report_file.read_text()
    assert text.startswith("# memctl health report — 2026-11-30")
    assert KEY not in text and "AKIA****" in text
    assert "## Possible contradictions" in text and "use port 5433" in text
    folder = tmp_path / "reports"
    folder.mkdir()
    troubled.ok("health", "--markdown", str(folder), env=NOW)
    assert (folder / "health-2026-11.md").exists()


def test_strict_fails_on_problems_and_passes_on_a_clean_store(troubled: Cli, tmp_path) -> None:
    failed = troubled("health", "--strict", "--json", env=NOW)
    assert failed.exit_code == 1
    assert failed.stderr.startswith("error:") and "secrets" in failed.stderr
    assert json.loads(failed.stdout)["ok"] is False  # the report is still printed
    clean = Cli(tmp_path / "clean")
    clean.ok("init", str(clean.store))
    clean.ok("add", "The API listens on port 8080", env=NOW)
    passed = clean("health", "--strict", env=NOW)
    assert passed.exit_code == 0, passed.stdout + passed.stderr
    assert "no problems found" in passed.stdout


def test_health_changes_nothing(troubled: Cli) -> None:
    before, head = tree_snapshot(troubled.store), git(troubled.store, "rev-parse", "HEAD")
    troubled.ok("health", "--json", env=NOW)
    assert tree_snapshot(troubled.store) == before
    assert git(troubled.store, "rev-parse", "HEAD") == head


def test_recall_counters_feed_top_recalled_and_unrecalled(cli: Cli) -> None:
    from memctl.disk.counters import record_access
    from memctl.store import Store

    old = cli.ok("add", "Legacy cron host is cron-01", "--json",
                 env={"MEMCTL_NOW": "2026-06-01T00:00:00Z"}).json()
    busy = cli.ok("add", "The main API is written in Go", "--json", env=NOW).json()
    for day in ("2026-11-20T00:00:00Z", "2026-11-25T00:00:00Z", "2026-11-29T00:00:00Z"):
        record_access(Store(cli.store), [busy["id"]], when=day)
    report = cli.ok("health", "--json", env=NOW).json()
    assert [(e["id"], e["recalls_30d"]) for e in report["top_recalled"]] == [(busy["id"], 3)]
    assert [e["id"] for e in report["unrecalled"]] == [old["id"]]
    assert report["unrecalled"][0]["days"] == 182


def test_git_state_uncommitted_and_unpushed(cli: Cli, tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(cli.store, "remote", "add", "origin", str(remote))
    branch = git(cli.store, "rev-parse", "--abbrev-ref", "HEAD").strip()
    git(cli.store, "push", "-q", "-u", "origin", branch)
    assert cli.ok("health", "--json").json()["git"]["unpushed"] == 0
    cli.ok("add", "A note not pushed yet")
    (cli.store / "demo" / "draft.md").write_text("typed but not committed\n")
    report = cli.ok("health", "--json").json()
    assert report["git"]["unpushed"] == 1 and report["git"]["remote"] == "origin"
    assert any("draft.md" in line for line in report["git"]["uncommitted"])
    assert {"uncommitted", "unpushed"} <= {p["kind"] for p in report["problems"]}


def test_index_drift_is_caught_up_and_reported(cli: Cli) -> None:
    added = cli.ok("add", "Logs go to Loki", "--json").json()
    cli.ok("health", "--json")
    (cli.store / added["path"]).write_text(
        (cli.store / added["path"]).read_text().replace("Loki", "Grafana Loki"))
    index = cli.ok("health", "--json").json()["index"]
    assert index["changed_since_last_update"] == 1  # a hand edit since the last command …
    assert index["drifted"] == 0  # … that health (like every command) took in
    assert index["indexed_docs"] == 1


def test_health_on_the_sample_store(sample_store: Path) -> None:
    result = run_memctl("health", "--json", store=sample_store, env=NOW)
    assert result.exit_code == 0, result.stderr
    report = result.json()
    assert report["totals"]["notes"] > 0
    assert report["parse_errors"] == [] or all(e["line"] >= 1 for e in report["parse_errors"])
    assert report["secrets"] == []
    assert report["index"]["drifted"] == 0
    shown = run_memctl("health", store=sample_store, env=NOW)
    assert shown.exit_code == 0 and "by type" in shown.stdout


def test_health_says_whether_a_watcher_runs(tmp_path):
    """The report names a live `memctl watch` (started for real) and says so when none runs."""
    import json as _json
    import subprocess
    import time

    from conftest import memctl_executable, run_memctl

    from memctl.store import Store

    root = tmp_path / "watched"
    Store.init(root)
    before = run_memctl("health", "--json", store=root)
    assert before.json()["watcher"] == {"running": False, "live": False, "pid": None}
    proc = subprocess.Popen([memctl_executable(), "--store", str(root), "watch", "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert _json.loads(line)["event"] == "ready"
        deadline = time.monotonic() + 20
        while True:
            report = run_memctl("health", "--json", store=root).json()
            if report["watcher"]["live"] or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert report["watcher"] == {"running": True, "live": True, "pid": proc.pid}
    finally:
        proc.terminate()
        proc.wait(timeout=60)  # a safety net, not a measure: no test times a shutdown


def _pair_titles(report: dict, section: str) -> set[frozenset[str]]:
    return {frozenset((pair["a"]["title"], pair["b"]["title"])) for pair in report[section]}


def test_pairs_kept_from_the_last_report_follow_every_edit(troubled: Cli) -> None:
    """The second report reuses the pairs of unchanged notes (.memctl/health-pairs.json) and
    still sees a new duplicate, an edit that ends a pair, and a damaged or deleted cache."""
    cache = troubled.store / ".memctl" / "health-pairs.json"
    first = troubled("health", "--json", env=NOW).json()
    assert cache.exists()
    again = troubled("health", "--json", env=NOW).json()
    for section in ("near_duplicates", "contradictions"):
        assert _pair_titles(again, section) == _pair_titles(first, section)
    (troubled.store / "demo/notes/fact/by-hand.md").write_text(
        "---\ntype: fact\n---\nDeploys need approval from the ops\n")
    five = [n for n in troubled.ok("list", "--json").json()
            if n["title"] == "use port 5433 for the dev database"][0]
    path = troubled.store / five["path"]
    path.write_text(path.read_text().replace("use port 5433 for the dev database",
                                             "Logs go to journald"))
    after = troubled("health", "--json", env=NOW).json()
    titles = {title for pair in after["near_duplicates"] + after["contradictions"]
              for title in (pair["a"]["title"], pair["b"]["title"])}
    assert "Deploys need approval from the ops" in titles
    assert "use port 5433 for the dev database" not in titles
    cache.write_text("{not json")
    damaged = troubled("health", "--json", env=NOW).json()
    cache.unlink()
    fresh = troubled("health", "--json", env=NOW).json()
    for section in ("near_duplicates", "contradictions"):
        assert _pair_titles(damaged, section) == _pair_titles(after, section) \
            == _pair_titles(fresh, section)


def test_markdown_dash_is_stdout_not_a_file(cli: Cli, tmp_path: Path) -> None:
    cli.ok("add", "The API listens on port 8080", env=NOW)
    printed = cli.ok("health", "--markdown", "-", env=NOW)
    assert printed.stdout.startswith("# memctl health report — 2026-11-30")
    assert not (tmp_path / "-").exists() and not list(Path.cwd().glob("-"))
    both = cli("health", "--markdown", "-", "--json", env=NOW)
    assert both.exit_code == 2 and both.error.count("\n") == 1 and "--markdown" in both.stderr


def test_a_correction_and_the_note_it_corrects_are_no_contradiction(cli: Cli) -> None:
    """`add --corrects` links the two on purpose (docs/lifecycle.md), and `add` and `recall`
    treat them as linked: health must not report the pair (nor fail `--strict` on it), while
    an unlinked note that disagrees the same way is still reported."""
    old = cli.ok("add", "The staging server runs on port 8080 and uses Redis for sessions",
                 "--json", env=NOW).json()["id"]
    fix = cli.ok("add", "The staging server runs on port 9090, not 8080", "--type", "correction",
                 "--corrects", old, "--json", env=NOW).json()["id"]
    report = cli.ok("health", "--json", env=NOW).json()
    pairs = [{entry["a"]["id"], entry["b"]["id"]} for entry in report["contradictions"]]
    assert {old, fix} not in pairs
    assert cli("health", "--strict", env=NOW).exit_code == 0
    other = cli.ok("add", "The staging server runs on port 7070 and uses Redis for sessions",
                   "--force", "--json", env=NOW).json()["id"]
    pairs = [{entry["a"]["id"], entry["b"]["id"]}
             for entry in cli.ok("health", "--json", env=NOW).json()["contradictions"]]
    assert {old, other} in pairs


def _report_without_times(store: Path) -> dict:
    from memctl.memory.health import build_report
    from memctl.store import Store

    report = build_report(Store(store))
    for key in ("generated", "index"):
        report.pop(key)
    (store / ".memctl" / "health-pairs.json").unlink()  # the next report finds pairs afresh
    return report


def test_a_big_store_read_and_judged_in_two_processes_gives_the_same_report(
        troubled: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    """A big store is read and its projects judged half in a forked child (memory/health.py):
    the report is the one a single process makes, and a child that fails only costs time."""
    import os
    import pickle

    from memctl.core.errors import MemctlError
    from memctl.memory import health
    from memctl.store import Store

    for project, text in (("blog", "use port 5432 for the blog database"),
                          ("blog", "use port 5433 for the blog database"),
                          ("global", "use port 5434 for every database"),
                          ("ops", "Deploys need approval from the ops team")):
        cli_in = Cli(troubled.store, project=project)
        cli_in.ok("add", text, "--force", env=NOW)
    monkeypatch.setenv("MEMCTL_NOW", NOW["MEMCTL_NOW"])
    monkeypatch.setenv("MEMCTL_INDEX_WORKERS", "1")
    alone = _report_without_times(troubled.store)
    assert alone["contradictions"] and alone["secrets"] and alone["parse_errors"]
    monkeypatch.setenv("MEMCTL_INDEX_WORKERS", "2")
    monkeypatch.setattr(health, "PARALLEL_MIN", 1)  # fork whatever the size of the store
    assert _report_without_times(troubled.store) == alone

    class Failing:
        loads = staticmethod(pickle.loads)
        HIGHEST_PROTOCOL = pickle.HIGHEST_PROTOCOL

        @staticmethod
        def dumps(*_args: object, **_kwargs: object) -> bytes:
            raise OSError("the child cannot send its half")

    monkeypatch.setattr(health, "pickle", Failing)
    assert _report_without_times(troubled.store) == alone

    def broken(_store: object, _walked: object = None) -> None:
        raise MemctlError("the index is busy (another memctl is updating it); try again")

    started: list[int] = []
    real_init = health._Child.__init__

    def recording(child: health._Child, work: object, leave: tuple[int, ...] = ()) -> None:
        real_init(child, work, leave)  # type: ignore[arg-type]
        started.append(child.pid)

    monkeypatch.setattr(health._Child, "__init__", recording)
    monkeypatch.setattr(health, "_index_drift", broken)  # fails while a child reads
    with pytest.raises(MemctlError, match="busy"):
        health.build_report(Store(troubled.store))
    assert started and all(started)
    for pid in started:  # stopped and waited for: no child left behind
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)


def test_a_big_json_document_is_written_in_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    """`--json` writes what json.dumps gives, but in pieces: the report of a 100k-note store
    is hundreds of MB, and joining it whole first took gigabytes (bench/bench_health.py)."""
    import io
    import sys

    from memctl.cli.output import emit_json

    brief = {"id": "01jdz4k2m8x7b3qv", "project": "blog", "type": "fact", "path": "blog/x.md",
             "title": "数据库连接池的超时是三十秒"}
    report = {"contradictions": [{"a": brief, "b": brief, "score": 71.5, "reasons": ["value"]}
                                 for _ in range(20_000)], "ok": False}
    writes: list[int] = []

    class Recording(io.StringIO):
        def write(self, text: str) -> int:
            writes.append(len(text))
            return super().write(text)

    out = Recording()
    monkeypatch.setattr(sys, "stdout", out)
    emit_json(report)
    assert out.getvalue() == json.dumps(report, ensure_ascii=False, indent=2) + "\n"
    assert len(writes) > 10 and max(writes) < len(out.getvalue()) / 10


def _listed_pairs(cli: Cli, count: int) -> None:
    """`health.listed_pairs = count` in the store's memctl.toml."""
    settings = cli.store / "memctl.toml"
    text = settings.read_text()
    if "listed_pairs =" in text:
        text = "\n".join(f"listed_pairs = {count}" if line.startswith("listed_pairs =") else line
                         for line in text.splitlines()) + "\n"
    else:
        text += f"\n[health]\nlisted_pairs = {count}\n"
    settings.write_text(text)


def _every_verdict(report: dict, store: Path) -> dict[tuple[str, str], object]:
    """Every pair of live notes within a project, judged the slow way (`compare`)."""
    from itertools import combinations

    from memctl.core.similarity import compare
    from memctl.memory.health import _read_all
    from memctl.store import Store

    notes = [n for n in _read_all(Store(store))[0][0] if n.status == "active"]
    verdicts = {}
    for first, second in combinations(notes, 2):
        if first.path.split("/")[0] == second.path.split("/")[0]:
            key = (min(first.id, second.id), max(first.id, second.id))
            verdicts[key] = compare(first.body, second.body)
    return verdicts


def test_pairs_are_counted_by_note_and_the_most_alike_listed_per_project(cli: Cli) -> None:
    """Notes written from one template make far more pairs than anyone can act on (the 100k
    benchmark store: ~400,000): each kind is counted by the notes it involves, exactly, and
    each project lists its most alike pairs, at most `health.listed_pairs` (docs/health.md)."""
    for port in range(5430, 5437):  # 7 notes, 21 pairs that may contradict each other
        cli.ok("add", f"use port {port} for the dev database", "--force", env=NOW)
    ops = Cli(cli.store, project="ops")
    ops.ok("add", "deploys start at 09:00 on weekdays", "--force", env=NOW)
    ops.ok("add", "deploys start at 10:00 on weekdays", "--force", env=NOW)
    ops.ok("add", "The ops wiki lives on Confluence", env=NOW)
    _listed_pairs(cli, 3)
    report = cli.ok("health", "--json", env=NOW).json()
    verdicts = _every_verdict(report, cli.store)
    contradicting = {note_id for key, verdict in verdicts.items() if verdict.similar
                     for note_id in key}
    assert len(contradicting) == 9  # the slow way: every pair judged
    assert report["pair_counts"]["contradictions"] == {"notes": 9, "listed": 4}
    assert report["pair_counts"]["near_duplicates"] == {"notes": 0, "pairs": 0, "listed": 0}
    assert report["pair_counts"]["similar"] == 22 and report["pair_counts"]["listed_per_project"] == 3
    listed = {(e["a"]["id"], e["b"]["id"]): e["score"] for e in report["contradictions"]}
    by_project = Counter(e["a"]["project"] for e in report["contradictions"])
    assert by_project == {"demo": 3, "ops": 1}
    demo_left = [verdicts[key].score for key in verdicts
                 if key not in listed and verdicts[key].similar]
    assert min(listed.values()) >= max(demo_left)  # the most alike are the ones listed
    problem = next(p for p in report["problems"] if p["kind"] == "contradictions")
    assert problem == {"kind": "contradictions", "count": 9,
                       "message": "possible contradictions: 9 notes"}
    _listed_pairs(cli, 0)  # none listed: still counted, still a problem for --strict
    quiet = cli("health", "--json", "--strict", env=NOW)
    assert quiet.exit_code == 1 and "possible contradictions: 9 notes" in quiet.stderr
    assert quiet.json()["contradictions"] == []


def test_the_terminal_shows_the_first_pairs_and_how_many_more(cli: Cli) -> None:
    for port in range(5430, 5437):  # 21 pairs
        cli.ok("add", f"use port {port} for the dev database", "--force", env=NOW)
    shown = cli.ok("health", env=NOW).stdout
    assert "possible contradictions (7 notes; the 21 most alike pairs)" in shown
    assert "… and 1 more (--json lists all)" in shown
    assert len(cli.ok("health", "--json", env=NOW).json()["contradictions"]) == 21


_TEXTS = st.sampled_from(
    ["use port 5432", "use port 5433", "use port 5434 now", "Use port 5432 for the dev db",
     "使用 Redis 做缓存", "使用 Memcached 做缓存", "deploy on fridays", "never deploy on fridays",
     "deploy on fridays!", "The blog backend uses PostgreSQL 16", "blog backend uses postgresql 16!",
     "The blog backend uses MySQL 16"])


@settings(max_examples=120, deadline=None)
@given(st.lists(_TEXTS, min_size=2, max_size=16), st.integers(0, 4))
def test_judging_stops_early_yet_counts_and_lists_what_judging_every_pair_gives(
        texts: list[str], listed: int) -> None:
    """`_judged` judges only what the report needs (memory/health.py): the notes it counts
    are those of every pair judged the slow way, the near-duplicate pairs all of them, and
    the pairs listed the first `listed` of each kind, the most alike first."""
    from memctl.core.similarity import compare, similar_pairs
    from memctl.memory.health import _judged

    class Note:  # what `_judged` reads of a note
        def __init__(self, note_id: str, body: str) -> None:
            self.id, self.body, self.corrects = note_id, body, None

    items = [(f"n{number:02d}", text) for number, text in enumerate(texts)]
    by_id = {key: Note(key, text) for key, text in items}
    pairs = similar_pairs(items)
    got = _judged(pairs, by_id, 88, 70, listed)
    kinds: dict[str, list[tuple]] = {"duplicates": [], "contradictions": []}
    for a, b, _score in pairs:
        verdict = compare(by_id[a].body, by_id[b].body)
        key = (min(a, b), max(a, b))
        if verdict.duplicate or verdict.similar:
            kinds["duplicates" if verdict.duplicate else "contradictions"].append(
                (*key, verdict.score, verdict.reasons))
    assert got.duplicate_notes == {n for pair in kinds["duplicates"] for n in pair[:2]}
    assert got.contradiction_notes == {n for pair in kinds["contradictions"] for n in pair[:2]}
    assert got.duplicate_pairs == len(kinds["duplicates"])
    assert got.duplicates == kinds["duplicates"][:listed]
    assert got.contradictions == kinds["contradictions"][:listed]
    assert got.similar == len(pairs) and got.judged <= len(pairs)


def test_no_collection_of_cycles_runs_while_a_report_is_made(
        troubled: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    """A report makes millions of objects and keeps them to its end: Python's collector of
    reference cycles would scan them again and again (a twentieth of a 100,000-note report).
    It is paused while a report is made, in a process where no other thread could count on
    it, and on again after; a server's threads leave it alone."""
    import gc
    import threading

    from memctl.memory import health
    from memctl.store import Store

    monkeypatch.setenv("MEMCTL_NOW", NOW["MEMCTL_NOW"])
    inside: list[bool] = []
    collections: list[int] = []

    def watched(part: Callable[..., object]) -> Callable[..., object]:
        def run(*args: object) -> object:  # (the files read, the pairs found and judged)
            inside.append(True)
            try:
                return part(*args)
            finally:
                inside.clear()
        return run

    def counted(phase: str, info: dict) -> None:
        if phase == "start" and inside:
            collections.append(info["generation"])

    monkeypatch.setattr(health, "_read_all", watched(health._read_all))
    monkeypatch.setattr(health, "_pairs", watched(health._pairs))
    store = Store(troubled.store)
    threshold = gc.get_threshold()
    gc.set_threshold(50)  # a collection every 50 new objects, were the collector on
    gc.callbacks.append(counted)
    try:
        assert health.build_report(store)["totals"]["notes"]
        assert collections == [] and gc.isenabled()
        waiting = threading.Event()
        other = threading.Thread(target=waiting.wait)
        other.start()  # another thread: the collector runs as it always does
        try:
            health.build_report(store)
        finally:
            waiting.set()
            other.join()
        assert collections and gc.isenabled()
    finally:
        gc.callbacks.remove(counted)
        gc.set_threshold(*threshold)


def test_a_big_store_walked_while_a_child_reads_gives_the_same_report(
        troubled: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    """A child reads the files walked so far while this process walks on (they reach it in
    memory both share); chunks that no longer fit that memory are read here. Either way,
    chunk by chunk or all here, the report is the one a single process makes."""
    from memctl.memory import health

    for number in range(30):
        Cli(troubled.store, project=f"p{number % 3}").ok(
            "add", f"note {number} about the {number % 5} cache on port {5400 + number}",
            "--force", env=NOW)
    monkeypatch.setenv("MEMCTL_NOW", NOW["MEMCTL_NOW"])
    monkeypatch.setenv("MEMCTL_INDEX_WORKERS", "1")
    alone = _report_without_times(troubled.store)
    monkeypatch.setenv("MEMCTL_INDEX_WORKERS", "2")
    monkeypatch.setattr(health, "PARALLEL_MIN", 4)  # a child once 4 files are walked
    monkeypatch.setattr(health, "READ_CHUNK", 3)
    assert _report_without_times(troubled.store) == alone
    monkeypatch.setattr(health, "WALKED_BYTES", 700)  # room for the first chunks only
    assert _report_without_times(troubled.store) == alone


def test_the_index_check_reads_the_stamps_the_walk_found(tmp_path: Path) -> None:
    """The drift check compares the index with the stamps the report's own walk found rather
    than walking again: the same files and stamps as the index's own walk, whatever lies in
    the store (tombstones and conflict copies, which the index leaves out, upper-case
    suffixes, hidden files and folders, editor debris, folders that are no project, links,
    a folder named like a note)."""
    import os

    from memctl.index.db import walk_stats
    from memctl.memory.health import _indexed_stats
    from memctl.store import Store

    files = ["blog/MEMORY.md", "blog/notes/fact/a.md", "blog/notes/fact/B.MD", "blog/x.Md",
             "blog/archive/fact/old.md", "blog/episodes/2026-11/e.md", "blog/.hidden.md",
             "blog/.drafts/d.md", "blog/notes/fact/a.md~", "blog/notes/fact/c.md.swp",
             "blog/notes/fact/d.txt", "blog/folder.md/inner.md", ".tombstones/t.md",
             ".conflicts/blog/notes/fact/a.0123456789ab.md", "not a project!/n.md",
             ".memctl/x.md", "top.md", "global/g.md"]
    for relpath in files:
        path = tmp_path / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("---\ntype: fact\n---\ntext\n", encoding="utf-8")
    os.symlink(tmp_path / "blog/notes/fact/a.md", tmp_path / "blog/notes/fact/link.md")
    os.symlink(tmp_path / "blog/notes", tmp_path / "global/linked")
    (tmp_path / "memctl.toml").write_text("", encoding="utf-8")
    walked = list(Store(tmp_path).walk())
    assert {each.relpath for each in walked} >= {".tombstones/t.md", "blog/notes/fact/B.MD"}
    assert _indexed_stats(walked) == walk_stats(tmp_path)


def test_the_pairs_kept_are_not_synced_to_disk(troubled: Cli, monkeypatch: pytest.MonkeyPatch
                                               ) -> None:
    """`.memctl/health-pairs.json` is derived (delete it any time, docs/health.md): written
    whole or not at all, but not synced to disk, which was a wait at the end of every report
    (18 MB at 100,000 notes); a power cut only costs the next report a full comparison."""
    import os

    from memctl.memory.health import build_report
    from memctl.store import Store

    synced: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd))[1])
    build_report(Store(troubled.store))
    cache = troubled.store / ".memctl" / "health-pairs.json"
    assert json.loads(cache.read_text(encoding="utf-8"))["groups"] and synced == []
    assert not [name for name in os.listdir(cache.parent) if name.endswith(".tmp")]


def test_files_are_read_byte_for_byte(tmp_path: Path) -> None:
    """The report reads every file through `StoreFiles.read_text` (one read call for a whole
    file, no buffered file object): an empty file, line endings as written, a file bigger
    than one read, and the file's stamp with it."""
    from memctl.store import Store

    texts = {"blog/notes/fact/empty.md": b"", "blog/notes/fact/crlf.md": b"---\r\nid: x\r\n---\r\nA\r\n",
             "blog/notes/fact/big.md": ("---\ntype: fact\n---\n" + "数据库 port 5432\n" * 30000
                                        ).encode("utf-8")}
    for relpath, data in texts.items():
        (tmp_path / relpath).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relpath).write_bytes(data)
    store = Store(tmp_path)
    for relpath, data in texts.items():
        text, info = store.read_text(relpath)
        assert text.encode("utf-8") == data and info.st_size == len(data)


def test_a_note_that_is_a_link_or_a_fifo_is_refused_unread(tmp_path: Path) -> None:
    """`read_text` opens the file itself without following a link (O_NOFOLLOW) and without
    waiting on a FIFO (O_NONBLOCK), then refuses what is not a regular file: one line each,
    nothing read, no hang (run in a process of its own, with a time limit)."""
    import os
    import subprocess
    import sys

    notes = tmp_path / "blog" / "notes" / "fact"
    notes.mkdir(parents=True)
    (tmp_path / "outside.md").write_text("---\ntype: fact\n---\nsecret outside\n")
    os.symlink(tmp_path / "outside.md", notes / "linked.md")
    os.mkfifo(notes / "pipe.md")
    script = ("import sys\nfrom memctl.core.errors import MemctlError\nfrom memctl.store import Store\n"
              "for relpath in sys.argv[2:]:\n"
              "    try:\n        Store(sys.argv[1]).read_text(relpath)\n"
              "    except MemctlError as exc:\n        print(exc)\n")
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path), "blog/notes/fact/linked.md",
                           "blog/notes/fact/pipe.md"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "blog/notes/fact/linked.md: blog/notes/fact/linked.md is a symbolic link; memctl never "
        "follows links inside a store (one could point anywhere). Replace it with the file or "
        "folder itself",
        "blog/notes/fact/pipe.md is not a regular file"]


def test_health_markdown_refuses_a_target_that_is_not_a_regular_file(store_path, tmp_path):
    """--markdown onto a FIFO (standing in for a device such as /dev/full) is refused and the
    FIFO stays; a folder still gets health-YYYY-MM.md in it; an empty name is a usage error."""
    import os
    import stat

    pipe = tmp_path / "report.md"
    os.mkfifo(pipe)
    result = run_memctl("health", "--markdown", str(pipe), store=store_path)
    assert result.exit_code == 1 and result.stderr.startswith("error:"), result.stderr
    assert "not a regular file" in result.stderr
    assert stat.S_ISFIFO(os.lstat(pipe).st_mode)
    folder = tmp_path / "reports"
    folder.mkdir()
    assert run_memctl("health", "--markdown", str(folder), store=store_path).exit_code == 0
    assert [p.name[:7] for p in folder.iterdir()] == ["health-"]
    assert run_memctl("health", "--markdown", "", store=store_path).exit_code == 2


def test_odd_front_matter_values_read_as_defaults_everywhere_and_health_names_each(
        store_path: Path) -> None:
    folder = store_path / "blog" / "notes" / "fact"
    folder.mkdir(parents=True)
    (folder / "a.md").write_text("---\nid: n1\nproject: ../../etc\n---\nNote dropped in blog\n")
    (folder / "b.md").write_text("---\nid: n2\ncreated: yesterday\nupdated: 2026-13-45\n"
                                 "expires: never\ntags: {a: b}\n---\nOdd values\n")
    listed = run_memctl("list", "-p", "blog", "--json", store=store_path)
    assert listed.exit_code == 0, listed.stderr
    notes = {n["id"]: n for n in json.loads(listed.stdout)}
    assert set(notes) == {"n1", "n2"}
    assert notes["n1"]["project"] == "blog"
    n2 = notes["n2"]
    assert n2["created"] == n2["updated"] and n2["created"][:2] == "20"
    assert n2["expires"] is None and n2["tags"] == []
    text = run_memctl("list", "-p", "blog", store=store_path).stdout
    assert "2026-13-45" not in text and "yesterday" not in text
    report = json.loads(run_memctl("health", "--json", store=store_path).stdout)
    said = {w["id"]: " | ".join(w["warnings"]) for w in report["field_warnings"]}
    assert "project '../../etc'" in said["n1"]
    for field in ("created", "updated", "expires", "tags"):
        assert field in said["n2"], field


# --- states made by hand that memctl would otherwise serve without a word -------------------

MARKED = "<<<<<<< HEAD\nThe blog uses PostgreSQL 16\n=======\nThe blog uses MySQL 8\n>>>>>>> theirs"


def test_git_conflict_markers_left_in_a_note_memory_md_or_scratchpad_are_a_problem(
        cli: Cli) -> None:
    note_id = cli.ok("add", "The blog uses PostgreSQL 16", "--type", "decision", "--json",
                     env=NOW).json()["id"]
    path = next((cli.store / "demo/notes/decision").glob("*.md"))
    path.write_text(path.read_text().replace("The blog uses PostgreSQL 16", MARKED))
    _hand_commit(cli.store, "demo/MEMORY.md", "# demo\n\n" + MARKED + "\n")
    # A heading's underline or a quoted marker alone is no conflict.
    _hand_commit(cli.store, "demo/notes/fact/heading.md",
                 "---\ntype: fact\n---\nSetup\n=======\nwrite `<<<<<<< ` to see one\n")
    report = cli.ok("health", "--json", env=NOW).json()
    found = {(e["path"], e["line"]) for e in report["conflict_markers"]}
    relpath = path.relative_to(cli.store).as_posix()
    line = path.read_text().splitlines().index("<<<<<<< HEAD") + 1
    assert found == {(relpath, line), ("demo/MEMORY.md", 3)}
    assert "keep the right one" in report["conflict_markers"][0]["message"]
    assert {"kind": "conflict_markers", "count": 2,
            "message": "files with git conflict markers: 2"} in report["problems"]
    assert "git conflict markers (2)" in cli.ok("health", env=NOW).stdout
    # recall shows the note marked, never as plain fact; MEMORY.md gets a warning.
    recalled = cli.ok("recall", "--json", env=NOW).json()
    marked = next(n for n in recalled["notes"] if n["id"] == note_id)
    assert marked["conflict_markers"] == line
    shown = cli.ok("recall", env=NOW).stdout
    assert f"git conflict markers at {relpath}:{line}: both sides shown" in shown
    assert any(w.startswith("demo/MEMORY.md:3: git conflict markers") for w in recalled["warnings"])


def _status(path: Path, superseded_by: str) -> None:
    text = path.read_text()
    path.write_text(text.replace("status: active",
                                 f"status: superseded\nsuperseded_by: {superseded_by}", 1))


def test_a_supersession_loop_or_a_missing_replacement_is_reported_with_the_way_out(
        cli: Cli) -> None:
    ids = [cli.ok("add", text, "--json", env=NOW).json()["id"] for text in
           ("Deploy with fly deploy", "Nightly backups run at 3am", "Logs go to Loki",
            "Alerts go to the ops channel")]
    paths = {note_id: cli.store / cli.ok("show", note_id, "--json").json()["path"]
             for note_id in ids}
    a, b, c, d = ids
    _status(paths[a], b)                 # a -> b -> a: a loop
    _status(paths[b], a)
    _status(paths[c], "01zzzzzzzzzzzzzz")  # c -> a note that does not exist
    _status(paths[d], c)                 # d -> c: replaced by a note that exists (not listed)
    report = cli.ok("health", "--json", env=NOW).json()
    found = {(e["id"], e["problem"]) for e in report["supersession"]}
    assert found == {(a, "cycle"), (b, "cycle"), (c, "missing")}
    missing = next(e for e in report["supersession"] if e["problem"] == "missing")
    assert missing["superseded_by"] == "01zzzzzzzzzzzzzz"
    assert f"`memctl restore {c}`" in missing["message"]
    assert any(p["kind"] == "supersession" and p["count"] == 3 for p in report["problems"])
    # The way out the report names works: the note is active again, the loop gone.
    cli.ok("restore", a, env=NOW)
    cli.ok("restore", c, env=NOW)
    report = cli.ok("health", "--json", env=NOW).json()
    assert report["supersession"] == []


def test_a_note_superseded_by_one_that_serves_fewer_projects_is_reported(cli: Cli) -> None:
    """What `memctl supersede` refuses, made by hand (or before it refused): a global rule
    superseded by one project's note is gone from every other project; listed with the way
    out. Superseded by a global note, or one of its own project, it is not."""
    rule = cli.ok("add", "Indent with tabs everywhere", "--global", "--json", env=NOW).json()
    local = cli.ok("add", "Two spaces in the webapp", "--project", "webapp", "--json",
                   env=NOW).json()
    other = cli.ok("add", "Four spaces in the api", "--project", "api", "--json",
                   env=NOW).json()
    wide = cli.ok("add", "Logs go to Loki everywhere", "--global", "--json", env=NOW).json()
    _status(cli.store / rule["path"], local["id"])   # global by webapp's: every project loses it
    _status(cli.store / other["path"], wide["id"])   # api's by a global note: fine
    report = cli.ok("health", "--json", env=NOW).json()
    assert [(e["id"], e["problem"]) for e in report["supersession"]] == [(rule["id"], "narrower")]
    said = report["supersession"][0]["message"]
    assert "of project webapp, which does not serve every project" in said
    assert f"`memctl restore {rule['id']}`" in said
    cli.ok("restore", rule["id"], env=NOW)
    assert cli.ok("health", "--json", env=NOW).json()["supersession"] == []


def test_a_fact_two_active_notes_state_is_reported(cli: Cli) -> None:
    """`add` supersedes a fact's older note, but a `restore` of a note in the middle of a
    chain (A→B→C, restore A) left two active notes for one fact: `get` printed both, and
    health said nothing. Each such fact is listed, with the way to keep one."""
    def fact(text: str, now: str) -> str:
        return cli.ok("add", text, "--subject", "deploy", "--predicate", "target", "--json",
                      env={"MEMCTL_NOW": now}).json()["id"]

    first = fact("Deploys go to Heroku", "2026-11-01T00:00:00Z")
    fact("Deploys go to Fly.io", "2026-11-10T00:00:00Z")
    third = fact("Deploys go to Render", "2026-11-20T00:00:00Z")
    assert cli.ok("health", "--json", env=NOW).json()["same_fact"] == []
    cli.ok("restore", first, env=NOW)
    report = cli.ok("health", "--json", env=NOW).json()
    (entry,) = report["same_fact"]
    assert set(entry["ids"]) == {first, third} and entry["project"] == "demo"
    assert (entry["subject"], entry["predicate"]) == ("deploy", "target")
    assert "`memctl supersede " in entry["message"]
    assert any(p["kind"] == "same_fact" and p["count"] == 1 for p in report["problems"])
    assert "facts stated by more than one active note" in cli.ok("health", env=NOW).stdout
    from memctl.services.upkeep import review
    from memctl.store import Store

    [problem] = [p for p in review(Store.open(cli.store), None)["problems"]
                 if p["kind"] == "same_fact"]  # the MCP review names both files
    assert problem["places"] == [f"{', '.join(entry['paths'])}: {entry['message']}"]
    older, newer = entry["ids"]
    cli.ok("supersede", older, newer, env=NOW)
    assert cli.ok("health", "--json", env=NOW).json()["same_fact"] == []


def test_a_note_brought_back_beside_its_tombstone_is_reported(cli: Cli) -> None:
    note_id = cli.ok("add", "Try the Bun runtime for scripts", "--json", env=NOW).json()["id"]
    relpath = cli.ok("show", note_id, "--json").json()["path"]
    cli.ok("forget", note_id, env=NOW)
    git(cli.store, "checkout", "HEAD~1", "--", relpath)
    git(cli.store, "commit", "-qm", "hand: bring the note back")
    report = cli.ok("health", "--json", env=NOW).json()
    assert [(e["id"], e["tombstone"]) for e in report["tombstoned_notes"]] == [
        (note_id, f".tombstones/{note_id}.md")]
    assert f"memctl forget {note_id}" in report["tombstoned_notes"][0]["message"]
    assert any(p["kind"] == "tombstoned_notes" for p in report["problems"])


def test_an_expired_note_the_sweep_cannot_change_is_not_said_to_go_at_the_next_sweep(cli: Cli) -> None:
    """`kept_because` null says the next `memctl archive` archives the note (docs/health.md);
    a file whose front matter is of a shape memctl's line edits do not handle is kept by the
    sweep (docs/lifecycle.md), so the report says so rather than null."""
    now = {"MEMCTL_NOW": "2026-06-01T12:00:00Z"}
    path = cli.store / "demo" / "notes" / "fact" / "flow-01aaaaaaaaaaaaaa.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("---\n{id: 01aaaaaaaaaaaaaa, expires: 2026-01-01, "
                    "created: 2025-01-01T00:00:00Z}\n---\nA flow-style note that expired\n")
    cli.ok("add", "Launch banner is shown", "--expires", "2026-03-01",
           env={"MEMCTL_NOW": "2026-02-01T00:00:00Z"})
    report = cli.ok("health", "--json", env=now).json()
    because = {e["title"]: e["kept_because"] for e in report["expired"]}
    assert because["Launch banner is shown"] is None
    assert because["A flow-style note that expired"].startswith("memctl cannot change it (")
    plan = cli.ok("archive", "--dry-run", "--json", env=now).json()["plan"]
    assert [e["id"] for e in plan["kept"]] == ["01aaaaaaaaaaaaaa"]
    assert [e["path"] for e in plan["archive"]] == [
        e["path"] for e in report["expired"] if e["kept_because"] is None]


def test_pairs_kept_by_an_older_memctl_are_compared_again(cli: Cli) -> None:
    """A report kept by a memctl whose candidates were fewer (before a short word and its
    plural counted as one word, nearpairs.word_key) is not reused after an upgrade: the pair
    it never found was hidden for as long as both notes stayed unchanged."""
    for text in ("Tests run nightly", "Test runs nightly", "Logs are shipped to Loki",
                 "The API gateway is Kong", "Invoices are generated on the first"):
        cli.ok("add", text, "--force", env=NOW)
    cache = cli.store / ".memctl" / "health-pairs.json"
    first = cli("health", "--json", env=NOW).json()
    pair = frozenset(("Tests run nightly", "Test runs nightly"))
    assert pair in _pair_titles(first, "near_duplicates")
    # What memctl 7's report kept for this store: the same notes, and no pair among them.
    kept = json.loads(cache.read_text())
    kept["format"] = 7
    for group in kept["groups"].values():
        group["pairs"], group["reach"] = [], 0
    cache.write_text(json.dumps(kept))
    upgraded = cli("health", "--json", env=NOW).json()
    assert pair in _pair_titles(upgraded, "near_duplicates")
