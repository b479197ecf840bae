"""`memctl episode`: what happened in one task, as a Markdown file that search finds."""

from __future__ import annotations

import re

import pytest
from conftest import git, run_memctl, tree_snapshot
from hypothesis import given, settings
from hypothesis import strategies as st

from memctl.core import sections
from memctl.core.arguments import outcome as validate_outcome
from memctl.core.errors import UsageError
from memctl.memory.episodes import Step, parse_episode, parse_step, render_episode

NOW = {"MEMCTL_NOW": "2026-11-30T12:00:00Z"}


def test_add_list_show(cli, store_path):
    note = cli.ok("add", "The blog database is PostgreSQL 16", "--json").json()
    data = cli.ok(
        "episode",
        "add",
        "--goal",
        "Migrate the blog to PostgreSQL 16",
        "--step",
        "dump MySQL => 2.1 GB dump",
        "--step",
        "load into pg => 3 tables failed",
        "--step",
        "fix collations",
        "--outcome",
        "partial",
        "--summary",
        "Collations differ.",
        "--link",
        note["id"][:8],
        "--tags",
        "db,migration",
        "--json",
        env=NOW,
    ).json()
    assert data["outcome"] == "partial"
    assert data["steps"] == [
        {"action": "dump MySQL", "result": "2.1 GB dump"},
        {"action": "load into pg", "result": "3 tables failed"},
        {"action": "fix collations", "result": ""},
    ]
    assert data["links"] == [note["id"]]  # a prefix is resolved to the full id
    assert data["path"].startswith("demo/episodes/2026-11/2026-11-30-migrate-the-blog")
    text = (store_path / data["path"]).read_text()
    assert "1. dump MySQL => 2.1 GB dump" in text
    assert note["id"] in text and "Collations differ." in text
    assert git(store_path, "status", "--porcelain") == ""

    listed = cli.ok("episode", "list", "--json").json()
    assert [e["id"] for e in listed] == [data["id"]]
    assert cli.ok("episode", "list", "--outcome", "failed", "--json").json() == []
    shown = cli.ok("episode", "show", data["id"][:10], "--json").json()
    assert shown["goal"] == "Migrate the blog to PostgreSQL 16"
    assert shown["steps"] == data["steps"]
    assert "Collations differ." in cli.ok("episode", "show", data["id"]).stdout


def test_outcome_is_required_and_checked(cli, store_path):
    result = cli("episode", "add", "--goal", "x", "--step", "a => b")
    assert result.exit_code == 2 and "--outcome" in result.stderr
    result = cli("episode", "add", "--goal", "x", "--outcome", "done")
    assert result.exit_code == 2 and "--outcome" in result.stderr
    assert not (store_path / "demo" / "episodes").exists()


def test_unknown_link_is_an_error_and_writes_nothing(cli, store_path):
    result = cli("episode", "add", "--goal", "x", "--outcome", "failed", "--link", "zzzzzzzz")
    assert result.exit_code == 1 and "zzzzzzzz" in result.stderr
    assert not (store_path / "demo" / "episodes").exists()


def test_episodes_are_searchable_and_notes_point_back(cli, store_path):
    from memctl.memory.notes import add_note
    from memctl.store import Store

    episode = cli.ok(
        "episode",
        "add",
        "--goal",
        "Tune the connection pool",
        "--outcome",
        "completed",
        "--step",
        "raise pool size to 20 => p95 latency halved",
        "--json",
    ).json()
    hits = cli.ok("search", "latency", "--json").json()
    assert any(h["id"] == episode["id"] for h in hits)
    hits = cli.ok("search", "连接池 OR pool", "--json").json()
    assert any(h["id"] == episode["id"] for h in hits)

    store = Store.open(store_path)
    result = add_note(
        store, "Pool size 20 halves p95 latency", project="demo", source_episode=episode["id"]
    )
    shown = cli.ok("show", result.id, "--json").json()
    assert shown["source_episode"] == episode["id"]


def test_other_projects_and_all_projects(cli):
    cli.ok("episode", "add", "--goal", "a", "--outcome", "completed")
    cli.ok("episode", "add", "--goal", "b", "--outcome", "failed", "--project", "other")
    assert [e["goal"] for e in cli.ok("episode", "list", "--json").json()] == ["a"]
    goals = {e["goal"] for e in cli.ok("episode", "list", "--all-projects", "--json").json()}
    assert goals == {"a", "b"}


def test_a_hand_written_episode_is_read(cli, store_path):
    folder = store_path / "demo" / "episodes" / "2026-10"
    folder.mkdir(parents=True)
    (folder / "by-hand.md").write_text(
        "# Rewrote the importer\n\n## Steps\n"
        "- read the zip spec -> slow\n1. stream entries => fast\n"
    )
    listed = cli.ok("episode", "list", "--json").json()
    assert listed[0]["goal"] == "Rewrote the importer"
    assert listed[0]["steps"][-1] == {"action": "stream entries", "result": "fast"}


def test_installed_command(store_path):
    result = run_memctl(
        "episode", "add", "--goal", "smoke", "--outcome", "in_progress", "--json", store=store_path
    )
    assert result.exit_code == 0, result.stderr
    assert '"outcome": "in_progress"' in result.stdout


def test_pure_format_round_trips():
    text = render_episode(
        episode_id="01abc",
        project="p",
        goal="Goal: with colon",
        outcome="failed",
        created="2026-11-30T12:00:00.000Z",
        steps=[Step("a", "b"), Step("c")],
        summary="s",
        links=[("01note", "A note")],
        tags=["x"],
        source="cli",
        template=(
            "# {{goal}}\n\n## Steps\n{{steps}}\n\n## Summary\n{{summary}}\n\n"
            "## Linked notes\n{{links}}\n"
        ),
    )
    episode = parse_episode(text, "p/episodes/2026-11/x-01abc.md", "p")
    assert (episode.goal, episode.outcome, episode.summary) == ("Goal: with colon", "failed", "s")
    assert episode.steps == [Step("a", "b"), Step("c")]
    assert episode.links == ["01note"]
    assert parse_step("x → y") == Step("x", "y")
    assert validate_outcome("In-Progress") == "in_progress"
    with pytest.raises(UsageError):
        validate_outcome(None)
    with pytest.raises(UsageError):
        parse_step(" => result only")


# --- finishing and changing an episode; one way to show it -----------------------------------


def _in_progress(cli, **extra) -> dict:
    return cli.ok("episode", "add", "--goal", "Move comments to the new schema", "--outcome",
                  "in_progress", "--step", "write the migration => ran in 40 s on a copy",
                  "--json", **extra).json()


def test_finish_an_in_progress_episode(cli, store_path):
    from conftest import tree_snapshot

    first = cli.ok("add", "The comments table has 1.2M rows", "--json").json()
    second = cli.ok("add", "Backfills run at night", "--json").json()
    started = _in_progress(cli)
    path = store_path / started["path"]
    # A person adds a line of their own; finishing keeps it byte for byte.
    path.write_text(path.read_text().replace("## Steps\n", "## Steps\n<!-- keep me -->\n"))
    git(store_path, "commit", "-qam", "hand edit")
    commits = int(git(store_path, "rev-list", "--count", "HEAD"))

    done = cli.ok("episode", "finish", started["id"][:13], "--outcome", "completed",
                  "--summary", "Counts were 3 rows off; a re-run fixed them.",
                  "--step", "backfill counts => 3 rows off, fixed by a re-run",
                  "--link", first["id"][:13], "--link", second["id"], "--tags", "db", "--json").json()
    assert done["outcome"] == "completed"
    assert done["steps"] == [
        {"action": "write the migration", "result": "ran in 40 s on a copy"},
        {"action": "backfill counts", "result": "3 rows off, fixed by a re-run"},
    ]
    assert done["summary"] == "Counts were 3 rows off; a re-run fixed them."
    assert done["links"] == [first["id"], second["id"]] and done["tags"] == ["db"]
    assert done["created"] == started["created"] and done["updated"] > started["updated"]
    text = path.read_text()
    assert "## Steps\n<!-- keep me -->\n1. write the migration => ran in 40 s on a copy\n" \
           "2. backfill counts => 3 rows off, fixed by a re-run\n" in text
    assert "## Outcome\ncompleted\n" in text and "in_progress" not in text
    assert text.index("## Outcome") < text.index("## Summary") < text.index("## Linked notes")
    assert int(git(store_path, "rev-list", "--count", "HEAD")) == commits + 1
    assert git(store_path, "status", "--porcelain") == ""
    assert [e["id"] for e in cli.ok("episode", "list", "--outcome", "completed", "--json").json()] \
        == [started["id"]]
    assert started["id"] in {h["id"] for h in cli.ok("search", "re-run", "--json").json()}

    # Once ended, `finish` is refused (one line, nothing changes); `update` changes it.
    before = tree_snapshot(store_path)
    again = cli("episode", "finish", started["id"], "--outcome", "failed")
    assert again.exit_code == 1 and again.error.count("\n") == 1
    assert "already ended (completed)" in again.stderr and "`memctl episode update`" in again.stderr
    assert tree_snapshot(store_path) == before
    changed = cli.ok("episode", "update", started["id"], "--outcome", "partial", "--json").json()
    assert changed["outcome"] == "partial" and changed["steps"] == done["steps"]


def test_finish_and_update_refuse_bad_input_and_change_nothing(cli, store_path):
    from conftest import tree_snapshot

    started = _in_progress(cli)
    before = tree_snapshot(store_path)
    for args, code, words in (
        (["episode", "finish", started["id"]], 2, "--outcome"),
        (["episode", "finish", started["id"], "--outcome", "in_progress"], 2, "--outcome"),
        (["episode", "update", started["id"]], 2, "nothing to change"),
        (["episode", "finish", "zzzzzzzz", "--outcome", "completed"], 1, "no episode"),
        (["episode", "finish", started["id"], "--outcome", "completed", "--link", "zzzzzzzz"],
         1, "zzzzzzzz"),
        (["episode", "update", started["id"], "--step", " => only a result"], 2, "--step"),
    ):
        result = cli(*args)
        assert result.exit_code == code and words in result.stderr, (args, result.stderr)
        assert result.stderr.startswith("error:") and "Traceback" not in result.stderr
        if code == 1:
            assert result.error.count("\n") == 1, result.stderr
    assert tree_snapshot(store_path) == before
    assert cli.ok("episode", "show", started["id"], "--json").json()["outcome"] == "in_progress"


def test_show_and_episode_show_print_an_episode_the_same_way(cli):
    started = _in_progress(cli)
    for fmt in ([], ["--json"]):
        one = cli.ok("show", started["id"], *fmt)
        other = cli.ok("episode", "show", started["id"], *fmt)
        assert (one.stdout, one.stderr) == (other.stdout, other.stderr)
    plain = cli.ok("show", started["id"])
    assert plain.stdout.startswith("# Move comments to the new schema\n\n## Steps\n1. write the")
    assert started["id"] in plain.stderr and "in_progress" in plain.stderr


def test_edit_of_an_episode_says_what_changes_it(cli, store_path):
    from conftest import tree_snapshot

    started = _in_progress(cli)
    before = tree_snapshot(store_path)
    result = cli("edit", started["id"], env={"EDITOR": "true"})
    assert result.exit_code == 1 and result.error.count("\n") == 1
    assert "is an episode, not a note" in result.stderr and "`memctl episode update`" in result.stderr
    assert started["path"] in result.stderr
    assert tree_snapshot(store_path) == before


def test_mcp_update_episode_finishes_one(store_path):
    pytest.importorskip("mcp.server.mcpserver")
    from test_mcp import run_session, text_of

    started = run_memctl("episode", "add", "--goal", "Ship v1", "--outcome", "in_progress",
                         "--json", store=store_path).json()

    async def script(session):
        refused = await session.call_tool("update_episode", {"id": started["id"], "finish": True})
        assert refused.is_error and "`outcome`" in refused.content[0].text
        done = await session.call_tool("update_episode", {
            "id": started["id"], "finish": True, "outcome": "completed",
            "steps": ["tag => v1.0.0 pushed"], "summary": "Released."})
        return text_of(done)

    assert started["id"] in run_session(store_path, script)
    finished = run_memctl("episode", "show", started["id"], "--json", store=store_path).json()
    assert finished["outcome"] == "completed" and finished["summary"] == "Released."
    assert finished["steps"] == [{"action": "tag", "result": "v1.0.0 pushed"}]


def test_show_of_an_ambiguous_prefix_says_so_and_never_picks_the_episode(sample_store):
    # `01` starts every id of the sample store, one episode's among them: `show` must say
    # the prefix is ambiguous, as `forget` does, not show that episode.
    for ref in ("01", "0"):
        shown = run_memctl("show", ref, store=sample_store)
        assert shown.exit_code == 1, shown.stdout
        assert shown.stderr.startswith(f"error: id prefix {ref!r} is ambiguous: ")
        assert shown.stdout == ""
    episode = run_memctl("episode", "list", "--all-projects", "--json",
                         store=sample_store).json()[0]
    assert run_memctl("show", episode["id"], store=sample_store).exit_code == 0


def test_a_summary_with_a_heading_line_stays_the_summary(cli, store_path):
    made = cli.ok("episode", "add", "--goal", "Ship threads", "--outcome", "completed",
                  "--summary", "Went fine.\n## Outcome\nfailed", "--json", env=NOW).json()
    shown = cli.ok("episode", "show", made["id"], "--json").json()
    assert shown["outcome"] == "completed"
    assert shown["summary"] == "Went fine.\n## Outcome\nfailed"
    cli.ok("episode", "update", made["id"], "--summary", "Done.\n\n## Outcome\nfailed\n```",
           env=NOW)
    shown = cli.ok("episode", "show", made["id"], "--json").json()
    assert shown["summary"] == "Done.\n\n## Outcome\nfailed\n```"
    text = (store_path / shown["path"]).read_text(encoding="utf-8")
    assert [line for line in text.splitlines() if line.startswith("#")] == [
        "# Ship threads", "## Outcome", "## Summary"]
    assert parse_episode(text, shown["path"], "demo").outcome == "completed"


@settings(max_examples=150, deadline=None)
@given(summary=st.lists(st.sampled_from([
    "## Outcome", "failed", "## Summary", "# Goal", "```", "~~~", "<!-- c -->", "",
    "\\## escaped", "- item", "plain words", "  ### Steps"]), min_size=1, max_size=6).map(
    "\n".join).filter(str.strip))
def test_any_summary_reads_back_as_given_and_leaves_the_other_sections(summary: str) -> None:
    from memctl.memory.episodes import _splice_section

    text = render_episode(
        episode_id="ep1", project="demo", goal="Ship threads", outcome="completed",
        created="2026-11-30T12:00:00.000Z", steps=[Step("write it", "done")], summary=summary,
        links=[], tags=[], source="test", template="# {{goal}}\n\n## Steps\n{{steps}}\n\n"
        "## Outcome\n{{outcome}}\n\n## Summary\n{{summary}}\n")
    made = parse_episode(text, "demo/episodes/2026-11/ep1.md", "demo")
    # (a new episode's body has no runs of blank lines: several read as one)
    assert made.summary == re.sub(r"\n{3,}", "\n\n", summary.strip())
    assert made.outcome == "completed"
    assert [s.action for s in made.steps] == ["write it"]
    body = _splice_section(made.body, "summary", ["x"], replace=True)
    again = _splice_section(body, "summary", sections.text_lines(summary, keep_blank=True),
                            replace=True)
    assert parse_episode(text.replace(made.body, again), "x.md", "demo").summary == summary.strip()
    headings = [h.title for h in sections.parse_headings(made.body)]
    assert headings == ["Ship threads", "Steps", "Outcome", "Summary"]


def test_mcp_a_focus_or_summary_with_heading_lines_keeps_every_section(store_path):
    """Through MCP: a focus holding '## Done' never hides the real done items from the
    episode that archives them, and a summary holding '## Outcome' is no second outcome."""
    pytest.importorskip("mcp.server.mcpserver")
    from test_mcp import run_session

    async def script(session):
        for action, text in (("next", "Wrote migration 0061"), ("done", "1"),
                             ("focus", "Ship threads\n## Done\n- nothing yet")):
            said = await session.call_tool("update_scratchpad", {"action": action, "text": text,
                                                                 "project": "demo"})
            assert not said.is_error, said.content
        shown = await session.call_tool("update_scratchpad", {"action": "show",
                                                              "project": "demo"})
        cleared = await session.call_tool("update_scratchpad", {
            "action": "clear", "archive": True, "outcome": "partial", "project": "demo"})
        assert not cleared.is_error, cleared.content
        episode = cleared.structured_content["episode"]["id"]
        updated = await session.call_tool("update_episode", {
            "id": episode, "summary": "Done.\n\n## Outcome\nfailed"})
        assert not updated.is_error, updated.content
        return shown.structured_content, episode

    shown, episode = run_session(store_path, script)
    assert shown["focus"] == "Ship threads\n## Done\n- nothing yet"
    assert shown["done"] == ["Wrote migration 0061"]
    found = run_memctl("episode", "show", episode, "--json", store=store_path).json()
    assert [step["action"] for step in found["steps"]] == ["Wrote migration 0061"]
    assert found["outcome"] == "partial" and found["summary"] == "Done.\n\n## Outcome\nfailed"
    text = (store_path / found["path"]).read_text(encoding="utf-8")
    assert [line for line in text.splitlines() if line.startswith("## ")].count("## Outcome") == 1


def test_a_field_over_the_front_matter_limit_is_one_error_and_writes_nothing(cli, store_path):
    """A 70 KB goal would make front matter no reader accepts: one line saying the limit and
    what to shorten, exit 1, no traceback, the store as it was (docs/format.md, "Limits")."""
    before = tree_snapshot(store_path)
    result = cli("episode", "add", "--goal", "g" * 70_000, "--outcome", "completed")
    assert result.exit_code == 1, result.stderr
    assert result.stderr.startswith("error: ") and result.error.count("\n") == 1
    assert "64 KB" in result.stderr and "`goal`" in result.stderr
    assert "Traceback" not in result.stderr
    assert tree_snapshot(store_path) == before

    # Tags cannot reach the limit any more: at most 100 of at most 200 characters
    # (tests/test_episodes.py::test_tags_added_to_an_episode_never_pass_the_cap); a field
    # edit past it is refused by `set_fields` itself (tests/test_noteformat.py).


def test_tags_added_to_an_episode_never_pass_the_cap(cli, store_path):
    """Each `episode update --tags` takes up to 100 tags, and added them all to the file's:
    two calls wrote 120 tags, more than any reader takes. Now the union is refused as a
    note's is (arguments.merged_tags), in one line, the file unchanged."""
    started = cli.ok("episode", "add", "--goal", "tag the work", "--outcome", "in_progress",
                     "--json").json()
    first = ",".join(f"a{number}" for number in range(60))
    cli.ok("episode", "update", started["id"], "--tags", first)
    path = store_path / cli.ok("show", started["id"], "--json").json()["path"]
    before = path.read_bytes()
    refused = cli("episode", "update", started["id"], "--tags",
                  ",".join(f"b{number}" for number in range(60)))
    assert refused.exit_code == 1 and refused.stderr.startswith("error:"), refused.stderr
    assert "at most 100" in refused.stderr and str(path.relative_to(store_path)) in refused.stderr
    assert path.read_bytes() == before
    again = cli.ok("episode", "update", started["id"], "--tags", "a1,A2,b1", "--json").json()
    assert len(again["tags"]) == 61 and again["tags"][-1] == "b1"


def test_links_given_twice_are_kept_once_in_the_order_given(cli):
    """The links of an episode, by prefix or in full, each kept once where it first came
    (a set of the ids seen: a list scanned per link was quadratic in the links given)."""
    first = cli.ok("add", "The cache is Redis 7", "--json").json()["id"]
    second = cli.ok("add", "The queue is RabbitMQ", "--json").json()["id"]
    third = cli.ok("add", "The proxy is nginx", "--json").json()["id"]
    # Prefixes of 10 characters or more: the first 10 are the millisecond, so a shorter one
    # can also match the next note, made within the same 32 ms (memctl/core/ids.py).
    added = cli.ok("episode", "add", "--goal", "Move the cache", "--outcome", "completed",
                   "--link", second, "--link", first[:10], "--link", second[:11],
                   "--link", first, "--json", env=NOW).json()
    assert added["links"] == [second, first]
    updated = cli.ok("episode", "update", added["id"], "--link", first, "--link", third,
                     "--link", third[:10], "--json", env=NOW).json()
    assert updated["links"] == [second, first, third]


def test_a_link_to_another_episode_says_links_name_notes(cli):
    """`episode update EP1 --link EP2` said EP2 "is an episode, not a note: `memctl episode
    update` changes it", the very command that was run."""
    first = cli.ok("episode", "add", "--goal", "Fix the login", "--outcome", "completed",
                   "--json").json()["id"]
    second = cli.ok("episode", "add", "--goal", "Fix the logout", "--outcome", "completed",
                    "--json").json()["id"]
    for args in (["episode", "update", first, "--link", second],
                 ["episode", "add", "--goal", "x", "--outcome", "completed", "--link", second]):
        refused = cli(*args)
        assert refused.exit_code == 1
        assert "is an episode: a --link names a note the task produced or used" in refused.stderr
        assert "episode update` changes it" not in refused.stderr


def test_an_update_that_changes_nothing_makes_no_commit(cli, store_path):
    """`episode update ID --link X` of a note it already links (or a tag it has, the outcome
    it has) stamped `updated` and made a commit of that stamp alone."""
    note = cli.ok("add", "The deploy script lives in ops/deploy.sh", "--json").json()
    episode = cli.ok("episode", "add", "--goal", "Fix the deploy", "--outcome", "completed",
                     "--link", note["id"], "--tags", "ops", "--json").json()
    head = git(store_path, "rev-parse", "HEAD")
    before = (store_path / episode["path"]).read_text()
    for change in (["--link", note["id"]], ["--tags", "ops"], ["--outcome", "completed"]):
        cli.ok("episode", "update", episode["id"], *change)
        assert git(store_path, "rev-parse", "HEAD") == head, change
        assert (store_path / episode["path"]).read_text() == before, change
    cli.ok("episode", "update", episode["id"], "--outcome", "partial")
    assert git(store_path, "rev-parse", "HEAD") != head


def test_episode_finish_offers_only_the_outcomes_it_takes(cli) -> None:
    """`episode finish --help` listed `in_progress` among `--outcome`'s choices, which it
    refuses: an episode that finishes has ended."""
    shown = cli.ok("episode", "finish", "--help", env={"COLUMNS": "200"}).stdout
    choices = shown[shown.index("--outcome"):].split(">", 1)[0]
    assert "completed|partial|failed" in choices and "in_progress" not in choices, choices
