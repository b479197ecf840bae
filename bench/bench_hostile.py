"""Hostile-but-valid inputs, end to end: the time of each `memctl` command a user runs.

Three stores, each made fresh in a temp dir with `memctl init` and ten ordinary background
notes (dropped in as files):

- **ordinary**: `memctl add` of an ordinary one-paragraph note;
- **1 MB note**: `memctl add` of a ~900 KB pasted log (the limit is 1 MB), with last
  night's log of the same size already in the store (so the write-time duplicate check and
  the health report's pairs compare two long, similar notes); searched for a word it holds
  once (`pipeline`) and a word on each of its lines (`compiled`);
- **hostile front matter x20**: twenty notes dropped in as files whose front matter holds
  `title: a` + 8,100 spaces + `# c` (valid YAML: a title and a comment), then `memctl add`
  of an ordinary note (its index refresh reads the twenty files).

Then, in each store: `search`, `recall`, `health --json` (first run: no pair cache yet) and
`reindex`. Every command runs once as a subprocess, as a user runs it; the content is fixed
(no randomness) and the clock is pinned (MEMCTL_NOW=2026-11-30T12:00:00Z).

    .venv/bin/python bench/bench_hostile.py
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MEMCTL = str(Path(sys.executable).parent / "memctl")
NOW = "2026-11-30T12:00:00Z"
PROJECT = "demo"

ORDINARY = ("The staging deploy uses blue-green switching behind the nginx load balancer; "
            "roll back by pointing the upstream at the previous colour.")


def pasted_log(size: int = 900_000, night: int = 29) -> str:
    """A log an agent pasted into a note: fixed lines, numbers counting up."""
    lines = [f"Build log of the nightly pipeline of 2026-11-{night} (pasted for reference):",
             ""]
    total = sum(len(line) + 1 for line in lines)
    number = 0
    while total < size:
        number += 1
        line = (f"2026-11-{night} 03:{number // 60 % 60:02d}:{number % 60:02d} INFO worker-{number % 7} "
                f"compiled module_{number % 997}.py in {number % 250} ms "
                f"(cache {'hit' if number % 3 else 'miss'}, request {number})")
        lines.append(line)
        total += len(line) + 1
    return "\n".join(lines) + "\n"


def hostile_note(number: int) -> str:
    # Front matter under 8 KB, so that the index's fast path (memctl.index.docs) reads it.
    return (f"---\nid: hostile-{number:02d}\ntype: fact\ntitle: a{' ' * 8100}# c\n---\n"
            f"Hostile front matter note {number}: the comment after the title is padded.\n")


def background_note(number: int) -> str:
    return (f"---\nid: background-{number:02d}\ntype: fact\n"
            f"created: 2026-11-01T10:00:00Z\nupdated: 2026-11-01T10:00:00Z\n---\n"
            f"Background fact {number}: service {number} listens on port {8000 + number} "
            f"and logs to /var/log/service{number}.log.\n")


def run(env: dict[str, str], *args: str, stdin: str | None = None) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run([MEMCTL, *args], input=stdin, capture_output=True, text=True,
                          env=env, timeout=600)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"memctl {' '.join(args)} failed ({done.returncode}): "
                         f"{done.stderr[-500:]}{done.stdout[-500:]}")
    return elapsed, done.stdout


def scenario(name: str, base: Path, add_text: str, files: dict[str, str],
             words: list[str]) -> None:
    store = base / name.split(" (")[0].replace(" ", "-")
    env = dict(os.environ, MEMCTL_STORE=str(store), MEMCTL_PROJECT=PROJECT, MEMCTL_NOW=NOW,
               NO_COLOR="1", XDG_DATA_HOME=str(base / "xdg"))
    run(env, "init")
    notes = store / PROJECT / "notes"  # the store's layout: <project>/notes/<name>.md
    notes.mkdir(parents=True, exist_ok=True)
    for number in range(10):
        (notes / f"background-{number:02d}.md").write_text(background_note(number),
                                                          encoding="utf-8")
    for rel, text in files.items():
        (notes / rel).write_text(text, encoding="utf-8")
    steps: list[tuple[tuple[str, ...], str | None, str]] = [
        (("add", "-"), add_text, f"memctl add -   (stdin: {len(add_text):,} characters)")]
    steps += [(("search", word), None, f"memctl search {word}") for word in words]
    steps += [(("recall", word), None, f"memctl recall {word}") for word in words]
    steps += [
        (("health", "--json"), None, "memctl health --json   (first run)"),
        (("reindex",), None, "memctl reindex"),
    ]
    print(f"\n## {name}")
    for args, stdin, shown in steps:
        elapsed, _ = run(env, *args, stdin=stdin)
        print(f"  {elapsed:7.2f} s   {shown}")


def main() -> None:
    print(f"memctl: {MEMCTL}\nMEMCTL_NOW={NOW}  MEMCTL_PROJECT={PROJECT}  "
          f"python {sys.version.split()[0]}")
    with tempfile.TemporaryDirectory(prefix="memctl-bench-hostile-") as tmp:
        base = Path(tmp)
        scenario("ordinary note", base, ORDINARY, {}, ["nginx"])
        # Last night's log is in the store already: the new one is compared with it.
        previous = ("---\nid: previous-log\ntype: fact\ncreated: 2026-11-28T10:00:00Z\n"
                    "updated: 2026-11-28T10:00:00Z\n---\n" + pasted_log(night=28))
        scenario("1 MB note (a 900 KB log; last night's log already stored)", base,
                 pasted_log(), {"previous-log.md": previous}, ["pipeline", "compiled"])
        hostile = {f"hostile-{n:02d}.md": hostile_note(n) for n in range(20)}
        scenario("hostile front matter x20 (`title: a` + 8,100 spaces + `# c`)", base,
                 ORDINARY, hostile, ["padded"])
    print("\n(each command run once, as a subprocess; "
          f"reproduce: {shlex.quote(sys.executable)} bench/bench_hostile.py)")


if __name__ == "__main__":
    main()
