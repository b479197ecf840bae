"""The scale table: every figure an agent pays for, at 1k, 10k and 100k notes, in one run.

    .venv/bin/python bench/bench_scale.py [--sizes 1000,10000,100000] [--out bench/out]
                                          [--seed 42] [--tries 100] [--only BLOCK,...] [--keep]
    .venv/bin/python bench/bench_scale.py --table bench/out/scale.json   # the table again

For each size the store is made once with bench/gen_corpus.py (fixed seed) then `memctl
init` and `memctl reindex`, and kept in OUT/scale/store-SIZE-seedSEED (reused while its
marker file says the same size and seed). Nothing is measured on that store: each run of this
script copies it (`cp -a`, file times kept, so the copied index is still fresh; git's own
index refreshed once so that `git status` does not hash every file again) and measures on the
copy, so commands that write (add, remember, the freshness probes, health's pair cache,
access counters) find the same store every run. The copy is removed at the end (`--keep`
leaves it).

Blocks (`--only`, comma-separated; all by default), in the order they run:

- `reindex`, `freshness`: bench/bench_search.py's cold reindex (no index file; median of 3)
  and freshness check (`Index.refresh()`, nothing changed / one file changed);
- `search`: `memctl search WORD --all-projects --limit 20 --json` end to end beside
  `rg -l -F -i WORD STORE` (`grep -r -l` where ripgrep is missing: `apt-get install -y
  ripgrep`), the two alternated, first with no watcher, then with a real `memctl watch`
  running. With the watcher, `memctl watch --status --json` must say `live` before and after,
  a Python that imported memctl checks that `ensure_fresh` was answered by the watcher
  (no walk), and another that searches were answered by its search server (docs/watch.md);
  only the search subprocess is timed (a served search's CPU is the asking process's).
  Without the watcher, `WALK_ONLY` is timed with them: a Python that starts and walks the
  store with the search's helper processes and does nothing else, the floor of that search;
- `miss`: bench/bench_search.py's search with no hit beside searches with hits;
- `health`: `memctl health --json` with no pair cache (first report), then again (second),
  three times (medians); peak RSS of the largest process;
- `recall`, `write`: `memctl recall QUERY`, then `memctl add TEXT --json` (git commit
  included) and `memctl show ID --json` of the note just added (bench/bench_write.py's loop);
- `mcp`: search, recall and remember through the MCP SDK client (bench/bench_mcp.py);
- `fresh`: write → searchable, --tries times, by hand and with `memctl add`, with and
  without a running watcher (bench/bench_freshness.py): misses and write → found.

Every command runs with MEMCTL_NOW=2026-11-30T12:00:00Z (the corpus's dates are around it)
and MEMCTL_PROJECT=blog-backend. The 1-minute load average is printed with each figure: on
this shared 2-core machine, a figure taken at a load above ~1 is slowed by others.

Prints each figure as it is taken (with its command), then a Markdown table with the targets
of the scale issue and a list of commands; writes OUT/scale.json.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import anyio

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_freshness  # noqa: E402
import bench_health  # noqa: E402
import bench_mcp  # noqa: E402
import bench_search  # noqa: E402
import bench_write  # noqa: E402
import gen_corpus  # noqa: E402

from memctl.index.db import RACY_NS  # noqa: E402

RACY_SECONDS = RACY_NS / 1e9 + 0.1

MEMCTL = bench_search.MEMCTL
PYTHON = sys.executable
PROJECT = "blog-backend"
NOW = "2026-11-30T12:00:00Z"
RECALL_QUERIES = ["fix the flaky login test", "数据库连接池超时", "deploy the redis cache",
                  "为什么登录会超时"]

# One environment for every child, bench_search's own included (its functions read
# bench_search.ENV): the clock pinned, no forced walk, no other store or project.
for _name in ("MEMCTL_ALWAYS_WALK", "MEMCTL_WATCH_SYNC_WAIT", "MEMCTL_STORE"):
    bench_search.ENV.pop(_name, None)
bench_search.ENV.update(MEMCTL_NOW=NOW, MEMCTL_PROJECT=PROJECT, NO_COLOR="1")
bench_health.ENV.clear()
bench_health.ENV.update(bench_search.ENV)


# Targets of the scale issue, on this 2-core machine: figure -> (text, {size: check}).
def _at_most(limit: float) -> Callable[[float], bool]:
    return lambda value: value <= limit


def _within(share: float) -> Callable[[float], bool]:
    return lambda value: abs(value) <= share


TARGETS: dict[str, tuple[str, dict[int, Callable[[float], bool]]]] = {
    "reindex_wall_s": ("10k ≤ 2 s, 100k ≤ 20 s", {10_000: _at_most(2), 100_000: _at_most(20)}),
    "search_nowatch_ratio": ("10k ≤ 1.0× rg -l", {10_000: _at_most(1.0)}),
    "search_watch_ratio": ("10k ≤ 0.5× rg -l", {10_000: _at_most(0.5)}),
    "miss_e2e_diff": ("within ±20 % at 10k, 100k",
                      {10_000: _within(0.20), 100_000: _within(0.20)}),
    "health_first_s": ("10k ≤ 2 s, 100k ≤ 30 s", {10_000: _at_most(2), 100_000: _at_most(30)}),
    "health_rss_mb": ("≤ 500 MB", {size: _at_most(500) for size in (1_000, 10_000, 100_000)}),
    "add_ms": ("10k ≤ 200 ms", {10_000: _at_most(bench_write.TARGETS["add"])}),
    "show_ms": ("10k ≤ 120 ms", {10_000: _at_most(bench_write.TARGETS["show"])}),
    "mcp_search_ms": ("10k ≤ 15 ms", {10_000: _at_most(15)}),
    "mcp_recall_ms": ("10k ≤ 40 ms", {10_000: _at_most(40)}),
    **{key: ("0 misses", {size: _at_most(0) for size in (1_000, 10_000, 100_000)})
       for key in ("mcp_hand", "mcp_hand_nowatch")},
    **{f"fresh_{watching}_{how}": ("0 misses", {size: _at_most(0)
                                                 for size in (1_000, 10_000, 100_000)})
       for watching in ("none", "watch") for how in ("hand", "add")},
}


Options = argparse.Namespace  # --seed, --tries, ... (main)


class Results:
    """The figures of one size: value, unit, load average, command."""

    def __init__(self, store: Path) -> None:
        self.store = store
        self.figures: dict[str, dict[str, object]] = {}

    def put(self, key: str, value: float, unit: str, command: str,
            **extra: object) -> None:
        self.figures[key] = {"value": value, "unit": unit, "load": os.getloadavg()[0],
                             "command": command, **extra}

    def value(self, key: str) -> float:
        return float(self.figures[key]["value"])  # type: ignore[arg-type]


def load() -> str:
    return bench_search.load()


def env_for(store: Path) -> dict[str, str]:
    return dict(bench_search.ENV, MEMCTL_STORE=str(store))


def percentile(values: list[float], p: float) -> float:
    return bench_write.percentile(values, p)


# --- the stores -----------------------------------------------------------------------------

def prepared_store(out: Path, size: int, seed: int) -> Path:
    """gen_corpus's store of `size` notes made a memctl store (git history, index built),
    made once per size and seed. Only ever copied, never measured on."""
    store = out / "scale" / f"store-{size}-seed{seed}"
    marker = out / "scale" / f"store-{size}-seed{seed}.json"
    key = {"size": size, "seed": seed, "generator": "bench/gen_corpus.py"}
    if marker.is_file() and json.loads(marker.read_text()) == key and store.is_dir():
        return packed(store)
    marker.unlink(missing_ok=True)
    if store.exists():
        shutil.rmtree(store)
    started = time.perf_counter()
    gen_corpus.generate(store, size, seed)
    env = env_for(store)
    subprocess.run([MEMCTL, "init", str(store)], env=env, check=True, capture_output=True)
    subprocess.run([MEMCTL, "reindex"], env=env, check=True, capture_output=True)
    packed(store)
    marker.write_text(json.dumps(key))
    bench_search.show(f"made the store of {size} notes (seed {seed}) in "
                      f"{time.perf_counter() - started:.0f} s",
                      f"gen_corpus.generate({store}, {size}, {seed}); memctl init; memctl reindex")
    return store


def packed(store: Path) -> Path:
    """`store`, once git's `gc --auto` is done with it: the first commit of 100k notes leaves
    ~100k loose objects that git packs in the background, and a copy made meanwhile meets
    files vanishing."""
    while (store / ".git" / "gc.pid").exists():
        time.sleep(0.5)
    return store


def git(store: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(store), *args], check=True, capture_output=True)


def work_copy(source: Path, out: Path, size: int) -> Path:
    """A copy of the prepared store to measure on, its index brought in step with it once
    the copy is older than the index's racy window."""
    target = out / "scale" / f"work-{size}"
    if target.exists():
        shutil.rmtree(target)
    started = time.perf_counter()
    subprocess.run(["cp", "-a", str(source), str(target)], check=True)
    copied = time.monotonic()
    # git's index holds inode numbers and change times, all new in a copy: refresh it once,
    # or every `git status` of the copy (health, add) would hash every file again.
    git(target, "update-index", "-q", "--refresh")
    bench_search.warm_up(target)
    # The copy keeps file times but not change times, which the index's stamps hold too
    # (memctl/core/stamp.py): the first check records every file's new stamp. Made within
    # the racy window (2 s) of the copy, it would record none and every later check would
    # hash every file again (a "nothing changed" freshness check of 10k notes: ~180 ms
    # instead of ~35), so it waits that long first.
    time.sleep(max(0.0, RACY_SECONDS - (time.monotonic() - copied)))
    subprocess.run([PYTHON, "-c", "import sys; from memctl.index.db import ensure_fresh; "
                    "ensure_fresh(sys.argv[1]).close()", str(target)],
                   check=True, capture_output=True, env=bench_search.ENV)
    print(f"  (copied to {target} and read once in {time.perf_counter() - started:.0f} s)",
          flush=True)
    return target


# --- measuring one command --------------------------------------------------------------------

def timed(command: list[str], env: dict[str, str], ok: tuple[int, ...] = (0,)) -> tuple[float, float]:
    """(wall ms, CPU ms) of one subprocess, its own children included; output discarded."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = (time.perf_counter() - start) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in ok:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}): "
                         f"{done.stderr.decode(errors='replace')[-400:]}")
    return wall, (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000


def child(command: list[str], env: dict[str, str]) -> tuple[float, float, float]:
    """(wall ms, CPU ms, peak RSS MB of its largest process) of one command, measured by a
    Python of its own (bench_search._CHILD_RUN), so each peak is this command's alone."""
    output = subprocess.run([PYTHON, "-c", bench_search._CHILD_RUN, *command], env=env,
                            check=True, capture_output=True, text=True).stdout.split()
    if output[3] != "0":
        raise SystemExit(f"{' '.join(command)} failed with {output[3]}")
    return float(output[0]) * 1000, float(output[1]) * 1000, int(output[2]) / 1024


# --- blocks -------------------------------------------------------------------------------------

def block_reindex(store: Path, size: int, results: Results, _: Options) -> None:
    figures = bench_search.cold_reindex(store, size)
    command = f"{MEMCTL} --store {store} reindex   (no index file)"
    results.put("reindex_wall_s", figures["wall_s"], "s", command)
    results.put("reindex_cpu_s", figures["cpu_s"], "s", command)
    results.put("reindex_rss_mb", figures["rss_mb"], "MB", command)


def block_freshness(store: Path, size: int, results: Results, _: Options) -> None:
    figures = bench_search.freshness(store, size)
    results.put("fresh_check_ms", figures["unchanged_ms"], "ms",
                "python -c <Index.refresh() x9, nothing changed> (bench/bench_search.py)",
                cpu_ms=figures["unchanged_cpu_ms"])
    results.put("fresh_check_one_ms", figures["one_changed_ms"], "ms",
                "python -c <append to one note; Index.refresh()> x9 (bench/bench_search.py)")


_SERVED = """
import sys
from memctl.index.db import ensure_fresh
from memctl.store import Store
store = Store(sys.argv[1])
served = 0
for _ in range(5):
    index = ensure_fresh(store)
    served += index.last_refresh is None  # set only when it walked the store itself
    index.close()
print(served)
"""


def watcher_status(store: Path, env: dict[str, str]) -> dict[str, object]:
    done = subprocess.run([MEMCTL, "--store", str(store), "watch", "--status", "--json"],
                          env=env, check=True, capture_output=True, text=True)
    return json.loads(done.stdout)


# Whether `memctl search` is answered by the watcher's search server (docs/watch.md): the
# asking side of memctl.cli.served, as the console script runs it, its output discarded.
_BY_SERVER = """
import os, sys
from memctl.cli import served
out, null = os.dup(1), os.open(os.devnull, os.O_WRONLY)
os.dup2(null, 1)
count = sum(served.answer(["--store", sys.argv[1], "search", "timeout", "--all-projects",
                           "--json"]) is not None for _ in range(5))
os.write(out, str(count).encode())
"""


def served_by_server(store: Path, env: dict[str, str]) -> int:
    """Of 5 searches, how many the watcher's search server answered."""
    # -P: memctl as the console script finds it, never a copy in the folder the bench runs in
    # (the server declines a search of another memctl).
    return int(subprocess.run([PYTHON, "-P", "-c", _BY_SERVER, str(store)], env=env,
                              check=True, capture_output=True, text=True).stdout)


def served_by_watcher(store: Path, env: dict[str, str]) -> int:
    """Of 5 freshness checks, how many the running watcher answered (no walk)."""
    return int(subprocess.run([PYTHON, "-c", _SERVED, str(store)], env=env, check=True,
                              capture_output=True, text=True).stdout)


def start_watcher(store: Path, env: dict[str, str]) -> bench_freshness.Watcher:
    """A real `memctl watch`, once `memctl watch --status` says it keeps the index fresh."""
    watcher = bench_freshness.Watcher(env)
    deadline = time.perf_counter() + 60
    while not watcher_status(store, env)["live"]:
        if time.perf_counter() > deadline:
            watcher.stop()
            raise SystemExit("the watcher never became live (memctl watch --status)")
        time.sleep(0.1)
    # Its search server listens a moment later (docs/watch.md); searches run on their own
    # until then (and always with a memctl that has none: served_by_server says so).
    deadline = time.perf_counter() + 5
    while not (store / ".memctl" / "search.sock").exists() and time.perf_counter() < deadline:
        time.sleep(0.05)
    return watcher


# The floor of a search with no watcher: a Python that starts, walks the store as
# `memctl search` does (the same helper processes, memctl.disk.filescan) and ends, with none
# of the search's imports, query or output.
# The helpers are waited for, as `memctl search` waits for them at its end: their CPU is
# then counted as the command's.
WALK_ONLY = ("import os, sys; from memctl.disk import filescan; "
             "filescan.walk_ahead(sys.argv[1]); filescan.scan_folders(sys.argv[1]); "
             "filescan.reap_helpers(); os._exit(0)")


def search_beside_grep(store: Path, env: dict[str, str], rounds: int,
                       floor: bool = False) -> dict[str, float]:
    """`memctl search --all-projects` and `rg -l` for the same words, alternated (and, with
    `floor`, the walk alone: WALK_ONLY)."""
    commands = {"memctl": lambda word: (memctl_search(store, word), (0,)),
                "grep": lambda word: (bench_search.grep_command(word, store), (0, 1))}
    if floor:
        commands["floor"] = lambda word: ([PYTHON, "-c", WALK_ONLY, str(store)], (0,))
    times: dict[str, list[float]] = {label: [] for label in commands}
    cpus: dict[str, list[float]] = {label: [] for label in commands}
    for word in bench_search.GREP_WORDS:  # one untimed run of each: the OS cache, counters
        for make in commands.values():
            command, ok = make(word)
            timed(command, env, ok=ok)
    for number in range(rounds):
        for word in bench_search.GREP_WORDS:
            labels = list(commands)
            for label in labels if number % 2 == 0 else reversed(labels):
                command, ok = commands[label](word)
                wall, cpu = timed(command, env, ok=ok)
                times[label].append(wall)
                cpus[label].append(cpu)
    figures = {f"{label}_{kind}": statistics.median(values[label])
               for label in commands for kind, values in (("ms", times), ("cpu_ms", cpus))}
    return {**figures, "runs": len(times["memctl"])}


def memctl_search(store: Path, word: str) -> list[str]:
    return [MEMCTL, "--store", str(store), "search", word, "--all-projects", "--limit", "20",
            "--json"]


def block_search(store: Path, size: int, results: Results, _: Options) -> None:
    env = env_for(store)
    rounds = 5 if size <= 10_000 else 2
    tool = Path(bench_search.grep_command("x", store)[0]).name
    grep_shown = " ".join(bench_search.grep_command("<word>", store))
    memctl_shown = " ".join(memctl_search(store, "<word>"))
    words = ", ".join(bench_search.GREP_WORDS)
    for watching in (False, True):
        watcher = start_watcher(store, env) if watching else None
        before = after = by_server = 0
        live = False
        try:
            if watcher is not None:
                before = served_by_watcher(store, env)
            figures = search_beside_grep(store, env, rounds, floor=not watching)
            if watcher is not None:
                after = served_by_watcher(store, env)
                by_server = served_by_server(store, env)
                live = bool(watcher_status(store, env)["live"])
        finally:
            if watcher is not None:
                watcher.stop()
        suffix = "watch" if watching else "nowatch"
        ratio = figures["memctl_ms"] / figures["grep_ms"]
        extra: dict[str, object] = {"cpu_ms": figures["memctl_cpu_ms"], "runs": figures["runs"]}
        if watcher is not None:
            extra.update(served_before=before, served_after=after, live_after=live,
                         by_server=by_server)
            if before < 5 or after < 5 or not live:
                print(f"  WARNING: the watcher answered {before}/5 and {after}/5 freshness "
                      f"checks (live after: {live}): the searches may have walked the store")
            if by_server < 5:
                print(f"  WARNING: the watcher's search server answered {by_server}/5 searches "
                      f"(docs/watch.md): the others ran on their own")
        results.put(f"grep_{suffix}_ms", figures["grep_ms"], "ms", f"{grep_shown}   ({words})",
                    cpu_ms=figures["grep_cpu_ms"], tool=tool)
        results.put(f"search_{suffix}_ms", figures["memctl_ms"], "ms",
                    f"MEMCTL_PROJECT={PROJECT} {memctl_shown}   ({words})"
                    + ("   with `memctl watch` running" if watching else ""), **extra)
        results.put(f"search_{suffix}_ratio", ratio, "×", "the two above, same run")
        if "floor_ms" in figures:
            results.put("walk_only_ms", figures["floor_ms"], "ms",
                        f"{PYTHON} -c '<WALK_ONLY in bench/bench_scale.py>' $STORE",
                        cpu_ms=figures["floor_cpu_ms"])
            results.put("walk_only_ratio", figures["floor_ms"] / figures["grep_ms"], "×",
                        "the walk alone ÷ `rg -l`, same run")
        state = (f"with a live watcher (it answered {before}/5 checks before, {after}/5 after;"
                 f" its search server {by_server}/5 searches)" if watching else "no watcher")
        bench_search.show(
            f"search end to end, {size} notes, {state}: memctl {figures['memctl_ms']:.0f} ms "
            f"(CPU {figures['memctl_cpu_ms']:.0f}), {tool} -l {figures['grep_ms']:.0f} ms "
            f"(CPU {figures['grep_cpu_ms']:.0f}): {ratio:.2f}× over {figures['runs']} runs each, "
            f"alternated  [{load()}]", f"{memctl_shown} | {grep_shown}")


def block_miss(store: Path, size: int, results: Results, _: Options) -> None:
    figures = bench_search.miss_vs_hit(store, size)
    command = (f"MEMCTL_PROJECT={PROJECT} {MEMCTL} --store {store} search '<word>' --json   "
               f"(hits: {', '.join(bench_search.HITS)}; no hit: {', '.join(bench_search.MISSES)})")
    results.put("miss_e2e_hit_ms", figures["e2e_hit_ms"], "ms", command,
                cpu_ms=figures["e2e_hit_cpu_ms"])
    results.put("miss_e2e_miss_ms", figures["e2e_miss_ms"], "ms", command,
                cpu_ms=figures["e2e_miss_cpu_ms"])
    results.put("miss_e2e_diff", figures["e2e_miss_ms"] / figures["e2e_hit_ms"] - 1, "%",
                "the two above, 30 runs each, alternated")
    results.put("miss_ranked_diff", figures["ranked_miss_ms"] / figures["ranked_hit_ms"] - 1,
                "%", "python -c <search(store, q, index=fresh index)> x20 (bench/bench_search.py)",
                hit_ms=figures["ranked_hit_ms"], miss_ms=figures["ranked_miss_ms"])


def block_health(store: Path, size: int, results: Results, _: Options) -> None:
    """bench/bench_health.py's report: the first report (no kept pairs), then the second;
    three times (medians)."""
    runs = [bench_health.report(store, f"{size} notes") for _ in range(3)]
    shown = f"{MEMCTL} --store {store} health --json"
    for label in ("first", "second"):
        walls = [run[label][0] for run in runs]
        results.put(f"health_{label}_s", statistics.median(walls), "s",
                    shown + ("   (no .memctl/health-pairs.json)" if label == "first"
                             else "   (right after the first)"),
                    cpu_s=statistics.median(run[label][1] for run in runs),
                    runs=[round(wall, 3) for wall in walls])
    peak = max(run[label][2] for run in runs for label in ("first", "second"))
    results.put("health_rss_mb", peak, "MB", shown + "   (peak RSS of its largest process)")
    bench_search.show(f"health, {size} notes: first report {results.value('health_first_s'):.2f} "
                      f"s, second {results.value('health_second_s'):.2f} s (median of "
                      f"{len(runs)}), peak RSS {peak:.0f} MB  [{load()}]", shown)


def block_recall(store: Path, size: int, results: Results, _: Options) -> None:
    env = env_for(store)
    runs = 12 if size <= 10_000 else 8
    walls, cpus, peaks = [], [], []
    child([MEMCTL, "--store", str(store), "recall", RECALL_QUERIES[0]], env)  # untimed
    for number in range(runs):
        query = RECALL_QUERIES[number % len(RECALL_QUERIES)]
        wall, cpu, peak = child([MEMCTL, "--store", str(store), "recall", query], env)
        walls.append(wall)
        cpus.append(cpu)
        peaks.append(peak)
    shown = f"MEMCTL_PROJECT={PROJECT} {MEMCTL} --store {store} recall '<query>'"
    results.put("recall_ms", statistics.median(walls), "ms",
                f"{shown}   ({' | '.join(RECALL_QUERIES)})", p95_ms=percentile(walls, 95),
                cpu_ms=statistics.median(cpus), rss_mb=max(peaks))
    bench_search.show(f"recall, {size} notes: median {statistics.median(walls):.0f} ms, p95 "
                      f"{percentile(walls, 95):.0f} ms, CPU {statistics.median(cpus):.0f} ms, "
                      f"peak RSS {max(peaks):.0f} MB over {runs} runs  [{load()}]", shown)


def block_write(store: Path, size: int, results: Results, options: Options) -> None:
    """bench/bench_write.py's loop: add a note of random words, show it."""
    env = env_for(store)
    rng = random.Random(options.seed)
    runs = 15
    times: dict[str, list[float]] = {"add": [], "show": []}
    cpus: dict[str, list[float]] = {"add": [], "show": []}
    added: list[str] = []
    for run in range(runs):
        text = f"bench note {run}: {bench_write.words(rng, 12)}"
        wall, cpu, stdout = bench_write.timed(MEMCTL, env, ["add", text, "--json"])
        times["add"].append(wall)
        cpus["add"].append(cpu)
        added.append(json.loads(stdout)["id"])
        wall, cpu, _ = bench_write.timed(MEMCTL, env, ["show", added[-1], "--json"])
        times["show"].append(wall)
        cpus["show"].append(cpu)
    for label, args in (("add", "add '<text>' --json   (commit included)"),
                        ("show", "show <id> --json   (the note just added)")):
        median = statistics.median(times[label])
        shown = f"MEMCTL_STORE={store} MEMCTL_PROJECT={PROJECT} {MEMCTL} {args}"
        results.put(f"{label}_ms", median, "ms", shown, p95_ms=percentile(times[label], 95),
                    cpu_ms=statistics.median(cpus[label]))
        bench_search.show(f"{label}, {size} notes: median {median:.0f} ms, p95 "
                          f"{percentile(times[label], 95):.0f} ms, CPU "
                          f"{statistics.median(cpus[label]):.0f} ms over {runs} runs  "
                          f"[{load()}]", shown)


def block_mcp(store: Path, size: int, results: Results, options: Options) -> None:
    """bench/bench_mcp.py's calls through the SDK client: `memctl mcp` with its own watcher
    thread (the default: no separate `memctl watch`), then with `--no-watch`."""
    calls = 50 if size <= 10_000 else 20
    rng = random.Random(options.seed)
    with open(store.parent / f"mcp-server-{size}.log", "w") as errlog:
        for watch in (True, False):
            figures = anyio.run(bench_mcp.measure, store, watch, calls, 20, rng, errlog)
            suffix = "" if watch else "_nowatch"
            how = "`memctl mcp`" if watch else "`memctl mcp --no-watch`"
            misses, tries = figures["hand"]
            for tool in ("search", "recall", "remember"):
                times: list[float] = figures[tool]
                median = statistics.median(times)
                results.put(f"mcp_{tool}{suffix}_ms", median, "ms",
                            f"MCP SDK client → {how} (stdio), MEMCTL_STORE={store}: call_tool"
                            f"('{tool}', ...) x{len(times)} (bench/bench_mcp.py)",
                            p95_ms=percentile(times, 95), calls=len(times))
            results.put(f"mcp_hand{suffix}", misses, "of", f"{how}: a note written by hand, "
                        "then call_tool('search') at once (bench/bench_mcp.py)", tries=tries)
            bench_search.show(
                f"MCP through the SDK client, {how}, {size} notes: "
                + ", ".join(f"{tool} median {statistics.median(figures[tool]):.1f} ms "
                            f"(p95 {percentile(figures[tool], 95):.1f})"
                            for tool in ("search", "recall", "remember"))
                + f"; written by hand then searched: {misses}/{tries} misses  [{load()}]",
                f"anyio.run(bench_mcp.measure, {store}, watch={watch}, calls={calls}, hand=20)")


def block_fresh(store: Path, size: int, results: Results, options: Options) -> None:
    """bench/bench_freshness.py: a write, then a search at once for a word only it holds."""
    env = env_for(store)
    rng = random.Random(options.seed)
    tries = options.tries
    searcher = bench_freshness.Searcher(store, env, str(HERE.parent))
    looks = {"search": lambda word: bench_freshness.found(env, word),
             "in_process": searcher.found}
    try:
        for watching in (False, True):
            watcher = start_watcher(store, env) if watching else None
            try:
                for how in ("hand", "add"):
                    figures: dict[str, object] = {}
                    for label, look in looks.items():
                        misses, latencies = bench_freshness.run(store, env, how, tries, rng, look)
                        figures[label] = {"misses": misses, "tries": tries,
                                          "median_ms": statistics.median(latencies),
                                          "p95_ms": percentile(latencies, 95)}
                    key = f"fresh_{'watch' if watching else 'none'}_{how}"
                    total = sum(int(figure["misses"]) for figure in figures.values())  # type: ignore[index]
                    write = "a file written by hand" if how == "hand" else "memctl add"
                    results.put(key, total, "misses",
                                f"{write}, then `memctl search WORD --json` and an in-process "
                                f"search (bench/bench_freshness.py), {tries} tries each"
                                + (", `memctl watch` running" if watching else ""), **figures)
                    bench_search.show(
                        f"write → searchable, {size} notes, {write}, "
                        f"{'watcher running' if watching else 'no watcher'}: "
                        + "; ".join(f"{label} {figure['misses']}/{tries} misses, write → found "  # type: ignore[index]
                                    f"median {figure['median_ms']:.0f} ms"  # type: ignore[index]
                                    for label, figure in figures.items())
                        + f"  [{load()}]", "bench_freshness.run(...)")
            finally:
                if watcher is not None:
                    watcher.stop()
    finally:
        searcher.stop()


BLOCK_RUNS: dict[str, Callable[[Path, int, Results, Options], None]] = {
    "reindex": block_reindex, "freshness": block_freshness, "search": block_search,
    "miss": block_miss, "health": block_health, "recall": block_recall, "write": block_write,
    "mcp": block_mcp, "fresh": block_fresh,
}
BLOCKS = list(BLOCK_RUNS)


# --- the table ----------------------------------------------------------------------------------

ROWS: list[tuple[str, str]] = [
    ("reindex_wall_s", "cold `reindex`, wall"),
    ("reindex_cpu_s", "cold `reindex`, CPU of all processes"),
    ("reindex_rss_mb", "cold `reindex`, peak RSS"),
    ("fresh_check_ms", "freshness check, nothing changed"),
    ("fresh_check_one_ms", "freshness check, one file changed"),
    ("grep_nowatch_ms", "`rg -l` (no watcher)"),
    ("search_nowatch_ms", "`search --all-projects` end to end, no watcher"),
    ("search_nowatch_ratio", "… ÷ `rg -l`"),
    ("walk_only_ms", "Python start + the store's walk alone (the floor of the above)"),
    ("walk_only_ratio", "… ÷ `rg -l`"),
    ("grep_watch_ms", "`rg -l` (watcher running)"),
    ("search_watch_ms", "`search --all-projects` end to end, live watcher"),
    ("search_watch_ratio", "… ÷ `rg -l`"),
    ("miss_e2e_hit_ms", "`search` end to end, words with hits"),
    ("miss_e2e_miss_ms", "`search` end to end, words with no hit"),
    ("miss_e2e_diff", "… no hit vs hit"),
    ("miss_ranked_diff", "ranked query alone, no hit vs hit (in process; no target)"),
    ("health_first_s", "`health` first report"),
    ("health_second_s", "`health` second report"),
    ("health_rss_mb", "`health` peak RSS"),
    ("recall_ms", "`recall`"),
    ("add_ms", "`add` (commit included)"),
    ("show_ms", "`show`"),
    ("mcp_search_ms", "MCP search (SDK client; `memctl mcp`, its own watcher thread)"),
    ("mcp_recall_ms", "MCP recall (same)"),
    ("mcp_remember_ms", "MCP remember"),
    ("mcp_hand", "MCP: written by hand, then search: misses"),
    ("mcp_search_nowatch_ms", "MCP search, `mcp --no-watch`"),
    ("mcp_recall_nowatch_ms", "MCP recall, `mcp --no-watch`"),
    ("mcp_remember_nowatch_ms", "MCP remember, `mcp --no-watch`"),
    ("mcp_hand_nowatch", "MCP, `--no-watch`: written by hand, then search: misses"),
    ("fresh_none_hand", "write → searchable, by hand, no watcher: misses (`search` · in process)"),
    ("fresh_none_add", "write → searchable, `add`, no watcher: misses (`search` · in process)"),
    ("fresh_watch_hand", "write → searchable, by hand, watcher: misses (`search` · in process)"),
    ("fresh_watch_add", "write → searchable, `add`, watcher: misses (`search` · in process)"),
]


def cell(key: str, size: int, figure: dict[str, object] | None) -> str:
    """`value ✓/✗, CPU … (load …)`: the mark where the issue sets a target for this size;
    the CPU time where it was measured (on a loaded machine the steadier figure)."""
    if figure is None:
        return "—"
    value, unit = float(figure["value"]), str(figure["unit"])  # type: ignore[arg-type]
    cpu = ""
    if unit == "%":
        text = f"{value * 100:+.0f} %"
    elif unit == "×":
        text = f"{value:.2f}×"
    elif unit == "of":
        text = f"{value:.0f}/{figure['tries']}"
    elif unit == "misses":
        text = " · ".join(f"{figure[look]['misses']}/{figure[look]['tries']}"  # type: ignore[index]
                          for look in ("search", "in_process"))
    elif unit == "s":
        text = f"{value:.2f} s"
        if "cpu_s" in figure:
            cpu = f", CPU {float(figure['cpu_s']):.2f} s"  # type: ignore[arg-type]
    elif unit == "ms":
        text = f"{value:.1f} ms" if value < 20 else f"{value:.0f} ms"
        if "cpu_ms" in figure:
            cpu = f", CPU {float(figure['cpu_ms']):.0f} ms"  # type: ignore[arg-type]
    else:
        text = f"{value:.0f} {unit}"
    if key in TARGETS and size in TARGETS[key][1]:
        text += " ✓" if TARGETS[key][1][size](value) else " ✗"
    if "served_before" in figure and (min(int(figure["served_before"]),  # type: ignore[call-overload]
                                          int(figure["served_after"])) < 5  # type: ignore[call-overload]
                                      or not figure["live_after"]):
        text += " ⚠ the watcher did not answer every check: some searches walked"
    if "by_server" in figure and int(figure["by_server"]) < 5:  # type: ignore[call-overload]
        text += (f" ⚠ its search server answered {figure['by_server']}/5 searches: the others "
                 f"ran on their own")
    return f"{text}{cpu} (load {float(figure['load']):.1f})"  # type: ignore[arg-type]


def table(all_results: dict[int, Results]) -> str:
    sizes = sorted(all_results)
    lines = ["| figure | " + " | ".join(f"{size:,} notes" for size in sizes) + " | target |",
             "|---|" + "---|" * len(sizes) + "---|"]
    for key, label in ROWS:
        if not any(key in all_results[size].figures for size in sizes):
            continue
        cells = [cell(key, size, all_results[size].figures.get(key)) for size in sizes]
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {TARGETS.get(key, ('',))[0]} |")
    return "\n".join(lines)


def commands(all_results: dict[int, Results]) -> str:
    """Each figure's command, the measured copy written $STORE, memctl as `memctl`."""
    shown: dict[str, str] = {}
    for size in sorted(all_results):
        for key, figure in all_results[size].figures.items():
            command = str(figure["command"]).replace(str(all_results[size].store), "$STORE")
            shown.setdefault(key, command.replace(MEMCTL, "memctl").replace("`", ""))
    labels = dict(ROWS)
    return "\n".join(f"- {labels.get(key, key)}: `{command}`" for key, command in shown.items())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--out", type=Path, default=HERE / "out")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--tries", type=int, default=100,
                        help="write → searchable probes per case (target: 0 misses in 100)")
    parser.add_argument("--only", default=",".join(BLOCKS),
                        help=f"blocks to run, comma-separated ({', '.join(BLOCKS)})")
    parser.add_argument("--keep", action="store_true", help="keep the measured copies")
    parser.add_argument("--table", type=Path, metavar="SCALE_JSON",
                        help="print the table of an earlier run's scale.json, measure nothing")
    args = parser.parse_args()
    if args.table:
        print_table(json.loads(args.table.read_text()))
        return
    sizes = [int(size) for size in args.sizes.split(",")]
    blocks = args.only.split(",")
    unknown = set(blocks) - set(BLOCKS)
    if unknown:
        parser.error(f"unknown blocks: {', '.join(sorted(unknown))}")
    out = args.out.resolve()
    (out / "scale").mkdir(parents=True, exist_ok=True)
    version = subprocess.run([MEMCTL, "--version"], capture_output=True, text=True,
                             env=bench_search.ENV).stdout.strip()
    grep_tool = "rg" if shutil.which("rg") else "grep -r (ripgrep missing)"
    meta = {"date": time.strftime("%Y-%m-%d %H:%M %Z"), "cores": os.cpu_count(),
            "python": sys.version.split()[0], "sqlite": sqlite3.sqlite_version,
            "memctl": version, "seed": args.seed, "sizes": sizes, "blocks": blocks,
            "tries": args.tries, "grep": grep_tool, "now": NOW, "walk": walk_kind(),
            "command": " ".join([Path(PYTHON).name, "bench/bench_scale.py", *sys.argv[1:]])}
    print(f"# bench_scale: {version}, {meta['cores']} cores, python {meta['python']}, sqlite "
          f"{meta['sqlite']}, {meta['date']}, {grep_tool}, {meta['walk']} walk  [{load()}]",
          flush=True)
    all_results: dict[int, Results] = {}
    for size in sizes:
        print(f"\n## {size} notes", flush=True)
        store = work_copy(prepared_store(out, size, args.seed), out, size)
        results = all_results[size] = Results(store)
        try:
            for name, block in BLOCK_RUNS.items():
                if name in blocks:
                    block(store, size, results, args)
        finally:
            if not args.keep:
                shutil.rmtree(store, ignore_errors=True)
        saved = {"meta": meta, "results": {str(n): {"store": str(r.store), "figures": r.figures}
                                           for n, r in all_results.items()}}
        (out / "scale.json").write_text(json.dumps(saved, indent=1, ensure_ascii=False))
    print_table(saved)
    print(f"\nwrote {out / 'scale.json'}")


def walk_kind() -> str:
    """Whether the installed memctl lists folders in C (memctl/disk/_statwalk.c, built where
    the install found a compiler; MEMCTL_NATIVE_WALK=0 turns it off) or in Python."""
    probe = "from memctl.disk import filescan; print(filescan._native_list is not None)"
    done = subprocess.run([PYTHON, "-c", probe], capture_output=True, text=True,
                          env=bench_search.ENV)
    return "compiled" if done.stdout.strip() == "True" else "Python"


def print_table(saved: dict[str, object]) -> None:
    """The table and commands of a run, from what it saved in scale.json."""
    meta: dict[str, object] = saved["meta"]  # type: ignore[assignment]
    all_results: dict[int, Results] = {}
    for size, entry in saved["results"].items():  # type: ignore[attr-defined]
        all_results[int(size)] = Results(Path(entry["store"]))
        all_results[int(size)].figures = entry["figures"]
    walk = f"{meta['walk']} walk; " if "walk" in meta else ""
    print(f"\n## Scale table ({meta['date']}, {meta['memctl']}, {meta['cores']} cores; {walk}"
          f"load = 1-minute load average when taken)\n\n    {meta['command']}\n")
    print(table(all_results))
    print(f"\nCommands ($STORE: the measured copy of the store of each size; memctl: {MEMCTL}):\n")
    print(commands(all_results))


if __name__ == "__main__":
    main()
