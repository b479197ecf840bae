"""The long kill -9 runs and the concurrent-writer load run of issue 8, with figures.

    .venv/bin/python bench/crash_loop.py [--kills 60] [--commands add,reindex,archive,import,sync]
                                         [--console-every 6] [--load] [--json bench/out/crash.json]

For each command: kill -9 at random points until `--kills` kills have landed mid-run (half
of them take the whole process group, git children included; every `--console-every`-th
kills the installed `memctl` console script after its start-up), each followed by the checks
of tests/test_crash.py (whole files, the index healed by the next command, git not blocked,
import all-or-nothing, archive and sync finished by a rerun). `--load` runs the 4 writers ×
100 adds load test twice: with the CLI in long-lived processes, and with 400 runs of the
`memctl add` script.

tests/test_reliability.py uses the load harness below in the normal suite.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from conftest import memctl_executable, run_memctl  # noqa: E402
from test_crash import (  # noqa: E402
    COMMANDS,
    WORDS,
    ForkServer,
    crash_loop,
    git,
    notes_on_disk,
    whole_files,
)

# --- the load harness ---------------------------------------------------------------------------

WORKER = r"""
import contextlib, io, json, random, sys, time, traceback
from memctl.cli.app import app
mode, count, name, seed = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
words = sys.argv[5].split()
rng = random.Random(seed)
results = []
for number in range(count):
    if mode == "add":
        text = f"{name} note {number}: " + " ".join(
            rng.choice(words) + str(rng.randrange(10**6)) for _ in range(8))
        args = ["add", text, "--project", rng.choice(["alpha", "beta", "gamma"]), "--json"]
    elif mode == "read":
        args = rng.choice([["list", "--all-projects", "--json"],
                           ["search", rng.choice(words) + "*", "--all-projects", "--json"]])
    else:
        args = [mode, *sys.argv[6:][number].split("\t"), "--json"]
    out, err = io.StringIO(), io.StringIO()
    started = time.monotonic()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = app(args, prog_name="memctl", standalone_mode=False)
    except BaseException:
        code, err = 99, io.StringIO(traceback.format_exc())
    results.append({"args": args[:1], "code": code or 0, "out": out.getvalue()[-2000:],
                    "err": err.getvalue()[-1000:], "seconds": time.monotonic() - started})
sys.stdout.write(json.dumps(results))
"""


def start_worker(store: Path, mode: str, count: int, name: str, seed: int,
                 *items: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    env = dict(os.environ, MEMCTL_STORE=str(store), MEMCTL_PROJECT="alpha", MEMCTL_LOCK_TIMEOUT="60",
               **(env or {}))
    return subprocess.Popen([sys.executable, "-c", WORKER, mode, str(count), name, str(seed),
                             " ".join(WORDS), *items], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)


def collect(proc: subprocess.Popen[str], timeout: float = 300) -> list[dict]:
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, err[-3000:]
    return json.loads(out)


@contextmanager
def running_watcher(store: Path, *extra: str):
    env = dict(os.environ, MEMCTL_STORE=str(store))
    proc = subprocess.Popen([memctl_executable(), "watch", "--json", *extra], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    deadline = time.monotonic() + 30
    while not any('"ready"' in line for line in lines):
        assert proc.poll() is None, f"memctl watch exited: {proc.stderr.read() if proc.stderr else ''}"
        assert time.monotonic() < deadline, "memctl watch never said it was ready"
        time.sleep(0.05)
    try:
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def memory_paths_in_git(store: Path) -> set[str]:
    from memctl.disk.layout import classify

    tracked = git(store, "ls-files", "-z").stdout.split("\0")
    return {p for p in tracked if p and (classify(p) or ("", ""))[0] in ("note", "archived")}


def watched_index_complete(store: Path, expected: int, seconds: float = 30) -> str | None:
    """Wait until the index kept by the live watcher lists `expected` notes; None, or what
    differs if it never does."""
    deadline = time.monotonic() + seconds
    while True:
        listed = json.loads(run_memctl("list", "--all-projects", "--json", store=store).stdout)
        if len(listed) == expected:
            return None
        if time.monotonic() > deadline:
            paths = [note["path"] for note in listed]
            on_disk = {p[0] for p in notes_on_disk(store).values()}
            return (f"the watcher's index lists {len(listed)} notes, not {expected}: missing "
                    f"{sorted(on_disk - set(paths))[:5]}, extra {sorted(set(paths) - on_disk)[:5]},"
                    f" {len(paths) - len(set(paths))} listed twice")
        time.sleep(0.3)


def four_writers_and_a_watcher(store: Path, writers: int, adds: int, console: bool) -> dict:
    """The issue's load test. Returns figures for docs/reliability.md, with `problems`: every
    promise that did not hold (all are checked, so one failure does not hide another)."""
    started = time.monotonic()
    problems: list[str] = []
    with running_watcher(store):
        reader = start_worker(store, "read", 40, "reader", 99)
        if console:
            results = _console_adds(store, writers, adds)
        else:
            procs = [start_worker(store, "add", adds, f"w{n}", n) for n in range(writers)]
            results = [r for proc in procs for r in collect(proc)]
        reads = collect(reader)
        expected = writers * adds
        problems.append(watched_index_complete(store, expected) or "")
    wall = time.monotonic() - started
    failed = [r for r in results + reads if r["code"] != 0]
    if failed:
        problems.append(f"{len(failed)} commands failed, e.g. {failed[0]['err'][-300:]}")
    ids = [json.loads(r["out"])["id"] for r in results if r["code"] == 0]
    actions = {json.loads(r["out"])["action"] for r in results if r["code"] == 0}
    if len(set(ids)) != expected or actions != {"created"}:
        problems.append(f"{len(set(ids))} distinct notes created, actions {sorted(actions)}")
    on_disk = notes_on_disk(store)
    if sorted(on_disk) != sorted(ids) or any(len(paths) != 1 for paths in on_disk.values()):
        problems.append(f"{len(on_disk)} notes on disk for {len(ids)} added")
    problems.extend(whole_files(store))
    listed = [n["id"] for n in json.loads(run_memctl("list", "--all-projects", "--json",
                                                     store=store).stdout)]
    if sorted(listed) != sorted(ids):
        problems.append(f"after the watcher stopped, list shows {len(listed)} entries "
                        f"({len(set(listed))} distinct) for {len(ids)} notes")
    rebuilt = run_memctl("reindex", "--json", store=store).json()
    if rebuilt["note"] != expected:
        problems.append(f"reindex counts {rebuilt['note']} notes")
    in_git = memory_paths_in_git(store)
    if in_git != {paths[0] for paths in on_disk.values()}:
        problems.append(f"{len(in_git)} notes in git for {len(on_disk)} on disk")
    status = git(store, "status", "--porcelain").stdout
    if status:
        problems.append(f"git is not clean: {status[:200]}")
    if (store / ".git" / "index.lock").exists():
        problems.append(".git/index.lock left behind")
    commits = int(git(store, "rev-list", "--count", "HEAD").stdout)
    if commits != expected + 1:
        problems.append(f"{commits} commits for {expected} adds (+1 for init)")
    debris = [p for p in store.rglob(".*.tmp") if ".git" not in p.parts]
    if debris:
        problems.append(f"temp files left: {debris[:3]}")
    seconds = sorted(r["seconds"] for r in results)
    return {"writers": writers, "adds": expected, "notes_on_disk": len(on_disk),
            "notes_in_git": len(in_git), "commits": commits - 1, "git_clean": not status,
            "index_entries_after": len(listed), "wall_s": round(wall, 1),
            "add_p50_ms": round(1000 * seconds[len(seconds) // 2]),
            "add_max_ms": round(1000 * seconds[-1]), "reads": len(reads),
            "problems": [p for p in problems if p]}


def _console_adds(store: Path, writers: int, adds: int) -> list[dict]:
    """The installed `memctl add`, `writers` shells each running it `adds` times."""
    results: list[dict] = []

    def shell(number: int) -> None:
        rng = random.Random(number)
        for count in range(adds):
            text = f"s{number} note {count}: " + " ".join(rng.choice(WORDS) + str(rng.randrange(10**6))
                                                          for _ in range(8))
            started = time.monotonic()
            done = run_memctl("add", text, "--project", rng.choice(["alpha", "beta"]), "--json",
                              store=store, env={"MEMCTL_LOCK_TIMEOUT": "120"}, timeout=300)
            results.append({"code": done.exit_code, "out": done.stdout, "err": done.stderr,
                            "seconds": time.monotonic() - started})

    threads = [threading.Thread(target=shell, args=(n,)) for n in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results




# --- the bench ----------------------------------------------------------------------------------


def _quiet_environment() -> None:
    for name in list(os.environ):
        if name.startswith("MEMCTL_"):
            del os.environ[name]
    os.environ.update({"NO_COLOR": "1", "GIT_AUTHOR_NAME": "bench",
                       "GIT_AUTHOR_EMAIL": "bench@example.invalid", "GIT_COMMITTER_NAME": "bench",
                       "GIT_COMMITTER_EMAIL": "bench@example.invalid"})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=60, help="kills (landed mid-run) per command")
    parser.add_argument("--commands", default=",".join(COMMANDS))
    parser.add_argument("--console-every", type=int, default=6)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--load", action="store_true", help="also run the 4 x 100 load test")
    parser.add_argument("--json", type=Path, help="write the figures here too")
    args = parser.parse_args()
    _quiet_environment()
    figures: dict[str, object] = {"load_average": os.getloadavg()[0], "crash": [], "load": []}
    failed = False
    with tempfile.TemporaryDirectory(prefix="memctl-crash-") as tmp:
        base = Path(tmp)
        server = ForkServer(base / "logs")
        try:
            for number, command in enumerate(args.commands.split(",")):
                started = time.monotonic()
                report = crash_loop(command, args.kills, base / command, seed=args.seed + number,
                                    console_every=args.console_every, server=server)
                summary = {**report.summary(), "seconds": round(time.monotonic() - started)}
                summary["failure_examples"] = report.failures[:5]
                figures["crash"].append(summary)  # type: ignore[union-attr]
                failed = failed or bool(report.failures)
                print(json.dumps(summary, ensure_ascii=False), flush=True)
        finally:
            server.close()
        if args.load:
            from memctl.store import Store

            for console in (False, True):
                store = base / f"load-{console}"
                Store.init(store)
                result = four_writers_and_a_watcher(store, 4, 100, console=console)
                failed = failed or bool(result["problems"])
                result["memctl_add_console_script"] = console
                figures["load"].append(result)  # type: ignore[union-attr]
                print(json.dumps(result), flush=True)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(figures, indent=2, ensure_ascii=False))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
