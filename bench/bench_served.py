"""`memctl search` with a live `memctl watch`: two memctls (or one with and without a setting
of its search server), each answered by its own watcher, and `rg -l`, alternated in one run
(docs/watch.md, "Searches answered by the watcher").

    git archive HEAD memctl | tar -x -C /tmp/before      # the memctl to compare with
    .venv/bin/python bench/bench_served.py --before /tmp/before [--after DIR] [--size 10000]
                                           [--rounds 15] [--out bench/out]
    .venv/bin/python bench/bench_served.py --before-env MEMCTL_ALWAYS_WALK=1    # one setting

The store is bench/bench_scale.py's (made once per size); each side measures on a fresh copy
of its own, with a `memctl watch` of its own memctl and environment, so each side's searches
are answered by its own watcher's search server. Each round runs, for each of bench_search's
words, `memctl --store STORE search WORD --all-projects --limit 20 --json` with each side,
and `rg -l -F -i WORD STORE`, in an order that rotates. Both memctls run through the same
console script (`.venv/bin/memctl`); PYTHONPATH chooses the code (`--before`, `--after`,
default: this working tree), `--before-env KEY=VALUE` (repeatable) adds to the environment of
the older side's watcher and searches. The two must print the same bytes (checked once per
word), and each side's searches must be answered by its watcher's search server (checked on
five more searches each: else the figures say so). CPU is the asking process's only.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_scale  # noqa: E402
import bench_search  # noqa: E402

MEMCTL = bench_search.MEMCTL
_BY_SERVER = """
import os
from memctl.cli import served
out, null = os.dup(1), os.open(os.devnull, os.O_WRONLY)
os.dup2(null, 1)
count = sum(served.answer(["search", "timeout", "--all-projects", "--json"]) is not None
            for _ in range(5))
os.write(out, str(count).encode())
"""


def environment(store: Path, code: str | None) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items()
           if not key.startswith("MEMCTL_") and key != "PYTHONPATH"}
    env.update(MEMCTL_NOW=bench_scale.NOW, MEMCTL_PROJECT=bench_scale.PROJECT, NO_COLOR="1",
               MEMCTL_STORE=str(store))
    if code:
        env["PYTHONPATH"] = code
    return env


def command(label: str, word: str, store: Path) -> list[str]:
    if label == "rg":
        return bench_search.grep_command(word, store)
    return [MEMCTL, "--store", str(store), "search", word, "--all-projects", "--limit", "20",
            "--json"]


def watch(store: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """A `memctl watch` of `store`, once its search server listens."""
    watcher = subprocess.Popen([MEMCTL, "watch", "--quiet"], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not (store / ".memctl" / "search.sock").exists():
        if time.monotonic() > deadline or watcher.poll() is not None:
            watcher.kill()
            raise SystemExit("the watcher's search server never listened")
        time.sleep(0.1)
    time.sleep(0.5)
    return watcher


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", help="a folder holding the older memctl/ (default: this "
                        "tree, with --before-env)")
    parser.add_argument("--before-env", action="append", default=[], metavar="KEY=VALUE",
                        help="set for the older side (its watcher and searches)")
    parser.add_argument("--after", help="a folder holding the newer memctl/ (default: this tree)")
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--out", type=Path, default=HERE / "out")
    options = parser.parse_args()
    if options.before is None and not options.before_env:
        parser.error("give --before DIR, --before-env KEY=VALUE, or both")
    prepared = bench_scale.prepared_store(options.out, options.size, 42)
    stores = {"after": bench_scale.work_copy(prepared, options.out, options.size)}
    stores["before"] = stores["after"].with_name(stores["after"].name + "-before")
    if stores["before"].exists():
        shutil.rmtree(stores["before"])
    subprocess.run(["cp", "-a", str(stores["after"]), str(stores["before"])], check=True)
    bench_scale.git(stores["before"], "update-index", "-q", "--refresh")
    envs = {"before": environment(stores["before"], options.before
                                  and str(Path(options.before).resolve())),
            "after": environment(stores["after"], options.after
                                 and str(Path(options.after).resolve())),
            "rg": environment(stores["after"], None)}
    envs["before"].update(setting.split("=", 1) for setting in options.before_env)
    stores["rg"] = stores["after"]
    watchers = []
    try:
        watchers = [watch(stores[label], envs[label]) for label in ("before", "after")]
        for word in bench_search.GREP_WORDS:  # once each, untimed: the same bytes, warm caches
            shown = {label: subprocess.run(command(label, word, stores[label]), env=envs[label],
                                           capture_output=True) for label in ("before", "after")}
            if (shown["before"].stdout.replace(bytes(stores["before"]), bytes(stores["after"])),
                    shown["before"].stderr) != (shown["after"].stdout, shown["after"].stderr):
                raise SystemExit(f"the two memctls print different results for {word!r}")
            subprocess.run(command("rg", word, stores["rg"]), env=envs["rg"], capture_output=True)
        labels = ["after", "before", "rg"]
        walls: dict[str, list[float]] = {label: [] for label in labels}
        cpus: dict[str, list[float]] = {label: [] for label in labels}
        for number in range(options.rounds):
            for word in bench_search.GREP_WORDS:
                for label in labels[number % 3:] + labels[:number % 3]:
                    before = resource.getrusage(resource.RUSAGE_CHILDREN)
                    start = time.perf_counter()
                    subprocess.run(command(label, word, stores[label]), env=envs[label],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                    walls[label].append((time.perf_counter() - start) * 1000)
                    after = resource.getrusage(resource.RUSAGE_CHILDREN)
                    cpus[label].append((after.ru_utime - before.ru_utime + after.ru_stime
                                        - before.ru_stime) * 1000)
        served = {label: subprocess.run([sys.executable, "-P", "-c", _BY_SERVER],
                                        env=envs[label], capture_output=True, text=True,
                                        cwd="/").stdout for label in ("before", "after")}
    finally:
        for watcher in watchers:
            watcher.terminate()
            watcher.wait(10)
        for label in ("before", "after"):
            shutil.rmtree(stores[label], ignore_errors=True)
    grep = statistics.median(walls["rg"])
    print(f"{options.size:,} notes, {options.rounds} rounds of {len(bench_search.GREP_WORDS)} "
          f"words, alternated, each memctl answered by a live `memctl watch` of its own; "
          f"{bench_search.load()}")
    if options.before_env:
        print(f"  before: {' '.join(options.before_env)}")
    for label in labels:
        quarters = statistics.quantiles(walls[label], n=4)
        print(f"  {label:6s} median {statistics.median(walls[label]):6.1f} ms (quartiles "
              f"{quarters[0]:.1f}–{quarters[2]:.1f}), CPU {statistics.median(cpus[label]):5.1f} "
              f"ms, {statistics.median(walls[label]) / grep:.2f}× rg -l")
    for label in ("before", "after"):
        print(f"  the {label} memctl's searches answered by its watcher's search server: "
              f"{served[label]}/5")
    print(f"  $ {' '.join(command('after', '<word>', stores['after']))}   "
          f"(words: {', '.join(bench_search.GREP_WORDS)})")
    print(f"  $ {' '.join(command('rg', '<word>', stores['rg']))}")


if __name__ == "__main__":
    main()
