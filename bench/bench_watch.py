"""Benchmarks of `memctl watch` (issue 4), on a generated store (bench/gen_corpus.py):

1. idle CPU of a watcher on the store over --idle seconds (target ≤ 1 %);
2. save → visible in search, median and p95 over --saves saves of each kind: in place,
   temp-file-and-rename, vim's rename-to-backup dance (target p95 ≤ 300 ms). "Visible" is
   polled every 2 ms with the FTS query `memctl search` runs, on the index it reads (so the
   figure leaves out the CLI's own start-up, the same with a watcher or without), then
   confirmed once with `memctl.index.search.search`; the time the watcher printed its batch line is
   given too;
3. `git checkout` of a branch that changes --checkout notes, until the index is consistent
   (target ≤ 2 s); consistency is then confirmed by a separate full refresh finding nothing.

    .venv/bin/python bench/bench_watch.py [--notes 10000] [--saves 50] [--checkout 1000]
                                          [--idle 60] [--out bench/out/watch]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
MEMCTL = str(Path(sys.executable).parent / "memctl")


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


class Watch:
    """`memctl watch --json`, with the arrival time of every line."""

    def __init__(self, store: Path) -> None:
        self.proc = subprocess.Popen([MEMCTL, "--store", str(store), "watch", "--json"],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.lines: list[tuple[float, dict]] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:  # type: ignore[union-attr]
            self.lines.append((time.perf_counter(), json.loads(line)))

    def wait(self, predicate, timeout: float = 600.0, since: int = 0) -> float:
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            for stamp, line in self.lines[since:]:
                if predicate(line):
                    return stamp
            if self.proc.poll() is not None:
                raise SystemExit("the watcher died")
            time.sleep(0.002)
        raise SystemExit("timed out")

    def first_batch_after(self, mark: int, timeout: float = 10.0) -> float:
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            for stamp, line in self.lines[mark:]:
                if line.get("event") == "batch":
                    return stamp
            time.sleep(0.002)
        raise SystemExit("no batch line")

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(10)


def make_store(out: Path, notes: int, changed: int) -> tuple[Path, str, list[Path]]:
    from gen_corpus import generate

    store = out / "store"
    if store.exists():
        shutil.rmtree(store)
    generate(store, notes)
    git(store, "init", "-q")
    git(store, "config", "user.email", "bench@example.invalid")
    git(store, "config", "user.name", "bench")
    git(store, "add", "-A")
    git(store, "commit", "-qm", "corpus")
    main = git(store, "rev-parse", "--abbrev-ref", "HEAD")
    files = sorted(p for p in store.glob("*/notes/*/*.md"))
    git(store, "checkout", "-qb", "bench-changed")
    for number, path in enumerate(files[:changed]):
        path.write_text(path.read_text() + f"\nchanged on a branch chkbench{number}x\n")
    git(store, "commit", "-qam", f"{changed} notes changed")
    git(store, "checkout", "-q", main)
    return store, main, files


def save(path: Path, text: str, kind: str) -> None:
    if kind == "in place":
        with open(path, "w") as handle:
            handle.write(text)
    elif kind == "rename":
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(text)
        os.replace(tmp, path)
    else:  # vim, backupcopy=no
        backup = path.with_name(path.name + "~")
        os.rename(path, backup)
        path.write_text(text)
        os.unlink(backup)


def note_id(text: str) -> str:
    for line in text.splitlines()[1:12]:
        if line.startswith("id: "):
            return line[4:].strip()
    raise ValueError("no id")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=10_000)
    parser.add_argument("--saves", type=int, default=50)
    parser.add_argument("--checkout", type=int, default=1000)
    parser.add_argument("--idle", type=float, default=60.0)
    parser.add_argument("--out", type=Path, default=HERE / "out" / "watch")
    args = parser.parse_args()

    from memctl.core.query import parse
    from memctl.index.db import open_index
    from memctl.index.search import search
    from memctl.store import Store

    started = time.perf_counter()
    store, main_branch, files = make_store(args.out, args.notes, args.checkout)
    print(f"corpus: {args.notes} notes in {time.perf_counter() - started:.1f} s", flush=True)
    results: dict[str, object] = {"notes": args.notes}

    t0 = time.perf_counter()
    watch = Watch(store)
    ready = watch.wait(lambda line: line.get("event") == "ready")
    results["ready_s (first full index)"] = round(ready - t0, 2)
    print(f"ready after {ready - t0:.1f} s", flush=True)
    try:
        time.sleep(2.0)  # let the first heartbeat and any start-up work pass
        if args.idle > 0:
            cpu0, wall0 = watch.cpu_seconds(), time.perf_counter()
            time.sleep(args.idle)
            cpu = (watch.cpu_seconds() - cpu0) / (time.perf_counter() - wall0) * 100
            results["idle_cpu_percent"] = round(cpu, 3)
            print(f"idle CPU over {args.idle:.0f} s: {cpu:.3f} %", flush=True)

        handle = Store(store)
        reader = open_index(handle)
        candidates = [p for p in files[args.checkout:] if "/archive/" not in p.as_posix()
                      and "status: active" in p.read_text()]
        latency: dict[str, dict[str, float]] = {}
        for k, kind in enumerate(("in place", "rename", "vim")):
            seen, applied = [], []
            for i in range(args.saves):
                path = candidates[k * args.saves + i]
                text = path.read_text()
                token = f"wlat{k}n{i}q"
                wanted = note_id(text)
                mark = len(watch.lines)
                begin = time.perf_counter()
                save(path, text.rstrip("\n") + f"\nsaved again {token}\n", kind)
                give_up = begin + 30
                match = parse(token).match
                while time.perf_counter() < give_up:
                    # The FTS query `memctl search` runs, on the index it reads. (Polling
                    # search() itself would time its fuzzy fallback, run on every miss.)
                    if reader.conn.execute(
                            "SELECT 1 FROM fts JOIN docs d ON d.rowid = fts.rowid "
                            "WHERE fts MATCH ? AND d.id = ?", (match, wanted)).fetchone():
                        break
                    time.sleep(0.002)
                else:
                    raise SystemExit(f"{path} never became visible")
                seen.append((time.perf_counter() - begin) * 1000)
                hits = search(handle, token, all_projects=True, include_stale=True, limit=5)
                assert any(hit.id == wanted for hit in hits), f"search misses {path}"
                stamp = watch.first_batch_after(mark)
                applied.append((stamp - begin) * 1000)
                time.sleep(0.1)
            latency[kind] = {
                "visible_median_ms": round(statistics.median(seen), 1),
                "visible_p95_ms": round(percentile(seen, 95), 1),
                "batch_line_median_ms": round(statistics.median(applied), 1),
                "batch_line_p95_ms": round(percentile(applied, 95), 1),
            }
            print(f"{kind}: {latency[kind]}", flush=True)
        results["save_to_search"] = latency
        time.sleep(1.0)

        runs = []
        for target in ("bench-changed", main_branch, "bench-changed", main_branch):
            mark = len(watch.lines)
            begin = time.perf_counter()
            git(store, "checkout", "-q", target)
            checkout_s = time.perf_counter() - begin

            def done(line: dict, m: int = mark) -> bool:
                if line.get("event") != "batch":
                    return False
                batches = [x for _, x in watch.lines[m:] if x.get("event") == "batch"]
                return sum(b["added"] + b["updated"] + b["removed"] for b in batches) \
                    >= args.checkout
            stamp = watch.wait(done, timeout=120, since=mark)
            batches = [x for _, x in watch.lines[mark:] if x.get("event") == "batch"]
            with open_index(handle) as index:
                drift = index.refresh()
            runs.append({"to": target, "git_checkout_s": round(checkout_s, 3),
                         "consistent_after_s": round(stamp - begin, 3),
                         "batches": len(batches),
                         "refresh_ms": round(sum(b["elapsed_ms"] for b in batches)),
                         "drift_found_after": len(drift.added) + len(drift.updated)
                         + len(drift.removed)})
            print(f"checkout: {runs[-1]}", flush=True)
            time.sleep(1.0)
        results["checkout"] = runs
    finally:
        watch.stop()
    out_file = args.out / "results.json"
    out_file.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
