"""Benchmarks of the health report's pairs (near-duplicates, contradiction candidates), on stores
made by bench/gen_corpus.py and by bench/gen_long.py (fixed seeds).

Prints each figure with the command that produced it:
1. recall: in each group the report looks at (a project's live notes with global's as
   partners; global alone), the pairs the full comparison finds (`exhaustive_pairs`) and how
   many of them the candidate search finds (`similar_pairs`, memctl/core/nearpairs.py), with
   the CPU time of each; also for the pairs the report lists (after `compare`: contradictions
   and near-duplicates), and how many pairs the candidates made score of all pairs;
2. `memctl health --json` end to end as a subprocess: the first report (no kept pairs) and the
   second (kept pairs, .memctl/health-pairs.json), wall and CPU time, peak RSS;
3. long documents: a store of N long Markdown documents in one project (bench/gen_long.py):
   recall on its first documents, and the first report end to end;
4. a crowd: N near-copies in one project (`--crowd`), the report end to end: its cost must
   grow with N, not N² (docs/health.md);
5. long words: N notes that are each one word of L kana (a script memctl does not split into
   characters), one in ten an edited copy of another (`--words N --word-length L`, seed 5):
   the candidate search (`similar_pairs`) beside the full comparison, in process, CPU time
   and pairs found (docs/lifecycle.md).

    .venv/bin/python bench/bench_health.py [--sizes 1000,10000] [--long 3000]
        [--recall-groups 3] [--crowd 2000] [--words 300 --word-length 3000]
        [--figures recall,report,long,crowd,words] [--out bench/out]

At 100k notes the full comparison takes tens of minutes: `--recall-groups N` compares global
and the first N-1 projects only (the candidate search is timed on every group).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PYTHON = sys.executable
MEMCTL = str(Path(sys.executable).parent / "memctl")
ENV = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}

sys.path.insert(0, str(HERE))
# One way of timing a command and of printing a figure for every script of bench/.
from bench_search import _CHILD_RUN, load, show  # noqa: E402


def corpus(out: Path, size: int) -> Path:
    root = out / f"health-{size}"
    if not (root / "memctl.toml").exists():
        command = [PYTHON, str(HERE / "gen_corpus.py"), str(root), str(size)]
        subprocess.run(command, check=True)
        show(f"generated {size} notes", " ".join(command))
    return root


def long_corpus(out: Path, size: int) -> Path:
    root = out / f"health-long-{size}"
    if not (root / "memctl.toml").exists():
        command = [PYTHON, str(HERE / "gen_long.py"), str(root), str(size)]
        subprocess.run(command, check=True)
        show(f"generated {size} long documents", " ".join(command))
    return root


def crowd_corpus(out: Path, size: int) -> Path:
    """`size` near-copies in one project (`spam note number 17 word17`), as a script or a
    hostile remote could put there: every note alike with every other (docs/health.md)."""
    root = out / f"health-crowd-{size}"
    if not (root / "memctl.toml").exists():
        subprocess.run([MEMCTL, "init", str(root)], check=True, capture_output=True, env=ENV)
        folder = root / "spam" / "notes" / "fact"
        folder.mkdir(parents=True)
        for number in range(size):
            (folder / f"n{number}.md").write_text(
                f"---\nid: crowd{number:06d}\ntype: fact\nproject: spam\nimportance: 5\n"
                f"created: 2026-01-01T00:00:00Z\nupdated: 2026-01-01T00:00:00Z\n---\n"
                f"spam note number {number} word{number % 97}\n")
        show(f"generated {size} near-copies", f"crowd_corpus({size}) in bench/bench_health.py")
    return root


def groups_of(root: Path) -> tuple[dict[str, list[tuple[str, str]]], list[tuple[str, str]]]:
    """The live notes of each project (by path) and of global, as the report reads them."""
    from memctl.core.clock import now
    from memctl.memory.checks import live
    from memctl.memory.health import _read_all
    from memctl.store import Store

    notes = _read_all(Store(root))[0][0]
    scopes: dict[str, list[tuple[str, str]]] = {}
    for note in sorted(live(notes, now()), key=lambda note: note.path):
        scopes.setdefault(note.path.split("/", 1)[0], []).append((note.id, note.body))
    shared = scopes.pop("global", [])
    return scopes, shared


def judged(pairs: list[tuple[str, str, float]], texts: dict[str, str]) -> set[tuple[str, str]]:
    """The pairs the report lists: near-duplicates and contradiction candidates."""
    from memctl.core.similarity import compare

    listed = set()
    for a, b, _ in pairs:
        verdict = compare(texts[a], texts[b])
        if verdict.duplicate or verdict.similar:
            listed.add((min(a, b), max(a, b)))
    return listed


def recall(root: Path, label: str, recall_groups: int | None) -> None:
    from memctl.core import nearpairs
    from memctl.core.similarity import _shape, exhaustive_pairs, similar_pairs

    scopes, shared = groups_of(root)
    shared_keys = {key for key, _ in shared}
    work = [("global", shared, [])] + [(name, items, shared) for name, items in sorted(scopes.items())]
    totals = dict(reference=0, found=0, listed_reference=0, listed_found=0, scored=0, pairs=0)
    times = dict(exhaustive=0.0, candidates=0.0)
    compared = 0
    for number, (_name, own, partners) in enumerate(work):
        start = time.process_time()
        found = similar_pairs(own, partners=partners)
        times["candidates"] += time.process_time() - start
        everything = own + partners
        shapes = [_shape(_compare_part(text)) for _, text in everything]
        totals["scored"] += len(nearpairs.candidate_pairs(shapes, own=len(own)))
        totals["pairs"] += len(own) * (len(own) - 1) // 2 + len(own) * len(partners)
        if recall_groups is not None and number >= recall_groups:
            continue
        compared += 1
        start = time.process_time()
        reference = [(a, b, score) for a, b, score in exhaustive_pairs(everything)
                     if not (partners and a in shared_keys and b in shared_keys)]
        times["exhaustive"] += time.process_time() - start
        texts = dict(everything)
        mine = {(min(a, b), max(a, b)) for a, b, _ in found}
        theirs = {(min(a, b), max(a, b)) for a, b, _ in reference}
        totals["reference"] += len(theirs)
        totals["found"] += len(theirs & mine)
        listed_theirs, listed_mine = judged(reference, texts), judged(found, texts)
        totals["listed_reference"] += len(listed_theirs)
        totals["listed_found"] += len(listed_theirs & listed_mine)
    share = totals["scored"] / max(1, totals["pairs"])
    scope = "every group" if recall_groups is None or compared == len(work) else \
        f"{compared} of {len(work)} groups (global first)"
    show(f"{label}: the full comparison finds {totals['reference']} pairs scoring 70+ in "
         f"{scope}; the candidates find {totals['found']} "
         f"({100 * totals['found'] / max(1, totals['reference']):.2f} %); of the "
         f"{totals['listed_reference']} the report lists (after `compare`), "
         f"{totals['listed_found']} "
         f"({100 * totals['listed_found'] / max(1, totals['listed_reference']):.2f} %)  [{load()}]",
         f"python bench/bench_health.py  (similar_pairs vs exhaustive_pairs on {root})")
    show(f"{label}: candidates scored {totals['scored']} of {totals['pairs']} pairs "
         f"({100 * share:.2f} %); CPU: candidate search {times['candidates']:.1f} s for every "
         f"group, full comparison {times['exhaustive']:.1f} s for {scope}", "(same run)")


def _compare_part(text: str) -> str:
    from memctl.core.similarity import _compared

    return _compared(text)[0]


def report(root: Path, label: str) -> dict[str, tuple[float, float, float]]:
    """`memctl health --json` twice: without and with the pairs kept by the first. Returns
    {"first": ..., "second": ...}, each (wall s, CPU s, peak RSS MB)."""
    subprocess.run([MEMCTL, "--store", str(root), "reindex"], check=True, capture_output=True,
                   env=ENV)
    for folder, _, names in os.walk(root):  # the files in the OS cache, as in a store in use
        for name in names:
            with open(os.path.join(folder, name), "rb") as handle:
                while handle.read(1 << 20):
                    pass
    kept = root / ".memctl" / "health-pairs.json"
    command = [MEMCTL, "--store", str(root), "health", "--json"]
    figures: dict[str, tuple[float, float, float]] = {}
    for which in ("first report (no kept pairs)", "second report (kept pairs)"):
        if which.startswith("first") and kept.exists():
            kept.unlink()
        output = subprocess.run([PYTHON, "-c", _CHILD_RUN, *command], check=True, env=ENV,
                                capture_output=True, text=True).stdout.split()
        wall, cpu, rss_kb, code = float(output[0]), float(output[1]), int(output[2]), output[3]
        show(f"{label}: health {which}: {wall:.2f} s wall, {cpu:.2f} s CPU, peak RSS "
             f"{rss_kb / 1024:.0f} MB, exit {code}  [{load()}]",
             " ".join(command) + (" (after rm .memctl/health-pairs.json)"
                                  if which.startswith("first") else ""))
        figures[which.split()[0]] = (wall, cpu, rss_kb / 1024)
    return figures


def both_ways(items: list[tuple[str, str]]) -> tuple[list, float, list, float]:
    """(`similar_pairs` of `items`, its CPU time, `exhaustive_pairs`, its CPU time)."""
    from memctl.core.similarity import exhaustive_pairs, similar_pairs

    start = time.process_time()
    found = similar_pairs(items)
    mine_time = time.process_time() - start
    start = time.process_time()
    reference = exhaustive_pairs(items)
    return found, mine_time, reference, time.process_time() - start


def long_recall(root: Path, first: int) -> None:
    """Recall on the first documents (by path) of the long-document store."""
    scopes, _ = groups_of(root)
    items = [item for items in scopes.values() for item in items][:first]
    found, mine_time, reference, their_time = both_ways(items)
    texts = dict(items)
    mine = {(min(a, b), max(a, b)) for a, b, _ in found}
    theirs = {(min(a, b), max(a, b)) for a, b, _ in reference}
    strong = {(min(a, b), max(a, b)) for a, b, score in reference if score >= 75}
    show(f"long documents, first {len(items)}: the full comparison finds {len(theirs)} pairs "
         f"scoring 70+ ({their_time:.1f} s CPU), the candidates {len(theirs & mine)} "
         f"({mine_time:.2f} s CPU); of the {len(strong)} scoring 75+, "
         f"{len(strong & mine)}; pairs the report would list: "
         f"{len(judged(reference, texts))} vs {len(judged(found, texts))}  [{load()}]",
         f"python bench/bench_health.py --long N  (first {first} documents of {root})")


def long_words(count: int, length: int) -> None:
    """`similar_pairs` on one-word notes of kana beside `exhaustive_pairs` (5. above)."""
    import random

    rng = random.Random(5)
    kana = [chr(code) for code in range(0x3041, 0x3094)]
    items: list[tuple[str, str]] = []
    for number in range(count):
        if number % 10 == 9:  # an edited copy of an earlier note: a run of it replaced
            text = items[rng.randrange(number - 9, number)][1]
            at = rng.randrange(len(text) - 20)
            text = text[:at] + "".join(rng.choice(kana) for _ in range(20)) + text[at + 20:]
        else:
            text = "".join(rng.choice(kana) for _ in range(length))
        items.append((f"w{number:05d}", text))
    found, mine_time, reference, their_time = both_ways(items)
    mine = {(a, b) for a, b, _ in found}
    theirs = {(a, b) for a, b, _ in reference}
    show(f"{count} one-word notes of {length} kana: the candidates find {len(mine & theirs)} of "
         f"the {len(theirs)} pairs scoring 70+ ({mine_time:.2f} s CPU; the full comparison "
         f"{their_time:.1f} s CPU)  [{load()}]",
         f"python bench/bench_health.py --sizes '' --words {count} --word-length {length} "
         f"--figures words")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--long", type=int, default=3000, help="long documents (0: none)")
    parser.add_argument("--long-recall", type=int, default=300,
                        help="long documents compared both ways for recall")
    parser.add_argument("--recall-groups", type=int, default=None,
                        help="compare all pairs in this many groups only (100k: 3)")
    parser.add_argument("--crowd", type=int, default=2000,
                        help="near-copies in one project, for the report (0: none)")
    parser.add_argument("--words", type=int, default=300,
                        help="one-word notes of kana, in process (0: none)")
    parser.add_argument("--word-length", type=int, default=3000)
    parser.add_argument("--figures", default="recall,report,long,crowd,words")
    parser.add_argument("--out", type=Path, default=HERE / "out")
    args = parser.parse_args()
    figures = set(args.figures.split(","))
    print(f"# bench_health on {os.cpu_count()} cores, python {sys.version.split()[0]}, "
          f"{time.strftime('%Y-%m-%d %H:%M')}")
    for size in [int(size) for size in args.sizes.split(",") if size]:
        print(f"\n## {size} notes", flush=True)
        root = corpus(args.out, size)
        if "recall" in figures:
            recall(root, f"{size} notes", args.recall_groups)
        if "report" in figures:
            report(root, f"{size} notes")
    if args.long and "long" in figures:
        print(f"\n## {args.long} long documents in one project", flush=True)
        root = long_corpus(args.out, args.long)
        if args.long_recall:
            long_recall(root, args.long_recall)
        report(root, f"{args.long} long documents")
    if args.crowd and "crowd" in figures:
        print(f"\n## {args.crowd} near-copies in one project", flush=True)
        report(crowd_corpus(args.out, args.crowd), f"{args.crowd} near-copies")
    if args.words and "words" in figures:
        print(f"\n## {args.words} one-word notes of {args.word_length} kana", flush=True)
        long_words(args.words, args.word_length)


if __name__ == "__main__":
    main()
