"""`memctl sync` through a real bare git remote: first sync, three machines converging with
no markers and nothing lost, a rejected push retried, git's own pull through the merge
driver, `memctl log`, and failures that leave no half-merge."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from conftest import Cli, advised, edit, git, machine, plant_dead_holder, run_advice, tree_snapshot

from memctl.disk.counters import record_access
from memctl.exchange.sync import KEYS_FORMAT

T = ["2026-11-30T09:00:00.000Z", "2026-11-30T10:00:00.000Z", "2026-11-30T11:00:00.000Z",
     "2026-11-30T12:00:00.000Z", "2026-11-30T13:00:00.000Z", "2026-11-30T14:00:00.000Z"]


def add(cli: Cli, text: str, now: str) -> str:
    return cli.ok("add", text, "--json", "--force", env={"MEMCTL_NOW": now}).json()["id"]


def body_of(cli: Cli, note_id: str) -> str:
    return cli.ok("show", note_id, "--json").json()["body"].strip()


def memory_files(root: Path) -> dict[str, bytes]:
    return {p: d for p, d in tree_snapshot(root).items() if not p.startswith(".counters/")}


def no_markers(root: Path) -> None:
    for path, data in tree_snapshot(root).items():
        assert b"<<<<<<<" not in data and b">>>>>>>" not in data, f"conflict markers in {path}"


def test_first_sync_to_an_empty_remote_then_clone(tmp_path, remote):
    laptop = machine(tmp_path, "laptop")
    note = add(laptop, "Sync works from the first try", T[0])
    record_access(laptop.store, [note])  # as `recall` does
    report = laptop.ok("sync", "--remote", remote, "--json").json()
    assert report["pushed"] is True
    desktop = machine(tmp_path, "desktop", remote)
    assert body_of(desktop, note) == "Sync works from the first try"
    assert desktop.ok("show", note, "--json").json()["access_count"] == 1, "counters travel"
    record_access(desktop.store, [note])
    assert desktop.ok("sync", "--json").json()["pushed"] is True
    laptop.ok("sync")
    counts = {cli.ok("show", note, "--json").json()["access_count"] for cli in (laptop, desktop)}
    assert counts == {2}, "each access counted once on every machine"
    assert laptop("sync", "--remote", str(tmp_path / "elsewhere.git")).exit_code == 1


def test_clone_of_an_empty_remote_starts_a_store(tmp_path, remote):
    first = machine(tmp_path, "first", remote)
    assert (first.store / "memctl.toml").is_file()
    note = add(first, "Started from an empty remote", T[0])
    first.ok("sync")
    second = machine(tmp_path, "second", remote)
    assert body_of(second, note) == "Started from an empty remote"


def test_a_clone_takes_the_remote_branch_when_the_remote_head_names_a_missing_one(tmp_path, remote):
    """`git init --bare` names `master` as HEAD; the machine that published the store syncs
    another branch. The clone checked out nothing and made an empty store of its own, whose
    sync pushed a second branch: the two machines never saw each other's notes."""
    a = machine(tmp_path, "a")
    note = add(a, "Written on a before publishing", T[0])
    a.ok("sync", "--remote", remote)
    git(Path(remote), "symbolic-ref", "HEAD", "refs/heads/nothing-here")
    b = machine(tmp_path, "b", remote)
    assert _branch(b) == _branch(a)
    assert body_of(b, note) == "Written on a before publishing"
    mine = add(b, "Written on b", T[1])
    b.ok("sync")
    a.ok("sync")
    assert body_of(a, mine) == "Written on b"
    assert git(Path(remote), "for-each-ref", "--format=%(refname:short)", "refs/heads/").split() \
        == [_branch(a)], "one branch: no second store beside the first"


def test_a_clone_that_cannot_tell_the_store_branch_says_what_to_do(tmp_path, remote):
    a = machine(tmp_path, "a")
    a.ok("sync", "--remote", remote)
    git(a.store, "push", "-q", "origin", "HEAD:refs/heads/experiment")
    git(Path(remote), "symbolic-ref", "HEAD", "refs/heads/nothing-here")
    result = Cli(tmp_path / "b")("init", str(tmp_path / "b"), "--clone", remote)
    assert result.exit_code == 1
    assert result.error.count("\n") == 1 and result.stderr.startswith("error: ")
    assert "experiment" in result.stderr and "git symbolic-ref HEAD refs/heads/" in result.stderr
    assert not (tmp_path / "b").exists() or not any((tmp_path / "b").iterdir())
    assert not list(tmp_path.glob(".b.memctl-clone-*"))


def test_the_same_clone_again_says_it_is_already_a_store(tmp_path, remote):
    """As `memctl init` run again does: it said `created` each time."""
    a = machine(tmp_path, "a")
    a.ok("sync", "--remote", remote)
    path = tmp_path / "b"
    first = Cli(path).ok("init", str(path), "--clone", remote, "--json").json()
    assert first["created"] is True
    again = Cli(path).ok("init", str(path), "--clone", remote, "--json").json()
    assert again == {"store": str(path), "created": False}
    said = Cli(path).ok("init", str(path), "--clone", remote)
    assert said.stderr.strip() == f"already a store: {path}"


@pytest.mark.parametrize("there_before", ["nothing", "an empty folder"])
def test_a_clone_of_a_repository_that_is_no_store_leaves_nothing_at_path(
        tmp_path, remote, there_before):
    """The refused clone once stayed at PATH, whole: no store (`list` said to run `init`),
    and both `init PATH` (files that are not memory) and the same clone again (PATH not
    empty) refused it. Only what the clone made goes: an empty folder there before stays."""
    code = tmp_path / "code"
    code.mkdir()
    git(code, "init", "-q")
    (code / "README.md").write_text("# a code repository\n")
    git(code, "add", "-A")
    git(code, "commit", "-qm", "code")
    git(code, "push", "-q", remote, "HEAD")
    path = tmp_path / "made" / "for" / "memory" if there_before == "nothing" else tmp_path / "memory"
    if there_before == "an empty folder":
        path.mkdir()
    result = Cli(path)("init", str(path), "--clone", remote)
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: ")
    assert "not a memctl store" in result.stderr and "nothing was cloned" in result.stderr
    assert f"memctl init {path}" in result.stderr
    if there_before == "nothing":
        assert not (tmp_path / "made").exists(), "the folders made for PATH are gone too"
    else:
        assert path.is_dir() and not any(path.iterdir())
    assert not list(path.parent.glob(f".{path.name}.memctl-clone-*"))
    Cli(path).ok("init", str(path))  # the way out the error names works


def test_sync_refuses_to_push_a_branch_beside_the_one_the_remote_holds_the_store_on(tmp_path,
                                                                                      remote):
    """A store made on its own (`memctl init`, git's default branch) and a remote holding the
    store on another branch: the first sync pushed a second branch, silently, and the two
    machines never merged. Now it says so, pushes nothing, and names the way out."""
    a = machine(tmp_path, "a")
    git(a.store, "branch", "-m", _branch(a), "trunk")
    note = add(a, "Kept on the trunk branch", T[0])
    a.ok("sync", "--remote", remote)
    b = machine(tmp_path, "b")
    own = add(b, "Written on b before it met the remote", T[1])
    result = b("sync", "--remote", remote)
    assert result.exit_code == 1 and "trunk" in result.stderr
    assert [command[3:] for command in advised(result.stderr)] \
        == [["branch", "-m", _branch(b), "trunk"]], "b has no trunk: renamed to it"
    assert git(Path(remote), "for-each-ref", "--format=%(refname:short)", "refs/heads/").split() \
        == ["trunk"], "nothing was pushed"
    run_advice(result.stderr)
    b.ok("sync", "--remote", remote)
    a.ok("sync")
    assert body_of(b, note) == "Kept on the trunk branch"
    assert body_of(a, own) == "Written on b before it met the remote"


def test_a_branch_the_remote_lacks_beside_the_store_branch_is_merged_into_it(tmp_path, remote):
    """`git checkout -b exp` from the store's branch, a note, `sync`: the advice was to rename
    exp to the store's branch, which git refuses while that branch exists ("a branch named
    'master' already exists"; forcing it drops the branch's unpushed commits). Now it is to
    switch to that branch and merge exp into it: run as given, the next sync pushes both the
    note on exp and one on the store's branch not pushed yet."""
    a = machine(tmp_path, "a")
    add(a, "A note on the store's branch", T[0])
    a.ok("sync", "--remote", remote)
    home = _branch(a)
    unpushed = add(a, "Committed on the store's branch, not pushed yet", T[1])
    git(a.store, "checkout", "-q", "-b", "exp")
    on_exp = add(a, "A note written on branch exp", T[2])
    result = a("sync")
    assert result.exit_code == 1 and result.stderr.count("\n") == 1
    assert [command[3:] for command in advised(result.stderr)] \
        == [["switch", home], ["merge", "--no-edit", "exp"]]
    run_advice(result.stderr)
    assert a.ok("sync", "--json").json()["pushed"] is True
    b = machine(tmp_path, "b", remote)
    assert body_of(b, on_exp) == "A note written on branch exp"
    assert body_of(b, unpushed) == "Committed on the store's branch, not pushed yet"
    assert git(Path(remote), "for-each-ref", "--format=%(refname:short)", "refs/heads/").split() \
        == [home], "no second branch on the remote"


def test_a_token_in_a_remote_url_is_never_printed(tmp_path, remote):
    """`sync --remote https://user:TOKEN@host/…` printed the token in `pushed to …`, in
    `--json`'s `remote` and in a failed fetch's error, and `init --clone` in its error: the
    URL was shown as given (git itself shows such a URL without its user and password)."""
    token = "ghp_iK2ZWeqhFWCEPyYngFb51yBMWXaSCrUZoL8g"
    laptop = machine(tmp_path, "laptop")
    add(laptop, "A note to push through a URL holding a token", T[0])
    url = f"https://alice:{token}@git.example.com/acme/memory.git"
    git(laptop.store, "config", f"url.{remote}.insteadOf", url)  # the push goes to `remote`
    pushed = laptop("sync", "--remote", url)
    assert pushed.exit_code == 0, pushed.stderr
    assert "pushed to https://git.example.com/acme/memory.git" in pushed.stderr
    shown = [pushed.stdout, pushed.stderr]
    refused = f"https://alice:{token}@127.0.0.1:9/acme/memory.git"  # nothing listens there
    lonely = machine(tmp_path, "lonely")
    failed = lonely("sync", "--remote", refused)
    assert failed.exit_code == 1 and "git fetch from https://127.0.0.1:9/" in failed.stderr
    cloned = Cli(tmp_path / "clone")("init", str(tmp_path / "clone"), "--clone", refused)
    assert cloned.exit_code == 1 and "git clone https://127.0.0.1:9/" in cloned.stderr
    shown += [failed.stdout, failed.stderr, cloned.stdout, cloned.stderr]
    assert not any(token in text for text in shown), shown


def test_sync_without_a_remote_is_an_error(tmp_path):
    lonely = machine(tmp_path, "lonely")
    result = lonely("sync")
    assert result.exit_code == 1 and "--remote" in result.stderr


def test_three_machines_converge_without_markers_or_losses(tmp_path, remote):
    a = machine(tmp_path, "a")
    shared = add(a, "The API rate limit is 100 requests per minute", T[0])
    doomed = add(a, "A note that machine b will forget", T[0])
    a.ok("project", "add", "decisions", "REST, not GraphQL", env={"MEMCTL_NOW": T[0]})
    a.ok("sync", "--remote", remote)
    b, c = machine(tmp_path, "b", remote), machine(tmp_path, "c", remote)

    edit(a, shared, "The API rate limit is 200 requests per minute", T[1])
    edit(b, shared, "The API rate limit is 500 requests per minute", T[3])  # the newest
    edit(c, shared, "The API rate limit is 50 requests per minute", T[2])
    a.ok("project", "add", "progress", "auth done (a)", env={"MEMCTL_NOW": T[1]})
    b.ok("project", "add", "progress", "billing done (b)", env={"MEMCTL_NOW": T[4]})
    c.ok("project", "add", "lessons", "cache warmups matter (c)", env={"MEMCTL_NOW": T[2]})
    b.ok("forget", doomed, env={"MEMCTL_NOW": T[2]})
    own = {name: add(cli, f"Only machine {name} wrote this", T[1]) for name, cli in zip("abc", (a, b, c), strict=True)}
    edit(c, doomed, "Machine c edited this before the deletion", T[1])

    for cli in (a, b, c, a, b, c):
        cli.ok("sync")
    trees = [memory_files(cli.store) for cli in (a, b, c)]
    assert trees[0] == trees[1] == trees[2], "the machines did not converge"
    for cli in (a, b, c):
        no_markers(cli.store)
        assert body_of(cli, shared) == "The API rate limit is 500 requests per minute"
        assert cli("show", doomed).exit_code == 1, "a deletion newer than an edit wins"
        for note_id in own.values():
            assert cli("show", note_id).exit_code == 0
    kept = b"".join(d for p, d in trees[0].items() if p.startswith(".conflicts/"))
    for lost in (b"200 requests", b"50 requests", b"Machine c edited this"):
        assert lost in kept, f"{lost!r} was lost instead of kept as a conflict copy"
    # MEMORY.md carries no time stamp: git's commit times order its versions; one wins whole,
    # the others are kept as conflict copies
    memory = trees[0]["demo/MEMORY.md"]
    for item in (b"auth done (a)", b"billing done (b)", b"cache warmups matter (c)"):
        assert item in memory + kept, f"{item!r} was lost"
    assert sum(item in memory for item in (b"(a)", b"(b)", b"(c)")) == 1
    assert len(a.ok("conflicts", "--json").json()) >= 5
    history = git(a.store, "log", "--format=%H", "origin/master" if _branch(a) == "master" else "HEAD")
    assert history, "the remote history is intact"


def _branch(cli: Cli) -> str:
    return git(cli.store, "symbolic-ref", "--short", "HEAD").strip()


def test_a_rejected_push_is_retried_after_merging_again(tmp_path, remote):
    a = machine(tmp_path, "a")
    add(a, "Base note", T[0])
    a.ok("sync", "--remote", remote)
    b = machine(tmp_path, "b", remote)
    theirs = add(b, "Pushed by b while a was syncing", T[1])
    b.ok("sync", "--no-push")
    mine = add(a, "Written on a", T[2])
    branch = _branch(a)
    hook = a.store / ".git" / "hooks" / "pre-push"
    hook.write_text(f"""#!/bin/sh
unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE
if [ ! -f "{tmp_path}/raced" ]; then
  touch "{tmp_path}/raced"
  git -C "{b.store}" push -q origin HEAD:refs/heads/{branch}
fi
exit 0
""")
    hook.chmod(0o755)
    old_head = git(a.store, "rev-parse", "HEAD").strip()
    report = a.ok("sync", "--json").json()
    assert report["pushed"] and report["attempts"] == 2
    assert body_of(a, theirs) == "Pushed by b while a was syncing"
    remote_head = git(Path(remote), "rev-parse", branch).strip()
    assert git(a.store, "rev-parse", "HEAD").strip() == remote_head
    subprocess.run(["git", "-C", remote, "merge-base", "--is-ancestor", old_head, remote_head], check=True)
    b.ok("sync")
    assert body_of(b, mine) == "Written on a"


def test_git_pull_by_hand_uses_the_merge_driver(tmp_path, remote):
    a = machine(tmp_path, "a")
    note = add(a, "The default branch is main", T[0])
    a.ok("sync", "--remote", remote)
    b = machine(tmp_path, "b", remote)
    edit(a, note, "The default branch is trunk", T[2])
    a.ok("sync")
    edit(b, note, "The default branch is develop", T[1])
    pulled = subprocess.run(["git", "-C", str(b.store), "pull", "-q", "--no-rebase", "--no-edit",
                             "origin", _branch(b)], capture_output=True, text=True,
                            env=dict(os.environ, GIT_MERGE_AUTOEDIT="no"))
    assert pulled.returncode == 0, pulled.stderr
    no_markers(b.store)
    assert body_of(b, note) == "The default branch is trunk"
    copies = list((b.store / ".conflicts").rglob("*.md"))
    assert copies and "develop" in copies[0].read_text()


@pytest.mark.parametrize("newer", ["a", "b"])
def test_git_pull_by_hand_keeps_the_newer_memory_md_as_sync_does(tmp_path, remote, newer):
    """MEMORY.md carries no time stamp: `memctl sync` dates each version by when git first
    recorded it. The merge driver of a plain `git pull` picked by content hash instead, so the
    older version could win (either side is the newer once: a hash order favours one)."""
    a = machine(tmp_path, "a")
    a.ok("project", "add", "decisions", "base decision", env={"MEMCTL_NOW": T[0]})
    a.ok("sync", "--remote", remote)
    b = machine(tmp_path, "b", remote)
    times = {"a": T[2], "b": T[1]} if newer == "a" else {"a": T[1], "b": T[2]}
    b.ok("project", "add", "decisions", "written on b", env={"MEMCTL_NOW": times["b"]})
    a.ok("project", "add", "decisions", "written on a", env={"MEMCTL_NOW": times["a"]})
    a.ok("sync", env={"MEMCTL_NOW": T[3]})
    pulled = subprocess.run(["git", "-C", str(b.store), "pull", "-q", "--no-rebase", "--no-edit",
                             "origin", _branch(b)], capture_output=True, text=True,
                            env=dict(os.environ, GIT_MERGE_AUTOEDIT="no", MEMCTL_NOW=T[4]))
    assert pulled.returncode == 0, pulled.stderr
    older = "b" if newer == "a" else "a"
    memory = (b.store / "demo" / "MEMORY.md").read_text()
    assert f"written on {newer}" in memory and f"written on {older}" not in memory
    copies = [p.read_text() for p in (b.store / ".conflicts").rglob("MEMORY.*.md")]
    assert len(copies) == 1 and f"written on {older}" in copies[0], "the loser is kept"


def test_a_conflict_copy_edited_on_both_machines_keeps_both_edits(tmp_path, remote):
    """Both people merge text into the same conflict copy by hand before `conflicts keep`:
    the sync kept the newer edit and dropped the other, left only in git history."""
    a = machine(tmp_path, "a")
    note = add(a, "Tracing goes through the collector", T[0])
    a.ok("sync", "--remote", remote)
    b = machine(tmp_path, "b", remote)
    edit(a, note, "Tracing goes through the agent (a)", T[1])
    edit(b, note, "Tracing goes through the sidecar (b)", T[2])
    for cli in (a, b, a):
        cli.ok("sync")
    [copy] = [p.relative_to(a.store) for p in (a.store / ".conflicts").rglob("*.md")]
    for cli, now in ((a, T[3]), (b, T[4])):
        path = cli.store / copy
        path.write_text(path.read_text() + f"Merged by hand on {cli.store.name}\n")
        cli.ok("sync", env={"MEMCTL_NOW": now})
    a.ok("sync", env={"MEMCTL_NOW": T[5]})
    assert memory_files(a.store) == memory_files(b.store)
    kept = b"".join(d for p, d in memory_files(a.store).items() if p.startswith(".conflicts/"))
    for text in (b"Merged by hand on a", b"Merged by hand on b"):
        assert text in kept, f"{text!r} was dropped"
    listed = a.ok("conflicts", "--json").json()
    assert len(listed) == 2 and {c["id"] for c in listed} == {note}


@pytest.mark.parametrize("stray_on", ["a", "b"])
def test_a_stray_file_named_like_a_project_folder_is_moved_aside_not_dropped(tmp_path, remote,
                                                                            stray_on):
    """One machine has a top-level file `zeta` (dropped there by hand), the other a project
    `zeta/`: a tree holds one or the other, and the merge dropped the file, its text left
    only in git history."""
    a = machine(tmp_path, "a")
    a.ok("sync", "--remote", remote)
    b = machine(tmp_path, "b", remote)
    stray, project = (a, b) if stray_on == "a" else (b, a)
    note = add(Cli(project.store, project="zeta"), "A note of project zeta", T[0])
    (stray.store / "zeta").write_text("stray text worth keeping\n")
    first, second = (project, stray) if stray_on == "b" else (stray, project)
    first.ok("sync")
    report = second.ok("sync", "--json").json()
    first.ok("sync")
    for cli in (a, b):
        kept = [p for p in (cli.store / ".conflicts").glob("zeta.*")] \
            if (cli.store / ".conflicts").is_dir() else []
        assert [p.read_text() for p in kept] == ["stray text worth keeping\n"], "the file was lost"
        assert body_of(Cli(cli.store, project="zeta"), note) == "A note of project zeta"
        assert git(cli.store, "status", "--porcelain") == ""
    assert memory_files(a.store) == memory_files(b.store)
    assert report["moved_aside"] == [{"path": "zeta", "to": kept[0].relative_to(b.store).as_posix()}]
    assert report["moved_aside"][0]["to"] in report["conflicts"]
    # `health` counts it among the conflict copies to review, as `memctl conflicts` lists it.
    listed = [copy["path"] for copy in a.ok("conflicts", "--json").json()]
    health = a.ok("health", "--json").json()
    assert [c["path"] for c in health["conflicts"]] == listed == [report["moved_aside"][0]["to"]]


def test_sync_stamps_and_commits_a_hand_edit(tmp_path, remote):
    a = machine(tmp_path, "a")
    note = add(a, "Hand edits travel too", T[0])
    path = a.store / a.ok("show", note, "--json").json()["path"]
    path.write_text(path.read_text().replace("travel too", "travel too, edited in vim"))
    a.ok("sync", "--remote", remote)
    assert git(a.store, "status", "--porcelain") == ""
    shown = a.ok("show", note, "--json").json()
    assert shown["updated"] > T[0]
    b = machine(tmp_path, "b", remote)
    assert body_of(b, note) == "Hand edits travel too, edited in vim"


def _commit_by_hand(cli: Cli, note_id: str, text: str, when: str) -> None:
    """A hand edit committed without memctl's stamp, as `memctl watch --commit` or a
    person's `git commit -a` commits it, at `when`."""
    path = cli.store / cli.ok("show", note_id, "--json").json()["path"]
    path.write_text(path.read_text().replace("port 5432", text))
    env = dict(os.environ, GIT_AUTHOR_DATE=when, GIT_COMMITTER_DATE=when)
    subprocess.run(["git", "-C", str(cli.store), "commit", "-qam", "hand edit"], env=env,
                   check=True)


@pytest.mark.parametrize("other_side", ["edit", "forget"])
def test_a_hand_edit_committed_unstamped_still_wins_when_it_is_newer(tmp_path, remote,
                                                                       other_side):
    """With `memctl watch --commit` running (or a person's `git commit`), a hand edit is
    committed before any sync could stamp it with its time: its `updated` stayed the one
    memctl wrote before. An older edit, or an older forget, on another machine then won the
    merge over it: the newer text ended as a conflict copy, or deleted on both machines."""
    a = machine(tmp_path, "a")
    note = add(a, "The staging database listens on port 5432", T[0])
    a.ok("sync", "--remote", remote)
    b = machine(tmp_path, "b", remote)
    if other_side == "edit":
        edit(b, note, "The staging database listens on port 6000", T[1])
    else:
        b.ok("forget", note, env={"MEMCTL_NOW": T[1]})
    b.ok("sync", env={"MEMCTL_NOW": T[1]})
    _commit_by_hand(a, note, "port 5433", T[2])  # later than b's change
    a.ok("sync", env={"MEMCTL_NOW": T[3]})
    b.ok("sync", env={"MEMCTL_NOW": T[3]})
    for side in (a, b):
        assert body_of(side, note) == "The staging database listens on port 5433"
    assert not (b.store / ".tombstones" / f"{note}.md").exists()


def _files_of(root: Path, note_id: str) -> tuple[list[str], list[str]]:
    """The live files and the conflict copies that hold note `note_id` (by their `id:` line)."""
    live, copies = [], []
    for path, data in tree_snapshot(root).items():
        if path.endswith(".md") and f"\nid: {note_id}\n".encode() in data:
            (copies if path.startswith(".conflicts/") else live).append(path)
    return live, copies


def test_a_note_broken_by_hand_on_one_machine_and_edited_on_the_other_stays_one_file(
        tmp_path, remote):
    """A typo in a note's front matter on one machine, an edit of the same note on the other:
    the broken file is still that note (its `id:` line), so the merge keeps one live file per
    id and the loser as a conflict copy, named by the sync that made it; nothing is lost."""
    a = machine(tmp_path, "a")
    note = add(a, "Yaml note about the indexer", T[0])
    a.ok("sync", "--remote", remote)
    b = machine(tmp_path, "b", remote)
    edit(a, note, "Yaml note about the INDEXER_A", T[1])
    path = next((b.store / "demo/notes/fact").glob(f"*-{note}.md"))
    text = path.read_text().replace("tags: []", "tags: [a, BROKEN_B", 1)
    path.write_text(text.replace("the indexer", "the INDEXER_HAND_B"))
    assert b.ok("sync", "--json", env={"MEMCTL_NOW": T[2]}).json()["broken"]
    merged = a.ok("sync", "--json", env={"MEMCTL_NOW": T[2]}).json()
    b.ok("sync", env={"MEMCTL_NOW": T[2]})
    assert memory_files(a.store) == memory_files(b.store)
    for side in (a, b):
        live, copies = _files_of(side.store, note)
        assert len(live) == 1 and len(copies) == 1, (live, copies)
        texts = [(side.store / p).read_text() for p in live + copies]
        assert sorted("INDEXER_A" in t for t in texts) == [False, True]
        assert sorted("INDEXER_HAND_B" in t for t in texts) == [False, True]
        assert side.ok("health", "--json").json()["duplicate_ids"] == []
    assert merged["conflicts"] == _files_of(a.store, note)[1], "the sync names the copy it made"
    # Fixed on b, the note stays one file on both machines.
    fixed = path.read_text().replace("tags: [a, BROKEN_B", "tags: [a]", 1)
    path.write_text(fixed)
    for side in (b, a, b):
        side.ok("sync", env={"MEMCTL_NOW": T[3]})
    for side in (a, b):
        assert len(_files_of(side.store, note)[0]) == 1
        assert side.ok("health", "--json").json()["duplicate_ids"] == []


@pytest.mark.parametrize("hand_edit", ["saved", "committed unstamped"])
def test_a_later_hand_edit_of_a_note_stamped_in_the_future_wins(tmp_path, remote, hand_edit):
    """B's clock ran three days ahead while it edited the note; A then edits it by hand,
    later than B's next edit (clock fixed). The hand edit was stamped 1 ms after the
    future stamp it edited, a date the merge treats as no time at all, so B's earlier edit
    won. A hand edit is stamped as memctl's own edits are: its save time, or 1 ms after the
    version it edited unless that one is more than a day ahead (docs/sync.md). The times
    are years ahead of any real clock, which "the future" is also measured against."""
    def at(day: int, clock: str) -> dict[str, str]:
        return {"MEMCTL_NOW": f"2090-01-0{day}T{clock}.000Z"}

    a = machine(tmp_path, "a")
    note = a.ok("add", "The scheduler runs every minute", "--json",
                env=at(1, "10:00:00")).json()["id"]
    a.ok("sync", "--remote", remote, env=at(1, "10:00:00"))
    b = machine(tmp_path, "b", remote)
    edit(b, note, "The scheduler runs every hour", at(4, "10:00:00")["MEMCTL_NOW"])  # 3 days ahead
    b.ok("sync", env=at(4, "10:00:01"))
    a.ok("sync", env=at(1, "10:01:00"))
    edit(b, note, "The scheduler runs every day", at(1, "10:05:00")["MEMCTL_NOW"])  # fixed clock
    path = a.store / a.ok("show", note, "--json").json()["path"]
    path.write_text(path.read_text().replace("every hour", "every week"))
    saved = datetime(2090, 1, 1, 10, 10, tzinfo=UTC)  # after b's 10:05
    os.utime(path, (saved.timestamp(), saved.timestamp()))
    if hand_edit == "committed unstamped":  # dated by when git first recorded it
        when = saved.isoformat()
        subprocess.run(["git", "-C", str(a.store), "commit", "-qam", "hand edit"], check=True,
                       env=dict(os.environ, GIT_AUTHOR_DATE=when, GIT_COMMITTER_DATE=when))
    for side in (b, a, b):
        side.ok("sync", env=at(1, "10:20:00"))
    for side in (a, b):
        assert body_of(side, note) == "The scheduler runs every week"


@pytest.mark.parametrize("how", ["sync", "export"])
def test_a_hand_edit_whose_file_time_is_ahead_of_the_clock_is_dated_now_and_wins(
        tmp_path, remote, how):
    """A's file was saved (10:10) after B's edit (10:05), but its file time says four days
    later (a file system whose clock runs ahead, `touch`, a copy that kept another machine's
    times). sync stamped the hand edit with that time, which the merge counts as no time at
    all (more than a day ahead), so B's earlier edit won and A's later one became the
    conflict copy. A file of this store was saved by now at the latest: it is dated now, as
    memctl's own edits are. The times are years ahead of any real clock."""
    def at(clock: str) -> dict[str, str]:
        return {"MEMCTL_NOW": f"2090-01-01T{clock}.000Z"}

    a = machine(tmp_path, "a")
    note = a.ok("add", "The scheduler runs every minute", "--json",
                env=at("10:00:00")).json()["id"]
    a.ok("sync", "--remote", remote, env=at("10:00:00"))
    b = machine(tmp_path, "b", remote)
    edit(b, note, "The scheduler runs every hour", at("10:05:00")["MEMCTL_NOW"])
    b.ok("sync", env=at("10:05:01"))
    path = a.store / a.ok("show", note, "--json").json()["path"]
    path.write_text(path.read_text().replace("every minute", "every week"))
    ahead = datetime(2090, 1, 5, 10, 10, tzinfo=UTC).timestamp()
    os.utime(path, (ahead, ahead))
    if how == "sync":
        for side in (a, b):
            side.ok("sync", env=at("10:10:00"))
    else:  # the zip carries the hand edit, stamped
        bundle = tmp_path / "a.zip"
        a.ok("export", str(bundle), env=at("10:10:00"))
        b.ok("import", str(bundle), env=at("10:10:00"))
        a.ok("sync", env=at("10:10:00"))  # (commits A's hand edit, and merges B's edit)
    for side in (a, b):
        assert body_of(side, note) == "The scheduler runs every week"
        updated = side.ok("show", note, "--json").json()["updated"]
        assert updated.startswith("2090-01-01T10:10"), updated


def test_a_failing_remote_leaves_no_half_merge(tmp_path, remote):
    a = machine(tmp_path, "a")
    add(a, "Safe and sound", T[0])
    a.ok("sync", "--remote", remote)
    os.rename(remote, remote + ".gone")
    add(a, "Written while offline", T[1])
    result = a("sync")
    assert result.exit_code == 1 and result.stderr.startswith("error:")
    assert not (a.store / ".git" / "MERGE_HEAD").exists()
    assert git(a.store, "status", "--porcelain") == ""


@pytest.mark.parametrize("named", ["path", "file URL", "file URL naming a host",
                                   "path relative to the store"])
def test_a_ref_lock_a_killed_sync_left_on_a_remote_on_this_machine_is_removed_by_the_next(
        tmp_path, remote, named):
    """kill -9 of a sync's process group mid-push kills git's `receive-pack` too, holding the
    remote's `refs/heads/BRANCH.lock` (with the commit it was writing): every later push was
    refused, and sync said, after 5 attempts, that others kept pushing. The next sync finds
    the dead sync's record and removes that lock, on the remote as git finds it from the
    store (a relative path is the store's, a file URL's host is ignored)."""
    a = machine(tmp_path, "a")
    add(a, "Pushed before the kill", T[0])
    a.ok("sync", "--remote", {"path": remote, "file URL": f"file://{remote}",
                              "file URL naming a host": f"file://localhost{remote}",
                              "path relative to the store": remote}[named])
    if named == "path relative to the store":
        git(a.store, "remote", "set-url", "origin", f"../{Path(remote).name}")
    mine = add(a, "Written before the killed sync", T[1])
    plant_dead_holder(a.store, "sync")
    lock = Path(remote) / "refs" / "heads" / f"{_branch(a)}.lock"
    lock.write_text(git(a.store, "rev-parse", "HEAD"))  # what the killed push was writing
    report = a.ok("sync", "--json").json()
    assert report["pushed"] is True and report["attempts"] == 1
    assert not lock.exists()
    assert git(Path(remote), "rev-parse", _branch(a)).strip() == git(a.store, "rev-parse", "HEAD").strip()
    assert body_of(machine(tmp_path, "b", remote), mine) == "Written before the killed sync"


def test_the_remote_head_lock_a_killed_push_left_is_removed_by_the_next_sync(tmp_path, remote):
    """git locks the remote's HEAD as well as the branch when the branch HEAD names moves (for
    HEAD's reflog): kill -9 of a sync's process group mid-push left an empty `HEAD.lock` beside
    `refs/heads/BRANCH.lock`. The next sync removed only the branch's lock, and every later
    push, from every machine, was refused on `HEAD.lock`. Both are the dead sync's debris."""
    a = machine(tmp_path, "a")
    add(a, "Pushed before the kill", T[0])
    a.ok("sync", "--remote", remote)
    git(Path(remote), "symbolic-ref", "HEAD", f"refs/heads/{_branch(a)}")
    mine = add(a, "Written before the killed sync", T[1])
    plant_dead_holder(a.store, "sync")
    lock = Path(remote) / "refs" / "heads" / f"{_branch(a)}.lock"
    lock.write_text(git(a.store, "rev-parse", "HEAD"))
    head_lock = Path(remote) / "HEAD.lock"
    head_lock.write_text("")  # what git leaves there: it locks HEAD only for the reflog
    report = a.ok("sync", "--json").json()
    assert report["pushed"] is True
    assert not lock.exists() and not head_lock.exists()
    assert body_of(machine(tmp_path, "b", remote), mine) == "Written before the killed sync"


def test_the_remote_head_lock_beside_another_push_s_branch_lock_is_left(tmp_path, remote):
    """`HEAD.lock` is always empty (git takes it only for HEAD's reflog), so it says nothing
    of whose it is: beside a branch lock holding a commit no push from here wrote (a live
    push from another machine, made while a killed sync's record stands) it is that push's,
    and stays, as its branch lock does."""
    a = machine(tmp_path, "a")
    add(a, "Pushed before the lock", T[0])
    a.ok("sync", "--remote", remote)
    git(Path(remote), "symbolic-ref", "HEAD", f"refs/heads/{_branch(a)}")
    add(a, "Written while another machine pushes", T[1])
    plant_dead_holder(a.store, "sync")
    lock = Path(remote) / "refs" / "heads" / f"{_branch(a)}.lock"
    lock.write_text("0123456789abcdef0123456789abcdef01234567\n")  # another's push
    head_lock = Path(remote) / "HEAD.lock"
    head_lock.write_text("")
    assert a("sync").exit_code == 1
    assert lock.exists() and head_lock.exists()


@pytest.mark.parametrize("lock_made", ["with no crash", "before the killed sync began",
                                       "while a killed add held the store lock",
                                       "by a killed sync, naming a commit this store never had"])
def test_a_lock_on_the_remote_that_no_killed_sync_made_is_named_and_left(tmp_path, remote,
                                                                           lock_made):
    """A lock on the remote that is somebody's stays: no dead holder; one made before the
    dead sync took the store lock; one made while a dead command that never pushes held it;
    one naming a commit no push from here wrote. The sync says which file stops it, not that
    others kept pushing, and keeps the change committed here."""
    a = machine(tmp_path, "a")
    add(a, "Pushed before the lock", T[0])
    a.ok("sync", "--remote", remote)
    remote_head = git(Path(remote), "rev-parse", _branch(a)).strip()
    add(a, "Written while the remote is locked", T[1])
    lock = Path(remote) / "refs" / "heads" / f"{_branch(a)}.lock"
    lock.write_text(git(a.store, "rev-parse", "HEAD"))  # all but one as a push from here
    if lock_made == "before the killed sync began":
        plant_dead_holder(a.store, "sync")
        an_hour_ago = lock.stat().st_mtime - 3600
        os.utime(lock, (an_hour_ago, an_hour_ago))
    elif lock_made == "while a killed add held the store lock":
        plant_dead_holder(a.store, "add")  # no push: the lock is another git's
    elif lock_made != "with no crash":
        plant_dead_holder(a.store, "sync")
        lock.write_text("0123456789abcdef0123456789abcdef01234567\n")  # another's push
    result = a("sync")
    assert result.exit_code == 1
    assert result.stderr == (f"error: the remote's lock file {lock} exists: a git is updating the "
                             "remote, or one died there. If no git runs there, delete that file; "
                             "your changes are committed here, run `memctl sync` again\n")
    assert lock.exists()
    assert git(Path(remote), "rev-parse", _branch(a)).strip() == remote_head
    assert git(a.store, "status", "--porcelain") == ""
    lock.unlink()
    assert a.ok("sync", "--json").json()["pushed"] is True


def test_a_first_sync_that_meets_a_lock_on_the_remote_says_to_name_the_remote_again(
        tmp_path, remote):
    """A first `sync --remote URL` keeps the remote only once it succeeds, so the way to try
    again names it."""
    a = machine(tmp_path, "a")
    add(a, "Never pushed yet", T[0])
    lock = Path(remote) / "refs" / "heads" / f"{_branch(a)}.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.write_text("")
    result = a("sync", "--remote", remote)
    assert result.exit_code == 1
    assert result.stderr.endswith(f"run `memctl sync --remote {remote}` again\n")
    assert git(a.store, "remote") == ""
    lock.unlink()
    assert a.ok("sync", "--remote", remote, "--json").json()["pushed"] is True


def test_a_remote_lock_that_went_and_came_back_during_the_wait_is_a_live_git_s(tmp_path, remote):
    """The branch's lock on the remote, made during a killed sync: if it goes and another
    comes while memctl waits for it, the new one belongs to a git running now and stays."""
    from memctl.disk import gitops
    from memctl.disk.layout import state_path
    from memctl.disk.locking import CRASHED_FILE

    a = machine(tmp_path, "a")
    add(a, "Pushed before the kill", T[0])
    a.ok("sync", "--remote", remote)
    lock = Path(remote) / "refs" / "heads" / f"{_branch(a)}.lock"
    head = git(a.store, "rev-parse", "HEAD")
    crashed = state_path(a.store, CRASHED_FILE)
    lock.write_text(head)
    crashed.write_text(json.dumps({"pid": 1, "command": "sync", "since": time.time() - 2,
                                   "found": time.time()}))

    def another_git() -> None:
        time.sleep(0.2)
        lock.unlink()
        lock.write_text(head + "another push\n")

    replacing = threading.Thread(target=another_git)
    replacing.start()
    gitops.settle_remote_locks(a.store, remote, _branch(a))
    replacing.join()
    assert lock.read_text() == head + "another push\n"
    lock.unlink()
    lock.write_text(head)  # the same lock, left alone through the wait: the dead sync's
    crashed.write_text(json.dumps({"pid": 1, "command": "sync", "since": time.time() - 2,
                                   "found": time.time()}))
    gitops.settle_remote_locks(a.store, remote, _branch(a))
    assert not lock.exists()


def test_log_follows_a_note_through_edits_archiving_and_deletion(tmp_path):
    a = machine(tmp_path, "a")
    note = add(a, "A note with a long life", T[0])
    edit(a, note, "A note with a long life, edited", T[1])
    a.ok("archive", env={"MEMCTL_NOW": "2027-12-01T00:00:00.000Z"})
    assert "/archive/" in a.ok("show", note, "--json").json()["path"]
    a.ok("forget", note, env={"MEMCTL_NOW": "2027-12-02T00:00:00.000Z"})
    rows = a.ok("log", note, "--json").json()
    messages = [r["message"] for r in rows]
    assert messages[0].startswith("forget") and messages[-1].startswith("add")
    assert any(m.startswith("edit") for m in messages) and len(rows) >= 4
    assert all(set(r) == {"commit", "time", "message"} for r in rows)
    assert [r["time"] for r in rows] == sorted((r["time"] for r in rows), reverse=True)
    assert a("log", "0000000000000000").exit_code == 1
    # A hand-made id that ends another note's file name (`old-one.md` holds `old-one`): its
    # log is its own file's alone.
    folder = a.store / "demo" / "notes" / "fact"
    for name in ("one", "old-one"):
        (folder / f"{name}.md").write_text(f"---\nid: {name}\ntype: fact\n---\nNote {name}\n")
        git(a.store, "add", "-A")
        git(a.store, "commit", "-qm", f"by hand: {name}")
    assert [r["message"] for r in a.ok("log", "one", "--json").json()] == ["by hand: one"]
    # A file named by hand is followed through its renames (archived here), and after it is
    # forgotten, from where its tombstone says it was.
    (folder / "low2.md").write_text("---\nid: low-note2\ntype: fact\nupdated: "
                                    "2025-01-01T00:00:00Z\n---\nA hand-named note\n")
    git(a.store, "add", "-A")
    git(a.store, "commit", "-qm", "by hand: low2")
    a.ok("archive", env={"MEMCTL_NOW": "2027-12-03T00:00:00.000Z"})
    followed = [r["message"] for r in a.ok("log", "low-note2", "--json").json()]
    assert followed[0].startswith("archive sweep") and followed[-1] == "by hand: low2"
    a.ok("forget", "low-note2", env={"MEMCTL_NOW": "2027-12-04T00:00:00.000Z"})
    gone = [r["message"] for r in a.ok("log", "low-note2", "--json").json()]
    assert gone[0].startswith("forget") and gone[1:] == followed
    # A tombstone comes from any machine: a `path:` that is no place of a note in the store
    # is not asked of git (which refused the whole log for a path outside the repository).
    (a.store / ".tombstones" / "hostile1.md").write_text(
        "---\nid: hostile1\ndeleted: 2027-12-05T00:00:00Z\npath: ../outside.md\n---\n")
    git(a.store, "add", "-A")
    git(a.store, "commit", "-qm", "a tombstone by hand")
    assert [r["message"] for r in a.ok("log", "hostile1", "--json").json()] == [
        "a tombstone by hand"]


def test_log_of_a_note_like_another_lists_its_own_commits_alone(tmp_path):
    """Two short notes written at the same time are alike (their dates, their fields): `git
    log --follow` took the second for a copy of the first and went on with the first's
    history, so `memctl log` of the second listed the first's `add`, even once it was
    forgotten."""
    a = machine(tmp_path, "a")
    first = add(a, "Alpha note about kafka brokers", T[0])
    second = add(a, "Charlie note about nginx upstreams", T[0])
    for note, other in ((second, first), (first, second)):
        messages = [r["message"] for r in a.ok("log", note, "--json").json()]
        assert len(messages) == 1 and note in messages[0] and other not in messages[0]
    a.ok("forget", second, env={"MEMCTL_NOW": T[1]})
    messages = [r["message"] for r in a.ok("log", second, "--json").json()]
    assert len(messages) == 2 and all(second in m and first not in m for m in messages)


def files_with_id(root: Path, note_id: str) -> list[str]:
    """Every live file (not a conflict copy) that holds the note with this id."""
    return sorted(p for p, data in memory_files(root).items()
                  if not p.startswith(".conflicts/") and f"id: {note_id}\n".encode() in data)


@pytest.mark.parametrize("target", ["demo/notes/fact/shorter-name.md", "other/notes/fact/moved.md"])
@pytest.mark.parametrize("mover_syncs_last", [True, False])
def test_a_note_moved_on_one_machine_and_edited_on_the_other_keeps_the_move_and_the_edit(
        tmp_path, remote, target, mover_syncs_last):
    """Only one machine moved the file (a rename with `git mv`, a move to another project)
    and only the other edited it: both changes are taken (docs/sync.md, "How a merge
    decides"). The merge took the newer edit's path with its content and put the file back
    at its old name, silently."""
    a = machine(tmp_path, "a")
    note = add(a, "Never push straight to main", T[0])
    a.ok("sync", "--remote", remote)
    b = machine(tmp_path, "b", remote)
    [old] = files_with_id(a.store, note)

    def move() -> None:
        (a.store / target).parent.mkdir(parents=True, exist_ok=True)
        git(a.store, "mv", old, target)
        git(a.store, "commit", "-qm", "hand: a shorter name")

    if mover_syncs_last:
        edit(b, note, "Never push straight to main or release", T[1])
        b.ok("sync")
        move()
        report = a.ok("sync", "--json").json()
    else:
        move()
        a.ok("sync")
        edit(b, note, "Never push straight to main or release", T[1])
        report = b.ok("sync", "--json").json()
    assert report["conflicts"] == []
    a.ok("sync")
    b.ok("sync")
    for cli in (a, b):
        assert files_with_id(cli.store, note) == [target], "one file, where it was moved to"
        assert body_of(cli, note) == "Never push straight to main or release"
        assert not (cli.store / ".conflicts").exists()
        assert git(cli.store, "status", "--porcelain") == ""


def test_an_archiving_that_loses_to_a_later_edit_loses_its_move_too(tmp_path, remote):
    """Archiving moves the file and changes its status in one change: a later edit elsewhere
    wins over it as a whole (docs/lifecycle.md), the note stays where the edit has it, and
    the archived version is the conflict copy. A move that came with an edit goes with it."""
    a = machine(tmp_path, "a")
    note = add(a, "Archived on one machine, edited later on the other", T[0])
    a.ok("sync", "--remote", remote)
    b = machine(tmp_path, "b", remote)
    [old] = files_with_id(a.store, note)
    a.ok("archive", env={"MEMCTL_NOW": "2027-12-01T00:00:00.000Z"})
    assert "/archive/" in a.ok("show", note, "--json").json()["path"]
    a.ok("sync", env={"MEMCTL_NOW": "2027-12-01T00:00:00.000Z"})
    edit(b, note, "Still in use", "2027-12-02T00:00:00.000Z")
    report = b.ok("sync", "--json", env={"MEMCTL_NOW": "2027-12-02T00:00:00.000Z"}).json()
    [copy] = report["conflicts"]
    assert "/archive/" in copy
    assert files_with_id(b.store, note) == [old]
    assert body_of(b, note) == "Still in use"


# --- the state machine on real stores (slow: every step is a real command) --------------------

from hypothesis import HealthCheck, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule  # noqa: E402


class RealStores(RuleBasedStateMachine):
    """Random adds, edits and forgets on two real stores, moved by `sync` through a bare
    remote and by zip export/import in random orders: they converge, nothing deleted comes
    back older than its deletion, and the newest text of every note survives."""

    def __init__(self) -> None:
        super().__init__()
        import tempfile

        self.tmp = Path(tempfile.mkdtemp(prefix="memctl-sm-"))
        self.remote = str(self.tmp / "remote.git")
        subprocess.run(["git", "init", "-q", "--bare", self.remote], check=True)
        self.clock = 0
        self.newest: dict[str, tuple[int, str | None]] = {}  # id -> (time, text or None if deleted)

    def _now(self) -> str:
        self.clock += 1
        return f"2026-11-30T10:{self.clock // 60:02d}:{self.clock % 60:02d}.000Z"

    @initialize()
    def start(self):
        self.machines = [machine(self.tmp, "m0")]
        self.machines[0].ok("sync", "--remote", self.remote)
        self.machines.append(machine(self.tmp, "m1", self.remote))

    @rule(m=st.integers(0, 1))
    def add_note(self, m):
        text = f"Fact number {self.clock} written on m{m}"
        note_id = add(self.machines[m], text, self._now())
        self.newest[note_id] = (self.clock, text)

    def _live(self, m: int) -> list[str]:
        return sorted(n["id"] for n in self.machines[m].ok("list", "--json").json())

    @rule(m=st.integers(0, 1), pick=st.integers(0, 99))
    def edit_note(self, m, pick):
        live = self._live(m)
        if live:
            note_id = live[pick % len(live)]
            text = f"Edit {self.clock} of {note_id[-4:]} on m{m}"
            edit(self.machines[m], note_id, text, self._now())
            self.newest[note_id] = max(self.newest[note_id], (self.clock, text))

    @rule(m=st.integers(0, 1), pick=st.integers(0, 99))
    def hand_edit(self, m, pick):
        from memctl.core.clock import parse_time

        live = self._live(m)
        if live:
            note_id = live[pick % len(live)]
            cli = self.machines[m]
            path = cli.store / cli.ok("show", note_id, "--json").json()["path"]
            text = f"Hand edit {self.clock} of {note_id[-4:]} on m{m}"
            head, sep, _ = path.read_text().partition("\n---\n")
            path.write_text(head + sep + text + "\n")
            moment = parse_time(self._now()).timestamp()
            os.utime(path, (moment, moment))
            self.newest[note_id] = max(self.newest[note_id], (self.clock, text))

    @rule(m=st.integers(0, 1), pick=st.integers(0, 99))
    def forget_note(self, m, pick):
        live = self._live(m)
        if live:
            note_id = live[pick % len(live)]
            self.machines[m].ok("forget", note_id, env={"MEMCTL_NOW": self._now()})
            self.newest[note_id] = max(self.newest[note_id], (self.clock, None))

    @rule(m=st.integers(0, 1))
    def sync(self, m):
        self.machines[m].ok("sync")

    @rule(src=st.integers(0, 1))
    def carry_zip(self, src):
        archive = self.tmp / "carry.zip"
        self.machines[src].ok("export", str(archive))
        self.machines[1 - src].ok("import", str(archive))

    def teardown(self):
        if getattr(self, "machines", None):
            for cli in self.machines * 2:
                cli.ok("sync")
            first, second = (memory_files(cli.store) for cli in self.machines)
            assert first == second, "the stores did not converge"
            for cli in self.machines:
                no_markers(cli.store)
                live = set(self._live(self.machines.index(cli)))
                for note_id, (_when, text) in self.newest.items():
                    if text is None:
                        assert note_id not in live, f"{note_id} came back after its deletion"
                    else:
                        assert body_of(cli, note_id) == text, f"{note_id} lost its newest text"
        import shutil

        shutil.rmtree(self.tmp, ignore_errors=True)


@pytest.mark.slow
def test_real_stores_state_machine():
    from hypothesis.stateful import run_state_machine_as_test

    run_state_machine_as_test(RealStores, settings=settings(
        max_examples=int(os.environ.get("MEMCTL_SM_EXAMPLES", "8")), stateful_step_count=12, deadline=None,
        suppress_health_check=list(HealthCheck)))


def _push_by_hand(clone: Path, message: str) -> str:
    """Commit everything in a plain git clone of the remote and push it: what another tool,
    or a person with git alone, puts there. Returns the commit."""
    git(clone, "add", "-A")
    git(clone, "commit", "-qm", message)
    git(clone, "push", "-q", "origin", "HEAD")
    return git(clone, "rev-parse", "HEAD")


def test_a_remote_file_name_that_is_not_utf8_is_refused_never_merged_into_another(tmp_path, remote):
    """Two Latin-1 file names (caf\\xe9.md, caf\\xe8.md) pushed with plain git must never be
    merged into one `caf\\ufffd.md`: the sync refuses, naming the path, and nothing is
    pushed or changed here (docs/sync.md)."""
    laptop = machine(tmp_path, "laptop")
    laptop.ok("sync", "--remote", remote)
    other = tmp_path / "other"
    subprocess.run(["git", "clone", "-q", remote, str(other)], check=True)
    folder = os.path.join(os.fsencode(other), b"demo", b"notes", b"fact")
    os.makedirs(folder)
    for name, body in ((b"caf\xe9.md", b"Note one"), (b"caf\xe8.md", b"Note two")):
        with open(os.path.join(folder, name), "wb") as handle:
            handle.write(b"---\ntype: fact\n---\n" + body + b"\n")
    remote_head = _push_by_hand(other, "two notes")
    add(laptop, "Local change on the laptop", T[0])
    before = tree_snapshot(laptop.store)
    result = laptop("sync")
    assert result.exit_code == 1
    assert "demo/notes/fact/caf\\xe" in result.stderr and "not UTF-8" in result.stderr
    assert "Traceback" not in result.stderr and len(result.error.strip().splitlines()) == 1
    assert tree_snapshot(laptop.store) == before
    assert git(Path(remote), "rev-parse", "HEAD") == remote_head, "nothing pushed"
    names = subprocess.run(["git", "-C", remote, "ls-tree", "-r", "-z", "--name-only", "HEAD"],
                           capture_output=True, check=True).stdout.split(b"\0")
    assert b"demo/notes/fact/caf\xe9.md" in names and b"demo/notes/fact/caf\xe8.md" in names


@pytest.mark.parametrize("theirs", ["Deploy.md", "DEPLOY.md", "caf\u00e9.md"])
def test_a_remote_that_brings_a_name_differing_only_in_case_is_refused(tmp_path, remote, theirs):
    """A name pushed with plain git beside one of this store's that differs from it only in
    case or Unicode form (`Deploy.md` by `deploy.md`, `café` composed by decomposed): a disk
    that ignores case keeps one file for both, and the next commit there would lose a note.
    The sync refuses in one line naming both, as an import does, and nothing changes here or
    on the remote. Renamed by case alone, the file arrives as a rename."""
    ours = "cafe\u0301.md" if theirs.startswith("caf") else "deploy.md"
    laptop = machine(tmp_path, "laptop")
    (laptop.store / "demo" / "notes").mkdir(parents=True)
    (laptop.store / "demo" / "notes" / ours).write_text("# Deploy\n\nRuns on fridays.\n")
    laptop.ok("sync", "--remote", remote)
    other = tmp_path / "other"
    subprocess.run(["git", "clone", "-q", remote, str(other)], check=True)
    (other / "demo" / "notes" / theirs).write_text("# Deploy\n\nRuns on mondays.\n")
    remote_head = _push_by_hand(other, "a twin")
    add(laptop, "Local change on the laptop", T[0])
    before, head = tree_snapshot(laptop.store), git(laptop.store, "rev-parse", "HEAD")
    result = laptop("sync")
    assert result.exit_code == 1, result.stdout
    if theirs.startswith("caf"):  # one name to the eye: shown escaped, to be told apart
        theirs_shown, ours_shown = "caf\\xe9.md", "cafe\\u0301.md"
    else:
        theirs_shown, ours_shown = theirs, ours
    assert f"demo/notes/{theirs_shown}" in result.stderr, result.stderr
    assert f"demo/notes/{ours_shown}" in result.stderr, result.stderr
    assert "only in case" in result.stderr and "Traceback" not in result.stderr
    assert len(result.error.strip().splitlines()) == 1
    assert tree_snapshot(laptop.store) == before
    assert git(laptop.store, "rev-parse", "HEAD") == head
    assert git(Path(remote), "rev-parse", "HEAD") == remote_head, "nothing pushed"

    git(other, "rm", "-q", f"demo/notes/{ours}")  # a rename by case alone: no twin is left
    _push_by_hand(other, "rename by case")
    laptop.ok("sync")
    names = sorted(path.name for path in (laptop.store / "demo" / "notes").iterdir()
                   if path.is_file())
    assert names == [theirs], names


def test_project_folders_differing_only_in_case_are_refused_both_ways(tmp_path, remote):
    """Two machines that each made a project from a folder named `Demo` and `demo`: on a disk
    that ignores case, `Demo/MEMORY.md` and `demo/MEMORY.md` are one file. The sync that
    would take the other machine's refuses it; the machine that made the pair here is
    stopped before it pushes (else every other machine's sync would stop on it)."""
    laptop = machine(tmp_path, "laptop")
    laptop.ok("project", "add", "decisions", "PostgreSQL 16", "--project", "demo")
    laptop.ok("sync", "--remote", remote)
    other = tmp_path / "other"
    subprocess.run(["git", "clone", "-q", remote, str(other)], check=True)
    (other / "Demo").mkdir()
    (other / "Demo" / "MEMORY.md").write_text("# Memory\n- made on another machine\n")
    remote_head = _push_by_hand(other, "a project twin")
    before = tree_snapshot(laptop.store)
    result = laptop("sync")
    assert result.exit_code == 1 and "brings Demo beside demo" in result.stderr, result.stderr
    assert len(result.error.strip().splitlines()) == 1
    assert tree_snapshot(laptop.store) == before
    assert git(Path(remote), "rev-parse", "HEAD") == remote_head

    git(other, "rm", "-rq", "Demo")  # the other machine gives it up; this one makes a pair
    _push_by_hand(other, "no twin")
    (laptop.store / "demo" / "notes").mkdir(exist_ok=True)
    (laptop.store / "demo" / "notes" / "Plan.md").write_text("# Plan\n")
    (laptop.store / "demo" / "notes" / "plan.md").write_text("# plan\n")
    pushed_before = git(Path(remote), "rev-parse", "HEAD")
    result = laptop("sync")
    assert result.exit_code == 1, result.stdout
    assert "this store has demo/notes/" in result.stderr and "nothing was pushed" in result.stderr
    assert len(result.error.strip().splitlines()) == 1
    assert git(Path(remote), "rev-parse", "HEAD") == pushed_before, "nothing pushed"
    (laptop.store / "demo" / "notes" / "Plan.md").unlink()
    laptop.ok("sync")
    assert "demo/notes/plan.md" in git(Path(remote), "ls-tree", "-r", "--name-only", "HEAD")


def test_a_clone_onto_a_disk_that_ignores_case_refuses_a_remote_holding_twins(tmp_path, remote):
    """A remote holding `plan.md` and `Plan.md` (pushed with plain git). Where git records that
    the disk ignores case (`core.ignorecase`, as it sets it on macOS and Windows; set here
    through git's environment, this machine's disks tell case apart) the clone is refused
    before the checkout, which would keep one file for both; elsewhere it takes both."""
    laptop = machine(tmp_path, "laptop")
    laptop.ok("sync", "--remote", remote)
    other = tmp_path / "other"
    subprocess.run(["git", "clone", "-q", remote, str(other)], check=True)
    (other / "demo" / "notes").mkdir(parents=True)
    (other / "demo" / "notes" / "Plan.md").write_text("# Plan\n- the first\n")
    (other / "demo" / "notes" / "plan.md").write_text("# plan\n- the second\n")
    _push_by_hand(other, "twins by hand")
    ignoring = {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "core.ignorecase",
                "GIT_CONFIG_VALUE_0": "true"}
    target = tmp_path / "mac"
    result = Cli(target)("init", str(target), "--clone", remote, env=ignoring)
    assert result.exit_code == 1, result.stdout
    assert "has demo/notes/plan.md beside demo/notes/Plan.md" in result.stderr, result.stderr
    assert "nothing was cloned" in result.stderr
    assert len(result.error.strip().splitlines()) == 1
    assert not target.exists()
    assert [p.name for p in tmp_path.iterdir() if "clone" in p.name] == []
    linux = machine(tmp_path, "linux", remote)
    assert {p.name for p in (linux.store / "demo" / "notes").iterdir()} == {"Plan.md", "plan.md"}


@pytest.mark.parametrize("name, shown, said", [
    ("a\x01b.md", "a\\x01b.md", "control characters"),
    ("x\x1b[2Jy.md", "x\\x1b[2Jy.md", "control characters"),
    ("c\\d.md", "c\\d.md", "a backslash"),
])
def test_a_remote_file_name_no_import_takes_refuses_the_sync_and_the_clone(
        tmp_path, remote, name, shown, said):
    """A name with a control character (one that moves a terminal's cursor, too) or a
    backslash, pushed with plain git: no import takes it, and no other machine's checkout
    may hold it (Windows). The sync refuses, naming it escaped, and nothing changes here or
    there; a clone of that remote is refused, and leaves no folder (docs/sync.md)."""
    laptop = machine(tmp_path, "laptop")
    laptop.ok("sync", "--remote", remote)
    other = tmp_path / "other"
    subprocess.run(["git", "clone", "-q", remote, str(other)], check=True)
    (other / "demo").mkdir()
    (other / "demo" / name).write_text("---\ntype: fact\n---\nPlanted by hand\n")
    remote_head = _push_by_hand(other, "a planted name")
    add(laptop, "Local change on the laptop", T[0])
    before = tree_snapshot(laptop.store)
    result = laptop("sync")
    assert result.exit_code == 1, result.stdout
    assert f"demo/{shown}" in result.stderr and said in result.stderr, result.stderr
    assert "Traceback" not in result.stderr and len(result.error.strip().splitlines()) == 1
    assert "\x1b" not in result.stderr and "\x01" not in result.stderr
    assert tree_snapshot(laptop.store) == before
    assert git(Path(remote), "rev-parse", "HEAD") == remote_head, "nothing pushed"
    clone = tmp_path / "clone"
    cloned = laptop("init", str(clone), "--clone", remote)
    assert cloned.exit_code == 1 and f"demo/{shown}" in cloned.stderr, cloned.stderr
    assert len(cloned.error.strip().splitlines()) == 1 and not clone.exists()
    assert not [path for path in tmp_path.iterdir() if "memctl-clone" in path.name]


def test_a_file_named_here_with_a_backslash_is_never_synced(tmp_path, remote):
    """Made by hand in this store: the sync refuses before it commits or pushes anything (the
    other machines would refuse the remote from then on)."""
    laptop = machine(tmp_path, "laptop")
    laptop.ok("sync", "--remote", remote)
    (laptop.store / "demo").mkdir(exist_ok=True)
    (laptop.store / "demo" / "c\\d.md").write_text("---\ntype: fact\n---\nNamed by hand\n")
    head, remote_head = git(laptop.store, "rev-parse", "HEAD"), git(Path(remote), "rev-parse", "HEAD")
    result = laptop("sync")
    assert result.exit_code == 1 and "demo/c\\d.md: a backslash" in result.stderr, result.stderr
    assert len(result.error.strip().splitlines()) == 1
    assert git(laptop.store, "rev-parse", "HEAD") == head
    assert git(Path(remote), "rev-parse", "HEAD") == remote_head


def test_an_export_leaves_out_and_names_a_file_no_import_takes(tmp_path):
    """A note file named by hand with a backslash or a control character: the export names it
    as broken and leaves it out, and the zip imports into a new store."""
    laptop = machine(tmp_path, "laptop")
    add(laptop, "The cache is Redis 7", T[0])
    folder = laptop.store / "demo" / "notes" / "fact"
    for name in ("c\\d.md", "a\x01b.md"):
        (folder / name).write_text("---\ntype: fact\n---\nNamed by hand\n")
    out = tmp_path / "out.zip"
    exported = laptop.ok("export", str(out), "--json").json()
    broken = {item["path"]: item for item in exported["broken"]}
    assert set(broken) == {"demo/notes/fact/c\\d.md", "demo/notes/fact/a\x01b.md"}, broken
    fresh = machine(tmp_path, "fresh")
    imported = fresh("import", str(out), "--json")
    assert imported.exit_code == 0, imported.stderr
    assert "The cache is Redis 7" in fresh.ok("search", "Redis", "--json").stdout


def test_one_id_on_both_sides_with_a_body_that_is_not_utf8_keeps_both(tmp_path, remote):
    """Rule 6 of docs/sync.md (both notes with one id are kept) also when one side's file is
    not UTF-8 text: the sync succeeds, the bytes travel as they are, and the next sync too."""
    laptop = machine(tmp_path, "laptop")
    laptop.ok("sync", "--remote", remote)
    desktop = machine(tmp_path, "desktop", remote)
    rel = "demo/notes/fact/shared-note.md"
    latin = (b"---\nid: shared-note\ntype: fact\ncreated: 2026-11-05T10:00:00Z\n"
             b"updated: 2026-11-05T10:00:00Z\n---\nPushed from the laptop caf\xe9\n")
    mine = (b"---\nid: shared-note\ntype: fact\ncreated: 2026-11-01T10:00:00Z\n"
            b"updated: 2026-11-01T10:00:00Z\n---\nMy own note on the desktop\n")
    for cli, data in ((laptop, latin), (desktop, mine)):
        (cli.store / "demo/notes/fact").mkdir(parents=True, exist_ok=True)
        (cli.store / rel).write_bytes(data)
    laptop("sync")
    result = desktop("sync")
    assert result.exit_code == 0, result.stderr
    assert "Traceback" not in result.stderr
    files = memory_files(desktop.store)
    assert b"My own note on the desktop" in files[rel]
    assert latin in files.values(), "the laptop's note is kept, byte for byte, under a new name"
    assert desktop("sync").exit_code == 0


@pytest.mark.parametrize("branch", ["same", "other"])
def test_sync_refuses_a_remote_that_is_not_a_memctl_store(tmp_path, remote, branch):
    """As `memctl init --clone` does: a repository with commits and no memctl.toml is not
    merged into the store, and the store is not pushed into it (docs/sync.md)."""
    code = tmp_path / "code"
    code.mkdir()
    git(code, "init", "-q")
    if branch == "other":
        git(code, "checkout", "-q", "-b", "trunk")
    (code / "README.md").write_text("# a code repository\n")
    (code / "src").mkdir()
    (code / "src" / "main.py").write_text("print('hi')\n")
    (code / "demo").mkdir()
    (code / "demo" / "run.sh").write_text("#!/bin/sh\necho run\n")
    os.chmod(code / "demo" / "run.sh", 0o755)
    git(code, "add", "-A")
    git(code, "commit", "-qm", "code")
    git(code, "push", "-q", remote, "HEAD")
    heads = git(Path(remote), "for-each-ref")
    laptop = machine(tmp_path, "laptop")
    add(laptop, "A note of the laptop", T[0])
    before = tree_snapshot(laptop.store)
    result = laptop("sync", "--remote", remote)
    assert result.exit_code == 1, result.stderr
    assert "not a memctl store" in result.stderr and len(result.error.strip().splitlines()) == 1
    assert tree_snapshot(laptop.store) == before
    assert not (laptop.store / "README.md").exists() and not (laptop.store / "src").exists()
    assert git(Path(remote), "for-each-ref") == heads, "nothing pushed"
    assert git(laptop.store, "remote") == "", "the remote is not kept after a failed first sync"


def test_a_remote_whose_files_were_all_deleted_by_hand_is_named_as_such(tmp_path, remote):
    """Everything removed from the remote with plain git (`git rm -r .`): the sync said the
    remote was "not a memctl store" and to give another URL, though its history is this
    store's. It names the deletion and how to undo it; nothing here is merged away, and
    once the deletion is reverted there the sync goes through."""
    laptop = machine(tmp_path, "laptop")
    note = add(laptop, "A note the other machine deleted", T[0])
    laptop.ok("sync", "--remote", remote)
    other = tmp_path / "other"
    subprocess.run(["git", "clone", "-q", remote, str(other)], check=True)
    git(other, "rm", "-rq", ".")
    _push_by_hand(other, "delete everything")
    before = tree_snapshot(laptop.store)
    result = laptop("sync")
    assert result.exit_code == 1, result.stderr
    assert result.stderr.startswith(f"error: {remote}: its latest commit has no memctl.toml")
    assert "git revert" in result.stderr and len(result.error.strip().splitlines()) == 1
    assert tree_snapshot(laptop.store) == before
    git(other, "revert", "--no-edit", "HEAD")
    git(other, "push", "-q", "origin", "HEAD")
    laptop.ok("sync")
    assert laptop.ok("show", note, "--json").json()["id"] == note


def test_a_secret_that_arrives_by_sync_is_reported_masked(tmp_path, remote):
    """A sync cannot refuse what a collaborator already pushed (it would block every later
    sync), so it reports it: a warning and `received_secrets`, masked (docs/sync.md)."""
    key = "ghp_1234567890abcdefghijklmnopqrstuvwxyzAB"
    laptop = machine(tmp_path, "laptop")
    laptop.ok("sync", "--remote", remote)
    desktop = machine(tmp_path, "desktop", remote)
    laptop.ok("add", f"Deploy with {key} on prod", "--allow-secret", env={"MEMCTL_NOW": T[0]})
    assert laptop.ok("sync", "--json").json()["secrets"]
    result = desktop("sync", "--json")
    assert result.exit_code == 0, result.stderr
    received = result.json()["received_secrets"]
    assert [(item["kind"], item["masked"]) for item in received] == [("github-token", "ghp_****")]
    assert key not in result.stdout and key not in result.stderr
    assert "came from the remote" in result.stderr
    assert desktop.ok("sync", "--json").json()["received_secrets"] == [], "reported once"


def test_a_key_in_a_file_name_is_reported_by_sync_export_health_and_recall(tmp_path, remote):
    """A file named with a key (`ci-uses-ghp_….md`, pushed with plain git or dropped by hand)
    is refused by `import` (`guard_files`), so what carries or keeps one names it too: `sync`
    (`received_secrets`, then `secrets` when it goes on), `export` (the zip it writes is
    refused by its own import otherwise), `health` and `recall` (the note's path is in the
    block). Before, only the text was scanned: all said nothing, masked or not."""
    key = "ghp_1234567890abcdefghijklmnopqrstuvwxyzAB"
    laptop = machine(tmp_path, "laptop")
    laptop.ok("sync", "--remote", remote)
    other = tmp_path / "other"
    subprocess.run(["git", "clone", "-q", remote, str(other)], check=True)
    folder = other / "demo" / "notes" / "fact"
    folder.mkdir(parents=True)
    (folder / f"ci-uses-{key}-0000000000keyname.md").write_text(
        "---\nid: 0000000000keyname\ntype: fact\nproject: demo\n"
        "created: 2025-01-01T09:00:00.000Z\n---\nThe CI signs in with a token\n")
    _push_by_hand(other, "a note named with a key")
    result = laptop("sync", "--json")
    assert result.exit_code == 0, result.stderr
    received = result.json()["received_secrets"]
    assert [(item["kind"], item["masked"], item["line"]) for item in received] == [
        ("github-token", "ghp_****", 0)]
    assert received[0]["path"] == "demo/notes/fact/ci-uses-ghp_****-0000000000keyname.md"
    zipped = laptop("export", str(tmp_path / "out.zip"), "--json")
    assert zipped.exit_code == 0, zipped.stderr
    assert [item["kind"] for item in zipped.json()["secrets"]] == ["github-token"]
    assert "ci-uses-ghp_****" in zipped.stderr and "goes into the zip" in zipped.stderr
    health = laptop("health", "--json").json()
    assert [item["kind"] for item in health["secrets"]] == ["github-token"]
    recalled = laptop.ok("recall", "--json", "-p", "demo").json()
    assert recalled["secrets_left_out"] == 1 and recalled["notes"] == []
    for shown in (result, zipped):
        assert key not in shown.stdout and key not in shown.stderr
    # Named wherever the note is listed (here: not recalled for long), masked in each place.
    assert any("ci-uses-ghp_****" in entry["path"] for entry in health["unrecalled"])
    assert key not in json.dumps(health)
    assert key not in laptop("health").stdout


def test_pulled_names_the_id_a_note_holds_not_one_guessed_from_its_file_name(tmp_path, remote):
    laptop = machine(tmp_path, "laptop")
    laptop.ok("sync", "--remote", remote)
    desktop = machine(tmp_path, "desktop", remote)
    rel = "demo/notes/fact/runbook.md"
    (laptop.store / "demo/notes/fact").mkdir(parents=True, exist_ok=True)
    (laptop.store / rel).write_text("---\nid: 01jdz4k2m8x7b3qv\ntype: fact\n"
                                    "created: 2026-11-30T09:00:00.000Z\n---\nThe runbook\n")
    laptop.ok("sync")
    report = desktop.ok("sync", "--json").json()
    assert "01jdz4k2m8x7b3qv" in report["pulled"], report["pulled"]
    assert all("runbook" not in name for name in report["pulled"])


def test_a_local_file_name_that_is_not_utf8_stops_the_sync_before_anything_is_committed(
        tmp_path, remote):
    laptop = machine(tmp_path, "laptop")
    laptop.ok("sync", "--remote", remote)
    pushed = git(Path(remote), "rev-parse", "HEAD")
    laptop.ok("add", "Kept as it was", "--project", "demo")
    folder = laptop.store / "demo" / "notes" / "fact"
    with open(bytes(folder) + b"/caf\xe9.md", "wb") as handle:
        handle.write(b"---\ntype: fact\n---\nA Latin-1 name\n")
    before = git(laptop.store, "rev-parse", "HEAD")
    refused = laptop("sync")
    assert refused.exit_code == 1
    assert refused.stderr.startswith("error: demo/notes/fact/caf\\xe9.md: the file name is not")
    assert "Traceback" not in refused.stderr
    assert git(laptop.store, "rev-parse", "HEAD") == before  # nothing committed
    assert git(Path(remote), "rev-parse", "HEAD") == pushed  # nothing pushed
    os.rename(bytes(folder) + b"/caf\xe9.md", folder / "café.md")  # the fix it asks for
    laptop.ok("sync")
    assert git(Path(remote), "rev-parse", "HEAD") == git(laptop.store, "rev-parse", "HEAD")


@pytest.mark.parametrize("made", ["edited", "created"])
def test_a_file_saved_while_sync_merges_stops_it_and_is_kept(tmp_path, remote, monkeypatch, made):
    """An editor saves a note (or a new file where the merge brings one) after sync committed
    what was on disk and before it moves to the merge: git refuses to write over it. Sync
    says so in one line and merges nothing; the file stays as saved, and the next sync
    commits and merges it as any edit (the newer text wins, the other is a conflict copy)."""
    from memctl.exchange import sync as sync_module

    a = machine(tmp_path, "a")
    note = add(a, "The cache evicts with LRU", T[0])
    a.ok("sync", "--remote", remote)
    b = machine(tmp_path, "b", remote)
    edit(b, note, "The cache evicts with LFU", T[1])
    arriving = add(b, "Backups run at two", T[1])
    b.ok("sync", env={"MEMCTL_NOW": T[1]})
    path = a.store / a.ok("show", note, "--json").json()["path"]
    if made == "created":
        path = a.store / b.ok("show", arriving, "--json").json()["path"]
    saved = "---\ntype: fact\n---\nThe cache evicts with ARC, saved in vim\n" \
        if made == "created" else path.read_text().replace("with LRU", "with ARC, saved in vim")
    merge_with = sync_module._without_hostile_paths

    def saved_meanwhile(*args, **kwargs):
        path.write_text(saved)
        return merge_with(*args, **kwargs)

    monkeypatch.setattr(sync_module, "_without_hostile_paths", saved_meanwhile)
    head = git(a.store, "rev-parse", "HEAD")
    refused = a("sync", env={"MEMCTL_NOW": T[2]})
    assert refused.exit_code == 1 and refused.error.count("\n") == 1, refused.stderr
    assert refused.stderr.startswith(f"error: {path.relative_to(a.store).as_posix()} changed on "
                                     "disk while memctl sync ran; nothing was merged")
    assert "run the same `memctl sync` again" in refused.stderr
    assert path.read_text() == saved and git(a.store, "rev-parse", "HEAD") == head
    monkeypatch.setattr(sync_module, "_without_hostile_paths", merge_with)
    a.ok("sync", env={"MEMCTL_NOW": T[3]})
    b.ok("sync", env={"MEMCTL_NOW": T[3]})
    for side in (a, b):
        texts = [data.decode() for data in tree_snapshot(side.store).values()]
        assert any("ARC, saved in vim" in text for text in texts)
        assert any("Backups run at two" in text for text in texts)
    if made == "edited":
        assert body_of(a, note) == body_of(b, note) == "The cache evicts with ARC, saved in vim"


def test_a_fifo_where_a_note_was_stops_sync_with_one_line_naming_it(tmp_path, remote):
    """git cannot commit a FIFO: sync says which file, what to do, and changes nothing (a
    hand edit of another note stays on disk, uncommitted, for the next sync)."""
    a = machine(tmp_path, "a")
    note = add(a, "The queue drains every minute", T[0])
    other = add(a, "Backups run at two", T[0])
    a.ok("sync", "--remote", remote)
    path = a.ok("show", note, "--json").json()["path"]
    other_path = a.store / a.ok("show", other, "--json").json()["path"]
    other_path.write_text(other_path.read_text().replace("at two", "at three"))
    (a.store / path).unlink()
    os.mkfifo(a.store / path)
    head = git(a.store, "rev-parse", "HEAD")
    refused = a("sync", env={"MEMCTL_NOW": T[1]})
    assert refused.exit_code == 1 and refused.error.count("\n") == 1, refused.stderr
    assert refused.stderr.startswith(f"error: {path} is not a regular file (a FIFO, socket or "
                                     "device where a note was): git cannot commit it")
    assert git(a.store, "rev-parse", "HEAD") == head
    assert "at three" in other_path.read_text()
    (a.store / path).unlink()
    a.ok("sync", env={"MEMCTL_NOW": T[2]})
    assert "at three" in git(a.store, "show", f"HEAD:{other_path.relative_to(a.store).as_posix()}")


def test_the_kept_merge_keys_are_only_a_shortcut(tmp_path, remote):
    """A sync that brings news knows every note by the id in its file (rule 6), and keeps
    what it read by blob id in `.memctl/merge-keys.json`, so the next one reads only what is
    new. A blob id names its content, so an entry cannot go stale; a damaged file is read
    again from git, and the sync is the same."""
    laptop = machine(tmp_path, "laptop")
    first = add(laptop, "The first note, synced", T[0])
    laptop.ok("sync", "--remote", remote)
    desktop = machine(tmp_path, "desktop", remote)
    second = add(desktop, "A note from the desktop", T[1])
    desktop.ok("sync")
    assert laptop.ok("sync", "--json").json()["pulled"] == [second]
    kept = laptop.store / ".memctl" / "merge-keys.json"
    assert {f"id:{first}", f"id:{second}"} <= set(json.loads(kept.read_text())["keys"].values())
    third = add(desktop, "Another note from the desktop", T[2])
    desktop.ok("sync")
    kept.write_text("{not json")
    assert laptop.ok("sync", "--json").json()["pulled"] == [third]
    assert body_of(laptop, third) == "Another note from the desktop"
    assert f"id:{third}" in json.loads(kept.read_text())["keys"].values()
    # Keys kept by another reading of the files (another format) are read again, not trusted.
    fourth = add(desktop, "One more from the desktop", T[3])
    desktop.ok("sync")
    kept.write_text(json.dumps({"format": 0, "keys": {}}))
    assert laptop.ok("sync", "--json").json()["pulled"] == [fourth]
    assert json.loads(kept.read_text())["format"] == KEYS_FORMAT
    # Format 1 read a note whose `id:` line is broken by a hash of its path, where the id at
    # the end of its file name is now read (docs/format.md): its keys are read again too.
    fifth = add(desktop, "A fifth from the desktop", T[4])
    desktop.ok("sync")
    path = desktop.ok("show", fifth, "--json").json()["path"]
    blob = git(desktop.store, "rev-parse", f"HEAD:{path}").strip()
    kept.write_text(json.dumps({"format": 1, "keys": {f"{blob} {path}": "path:elsewhere"}}))
    assert laptop.ok("sync", "--json").json()["pulled"] == [fifth]
    assert json.loads(kept.read_text())["keys"][f"{blob} {path}"] == f"id:{fifth}"


def test_a_note_brought_back_by_hand_after_its_forget_is_revived_and_its_tombstone_removed(
        tmp_path, remote):
    """`forget`, sync, then `git checkout HEAD~1 -- PATH` and a plain commit: the note came
    back by a commit after its tombstone's. The next sync says so (`revived`) and removes
    the tombstone on both machines, never leaving the note alive beside it (docs/sync.md)."""
    a = machine(tmp_path, "a")
    note = add(a, "Try the Bun runtime for scripts", T[0])
    relpath = a.ok("show", note, "--json").json()["path"]
    a.ok("sync", "--remote", remote)
    b = machine(tmp_path, "b", remote)
    a.ok("forget", note, env={"MEMCTL_NOW": T[1]})
    a.ok("sync")
    b.ok("sync")
    git(a.store, "checkout", "HEAD~1", "--", relpath)
    git(a.store, "commit", "-qm", "hand: bring the note back")
    report = a.ok("sync", "--json").json()
    assert report["revived"] == [note] and report["pushed"]
    b.ok("sync")
    for cli in (a, b):
        assert not (cli.store / ".tombstones" / f"{note}.md").exists()
        assert body_of(cli, note) == "Try the Bun runtime for scripts"
        assert cli.ok("health", "--json").json()["tombstoned_notes"] == []
    assert memory_files(a.store) == memory_files(b.store)


def test_a_sync_with_no_remote_commits_local_changes_and_revives_at_once(tmp_path):
    """With no remote, sync still does its local half (docs/reliability.md): the changes left
    on disk are committed and a note brought back beside its tombstone is revived, both in
    the same run."""
    a = machine(tmp_path, "a")
    note = add(a, "Try the Bun runtime for scripts", T[0])
    relpath = a.ok("show", note, "--json").json()["path"]
    a.ok("forget", note, env={"MEMCTL_NOW": T[1]})
    git(a.store, "checkout", "HEAD~1", "--", relpath)
    git(a.store, "commit", "-qm", "hand: bring the note back")
    (a.store / "demo" / "notes" / "fact" / "by-hand.md").write_text("Written by hand\n")
    refused = a("sync")
    assert refused.exit_code == 1 and "your local changes were committed" in refused.stderr
    assert git(a.store, "status", "--porcelain") == ""
    assert not (a.store / ".tombstones" / f"{note}.md").exists()


def test_a_forget_whose_tombstone_came_last_is_not_undone_by_sync(tmp_path, remote):
    """The tombstone written after the note's last commit (a `forget` killed between its two
    writes, docs/reliability.md): sync leaves both for a person to decide, health names them."""
    a = machine(tmp_path, "a")
    note = add(a, "Keep me or not", T[0])
    a.ok("sync", "--remote", remote)
    (a.store / ".tombstones").mkdir(exist_ok=True)
    (a.store / ".tombstones" / f"{note}.md").write_text(
        f"---\nid: {note}\nupdated: {T[1]}\n---\nKeep me or not\n")
    report = a.ok("sync", "--json").json()
    assert report["revived"] == []
    assert (a.store / ".tombstones" / f"{note}.md").exists()
    assert [e["id"] for e in a.ok("health", "--json").json()["tombstoned_notes"]] == [note]


def _set_created(cli: Cli, note_id: str, created: str, now: str) -> None:
    """`memctl edit` that changes only the note's `created` (a decision dated as it was made)."""
    path = next(cli.store.rglob(f"*{note_id}.md"))
    script = cli.store.parent / "created_editor.py"
    script.write_text("import re, sys\n"
                      "path = sys.argv[1]\n"
                      "text = open(path, encoding='utf-8').read()\n"
                      f"text = re.sub(r'(?m)^created: .*$', 'created: {created}', text, count=1)\n"
                      "open(path, 'w', encoding='utf-8').write(text)\n")
    cli.ok("edit", note_id, env={"EDITOR": f"{sys.executable} {script}", "MEMCTL_NOW": now})
    assert f"created: {created}" in path.read_text()


def _notes_titled(cli: Cli, words: str) -> list[dict[str, object]]:
    listed = cli.ok("list", "--json", "--all-projects").json()
    return [row for row in listed if row["title"] == words]


def _corrected_on_b(tmp_path: Path, remote: str) -> tuple[Cli, Cli, str]:
    """Two machines sharing a note; b then corrects its `created` (not yet synced)."""
    a = machine(tmp_path, "a")
    a.ok("sync", "--remote", remote)
    b = machine(tmp_path, "b", remote)
    decision = add(a, "We chose PostgreSQL 16", T[0])
    a.ok("sync")
    b.ok("sync")
    _set_created(b, decision, "2026-10-01T00:00:00.000Z", T[1])
    return a, b, decision


def test_a_created_time_corrected_on_one_machine_is_an_edit_not_a_second_note(tmp_path, remote):
    """One machine corrects when a decision was made (`created`); the other adds an unrelated
    note, so its sync merges. The note stays one note with the corrected date on both
    machines: it used to come back as two, the unchanged old version under a new id
    (rule 6 of docs/sync.md is for two notes that never saw each other)."""
    a, b, decision = _corrected_on_b(tmp_path, remote)
    b.ok("sync")
    add(a, "CI runs on GitHub Actions", T[2])
    report = a.ok("sync", "--json").json()
    assert report["renamed"] == []
    b.ok("sync")
    for cli in (a, b):
        rows = _notes_titled(cli, "We chose PostgreSQL 16")
        assert [row["id"] for row in rows] == [decision]
        assert cli.ok("show", decision, "--json").json()["created"] == "2026-10-01T00:00:00.000Z"
    assert memory_files(a.store) == memory_files(b.store)


def test_a_created_time_corrected_on_one_machine_arrives_as_an_edit_by_import(tmp_path, remote):
    """The same through a zip: the export's history shows the two versions are one note."""
    a, b, decision = _corrected_on_b(tmp_path, remote)
    archive = tmp_path / "b.zip"
    b.ok("export", str(archive))
    report = a.ok("import", str(archive), "--json", env={"MEMCTL_NOW": T[2]}).json()
    assert not report.get("renamed"), report
    rows = _notes_titled(a, "We chose PostgreSQL 16")
    assert [row["id"] for row in rows] == [decision]
    assert a.ok("show", decision, "--json").json()["created"] == "2026-10-01T00:00:00.000Z"


def test_settings_changed_on_one_machine_do_not_flip_the_branch_on_every_sync(tmp_path, remote):
    """Each store keeps its own settings (docs/security.md): a machine whose settings differ
    from the remote's used to push a merge commit with its own on every sync, the other
    machine its own back, for ever. Now a sync whose only news is refused takes nothing,
    pushes nothing and makes no commit; the machines settle, each with its own settings."""
    a = machine(tmp_path, "a")
    a.ok("sync", "--remote", remote)
    b = machine(tmp_path, "b", remote)
    settings_b = (b.store / "memctl.toml").read_bytes()
    toml = a.store / "memctl.toml"
    toml.write_text(toml.read_text().replace("default_limit = 20", "default_limit = 30"))
    assert toml.read_bytes() != settings_b
    a.ok("sync")
    remote_head = git(a.store, "rev-parse", "HEAD").strip()
    for _ in range(3):
        for cli in (a, b):
            report = cli.ok("sync", "--json").json()
            assert report["merged"] is None, "a commit for nothing"
        assert git(Path(remote), "rev-parse", "HEAD").strip() == remote_head
    report = b.ok("sync", "--json").json()
    assert report["refused"] == ["memctl.toml"] and report["nothing_to_push"] is True
    assert (b.store / "memctl.toml").read_bytes() == settings_b, "the remote's were applied"
    assert b"default_limit = 30" in toml.read_bytes()
    shown = b.ok("sync")
    assert "nothing to push: the remote has every commit of this store" in shown.stderr
    # A real change still travels, both ways, and the stores settle again after it.
    note = add(b, "A note written on b", T[1])
    b.ok("sync")
    a.ok("sync")
    assert a.ok("show", note, "--json").json()["body"].strip() == "A note written on b"
    for cli in (a, b, a, b):
        cli.ok("sync")
    settled = git(Path(remote), "rev-parse", "HEAD").strip()
    for cli in (a, b):
        assert cli.ok("sync", "--json").json()["merged"] is None
    assert git(Path(remote), "rev-parse", "HEAD").strip() == settled
    assert (b.store / "memctl.toml").read_bytes() == settings_b
    assert b"default_limit = 30" in toml.read_bytes()


def test_the_same_demotion_by_the_sweeps_of_two_machines_is_no_conflict(tmp_path, remote):
    """`memctl archive` on two machines demotes the same idle note the same way, each with
    its own `demoted:` time: a stamp, like `updated`, so the sync keeps one version and makes
    no conflict copy for a person to review (docs/sync.md: "No copy is made when the loser
    differs from the winner only in its time stamp")."""
    a = machine(tmp_path, "a")
    note = a.ok("add", "Staging uses the small instance size", "--importance", "4", "--json",
                env={"MEMCTL_NOW": T[0]}).json()["id"]
    a.ok("sync", "--remote", remote, env={"MEMCTL_NOW": T[0]})
    b = machine(tmp_path, "b", remote)
    assert a.ok("archive", "--json", env={"MEMCTL_NOW": "2027-04-01T00:00:00.000Z"}
                ).json()["demoted"] == [note]
    assert b.ok("archive", "--json", env={"MEMCTL_NOW": "2027-04-02T00:00:00.000Z"}
                ).json()["demoted"] == [note]
    a.ok("sync", env={"MEMCTL_NOW": "2027-04-03T00:00:00.000Z"})
    report = b.ok("sync", "--json", env={"MEMCTL_NOW": "2027-04-03T00:00:00.000Z"}).json()
    assert report["conflicts"] == []
    assert not (b.store / ".conflicts").exists()
    assert b.ok("show", note, "--json").json()["importance"] == 3
