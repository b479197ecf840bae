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
from memctl.core.stamp import file_stamp
from memctl.disk import gitops
from memctl.index.db import ensure_fresh, open_index


def _stamp(store: Path, relpath: str) -> tuple[int, int, int]:
    return file_stamp(os.stat(store / relpath))


def _indexed_stamp(store: Path, relpath: str) -> tuple[int, int, int]:
    with open_index(store) as index:
        stamp, _digest = index.indexed_files()[relpath]
    return stamp


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
    git(store_path, "add", "mine.txt")  # `git commit --only PATHS` leaves it staged: so does memctl
    added = cli.ok("add", "the cache is Redis 7", "--json").json()
    log = git(store_path, "log", "-1", "--format=%an <%ae>%n%cn <%ce>%n%s%n%P", "--name-only")
    who, committer, subject, parent, *files = [line for line in log.splitlines() if line]
    assert who == committer == "memctl-test <test@example.invalid>"  # the tests' identity
    assert subject == f"add fact {added['id']}: the cache is Redis 7"
    assert parent == git(store_path, "rev-parse", "HEAD~1").strip()
    assert files == [added["path"]]
    assert git(store_path, "reflog", "-1", "--format=%gs").strip() == f"commit: {subject}"
    assert git(store_path, "status", "--porcelain") == "A  mine.txt\n"
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
    stays on disk, unstaged (a failed commit leaves git's index as it was, so another
    command's commit never carries it: tests/test_reliability.py), and a retry commits it."""
    real = gitops._head_and_tree

    def person_commits_meanwhile(root: Path, *reading: gitops.Started
                                 ) -> tuple[str | None, str | None]:
        found = real(root, *reading)
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
    assert git(store_path, "status", "--porcelain").splitlines() == ["?? global/ours.md"]
    assert gitops.commit_all(store_path, "ours again", ["global/ours.md"]) is not None
    assert git(store_path, "log", "-2", "--format=%s").split("\n")[:2] == [
        "ours again", "a person's commit"]


def test_a_folder_committed_away_leaves_no_copy_in_head_whatever_git_s_index_holds(
        store_path: Path) -> None:
    """A folder among a commit's paths (a whole project moved) that is gone from disk: git
    lists the files it tracks under it, never the folder's own name, so the folder was taken
    for one git never knew and left out, and its files stayed in HEAD. And with a change
    staged by hand elsewhere, the tree is made from HEAD: a folder tracked there but taken
    out of git's index by hand was left out the same way."""
    def head_files() -> list[str]:
        return sorted(p for p in git(store_path, "ls-tree", "-r", "--name-only", "HEAD").split()
                      if "/" in p and not p.startswith((".", "global/")))

    (store_path / "beta").mkdir()
    (store_path / "beta" / "x.md").write_text("a note of project beta\n")
    assert gitops.commit_all(store_path, "beta", ["beta"]) is not None
    (store_path / "beta").rename(store_path / "gamma")
    assert gitops.commit_all(store_path, "beta to gamma", ["beta", "gamma"]) is not None
    assert head_files() == ["gamma/x.md"]

    git(store_path, "rm", "-r", "-q", "--cached", "gamma")
    (store_path / "global" / "mine.txt").write_text("staged by the person\n")
    git(store_path, "add", "global/mine.txt")
    (store_path / "gamma").rename(store_path / "delta")
    assert gitops.commit_all(store_path, "gamma to delta", ["gamma", "delta"]) is not None
    assert head_files() == ["delta/x.md"]
    assert git(store_path, "status", "--porcelain") == "A  global/mine.txt\n"


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


# How a note the write-time checks would act on changed since the index read it: moved by
# hand into another project's folder (its project is its front matter's) and rewritten there;
# emptied (the index keeps serving its last good version); rewritten while the add looked.
CHANGES = ("moved and rewritten", "emptied", "rewritten meanwhile")


def _change(store_path: Path, how: str, relpath: str, old: str, new: str,
            monkeypatch: pytest.MonkeyPatch) -> str:
    """Change the note at `relpath` as `how` says (`old` → `new` in its text); its path now."""
    if how == "emptied":
        (store_path / relpath).write_text("")
        return relpath
    if how == "rewritten meanwhile":
        from memctl.memory import notes

        looked = notes._check_pool
        rewritten: list[bool] = []  # once: after the first look

        def looked_then_rewritten(*args, **kwargs):
            found = looked(*args, **kwargs)
            if not rewritten:
                rewritten.append(True)
                _hand_edit(store_path, relpath, old, new)
            return found

        monkeypatch.setattr(notes, "_check_pool", looked_then_rewritten)
        return relpath
    target = store_path / "billing" / "notes" / "fact" / Path(relpath).name
    target.parent.mkdir(parents=True, exist_ok=True)
    (store_path / relpath).rename(target)
    ensure_fresh(store_path).close()  # indexed where it lies now
    moved = target.relative_to(store_path).as_posix()
    _hand_edit(store_path, moved, old, new)
    return moved


def _left_by_hand(store_path: Path, path: str, how: str, old: str, new: str) -> str:
    """What the person leaves in the note's file (the edit made meanwhile is still to come)."""
    text = (store_path / path).read_text(encoding="utf-8")
    return text.replace(old, new) if how == "rewritten meanwhile" else text


@pytest.mark.parametrize("how", CHANGES)
def test_an_add_never_merges_into_a_note_that_no_longer_says_it(
        store_path: Path, cli: Cli, how: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before, the add merged into the index's older copy of the note: it said "merged", and
    its text was written nowhere."""
    text = "Deploys go out on Tuesdays after the standup meeting"
    first = cli.ok("add", text, "--tags", "ops", "--json").json()
    plants = "The office plants need water every Friday"
    path = _change(store_path, how, first["path"], text, plants, monkeypatch)
    left = _left_by_hand(store_path, path, how, text, plants)
    again = cli.ok("add", text, "--json").json()
    assert again["action"] == "created" and again["id"] != first["id"]
    assert text in (store_path / again["path"]).read_text(encoding="utf-8")
    assert (store_path / path).read_text(encoding="utf-8") == left  # as the person left it


@pytest.mark.parametrize("how", CHANGES)
def test_an_add_never_supersedes_a_note_that_no_longer_has_its_subject_and_predicate(
        store_path: Path, cli: Cli, how: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before, the add rewrote the note as superseded by the index's older copy: a note whose
    predicate had changed, or an emptied file, which then held front matter alone."""
    first = cli.ok("add", "The database engine is Postgres", "--subject", "db", "--predicate",
                   "engine", "--json").json()
    path = _change(store_path, how, first["path"], "predicate: engine", "predicate: version",
                   monkeypatch)
    left = _left_by_hand(store_path, path, how, "predicate: engine", "predicate: version")
    newer = cli.ok("add", "The database engine is MySQL now", "--subject", "db",
                   "--predicate", "engine", "--json").json()
    assert newer["superseded"] == [] and newer["action"] == "created"
    assert (store_path / path).read_text(encoding="utf-8") == left


@pytest.mark.parametrize("how", CHANGES)
def test_an_update_never_supersedes_a_note_that_no_longer_has_its_subject_and_predicate(
        store_path: Path, cli: Cli, how: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The update of a note's fields (the MCP server's `update`) makes the same checks."""
    from memctl.services import notes
    from memctl.store import Store

    first = cli.ok("add", "The database engine is Postgres", "--subject", "db", "--predicate",
                   "engine", "--json").json()
    other = cli.ok("add", "Backups run nightly at two", "--json").json()
    path = _change(store_path, how, first["path"], "predicate: engine", "predicate: version",
                   monkeypatch)
    left = _left_by_hand(store_path, path, how, "predicate: engine", "predicate: version")
    updated = notes.update(Store.open(store_path), other["id"], subject="db", predicate="engine")
    assert updated.superseded == [] and updated.changed == ["subject", "predicate"]
    assert (store_path / path).read_text(encoding="utf-8") == left


def test_an_add_whose_note_keeps_changing_while_it_looks_writes_nothing_and_says_so(
        store_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each time the add looks, the note says what the add says, and is rewritten right
    after: the second time, the add stops before it writes anything."""
    from memctl.memory import notes

    text = "Deploys go out on Tuesdays after the standup meeting"
    plants = "The office plants need water every Friday"
    first = cli.ok("add", text, "--json").json()
    looked = notes._check_pool

    def says(old: str, new: str) -> None:
        path = store_path / first["path"]
        path.write_text(path.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")

    def looked_then_rewritten(*args, **kwargs):
        says(plants, text)
        found = looked(*args, **kwargs)
        says(text, plants)
        return found

    monkeypatch.setattr(notes, "_check_pool", looked_then_rewritten)
    head = git(store_path, "rev-parse", "HEAD")
    files = sorted(path.name for path in (store_path / "demo" / "notes" / "fact").iterdir())
    refused = cli("add", text, "--json")
    assert refused.exit_code == 1
    assert refused.stderr.startswith("error: ") and refused.stderr.count("\n") == 1
    assert "changed on disk while this command ran; nothing was written" in refused.stderr
    assert git(store_path, "rev-parse", "HEAD") == head
    assert sorted(path.name for path in (store_path / "demo" / "notes" / "fact").iterdir()) \
        == files
    assert plants in (store_path / first["path"]).read_text(encoding="utf-8")


def test_an_add_meeting_a_damaged_index_rebuilds_it_and_adds(store_path: Path,
                                                              cli: Cli) -> None:
    """The pages of one index of the index file overwritten: the add's look for the project's
    notes held in other folders fails, and the whole walk rebuilds the index, as every
    command does with a damaged one."""
    import sqlite3

    from memctl.index.db import index_path

    cli.ok("add", "The billing cron runs at 3am", "--project", "billing")
    database = index_path(store_path)
    with sqlite3.connect(database) as conn:
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name ="
                            " 'docs_project_path'").fetchone()[0]
    with open(database, "r+b") as handle:
        handle.seek((root - 1) * page_size)
        handle.write(b"\xff" * page_size)
    added = cli("add", "Deploys go out on Tuesdays", "--json")
    assert added.exit_code == 0, added.stderr
    assert "Tuesdays" in (store_path / added.json()["path"]).read_text(encoding="utf-8")


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


def _loaded_by(store_path: Path, argv: list[str]
               ) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """A memctl command line run in a Python of its own, and the memctl modules it loaded."""
    script = ("import sys, atexit\n"
              "atexit.register(lambda: print(sorted(m for m in sys.modules if m.startswith("
              "'memctl.')), file=sys.stderr))\n"
              f"sys.argv = ['memctl', *{argv!r}]\n"
              "from memctl.cli import main\n"
              "main()\n")
    env = {**os.environ, "MEMCTL_STORE": str(store_path), "MEMCTL_PROJECT": "demo"}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
    return done, set(eval(done.stderr.strip().splitlines()[-1]))  # noqa: S307 - our own output


# (What the typer app gets of them: `memctl show ID` and `memctl add TEXT` themselves are
# answered without typer, tests/test_fastpath.py.)
@pytest.mark.parametrize("argv", [["show", "--help"], ["add", "--help"]])
def test_add_and_show_load_only_the_notes_commands(store_path: Path, argv: list[str]) -> None:
    done, loaded = _loaded_by(store_path, argv)
    assert "memctl.cli.notes" in loaded
    assert not loaded & {"memctl.cli.app", "memctl.cli.sync", "memctl.cli.agent",
                         "memctl.cli.lifecycle", "memctl.cli.watch", "memctl.services.upkeep"}
    env = {**os.environ, "MEMCTL_STORE": str(store_path), "MEMCTL_PROJECT": "demo"}
    usage = subprocess.run([memctl_executable(), *argv], env=env, capture_output=True, text=True)
    assert usage.returncode == done.returncode


# `reindex` and `health` load neither all of sync (the clone of `init --clone`) nor, for a
# reindex, the health rules: each lives in a service module of its own (docs/architecture.md).
@pytest.mark.parametrize(("argv", "kept_out"), [
    (["reindex"], {"memctl.exchange.sync", "memctl.memory.health", "memctl.services.upkeep",
                   "memctl.services.creation"}),
    (["health", "--json"], {"memctl.exchange.sync", "memctl.services.creation"}),
])
def test_reindex_and_health_load_only_what_they_need(store_path: Path, argv: list[str],
                                                     kept_out: set[str]) -> None:
    done, loaded = _loaded_by(store_path, argv)
    assert done.returncode == 0, done.stderr
    assert "memctl.index.db" in loaded
    assert not loaded & kept_out, loaded & kept_out


# --- what an `add`, and a `show` right after it, load and run ------------------------------------

_LOADED = """
import atexit, json, sys
atexit.register(lambda: print(json.dumps(sorted(
    m for m in sys.modules if m.split(".")[0] in sys.argv[1].split(",")
    or m == "memctl.index.docs")), file=sys.stderr))
sys.argv = ["memctl", *sys.argv[2:]]
from memctl.cli import main
main()
"""
_HEAVY = ("yaml", "rapidfuzz", "typing", "hashlib", "tempfile", "shutil")


def _loaded(store: Path, *args: str) -> tuple[dict, set[str]]:
    env = {**os.environ, "MEMCTL_STORE": str(store), "MEMCTL_PROJECT": "demo"}
    done = subprocess.run([sys.executable, "-c", _LOADED, ",".join(_HEAVY), *args], env=env,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), set(json.loads(done.stderr.strip().splitlines()[-1]))


def test_add_and_a_show_right_after_it_load_only_what_they_use(store_path: Path) -> None:
    """An `add` whose text pairs with no note loads neither YAML (memctl reads the front
    matter it writes itself), rapidfuzz, typing, OpenSSL's hashlib nor tempfile; a `show`
    of the note just added (indexed without its mtime, as written in the last 2 s) finds
    it by its hash, so it loads not even the index's parser (bench/bench_write.py)."""
    _loaded(store_path, "add", "the gateway timeout is 30 s", "--json")
    added, loaded = _loaded(store_path, "add", "the billing cron runs nightly at 3am", "--json")
    assert added["action"] == "created" and loaded == {"memctl.index.docs"}
    shown, loaded = _loaded(store_path, "show", added["id"], "--json")
    assert shown["body"].strip() == "the billing cron runs nightly at 3am"
    assert loaded == set()
    with open_index(store_path) as index:  # still recorded without its mtime: not re-indexed
        assert index.indexed_files()[added["path"]][0][0] == 0


def test_show_right_after_a_same_size_rewrite_shows_the_rewrite(store_path: Path,
                                                                cli: Cli) -> None:
    """The note's stamp is not trusted while it is that recent: a rewrite in the same tick,
    of the same size, is read by its hash, and shown."""
    added = cli.ok("add", "the queue is RabbitMQ", "--json").json()
    path = store_path / added["path"]
    stamp = path.stat().st_mtime_ns
    path.write_text(path.read_text(encoding="utf-8").replace("RabbitMQ", "RabbitXY"),
                    encoding="utf-8")
    os.utime(path, ns=(stamp, stamp))
    assert "RabbitXY" in cli.ok("show", added["id"], "--json").json()["body"]


@pytest.mark.parametrize("identity", ["user", "memctl"])
def test_a_commit_is_the_one_git_commit_makes_byte_for_byte(store_path: Path, tmp_path: Path,
                                                            identity: str) -> None:
    """`add` reads HEAD while git stages its file and indexes the change while git commits:
    the commit is still the very one `git commit` makes of the same files (the same id, so
    the same tree, parent, author, committer, dates and message), with the same reflog
    entry; committed as the user git knows, or as memctl when it knows none."""
    from memctl.core.clock import now

    env = {name: value for name, value in os.environ.items()
           if not name.startswith(("GIT_AUTHOR_", "GIT_COMMITTER_"))}
    env.update(HOME=str(tmp_path / "home"), GIT_CONFIG_NOSYSTEM="1",
               MEMCTL_STORE=str(store_path), MEMCTL_PROJECT="demo")
    if identity == "user":
        git(store_path, "config", "user.name", "Ada Lovelace")
        git(store_path, "config", "user.email", "ada@example.invalid")
    twin = tmp_path / "twin"
    subprocess.run(["cp", "-a", str(store_path), str(twin)], check=True)
    done = subprocess.run([memctl_executable(), "add", "the cache is Redis 7", "--json"],
                          env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    path = json.loads(done.stdout)["path"]
    (twin / path).parent.mkdir(parents=True, exist_ok=True)
    (twin / path).write_bytes((store_path / path).read_bytes())
    stamp = now().strftime("%Y-%m-%dT%H:%M:%S+0000")  # memctl pins git's dates to MEMCTL_NOW
    twin_env = {**env, "GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp}
    if identity == "memctl":
        twin_env.update(GIT_AUTHOR_NAME="memctl", GIT_AUTHOR_EMAIL="memctl@localhost",
                        GIT_COMMITTER_NAME="memctl", GIT_COMMITTER_EMAIL="memctl@localhost")
    subject = git(store_path, "log", "-1", "--format=%s").strip()
    for command in (["add", "--", path], ["commit", "-q", "--no-verify", "-m", subject]):
        subprocess.run(["git", "-C", str(twin), *command], env=twin_env, check=True)
    for root in (store_path, twin):
        assert git(root, "status", "--porcelain") == ""
    head = git(store_path, "rev-parse", "HEAD")
    assert head == git(twin, "rev-parse", "HEAD")
    assert git(store_path, "log", "-1", "--format=%an <%ae>").strip() == (
        "Ada Lovelace <ada@example.invalid>" if identity == "user" else "memctl <memctl@localhost>")
    assert git(store_path, "reflog", "-1", "--format=%gs") == git(twin, "reflog", "-1", "--format=%gs")


def test_without_git_an_add_says_so_and_keeps_the_note(store_path: Path) -> None:
    env = {**os.environ, "MEMCTL_STORE": str(store_path), "MEMCTL_PROJECT": "demo",
           "PATH": str(store_path / "no-such-folder")}
    done = subprocess.run([sys.executable, "-m", "memctl", "add", "a note while git is gone"],
                          env=env, capture_output=True, text=True)
    assert done.returncode == 1 and done.stderr.startswith(
        "error: git is not installed or not on PATH; install git")
    assert "Traceback" not in done.stderr
    assert len(list((store_path / "demo" / "notes" / "fact").glob("*.md"))) == 1


def test_an_atomic_write_s_temporary_file_is_made_as_mkstemp_made_it(tmp_path: Path) -> None:
    """Without tempfile (~6 ms of `add`): a new file beside the target, `.<name>.<random>.tmp`
    (ignored by the walk, the watcher and the index), readable by its owner alone until the
    rename gives it its final mode."""
    import re
    import stat

    from memctl.disk import atomic

    target = tmp_path / "note.md"
    made = []
    for _ in range(3):
        fd, name = atomic._temp_file(target)
        os.close(fd)
        made.append(name)
        assert re.fullmatch(r"\.note\.md\.[0-9a-f]{12}\.tmp", Path(name).name)
        assert Path(name).parent == tmp_path
        assert stat.S_IMODE(os.stat(name).st_mode) == 0o600
    assert len(set(made)) == 3
    atomic.atomic_write_text(target, "body\n")
    assert target.read_text() == "body\n" and len(list(tmp_path.iterdir())) == 4


@pytest.mark.parametrize("target", ["note.md", "数据库.md", "MEMORY.md", "a.b.c", "x"])
def test_every_temporary_file_name_is_known_as_one_and_no_other_name_is(
        tmp_path: Path, target: str) -> None:
    """What a killed write left is removed by name (`is_temp_name`, docs/reliability.md): each
    name `_temp_file` makes must be recognised, and a person's file never taken for one."""
    from memctl.disk import atomic

    for _ in range(20):
        fd, name = atomic._temp_file(tmp_path / target)
        os.close(fd)
        assert atomic.is_temp_name(Path(name).name)
    for other in (target, f".{target}", f".{target}.tmp", f".{target}.0123456789AB.tmp",
                  f".{target}.0123456789a.tmp", f".{target}0123456789ab.tmp",
                  f"{target}.0123456789ab.tmp", ".0123456789ab.tmp", "..0123456789ab.tmp",
                  f".{target}.0123456789ab.tmp.md"):
        assert not atomic.is_temp_name(other), other


def test_an_add_keeps_its_note_s_words_for_the_next_add_s_checks(store_path: Path,
                                                                 cli: Cli) -> None:
    """The words the checks compare a note by (memctl.index.nearwords) are kept while git
    commits it: the next add finds them kept, and writes nothing before it decides."""
    first = cli.ok("add", "the api gateway times out after 30 s", "--json").json()
    with open_index(store_path) as index:
        kept = index.conn.execute(
            "SELECT n.hash = f.hash FROM near_docs n JOIN files f ON f.path = n.path"
            " WHERE n.path = ?", (first["path"],)).fetchall()
    assert kept == [(1,)]
    again = cli.ok("add", "the api gateway times out after 30 s", "--json").json()
    assert again["action"] == "merged" and again["id"] == first["id"]
