"""The store's git repository in a state where no commit may be made (a detached HEAD, a
merge, rebase or cherry-pick under way): every write refuses to commit and leaves its
change on disk, the way out it names works and loses nothing, and health reports the state
(docs/reliability.md, docs/health.md). And git's index holding more than memctl's change: a
commit of memctl takes its own paths only."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from conftest import Cli, advised, git, machine, run_advice, run_memctl


def titles(cli: Cli) -> list[str]:
    return sorted(note["title"] for note in cli.ok("list", "--json").json())


def head(cli: Cli) -> str:
    return git(cli.store, "rev-parse", "HEAD").strip()


def branch(cli: Cli) -> str:
    return git(cli.store, "symbolic-ref", "--short", "HEAD").strip()


def test_add_on_a_detached_head_commits_nothing_and_the_way_out_keeps_the_note(tmp_path, remote):
    """`add` on a detached HEAD committed onto it with no word; `sync` then refused, and
    checking out the branch as it advised left the note in no branch, seen by no command
    (only the reflog had it). Now the add is refused, its file stays on disk, uncommitted,
    the command it names puts the store back on its branch with the file, and `sync`
    commits and pushes it."""
    a = machine(tmp_path, "a")
    a.ok("add", "First note: the API listens on 8080")
    a.ok("add", "Second note: staging uses port 6543")
    a.ok("sync", "--remote", remote)
    home = branch(a)
    git(a.store, "checkout", "-q", "HEAD~1")
    before = head(a)
    added = run_memctl("add", "Detached note: the CDN is Fastly", store=a.store)
    assert added.exit_code == 1 and added.stderr.count("\n") == 1
    assert added.stderr.startswith("error: ") and "detached HEAD" in added.stderr
    assert "Your change is on disk" in added.stderr
    # Run again, `add` would make a second note: the error names what commits this one.
    assert "`memctl sync` commits the change" in added.stderr
    assert "run the command again" not in added.stderr
    assert [command[3:] for command in advised(added.stderr)] == [["switch", home]]
    assert head(a) == before, "nothing was committed onto the detached HEAD"
    assert git(a.store, "status", "--porcelain").startswith("?? "), "the note is on disk"
    refused = a("sync")
    assert refused.exit_code == 1 and f"switch {home}" in refused.stderr

    run_advice(added.stderr)
    assert branch(a) == home
    assert "Detached note: the CDN is Fastly" in titles(a), "the file came along, uncommitted"
    a.ok("sync")
    assert git(a.store, "status", "--porcelain") == "", "sync committed it"
    b = machine(tmp_path, "b", remote)
    assert "Detached note: the CDN is Fastly" in titles(b)
    assert "Fastly" in b.ok("search", "fastly").stdout


@pytest.mark.parametrize("command", [["forget", "{id}"], ["supersede", "{id}", "{other}"],
                                     ["project", "add", "decisions", "REST, not GraphQL"]])
def test_no_write_command_commits_onto_a_detached_head(tmp_path, command):
    """One check in the one place every commit goes through: each write says so."""
    a = machine(tmp_path, "a")
    note = a.ok("add", "Kept on the branch", "--json").json()["id"]
    other = a.ok("add", "A second note", "--json").json()["id"]
    git(a.store, "checkout", "-q", "--detach")
    before = head(a)
    result = a(*[part.format(id=note, other=other) for part in command])
    assert result.exit_code == 1 and "detached HEAD" in result.stderr, result.stderr
    assert head(a) == before


def test_the_way_out_of_a_detached_head_brings_the_commits_only_it_has(tmp_path, remote):
    """A person committed on the detached HEAD: switching back alone would leave that commit
    behind, so the way out merges it too."""
    a = machine(tmp_path, "a")
    a.ok("add", "On the branch")
    a.ok("sync", "--remote", remote)
    git(a.store, "checkout", "-q", "--detach")
    (a.store / "demo" / "notes").mkdir(parents=True, exist_ok=True)
    (a.store / "demo" / "notes" / "by-hand.md").write_text("Committed by hand while detached\n")
    git(a.store, "add", "-A")
    git(a.store, "commit", "-qm", "by hand")
    result = a("add", "Written while detached")
    assert result.exit_code == 1 and "merge --no-edit" in result.stderr
    run_advice(result.stderr)
    a.ok("sync")
    assert {"Committed by hand while detached", "Written while detached"} <= set(titles(a))
    assert git(a.store, "status", "--porcelain") == ""
    assert "by hand" in git(a.store, "log", "--format=%s", "origin/" + branch(a))


def health_git(cli: Cli) -> tuple[dict, list[dict]]:
    report = cli.ok("health", "--json").json()
    return report["git"], [p for p in report["problems"] if p["kind"] == "git"]


def test_health_reports_a_detached_head_as_a_git_problem(tmp_path, remote):
    a = machine(tmp_path, "a")
    a.ok("add", "A note")
    a.ok("sync", "--remote", remote)
    state, problems = health_git(a)
    assert problems == [] and state["blocked"] is None
    git(a.store, "checkout", "-q", "--detach")
    state, problems = health_git(a)
    assert state["branch"] == "HEAD" and "detached HEAD" in state["blocked"]
    assert state["unpushed"] is None, "no branch, so nothing to count against its upstream"
    assert len(problems) == 1 and problems[0]["count"] == 1
    assert "detached HEAD" in problems[0]["message"] and "switch" in problems[0]["message"]
    strict = a("health", "--strict")
    assert strict.exit_code == 1 and "detached HEAD" in strict.stderr


def _conflicting_branches(store: Path) -> None:
    """`side` and the current branch each change `scratch.txt` its own way."""
    (store / "scratch.txt").write_text("base\n")
    git(store, "add", "scratch.txt")
    git(store, "commit", "-qm", "base")
    git(store, "branch", "side")
    (store / "scratch.txt").write_text("ours\n")
    git(store, "commit", "-qam", "ours")
    git(store, "checkout", "-q", "side")
    (store / "scratch.txt").write_text("theirs\n")
    git(store, "commit", "-qam", "theirs")
    git(store, "checkout", "-q", "-")


@pytest.mark.parametrize("operation,what", [(["merge", "side"], "a merge"),
                                            (["rebase", "side"], "a rebase"),
                                            (["cherry-pick", "side"], "a cherry-pick")])
def test_health_reports_a_git_operation_under_way(tmp_path, operation, what):
    """Every write was refused in the middle of a merge or rebase, and health said nothing
    of it (a rebase's detached HEAD is named as the rebase it is)."""
    a = machine(tmp_path, "a")
    a.ok("add", "A note")
    _conflicting_branches(a.store)
    stopped = subprocess.run(["git", "-C", str(a.store), *operation], capture_output=True)
    assert stopped.returncode != 0, "git stopped at the conflict"
    state, problems = health_git(a)
    assert len(problems) == 1 and f"in the middle of {what}" in problems[0]["message"]
    assert "detached" not in problems[0]["message"]
    added = a("add", "Written meanwhile")
    assert added.exit_code == 1 and f"in the middle of {what}" in added.stderr


def test_a_store_whose_git_folder_is_elsewhere_refuses_a_detached_head_too(tmp_path):
    """A store in a linked worktree (`.git` is a file naming git's folder, as with
    `--separate-git-dir` or a submodule) is checked where git keeps its HEAD: a detached
    HEAD there refuses the commit and health reports it, as in any store."""
    main = machine(tmp_path, "main")
    main.ok("add", "First note: the API listens on 8080")
    linked = tmp_path / "linked"
    git(main.store, "worktree", "add", "-q", "--detach", str(linked), "HEAD")
    assert (linked / ".git").is_file()
    before = git(linked, "rev-parse", "HEAD").strip()
    added = run_memctl("add", "Written on a detached worktree", store=linked)
    assert added.exit_code == 1 and "detached HEAD" in added.stderr, added.stderr
    assert git(linked, "rev-parse", "HEAD").strip() == before
    report = run_memctl("health", "--json", store=linked).json()
    assert report["git"]["blocked"] and "detached HEAD" in report["git"]["blocked"]


def test_an_import_on_a_detached_head_changes_nothing_and_says_why(tmp_path):
    """An import checks what would refuse its commit before it writes: one line, the store
    as it was, no journal (not a rollback after the files were written)."""
    sender, here = machine(tmp_path, "sender"), machine(tmp_path, "here")
    sender.ok("add", "Imported note: the queue is SQS")
    archive = tmp_path / "sender.zip"
    sender.ok("export", str(archive))
    here.ok("add", "First note: the API listens on 8080")
    here.ok("add", "Second note: staging uses port 6543")
    git(here.store, "checkout", "-q", "HEAD~1")
    before = git(here.store, "status", "--porcelain")
    imported = run_memctl("import", str(archive), store=here.store)
    assert imported.exit_code == 1 and imported.stderr.count("\n") == 1, imported.stderr
    assert imported.stderr.startswith("error: cannot import: ") and "detached HEAD" in imported.stderr
    assert imported.stderr.rstrip().endswith("nothing was changed")
    assert git(here.store, "status", "--porcelain") == before
    assert not list((here.store / ".memctl").glob("txn-*"))


def _hand_note(note_id: str, text: str) -> str:
    return f"---\nid: {note_id}\ntype: fact\n---\n{text}\n"


def test_a_commit_of_memctl_carries_nothing_else_that_git_s_index_holds(tmp_path, remote):
    """memctl committed git's whole index: a note staged by hand and then deleted, and a
    blob left staged for a file on no disk (what an import rolled back leaves when git
    cannot write its index back), went into the next `add`'s commit, and `sync` pushed
    notes that no disk holds to every clone. memctl's commit now holds its own change only
    (`git commit --only`); a change staged by hand stays staged, and `memctl sync` commits
    what is on disk (docs/reliability.md)."""
    a = machine(tmp_path, "a")
    first = a.ok("add", "First note: the API listens on 8080", "--json").json()
    a.ok("sync", "--remote", remote)
    folder = first["path"].rsplit("/", 1)[0]
    deleted = f"{folder}/staged-then-deleted.md"
    (a.store / deleted).write_text(_hand_note("0000000000gone01", "Deleted by hand: port 1111"))
    git(a.store, "add", deleted)
    (a.store / deleted).unlink()
    left = f"{folder}/left-by-an-import.md"
    blob = subprocess.run(["git", "-C", str(a.store), "hash-object", "-w", "--stdin"],
                          input=_hand_note("0000000000left01", "Rolled back: port 2222"),
                          capture_output=True, text=True, check=True).stdout.strip()
    git(a.store, "update-index", "--add", "--cacheinfo", f"100644,{blob},{left}")
    staged = f"{folder}/staged-by-hand.md"
    (a.store / staged).write_text(_hand_note("0000000000hand01", "Staged by hand: port 3333"))
    git(a.store, "add", staged)

    second = a.ok("add", "Second note: staging uses port 6543", "--json").json()
    a.ok("forget", first["id"])
    committed = git(a.store, "ls-tree", "-r", "--name-only", "HEAD").split("\n")
    assert second["path"] in committed and first["path"] not in committed
    assert not {deleted, left, staged} & set(committed), "only memctl's own change is committed"
    still = git(a.store, "diff", "--cached", "--name-only", "HEAD").split()
    assert sorted(still) == sorted([deleted, left, staged]), "what was staged stays staged"

    a.ok("sync")
    assert git(a.store, "status", "--porcelain") == ""
    committed = git(a.store, "ls-tree", "-r", "--name-only", "HEAD").split("\n")
    assert staged in committed and not {deleted, left} & set(committed)
    for path in (deleted, left):
        assert git(a.store, "log", "--all", "--format=%h", "--", path) == "", f"{path} never committed"
    b = machine(tmp_path, "b", remote)
    assert titles(b) == sorted(["Second note: staging uses port 6543", "Staged by hand: port 3333"])


def test_a_note_renamed_with_git_mv_then_changed_by_memctl_leaves_no_old_copy_in_head(tmp_path):
    """A note renamed with `git mv` has left git's index, so `ls-files --deleted` no longer
    names its old path; the commit of memctl's own change starts from HEAD, which still
    holds it. Forgotten (or edited) after the rename, the note stayed in HEAD at its old
    path beside the tombstone (or the new copy): a note no disk holds, the same id twice."""
    a = machine(tmp_path, "a")
    forgotten = a.ok("add", "The cache is redis seven", "--json").json()
    edited = a.ok("add", "The queue is rabbitmq three", "--json").json()
    folder = forgotten["path"].rsplit("/", 1)[0]
    git(a.store, "mv", forgotten["path"], f"{folder}/cache-renamed-by-hand.md")
    git(a.store, "mv", edited["path"], f"{folder}/queue-renamed-by-hand.md")
    a.ok("forget", forgotten["id"])
    a.ok("supersede", edited["id"],
         a.ok("add", "The queue is kafka now", "--force", "--json").json()["id"])
    committed = git(a.store, "ls-tree", "-r", "--name-only", "HEAD").split("\n")
    assert forgotten["path"] not in committed and edited["path"] not in committed
    assert f"{folder}/queue-renamed-by-hand.md" in committed
    assert f"{folder}/cache-renamed-by-hand.md" not in committed
    assert git(a.store, "status", "--porcelain") == ""


def test_a_file_named_head_in_the_store_never_lets_a_hand_staged_change_ride_along(tmp_path):
    """What else git's index holds is asked with `git diff-index --cached HEAD`; a file named
    `HEAD` at the top of the store made that argument ambiguous, git refused, and memctl
    committed its whole index again: a note staged by hand and then deleted went in."""
    a = machine(tmp_path, "a")
    first = a.ok("add", "First note: the API listens on 8080", "--json").json()
    (a.store / "HEAD").write_text("a file a person keeps here\n")
    git(a.store, "add", "HEAD")
    git(a.store, "commit", "-qm", "a person's file named HEAD")
    deleted = f"{first['path'].rsplit('/', 1)[0]}/staged-then-deleted.md"
    (a.store / deleted).write_text(_hand_note("0000000000gone01", "Deleted by hand: port 1111"))
    git(a.store, "add", deleted)
    (a.store / deleted).unlink()
    second = a.ok("add", "Second note: staging uses port 6543", "--json").json()
    committed = git(a.store, "ls-tree", "-r", "--name-only", "HEAD").split("\n")
    assert second["path"] in committed and deleted not in committed
