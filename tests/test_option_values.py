"""What people type for options and piped text: days by name (`--since yesterday`,
`--expires tomorrow`), an empty `--since`, and a byte order mark in front of piped text."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import Cli, git, run_memctl, tree_snapshot

# The suite's clock is pinned (tests/conftest.py); these moments are set per command so each
# test knows which UTC day "today" is, whatever the pinned day.
LATE_ON_THE_2ND = "2026-03-02T23:30:00.000Z"
EARLY_ON_THE_3RD = "2026-03-03T00:10:00.000Z"
LATE_ON_THE_3RD = "2026-03-03T22:00:00.000Z"
ON_THE_4TH = "2026-03-04T09:00:00.000Z"


def _titles(cli: Cli, *args: str, now: str) -> set[str]:
    return {note["title"] for note in cli.ok(*args, "--json", env={"MEMCTL_NOW": now}).json()}


def test_since_today_and_yesterday_start_at_the_utc_day(cli: Cli) -> None:
    for text, moment in (("written late on the second", LATE_ON_THE_2ND),
                         ("written early on the third", EARLY_ON_THE_3RD)):
        cli.ok("add", text, "--force", env={"MEMCTL_NOW": moment})
    # Late on the third, "today" starts at its midnight: the note of 00:10 counts, the one
    # of 23:30 the day before does not (a span of 24h would take both).
    assert _titles(cli, "list", "--since", "today", now=LATE_ON_THE_3RD) == {
        "written early on the third"}
    assert _titles(cli, "list", "--since", "Yesterday", now=LATE_ON_THE_3RD) == {
        "written late on the second", "written early on the third"}
    assert _titles(cli, "search", "written", "--since", "today", now=LATE_ON_THE_3RD) == {
        "written early on the third"}
    assert _titles(cli, "list", "--since", "today", now=ON_THE_4TH) == set()


def test_expires_tomorrow_is_written_as_tomorrows_date(cli: Cli) -> None:
    added = cli.ok("add", "the staging box is lent to the QA team", "--expires", "tomorrow",
                   "--json", env={"MEMCTL_NOW": LATE_ON_THE_3RD}).json()
    assert cli.ok("show", added["id"], "--json").json()["expires"] == "2026-03-04"
    assert _titles(cli, "search", "staging", now=LATE_ON_THE_3RD) == {
        "the staging box is lent to the QA team"}
    assert _titles(cli, "search", "staging", now=ON_THE_4TH) == set()  # expired


@pytest.mark.parametrize(("args", "words"), [
    (["add", "x", "--expires", "today"], "not in the future"),
    (["add", "x", "--expires", "yesterday"], "not in the future"),
    (["add", "x", "--expires", "next week"], "nor tomorrow"),
    (["list", "--since", "last week"], "nor today or yesterday"),
    # Empty: `list` used to read it as no --since at all, where `search` refused it.
    (["list", "--since", ""], "'' is neither a date"),
    (["search", "x", "--since", ""], "'' is neither a date"),
])
def test_a_day_or_span_memctl_cannot_read_is_bad_usage(cli: Cli, args: list[str],
                                                        words: str) -> None:
    before = tree_snapshot(cli.store)
    commits = git(cli.store, "rev-list", "--count", "HEAD")
    result = cli(*args, env={"MEMCTL_NOW": LATE_ON_THE_3RD})
    assert result.exit_code == 2, result.stderr
    assert result.error.count("\n") == 1 and result.stderr.startswith("error: invalid value for --")
    assert words in result.stderr
    assert tree_snapshot(cli.store) == before
    assert git(cli.store, "rev-list", "--count", "HEAD") == commits


def test_a_byte_order_mark_in_front_of_piped_text_is_no_part_of_the_note(
        store_path: Path) -> None:
    # A file saved by Notepad and piped to `memctl add -`: the mark used to start the title.
    added = run_memctl("add", "-", "--json", store=store_path,
                       input="\ufeffThe VPN needs the second factor\n")
    assert added.exit_code == 0, added.stderr
    note = run_memctl("show", added.json()["id"], "--json", store=store_path).json()
    assert note["title"] == "The VPN needs the second factor"
    assert "\ufeff" not in note["body"]
    assert "\ufeff" not in (store_path / note["path"]).read_text(encoding="utf-8")
    found = run_memctl("search", "VPN", "--json", store=store_path).json()
    assert [hit["id"] for hit in found] == [note["id"]]


@pytest.mark.parametrize("command", [["add", "Deploys need a green build"],
                                     ["project", "show"],
                                     ["project", "add", "decisions", "Kysely for new queries"]])
def test_global_beside_another_project_is_bad_usage_not_one_of_the_two(cli, command):
    """`add --global --project p` wrote to global and dropped `--project` without a word."""
    refused = cli(*command, "--global", "--project", "blog")
    assert refused.exit_code == 2, refused.stderr
    assert "error: --global and --project 'blog' name two scopes: give one" in refused.stderr
    assert cli(*command, "--global", "--project", "global").exit_code == 0


@pytest.mark.parametrize("empty", ["", "  "])
def test_an_empty_memctl_project_is_bad_usage_and_writes_nothing(store_path: Path,
                                                                  empty: str) -> None:
    """`MEMCTL_PROJECT="$PROJECT"` with PROJECT unset: the note went to the project of the
    folder the command ran in (a repository's), where an empty MEMCTL_STORE is refused."""
    before = tree_snapshot(store_path)
    for args in (("add", "A note for some project"), ("search", "note"), ("recall",)):
        result = run_memctl(*args, store=store_path, project=empty)
        assert result.exit_code == 2, (args, result.stderr)
        assert result.stderr.count("\n") == 1 and "MEMCTL_PROJECT is set but empty" in result.stderr
    assert tree_snapshot(store_path) == before


def test_an_error_quoting_a_line_break_stays_one_line(tmp_path: Path) -> None:
    """A store path holding a line break gave a two-line error: the break is written `\\n`."""
    store = tmp_path / "two\nlines"
    result = run_memctl("search", "x", store=store)
    assert result.exit_code == 1 and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("error: ") and "two\\nlines" in result.stderr
