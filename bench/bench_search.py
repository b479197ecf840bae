"""Benchmarks of the index and search (issue 3), on stores made by bench/gen_corpus.py.

Prints each figure with the command that produced it:
1. cold `memctl reindex` (no index file) at each size, wall time, CPU time and peak RSS;
   (the bytecode compiled and the files in the OS cache first, as on a machine in use);
2. the freshness check (`Index.refresh()`, what every read command runs first) with nothing
   changed and with one file changed;
3. `memctl search` end to end as a subprocess (start-up, freshness check, query, output);
4. the ranked query alone (`memctl.index.search.search` on an open, fresh index) p50/p95;
5. `rg` (or `grep -r`) over the same files for the same words, side by side;
6. a search that finds nothing beside one with hits: the ranked query alone (in process) and
   `memctl search` end to end, medians over the same number of runs, alternated.

    .venv/bin/python bench/bench_search.py [--sizes 1000,10000,100000] [--out bench/out]
        [--figures reindex,freshness,e2e,ranked,grep,miss]

The load average is printed with each block: on a shared machine, CPU time is the fairer
figure when it is far below the wall time.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PYTHON = sys.executable
MEMCTL = str(Path(sys.executable).parent / "memctl")
# Children may write bytecode: an installed memctl has it, and compiling is not its work.
ENV = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
QUERIES = ["数据库", "连接池", "缓存", "登录超时", "postgresql", "connection pool", "deploy*",
           "timeout", "Redis 缓存", "kubernetes"]
E2E_QUERIES = ["数据库 连接池", "postgresql timeout", "缓存"]
# Questions as an agent types them: best match (units, coverage), not every word required.
QUESTIONS = ["what is the database connection pool timeout", "数据库连接池的超时是多少",
             "how do we deploy the cache", "为什么登录会超时", "which port does redis listen on",
             "上次部署失败的原因是什么", "when did we switch the queue to kafka",
             "postgress connection", "博客后端用的是什么数据库", "who owns the kubernetes upgrade"]
GREP_WORDS = ["数据库", "连接池", "PostgreSQL", "timeout"]
# Words no note has and none is close to: the search runs its fuzzy fallback and finds nothing.
MISSES = ["zqxwvy", "flibbertigibbet", "qqqqzzzz", "xyzzyplugh", "snarfblat"]
HITS = ["postgresql", "timeout", "kubernetes", "connection pool", "deploy"]

_CHILD_RUN = """
import resource, subprocess, sys, time
start = time.perf_counter()
code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode
wall = time.perf_counter() - start
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, code)
"""

_REFRESH = """
import statistics, sys, time
from memctl.index.db import open_index
root = sys.argv[1]
index = open_index(root)
index.refresh()
walls, cpus = [], []
for _ in range(9):
    wall, cpu = time.perf_counter(), time.process_time()
    stats = index.refresh()
    walls.append((time.perf_counter() - wall) * 1000)
    cpus.append((time.process_time() - cpu) * 1000)
    assert not stats.changed, stats
print(statistics.median(walls), statistics.median(cpus))
"""

_ONE_CHANGED = """
import glob, statistics, sys, time
from memctl.index.db import open_index
root = sys.argv[1]
index = open_index(root)
index.refresh()
files = sorted(glob.glob(root + "/infra/notes/*/*.md"))[:9]
walls = []
for number, path in enumerate(files):
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(f"\\nedited {number}\\n")
    wall = time.perf_counter()
    stats = index.refresh()
    walls.append((time.perf_counter() - wall) * 1000)
    assert stats.files_changed == 1, stats
print(statistics.median(walls))
"""

_RANKED = """
import statistics, sys, time
from memctl.index.db import ensure_fresh
from memctl.index.search import search
from memctl.store import Store
store = Store(sys.argv[1])
queries = sys.argv[2].split("|")
index = ensure_fresh(store)
first, times = [], []
for round_number in range(11):
    for query in queries:
        start = time.perf_counter()
        search(store, query, project="blog-backend", limit=20, index=index)
        (times if round_number else first).append((time.perf_counter() - start) * 1000)
times.sort()
print(statistics.median(times), times[int(0.95 * (len(times) - 1))], len(times),
      statistics.median(first), max(first))
"""


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f} {five:.2f} {fifteen:.2f}"


def show(figure: str, command: str) -> None:
    print(f"  {figure}\n      $ {command}", flush=True)


def corpus(out: Path, size: int) -> Path:
    root = out / f"corpus-{size}"
    if not (root / "memctl.toml").exists():
        command = [PYTHON, str(HERE / "gen_corpus.py"), str(root), str(size)]
        start = time.perf_counter()
        subprocess.run(command, check=True)
        show(f"generated {size} notes in {time.perf_counter() - start:.1f} s", " ".join(command))
    return root


def drop_index(root: Path) -> None:
    for path in (root / ".memctl").glob("index.sqlite*"):
        path.unlink()


def warm_up(root: Path) -> None:
    """Compiled bytecode and file contents in the OS cache, as on a machine in use: the
    figures are memctl's work, not the first import's compilation or the disk's."""
    subprocess.run([PYTHON, "-m", "compileall", "-q", str(Path(__file__).parent.parent / "memctl")],
                   check=True, capture_output=True, env=ENV)
    for folder, _, names in os.walk(root):
        for name in names:
            with open(os.path.join(folder, name), "rb") as handle:
                while handle.read(1 << 20):
                    pass


def cold_reindex(root: Path, size: int) -> dict[str, float]:
    """`memctl reindex` with no index file, three times (median shown and returned: wall and
    CPU seconds, peak RSS in MB): one run at 100k notes moved with the VM's hour."""
    command = [MEMCTL, "--store", str(root), "reindex"]
    runs = []
    for _ in range(3):
        drop_index(root)
        output = subprocess.run([PYTHON, "-c", _CHILD_RUN, *command], check=True, env=ENV,
                                capture_output=True, text=True).stdout.split()
        wall, cpu, rss_kb, code = float(output[0]), float(output[1]), int(output[2]), output[3]
        assert code == "0", f"reindex failed with {code}"
        runs.append((wall, cpu, rss_kb))
    wall, cpu, rss_kb = sorted(runs)[len(runs) // 2]
    spread = f" (runs: {', '.join(f'{run[0]:.2f}' for run in runs)} s)" if len(runs) > 1 else ""
    show(f"cold reindex, {size} notes: {wall:.2f} s wall{spread}, {cpu:.2f} s CPU (all "
         f"processes), peak RSS {rss_kb / 1024:.0f} MB  [{load()}]", " ".join(command))
    return {"wall_s": wall, "cpu_s": cpu, "rss_mb": rss_kb / 1024}


def freshness(root: Path, size: int) -> dict[str, float]:
    """Medians in ms: nothing changed (wall, CPU), one file changed (wall)."""
    command = [PYTHON, "-c", _REFRESH, str(root)]
    wall, cpu = map(float, subprocess.run(command, check=True, capture_output=True,
                                          text=True, env=ENV).stdout.split())
    show(f"freshness check, nothing changed, {size} notes: median {wall:.1f} ms wall, "
         f"{cpu:.1f} ms CPU  [{load()}]", "python -c <Index.refresh() x9> " + str(root))
    command = [PYTHON, "-c", _ONE_CHANGED, str(root)]
    unchanged, unchanged_cpu = wall, cpu
    wall = float(subprocess.run(command, check=True, capture_output=True, text=True,
                                env=ENV).stdout)
    show(f"freshness check, one file changed, {size} notes: median {wall:.1f} ms  [{load()}]",
         "python -c <append to one note; Index.refresh()> x9 " + str(root))
    return {"unchanged_ms": unchanged, "unchanged_cpu_ms": unchanged_cpu, "one_changed_ms": wall}


def end_to_end(root: Path, size: int, runs: int = 15) -> None:
    subprocess.run([MEMCTL, "--store", str(root), "search", "warm", "--json"],
                   capture_output=True, check=True, env=ENV)
    import resource

    times, cpus = [], []
    for number in range(runs):
        query = E2E_QUERIES[number % len(E2E_QUERIES)]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run([MEMCTL, "--store", str(root), "search", query, "--json"],
                       capture_output=True, check=True,
                       env={**ENV, "MEMCTL_PROJECT": "blog-backend"})
        times.append((time.perf_counter() - start) * 1000)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append((after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000)
    bare = []
    for _ in range(5):
        start = time.perf_counter()
        subprocess.run([MEMCTL, "--version"], capture_output=True, check=True, env=ENV)
        bare.append((time.perf_counter() - start) * 1000)
    show(f"memctl search end to end, {size} notes: median {statistics.median(times):.0f} ms "
         f"wall, {statistics.median(cpus):.0f} ms CPU over {runs} runs (`memctl --version` "
         f"alone, through typer: {statistics.median(bare):.0f} ms)  "
         f"[{load()}]",
         f"MEMCTL_PROJECT=blog-backend {MEMCTL} --store {root} search '<query>' --json")


def ranked(root: Path, size: int) -> None:
    """The ranked query in one process on an open index: p50/p95 over ten rounds of the
    queries, after a first round reported apart (a query's first run in a process also pays
    for the first reads of the pages it touches: what `memctl search` end to end measures,
    with the rest of a command)."""
    for label, queries in (("keywords", QUERIES), ("questions", QUESTIONS)):
        command = [PYTHON, "-c", _RANKED, str(root), "|".join(queries)]
        median, p95, count, first_median, first_max = subprocess.run(
            command, check=True, capture_output=True, text=True, env=ENV).stdout.split()
        show(f"ranked query alone, {label} (best match, top 20 with snippets), {size} "
             f"notes: p50 {float(median):.1f} ms, p95 {float(p95):.1f} ms over {count} queries "
             f"(each query's first run in the process before them: median "
             f"{float(first_median):.1f} ms, slowest {float(first_max):.1f} ms) [{load()}]",
             f"python -c <search(store, q, index=fresh index)> for {queries}")


_MISS_VS_HIT = """
import statistics, sys, time
from memctl.index.db import ensure_fresh
from memctl.index.search import search
from memctl.store import Store
store = Store(sys.argv[1])
index = ensure_fresh(store)
sets = {"hit": sys.argv[2].split("|"), "miss": sys.argv[3].split("|")}
walls = {"hit": [], "miss": []}
cpus = {"hit": [], "miss": []}
found = {"hit": 0, "miss": 0}
for _ in range(20):
    for name, queries in sets.items():
        for query in queries:
            wall, cpu = time.perf_counter(), time.process_time()
            found[name] += bool(search(store, query, project="blog-backend", limit=20,
                                       index=index))
            walls[name].append((time.perf_counter() - wall) * 1000)
            cpus[name].append((time.process_time() - cpu) * 1000)
for name in sets:
    print(name, statistics.median(walls[name]), statistics.median(cpus[name]), found[name])
"""


def miss_vs_hit(root: Path, size: int) -> dict[str, float]:
    """A search with no hit beside searches with hits: the fuzzy fallback reads the kept
    vocabulary (memctl/index/fuzzy.py), so a miss should cost no more than a hit. Returns
    the medians in ms: the ranked query alone and `memctl search` end to end."""
    subprocess.run([MEMCTL, "--store", str(root), "search", "warm", "--json"],
                   capture_output=True, check=True, env=ENV)
    command = [PYTHON, "-c", _MISS_VS_HIT, str(root), "|".join(HITS), "|".join(MISSES)]
    lines = subprocess.run(command, check=True, capture_output=True, text=True,
                           env=ENV).stdout.split("\n")
    figures = {line.split()[0]: line.split()[1:] for line in lines if line.strip()}
    (hit_wall, hit_cpu, hits), (miss_wall, miss_cpu, misses) = figures["hit"], figures["miss"]
    show(f"ranked query alone, {size} notes: with hits p50 {float(hit_wall):.2f} ms wall / "
         f"{float(hit_cpu):.2f} ms CPU ({hits} of 100 found something); no hit p50 "
         f"{float(miss_wall):.2f} ms / {float(miss_cpu):.2f} ms CPU ({misses} of 100)  [{load()}]",
         f"python -c <search(store, q, index=fresh index)> x20 for {HITS} and {MISSES}")
    import resource

    times: dict[str, list[float]] = {"hit": [], "miss": []}
    cpus: dict[str, list[float]] = {"hit": [], "miss": []}
    for number in range(30):  # alternated, so a slow minute of the machine hits both
        for name, queries in (("hit", HITS), ("miss", MISSES)):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            subprocess.run([MEMCTL, "--store", str(root), "search", queries[number % 5],
                            "--json"], capture_output=True, check=True,
                           env={**ENV, "MEMCTL_PROJECT": "blog-backend"})
            times[name].append((time.perf_counter() - start) * 1000)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus[name].append((after.ru_utime - before.ru_utime + after.ru_stime
                               - before.ru_stime) * 1000)
    show(f"memctl search end to end, {size} notes: with hits median "
         f"{statistics.median(times['hit']):.0f} ms wall, {statistics.median(cpus['hit']):.0f} "
         f"ms CPU; no hit {statistics.median(times['miss']):.0f} ms wall, "
         f"{statistics.median(cpus['miss']):.0f} ms CPU (30 runs each, alternated)  [{load()}]",
         f"MEMCTL_PROJECT=blog-backend {MEMCTL} --store {root} search '<word>' --json")
    return {"ranked_hit_ms": float(hit_wall), "ranked_miss_ms": float(miss_wall),
            "e2e_hit_ms": statistics.median(times["hit"]),
            "e2e_miss_ms": statistics.median(times["miss"]),
            "e2e_hit_cpu_ms": statistics.median(cpus["hit"]),
            "e2e_miss_cpu_ms": statistics.median(cpus["miss"])}


def grep_command(word: str, root: Path) -> list[str]:
    """`rg -l` for a word (fixed string, any case), or `grep -r -l` where rg is missing."""
    tool = shutil.which("rg")
    if tool:
        return [tool, "-l", "-F", "-i", word, str(root)]
    return ["grep", "-r", "-l", "-F", "-i", "--include=*.md", word, str(root)]


def grep_side_by_side(root: Path, size: int) -> None:
    for word in GREP_WORDS:
        command = grep_command(word, root)
        times = []
        for _ in range(3):
            start = time.perf_counter()
            found = subprocess.run(command, capture_output=True, text=True).stdout.count("\n")
            times.append((time.perf_counter() - start) * 1000)
        start = time.perf_counter()
        subprocess.run([MEMCTL, "--store", str(root), "search", word, "--json", "--all-projects",
                        "--limit", "20"], capture_output=True, check=True, env=ENV)
        ours = (time.perf_counter() - start) * 1000
        show(f"{Path(command[0]).name} '{word}', {size} notes: median "
             f"{statistics.median(times):.0f} ms, {found} files (unranked); memctl search "
             f"--all-projects: {ours:.0f} ms, ranked top 20", " ".join(command))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--out", type=Path, default=HERE / "out")
    parser.add_argument("--figures", default="reindex,freshness,e2e,ranked,grep,miss",
                        help="which blocks to run (comma-separated)")
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    figures = set(args.figures.split(","))
    print(f"# bench_search on {os.cpu_count()} cores, python {sys.version.split()[0]}, "
          f"{time.strftime('%Y-%m-%d %H:%M')}")
    for size in sizes:
        print(f"\n## {size} notes", flush=True)
        root = corpus(args.out, size)
        warm_up(root)
        if "reindex" in figures:
            cold_reindex(root, size)
        if "freshness" in figures:
            freshness(root, size)
        if "e2e" in figures:
            end_to_end(root, size)
        if size >= 10_000 and "ranked" in figures:
            ranked(root, size)
        if size >= 10_000 and "grep" in figures:
            grep_side_by_side(root, size)
        if "miss" in figures:
            miss_vs_hit(root, size)


if __name__ == "__main__":
    main()
