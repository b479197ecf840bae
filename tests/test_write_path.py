"""The write path agents pay for on every step (bench/bench_write.py): `add` commits with git's
plumbing (never making git look at every tracked file) and walks only what its checks read;
`show` reads the one file it names; a command line loads the commands of its own module."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import Cli, git, memctl_executable, run_memctl

from memctl.cli.commands import MODULE_OF, command_word
from memctl.disk import gitops
from memctl.index.db import ensure_fresh, open_index


def _stamp(store: Path, relpath: str) -> tuple[int, int]:
    info = os.stat(store / relpath)
    return info.st_mtime_ns, info.st_size


def _indexed_stamp(store: Path, relpath: str) -> tuple[int, int]:
    with open_index(store) as index:
        mtime, size, _digest = index.indexed_files()[relpath]
    return mtime, size


def _hand_edit(store: Path, relpath: str, old: str, new: str) -> None:
    path = store / relpath
    path.write_text(path.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")


# --- the commit ---------------------------------------------------------------------------------


def test_add_commits_without_git_looking_at_every_tracked_file(store_path: Path,
                                                               tmp_path: Path) -> None:
    """`git commit` first stats every tracked file (10k notes: half of a ~100 ms commit); the
    plumbing memctl uses stats only the files it commits, whatever the size of the store."""
    folder = store_path / "demo" / "notes" / "fact"
    folder.mkdir(parents=True)
    for number in range(150):
        (folder / f"n{number}.md").write_text(f"hand note {number} about topic{number}\n")
    git(store_path, "add", "-A")
    git(store_path, "commit", "-qm", "150 notes")
    trace = tmp_path / "trace2.json"
    result = run_memctl("add", "the gateway timeout is 30 s", "--json", store=store_path,
                        env={"GIT_TRACE2_EVENT": str(trace)})
    assert result.exit_code == 0, result.stderr
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    stats = sum(int(event["value"]) for event in events
                if event["event"] == "data" and event["key"].endswith("sum_lstat"))
    assert stats <= 5
    assert git(store_path, "status", "--porcelain") == ""
    assert git(store_path, "log", "-1", "--name-only", "--format=").split() == [result.json()["path"]]


def test_a_commit_is_the_one_git_commit_would_make(store_path: Path, cli: Cli) -> None:
    (store_path / "mine.txt").write_text("staged by the person\n")
    git(store_path, "add", "mine.txt")  # `git commit` takes what is staged: so does memctl
    added = cli.ok("add", "the cache is Redis 7", "--json").json()
    log = git(store_path, "log", "-1", "--format=%an <%ae>%n%cn <%ce>%n%s%n%P", "--name-only")
    who, committer, subject, parent, *files = [line for line in log.splitlines() if line]
    assert who == committer == "memctl-test <test@example.invalid>"  # the tests' identity
    assert subject == f"add fact {added['id']}: the cache is Redis 7"
    assert parent == git(store_path, "rev-parse", "HEAD~1").strip()
    assert sorted(files) == sorted([added["path"], "mine.txt"])
    assert git(store_path, "reflog", "-1", "--format=%gs").strip() == f"commit: {subject}"
    assert git(store_path, "status", "--porcelain") == ""
    assert gitops.commit_all(store_path, "nothing new", [added["path"]]) is None
    assert git(store_path, "log", "-1", "--format=%s").strip() == subject


def test_a_message_is_cleaned_as_git_commit_m_cleans_it() -> None:
    assert gitops.clean_message("\n\ntitle  \n\n\n\nline one\t\nline two\n\n") == \
        "title\n\nline one\nline two\n"
    assert gitops.clean_message("one line") == "one line\n"


def test_a_commit_another_git_made_meanwhile_is_never_dropped(
        store_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A person's `git commit` landing between memctl reading HEAD and moving it: memctl's
    update fails (the old HEAD is its condition), the person's commit stays, memctl's change
    stays staged and goes into the next commit."""
    real = gitops._head_and_tree

    def person_commits_meanwhile(root: Path) -> tuple[str | None, str | None]:
        found = real(root)
        (root / "theirs.txt").write_text("a person's file\n")
        subprocess.run(["git", "-C", str(root), "add", "theirs.txt"], check=True)
        subprocess.run(["git", "-C", str(root), "commit", "-qm", "a person's commit", "--",
                        "theirs.txt"], check=True)
        monkeypatch.setattr(gitops, "_head_and_tree", real)
        return found

    monkeypatch.setattr(gitops, "_head_and_tree", person_commits_meanwhile)
    (store_path / "global" / "ours.md").write_text("ours\n")
    with pytest.raises(gitops.GitError):
        gitops.commit_all(store_path, "ours", ["global/ours.md"])
    assert git(store_path, "log", "-1", "--format=%s").strip() == "a person's commit"
    assert git(store_path, "status", "--porcelain").splitlines() == ["A  global/ours.md"]
    assert gitops.commit_all(store_path, "ours again", ["global/ours.md"]) is not None
    assert git(store_path, "log", "-2", "--format=%s").split("\n")[:2] == [
        "ours again", "a person's commit"]


# --- what `add` and `show` walk ------------------------------------------------------------------


def test_show_reads_its_one_file_and_walks_the_store_only_when_that_file_moved(
        store_path: Path, cli: Cli) -> None:
    shown = cli.ok("add", "the queue is RabbitMQ", "--json").json()
    other = cli.ok("add", "the billing cron runs at 3am", "--project", "billing", "--json").json()
    ensure_fresh(store_path).close()
    _hand_edit(store_path, other["path"], "3am", "4am")  # elsewhere: show need not look
    _hand_edit(store_path, shown["path"], "RabbitMQ", "RabbitMQ 3.13")
    result = cli.ok("show", shown["id"], "--json").json()
    assert "RabbitMQ 3.13" in result["body"]
    assert _indexed_stamp(store_path, other["path"]) != _stamp(store_path, other["path"])
    # Moved by hand: the index's path is gone, so the store is walked, and the note found.
    moved = "demo/notes/decision/queue.md"
    (store_path / moved).parent.mkdir(parents=True)
    os.rename(store_path / shown["path"], store_path / moved)
    assert cli.ok("show", shown["id"], "--json").json()["path"] == moved
    assert cli.ok("show", shown["id"][:12], "--json").json()["path"] == moved  # a prefix


def test_add_walks_only_its_project_and_global(store_path: Path, cli: Cli) -> None:
    other = cli.ok("add", "the billing cron runs at 3am", "--project", "billing", "--json").json()
    ensure_fresh(store_path).close()
    _hand_edit(store_path, other["path"], "3am", "4am")
    hand = store_path / "demo" / "notes" / "fact" / "pool.md"
    hand.parent.mkdir(parents=True, exist_ok=True)
    hand.write_text("The connection pool size is 20 for the API workers.\n")  # dropped by hand
    added = cli.ok("add", "The connection pool size is 20 for the API workers.", "--json").json()
    assert added["action"] == "merged" and added["path"] == "demo/notes/fact/pool.md"
    assert _indexed_stamp(store_path, other["path"]) != _stamp(store_path, other["path"])


# --- one command module per command line ---------------------------------------------------------


def test_every_command_word_names_the_module_that_registers_it() -> None:
    from memctl.cli.app import app

    registered = {command.name or command.callback.__name__.replace("_", "-"):
                  command.callback.__module__ for command in app.registered_commands}
    for group in app.registered_groups:
        modules = {command.callback.__module__ for command in group.typer_instance.registered_commands}
        assert len(modules) == 1, group.name
        registered[group.name] = modules.pop()
    assert {word: f"memctl.cli.{module}" for word, module in MODULE_OF.items()} == registered
    assert command_word(["--store", "/s", "show", "x"]) == "show"
    assert command_word(["--store=/s", "add", "x"]) == "add"
    assert command_word(["--help"]) is None and command_word([]) is None


# (What the typer app gets of them: `memctl show ID` and `memctl add TEXT` themselves are
# answered without typer, tests/test_fastpath.py.)
@pytest.mark.parametrize("argv", [["show", "--help"], ["add", "--help"]])
def test_add_and_show_load_only_the_notes_commands(store_path: Path, argv: list[str]) -> None:
    script = ("import sys, atexit\n"
              "atexit.register(lambda: print(sorted(m for m in sys.modules if m.startswith("
              "('memctl.cli.', 'memctl.services.'))), file=sys.stderr))\n"
              f"sys.argv = ['memctl', *{argv!r}]\n"
              "from memctl.cli import main\n"
              "main()\n")
    env = {**os.environ, "MEMCTL_STORE": str(store_path), "MEMCTL_PROJECT": "demo"}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
    loaded = set(eval(done.stderr.strip().splitlines()[-1]))  # noqa: S307 - our own output
    assert "memctl.cli.notes" in loaded
    assert not loaded & {"memctl.cli.app", "memctl.cli.sync", "memctl.cli.agent",
                         "memctl.cli.lifecycle", "memctl.cli.watch", "memctl.services.upkeep"}
    usage = subprocess.run([memctl_executable(), *argv], env=env, capture_output=True, text=True)
    assert usage.returncode == done.returncode
