"""Start-up of everyday commands, two memctl builds side by side (runs alternated, so a
machine that drifts affects both alike): `memctl search`, `--version`, `add`, `list`.

    .venv/bin/python bench/bench_startup.py BEFORE_MEMCTL AFTER_MEMCTL [--runs 25]

Each argument is a `memctl` executable (for an older checkout, a two-line script running
`PYTHONPATH=<its tree> python -m memctl "$@"`). Each gets its own 20-note store; the figures
are medians in milliseconds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time

COMMANDS = {"search": ["search", "postgres", "--json"], "version": ["--version"],
            "list": ["list", "--json"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--runs", type=int, default=25)
    args = parser.parse_args()
    builds = {"before": args.before, "after": args.after}
    envs = {}
    for name, memctl in builds.items():
        store = tempfile.mkdtemp() + "/store"
        env = dict(os.environ, MEMCTL_STORE=store, MEMCTL_PROJECT="demo",
                   MEMCTL_NOW="2026-11-30T12:00:00Z")
        subprocess.run([memctl, "init", store], env=env, capture_output=True, check=True)
        for number in range(20):
            subprocess.run([memctl, "add", f"note {number} about postgres pool size {number}",
                            "--force"], env=env, capture_output=True, check=True)
        subprocess.run([memctl, "search", "postgres"], env=env, capture_output=True, check=True)
        envs[name] = env
    times: dict[str, dict[str, list[float]]] = {name: {} for name in builds}

    def run(name: str, label: str, command: list[str]) -> None:
        start = time.perf_counter()
        subprocess.run([builds[name], *command], env=envs[name], capture_output=True, check=True)
        times[name].setdefault(label, []).append((time.perf_counter() - start) * 1000)

    for number in range(args.runs):
        for name in builds:
            for label, command in COMMANDS.items():
                run(name, label, command)
            if number < 15:
                run(name, "add", ["add", f"another fact number {number} {name}", "--force"])
    print("| command | " + " | ".join(builds) + " |")
    print("|---|" + "---|" * len(builds))
    for label in [*COMMANDS, "add"]:
        cells = [f"{statistics.median(times[name][label]):.0f} ms" for name in builds]
        print(f"| {label} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
