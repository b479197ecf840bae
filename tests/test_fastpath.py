"""`memctl search` answered without typer: the same answers, errors and exit codes as the
typer app, and everything the fast path does not fully understand handed over to it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_memctl

from memctl.cli.fast import SEARCH_FLAGS, SEARCH_VALUES, parse_search

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
