"""`memctl mcp` as an MCP client sees it: per-call latency of `search`, `recall` and
`remember`, with the server's own watcher thread and without it (`--no-watch`), and the
server's start-up (spawn → `initialize` answered), on stores made by bench/gen_corpus.py.

    .venv/bin/python bench/bench_mcp.py [--sizes 1000,10000] [--calls 50] [--starts 8]
                                        [--hand 20] [--seed 42] [--out bench/out/mcp]
                                        [--startup-only] [--memctl EXE ...] [--rounds 4]

The server is driven over stdio by the official SDK client (`mcp.client.stdio.stdio_client`,
`ClientSession`), as an agent's client drives it: each latency is one `call_tool` round trip
(JSON-RPC, the tool, its structured result). Every call's arguments differ (queries from a
fixed list, notes with words of their own), the first few calls of each server are not
counted, and the timing starts 2 s after the start (with the watcher: after it says it is
live), when what the server does once the client is answered is done. After the
timed calls, `--hand` notes are written by hand (a file dropped into the project) and
searched for at once: a call that does not find the note just written is a miss (target 0).

Stores: bench/gen_corpus.py with the seed (reused from `--out`'s parent, as bench_search.py
does), copied, `memctl init` and `memctl reindex`. The load average is printed with each
block: the machine may be shared.

`--startup-only` measures the start-up alone, for each `--memctl` given (runs alternated
between them; another build is a two-line script running `PYTHONPATH=<its tree> python -P -m
memctl "$@"`, as for bench_write.py), with the watcher and, where the build has it, with
`--no-watch`. Without it, two builds or more (`--memctl OLD --memctl NEW`) have their per-call
figures (with the watcher) compared: `--rounds` sessions of each, alternated (ABBA...), each
build on its own copy of the store.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import anyio

HERE = Path(__file__).resolve().parent
MEMCTL = str(Path(sys.executable).parent / "memctl")
PROJECT = "blog-backend"
SEARCHES = ["数据库 连接池", "postgresql timeout", "缓存", "how do we deploy the cache",
            "which port does redis listen on", "登录超时", "kubernetes upgrade", "connection pool",
            "为什么登录会超时", "deploy*"]
RECALLS = ["fix the flaky login test", "数据库迁移", "deploy the cache", "redis timeout",
           "kubernetes upgrade plan"]
WARM_UP = 3
# After the start (and the watcher live): what the server does once it has answered the
# client (importing the tools' services, its watcher's first pass) is not the calls' cost.
SETTLE = 2.0


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f} {five:.2f} {fifteen:.2f}"


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def corpus(out: Path, size: int, seed: int) -> Path:
    source = out.parent / (f"corpus-{size}" if seed == 42 else f"corpus-{size}-{seed}")
    if not (source / "memctl.toml").is_file():
        subprocess.run([sys.executable, str(HERE / "gen_corpus.py"), str(source), str(size),
                        "--seed", str(seed)], check=True)
    return source


def prepare(out: Path, size: int, seed: int) -> tuple[Path, dict[str, str]]:
    store = out / f"store-{size}"
    if store.exists():
        shutil.rmtree(store)
    shutil.copytree(corpus(out, size, seed), store, ignore=shutil.ignore_patterns(".memctl", ".git"))
    env = {key: value for key, value in os.environ.items()
           if key not in ("MEMCTL_NOW", "MEMCTL_ALWAYS_WALK", "MEMCTL_WATCH_SYNC_WAIT")}
    env.update(MEMCTL_STORE=str(store), MEMCTL_PROJECT=PROJECT)
    subprocess.run([MEMCTL, "init", str(store)], env=env, check=True, capture_output=True)
    subprocess.run([MEMCTL, "reindex"], env=env, check=True, capture_output=True)
    return store, env


def server_env(store: Path) -> dict[str, str]:
    """What the server gets besides the SDK client's default environment (PATH, HOME...)."""
    names = ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL")
    return {"MEMCTL_STORE": str(store), "MEMCTL_PROJECT": PROJECT,
            **{name: os.environ[name] for name in names if name in os.environ}}


def watcher_live(store: Path) -> bool:
    """The heartbeat as every memctl command reads it (memctl.disk.watchstate)."""
    from memctl.disk.watchstate import read_status

    found = read_status(store)
    return found is not None and found.live


class Session:
    """One `memctl mcp` over stdio and an initialized SDK session on it."""

    def __init__(self, store: Path, watch: bool, errlog, memctl: str = MEMCTL) -> None:
        self.store = store
        self.command = memctl
        self.args = ["mcp"] if watch else ["mcp", "--no-watch"]
        self.errlog = errlog

    async def __aenter__(self) -> Session:
        from contextlib import AsyncExitStack

        from mcp import ClientSession, StdioServerParameters, stdio_client

        params = StdioServerParameters(command=self.command, args=self.args,
                                       env=server_env(self.store), cwd=str(self.store.parent))
        self._stack = AsyncExitStack()
        start = time.perf_counter()
        read, write = await self._stack.enter_async_context(
            stdio_client(params, errlog=self.errlog))
        self.session = await self._stack.enter_async_context(ClientSession(read, write))
        await self.session.initialize()
        self.startup_ms = (time.perf_counter() - start) * 1000
        self.startup_cpu_ms = children_cpu_ms()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._stack.aclose()

    async def call(self, tool: str, arguments: dict) -> tuple[float, object]:
        start = time.perf_counter()
        result = await self.session.call_tool(tool, arguments)
        elapsed = (time.perf_counter() - start) * 1000
        if result.is_error:
            raise SystemExit(f"{tool} {arguments}: {result.content[0].text}")
        return elapsed, result.structured_content


def children_cpu_ms() -> float:
    """CPU time (user + system) used so far by this process's running children: the server
    (the SDK client starts it directly)."""
    tick, total = os.sysconf("SC_CLK_TCK"), 0.0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == os.getpid():  # field 4, the parent
            total += (int(fields[11]) + int(fields[12])) / tick * 1000
    return total


def unique_word(rng: random.Random) -> str:
    return "zq" + "".join(rng.choice("bcdfghjklmnpstvwxz") for _ in range(10))


async def measure(store: Path, watch: bool, calls: int, hand: int, rng: random.Random,
                  errlog, memctl: str = MEMCTL) -> dict[str, object]:
    async with Session(store, watch, errlog, memctl) as server:
        if watch:
            with anyio.fail_after(600):
                while not watcher_live(store):
                    await anyio.sleep(0.05)
        elif watcher_live(store):
            raise SystemExit("a watcher is live for the store: the figures would not be "
                             "those of --no-watch")
        await anyio.sleep(SETTLE)  # the server's start-up work (imports, first pass) is done
        figures: dict[str, object] = {"load": load()}
        for tool in ("search", "recall", "remember"):
            times = []
            server_cpu = client_cpu = 0.0
            for number in range(calls + WARM_UP):
                if number == WARM_UP:
                    server_cpu, client_cpu = children_cpu_ms(), time.process_time()
                if tool == "search":
                    arguments = {"query": SEARCHES[number % len(SEARCHES)]}
                elif tool == "recall":
                    arguments = {"query": RECALLS[number % len(RECALLS)]}
                else:
                    words = " ".join(unique_word(rng) for _ in range(3))
                    arguments = {"text": f"Benchmark note {number}: the {words} switch lives "
                                         f"in the gateway settings", "tags": ["bench"]}
                elapsed, _ = await server.call(tool, arguments)
                if number >= WARM_UP:
                    times.append(elapsed)
            figures[tool] = times
            # CPU per call, the server's (its watcher's work included) and this client's: the
            # fairer figures when the machine is busy with other work.
            figures[f"{tool} cpu"] = ((children_cpu_ms() - server_cpu) / calls,
                                      (time.process_time() - client_cpu) * 1000 / calls)
        misses = 0
        for number in range(hand):
            word = unique_word(rng)
            path = store / PROJECT / "notes" / "fact" / f"by-hand-{number}-{word}.md"
            path.write_text(f"Written by hand {number}: the {word} flag is off.\n",
                            encoding="utf-8")
            _, found = await server.call("search", {"query": word})
            misses += not any(hit["id"] and word in json.dumps(hit, ensure_ascii=False)
                              for hit in found["hits"])  # type: ignore[index]
        figures["hand"] = (misses, hand)
        return figures


async def startups(store: Path, starts: int, errlog, builds: list[tuple[str, bool]]
                   ) -> dict[tuple[str, bool], list[float]]:
    """Spawn → `initialize` answered for each (memctl, with the watcher), runs alternated."""
    found: dict[tuple[str, bool], list[float]] = {build: [] for build in builds}
    for _ in range(starts):
        for memctl, watch in builds:
            async with Session(store, watch, errlog, memctl) as server:
                found[memctl, watch].append(server.startup_ms)
                found.setdefault((memctl, watch, "cpu"), []).append(  # type: ignore[index]
                    server.startup_cpu_ms)
            with anyio.fail_after(30):  # the last server's heartbeat is gone before the next
                while watcher_live(store):
                    await anyio.sleep(0.02)
    return found


def compare(out: Path, size: int, seed: int, builds: list[str], rounds: int, calls: int,
            hand: int, errlog) -> dict[str, object]:
    """The per-call figures (with the watcher) of several builds, sessions alternated
    (ABBA...), each build on its own copy of the store (builds may differ in their index)."""
    base, _env = prepare(out, size, seed)
    stores = []
    for number in range(len(builds)):
        copy = out / f"store-{size}-build{number}"
        if copy.exists():
            shutil.rmtree(copy)
        shutil.copytree(base, copy, symlinks=True)
        stores.append(copy)
    rng = random.Random(seed)
    found: dict[str, dict[str, list]] = {memctl: {} for memctl in builds}
    for number in range(rounds):
        order = list(range(len(builds)))
        for which in order if number % 2 == 0 else order[::-1]:
            figures = anyio.run(measure, stores[which], True, calls, hand, rng, errlog,
                                builds[which])
            mine = found[builds[which]]
            for key, value in figures.items():
                mine.setdefault(key, []).append(value)
        print(f"  round {number + 1} of {rounds} ({load()})", flush=True)
    for memctl, figures in found.items():
        print(f"  {memctl}:", flush=True)
        for tool in ("search", "recall", "remember"):
            times = [t for run in figures[tool] for t in run]
            server = statistics.median(run[0] for run in figures[f"{tool} cpu"])
            client = statistics.median(run[1] for run in figures[f"{tool} cpu"])
            print("    " + line(tool, times) + f"; CPU per call (median of {rounds} sessions): "
                  f"server {server:.1f} ms, client {client:.1f} ms", flush=True)
        misses = sum(run[0] for run in figures["hand"])
        tries = sum(run[1] for run in figures["hand"])
        print(f"    written by hand, then searched at once: {misses} misses in {tries}",
              flush=True)
    return {f"{size}/compare/{memctl}": figures for memctl, figures in found.items()}


def has_no_watch(memctl: str) -> bool:
    shown = subprocess.run([memctl, "mcp", "--help"], capture_output=True, text=True)
    return "--no-watch" in shown.stdout


def line(label: str, times: list[float]) -> str:
    return (f"{label}: median {statistics.median(times):.1f} ms, p95 "
            f"{percentile(times, 95):.1f} ms ({len(times)} calls)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--starts", type=int, default=8)
    parser.add_argument("--hand", type=int, default=20)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--out", default=str(HERE / "out" / "mcp"))
    parser.add_argument("--startup-only", action="store_true")
    parser.add_argument("--memctl", action="append", help="a build to start (default: this one)")
    parser.add_argument("--rounds", type=int, default=4,
                        help="with two builds or more (--memctl) and not --startup-only: "
                             "sessions of each, alternated, for the per-call figures")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    command = "bench/bench_mcp.py " + " ".join(sys.argv[1:])
    print(f"$ .venv/bin/python {command.strip()}", flush=True)
    results: dict[str, object] = {}
    with open(out / "server-stderr.log", "w") as errlog:
        for size in (int(text) for text in args.sizes.split(",")):
            store, _env = prepare(out, size, args.seed)
            rng = random.Random(args.seed)
            print(f"\n{size} notes ({load()})", flush=True)
            builds = [(memctl, watch) for memctl in args.memctl or [MEMCTL]
                      for watch in (True, False) if watch or has_no_watch(memctl)]
            if args.memctl and len(args.memctl) > 1 and not args.startup_only:
                results.update(compare(out, size, args.seed, args.memctl, args.rounds,
                                       args.calls, args.hand, errlog))
                continue
            if args.startup_only:
                started = anyio.run(startups, store, args.starts, errlog, builds)
                for key, times in started.items():
                    memctl, watch, *cpu = key  # type: ignore[misc]
                    label = f"{memctl}{'' if watch else ' --no-watch'}"
                    what = "server CPU to initialize" if cpu else "spawn → initialize"
                    print("  " + line(f"start-up, {what}, {label}",
                                      times).replace(" calls)", " starts)"), flush=True)
                    results[f"{size}/start-up/{what}/{label}"] = times
                print(f"  ({load()})", flush=True)
                continue
            for watch in (True, False):
                figures = anyio.run(measure, store, watch, args.calls, args.hand, rng, errlog)
                label = "watcher thread" if watch else "--no-watch"
                print(f"  {label} ({figures['load']}):", flush=True)
                for tool in ("search", "recall", "remember"):
                    server, client = figures[f"{tool} cpu"]  # type: ignore[misc]
                    print("    " + line(tool, figures[tool])  # type: ignore[arg-type]
                          + f"; CPU per call: server {server:.1f} ms, client {client:.1f} ms",
                          flush=True)
                misses, tries = figures["hand"]  # type: ignore[misc]
                print(f"    written by hand, then searched at once: {misses} misses in {tries}",
                      flush=True)
                results[f"{size}/{label}"] = figures
            started = anyio.run(startups, store, args.starts, errlog, [(MEMCTL, True),
                                                                        (MEMCTL, False)])
            for watch in (True, False):
                label = "watcher thread" if watch else "--no-watch"
                for key, what in (((MEMCTL, watch), "spawn → initialize"),
                                  ((MEMCTL, watch, "cpu"), "server CPU to initialize")):
                    print("  " + line(f"start-up, {what}, {label}", started[key]  # type: ignore[index]
                                      ).replace(" calls)", " starts)"), flush=True)
                    results[f"{size}/start-up/{what}/{label}"] = started[key]  # type: ignore[index]
            print(f"  ({load()})", flush=True)
    (out / "results.json").write_text(json.dumps(results, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
