"""`memctl search` answered without typer: the same answers, errors and exit codes as the
typer app, and everything the fast path does not fully understand handed over to it."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_memctl

from memctl.cli.fast import (
    ADD_FLAGS,
    ADD_VALUES,
    SEARCH_FLAGS,
    SEARCH_VALUES,
    parse_add,
    parse_search,
    parse_show,
)

DEFAULTS = {"project": None, "all_projects": False, "types": [], "tags": [], "since": None,
            "limit": None, "include_stale": False, "explain": False, "json_output": False}


@pytest.mark.parametrize(("argv", "store", "changes"), [
    (["search", "redis"], None, {}),
    (["--store", "/s", "search", "redis", "--json"], "/s", {"json_output": True}),
    (["--store=/s", "search", "-a", "redis"], "/s", {"all_projects": True}),
    (["search", "redis", "-p", "blog", "--project", "shop"], None, {"project": "shop"}),
    (["search", "--type", " Fact ", "-t", "episode", "redis"], None,
     {"types": ["fact", "episode"]}),
    (["search", "redis", "--tag", "a", "--tag=b", "--since", "7d", "-n", "5"], None,
     {"tags": ["a", "b"], "since": "7d", "limit": 5}),
    (["search", "--include-stale", "redis", "--explain", "--limit=3"], None,
     {"include_stale": True, "explain": True, "limit": 3}),
])
def test_what_the_fast_path_understands(argv: list[str], store: str | None,
                                        changes: dict[str, object]) -> None:
    assert parse_search(argv) == (store, {**DEFAULTS, **changes, "query": "redis"})


@pytest.mark.parametrize("argv", [
    [], ["list"], ["search"], ["search", "--help"], ["search", "-h"], ["--help", "search"],
    ["search", "a", "b"], ["search", "--", "-word"], ["search", "-n5", "x"],
    ["search", "x", "-word"], ["search", "-ap", "blog", "-word"],
    ["search", "x", "--limit", "0"], ["search", "x", "--limit", "ten"],
    ["search", "x", "--type", "banana"], ["search", "x", "--project", ".hidden"],
    ["search", "x", "--project"], ["search", "x", "--tag", "-y"], ["search", "x", "--jsn"],
    ["search", "x", "--json=yes"], ["--store", "search", "x"], ["--verbose", "search", "x"],
    ["search", "x", "-ap", "blog"],
])
def test_anything_else_goes_to_the_typer_app(argv: list[str]) -> None:
    assert parse_search(argv) is None


@pytest.mark.parametrize(("argv", "changes"), [
    (["search", "-mysql"], {}),
    (["search", "-mysql", "--json", "-n", "3"], {"json_output": True, "limit": 3}),
    (["search", "-a", "-postgres"], {"all_projects": True}),  # `-p ostgres` to click
    (["search", "-nginx"], {}),  # `-n ginx` to click
    (["search", "-5"], {}),
])
def test_a_query_that_starts_with_a_dash_is_the_query(argv: list[str],
                                                      changes: dict[str, object]) -> None:
    query = next(token for token in argv[1:] if token not in ("-a", "--json", "-n", "3"))
    assert parse_search(argv) == (None, {**DEFAULTS, **changes, "query": query})


@pytest.mark.parametrize(("args", "expected"), [
    (["-mysql"], ["--", "-mysql"]),
    (["-mysql", "--json", "-p", "blog"], ["--json", "-p", "blog", "--", "-mysql"]),
    (["--tag", "-old", "-mysql"], ["--tag", "-old", "--", "-mysql"]),  # a value stays a value
    (["-ap", "blog", "-mysql"], ["-ap", "blog", "--", "-mysql"]),
    (["-mysql", "--", "-x"], ["--", "-mysql", "-x"]),
    (["-a", "-n5", "redis"], ["-a", "-n5", "redis"]),  # nothing to move: unchanged
    (["--", "-mysql"], ["--", "-mysql"]),
])
def test_the_typer_command_reads_the_same_words_as_the_query(args: list[str],
                                                              expected: list[str]) -> None:
    from memctl.cli.fast import query_words_last

    assert query_words_last(args) == expected


@pytest.mark.parametrize("fast", ["0", "1"])
def test_search_for_an_exclusion_alone_from_both_parsers(cli, fast: str) -> None:
    cli.ok("add", "The blog backend uses PostgreSQL 16")
    cli.ok("add", "The legacy shop still runs on MySQL 5.7")
    env = {"MEMCTL_NO_FAST_PATH": "0" if fast == "1" else "1"}
    for args in (["search", "-mysql", "--json"], ["search", "--json", "--", "-mysql"]):
        found = run_memctl(*args, store=cli.store, env=env)
        assert found.exit_code == 0, found.stderr
        assert [hit["title"] for hit in found.json()] == ["The blog backend uses PostgreSQL 16"]
    typer_app = cli("search", "-mysql", "--json")  # in-process: the typer command itself
    assert typer_app.exit_code == 0, typer_app.stderr
    assert [hit["title"] for hit in typer_app.json()] == ["The blog backend uses PostgreSQL 16"]
    second = run_memctl("search", "postgres", "-mysql", store=cli.store, env=env)
    assert second.exit_code == 2 and "-mysql" in second.stderr  # one query: quote it whole


def test_the_fast_path_knows_exactly_the_options_of_the_typer_command() -> None:
    """Same spellings, same kind (flag, value, repeatable): the two parsers cannot drift."""
    import typer.main

    from memctl.cli.app import app

    command = typer.main.get_command(app).commands["search"]  # type: ignore[attr-defined]
    declared: dict[str, tuple[bool, bool]] = {}
    for param in command.params:
        if param.param_type_name != "option":
            continue
        for spelling in (*param.opts, *param.secondary_opts):
            declared[spelling] = (bool(param.is_flag), bool(param.multiple))
    declared.pop("--help", None)
    declared.pop("-h", None)
    ours = {spelling: (True, False) for spelling in SEARCH_FLAGS}
    ours.update({spelling: (False, SEARCH_VALUES[spelling] in ("types", "tags"))
                 for spelling in SEARCH_VALUES})
    assert ours == declared


CASES = [
    ["search", "Kysely", "--json"],
    ["search", "-kysely", "--json", "-t", "decision"],
    ["search", "Kysely"],
    ["search", "数据库", "--all-projects", "--json", "--explain"],
    ["search", "postgress", "--json"],  # fuzzy fallback
    ["search", "deploy*", "-t", "decision", "--limit", "2", "--json"],
    ["search", "tag:database", "--project", "blog-backend", "--json"],
    ["search", "nothing-like-this-anywhere"],
    ["search", "x", "--since", "not-a-date"],  # an error of the core: exit 2 from both
    ["search", '"unclosed'],
    ["search", "x", "--type", "banana"],  # handed over: typer's usage error
    ["--store", "/nonexistent/store", "search", "x"],
]


@pytest.mark.parametrize("args", CASES, ids=[" ".join(case) for case in CASES])
def test_answers_are_the_typer_apps_byte_for_byte(sample_store: Path, args: list[str]) -> None:
    env = {"COLUMNS": "120"}
    fast = run_memctl(*args, store=sample_store, project="blog-backend", env=env)
    slow = run_memctl(*args, store=sample_store, project="blog-backend",
                      env={**env, "MEMCTL_NO_FAST_PATH": "1"})
    assert (fast.exit_code, fast.stderr) == (slow.exit_code, slow.stderr)
    if "--json" in args:
        # Scores move with the clock (recency): equal up to the seconds between the runs.
        assert fast.exit_code == 0
        fast_hits, slow_hits = json.loads(fast.stdout), json.loads(slow.stdout)
        assert [_timeless(hit) for hit in fast_hits] == [_timeless(hit) for hit in slow_hits]
        assert [hit["score"] for hit in fast_hits] == pytest.approx(
            [hit["score"] for hit in slow_hits], rel=1e-4)
    else:
        assert fast.stdout == slow.stdout


def _timeless(hit: dict[str, object]) -> dict[str, object]:
    explain = dict(hit.get("explain") or {})  # type: ignore[call-overload]
    for key in ("recency_factor", "age_days"):
        explain.pop(key, None)
    return {**hit, "score": None, "explain": explain}


def test_a_search_never_imports_typer(sample_store: Path) -> None:
    probe = (
        "import sys, atexit\n"
        "atexit.register(lambda: sys.stderr.write('typer loaded: %s\\n' % ('typer' in sys.modules)))\n"
        f"sys.argv = ['memctl', '--store', {str(sample_store)!r}, 'search', 'Kysely', '--json']\n"
        "from memctl.cli import main\n"
        "main()\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          env={"MEMCTL_PROJECT": "blog-backend", "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert "Kysely" in done.stdout
    assert "typer loaded: False" in done.stderr


# --- `memctl show` and `memctl add` -------------------------------------------------------


@pytest.mark.parametrize(("argv", "expected"), [
    (["show", "01abc"], (None, "01abc", False)),
    (["show", "01abc", "--json"], (None, "01abc", True)),
    (["--store", "/s", "show", "--json", "01abc"], ("/s", "01abc", True)),
    (["--store=/s", "show", "01abc"], ("/s", "01abc", False)),
    (["show"], None), (["show", "--help"], None), (["show", "-h"], None),
    (["show", "a", "b"], None), (["show", "--", "a"], None), (["show", "a", "--jsn"], None),
    (["show", "a", "--json", "--json"], None), (["search", "show"], None),
    (["--store", "show", "a"], None), (["--verbose", "show", "a"], None),
])
def test_what_the_fast_path_understands_of_show(argv: list[str], expected: object) -> None:
    assert parse_show(argv) == expected


@pytest.mark.parametrize(("argv", "store", "expected"), [
    (["add", "Use PostgreSQL 16"], None, {}),
    (["add", "-"], None, {"text": "-"}),
    (["--store", "/s", "add", "--type", "Decision", "x", "--json", "-g"], "/s",
     {"text": "x", "note_type": "decision", "json_output": True, "global_scope": True}),
    (["add", "x", "-t", "rule", "-p", "blog", "--importance=7", "--tags", "a,b"], None,
     {"text": "x", "note_type": "rule", "project": "blog", "importance": 7, "tags": "a,b"}),
    (["add", "x", "--subject", "api", "--predicate=rate-limit", "--expires", "30d",
      "--corrects", "01abc", "--source-episode", "01def", "--force", "--allow-secret"], None,
     {"text": "x", "subject": "api", "predicate": "rate-limit", "expires": "30d",
      "corrects": "01abc", "source_episode": "01def", "force": True, "allow_secret": True}),
    (["add", "x", "-i", "3", "-i", "9"], None, {"text": "x", "importance": 9}),  # the last
])
def test_what_the_fast_path_understands_of_add(argv: list[str], store: str | None,
                                               expected: dict[str, object]) -> None:
    assert parse_add(argv) == (store, {"text": "Use PostgreSQL 16", **expected})


@pytest.mark.parametrize("argv", [
    ["add"], ["add", "--help"], ["add", "-h"], ["add", "a", "b"], ["add", "--", "-x"],
    ["add", "-x"], ["add", "x", "--type", "banana"], ["add", "x", "--type", " fact "],
    ["add", "x", "--importance", "0"], ["add", "x", "-i", "ten"], ["add", "x", "-i", "+5"],
    ["add", "x", "--project", ".hidden"], ["add", "x", "--tags", "-a"], ["add", "x", "--tags"],
    ["add", "x", "-gt", "rule"], ["add", "x", "--jsn"], ["add", "x", "--json=yes"],
    ["show", "add"], ["search", "add"], ["--store", "add", "x"],
])
def test_anything_else_of_add_goes_to_the_typer_app(argv: list[str]) -> None:
    assert parse_add(argv) is None


@pytest.mark.parametrize(("command", "flags", "values"), [
    ("add", ADD_FLAGS, ADD_VALUES), ("show", {"--json": "json_output"}, {})])
def test_the_fast_path_knows_exactly_the_options_of_add_and_show(
        command: str, flags: dict[str, str], values: dict[str, str]) -> None:
    """Same spellings, same kind (flag or value) as the typer commands: no drift."""
    import typer.main

    from memctl.cli.app import app

    typer_command = typer.main.get_command(app).commands[command]  # type: ignore[attr-defined]
    declared = {spelling: bool(param.is_flag) for param in typer_command.params
                if param.param_type_name == "option"
                for spelling in (*param.opts, *param.secondary_opts)}
    declared.pop("--help", None)
    declared.pop("-h", None)
    assert {**dict.fromkeys(flags, True), **dict.fromkeys(values, False)} == declared


_IDS = re.compile(r"\b01[0-9a-hjkmnp-tv-z]{14}\b")


def _ids_out(text: str) -> str:
    return _IDS.sub("<id>", text)


ADD_CASES = [
    ["add", "The blog backend uses PostgreSQL 16; no ORM.", "--json"],
    ["add", "The blog backend uses PostgreSQL 16, no ORM!"],  # merged into the first
    ["add", "The blog backend uses PostgreSQL 15; no ORM.", "-t", "DECISION"],  # similar
    ["add", "Deploys go through the staging cluster first", "-g", "--tags", "ops,deploy",
     "--importance", "8", "--json"],
    ["add", "The API allows 100 requests a minute", "--subject", "api", "--predicate", "rate"],
    ["add", "The API allows 200 requests a minute", "--subject", "api", "--predicate", "rate"],
    ["add", "token ghp_0123456789abcdefghijklmnopqrstuvwxyz01"],  # a secret: refused, exit 1
    ["add", "   "],  # an error of the core: exit 2 from both
    ["add", "x", "--importance", "11"],  # handed over: typer's usage error
    ["add", "x", "--expires", "yesterday"],
]


def test_add_and_show_answer_as_the_typer_app(tmp_path: Path) -> None:
    """The same commands on two copies of a store, one through the fast path and one through
    the typer app: the same output (ids aside: they are made anew), exit codes and notes."""
    from memctl.store import Store

    stores = {}
    for name in ("fast", "slow"):
        stores[name] = tmp_path / name
        Store.init(stores[name])
    env = {"fast": {}, "slow": {"MEMCTL_NO_FAST_PATH": "1"}}
    for args in ADD_CASES:
        done = {name: run_memctl(*args, store=stores[name], project="blog", env=env[name])
                for name in stores}
        assert done["fast"].exit_code == done["slow"].exit_code, (args, done["fast"].stderr)
        assert _ids_out(done["fast"].stdout) == _ids_out(done["slow"].stdout), args
        assert _ids_out(done["fast"].stderr) == _ids_out(done["slow"].stderr), args
    listed = {name: run_memctl("list", "--json", "--all-projects", store=stores[name]).json()
              for name in stores}
    assert [(row["title"], row["importance"], row["tags"]) for row in listed["fast"]] == \
        [(row["title"], row["importance"], row["tags"]) for row in listed["slow"]]
    first = listed["fast"][-1]["id"]
    for args in (["show", first, "--json"], ["show", first], ["show", first[:10]],
                 ["show", "zzzzzzzz"], ["show", "../x"]):
        fast = run_memctl(*args, store=stores["fast"], env={"COLUMNS": "100"})
        slow = run_memctl(*args, store=stores["fast"],
                          env={"COLUMNS": "100", "MEMCTL_NO_FAST_PATH": "1"})
        assert (fast.exit_code, fast.stdout, fast.stderr) == \
            (slow.exit_code, slow.stdout, slow.stderr), args


def test_add_and_show_never_import_typer(sample_store: Path) -> None:
    probe = (
        "import sys, atexit\n"
        "atexit.register(lambda: sys.stderr.write('typer loaded: %s\\n' % ('typer' in sys.modules)))\n"
        "sys.argv = ['memctl', *sys.argv[1:]]\n"
        "from memctl.cli import main\n"
        "main()\n"
    )
    env = {"MEMCTL_STORE": str(sample_store), "MEMCTL_PROJECT": "blog-backend",
           "PATH": "/usr/bin:/bin"}
    added = subprocess.run([sys.executable, "-c", probe, "add", "A probe note", "--json"],
                           capture_output=True, text=True, env=env)
    assert added.returncode == 0, added.stderr
    assert "typer loaded: False" in added.stderr
    note_id = json.loads(added.stdout)["id"]
    shown = subprocess.run([sys.executable, "-c", probe, "show", note_id],
                           capture_output=True, text=True, env=env)
    assert shown.returncode == 0, shown.stderr
    assert "A probe note" in shown.stdout and "typer loaded: False" in shown.stderr
