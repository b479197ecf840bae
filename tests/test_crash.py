"""kill -9 at random points of `add`, `reindex`, `archive`, `import` and `sync`.

After every kill: each memory file is whole (it parses, and memctl's checksum stamp matches,
so it is the old version or the new one, never half of either); the next command brings the
index back in step with the files; git is not blocked (the next change commits) and its
history is sound (`git fsck`); an import is all or nothing.

Commands run in a fork server (a process that imported memctl once and forks one child per
run) so a kill lands in the command's own work rather than in Python's start-up; the child is
the real CLI (`memctl.cli.app`), and half the kills take its git children down too (a whole
process group, as when a terminal or a container dies). The slow version also kills the
installed `memctl` console script. bench/crash_loop.py runs the long loops and prints figures.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import Cli, memctl_executable  # noqa: E402

COMMANDS = ("add", "reindex", "archive", "import", "sync")
WORDS = ("alpha bravo cobalt delta ember falcon garnet harbor indigo juniper kestrel lagoon "
         "meadow nickel orchid pepper quartz raven saffron timber umber velvet willow xenon "
         "yonder zephyr 数据库 连接池 缓存 登录 超时 部署").split()

# --- the fork server --------------------------------------------------------------------------

ZYGOTE = r"""
import importlib, json, os, pkgutil, signal, sys, time, traceback
import memctl
for info in pkgutil.iter_modules(memctl.__path__):
    if info.name != "mcp_server":
        try:
            importlib.import_module("memctl." + info.name)
        except Exception:
            pass
for name in ("yaml", "rapidfuzz.fuzz", "rich.console", "rich.table", "rich.progress",
             "sqlite3", "zipfile", "tomllib"):
    try:
        importlib.import_module(name)
    except Exception:
        pass
from memctl.cli.app import app
out = sys.stdout
out.write("ready\n"); out.flush()
for line in sys.stdin:
    req = json.loads(line)
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            os.setsid()
            os.chdir(req["cwd"])
            os.environ.clear(); os.environ.update(req["env"])
            log = os.open(req["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0); os.dup2(log, 1); os.dup2(log, 2)
            sys.argv = ["memctl", *req["argv"]]
            app(req["argv"], prog_name="memctl")
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except BaseException:
            traceback.print_exc()
            code = 99
        try:
            sys.stdout.flush(); sys.stderr.flush()
        finally:
            os._exit(code)
    delay = req.get("kill_after")
    killed = False
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        now = time.monotonic() - started
        if delay is not None and now >= delay:
            try:
                if req.get("group"):
                    os.killpg(pid, signal.SIGKILL)
                else:
                    os.kill(pid, signal.SIGKILL)
                killed = True
            except ProcessLookupError:
                pass
            done, status = os.waitpid(pid, 0)
            break
        time.sleep(0.0005 if delay is not None and delay - now < 0.003 else 0.002)
    elapsed = time.monotonic() - started
    out.write(json.dumps({"killed": killed, "status": status, "elapsed": elapsed}) + "\n")
    out.flush()
"""


class ForkServer:
    """One Python that imported memctl; `run` forks the CLI with args, optionally killing it."""

    def __init__(self, logdir: Path) -> None:
        self.logdir = logdir
        logdir.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen([sys.executable, "-c", ZYGOTE], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, bufsize=1)
        assert self.proc.stdout is not None
        ready = self.proc.stdout.readline()
        assert ready.strip() == "ready", f"fork server did not start: {ready!r}"
        self.runs = 0

    def run(self, argv: list[str], env: dict[str, str], cwd: Path,
            kill_after: float | None = None, group: bool = False) -> dict:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.runs += 1
        log = self.logdir / f"run-{self.runs}.log"
        request = {"argv": argv, "env": env, "cwd": str(cwd), "kill_after": kill_after,
                   "group": group, "log": str(log)}
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        answer = json.loads(self.proc.stdout.readline())
        status = answer["status"]
        answer["code"] = os.waitstatus_to_exitcode(status)
        answer["log"] = log.read_text(errors="replace") if log.exists() else ""
        return answer

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


# --- building stores quickly --------------------------------------------------------------------


def sentence(rng: random.Random, words: int = 9) -> str:
    return " ".join(rng.choice(WORDS) + str(rng.randrange(10_000)) for _ in range(words))


def base_env(store: Path, project: str = "alpha", **extra: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("MEMCTL_", "PYTEST_"))}
    env.update({"MEMCTL_STORE": str(store), "MEMCTL_PROJECT": project, "NO_COLOR": "1",
                "GIT_AUTHOR_NAME": "crash", "GIT_AUTHOR_EMAIL": "crash@example.invalid",
                "GIT_COMMITTER_NAME": "crash", "GIT_COMMITTER_EMAIL": "crash@example.invalid",
                "MEMCTL_LOCK_TIMEOUT": "20"})
    env.update(extra)
    return env


def write_notes(root: Path, count: int, rng: random.Random, *, projects=("alpha", "beta"),
                created: str = "2025-01-10T08:00:00.000Z") -> list[str]:
    """`count` notes written the way `add` writes them, then one commit. Returns their ids."""
    from memctl.core.ids import new_id
    from memctl.disk.locking import store_lock
    from memctl.memory.notes import build_note_text
    from memctl.store import Store

    store = Store.open(root)
    ids = []
    for number in range(count):
        note_id = new_id()
        project = projects[number % len(projects)]
        note_type = ("fact", "decision", "rule", "preference")[number % 4]
        text = sentence(rng)
        relpath = store.new_note_relpath(project, note_type, note_id, text)
        store.write_text(relpath, build_note_text(
            store, note_id=note_id, text=text, note_type=note_type, project=project,
            importance=1 + number % 8, tags=[rng.choice(WORDS)], subject=None, predicate=None,
            expires=None, source="cli", created=created))
        ids.append(note_id)
    with store_lock(root, "seed"):
        store.commit(f"seed {count} notes")
    return ids


def edit_note_file(path: Path, line: str, when: str) -> None:
    """An edit as memctl makes it (text appended, `updated` and checksum stamped), so the
    whole-file check can tell it from a torn write."""
    from memctl.core.clock import parse_time
    from memctl.core.note import stamp

    text = path.read_text(encoding="utf-8") + f"\n{line}\n"
    moment = parse_time(when)
    assert moment is not None
    path.write_text(stamp(text, {}, moment), encoding="utf-8")


def make_store(root: Path, notes: int, seed: int = 0) -> Path:
    from memctl.store import Store

    Store.init(root)
    write_notes(root, notes, random.Random(seed))
    return root


def git(root: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(root), "-c", "core.quotepath=off", *args],
                          capture_output=True, text=True, check=check)


def copy_store(source: Path, target: Path) -> Path:
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target, symlinks=True)
    return target


# --- what must hold after a kill ----------------------------------------------------------------


def whole_files(root: Path) -> list[str]:
    """Every memory file parses, and memctl's checksum stamp (when present) matches, so no
    file is half-written. Returns the problems found."""
    from memctl.core.noteformat import compute_checksum, parse_text
    from memctl.store import Store

    problems = []
    for item in Store(root).walk():
        data = (root / item.relpath).read_bytes()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            problems.append(f"{item.relpath}: not UTF-8 (torn write?)")
            continue
        parsed = parse_text(text)
        if parsed.problem is not None:
            problems.append(f"{item.relpath}: does not parse: {parsed.problem}")
            continue
        stamp = parsed.meta.get("checksum")
        if stamp and compute_checksum(text) != stamp:
            problems.append(f"{item.relpath}: checksum mismatch (half-written?)")
    return problems


def index_sound(root: Path) -> list[str]:
    """SQLite's own checks of the index a killed process left (transactions, not luck)."""
    import sqlite3

    path = root / ".memctl" / "index.sqlite"
    if not path.exists():
        return []
    conn = sqlite3.connect(path)
    try:
        verdict = conn.execute("PRAGMA integrity_check").fetchone()[0]
        if verdict != "ok":
            return [f"index integrity_check: {verdict}"]
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
        if "fts" in tables:
            conn.execute("INSERT INTO fts(fts) VALUES ('integrity-check')")
    except sqlite3.Error as exc:
        return [f"index damaged by the kill: {exc}"]
    finally:
        conn.close()
    return []


def notes_on_disk(root: Path) -> dict[str, list[str]]:
    """id -> paths of the notes (active and archived) that parse, read from the files."""
    from memctl.core.errors import MemctlError
    from memctl.store import Store

    store = Store(root)
    found: dict[str, list[str]] = {}
    for item in store.walk():
        if item.kind in ("note", "archived"):
            try:
                note = store.read_note(item.relpath)
            except MemctlError:
                continue
            found.setdefault(note.id, []).append(item.relpath)
    return found


def heal_and_check(root: Path, env: dict[str, str], tag: str,
                   rerun: list[str] | None = None) -> list[str]:
    """Run the next commands in-process and check what a user relies on."""
    problems = []
    cli = Cli(root, project=env.get("MEMCTL_PROJECT", "alpha"))
    heal_env = {k: v for k, v in env.items() if k.startswith("MEMCTL_")}
    if rerun:
        again = cli(*rerun, env=heal_env)
        if again.exit_code != 0:
            problems.append(f"memctl {' '.join(rerun)} failed when run again after the crash: "
                            f"{again.stderr.strip()[:300]}")
    text = f"heal note {tag} {sentence(random.Random(tag), 6)}"
    added = cli("add", text, "--project", "healing", "--force", "--json", env=heal_env)
    if added.exit_code != 0:
        problems.append(f"the next add failed (git blocked?): {added.stderr.strip()[:300]}")
    else:
        path = added.json()["path"]
        if not git(root, "ls-files", "--error-unmatch", path, check=False).returncode == 0:
            problems.append(f"the next add did not commit {path}")
    listed = cli("list", "--all-projects", "--status", "any", "--json", env=heal_env)
    if listed.exit_code != 0:
        problems.append(f"list failed after the crash: {listed.stderr.strip()[:300]}")
    else:
        truth = notes_on_disk(root)
        indexed = sorted(note["id"] for note in listed.json())
        if sorted(truth) != indexed:
            missing = sorted(set(truth) - set(indexed))[:5]
            extra = sorted(set(indexed) - set(truth))[:5]
            dupes = len(indexed) - len(set(indexed))
            problems.append(f"index out of step with the files: missing {missing}, extra {extra}, "
                            f"{dupes} duplicate rows")
        twice = {k: v for k, v in truth.items() if len(v) > 1}
        if twice:
            problems.append(f"{len(twice)} ids in more than one file, e.g. {next(iter(twice.items()))}")
    if (root / ".git" / "index.lock").exists():
        problems.append(".git/index.lock left behind after the next command")
    fsck = git(root, "fsck", "--no-progress", "--connectivity-only", check=False)
    if fsck.returncode != 0:
        problems.append(f"git fsck: {fsck.stderr.strip()[:300]}")
    return problems


# --- scenarios ----------------------------------------------------------------------------------


@dataclass
class Scenario:
    """How to crash one command: a seed store, the command line, and extra checks."""

    command: str
    seed: Path
    argv: Callable[[int, Path], list[str]]
    fresh: bool = True  # a fresh copy of the seed for every kill (else the crashes pile up)
    env: dict[str, str] = field(default_factory=dict)
    prepare: Callable[[Path, int], None] | None = None
    # Run again after the kill, as a user would rerun an interrupted command.
    rerun: list[str] | None = None
    extra_check: Callable[[Path, dict], list[str]] | None = None
    outcomes: list[dict[str, bytes]] = field(default_factory=list)  # import: before/after trees


def tree(root: Path, skip: tuple[str, ...] = (".git/", ".memctl/", "healing/")) -> dict[str, bytes]:
    snapshot = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(skip) or not path.is_file() or path.name.startswith("."):
            continue
        snapshot[rel] = path.read_bytes()
    return snapshot


# Seed sizes: big enough that a kill lands mid-work, small enough for the normal suite (each
# archived note costs two fsyncs, so archive gets the fewest).
SEED_NOTES = {"add": 40, "reindex": 150, "archive": 20, "import": 40, "sync": 40}


def build_scenario(command: str, base: Path, notes: int | None = None) -> Scenario:
    seed = make_store(base / f"seed-{command}", notes or SEED_NOTES[command])
    if command == "add":
        rng = random.Random(7)
        return Scenario("add", seed, fresh=False, argv=lambda i, root: [
            "add", sentence(rng), "--project", rng.choice(["alpha", "beta", "gamma"]),
            "--tags", "crash"])
    if command == "reindex":
        return Scenario("reindex", seed, fresh=False, argv=lambda i, root: ["reindex"])
    if command == "archive":
        # Every seed note is older than the 180-day TTL, so each run archives all of them.
        return Scenario("archive", seed, argv=lambda i, root: ["archive"], rerun=["archive"],
                        extra_check=_archive_check)
    if command == "import":
        return _import_scenario(seed, base)
    if command == "sync":
        return _sync_scenario(seed, base)
    raise ValueError(command)


def _archive_check(root: Path, context: dict) -> list[str]:
    found = notes_on_disk(root)
    lost = sorted(set(context["seed_ids"]) - set(found))
    return [f"archive lost notes: {lost[:5]}"] if lost else []


def _import_scenario(seed: Path, base: Path) -> Scenario:
    """The bundle comes from another machine's copy: 30 new notes, 20 edited, 5 forgotten."""
    other = copy_store(seed, base / "import-other")
    rng = random.Random(11)
    write_notes(other, 30, rng, projects=("alpha", "delta"), created="2026-11-20T08:00:00.000Z")
    ids = sorted(notes_on_disk(other))
    cli = Cli(other)
    for note_id in ids[:5]:
        cli.ok("forget", note_id, env={"MEMCTL_NOW": "2026-11-25T08:00:00Z"})
    for number, note_id in enumerate(ids[5:25]):
        edit_note_file(other / notes_on_disk(other)[note_id][0],
                       f"Edited on the other machine ({number}).", "2026-11-24T08:00:00Z")
    bundle = base / "bundle.zip"
    cli.ok("export", str(bundle), env={"MEMCTL_NOW": "2026-11-26T08:00:00Z"})
    after = copy_store(seed, base / "import-clean")
    result = Cli(after)("import", str(bundle), "--json")
    assert result.exit_code == 0, result.stderr
    scenario = Scenario("import", seed, argv=lambda i, root: ["import", str(bundle)],
                        extra_check=_import_check)
    scenario.outcomes = [tree(seed), tree(after)]
    return scenario


def _import_check(root: Path, context: dict) -> list[str]:
    now = tree(root, skip=(".git/", ".memctl/", "healing/", ".counters/"))
    differences = []
    for name, outcome in zip(("before", "after"), context["outcomes"], strict=True):
        wanted = {k: v for k, v in outcome.items() if not k.startswith(".counters/")}
        if now == wanted:
            return []
        differ = sorted(k for k in set(now) | set(wanted) if now.get(k) != wanted.get(k))
        differences.append(f"{len(differ)} files differ from {name} it, e.g. {differ[:3]}")
    return ["after an interrupted import the store is neither as before nor as after it: "
            + "; ".join(differences)]


def _sync_scenario(seed: Path, base: Path) -> Scenario:
    """This machine and another both changed notes since the last sync: the sync fetches,
    merges (both edited some of the same notes), commits and pushes."""
    remote = base / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    branch = git(seed, "rev-parse", "--abbrev-ref", "HEAD").stdout.strip()
    git(seed, "remote", "add", "origin", str(remote))
    git(seed, "push", "-q", "-u", "origin", branch)
    other = base / "sync-other"
    subprocess.run(["git", "clone", "-q", str(remote), str(other)], check=True)
    rng = random.Random(5)
    ids = sorted(notes_on_disk(seed))
    write_notes(other, 30, rng, projects=("alpha", "delta"), created="2026-11-20T08:00:00.000Z")
    for number, note_id in enumerate(ids[:20]):
        edit_note_file(other / notes_on_disk(other)[note_id][0],
                       f"Changed on the other machine ({number}).", "2026-11-24T08:00:00Z")
    git(other, "add", "-A")
    git(other, "commit", "-q", "-m", "other machine")
    git(other, "push", "-q", "origin", branch)
    write_notes(seed, 20, rng, projects=("alpha", "beta"), created="2026-11-21T08:00:00.000Z")
    for number, note_id in enumerate(ids[10:30]):
        edit_note_file(seed / notes_on_disk(seed)[note_id][0], f"Changed here ({number}).",
                       f"2026-11-2{3 + number % 3}T08:00:00Z")
    remote_seed = base / "remote-seed.git"
    shutil.copytree(remote, remote_seed)

    def prepare(root: Path, number: int) -> None:
        copy_store(remote_seed, remote)  # the remote as it was, for every run

    return Scenario("sync", seed, argv=lambda i, root: ["sync"], prepare=prepare, rerun=["sync"],
                    extra_check=_sync_check)


def _sync_check(root: Path, context: dict) -> list[str]:
    problems = []
    for item in tree(root):
        text = (root / item).read_bytes()
        if b"\n<<<<<<< " in text or b"\n>>>>>>> " in text or text.startswith(b"<<<<<<< "):
            problems.append(f"{item}: conflict markers")
    return problems


# --- the loop -----------------------------------------------------------------------------------


@dataclass
class CrashReport:
    command: str
    kills: int = 0  # runs started with a kill scheduled
    landed: int = 0  # kills that came while the process ran (the loop runs until enough do)
    group_kills: int = 0  # of those, kills of the whole process group (git children too)
    console_script_kills: int = 0  # of those, kills of the installed `memctl` script
    index_locks_found: int = 0  # .git/index.lock present right after the kill
    temp_debris: int = 0  # atomic-write temp files a kill left behind (ignored by memctl)
    durations: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    def summary(self) -> dict:
        return {"command": self.command, "runs": self.kills, "kills_mid_run": self.landed,
                "process_group_kills": self.group_kills,
                "console_script_kills": self.console_script_kills,
                "index_locks_found_after_kill": self.index_locks_found,
                "temp_files_left": self.temp_debris,
                "clean_run_ms": round(1000 * min(self.durations), 1) if self.durations else None,
                "failures": len(self.failures),
                "runs_with_failures": len({f.split(" ", 1)[0] for f in self.failures})}


def crash_loop(command: str, kills: int, workdir: Path, *, seed: int = 1,
               console_every: int = 0, server: ForkServer | None = None) -> CrashReport:
    """Kill `command` at random points until `kills` kills have landed while it ran (runs that
    finish first are checked too); check everything after each."""
    rng = random.Random(seed)
    scenario = build_scenario(command, workdir)
    own_server = server is None
    server = server or ForkServer(workdir / "logs")
    report = CrashReport(command)
    work = workdir / f"work-{command}"
    seed_ids = notes_on_disk(scenario.seed)
    try:
        copy_store(scenario.seed, work)
        for _ in range(2):  # how long a whole run takes, to spread the kills over it
            if scenario.prepare:
                scenario.prepare(work, 0)
            clean = copy_store(scenario.seed, workdir / "calibrate")
            result = server.run(scenario.argv(0, clean), base_env(clean), clean)
            assert result["code"] == 0, f"memctl {command} fails without a crash: {result['log']}"
            report.durations.append(result["elapsed"])
        span = max(report.durations)
        if not scenario.fresh:
            copy_store(scenario.seed, work)
        number = -1
        # Runs that finish before their kill cost little and are checked too; on a loaded
        # 2-core machine a run's time moves a lot, so the loop may take many to land the
        # kills it asks for (5 times as many once fell short, for `sync`).
        while report.landed < kills and report.kills < 20 * kills:
            number += 1
            if scenario.fresh:
                copy_store(scenario.seed, work)
            if scenario.prepare:
                scenario.prepare(work, number)
            argv = scenario.argv(number, work)
            debris_before = {p for p in work.rglob(".*.tmp") if ".git" not in p.parts}
            env = base_env(work, **scenario.env)
            group = report.landed % 2 == 1
            report.kills += 1
            console = bool(console_every) and report.landed % console_every == console_every - 1
            if console:
                landed = _kill_console_script(argv, env, work, rng, span)
                report.console_script_kills += landed
            else:
                answer = server.run(argv, env, work, kill_after=rng.uniform(0, span * 1.05),
                                    group=group)
                landed = answer["killed"]
                if not landed and answer["code"] != 0:
                    report.failures.append(f"#{number}: memctl {command} failed: {answer['log'][-300:]}")
                elif not landed:
                    # It finished first: the machine is quicker now than when the runs were
                    # timed (a 2-core VM's speed moves by a fifth or more), so the kills are
                    # spread over the run as long as it takes now.
                    span = min(span, answer["elapsed"])
            report.landed += landed
            report.group_kills += landed and (group or console)
            report.index_locks_found += (work / ".git" / "index.lock").exists()
            debris = {p for p in work.rglob(".*.tmp") if ".git" not in p.parts}
            report.temp_debris += len(debris - debris_before)
            problems = whole_files(work) + index_sound(work)
            problems += heal_and_check(work, env, f"{command}-{number}", scenario.rerun)
            # The commands that followed removed what the killed one left half written beside
            # the notes (`.memctl/` is local state, never committed or synced: not checked).
            kept = {p for p in work.rglob(".*.tmp")
                    if ".git" not in p.parts and ".memctl" not in p.parts} - debris_before
            problems += [f"a temp file the killed command left stayed: {p.relative_to(work)}"
                         for p in sorted(kept)]
            context = {"outcomes": scenario.outcomes, "seed_ids": seed_ids}
            if scenario.extra_check:
                problems += scenario.extra_check(work, context)
            report.failures.extend(f"#{number} ({'group' if group else 'process'} kill): {p}"
                                   for p in problems)
    finally:
        if own_server:
            server.close()
    return report


def _kill_console_script(argv: list[str], env: dict[str, str], cwd: Path, rng: random.Random,
                         span: float) -> bool:
    """The installed `memctl`, killed after its start-up (measured) plus a random part of a run."""
    started = time.monotonic()
    proc = subprocess.Popen([memctl_executable(), *argv], env=env, cwd=cwd,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    startup = _startup_seconds()
    time.sleep(max(0.0, startup + rng.uniform(0, span * 1.05) - (time.monotonic() - started)))
    landed = proc.poll() is None
    if landed:
        os.killpg(proc.pid, 9)
    proc.wait()
    return landed


_STARTUP: list[float] = []


def _startup_seconds() -> float:
    if not _STARTUP:
        started = time.monotonic()
        subprocess.run([memctl_executable(), "--version"], capture_output=True, check=True)
        _STARTUP.append((time.monotonic() - started) * 0.9)
    return _STARTUP[0]


# --- the tests ----------------------------------------------------------------------------------


def _require(command: str) -> None:
    from memctl.cli.app import app

    names = {c.name or (c.callback.__name__ if c.callback else "") for c in app.registered_commands}
    if command not in names:
        pytest.fail(f"`memctl {command}` does not exist (yet): the crash test needs it")


@pytest.fixture(scope="module")
def fork_server(tmp_path_factory):
    server = ForkServer(tmp_path_factory.mktemp("forkserver"))
    yield server
    server.close()


@pytest.mark.parametrize("command", COMMANDS)
def test_kill_9_at_random_points_loses_nothing(command: str, tmp_path: Path, fork_server) -> None:
    _require(command)
    report = crash_loop(command, kills=10, workdir=tmp_path, seed=sum(map(ord, command)),
                        server=fork_server)
    assert not report.failures, "\n".join(report.failures[:20])
    assert report.landed == 10, report.summary()


@pytest.mark.slow
@pytest.mark.parametrize("command", COMMANDS)
def test_kill_9_fifty_times_per_command(command: str, tmp_path: Path, fork_server) -> None:
    _require(command)
    report = crash_loop(command, kills=50, workdir=tmp_path, seed=1000 + len(command),
                        console_every=6, server=fork_server)
    assert not report.failures, "\n".join(report.failures[:20])
    assert report.landed == 50, report.summary()
