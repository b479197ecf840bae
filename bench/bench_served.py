"""`memctl search` with a live `memctl watch`: an older memctl beside this one, and `rg -l`,
alternated in one run (docs/watch.md, "Searches answered by the watcher").

    git archive HEAD memctl | tar -x -C /tmp/before      # the memctl to compare with
    .venv/bin/python bench/bench_served.py --before /tmp/before [--after DIR] [--size 10000]
                                           [--rounds 15] [--out bench/out]

The store is bench/bench_scale.py's (made once per size, measured on a fresh copy). One
`memctl watch` of the newer memctl runs on it; each round runs, for each of bench_search's
words, `memctl --store STORE search WORD --all-projects --limit 20 --json` with the older
memctl, with the newer one, and `rg -l -F -i WORD STORE`, in an order that rotates. Both
memctls run through the same console script (`.venv/bin/memctl`); PYTHONPATH chooses the
code (`--after`, default: this working tree). The two must print the same bytes (checked
once per word), and the newer one's searches must be answered by the watcher's search server
(checked on five more searches: else the figures say so). CPU is the asking process's only.
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", required=True, help="a folder holding the older memctl/")
    parser.add_argument("--after", help="a folder holding the newer memctl/ (default: this tree)")
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--out", type=Path, default=HERE / "out")
    options = parser.parse_args()
    store = bench_scale.work_copy(bench_scale.prepared_store(options.out, options.size, 42),
                                  options.out, options.size)
    envs = {"before": environment(store, str(Path(options.before).resolve())),
            "after": environment(store, options.after and str(Path(options.after).resolve())),
            "rg": environment(store, None)}
    watcher = subprocess.Popen([MEMCTL, "watch", "--quiet"], env=envs["after"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not (store / ".memctl" / "search.sock").exists():
            if time.monotonic() > deadline or watcher.poll() is not None:
                raise SystemExit("the watcher's search server never listened")
            time.sleep(0.1)
        time.sleep(0.5)
        for word in bench_search.GREP_WORDS:  # once each, untimed: the same bytes, warm caches
            shown = {label: subprocess.run(command(label, word, store), env=envs[label],
                                           capture_output=True) for label in ("before", "after")}
            if (shown["before"].stdout, shown["before"].stderr) != \
                    (shown["after"].stdout, shown["after"].stderr):
                raise SystemExit(f"the two memctls print different results for {word!r}")
            subprocess.run(command("rg", word, store), env=envs["rg"], capture_output=True)
        labels = ["after", "before", "rg"]
        walls: dict[str, list[float]] = {label: [] for label in labels}
        cpus: dict[str, list[float]] = {label: [] for label in labels}
        for number in range(options.rounds):
            for word in bench_search.GREP_WORDS:
                for label in labels[number % 3:] + labels[:number % 3]:
                    before = resource.getrusage(resource.RUSAGE_CHILDREN)
                    start = time.perf_counter()
                    subprocess.run(command(label, word, store), env=envs[label],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                    walls[label].append((time.perf_counter() - start) * 1000)
                    after = resource.getrusage(resource.RUSAGE_CHILDREN)
                    cpus[label].append((after.ru_utime - before.ru_utime + after.ru_stime
                                        - before.ru_stime) * 1000)
        served = subprocess.run([sys.executable, "-P", "-c", _BY_SERVER], env=envs["after"],
                                capture_output=True, text=True, cwd="/").stdout
    finally:
        watcher.terminate()
        watcher.wait(10)
        shutil.rmtree(store, ignore_errors=True)
    grep = statistics.median(walls["rg"])
    print(f"{options.size:,} notes, {options.rounds} rounds of {len(bench_search.GREP_WORDS)} "
          f"words, alternated, a live `memctl watch` (the newer memctl's); "
          f"{bench_search.load()}")
    for label in labels:
        quarters = statistics.quantiles(walls[label], n=4)
        print(f"  {label:6s} median {statistics.median(walls[label]):6.1f} ms (quartiles "
              f"{quarters[0]:.1f}–{quarters[2]:.1f}), CPU {statistics.median(cpus[label]):5.1f} "
              f"ms, {statistics.median(walls[label]) / grep:.2f}× rg -l")
    print(f"  the newer memctl's searches answered by the watcher's search server: {served}/5")
    print(f"  $ {' '.join(command('after', '<word>', store))}   "
          f"(words: {', '.join(bench_search.GREP_WORDS)})")
    print(f"  $ {' '.join(command('rg', '<word>', store))}")


if __name__ == "__main__":
    main()
