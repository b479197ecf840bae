"""Which project a git repository stands for, when neither `--project` nor `MEMCTL_PROJECT`
names one (docs/agents.md, "Which project a repository is").

- **One repository, one project**: the name is that of the folder of the repository's main
  working tree, so a `git worktree add ../shop-api-feature-x` works on `shop-api`'s memory.
- **Two repositories, two projects**, even when their folders have the same name. The store
  records in `.memctl/repositories.json` (local to this machine) which repository holds each
  name it gave: the first keeps the folder's name; another gets the name followed by eight hex
  digits of a checksum of what identifies it (`shop-api-5e0a1b2c`), the same every time. A
  repository is known by its first commit (the same in every clone, whatever its remote's URL),
  else by its `origin` remote (host and path), else by its folder (`same_repository`).
- The answer is kept for each working tree with the identity of its `.git`, so a command run
  there again calls no git (`memctl search` starts fast: tests/test_layers.py); a new `.git` in
  the same place (another clone) is worked out afresh.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from memctl.core.arguments import secret_in_name
from memctl.core.vocab import MAX_PROJECT_BYTES, project_from_folder, valid_project_name
from memctl.disk.layout import DEFAULT_PROJECT, state_path

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (start-up)
if TYPE_CHECKING:
    from memctl.disk.layout import RepositoryLookup

REGISTRY_FILE = "repositories.json"
_FOLDER, _COMMIT = "folder:", "commit:"


def lookup(store_root: Path | None) -> RepositoryLookup:
    """`repository_project` for the store at `store_root` (the `repository` of
    `memctl.disk.layout.choose_project`)."""

    def project_of(worktree: Path) -> tuple[str, str, str | None]:
        registry = state_path(store_root, REGISTRY_FILE) if store_root is not None else None
        return repository_project(worktree, registry, DEFAULT_PROJECT)

    return project_of


def repository_project(worktree: Path, registry: Path | None, fallback: str
                       ) -> tuple[str, str, str | None]:
    """(project, the name of the folder it stands for, None or the folder of the repository that
    already holds that name) for the git working tree at `worktree` (the folder holding its
    `.git`). `registry` is the store's record (None: no store, nothing recorded); `fallback`
    the project when the folder's name leaves no project name."""
    worktree = Path(worktree)
    signature = git_signature(worktree)
    key = str(worktree)
    known = _load(registry)["worktrees"].get(key) if registry is not None else None
    if isinstance(known, dict) and known.get("git") == signature and signature \
            and isinstance(known.get("project"), str) and valid_project_name(known["project"]) \
            and isinstance(known.get("folder"), str):
        holder = known.get("holder")
        return known["project"], known["folder"], holder if isinstance(holder, str) else None
    # Lazy: git (subprocess) only when this working tree is new to the store.
    from memctl.disk import gitops

    facts = gitops.repository_facts(worktree)
    if facts is None:  # git cannot tell: the folder's own name, as before repositories were told apart
        return _folder_project(worktree.name, fallback), worktree.name, None
    main, bare, origin, first_commit = facts
    folder = main.name
    if bare and folder.endswith(".git") and folder != ".git":
        folder = folder[: -len(".git")]
    base = _folder_project(folder, fallback)
    if registry is None:
        return base, folder, None
    facts_now = {"origin": origin_key(origin) if origin else None, "commit": first_commit, "folder": str(main)}
    records = _load(registry)  # again: another process may have recorded a name meanwhile
    project, holder = _claim(records["projects"], base, facts_now)
    records["worktrees"][key] = {"git": signature, "project": project, "folder": folder, "holder": holder}
    _save(registry, records)
    return project, folder, holder


def _folder_project(folder: str, fallback: str) -> str:
    """The project a repository's folder name stands for, or `fallback` when it leaves none,
    or when it looks like a key: a project's name is in every clone and commit message, so
    it is never one (docs/security.md)."""
    project = project_from_folder(folder)
    return project if project and secret_in_name(project) is None else fallback


def git_signature(worktree: Path) -> str:
    """What changes when another repository takes this folder's place: the identity of its
    `.git`, and when it was written: the `.git` file of a linked worktree, else the repository's
    `config` (written by `git init` and `git clone`, and when a remote changes; a new `.git`
    may well get the inode the deleted one had). "" without one."""
    try:
        found = os.stat(worktree / ".git")
        written = found if not stat.S_ISDIR(found.st_mode) else os.stat(worktree / ".git" / "config")
    except OSError:
        return ""
    return ":".join(str(part) for part in (found.st_dev, found.st_ino, written.st_ino, written.st_mtime_ns))


def origin_key(url: str) -> str:
    """An `origin` URL as host and path, without scheme, user, password, port or `.git`: the
    SSH and HTTPS clones of one repository agree, and no credential is ever recorded."""
    text = url.strip()
    if "://" in text:
        host, _, path = _without_user(text.split("://", 1)[1]).partition("/")
        host = host.rsplit(":", 1)[0] if not host.endswith("]") else host  # a port
    elif ":" in text and "/" not in text.split(":", 1)[0]:  # scp-like: user@host:owner/name
        # The host follows the last `@` before the path: `user:token@host:owner/name` is
        # split after the token, not at its first `:` (which recorded the token).
        head = text.split("/", 1)[0]
        host, _, path = text[head.rfind("@") + 1:].partition(":")
    else:  # a path on this machine
        return "path:" + text.rstrip("/").removesuffix(".git")
    return f"{host.lower()}/{path.strip('/').removesuffix('.git')}"


def shown_url(url: str) -> str:
    """A remote's URL as memctl prints it: without the user and password a URL can carry
    (`https://user:TOKEN@host/…` → `https://host/…`), as git itself shows one, so a token
    typed into `--remote` or `--clone` never reaches a terminal, a log or `--json`."""
    scheme, found, rest = url.partition("://")
    return f"{scheme}://{_without_user(rest)}" if found else url


def _without_user(rest: str) -> str:
    """A URL after its `scheme://`, without the user and password in front of its host."""
    first = rest.split("/", 1)[0]
    if "@" in first:
        return rest[first.rfind("@") + 1:]
    # A password may hold a `/` (`bob:s3cr3t/pass@host/…` recorded `bob/pass@host/…`): a
    # first part with a `:` not followed by a port is a user and the start of a password,
    # which ends at the next `@`. (A path may hold `@` too: `host.com/@scope/repo`.)
    if ":" in first and not first.rpartition(":")[2].isdigit():
        _, at, after = rest.partition("@")
        if at:
            return after
    return rest


def numbered_name(base: str, identity: str, attempt: int = 1) -> str:
    """`base` followed by a checksum of `identity` (and, should two checksums meet, the
    attempt), cut so the whole stays a project name."""
    import zlib  # here: only a namesake needs it, and every search loads this module (~0.4 ms)

    suffix = f"-{zlib.crc32(identity.encode('utf-8')):08x}" + (f"-{attempt}" if attempt > 1 else "")
    stem = base
    while stem and len((stem + suffix).encode("utf-8")) > MAX_PROJECT_BYTES:
        stem = stem[:-1]
    stem = stem.rstrip("-.") or "project"
    return stem + suffix


def identity(facts: dict[str, str | None]) -> str:
    """What the checksum of a namesake's project name is taken of: its first commit, else its
    `origin` (host and path), else its folder."""
    if facts.get("commit"):
        return f"{_COMMIT}{facts['commit']}"
    return str(facts["origin"]) if facts.get("origin") else f"{_FOLDER}{facts['folder']}"


def same_repository(record: dict[str, object], facts: dict[str, str | None]) -> bool:
    """Whether a recorded repository is the one described by `facts`. Two first commits decide
    when both are known (every clone, and a fork, has its repository's; a renamed remote
    changes nothing); else two `origin`s; else the folder (a repository that gained its first
    commit since is still itself). A record known only by a folder that is gone is free: that
    repository moved (and is this one) or was deleted."""
    for key in ("commit", "origin"):
        if record.get(key) and facts.get(key):
            return record[key] == facts[key]
    if record.get("folder") == facts["folder"]:
        return True
    return not record.get("origin") and not record.get("commit") \
        and not Path(str(record.get("folder") or "")).exists()


def _claim(projects: dict[str, object], base: str, facts: dict[str, str | None]) -> tuple[str, str | None]:
    """The name for the repository `facts` describe, recorded in `projects` (with what is known
    of it now, and the first commit it was known by); and the folder of the repository holding
    `base` when that is another."""
    name, attempt, holder = base, 0, None
    while True:
        record = projects.get(name)
        if not isinstance(record, dict) or same_repository(record, facts):
            known = record if isinstance(record, dict) else {}
            projects[name] = {"origin": facts["origin"] or known.get("origin"),
                              "commit": facts["commit"] or known.get("commit"), "folder": facts["folder"]}
            return name, holder
        if holder is None:
            holder = str(record.get("folder") or "")
        attempt += 1
        name = numbered_name(base, identity(facts), attempt)


def _load(registry: Path | None) -> dict[str, dict[str, object]]:
    empty: dict[str, dict[str, object]] = {"projects": {}, "worktrees": {}}
    if registry is None:
        return empty
    try:
        data = json.loads(registry.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return empty  # none yet, or unreadable: names are given again, first come first served
    if not isinstance(data, dict):
        return empty
    return {part: data[part] if isinstance(data.get(part), dict) else {} for part in empty}


def _save(registry: Path, records: dict[str, dict[str, object]]) -> None:
    """Written whole or not at all; not at all when the store is gone or read-only (the same
    names are worked out next time). Working trees that no longer exist are dropped."""
    if not registry.parent.parent.is_dir():
        return  # never create a store's folder from here
    records["worktrees"] = {path: entry for path, entry in records["worktrees"].items()
                            if os.path.lexists(os.path.join(path, ".git"))}
    # Lazy: the atomic writer (tempfile) only when something new is recorded.
    from memctl.disk.atomic import atomic_write_text

    try:
        atomic_write_text(registry, json.dumps(records, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    except OSError:
        pass
