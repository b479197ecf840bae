"""What a store's git history costs `sync` and `export` as it grows.

    .venv/bin/python bench/bench_history.py [--commits 1000,10000] [--rounds 3]
                                            [--memctl EXE ...] [--out bench/out/history]

An agent that adds a note per step makes a commit per note: a store a few months old has
tens of thousands of commits. A merging `memctl sync` and an `export` read every version each
note had from that history (memctl.exchange.snapshot.scan_history), and git's diff of each
commit costs as much as the folders it changed hold, so a pass over N single-note commits in
one folder costs N × N. This script measures it: for each size, a store whose history is N
commits of one note each (`proj/notes/fact/`, made with `git fast-import`, fixed seed), a
bare repository as its remote and a second clone as another machine. Each round, the other
machine adds a note and syncs, this one adds a note (`memctl add`), then its `memctl sync`
merges the two and is timed; then `memctl export` is timed. The first round is a store's first
merge (nothing kept from an earlier one), the later rounds its next merges.

Each `--memctl` is a `memctl` executable (default: the one beside this Python); for an older
checkout, a two-line script running `PYTHONPATH=<its tree> python -P -m memctl "$@"`. Every build
gets its own copy of the three repositories, and the builds take turns in each round. Figures
are wall milliseconds, medians of the later rounds next to the first.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import gen_corpus  # noqa: E402  (bench/ is not a package)

DEFAULT_MEMCTL = str(Path(sys.executable).parent / "memctl")
NOW = "2026-11-30T12:00:00Z"
START = 1_760_000_000  # the first commit's time (2025-10-09); one commit a minute after it


def run(command: list[str], env: dict[str, str], cwd: Path | None = None,
        data: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(command, env=env, cwd=cwd, input=data, capture_output=True,
                          check=True)


def git_env() -> dict[str, str]:
    return dict(os.environ, GIT_AUTHOR_NAME="bench", GIT_AUTHOR_EMAIL="bench@example.com",
                GIT_COMMITTER_NAME="bench", GIT_COMMITTER_EMAIL="bench@example.com")


def history_stream(commits: int, seed: int, parent: str) -> bytes:
    """`git fast-import` input: `commits` commits on top of `parent`, each adding one note."""
    rng = random.Random(seed)
    chunks: list[str] = []
    for number in range(commits):
        when = START + 60 * number
        moment = datetime.fromtimestamp(when, UTC)
        note_id = gen_corpus.note_id(rng, moment)
        body = gen_corpus.body_text(rng, rng.choice(["en", "zh", "mixed"]))
        text = (f"---\nid: {note_id}\ntype: fact\nproject: proj\nimportance: 5\ntags: []\n"
                f"created: {gen_corpus.stamp(moment)}\nupdated: {gen_corpus.stamp(moment)}\n"
                f"status: active\nsource: cli\n---\n{body}\n")
        data = text.encode("utf-8")
        message = f"add fact {note_id}"
        chunks.append(f"commit refs/heads/main\ncommitter bench <bench@example.com> {when} +0000\n"
                      f"data {len(message.encode())}\n{message}\n")
        if number == 0:
            chunks.append(f"from {parent}\n")
        slug = gen_corpus.slug_of(body) or "note"
        chunks.append(f"M 100644 inline proj/notes/fact/{slug}-{note_id}.md\n"
                      f"data {len(data)}\n")
        chunks.append(text)
        chunks.append("\n")
    return "".join(chunks).encode("utf-8")


def prepared(out: Path, commits: int, seed: int) -> Path:
    """`out/base-N`: `mine` (a store with N single-note commits), `remote.git` (bare, its
    remote) and `theirs` (a clone of it), made once per size and seed."""
    base = out / f"base-{commits}-seed{seed}"
    if (base / "done").is_file():
        return base
    if base.exists():
        shutil.rmtree(base)
    base.mkdir(parents=True)
    env = dict(git_env(), MEMCTL_NOW=NOW)
    mine, remote, theirs = base / "mine", base / "remote.git", base / "theirs"
    run([DEFAULT_MEMCTL, "--store", str(mine), "init"], env)
    branch = run(["git", "-C", str(mine), "branch", "--show-current"], env).stdout.decode().strip()
    head = run(["git", "-C", str(mine), "rev-parse", "HEAD"], env).stdout.decode().strip()
    stream = history_stream(commits, seed, head).replace(b"refs/heads/main",
                                                         f"refs/heads/{branch}".encode())
    run(["git", "-C", str(mine), "fast-import", "--quiet"], env, data=stream)
    run(["git", "-C", str(mine), "reset", "-q", "--hard", branch], env)
    run(["git", "init", "-q", "--bare", str(remote)], env)
    run([DEFAULT_MEMCTL, "--store", str(mine), "sync", "--remote", str(remote)], env)
    run([DEFAULT_MEMCTL, "init", str(theirs), "--clone", str(remote)], env)
    (base / "done").write_text("")
    return base


def timed(command: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    run(command, env)
    return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commits", default="1000,10000")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--memctl", action="append", default=None)
    parser.add_argument("--out", default=str(HERE / "out" / "history"))
    args = parser.parse_args()
    builds = args.memctl or [DEFAULT_MEMCTL]
    out = Path(args.out)
    for commits in [int(size) for size in args.commits.split(",")]:
        base = prepared(out, commits, args.seed)
        copies = []
        for number, memctl in enumerate(builds):
            copy = out / f"run-{commits}-{number}"
            if copy.exists():
                shutil.rmtree(copy)
            shutil.copytree(base, copy, symlinks=True)
            # The clones name their remote by its path: point them at this copy's.
            for side in ("mine", "theirs"):
                run(["git", "-C", str(copy / side), "remote", "set-url", "origin",
                     str(copy / "remote.git")], git_env())
            copies.append((memctl, copy))
        syncs: dict[str, list[float]] = {memctl: [] for memctl in builds}
        exports: dict[str, list[float]] = {memctl: [] for memctl in builds}
        for round_number in range(args.rounds):
            order = copies if round_number % 2 == 0 else list(reversed(copies))
            for memctl, copy in order:
                env = dict(git_env(), MEMCTL_NOW=NOW, MEMCTL_PROJECT="proj")
                theirs = dict(env, MEMCTL_STORE=str(copy / "theirs"))
                mine = dict(env, MEMCTL_STORE=str(copy / "mine"))
                run([memctl, "add", f"their note {round_number} about the cache"], theirs)
                run([memctl, "sync"], theirs)
                run([memctl, "add", f"my note {round_number} about the deploy"], mine)
                syncs[memctl].append(timed([memctl, "sync"], mine))
                zip_path = copy / f"export-{round_number}.zip"
                exports[memctl].append(timed([memctl, "export", str(zip_path)], mine))
                zip_path.unlink()
        for memctl in builds:
            first_sync, later_syncs = syncs[memctl][0], syncs[memctl][1:] or syncs[memctl]
            first_export, later_exports = exports[memctl][0], exports[memctl][1:] or exports[memctl]
            print(f"{commits} commits, {memctl}: merging sync first {first_sync:.0f} ms, next "
                  f"{statistics.median(later_syncs):.0f} ms; export first {first_export:.0f} ms, "
                  f"next {statistics.median(later_exports):.0f} ms "
                  f"(load {os.getloadavg()[0]:.1f})", flush=True)
        for _, copy in copies:
            shutil.rmtree(copy)


if __name__ == "__main__":
    main()
