"""`memctl search` of two builds beside `rg -l`, alternated, each on its own copy of a store.

    git archive OLD memctl | tar -x -C BEFORE      # the build before, as a folder
    git archive HEAD memctl | tar -x -C AFTER      # and this one
    .venv/bin/python hatch_build.py AFTER          # its compiled walk, if it has one (else
                                                   # its walk runs in Python)
    .venv/bin/python bench/bench_builds.py --before BEFORE --after AFTER \
        --store bench/out/scale/store-10000-seed42 [--rounds 30] [--runs 3]

Each build runs as the installed `memctl` with PYTHONPATH set to its folder (both byte-compiled
first), on a `cp -a` copy of STORE of its own (two index schemas cannot share one index), its
index made first. For each round and each of bench_search.GREP_WORDS: the build before,
`rg -l -F -i WORD`, the build after (`memctl --store COPY search WORD --all-projects --limit
20 --json`, MEMCTL_PROJECT=blog-backend). Prints, per run, the medians of wall time and CPU
(the process and the helpers it waited for) and each build's ratio to `rg -l` of the same run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_search  # noqa: E402

MEMCTL = str(Path(sys.executable).with_name("memctl"))


def timed(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall ms, CPU ms) of one command."""
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               env=env)
    _, _, usage = os.wait4(process.pid, 0)
    return (time.perf_counter() - started) * 1000, (usage.ru_utime + usage.ru_stime) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, required=True, help="a folder holding memctl/")
    parser.add_argument("--after", type=Path, required=True, help="a folder holding memctl/")
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    builds = {"before": args.before.resolve(), "after": args.after.resolve()}
    with tempfile.TemporaryDirectory() as scratch:
        envs, copies = {}, {}
        for label, build in builds.items():
            subprocess.run([sys.executable, "-m", "compileall", "-q", str(build)], check=True)
            copies[label] = Path(scratch) / label
            subprocess.run(["cp", "-a", str(args.store), str(copies[label])], check=True)
            envs[label] = dict(os.environ, PYTHONPATH=str(build), MEMCTL_PROJECT="blog-backend")
            subprocess.run([MEMCTL, "--store", str(copies[label]), "reindex"], env=envs[label],
                           check=True, capture_output=True)
        time.sleep(2.1)  # past the index's racy window: the stamps of the copy are recorded
        for label in builds:  # (one search records them, then every search finds them)
            for _ in range(2):
                subprocess.run([MEMCTL, "--store", str(copies[label]), "search", "warm"],
                               env=envs[label], capture_output=True)
        for run in range(1, args.runs + 1):
            walls: dict[str, list[float]] = {"before": [], "rg": [], "after": []}
            cpus: dict[str, list[float]] = {"before": [], "rg": [], "after": []}
            for _ in range(args.rounds):
                for word in bench_search.GREP_WORDS:
                    for label in ("before", "rg", "after"):
                        if label == "rg":
                            command = bench_search.grep_command(word, copies["after"])
                            env = dict(os.environ)
                        else:
                            command = [MEMCTL, "--store", str(copies[label]), "search", word,
                                       "--all-projects", "--limit", "20", "--json"]
                            env = envs[label]
                        wall, cpu = timed(command, env)
                        walls[label].append(wall)
                        cpus[label].append(cpu)
            grep = statistics.median(walls["rg"])
            shown = ", ".join(
                f"{label} {statistics.median(walls[label]):.1f} ms (CPU "
                f"{statistics.median(cpus[label]):.0f})"
                + ("" if label == "rg" else f" {statistics.median(walls[label]) / grep:.2f}×")
                for label in ("before", "rg", "after"))
            print(f"run {run}, {args.rounds * len(bench_search.GREP_WORDS)} searches each: "
                  f"{shown}  [load {os.getloadavg()[0]:.1f}]", flush=True)


if __name__ == "__main__":
    main()
