"""A search of one project beside a search of every project, with no watcher, end to end.

A search of one project (the default) walks that project's folder and `global/` alone
(docs/search.md, "A search of one project walks its folders alone"); one of every project
walks the whole store. Both are timed for each build given (`--memctl`, alternated in one
run), beside `rg -l -F -i` over the same files: the two folders, and the whole store. The
store is bench/bench_scale.py's (gen_corpus, seed 42), copied before it is measured.

    .venv/bin/python bench/bench_scope.py --sizes 10000,100000
    .venv/bin/python bench/bench_scope.py --sizes 10000 --memctl OLD --memctl NEW

OLD and NEW are commands that run a memctl build (a wrapper script setting PYTHONPATH, say).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
from pathlib import Path

import bench_scale
import bench_search


def commands(store: Path, builds: list[str], word: str) -> dict[str, list[str]]:
    """Every command of one round for `word`, by label."""
    grep = bench_search.grep_command(word, store)
    chosen = {"rg -l, the project's folder and global/":
              [*grep[:-1], str(store / bench_scale.PROJECT), str(store / "global")],
              "rg -l, the whole store": grep}
    for build in builds:
        search = [build, "--store", str(store), "search", word, "--limit", "20", "--json"]
        chosen[f"{build}: search (one project)"] = search
        chosen[f"{build}: search --all-projects"] = [*search, "--all-projects"]
    return chosen


def measure(store: Path, builds: list[str], rounds: int) -> dict[str, list[float]]:
    env = bench_scale.env_for(store)  # MEMCTL_PROJECT: bench_scale.PROJECT
    times: dict[str, list[float]] = {}
    for word in bench_search.GREP_WORDS:  # one untimed run of each: the OS cache, counters
        for command in commands(store, builds, word).values():
            bench_scale.timed(command, env, ok=(0, 1))
    for number in range(rounds):
        for word in bench_search.GREP_WORDS:
            chosen = list(commands(store, builds, word).items())
            for label, command in chosen if number % 2 == 0 else reversed(chosen):
                wall, _ = bench_scale.timed(command, env, ok=(0, 1))
                times.setdefault(label, []).append(wall)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000")
    parser.add_argument("--memctl", action="append", help="a build to run (default: this one)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", type=Path, default=bench_scale.HERE / "out")
    args = parser.parse_args()
    builds = args.memctl or [bench_scale.MEMCTL]
    out = args.out.resolve()
    for size in (int(size) for size in args.sizes.split(",")):
        store = bench_scale.work_copy(bench_scale.prepared_store(out, size, 42), out, size)
        try:
            times = measure(store, builds, args.rounds if size <= 10_000 else 2)
        finally:
            shutil.rmtree(store, ignore_errors=True)
        runs = len(next(iter(times.values())))
        print(f"\n{size} notes, no watcher, medians of {runs} runs each, alternated "
              f"[{bench_scale.load()}]")
        for label, walls in times.items():
            print(f"  {statistics.median(walls):8.1f} ms  {label}")


if __name__ == "__main__":
    main()
