"""Reliability against hostile input: fuzzed readers (front matter, field edits, the query
translator, bundle names and zips) and inputs at the limits (giant notes, alias bombs, huge
queries), each with bounded time and memory and a clear error. docs/reliability.md sums them
up; the long versions live in bench/fuzz.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import memctl_executable, run_memctl, tree_snapshot  # noqa: E402
from test_crash import make_store, notes_on_disk, whole_files  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
import fuzz  # noqa: E402

FTS = fuzz.fts_connection()

FUZZ = settings(max_examples=600, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])

# --- fuzz: a few thousand cases here; bench/fuzz.py runs 100,000 of each --------------------------


@FUZZ
@given(fuzz.front_matter_texts())
def test_the_front_matter_reader_never_raises_nor_builds_objects(text: str) -> None:
    assert fuzz.check_front_matter(text) is None


@settings(FUZZ, max_examples=400)
@given(fuzz.front_matter_texts(), st.sampled_from(fuzz.FIELDS), fuzz.field_values())
def test_changing_a_field_never_loses_the_body_or_other_fields(text: str, key: str, value) -> None:
    """The surgical edit behind edit/archive/supersede: the new value reads back, the body and
    every other field stay as they were, the file still parses, or the edit is refused."""
    assert fuzz.check_field_edit(text, key, value) is None


@pytest.mark.parametrize("text", [
    "---\nid: 01jdz4k2m8x7b3qv\nstatus: active\ntype: fact\nstatus: active\n---\nbody\n",
    "---\n\t\n---\nbody\n",
], ids=["field-written-twice", "tab-only-line"])
def test_an_edit_counts_and_keeps_the_file_readable_or_is_refused(text: str) -> None:
    """Found by bench/fuzz.py: YAML keeps the last of duplicate keys while the edit changed
    the first (an archived note would still read `active`); a line holding only a tab is
    fine in empty front matter but breaks it once a field follows."""
    assert fuzz.check_field_edit(text, "status", "archived") is None


@FUZZ
@given(fuzz.queries())
def test_every_query_gives_a_valid_match_or_a_usage_error(raw: str) -> None:
    """No string reaches FTS5 as syntax: the MATCH it builds always runs."""
    assert fuzz.check_query(FTS, raw) is None


@settings(FUZZ, max_examples=150)
@given(fuzz.queries())
def test_search_of_a_real_store_never_crashes(searchable_store: Path, raw: str) -> None:
    from memctl.core.errors import UsageError
    from memctl.index.search import search
    from memctl.store import Store

    try:
        hits = search(Store.open(searchable_store), raw, all_projects=True, limit=5)
    except UsageError:
        return
    assert all(hit.id for hit in hits)


@pytest.fixture(scope="module")
def searchable_store(tmp_path_factory) -> Path:
    return make_store(tmp_path_factory.mktemp("search") / "store", 30)


@FUZZ
@given(fuzz.entry_names())
def test_no_accepted_entry_name_escapes_the_store(name: str) -> None:
    assert fuzz.check_entry_name(name) is None


@settings(FUZZ, max_examples=300)
@given(fuzz.bundle_dicts())
def test_the_validator_accepts_only_safe_entries(raw: dict[str, bytes]) -> None:
    assert fuzz.check_validate(raw) is None


@pytest.mark.parametrize("name", [".conflicts/p/../../../etc/evil.md", ".conflicts/p/../../x.md",
                                  "alpha/../../x.md", "/etc/x.md", "alpha\\..\\..\\x.md"])
def test_the_validator_refuses_every_escaping_name_whatever_its_source(name: str) -> None:
    """`validate` also checks what importers of other tools' formats hand it, not only zips."""
    from memctl.core.errors import MemctlError
    from memctl.exchange.bundle import validate

    try:
        bundle = validate("crafted", {name: b"---\nid: 01jdz4k2m8x7b3qv\n---\nhello\n"})
    except MemctlError:
        return
    assert not bundle.files, f"accepted {list(bundle.files)}"


@settings(FUZZ, max_examples=150)
@given(fuzz.zip_specs())
def test_reading_any_zip_raises_only_the_documented_error(tmp_path: Path, spec) -> None:
    """Hostile archives (escaping names, links, devices, truncated or corrupt bytes)."""
    assert fuzz.check_zip(tmp_path, fuzz.make_zip(spec)) is None


# --- hostile input: bounded time and memory, a clear error at a limit ----------------------------

# No test here asserts a time (the convention of tests/test_linear_time.py): each command runs
# in a child with a generous `timeout=`, so a blow-up fails by that timeout, and the tests assert
# on results and on the child's peak memory, which does not depend on the machine's load.
TIMEOUT = 120  # seconds: a quadratic reading of these inputs takes far longer; these take ~1-3 s

MEASURE = ("import resource, subprocess, sys\n"
           "done = subprocess.run(sys.argv[1:], stdin=sys.stdin)\n"
           "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
           "sys.stderr.write(f'\\nMEASURED {peak}\\n')\n"
           "sys.exit(done.returncode)\n")


def measured(*args: str, store: Path, input: str | None = None,
             project: str = "alpha") -> tuple[int, str, str, int]:
    """Run the installed memctl; returns exit code, stdout, stderr and peak RSS (MB)."""
    env = dict(os.environ, MEMCTL_STORE=str(store), MEMCTL_PROJECT=project)
    done = subprocess.run([sys.executable, "-c", MEASURE, memctl_executable(), *args],
                          input=input, capture_output=True, text=True, env=env, timeout=TIMEOUT)
    stderr, _, peak_kb = done.stderr.rpartition("\nMEASURED ")
    return done.returncode, done.stdout, stderr, int(peak_kb) // 1024


def no_traceback(stderr: str) -> None:
    assert "Traceback" not in stderr, stderr[-2000:]


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return make_store(tmp_path / "store", 12)


def test_a_10_mb_note_is_refused_clearly_and_nothing_is_written(store: Path) -> None:
    before = tree_snapshot(store)
    code, _out, err, peak = measured("add", "-", store=store,
                                              input="big " * (10 * 1024 * 1024 // 4))
    assert code in (1, 2) and err.startswith("error:") and "KB" in err, err[-500:]
    assert peak < 400, peak
    assert tree_snapshot(store) == before


def test_hand_dropped_giants_keep_every_command_bounded(store: Path) -> None:
    """A 10 MB note, 9 MB of Chinese, a 100k-line body, 10k tags, 100k-deep YAML nesting and a
    billion-laughs bomb, dropped into the store by hand: commands stay fast and small, name each file that
    hits a limit, and still answer for everything else."""
    folder = store / "alpha" / "notes" / "fact"
    lines = "\n".join(f"line {n} of a very long body" for n in range(100_000))
    (folder / "hundred-k-lines.md").write_text(f"---\nid: 0000000000000line\n---\n{lines}\nzebracorn\n")
    (folder / "ten-mb.md").write_text("---\nid: 00000000000000big\n---\n" + "x" * (10 * 1024 * 1024 + 10))
    tags = ", ".join(f"tag{n}" for n in range(10_000))
    (folder / "ten-k-tags.md").write_text(f"---\nid: 000000000000tags\ntags: [{tags}]\n---\nmany tags\n")
    (folder / "nested.md").write_text("---\nid: 000000000000nest\nx: " + "[" * 100_000 + "]" * 100_000
                                      + "\n---\nnested\n")
    laughs = ["a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for level in range(1, 10):
        prev = chr(ord("a") + level - 1)
        laughs.append(f"{chr(ord('a') + level)}: &{chr(ord('a') + level)} [" + ", ".join(
            [f"*{prev}"] * 9) + "]")
    (folder / "laughs.md").write_text("---\n" + "\n".join(laughs) + "\n---\nbomb\n")
    # 9 MB of Chinese, under the index's limit: its pairs of characters took 885 MB to index
    # (memctl.core.tokenize.cjk_pairs).
    chinese = ("数据库连接池超时了，请检查配置。" * 200_000)[:3_000_000]
    (folder / "nine-mb-chinese.md").write_text(f"---\nid: 00000000000000cjk\n---\n{chinese}\n")
    for args in (["search", "zebracorn", "--all-projects", "--json"],
                 ["list", "--all-projects", "--json"], ["reindex", "--json"]):
        code, out, err, peak = measured(*args, store=store)
        no_traceback(err)
        assert code == 0, err[-1000:]
        assert peak < 500, (args, peak)
        if args[0] == "search":
            assert [hit["id"] for hit in json.loads(out)] == ["0000000000000line"]
            for name in ("ten-mb.md", "ten-k-tags.md", "nested.md", "laughs.md"):
                assert name in err, f"{name} is not named on stderr:\n{err[-2000:]}"
        if args[0] == "reindex":  # said once ("not indexed (not indexed)" before)
            said = next(line for line in err.splitlines() if "ten-mb.md" in line)
            assert said.endswith(": file is larger than 10 MB, the most memctl reads (not indexed)"), said
    for name in ("ten-k-tags.md", "nested.md", "laughs.md"):
        (folder / name).unlink()
    reindexed = run_memctl("reindex", store=store)
    assert reindexed.exit_code == 0 and "; 1 file does not parse\n" in reindexed.stderr, \
        reindexed.stderr[-500:]  # ("1 files do not parse" before)
    ids = {note["id"] for note in json.loads(run_memctl("list", "--all-projects", "--json",
                                                        store=store).stdout)}
    assert set(notes_on_disk(store)) - {"00000000000000big"} <= ids  # over the index's limit


def test_a_hand_dropped_giant_note_is_never_parsed_whole_by_export_or_sync(
        store: Path, tmp_path: Path) -> None:
    """A 40 MB note dropped by hand (over what the index reads): `export` leaves it out and
    names it, `sync` commits and pushes it as it is, each without reading it as a note (a
    file of 100 MB held ~1 GB of either: decoded, parsed and stamped whole)."""
    folder = store / "alpha" / "notes" / "fact"
    big = folder / "giant-000000000000gian.md"
    big.write_text("---\nid: 000000000000gian\ntype: fact\n---\n" + "word " * 8_000_000)
    code, _out, err, peak = measured("export", str(tmp_path / "out.zip"), store=store)
    no_traceback(err)
    assert code == 0 and "giant-000000000000gian.md" in err, err[-1000:]
    assert peak < 200, peak
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    code, _out, err, peak = measured("sync", "--remote", str(remote), store=store)
    no_traceback(err)
    assert code == 0, err[-1000:]
    assert peak < 250, peak
    # No `memctl edit` for a file memctl does not read: it would find no such note.
    said = next(line for line in err.splitlines() if "giant-000000000000gian.md" in line)
    assert "shorten it to under 10 MB in a text editor" in said and "edit` with" not in said, said
    assert "memctl leaves it out until it is fixed" in said, said  # it never had a good version
    pushed = subprocess.run(["git", "-C", str(remote), "cat-file", "-s",
                             "HEAD:alpha/notes/fact/giant-000000000000gian.md"],
                            capture_output=True, text=True, check=True)
    assert int(pushed.stdout) == big.stat().st_size


BOMBS = ("bombs = {\n"
         "    'nested lists': '---\\nx: ' + '[' * 200_000 + ']' * 200_000 + '\\n---\\n',\n"
         "    'nested maps': '---\\n' + ''.join(' ' * n + f'k{n}:\\n' for n in range(3000)) + '---\\n',\n"
         "    'flow maps': '---\\nx: ' + '{a: ' * 50_000 + 'b' + '}' * 50_000 + '\\n---\\n',\n"
         "    'aliases': '---\\na: &a [x, x]\\nb: &b [*a, *a]\\nc: [*b, *b]\\n---\\n',\n"
         "    'huge scalar': '---\\nx: ' + 'y' * (5 * 1024 * 1024) + '\\n---\\n',\n"
         "}\n"
         "from memctl.core.noteformat import parse_text\n"
         "for name, text in bombs.items():\n"
         "    print(name, '=>', parse_text(text).problem is not None)\n")


def test_deep_nesting_and_alias_bombs_fail_fast_in_the_reader() -> None:
    """Each bomb is refused as a problem of that note; a reader that expanded one would not
    finish inside the child's timeout."""
    done = subprocess.run([sys.executable, "-c", BOMBS], capture_output=True, text=True,
                          timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines() == [f"{name} => True" for name in
                                        ("nested lists", "nested maps", "flow maps", "aliases",
                                         "huge scalar")]


def test_a_huge_or_hostile_query_is_answered_quickly(store: Path) -> None:
    for query in ("word " * 200_000, '"' * 50_000, "(" * 50_000, "a* " * 10_000, "数据库" * 30_000):
        query = query.encode()[:100_000].decode(errors="ignore")  # the kernel's argv limit
        code, out, err, peak = measured("search", query, "--json", store=store)
        no_traceback(err)
        assert code in (0, 2), err[-500:]
        assert peak < 400, (query[:10], peak)


def test_thousands_of_tag_filters_are_answered_in_linear_time(store: Path) -> None:
    """Each `tag:`/`-tag:` filter was a clause of its own, joined by AND: 1,000 of them (9 KB)
    made SQLite refuse the query ("Expression tree is too large"), a traceback, and 8,000
    exclusions took 23 s and 770 MB."""
    plain = measured("search", "-tag:juniper", "--json", "--limit", "1000", store=store)
    assert plain[0] == 0 and json.loads(plain[1]), plain[2][-500:]
    needed = "tag:juniper " + " ".join(f"tag:t{n}" for n in range(1_200))
    juniper = measured("search", "tag:juniper", "--json", "--limit", "1000", store=store)
    assert juniper[0] == 0 and json.loads(juniper[1]), juniper[2][-500:]
    # 1,200 groups of `tag:a OR tag:b`, each met by the juniper notes: found, all of them.
    groups = " ".join(f"tag:juniper OR tag:b{n}" for n in range(1_200))
    excluded = "-tag:juniper " + " ".join(f"-tag:x{n}" for n in range(8_000))
    for query, expected in ((needed, []), (groups, json.loads(juniper[1])),
                            (excluded, json.loads(plain[1]))):
        code, out, err, peak = measured("search", query, "--json", "--limit", "1000", store=store)
        no_traceback(err)
        assert code == 0, err[-500:]
        assert [hit["id"] for hit in json.loads(out)] == [hit["id"] for hit in expected]
        assert peak < 200, (query[:20], peak)


@pytest.mark.parametrize("command", [["search", "deploy"], ["list"], ["recall", "deploy"]])
def test_a_limit_too_large_for_sqlite_is_bad_usage(store: Path, command: list[str]) -> None:
    result = run_memctl(*command, "--limit", "9" * 25, store=store, project="alpha")
    no_traceback(result.stderr)
    assert result.exit_code == 2 and "--limit" in result.stderr
    assert run_memctl(*command, "--limit", "1000000", store=store, project="alpha").exit_code == 0


def test_ten_thousand_tags_or_control_characters_give_a_clear_answer(store: Path) -> None:
    """Values memctl itself writes into front matter: either they read back exactly, or the
    command refuses them with `error:`; never a traceback, never an unreadable note."""
    tags = ",".join(f"tag{n}" for n in range(10_000))
    cases = [["--tags", tags], ["--tags", "a\x7fb"], ["--subject", "x\x85y", "--predicate", "p"],
             ["--tags", "line\u2028break"]]
    for extra in cases:
        before = tree_snapshot(store)
        code, out, err, _peak = measured("add", f"note with {extra[0]} {len(extra[1])}",
                                                  *extra, "--json", store=store)
        no_traceback(err)
        if code == 0:
            note = json.loads(run_memctl("show", json.loads(out)["id"], "--json", store=store).stdout)
            option, value = extra[0].lstrip("-"), extra[1]
            got = note["tags"] if option == "tags" else note[option]
            assert got == (value.split(",") if option == "tags" else value), extra[1][:40]
            assert not whole_files(store)
        else:
            assert code in (1, 2) and err.startswith("error:"), err[-500:]
            assert tree_snapshot(store) == before


# --- found by a hostile review: each gave a traceback, hung, or failed after writing ----------------


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                          check=True).stdout


def one_line_error(done, code: int = 1) -> None:
    """One `error:` line (and for a usage error, exit 2, the `hint:` line after it)."""
    assert done.exit_code == code, (done.exit_code, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert lines[0].startswith("error:") and len(lines) == 1 + (code == 2), done.stderr
    assert code != 2 or lines[1].startswith("hint:"), done.stderr
    no_traceback(done.stderr)


@pytest.mark.parametrize("command", [["project", "add", "lessons", "hi"],
                                     ["project", "replace", "-"]])
def test_settings_that_do_not_parse_stop_a_project_write_before_it_commits(
        store: Path, command: list[str]) -> None:
    (store / "memctl.toml").write_text("[[[\n")
    _git(store, "commit", "-qam", "settings broken by hand")
    head, before = _git(store, "rev-parse", "HEAD"), tree_snapshot(store)
    done = run_memctl(*command, store=store, project="alpha", input="# alpha\n\nnew\n")
    one_line_error(done)
    assert "memctl.toml" in done.stderr
    assert _git(store, "rev-parse", "HEAD") == head, "it committed, then said it failed"
    assert tree_snapshot(store) == before


@pytest.mark.parametrize("command", [["forget"], ["supersede"]])
def test_a_nul_in_a_hand_made_title_does_not_stop_the_commit(store: Path,
                                                            command: list[str]) -> None:
    """The title goes into the commit message, where git refuses a NUL: the write failed
    after its files were changed. It is shown as U+FFFD there now."""
    folder = store / "alpha" / "notes" / "fact"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "nul.md").write_text('---\nid: nultitle00000001\ntitle: "a\\0b"\n---\nbody\n')
    _git(store, "add", "-A")
    _git(store, "commit", "-qm", "a hand-made note")
    args = [*command, "nultitle00000001"]
    if command == ["supersede"]:
        newer = run_memctl("add", "the new version of it", "--json", store=store,
                           project="alpha")
        args.append(json.loads(newer.stdout)["id"])
    done = run_memctl(*args, store=store, project="alpha")
    assert done.exit_code == 0, done.stderr
    assert not _git(store, "status", "--porcelain").strip(), "left uncommitted"
    assert "a\ufffdb" in _git(store, "log", "-1", "--format=%s")


def test_a_fifo_where_the_tombstone_goes_is_refused_not_waited_on(store: Path) -> None:
    added = run_memctl("add", "Use PostgreSQL 16", "--json", store=store, project="alpha")
    note_id = json.loads(added.stdout)["id"]
    os.mkfifo(store / ".tombstones" / f"{note_id}.md")
    before = tree_snapshot(store)
    done = run_memctl("forget", note_id, store=store, project="alpha", timeout=TIMEOUT)
    one_line_error(done)
    assert "not a regular file" in done.stderr
    assert tree_snapshot(store) == before


def test_a_zip_whose_names_are_flagged_utf8_but_are_not_is_one_line(tmp_path: Path,
                                                                    store: Path) -> None:
    import struct
    import zipfile

    archive = tmp_path / "bad.zip"
    with zipfile.ZipFile(archive, "w") as out:
        out.writestr("alpha/notes/fact/XXXX.md", "---\nid: x\n---\nx\n")
    data = archive.read_bytes().replace(b"XXXX", b"\xff\xfe\xfd\xfc")
    for signature, offset in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        at = data.index(signature) + offset
        flags = struct.unpack("<H", data[at:at + 2])[0] | 0x800  # "the name is UTF-8"
        data = data[:at] + struct.pack("<H", flags) + data[at + 2:]
    archive.write_bytes(data)
    before = tree_snapshot(store)
    for extra in ([], ["--dry-run"]):
        one_line_error(run_memctl("import", str(archive), *extra, store=store))
    assert tree_snapshot(store) == before


@pytest.mark.parametrize("limit", [2**63 - 1, 2**70, 1_000_001])
def test_recall_through_the_services_bounds_its_limit_as_the_cli_does(store: Path,
                                                                      limit: int) -> None:
    from memctl.core.errors import ArgumentError
    from memctl.services.recall import recall
    from memctl.store import Store

    with pytest.raises(ArgumentError, match="1,000,000"):
        recall(Store(store), "alpha", "postgres", max_notes=limit)


@pytest.mark.parametrize("planted", ["lock.info", "watch.json"])
@pytest.mark.parametrize("content", [b"\xff{", b'{"pid": 99999999999999999999}'])
def test_damaged_lock_and_heartbeat_records_are_read_as_no_holder(store: Path, planted: str,
                                                                  content: bytes) -> None:
    (store / ".memctl" / planted).write_bytes(content)
    done = run_memctl("add", "a note after a damaged record", store=store, project="alpha")
    assert done.exit_code == 0, done.stderr
    no_traceback(done.stderr)
    status = run_memctl("watch", "--status", store=store, project="alpha")
    no_traceback(status.stderr)


@pytest.mark.parametrize("suffix", ["99999999999999999999", "²"])
def test_a_clone_beside_odd_staging_folders_is_made(tmp_path: Path, store: Path,
                                                    suffix: str) -> None:
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    pushed = run_memctl("sync", "--remote", str(remote), store=store, project="alpha")
    assert pushed.exit_code == 0, pushed.stderr
    (tmp_path / f".copy.memctl-clone-{suffix}").mkdir()
    done = run_memctl("init", str(tmp_path / "copy"), "--clone", str(remote), project="alpha")
    assert done.exit_code == 0, done.stderr
    no_traceback(done.stderr)
    # A number no process can have: an abandoned staging folder, removed as a dead clone's;
    # `²` is no process id: not a clone's, left alone.
    assert (tmp_path / f".copy.memctl-clone-{suffix}").is_dir() == (suffix == "²")


@pytest.mark.parametrize("source", ["/dev/zero", "big"])
def test_project_replace_reads_no_more_than_one_text(tmp_path: Path, store: Path,
                                                     source: str) -> None:
    if source == "big":
        big = tmp_path / "big.md"
        big.write_text("# alpha\n\n" + "a line of text\n" * 200_000)  # ~3 MB
        source = str(big)
    before = tree_snapshot(store)
    done = run_memctl("project", "replace", source, store=store, project="alpha",
                      timeout=TIMEOUT)
    one_line_error(done, code=2)
    assert "1024 KB" in done.stderr
    assert tree_snapshot(store) == before


def test_the_memory_layer_refuses_a_giant_memory_file_from_any_front_end(store: Path) -> None:
    from memctl.core.errors import UsageError
    from memctl.memory.project_memory import replace
    from memctl.store import Store

    with pytest.raises(UsageError, match="1024 KB"):
        replace(Store(store), "alpha", "x" * (2 * 1024 * 1024))


# Legal YAML that memctl reads but whose fields its line edits cannot change (a flow
# mapping): a command that would mark it superseded must stop before it writes anything.
FLOW_NOTE = ("---\n{id: flowmap000000001, type: fact, project: alpha, subject: db2,"
             " predicate: engine}\n---\nThe analytics DB is ClickHouse.\n")


@pytest.mark.parametrize("how", ["add", "update", "supersede"])
def test_a_note_whose_fields_cannot_be_changed_stops_a_write_that_supersedes_it(
        store: Path, how: str) -> None:
    from memctl.core.errors import MemctlError
    from memctl.services import notes
    from memctl.store import Store

    folder = store / "alpha" / "notes" / "fact"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "flow.md").write_text(FLOW_NOTE)
    newer = None
    if how != "add":
        newer = json.loads(run_memctl("add", "The warehouse runs on DuckDB now", "--json",
                                      store=store, project="alpha").stdout)["id"]
    _git(store, "add", "-A")
    _git(store, "commit", "-qm", "a hand-made note")
    head, before = _git(store, "rev-parse", "HEAD"), tree_snapshot(store)
    if how == "add":
        done = run_memctl("add", "The analytics DB is DuckDB", "--subject", "db2",
                          "--predicate", "engine", store=store, project="alpha")
        one_line_error(done)
        assert "cannot change its fields" in done.stderr
    elif how == "update":  # the MCP tool's service: a subject + predicate that supersede
        with pytest.raises(MemctlError, match="cannot change its fields"):
            notes.update(Store(store), newer, subject="db2", predicate="engine")
    else:
        done = run_memctl("supersede", "flowmap000000001", newer, store=store,
                          project="alpha")
        one_line_error(done)
    assert tree_snapshot(store) == before, "a file was written before the failure"
    assert not _git(store, "status", "--porcelain").strip()
    assert _git(store, "rev-parse", "HEAD") == head


@pytest.mark.parametrize("moment", ["9999-12-31T23:59:59-23:59", "0001-01-01T00:00:00+23:59"])
def test_a_time_no_calendar_holds_in_utc_is_no_time_not_a_failure_of_every_command(
        store: Path, moment: str) -> None:
    """`9999-12-31T23:59:59-23:59` is a valid ISO time whose UTC moment is past the last day
    a datetime holds: reading it raised OverflowError, so one hand-written or pushed
    `expires` made every command fail, and `--since`/`--expires` gave a traceback."""
    folder = store / "alpha" / "notes" / "fact"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "far.md").write_text(f"---\nid: farexpiry0000001\ntype: fact\nexpires: {moment}\n"
                                   "---\nThe wombat cache handles sessions.\n")
    _git(store, "add", "-A")
    _git(store, "commit", "-qm", "a hand-made note")
    found = run_memctl("search", "wombat", "--json", store=store, project="alpha")
    assert found.exit_code == 0, found.stderr
    assert [hit["id"] for hit in json.loads(found.stdout)] == ["farexpiry0000001"]
    report = json.loads(run_memctl("health", "--json", store=store, project="alpha").stdout)
    [warned] = report["field_warnings"]
    assert warned["id"] == "farexpiry0000001"
    assert warned["warnings"] == [f"expires {moment!r} is not a date or time; read as no expiry"]
    for args in (["search", "x", "--since", moment], ["add", "zz", "--expires", moment]):
        done = run_memctl(*args, store=store, project="alpha")
        one_line_error(done, 2)
