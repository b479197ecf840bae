"""`memctl sync`: commit, fetch, merge with the merge core, push. Never a force-push, never a
conflict marker, never a half-finished merge.

The merge is not `git merge`. memctl builds the merge commit itself, in git's object store,
from the merge core's decisions (notes matched by id, newest wins, losers kept as conflict
copies), and only then moves the working tree to it with a fast-forward. Until that moment
nothing in the store has changed, so a failure or a kill leaves the store as it was.

For people who run `git pull` by hand, `memctl.disk.gitops.install_merge_driver` registers `memctl merge-file`
as git's merge driver for `*.md` and counter files, so git resolves those the same way.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import shlex
import shutil
import tempfile
from collections import Counter
from collections.abc import Iterable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memctl.core.clock import format_time, latest_now
from memctl.core.errors import MemctlError
from memctl.core.ids import id_argument, is_id, valid_id
from memctl.core.merge import (
    CONFLICT_DIR,
    Entry,
    MergeKey,
    conflict_path,
    dump_counters,
    future_horizon,
    git_oid,
    key_name,
    merge_counters,
    merge_key,
    merge_snapshots,
    one_side,
    paths_from_base,
    seen_from_base,
)
from memctl.core.noteformat import parse_text
from memctl.core.secrets import carried
from memctl.core.stamp import Stamp, file_stamp
from memctl.disk import gitops
from memctl.disk.atomic import atomic_write_bytes, atomic_write_text
from memctl.disk.counters import export_machine, machine_id
from memctl.disk.gitops import (
    GitError,
    NotSha1Repository,
    commit_tree,
    git_reason,
    read_blobs,
    run_git,
    run_git_binary,
)
from memctl.disk.layout import ARCHIVED, NOTE, TOMBSTONE_DIR, classify, state_path
from memctl.disk.repositories import shown_url
from memctl.disk.settings import SETTINGS_FILE
from memctl.disk.storefiles import new_twin_in_tree, twin_names_shown
from memctl.disk.watchstate import process_alive
from memctl.exchange.bundle import character_problem, clashes, entry_for, kept_local, shown_name
from memctl.exchange.snapshot import (
    commit_id,
    has_commits,
    history_key,
    saved_by,
    scan_history,
    stamp_hand_edit,
    tree_of,
)
from memctl.exchange.transfer import absorb_counters, kept_counts, refresh_index
from memctl.index.db import ParseError, ensure_fresh
from memctl.store import Store

ATTEMPTS = 5
# Someone pushed first (or at the same moment): fetch, merge and push again.
_REJECTED = ("[rejected]", "non-fast-forward", "fetch first", "cannot lock ref", "but expected")


@dataclass
class SyncReport:
    remote: str
    branch: str
    committed: str | None = None  # the commit of local changes, if any
    merged: str | None = None  # the merge or fast-forward result, if the remote had news
    pulled: list[str] = field(default_factory=list)  # ids/paths that changed here
    conflicts: list[str] = field(default_factory=list)  # conflict copies made
    refused: list[str] = field(default_factory=list)  # remote paths never checked out here
    revived: list[str] = field(default_factory=list)  # deleted on one side, edited later on the other
    secrets: list[dict[str, object]] = field(default_factory=list)  # likely secrets pushed, masked
    # likely secrets that came from the remote, masked: reported, never refused (docs/sync.md)
    received_secrets: list[dict[str, object]] = field(default_factory=list)
    refused_from: str | None = None  # the remote commit that brought them
    pushed: bool = False
    # the remote holds every commit of this store, and its only news was refused: nothing
    # was merged, nothing needed pushing
    nothing_to_push: bool = False
    attempts: int = 0
    broken: list[ParseError] = field(default_factory=list)  # files that do not parse, synced as they are
    # those of them over the 10 MB memctl reads: no `memctl edit` opens them
    too_big_to_edit: list[str] = field(default_factory=list)
    # a file where the other side has a folder of the same name: {"path", "to"} (docs/sync.md)
    moved_aside: list[dict[str, str]] = field(default_factory=list)
    # a note that had to give its id to an earlier-created one: {"id", "to", "path"} (rule 6)
    renamed: list[dict[str, str]] = field(default_factory=list)
    counters_not_merged: str | None = None  # why, when the pulled counts were not merged
    # pulled counts left out under note ids that are no ids or likely secrets
    counters_refused: str | None = None

    def to_dict(self) -> dict[str, Any]:
        extra = {key: value for key, value in (("counters_not_merged", self.counters_not_merged),
                                               ("counters_refused", self.counters_refused))
                 if value}
        return {**extra, "remote": self.remote, "branch": self.branch, "committed": self.committed,
                "merged": self.merged, "pulled": self.pulled, "conflicts": self.conflicts,
                "pushed": self.pushed, "nothing_to_push": self.nothing_to_push,
                "attempts": self.attempts, "refused": self.refused,
                "refused_from": self.refused_from, "revived": self.revived,
                "secrets": self.secrets, "received_secrets": self.received_secrets,
                "moved_aside": self.moved_aside, "renamed": self.renamed,
                "broken": [{"path": p.path, "line": p.line, "message": p.message}
                           for p in self.broken]}


# --- the merge driver --------------------------------------------------------------------------


def merge_file(base: Path, ours: Path, theirs: Path, path: str) -> int:
    """git's merge driver: write the winner of ours/theirs into `ours`; keep the loser as a
    conflict copy in the working tree (committed by the next memctl sync). Always resolves."""
    data = [Path(p).read_bytes() if Path(p).is_file() else b"" for p in (base, ours, theirs)]
    first_seen = _first_recorded(path, data[1], data[2])
    mine = entry_for(path, data[1], first_seen.get(git_oid(data[1])))
    other = entry_for(path, data[2], first_seen.get(git_oid(data[2])))
    seen = frozenset({git_oid(data[0])}) if data[0] else frozenset()
    outcome = merge_key(mine, other, seen, seen, future_horizon(latest_now()))
    result = outcome.result or mine
    Path(ours).write_bytes(result.data)
    if outcome.copy is not None:
        top = run_git(Path.cwd(), "rev-parse", "--show-toplevel", check=False).stdout.strip()
        if top:
            target = Path(top) / outcome.copy.path
            if not target.exists():
                atomic_write_bytes(target, outcome.copy.data)
    return 0


def _first_recorded(path: str, *versions: bytes) -> dict[str, str]:
    """When git first recorded each version of `path` (blob id -> time), in this branch's
    history or that of the commit being merged (git names it in `GITHEAD_<id>` while its
    driver runs): a file without an `updated` stamp (MEMORY.md) is dated by it, as
    `build_merge_commit` dates it, so `git pull` and `memctl sync` pick the same winner
    (tests/test_sync.py). A version git never recorded has no time."""
    from datetime import UTC, datetime

    root = Path(run_git(Path.cwd(), "rev-parse", "--show-toplevel", check=False).stdout.strip()
                or ".")
    merging = [name[len("GITHEAD_"):] for name in os.environ if name.startswith("GITHEAD_")]
    revs = ["HEAD", *(rev for rev in merging if rev and all(c in "0123456789abcdef" for c in rev))]
    try:
        history = scan_history(root, revs, keep_pass=True)
    except (GitError, NotSha1Repository):
        return {}  # (undated: the versions' own `updated` stamps decide)
    times = history.first_time
    return {oid: format_time(datetime.fromtimestamp(times[(path, oid)], UTC))
            for oid in {git_oid(data) for data in versions if data} if (path, oid) in times}


# --- cloning ------------------------------------------------------------------------------------


def clone_store(url: str, path: Path) -> tuple[Store, list[str], bool]:
    """This machine's copy of a store from its git remote (`memctl init PATH --clone URL`).
    An empty remote gives a new store whose first sync publishes it. Returns the store, the
    paths of the remote that were not checked out (`refused_from_remote`), and whether it
    was cloned now (False: PATH was that clone already).

    The clone is made and checked out in a folder beside PATH and renamed to PATH whole: a
    clone killed half way leaves no half checked-out store behind, whose first sync would
    push the notes not yet written as deletions (tests/test_interrupted_git.py). Run again, it
    starts over."""
    path = Path(path).expanduser().absolute()
    if Path(url).expanduser().exists():
        url = str(Path(url).expanduser().resolve())
    if path.exists() and any(path.iterdir()):
        if (path / "memctl.toml").is_file() and _origin(path) == url:
            return _set_up_clone(path), [], False  # cloned before, or killed after the rename
        raise MemctlError(f"{path} exists and is not empty; choose a new folder for the clone")
    made = [folder for folder in path.parents if not folder.exists()]
    path.parent.mkdir(parents=True, exist_ok=True)
    _remove_abandoned_clones(path)
    staging = path.parent / f"{_STAGING_PREFIX.format(name=path.name)}{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    try:
        result = run_git(path.parent, "clone", "-q", "--no-checkout", "--", url, str(staging),
                         check=False)
        if result.returncode != 0:
            raise GitError(f"git clone {shown_url(url)} failed: "
                           f"{gitops.git_reason(result.stderr or result.stdout, result.returncode)}")
        gitops.require_sha1(staging, shown_url(url), "nothing was cloned")
        if not has_commits(staging):
            _take_the_remote_branch(staging, url)
        if has_commits(staging) and not _holds_settings(staging):
            # Refused before anything is checked out or renamed, so nothing of it reaches
            # PATH: a checkout left there was no store, and `init PATH` (files that are not
            # memory) and a clone again (PATH not empty) both refused it (docs/reliability.md).
            raise MemctlError(f"{shown_url(url)} is a git repository but not a memctl store (no "
                              f"{SETTINGS_FILE}); nothing was cloned: give the URL of a memctl "
                              f"store's repository, or make a new store with `memctl init {path}`")
        refused: list[str] = []
        if has_commits(staging):
            try:
                tree = tree_of(staging, "HEAD")  # a name no store may hold refuses the clone
            except MemctlError as exc:
                raise MemctlError(f"{shown_url(url)}: {exc}") from None
            twin = new_twin_in_tree((), tree) if gitops.ignores_case(staging) else None
            if twin is not None:
                # On a disk that ignores case, git would check out one file for the two
                # names, and the first sync from here would push one note over the other
                # (docs/sync.md). Checked before the checkout: nothing of it reaches PATH.
                raise MemctlError(
                    f"{shown_url(url)} has {_twins_shown(twin)}, names that differ only in case or "
                    "Unicode form: a disk that ignores case (macOS, Windows) keeps one file "
                    "for both; nothing was cloned: rename one of them on a machine that has "
                    "both (a note goes by its id: renaming its file is safe), sync it, then "
                    "clone again")
            refused = _check_out_safely(staging)
        os.replace(staging, path)  # PATH is missing or an empty folder
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        for folder in made:  # the folders made for PATH, deepest first, if still empty
            with contextlib.suppress(OSError):
                folder.rmdir()
        raise
    return _set_up_clone(path), refused, True


def _take_the_remote_branch(root: Path, url: str) -> None:
    """A fresh clone whose HEAD names a branch the remote does not have (a bare repository
    made by `git init --bare` names `master`; the machine that published the store uses
    `main`): git checks out nothing, and the store made there would push a branch of its own
    that no other machine ever merges. The clone takes the remote's one memctl branch
    instead; with several and none named by HEAD it cannot tell, and says how to decide
    (docs/sync.md). A remote without branches is empty: a new store starts there."""
    listed = run_git(root, "for-each-ref", "--format=%(refname:strip=3)", "refs/remotes/origin/",
                     check=False).stdout.split()
    branches = [name for name in listed if name != "HEAD"]
    if not branches:
        return
    stores = [name for name in branches if run_git(
        root, "cat-file", "-e", f"refs/remotes/origin/{name}:{SETTINGS_FILE}",
        check=False).returncode == 0]
    named = run_git(root, "symbolic-ref", "--short", "-q", "HEAD", check=False).stdout.strip()
    if not stores:
        raise MemctlError(f"{shown_url(url)} is a git repository but not a memctl store (no "
                          f"{SETTINGS_FILE} on any branch); nothing was cloned")
    if len(stores) > 1:
        raise MemctlError(
            f"{shown_url(url)} has several memctl branches ({', '.join(stores[:5])}) and its HEAD names none "
            f"of them ({named or 'no branch'}); nothing was cloned: point the remote's HEAD at "
            f"the branch the other machines sync (in the remote repository: git symbolic-ref "
            f"HEAD refs/heads/BRANCH), then clone again")
    branch = stores[0]
    run_git(root, "update-ref", f"refs/heads/{branch}", f"refs/remotes/origin/{branch}")
    run_git(root, "symbolic-ref", "HEAD", f"refs/heads/{branch}")
    run_git(root, "config", f"branch.{branch}.remote", "origin")
    run_git(root, "config", f"branch.{branch}.merge", f"refs/heads/{branch}")


# The folder a clone is made in before it is renamed into place: `.NAME.memctl-clone-PID`.
_STAGING_PREFIX = ".{name}.memctl-clone-"


def _remove_abandoned_clones(path: Path) -> None:
    """Staging folders of clones into the same PATH whose memctl was killed."""
    prefix = _STAGING_PREFIX.format(name=path.name)
    for folder in path.parent.glob(f"{glob.escape(prefix)}*"):
        pid = folder.name[len(prefix):]
        if pid.isascii() and pid.isdigit() and not process_alive(int(pid)):  # not `²`
            shutil.rmtree(folder, ignore_errors=True)


def _set_up_clone(path: Path) -> Store:
    """A checked-out clone made a store of this machine: its state, the merge driver in its
    own `.git/config` (`Store.init` installs it), and the other machines' counters read."""
    store, _created = Store.init(path)
    counters = {}
    for item in sorted((path / ".counters").glob("*.json")) if (path / ".counters").is_dir() else []:
        counters[f".counters/{item.name}"] = item.read_bytes()
    absorb_counters(store, counters)
    return store


def _check_out_safely(root: Path) -> list[str]:
    """Check out a fresh clone's HEAD without what a remote may not put here (links,
    submodules, `.memctl/`, `.git*` files other than `.gitattributes` and `.gitignore`):
    those are left out by a commit on top, named in its message. Returns the paths."""
    head = run_git(root, "rev-parse", "HEAD").stdout.strip()
    refused = sorted(path for path, (mode, _) in _entries(root, head).items()
                     if refused_from_remote(path, mode)
                     and not (path in (".gitattributes", ".gitignore") and mode == "100644"))
    if refused:
        tree = {path: entry for path, entry in tree_of(root, head).items() if path not in refused}
        message = (f"clone: leave out {len(refused)} path(s) a remote may not put in a store: "
                   f"{', '.join(refused[:5])}{' …' if len(refused) > 5 else ''}")
        commit = commit_tree(root, _write_tree(root, tree), [head], message)
        run_git(root, "update-ref", "HEAD", commit)
    run_git(root, "reset", "-q", "--hard", "HEAD")
    return refused


def _holds_settings(root: Path) -> bool:
    """Whether HEAD has `memctl.toml` as a file at its top: a store's commit. A link there
    would not be checked out (`refused_from_remote`), so it is no store either."""
    listed = run_git(root, "ls-tree", "-z", "HEAD", "--", SETTINGS_FILE).stdout
    return listed.startswith(("100644 blob ", "100755 blob "))


def _origin(root: Path) -> str | None:
    result = run_git(root, "remote", "get-url", "origin", check=False)
    return result.stdout.strip() or None if result.returncode == 0 else None


def _branch(root: Path) -> str:
    result = run_git(root, "symbolic-ref", "--short", "-q", "HEAD", check=False)
    name = result.stdout.strip()
    if not name:
        raise MemctlError("the store's git repository is not on a branch (detached HEAD); "
                          f"{gitops.way_back_to_branch(root)}, then sync again")
    return name


# --- sync ---------------------------------------------------------------------------------------


def sync(store: Store, remote: str | None = None, push: bool = True, attempts: int = ATTEMPTS) -> SyncReport:

    root = Path(store.root)
    if remote and Path(remote).expanduser().exists():
        remote = str(Path(remote).expanduser().resolve())  # a local path must not depend on the cwd
    with store.lock("sync"), ExitStack() as on_failure:
        # A merge or rebase under way, or a detached HEAD: refused before anything is written,
        # as every commit refuses them (gitops.commit_refusal).
        refusal = gitops.commit_refusal(root)
        if refusal:
            raise MemctlError(f"{refusal}; then sync again")
        has_commits(root)  # refuses a SHA-256 repository before anything is written
        # Sync writes `.git/config` (the remote, the merge driver) before its first commit
        # settles git's locks: a sync killed mid-`git config` left `config.lock`, which
        # would fail every later sync (tests/test_reliability.py).
        gitops.settle_index_lock(root, keep_crash=True)
        gitops.finish_interrupted_move(root)  # a sync killed mid fast-forward: finish it first
        _clear_debris(root)
        origin = _origin(root)
        again = "memctl sync"  # what runs this sync again
        if remote and origin is None:
            # A remote is kept only once a sync through it succeeded: a mistyped URL must not
            # make the next `sync --remote` refuse the right one (docs/sync.md). The note
            # written first says so to the next sync when this one is killed.
            atomic_write_text(state_path(root, UNCONFIRMED_REMOTE), remote + "\n")
            on_failure.callback(_forget_unconfirmed_remote, root)
            run_git(root, "remote", "add", "origin", remote)
            origin = remote
            again = f"memctl sync --remote {shlex.quote(remote)}"  # not kept unless it succeeds
        elif remote and origin != remote:
            raise MemctlError(f"the store's remote is already {shown_url(origin)}; change it with "
                              f"`git -C {root} remote set-url origin {remote}`")
        if origin is None:
            # The local half still happens: `sync` is how a change left on disk gets
            # committed (docs/reliability.md), with a remote or without one.
            _refuse_unsyncable_names(root)
            committed = commit_local_changes(store)
            revived = revive_beside_tombstones(store)  # both, whatever the first did
            done = "; your local changes were committed" if committed or revived else ""
            raise MemctlError(f"the store has no git remote{done}; run `memctl sync --remote "
                              "URL` once to share it")
        branch = _branch(root)
        # Before the commit below forgets a killed sync's record: its push's lock left on a
        # remote on this machine (tests/test_sync.py).
        gitops.settle_remote_locks(root, origin, branch)
        report = SyncReport(remote=shown_url(origin), branch=branch)
        gitops.install_merge_driver(root)
        _refuse_unsyncable_names(root)
        report.committed = commit_local_changes(store)
        report.revived.extend(revive_beside_tombstones(store))
        for attempt in range(1, attempts + 1):
            report.attempts = attempt
            fetched = run_git(root, "fetch", "-q", "origin",
                              f"+refs/heads/{branch}:refs/remotes/origin/{branch}", check=False)
            remote_ref = f"refs/remotes/origin/{branch}"
            if fetched.returncode != 0 and "couldn't find remote ref" not in fetched.stderr:
                raise GitError(f"git fetch from {shown_url(origin)} failed: "
                               f"{gitops.git_reason(fetched.stderr, fetched.returncode)}")
            if fetched.returncode == 0 and has_commits(root, remote_ref):
                _refuse_foreign_remote(root, origin, [remote_ref])
                _integrate(store, remote_ref, report)
            elif attempt == 1:
                others = _other_branches(root)
                stores = _store_branches(root, others)  # read before the probes go
                _refuse_foreign_remote(root, origin, others)
                if stores:
                    _refuse_another_branch(root, origin, branch, stores)
            if not push:
                break
            if report.nothing_to_push:
                _track(root, branch)
                break
            _refuse_pushing_twins(root, remote_ref)
            report.secrets = _secrets_to_push(root, remote_ref)
            pushed = run_git(root, "push", "--porcelain", "origin", f"HEAD:refs/heads/{branch}",
                             check=False)
            if pushed.returncode == 0:
                report.pushed = True
                _track(root, branch)
                break
            remote_lock = gitops.remote_lock_in(pushed.stderr)
            if remote_lock:
                # run_git tried again for LOCK_RETRY_SECONDS: a git running there would have
                # let go (it holds a ref's lock for milliseconds). Not "others are pushing".
                raise GitError(f"the remote's lock file {remote_lock} exists: a git is updating "
                               "the remote, or one died there. If no git runs there, delete "
                               f"that file; your changes are committed here, run `{again}` "
                               "again")
            if not any(marker in pushed.stdout + pushed.stderr for marker in _REJECTED):
                lines = [ln for ln in (pushed.stdout + pushed.stderr).splitlines()
                         if ln.startswith(("!", "error", "fatal", "remote:"))]
                raise GitError(f"git push to {shown_url(origin)} failed: {'; '.join(lines) or pushed.returncode}")
        else:
            raise MemctlError(f"the remote kept changing during {attempts} attempts (others are "
                              f"pushing); your changes are committed here, run `{again}` again")
        on_failure.pop_all()  # the sync succeeded: a remote it set stays
        _confirm_remote(root)
    return report


def _track(root: Path, branch: str) -> None:
    """The branch follows the remote's (what `git status` and `git pull` compare it with)."""
    run_git(root, "config", f"branch.{branch}.remote", "origin", check=False)
    run_git(root, "config", f"branch.{branch}.merge", f"refs/heads/{branch}", check=False)


# Names the remote a first `sync --remote URL` added, until that sync succeeds.
UNCONFIRMED_REMOTE = "sync-remote"


def _forget_unconfirmed_remote(root: Path) -> None:
    """Remove the remote a first sync added and did not get through (it failed, or was
    killed: then the next sync finds the note and does this first)."""
    note = state_path(root, UNCONFIRMED_REMOTE)
    try:
        url = note.read_text("utf-8").strip()
    except OSError:
        return
    if _origin(root) == url:
        run_git(root, "remote", "remove", "origin", check=False)
    _confirm_remote(root)


def _confirm_remote(root: Path) -> None:
    state_path(root, UNCONFIRMED_REMOTE).unlink(missing_ok=True)


def _clear_debris(root: Path) -> None:
    """What a sync killed before it finished left behind (the caller holds the store lock,
    so no sync is running): the remote its first run added, the private index folders of
    `_write_tree`, the refs of the foreign-remote probe."""
    _forget_unconfirmed_remote(root)
    for folder in (root / ".git").glob(f"{MERGE_FOLDER_PREFIX}*"):
        shutil.rmtree(folder, ignore_errors=True)
    probes = run_git(root, "for-each-ref", "--format=%(refname)", PROBE_REFS,
                     check=False).stdout.split()
    for ref in probes:
        run_git(root, "update-ref", "-d", ref, check=False)


PROBE_REFS = "refs/memctl-probe/"
MERGE_FOLDER_PREFIX = "memctl-merge-"


def _other_branches(root: Path) -> list[str]:
    """The remote's branches when it lacks this store's branch, fetched to private refs (for
    `_refuse_foreign_remote`; removed by it)."""
    # `--refmap=`: only the probe refs are written, never `refs/remotes/origin/*` (where a
    # foreign repository's branches would stay after it was refused).
    run_git(root, "fetch", "-q", "--refmap=", "origin", f"+refs/heads/*:{PROBE_REFS}*",
            check=False)
    listed = run_git(root, "for-each-ref", "--format=%(refname)", PROBE_REFS,
                     check=False).stdout.split()
    return [ref for ref in listed if ref]


def _store_branches(root: Path, refs: list[str]) -> list[str]:
    """The names of the branches among `refs` that hold a store (memctl.toml at their top)."""
    return [ref[len(PROBE_REFS):] if ref.startswith(PROBE_REFS) else ref for ref in refs
            if run_git(root, "cat-file", "-e", f"{ref}:{SETTINGS_FILE}", check=False).returncode == 0]


def _refuse_another_branch(root: Path, origin: str, branch: str, stores: list[str]) -> None:
    """The remote holds the store on other branches, not on this store's: pushing this one
    would start a second store beside theirs that no machine merges, each side never seeing
    the other's notes. Nothing is pushed; renaming this branch to theirs makes the next sync
    merge the two (docs/sync.md)."""
    listed = ", ".join(stores[:5]) + (" …" if len(stores) > 5 else "")
    local = [name for name in stores if has_commits(root, f"refs/heads/{name}")]
    if local:
        # This store has the remote's branch too (`git checkout -b exp` from it): renaming onto
        # it fails, and forcing it would drop its unpushed commits. Merged into it, nothing goes.
        # Branch names quoted: the remote's are untrusted, and a person pastes this into a shell.
        theirs = shlex.quote(local[0]) if len(local) == 1 else "BRANCH"
        way = (f"switch to this store's {theirs} and merge this branch into it (git -C {root} "
               f"switch {theirs} && git -C {root} merge --no-edit {shlex.quote(branch)})")
    else:
        theirs = shlex.quote(stores[0]) if len(stores) == 1 else "BRANCH"
        way = (f"rename this store's branch to the remote's (git -C {root} branch -m "
               f"{shlex.quote(branch)} {theirs})")
    raise MemctlError(
        f"{shown_url(origin)} has no branch {branch}, this store's branch, but holds the store on "
        f"{listed}; nothing was pushed (your changes are committed here): {way}, then run the "
        f"same `memctl sync` again, which merges it with the remote's")


def _refuse_foreign_remote(root: Path, origin: str, refs: list[str]) -> None:
    """A remote with commits of which none has memctl.toml is no store (a code repository):
    nothing of it is merged here and nothing is pushed into it, as `init --clone` refuses it
    (docs/sync.md). No commits at all (an empty repository) starts a store."""
    foreign = bool(refs) and not any(
        run_git(root, "cat-file", "-e", f"{ref}:{SETTINGS_FILE}", check=False).returncode == 0
        for ref in refs)
    # This store's own history, its settings deleted there since (everything removed with
    # plain git, say): merged, that would delete every note here. Named as what it is.
    emptied = foreign and any(
        run_git(root, "merge-base", "HEAD", ref, check=False).returncode == 0 for ref in refs)
    for ref in refs:  # the probes always go; a foreign branch's commits are not kept either
        if foreign or ref.startswith(PROBE_REFS):
            run_git(root, "update-ref", "-d", ref, check=False)
    if emptied:
        raise MemctlError(f"{shown_url(origin)}: its latest commit has no {SETTINGS_FILE}, which a commit "
                          f"after this store's removed there (all of the store's files were "
                          f"deleted, say); nothing was merged or pushed: if that was a "
                          f"mistake, undo it there (git revert), then sync again")
    if foreign:
        raise MemctlError(f"{shown_url(origin)} is a git repository but not a memctl store (no "
                          f"{SETTINGS_FILE}); nothing was merged or pushed: give the URL of "
                          "a store's remote, or an empty repository to start one")


def _secrets_to_push(root: Path, remote_ref: str) -> list[dict[str, object]]:
    """Likely secrets in the files this push carries (changed since the remote's branch, or
    every file on a first push), masked: `sync` warns, the push goes on (docs/security.md)."""
    if has_commits(root, remote_ref):
        listed = run_git(root, "diff", "--name-only", "-z", remote_ref, "HEAD").stdout
    else:
        listed = run_git(root, "ls-files", "-z").stdout
    files = {}
    for path in filter(None, listed.split("\0")):
        full = root / path
        if path.endswith(".md") and full.is_file() and not full.is_symlink():
            files[path] = full.read_bytes()
    return carried(files)


def _refuse_unsyncable_names(root: Path) -> None:
    """A file whose name is not UTF-8, or holds a control character or a backslash, here or
    in the last commit, stops the sync before anything is committed or pushed: the other
    machines would refuse it in every merge (tree_of), and no import takes it (docs/sync.md)."""
    status = run_git_binary(root, "status", "--porcelain", "-z", "--untracked-files=all")
    for record in status.split(b"\0"):
        try:
            path = record[3:].decode("utf-8")
        except UnicodeDecodeError:
            shown = record[3:].decode("utf-8", "backslashreplace")
            raise MemctlError(
                f"{shown}: the file name is not UTF-8 text; memctl never syncs it and changed "
                "nothing: rename the file (a UTF-8 name), then sync again") from None
        hazard = character_problem(path) if path else None
        if hazard:
            raise MemctlError(
                f"{shown_name(path)}: {hazard}; memctl never syncs it and changed nothing: "
                "rename the file, then sync again")
    tree_of(root, "HEAD")  # (a name committed by plain git is refused, named, the same way)


def commit_local_changes(store: Store) -> str | None:
    """Stamp uncommitted hand edits from their file times, write this machine's counters,
    and commit everything: the local side of the merge is then a commit like the remote's."""
    root = Path(store.root)
    status = run_git(root, "status", "--porcelain", "-z", "--untracked-files=all").stdout
    records = iter(status.split("\0"))
    latest = saved_by()
    for record in records:
        if len(record) < 4:
            continue
        if record[0] in "RC":
            next(records, None)  # a rename is followed by its old path
        full = root / record[3:]
        if not full.is_file() or full.is_symlink():
            continue
        try:
            stamped = stamp_hand_edit(record[3:], full.read_bytes(), min(full.stat().st_mtime, latest))
        except OSError:
            continue
        if stamped is not None:
            atomic_write_bytes(full, stamped)
    counters_path = root / ".counters" / f"{machine_id(store)}.json"
    own = kept_counts(export_machine(store))
    fresh = dump_counters(own)
    old = counters_path.read_bytes() if counters_path.is_file() else None
    new = merge_counters(old, fresh) if old is not None else fresh
    if new != old and (old is not None or own["notes"]):
        atomic_write_bytes(counters_path, new)
    return store.commit("sync: local changes")


def revive_beside_tombstones(store: Store) -> list[str]:
    """Notes brought back beside their tombstone by a commit made after it (a person's
    `git checkout OLD -- PATH`, `git commit`): the note stays, its tombstone is removed in one
    commit, and the ids are returned for `revived`, as when an edit after a deletion wins a
    merge (docs/sync.md). "After" is git's order: the last commit that touched the note
    descends from the last that touched its tombstone. Anything else (the tombstone the
    later one: a `forget` killed between its two writes; no order between them) is left as
    it is, and `memctl health` lists it (docs/health.md)."""
    root = Path(store.root)
    try:
        names = os.listdir(root / TOMBSTONE_DIR)
    except OSError:
        return []
    ids = [name[:-3] for name in names if name.endswith(".md") and valid_id(name[:-3])]
    if not ids:
        return []
    with ensure_fresh(store) as index:
        alive = index.paths_of(ids)
    revived: list[str] = []
    for note_id, paths in sorted(alive.items()):
        tombstone = f"{TOMBSTONE_DIR}/{note_id}.md"
        if len(paths) != 1 or not (root / tombstone).is_file():
            continue  # two files with the id: health names them; nothing decided here
        tombstoned, brought_back = (
            run_git(root, "log", "-1", "--format=%H", "--", path, check=False).stdout.strip()
            for path in (tombstone, paths[0]))
        if tombstoned and brought_back and tombstoned != brought_back \
                and _is_ancestor(root, tombstoned, brought_back):
            (root / tombstone).unlink()
            revived.append(note_id)
    if revived:
        store.commit(f"sync: {', '.join(revived)} brought back after being forgotten; "
                     "tombstone removed", [f"{TOMBSTONE_DIR}/{note_id}.md" for note_id in revived])
    return revived


# What git says when a file the fast-forward would write changed on disk (it writes nothing).
_REFUSED_AS_CHANGED = "would be overwritten by merge"


def _merge_refused(output: str, returncode: int) -> MemctlError:
    """Why the fast-forward to the merge did not happen. git refuses it when a file it would
    write was changed or made on disk after this sync committed (an editor saving right
    then): nothing is merged, the file stays as saved, and the next sync commits it and
    merges it like any edit (tests/test_sync.py)."""
    if _REFUSED_AS_CHANGED in output:
        changed = [line.strip() for line in output.splitlines() if line.startswith("\t")]
        shown = ", ".join(changed[:3]) + (" …" if len(changed) > 3 else "")
        return MemctlError(f"{shown or 'a file'} changed on disk while memctl sync ran; nothing "
                           "was merged and nothing was lost: run the same `memctl sync` again")
    return MemctlError(f"git merge failed: {git_reason(output, returncode)}")


def _is_ancestor(root: Path, older: str, newer: str) -> bool:
    return run_git(root, "merge-base", "--is-ancestor", older, newer, check=False).returncode == 0


def _integrate(store: Store, remote_ref: str, report: SyncReport) -> None:
    root = Path(store.root)
    head = run_git(root, "rev-parse", "HEAD").stdout.strip()
    theirs = run_git(root, "rev-parse", remote_ref).stdout.strip()
    report.nothing_to_push = False
    if head == theirs or _is_ancestor(root, theirs, head):
        return
    try:
        tree_of(root, theirs)  # a name that is not UTF-8 refuses it here, said to be the remote's
    except MemctlError as exc:
        raise MemctlError(f"the remote {report.remote}: {exc}") from None
    # A remote commit holding two notes with one id is merged, never taken as it is: the
    # merge gives the later-created one a new id (rule 6, docs/sync.md), as it does when the
    # two come from the two sides (tests/test_trust_boundary.py).
    behind = _is_ancestor(root, head, theirs)
    fast_forward = behind and not _brings_a_shared_id(root, head, theirs)
    target = theirs if fast_forward else build_merge_commit(root, head, theirs, report)
    target = _without_hostile_paths(root, head, theirs, target, report, behind)
    twin = new_twin_in_tree(tree_of(root, head), tree_of(root, target)) if target != head else None
    if twin is not None:
        # What an import refuses too: on a disk that ignores case, git would check out one
        # file for the two names, and the next commit would lose a note (docs/sync.md).
        raise MemctlError(
            f"the remote {report.remote} brings {_twins_shown(twin)}, names that differ only "
            "in case or Unicode form: a disk that ignores case (macOS, Windows) keeps one file "
            "for both; memctl refuses it and merged nothing: rename one of them where it was "
            "made, then sync again")
    if target == head:
        report.nothing_to_push = True  # the remote holds all of this store's commits
        return
    gitops.begin_move(root, head, target)  # finished by the next command if this one dies
    moved = run_git(root, "merge", "--ff-only", "-q", "--no-verify", target, check=False)
    if moved.returncode == 0 or _REFUSED_AS_CHANGED in moved.stderr:
        gitops.end_move(root)  # done, or refused before writing anything; else finished later
    if moved.returncode != 0:
        raise _merge_refused(moved.stderr, moved.returncode)
    report.merged = target
    changed = [p for p in run_git(root, "diff", "--name-only", "-z", head, target).stdout.split("\0") if p]
    if fast_forward:  # (a merge names what it took as it builds the commit)
        report.pulled.extend(_names(root, head, target, changed))
    arrived = {p: (root / p).read_bytes() for p in changed if p.endswith(".md")
               and not p.startswith(".conflicts/")
               and (root / p).is_file() and not (root / p).is_symlink()}
    # Each finding once, told by its fields (a look-up in the list per finding was
    # quadratic in a note of thousands of likely secrets: tests/test_linear_time.py).
    told = {_finding_key(item) for item in report.received_secrets}
    for item in carried(arrived):
        if _finding_key(item) not in told:
            told.add(_finding_key(item))
            report.received_secrets.append(item)
    absorbed = absorb_counters(
        store, {p: (root / p).read_bytes() for p in changed
                if p.startswith(".counters/") and (root / p).is_file()})
    report.counters_not_merged, report.counters_refused = absorbed.not_merged, absorbed.refused
    refresh_index(store, changed)


def _twins_shown(twin: tuple[str, str]) -> str:
    one, other = twin_names_shown(*twin)
    return f"{shown_name(one)} beside {shown_name(other)}"


def _refuse_pushing_twins(root: Path, remote_ref: str) -> None:
    """A pair of names this store made (by hand) that differ only in case or Unicode form
    and the remote does not hold both of: pushed, it would stop every other machine's sync
    (`_integrate` refuses it there), so it stops this one first (docs/sync.md)."""
    # By commit id, so the trees read by this sync's merge are not read again.
    remote = commit_id(root, remote_ref)
    theirs = tree_of(root, remote) if remote else {}
    twin = new_twin_in_tree(theirs, tree_of(root, commit_id(root, "HEAD") or "HEAD"))
    if twin is not None:
        raise MemctlError(
            f"this store has {_twins_shown(twin)}, names that differ only in case or Unicode "
            "form, and the remote does not: a disk that ignores case (macOS, Windows) keeps "
            "one file for both, and the sync of a machine without them refuses them; nothing "
            "was pushed (your changes are committed here): rename one of them, then run the "
            "same `memctl sync` again")


def _finding_key(item: dict[str, object]) -> tuple[object, ...]:
    """What tells two findings of `carried` apart (`{"path", "line", "kind", "masked"}`)."""
    return item["path"], item["line"], item["kind"], item["masked"]


def refused_from_remote(path: str, mode: str) -> bool:
    """What a remote may never put in this store's working tree (docs/security.md): a
    symbolic link or a submodule (either could point anywhere), anything in the local state
    folder `.memctl/`, and git's own `.git*` files in any folder: a `.gitattributes` there
    can make every later `git add` fail (`working-tree-encoding`), a `.gitignore` keep the
    notes beside it out of every commit (tests/test_sync.py)."""
    parts = path.split("/")
    return (mode in ("120000", "160000") or parts[0] == ".memctl" or parts[0].startswith(".git")
            or any(part in _GITS_OWN for part in parts))


# The files git itself reads in any folder (a `.gitkeep` is only a name: memctl's own keep
# empty folders in git).
_GITS_OWN = frozenset({".git", ".gitattributes", ".gitignore", ".gitmodules"})


def _without_hostile_paths(root: Path, head: str, theirs: str, target: str,
                           report: SyncReport, behind: bool) -> str:
    """`target`, or when it would bring a path `refused_from_remote` that this machine does not
    already have as it is, a merge commit of `head` and `theirs` with those paths kept as they
    are here (or left out): the store never checks one out, and stays usable. `head` itself
    when `behind` (it is an ancestor of `theirs`) and those paths were all that came."""
    tree = tree_of(root, target)
    ours = tree_of(root, head)
    # Every entry, submodules too (`tree_of` has the files only): a submodule the remote
    # adds must differ from this side's nothing, or it would be checked out unnamed.
    entries, our_entries = _entries(root, target), _entries(root, head)
    refused = sorted(path for path in set(entries) | {p for p in ours if kept_local(p)}
                     if (refused_from_remote(path, entries.get(path, ("100644", ""))[0])
                         or kept_local(path))
                     and our_entries.get(path) != entries.get(path))
    if not refused:
        return target
    for path in refused:
        if path in ours and ours[path][0] not in ("120000", "160000"):
            tree[path] = ours[path]  # this machine's own version (its .gitattributes, …)
        else:
            tree.pop(path, None)
    message = (f"sync: merge {theirs[:10]}, refusing {len(refused)} path(s) a remote may not "
               f"change: {', '.join(refused[:5])}{' …' if len(refused) > 5 else ''}")
    report.refused, report.refused_from = refused, theirs
    kept = _write_tree(root, tree)
    if behind and kept == run_git(root, "rev-parse", f"{head}^{{tree}}").stdout.strip():
        # The remote's only news is what is refused (another machine's settings): nothing to
        # take, and nothing of ours to push. A merge commit would put this machine's version
        # back on the remote, and the other machine's next sync its own: two stores with
        # different settings would then flip them with a new commit each sync, for ever
        # (docs/sync.md, "Settings and templates").
        return head
    return commit_tree(root, kept, [head, theirs], message)


def _entries(root: Path, rev: str) -> dict[str, tuple[str, str]]:
    """path -> (mode, object id) of every entry of a commit, files and submodules."""
    listing = run_git(root, "ls-tree", "-r", "-z", "--full-tree", rev).stdout
    entries: dict[str, tuple[str, str]] = {}
    for record in listing.split("\0"):
        meta, _, path = record.partition("\t")
        if path:
            mode, _, oid = meta.split()
            entries[path] = (mode, oid)
    return entries


def _names(root: Path, head: str, target: str, paths: list[str]) -> list[str]:
    """The ids (or paths) of what changed between two commits, read from the notes
    themselves (the new version, or the old one of a removed file): a note's file name need
    not end in its id (tests/test_sync.py)."""
    wanted = [p for p in paths if history_key(p) is not None
              and not p.startswith((".counters/", ".conflicts/"))]
    if not wanted:
        return []
    after, before = tree_of(root, target), tree_of(root, head)
    oids = {p: (after.get(p) or before.get(p) or ("", ""))[1] for p in wanted}
    blobs = read_blobs(root, {oid for oid in oids.values() if oid})
    return sorted({key_name(entry_for(p, blobs[oids[p]]).key) if oids[p] in blobs
                   else key_name(history_key(p) or MergeKey.for_path(p)) for p in wanted})


# The keys `_keys_by_content` read, by (blob id, path): a blob id names its content, so an
# entry never goes stale. Without it every sync that brings news read every note of the
# store (10k notes: +1.1 s a sync); with it, only the versions new since the last sync.
KEYS_FILE = "merge-keys.json"
# Raised whenever how `entry_for` reads a file's key changes: the kept keys of an older
# reading are then read again, never trusted. 2: a note whose `id:` line is missing or
# broken is known by the id at the end of its file name (docs/format.md), not its path.
KEYS_FORMAT = 2


def _keys_by_content(root: Path, trees: Iterable[dict[str, tuple[str, str]]]
                     ) -> dict[tuple[str, str], str]:
    """(path, blob id) -> the merge key of every note, episode and tombstone of these trees,
    read from the file itself: a file's name need not carry its id (a note renamed by hand,
    or pushed with plain git under any name), and two files with one id must meet in the
    merge wherever they are (rule 6, docs/sync.md). Each version is read once, ever: the
    keys are kept in `.memctl/merge-keys.json` (local, derived, delete it any time)."""
    kept = _load_keys(root)
    found: dict[tuple[str, str], str] = {}
    unknown: set[tuple[str, str]] = set()
    for tree in trees:
        for path, (_mode, oid) in tree.items():
            key = kept.get(f"{oid} {path}")
            if key is None:
                unknown.add((path, oid))
            else:
                found[(path, oid)] = key  # (only notes, episodes and tombstones are kept)
    missing = {(path, oid) for path, oid in unknown
               if MergeKey(history_key(path) or MergeKey.for_path(path)).is_id}
    if missing:
        blobs = read_blobs(root, {oid for _path, oid in missing})
        found.update({(path, oid): entry_for(path, blobs.get(oid, b"")).key
                      for path, oid in missing})
        keep = {f"{oid} {path}": key for (path, oid), key in found.items()
                if oid in blobs or (path, oid) not in missing}
        try:  # the versions of these trees only: the file never grows past the store
            where = state_path(root, KEYS_FILE)
            atomic_write_text(where, json.dumps({"format": KEYS_FORMAT, "keys": keep}))
            _LOADED_KEYS[str(where)] = (_stamp(where), keep)
        except (OSError, MemctlError):
            pass  # a read-only or linked state folder: read again next time
    return {pair: MergeKey(key) for pair, key in found.items()}


# The kept keys this process read or wrote, by file, with the file's stamp then: a sync
# that merges asks for them twice (`_brings_a_shared_id`, `build_merge_commit`), and a 10k
# store's file is ~1 MB of JSON. Read again whenever the file is not the one seen.
_LOADED_KEYS: dict[str, tuple[Stamp | None, dict[str, str]]] = {}


def _stamp(path: Path) -> Stamp | None:
    try:
        return file_stamp(path.stat())
    except OSError:
        return None


def _load_keys(root: Path) -> dict[str, str]:
    where = state_path(root, KEYS_FILE)
    stamp = _stamp(where)
    loaded = _LOADED_KEYS.get(str(where))
    if stamp is not None and loaded is not None and loaded[0] == stamp:
        return loaded[1]
    try:
        data = json.loads(where.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    keys = data.get("keys") if isinstance(data, dict) and data.get("format") == KEYS_FORMAT else None
    if not isinstance(keys, dict):
        return {}
    kept = {k: v for k, v in keys.items() if isinstance(k, str) and isinstance(v, str)}
    _LOADED_KEYS[str(where)] = (stamp, kept)
    return kept


def _brings_a_shared_id(root: Path, head: str, theirs: str) -> bool:
    """Does the remote's commit add or change a note whose id another file of it has?"""
    tree, before = tree_of(root, theirs), tree_of(root, head)
    content = _keys_by_content(root, [tree])
    claims = Counter(content.values())
    return any(claims[content[(path, entry[1])]] > 1 for path, entry in tree.items()
               if before.get(path) != entry and (path, entry[1]) in content)


def build_merge_commit(root: Path, ours: str, theirs: str, report: SyncReport) -> str:
    """The merge of two commits, made with the merge core, as a commit object (nothing in the
    working tree changes)."""
    from datetime import UTC, datetime

    base = run_git(root, "merge-base", ours, theirs, check=False).stdout.strip() or None
    trees = {"ours": tree_of(root, ours), "theirs": tree_of(root, theirs),
             "base": tree_of(root, base) if base else {}}
    changed = {p for p in set(trees["ours"]) | set(trees["theirs"])
               if trees["ours"].get(p) != trees["theirs"].get(p)}
    history = scan_history(root, [ours, theirs], keep_pass=True)
    content = _keys_by_content(root, trees.values())

    def keys_of(path: str, oid: str) -> set[str]:
        return {history_key(path) or MergeKey.for_path(path), content.get((path, oid), "")}

    keys = {key for side in trees.values() for p in changed if p in side
            for key in keys_of(p, side[p][1])} - {""}
    relevant = changed | {p for side in trees.values() for p, (_mode, oid) in side.items()
                          if keys_of(p, oid) & keys}
    blobs = read_blobs(root, {trees[s][p][1] for s in trees for p in relevant if p in trees[s]})

    renames: set[tuple[str, str]] = set()  # (old id, new id), inside a side or across

    def side_entries(name: str) -> dict[str, Entry]:
        versions = []
        for path in sorted(p for p in relevant if p in trees[name]):
            oid = trees[name][path][1]
            first = history.first_time.get((path, oid))
            fallback = format_time(datetime.fromtimestamp(first, UTC)) if first is not None else None
            versions.append(entry_for(path, blobs.get(oid, b""), fallback))
        entries, moved = one_side(versions)
        renames.update((key_name(before.key), key_name(after.key)) for before, after in moved)
        return entries

    mine, other, common = side_entries("ours"), side_entries("theirs"), side_entries("base")
    seen, paths = seen_from_base(common), paths_from_base(common)
    result = merge_snapshots(mine, other, seen, seen, future_horizon(latest_now()), paths, paths)
    renames.update(result.renamed.items())
    report.renamed.extend({"id": old_id, "to": new_id, "path": result.entries[
        MergeKey.for_id(new_id)].path} for old_id, new_id in sorted(renames)
        if MergeKey.for_id(new_id) in result.entries)
    report.revived.extend(key_name(key) for key, outcome in result.outcomes.items()
                          if outcome.revived)
    modes = {(p, oid): mode for s in trees.values() for p, (mode, oid) in s.items()}
    # The mode of a blob at another path (a conflict copy's): the first met, as `modes`
    # holds them, found at once (a pass over `modes` per entry was quadratic in conflicts).
    mode_of_blob: dict[str, str] = {}
    for (_path, oid), mode in modes.items():
        mode_of_blob.setdefault(oid, mode)
    final = {p: v for p, v in trees["ours"].items() if p not in relevant}
    new_blobs = []
    for entry in result.entries.values():
        mode = modes.get((entry.path, entry.oid)) or mode_of_blob.get(entry.oid, "100644")
        final[entry.path] = (mode, entry.oid)
        if entry.oid not in blobs:
            new_blobs.append(entry.data)
    for data in new_blobs:
        run_git_binary(root, "hash-object", "-w", "--stdin", input_bytes=data)
    for key, outcome in result.outcomes.items():
        if outcome.taken == "theirs" and (mine.get(key) is not None or outcome.result is not None):
            report.pulled.append(key_name(key))
    report.conflicts.extend(copy.path for copy in result.conflicts)
    _move_files_out_of_folders(final, report)
    tree = _write_tree(root, final)
    summary = f"{len(report.pulled)} from the remote" + (
        f", {len(result.conflicts)} conflict cop{'y' if len(result.conflicts) == 1 else 'ies'}"
        if result.conflicts else "")
    message = f"sync: merge {theirs[:10]} ({summary})"
    return commit_tree(root, tree, [ours, theirs], message)


def _move_files_out_of_folders(final: dict[str, tuple[str, str]], report: SyncReport) -> None:
    """A file one side has where the other has a folder of the same name (a stray top-level
    `zeta` and another machine's project `zeta/`): a tree cannot hold both, and git would
    keep the folder and drop the file. The file is moved aside into `.conflicts/`, as a
    losing version is, on every machine alike, and named (tests/test_sync.py)."""
    for path in clashes(final):
        mode, oid = final.pop(path)
        target = conflict_path(path, oid)
        while target in final:
            target += "_"
        final[target] = (mode, oid)
        report.conflicts.append(target)
        report.moved_aside.append({"path": path, "to": target})


def _write_tree(root: Path, files: dict[str, tuple[str, str]]) -> str:
    """A tree object from path -> (mode, blob id), through a private index file."""
    git_dir = Path(run_git(root, "rev-parse", "--absolute-git-dir").stdout.strip())
    with tempfile.TemporaryDirectory(dir=git_dir, prefix=MERGE_FOLDER_PREFIX) as folder:
        env = {"GIT_INDEX_FILE": str(Path(folder) / "index")}
        listing = "".join(f"{mode} {oid}\t{path}\0" for path, (mode, oid) in sorted(files.items()))
        run_git(root, "update-index", "-z", "--index-info", input_text=listing, env=env)
        return run_git(root, "write-tree", env=env).stdout.strip()


# --- history of one note -------------------------------------------------------------------------


def note_log(store: Store, ref: str) -> list[dict[str, str]]:
    """Every commit that touched a note, newest first, through renames, archiving, deletion."""
    from datetime import UTC, datetime

    ref = id_argument(ref)
    root = Path(store.root)
    wanted = ref.strip().lower()
    note_id, current = None, None
    try:
        note = store.find_note(ref)
        note_id, current = note.id, note.path
    except MemctlError:
        tombs = sorted(p.stem for p in (root / ".tombstones").glob("*.md") if p.stem.startswith(wanted)) \
            if wanted and (root / ".tombstones").is_dir() else []
        if len(tombs) == 1:
            note_id = tombs[0]
        elif len(tombs) > 1:
            raise MemctlError(f"id prefix {ref!r} is ambiguous: {', '.join(tombs[:5])}") from None
        elif is_id(wanted):
            note_id = wanted
        else:
            raise
    if note_id is None or not valid_id(note_id):  # never a pathspec of its own (`*`, `../`)
        raise MemctlError(f"{ref!r} is not a note id")
    # memctl names a note's file `<slug>-<id>.md`; a file made by hand is `<id>.md` or any
    # name (its current path below). `*<id>.md` also took other notes' files: `old-one.md`
    # for the hand-made id `one`. A slug joins its words with `-` too, so `*-<id>.md` only
    # for an id memctl made (no `-` in it).
    own = ["", "*-"] if is_id(note_id) else [""]
    specs = [*(f":(glob)**/{start}{note_id}.md" for start in own), f".tombstones/{note_id}.md",
             *(f":(glob){CONFLICT_DIR}/**/{start}{note_id}.*.md" for start in own)]
    # A file named by hand (`low2.md` holding `low-note2`) is found by its path, where it is
    # now or, forgotten, where its tombstone says it was: followed through its renames
    # (archived, restored, moved by hand), which no pattern of its name can find.
    last_path = current or _tombstone_path(store, note_id)
    if last_path:
        specs.append(last_path)
        # memctl's own moves (archive, restore) keep the name within the project's folder,
        # or add the id to it; git sees no rename in a small file whose fields changed.
        folder, _, name = last_path.partition("/")
        stem = _glob_literal(name.rpartition("/")[2].removesuffix(".md"))
        if folder and stem:
            folder = _glob_literal(folder)
            specs += [f":(glob){folder}/**/{stem}.md", f":(glob){folder}/**/{stem}-{note_id}.md"]
    fmt = "--format=%x1e%H%x1f%ct%x1f%s"
    # --full-history: git's default simplification drops a side of a merge whose version
    # did not win (this machine's losing edit) and the merge itself (tests/test_rough_edges.py).
    records = _log_records(run_git(root, "log", "--full-history", fmt, "--", *specs,
                                   check=False).stdout)
    if last_path:
        # --follow takes a new file for a copy of any file it is like (two short notes with
        # the same dates, ~60 %) and goes on with that file's history: another note's. The
        # commit that made this file is this note's; what git finds before it is not.
        followed = _log_records(run_git(root, "log", "--follow", "--name-status", fmt, "--",
                                        last_path, check=False).stdout)
        for commit, when, message, changes in followed:
            records.append((commit, when, message, changes))
            if changes.startswith("C"):
                break
    rows: dict[str, dict[str, str]] = {}
    for commit, when, message, _changes in records:
        rows.setdefault(commit, {"commit": commit, "when": when, "message": message})
    if not rows:
        raise MemctlError(f"no history for {ref!r}: no commit ever touched that note")
    ordered = sorted(rows.values(), key=lambda row: -int(row["when"]))  # stable: git's order
    return [{"commit": row["commit"],
             "time": format_time(datetime.fromtimestamp(int(row["when"]), UTC)),
             "message": row["message"]} for row in ordered]


def _log_records(out: str) -> list[tuple[str, str, str, str]]:
    """(commit, time, subject, the --name-status lines) of `git log`'s output in the format
    `%x1e%H%x1f%ct%x1f%s`."""
    records = []
    for record in out.split("\x1e"):
        if not record.strip("\n"):
            continue
        head, _, changes = record.partition("\n")
        commit, when, message = head.split("\x1f", 2)
        records.append((commit, when, message, changes.strip("\n")))
    return records


def _glob_literal(text: str) -> str:
    """`text` as itself in a glob pathspec (a hand-made name may hold `*`, `?` or `[`)."""
    return "".join("\\" + ch if ch in "*?[]\\" else ch for ch in text)


def _tombstone_path(store: Store, note_id: str) -> str | None:
    """Where a forgotten note's file was, as its tombstone says (`path:`): a note's path in
    the store, or None. A tombstone comes from any machine: read as every file is (no link
    followed), and its `path:` only as a place a note can be (never `../`, never a
    pathspec's `:(magic)`)."""
    try:
        text, _info = store.read_text(f"{TOMBSTONE_DIR}/{note_id}.md")
    except MemctlError:
        return None
    path = parse_text(text).meta.get("path")
    kind = classify(path) if isinstance(path, str) else None
    return path if kind is not None and kind[0] in (NOTE, ARCHIVED) else None
