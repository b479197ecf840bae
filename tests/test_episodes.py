"""`memctl episode`: what happened in one task, as a Markdown file that search finds."""

from __future__ import annotations

import pytest
from conftest import git, run_memctl

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
