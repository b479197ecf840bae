"""The write path an agent pays for on every call: `memctl add` (git commit included),
`memctl show`, `memctl scratch note`, `memctl project add`, on a store of --notes notes
(bench/gen_corpus.py, fixed seed), each command run as a subprocess --runs times.

    .venv/bin/python bench/bench_write.py [--notes 10000] [--runs 15] [--seed 42] [--alike]
                                          [--memctl EXE ...] [--out bench/out/write]

Each `--memctl` is a `memctl` executable (default: the one beside this Python); for an older
checkout, a two-line script running `PYTHONPATH=<its tree> python -P -m memctl "$@"`. Every build
gets its own copy of the store (its history made by `memctl init`, its index built once), and
the runs of the builds are alternated, so a machine that drifts affects all alike. The texts
added are made of random words (fixed seed): no run merges into an earlier note. With
`--alike`, each text shares all but two of its words with the texts added before it, so from
the second run on, `add`'s checks score near notes (and report them as similar) as an agent's
related facts make them do. Figures are median and p95 in milliseconds; targets (10k notes):
`add` median ≤ 200 ms, `show` ≤ 120 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_MEMCTL = str(Path(sys.executable).parent / "memctl")
TARGETS = {"add": 200.0, "show": 120.0}
# The words every `--alike` text shares (with "bench note:").
ALIKE = "the deploy pipeline retries flaky integration tests twice before failing"


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def corpus(out: Path, notes: int, seed: int) -> Path:
    """bench/gen_corpus.py's store of `notes` notes (made once, then reused)."""
    path = out.parent / f"corpus-{notes}" if seed == 42 else out.parent / f"corpus-{notes}-{seed}"
    if not (path / "memctl.toml").is_file():
        subprocess.run([sys.executable, str(HERE / "gen_corpus.py"), str(path), str(notes),
                        "--seed", str(seed)], check=True)
    return path


def prepare(memctl: str, source: Path, target: Path) -> dict[str, str]:
    """A copy of the corpus as a store of its own: git history, index built."""
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target, ignore=shutil.ignore_patterns(".memctl", ".git"))
    env = dict(os.environ, MEMCTL_STORE=str(target), MEMCTL_PROJECT="blog-backend")
    env.pop("MEMCTL_NOW", None)
    subprocess.run([memctl, "init", str(target)], env=env, check=True, capture_output=True)
    subprocess.run([memctl, "reindex"], env=env, check=True, capture_output=True)
    return env


def words(rng: random.Random, count: int) -> str:
    letters = "abcdefghijklmnopqrstuvwxyz"
    return " ".join("".join(rng.choice(letters) for _ in range(rng.randint(5, 9)))
                    for _ in range(count))


def cpu_seconds() -> float:
    """CPU time of the finished children (their git children included)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(memctl: str, env: dict[str, str], args: list[str]) -> tuple[float, float, str]:
    """(wall ms, CPU ms, stdout) of one run."""
    cpu = cpu_seconds()
    start = time.perf_counter()
    done = subprocess.run([memctl, *args], env=env, capture_output=True, text=True)
    elapsed = (time.perf_counter() - start) * 1000
    if done.returncode != 0:
        raise SystemExit(f"{memctl} {' '.join(args)} failed: {done.stderr.strip()}")
    return elapsed, (cpu_seconds() - cpu) * 1000, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--memctl", action="append", default=None)
    parser.add_argument("--out", default=str(HERE / "out" / "write"))
    parser.add_argument("--alike", action="store_true",
                        help="texts that share all but two of their words: the checks score them")
    args = parser.parse_args()
    builds = args.memctl or [DEFAULT_MEMCTL]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    source = corpus(out, args.notes, args.seed)
    envs = {}
    for number, memctl in enumerate(builds):
        started = time.perf_counter()
        envs[memctl] = prepare(memctl, source, out / f"store-{number}")
        print(f"build {number} ({memctl}): store ready in {time.perf_counter() - started:.1f} s",
              file=sys.stderr)
    rng = random.Random(args.seed)
    times: dict[str, dict[str, list[float]]] = {memctl: {} for memctl in builds}
    cpus: dict[str, dict[str, list[float]]] = {memctl: {} for memctl in builds}
    added: dict[str, list[str]] = {memctl: [] for memctl in builds}
    for run in range(args.runs):
        text = f"bench note {run}: {words(rng, 12)}" if not args.alike \
            else f"bench note: {ALIKE} {words(rng, 2)}"
        item = f"bench item {run}: {words(rng, 6)}"
        note_pick = rng.random()
        for memctl in builds:
            def measure(label: str, command: list[str], memctl: str = memctl) -> str:
                elapsed, cpu, stdout = timed(memctl, envs[memctl], command)
                times[memctl].setdefault(label, []).append(elapsed)
                cpus[memctl].setdefault(label, []).append(cpu)
                return stdout

            added[memctl].append(json.loads(measure("add", ["add", text, "--json"]))["id"])
            note_id = added[memctl][int(note_pick * len(added[memctl]))]
            measure("show", ["show", note_id, "--json"])
            measure("scratch note", ["scratch", "note", item, "--json"])
            measure("project add", ["project", "add", "progress", item, "--json"])
    for memctl in builds:
        log = subprocess.run(["git", "-C", envs[memctl]["MEMCTL_STORE"], "rev-list", "--count",
                              "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
        print(f"build {memctl}: {log} commits in the store's history", file=sys.stderr)
    print(f"{args.notes} notes, {args.runs} runs of each command as a subprocess: wall time"
          f" median / p95, and the median CPU time of the process and its git children, ms")
    print("| command | " + " | ".join(f"build {n}: wall / p95 (CPU)" for n in range(len(builds)))
          + " | target |")
    print("|---|" + "---|" * len(builds) + "---|")
    for label in times[builds[0]]:
        cells = [f"{statistics.median(times[m][label]):.0f} / {percentile(times[m][label], 95):.0f}"
                 f" ({statistics.median(cpus[m][label]):.0f})" for m in builds]
        target = f"≤ {TARGETS[label]:.0f}" if label in TARGETS else ""
        print(f"| {label} | " + " | ".join(cells) + f" | {target} |")


if __name__ == "__main__":
    main()
