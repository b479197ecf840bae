"""Write, then search at once: does the search see the write? With a real `memctl watch`
running and without one, a note written by hand (a file dropped into the project) or by
`memctl add`, then `memctl search WORD` for a word only that note holds, --tries times each.

    .venv/bin/python bench/bench_freshness.py [--notes 10000] [--tries 100] [--seed 42]
                                              [--parallel 48] [--memctl EXE]
                                              [--pythonpath DIR] [--out bench/out/freshness]

Each write is searched for in two ways: `memctl search` as a subprocess (what an agent
runs), and a search call in a Python that imported memctl once (`memctl.services.retrieval`,
answering words on its stdin): without the CLI's start-up, the search comes right after the
write, where a reader that trusts the watcher without asking it loses the race.

A miss is a first search that does not find the note. The latency is from the moment the
write is on disk (the file closed, or `memctl add` returned) until a search returned the note
(the first one, or the next of a search repeated every 20 ms after a miss): the `memctl
search` subprocess included. Target: 0 misses in 100, with and without a watcher. `--memctl`
runs another build (for an older checkout, a two-line script running `PYTHONPATH=<its tree>
python -P -m memctl "$@"`), `--pythonpath` the tree the in-process searcher imports.

Then the same by many at once: `--parallel` threads (0: not run), each writing a note by hand
and running `memctl search` for its word, --tries times in all, with and without a watcher.
Every search then races the others' index updates, on 2 cores; a search that fails (the
index busy for longer than its wait) is counted apart from a miss.
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
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
MEMCTL = [str(Path(sys.executable).parent / "memctl")]
PROJECT = "blog-backend"


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def prepare(out: Path, notes: int, seed: int) -> tuple[Path, dict[str, str]]:
    source = out.parent / f"corpus-{notes}" if seed == 42 else out.parent / f"corpus-{notes}-{seed}"
    if not (source / "memctl.toml").is_file():
        subprocess.run([sys.executable, str(HERE / "gen_corpus.py"), str(source), str(notes),
                        "--seed", str(seed)], check=True)
    store = out / "store"
    if store.exists():
        shutil.rmtree(store)
    shutil.copytree(source, store, ignore=shutil.ignore_patterns(".memctl", ".git"))
    env = dict(os.environ, MEMCTL_STORE=str(store), MEMCTL_PROJECT=PROJECT)
    for name in ("MEMCTL_NOW", "MEMCTL_ALWAYS_WALK"):
        env.pop(name, None)
    subprocess.run([*MEMCTL, "init", str(store)], env=env, check=True, capture_output=True)
    subprocess.run([*MEMCTL, "reindex"], env=env, check=True, capture_output=True)
    return store, env


class Watcher:
    """`memctl watch --json` as a subprocess, ready when it says so."""

    def __init__(self, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen([*MEMCTL, "watch", "--json"], env=env, text=True,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.ready = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()
        if not self.ready.wait(600):
            raise SystemExit("the watcher never got ready")

    def _read(self) -> None:
        for line in self.proc.stdout:  # type: ignore[union-attr]
            if json.loads(line).get("event") == "ready":
                self.ready.set()

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


SEARCHER = """
import sys
from pathlib import Path
from memctl.services.retrieval import search
from memctl.store import Store
store, project = Store.open(Path(sys.argv[1])), sys.argv[2]
for line in sys.stdin:
    word = line.strip()
    hits = search(store, word, project=project).hits
    text = " ".join(str(getattr(hit, name, "")) for hit in hits for name in ("title", "snippet"))
    print("1" if word in text else "0", flush=True)
"""


class Searcher:
    """A Python that imported memctl once and searches for each word it is sent."""

    def __init__(self, store: Path, env: dict[str, str], pythonpath: str) -> None:
        self.proc = subprocess.Popen([sys.executable, "-P", "-c", SEARCHER, str(store), PROJECT],
                                     env=dict(env, PYTHONPATH=pythonpath), text=True,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def found(self, word: str) -> bool:
        self.proc.stdin.write(word + "\n")  # type: ignore[union-attr]
        self.proc.stdin.flush()  # type: ignore[union-attr]
        return self.proc.stdout.readline().strip() == "1"  # type: ignore[union-attr]

    def stop(self) -> None:
        self.proc.stdin.close()  # type: ignore[union-attr]
        self.proc.wait(10)


def found(env: dict[str, str], word: str) -> bool:
    done = subprocess.run([*MEMCTL, "search", word, "--json"], env=env, capture_output=True,
                          text=True)
    if done.returncode != 0:
        raise SystemExit(f"memctl search failed ({done.returncode}): {done.stderr.strip()}")
    # A word no note holds may still get close matches (fuzzy): only the note itself counts.
    return any(not hit.get("fuzzy") and word in json.dumps(hit, ensure_ascii=False)
               for hit in json.loads(done.stdout))


def found_or_failed(env: dict[str, str], word: str) -> str:
    """"found", "missed" or "failed" (the search exited with an error)."""
    done = subprocess.run([*MEMCTL, "search", word, "--json"], env=env, capture_output=True,
                          text=True)
    if done.returncode != 0:
        return "failed"
    hits = json.loads(done.stdout)
    return "found" if any(not hit.get("fuzzy") and word in json.dumps(hit, ensure_ascii=False)
                          for hit in hits) else "missed"


def run_parallel(store: Path, env: dict[str, str], tries: int, workers: int,
                 rng: random.Random) -> tuple[int, int]:
    """(misses, failed searches) of `tries` writes by hand, each searched for at once, by
    `workers` threads at a time."""
    words = [unique_word(rng) for _ in range(tries)]

    def one(number: int) -> str:
        write(store, env, "hand", words[number], 100_000 + number)
        return found_or_failed(env, words[number])

    with ThreadPoolExecutor(workers) as pool:
        outcomes = list(pool.map(one, range(tries)))
    return outcomes.count("missed"), outcomes.count("failed")


def unique_word(rng: random.Random) -> str:
    return "zq" + "".join(rng.choice("bcdfghjklmnpstvwxz") for _ in range(10))


def write(store: Path, env: dict[str, str], how: str, word: str, number: int) -> float:
    """Write a note holding `word`; the time the write was done."""
    text = f"Freshness probe {number}: the {word} setting lives in the gateway config."
    if how == "hand":
        path = store / PROJECT / "notes" / "fact" / f"fresh-probe-{number}-{word}.md"
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text + "\n")
        return time.perf_counter()
    # --force: the probes differ in one word, and the duplicate check would merge them.
    done = subprocess.run([*MEMCTL, "add", text, "--force"], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"memctl add failed ({done.returncode}): {done.stderr.strip()}")
    return time.perf_counter()


def run(store: Path, env: dict[str, str], how: str, tries: int, rng: random.Random,
        look: Callable[[str], bool]) -> tuple[int, list[float]]:
    misses, latencies = 0, []
    for number in range(tries):
        word = unique_word(rng)
        written = write(store, env, how, word, number)
        hit = look(word)
        if not hit:
            misses += 1
            deadline = time.perf_counter() + 10
            while not hit and time.perf_counter() < deadline:
                time.sleep(0.02)
                hit = look(word)
        latencies.append((time.perf_counter() - written) * 1000)
    return misses, latencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=10_000)
    parser.add_argument("--tries", type=int, default=100)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--memctl", default=MEMCTL[0])
    parser.add_argument("--parallel", type=int, default=48)
    parser.add_argument("--pythonpath", default=str(HERE.parent))
    parser.add_argument("--out", default=str(HERE / "out" / "freshness"))
    args = parser.parse_args()
    MEMCTL[0] = args.memctl
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    store, env = prepare(out, args.notes, args.seed)
    rng = random.Random(args.seed)
    rows = []
    parallel_rows = []
    searcher = Searcher(store, env, args.pythonpath)
    looks = {"memctl search": lambda word: found(env, word), "in-process": searcher.found}
    try:
        for watching in (True, False):
            watcher = Watcher(env) if watching else None
            try:
                for how in ("hand", "add"):
                    for label, look in looks.items():
                        misses, latencies = run(store, env, how, args.tries, rng, look)
                        rows.append((watching, how, label, misses, latencies))
                        print(f"watcher={watching} {how} {label}: {misses} misses",
                              file=sys.stderr)
                if args.parallel > 0:
                    misses, failed = run_parallel(store, env, args.tries, args.parallel, rng)
                    parallel_rows.append((watching, misses, failed))
                    print(f"watcher={watching} {args.parallel} at once: {misses} misses,"
                          f" {failed} failed", file=sys.stderr)
            finally:
                if watcher is not None:
                    watcher.stop()
    finally:
        searcher.stop()
    print(f"{args.notes} notes, {args.tries} tries each")
    print("| watcher | write | search | misses | write → found, median / p95 |")
    print("|---|---|---|---|---|")
    for watching, how, label, misses, latencies in rows:
        print(f"| {'running' if watching else 'none'} | {'by hand' if how == 'hand' else 'memctl add'}"
              f" | {label} | {misses} / {args.tries} | {statistics.median(latencies):.0f} /"
              f" {percentile(latencies, 95):.0f} ms |")
    if parallel_rows:
        print(f"\n{args.parallel} at once, each a write by hand then `memctl search`,"
              f" {args.tries} in all")
        print("| watcher | misses | failed searches |")
        print("|---|---|---|")
        for watching, misses, failed in parallel_rows:
            print(f"| {'running' if watching else 'none'} | {misses} / {args.tries} |"
                  f" {failed} / {args.tries} |")


if __name__ == "__main__":
    main()
