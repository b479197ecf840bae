"""Retrieval on real questions: LoCoMo's conversations as memories, its questions as queries.

bench_retrieval.py measures memctl on a store and queries this project generates. This script
measures it on text nobody here wrote: LoCoMo (Maharana et al., ACL 2024,
https://github.com/snap-research/locomo), ten long conversations between two people over
months (5,882 turns) and 1,986 questions about them, each labelled with the turns that hold
its answer (`evidence`). The data is not part of this repository: pass your copy of
`data/locomo10.zip` (or of the JSON files in it) with `--data`.

1. writes one store: a project per conversation (`locomo-26`), a note per turn
   (`Caroline: Hey Mel! …`, a shared photo's caption after it), created and updated at its
   session's date, id `locomo26-d1-3` for turn `D1:3`; runs `memctl init` and `memctl reindex`;
2. asks each question as an agent would: `memctl --store S search --project P --limit 10
   --json QUESTION`, MEMCTL_NOW pinned to the day after the last session;
3. asks the same question of the plain BM25 baseline of bench_retrieval.py (SQLite FTS5,
   `porter unicode61`, the question's words OR-ed, no stop words, no recency) over the same
   turns, scoped to the same conversation;
4. prints hit@1, hit@5, MRR@10 and the share with no result by LoCoMo's question category
   (a hit is any turn of the question's evidence) and writes OUT/results.json.

    .venv/bin/python bench/bench_locomo.py --data PATH/locomo10.zip [--out bench/out/locomo] [--limit-queries N]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import time
import zipfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bench_retrieval import (
    TOP,
    Baseline,
    Doc,
    Outcome,
    indexed_store,
    latency_cell,
    outcome,
    print_heading,
    run_memctl,
    score_labels,
    scores,
    search_args,
    summary,
)

HERE = Path(__file__).resolve().parent
# LoCoMo's question categories, as its paper numbers them.
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
QUESTION_CATEGORIES = (1, 2, 3, 4)  # the ones with an answer in the conversation
TURN_ID = re.compile(r"D(\d+):(\d+)")
SESSION_KEY = re.compile(r"session_(\d+)")
MARKER = "locomo-store.txt"  # what this script leaves beside a store it made, so a rerun may remove it


def load_conversations(data: Path) -> list[dict[str, object]]:
    """Each conversation as {"name", "conversation", "qa"}, from the release's zip, a folder,
    or a JSON file: both of LoCoMo's layouts (one list of samples, or a file per
    conversation holding its sessions and its questions)."""
    texts: list[tuple[str, str]] = []
    if data.is_dir():
        texts = [(p.stem, p.read_text(encoding="utf-8")) for p in sorted(data.rglob("*.json"))]
    elif zipfile.is_zipfile(data):
        with zipfile.ZipFile(data) as archive:
            texts = [(Path(n).stem, archive.read(n).decode("utf-8")) for n in sorted(archive.namelist())
                     if n.endswith(".json")]
    else:
        texts = [(data.stem, data.read_text(encoding="utf-8"))]
    conversations: list[dict[str, object]] = []
    for stem, text in texts:
        loaded = json.loads(text)
        samples = loaded if isinstance(loaded, list) else [loaded]
        for number, sample in enumerate(samples):
            if not isinstance(sample, dict) or "qa" not in sample:
                continue
            sessions = sample.get("conversation", sample)
            name = str(sample.get("sample_id", stem if len(samples) == 1 else f"{stem}-{number}"))
            conversations.append({"name": re.sub(r"[^a-z0-9]+", "", name.lower()), "conversation": sessions,
                                  "qa": sample["qa"]})
    if not conversations:
        raise SystemExit(f"no LoCoMo conversation found in {data}")
    return conversations


def session_date(text: str) -> datetime:
    """`1:56 pm on 8 May, 2023` as a UTC time."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def turns_of(sessions: dict[str, object]) -> list[tuple[str, str, datetime]]:
    """(dia_id, text, when) of every turn of a conversation, in order."""
    turns: list[tuple[str, str, datetime]] = []
    numbers = sorted({int(m.group(1)) for key in sessions if (m := SESSION_KEY.fullmatch(key))})
    for number in numbers:
        said = sessions.get(f"session_{number}")
        when_text = sessions.get(f"session_{number}_date_time")
        if not isinstance(said, list) or not isinstance(when_text, str):
            continue
        when = session_date(when_text)
        for position, turn in enumerate(said):
            text = f"{turn['speaker']}: {turn['text']}"
            if turn.get("blip_caption"):
                text += f" [shares a photo: {turn['blip_caption']}]"
            # A session's turns a minute apart, so their order is their dates' order.
            turns.append((str(turn["dia_id"]), text, when + timedelta(minutes=position)))
    return turns


def note_id(conversation: str, dia_id: str) -> str | None:
    found = TURN_ID.fullmatch(dia_id.strip())
    return f"locomo{conversation}-d{found.group(1)}-{found.group(2)}" if found else None


def stamp(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%S.000Z")


def write_store(store: Path, conversations: list[dict[str, object]]) -> tuple[list[Doc], datetime]:
    """One project per conversation, one note per turn; the documents for the baseline and the
    latest turn's date."""
    docs: list[Doc] = []
    latest = datetime(1970, 1, 1, tzinfo=UTC)
    for conversation in conversations:
        name = str(conversation["name"])
        project = f"locomo-{name}"
        folder = store / project / "notes" / "fact"
        folder.mkdir(parents=True)
        sessions = conversation["conversation"]
        assert isinstance(sessions, dict)
        for dia_id, text, when in turns_of(sessions):
            identifier = note_id(name, dia_id)
            if identifier is None:
                continue
            latest = max(latest, when)
            front = (f"---\nid: {identifier}\ntype: fact\nproject: {project}\nimportance: 5\n"
                     f"created: {stamp(when)}\nupdated: {stamp(when)}\nstatus: active\nsource: locomo\n---\n")
            (folder / f"{identifier}.md").write_text(front + text + "\n", encoding="utf-8")
            docs.append(Doc(identifier, project, text))
    return docs, latest


def questions_of(conversations: list[dict[str, object]], notes: set[str]) -> list[dict[str, object]]:
    """Every question with at least one evidence turn that is one of `notes` (a few of
    LoCoMo's evidence labels name no turn of their conversation)."""
    queries: list[dict[str, object]] = []
    for conversation in conversations:
        name = str(conversation["name"])
        qa = conversation["qa"]
        assert isinstance(qa, list)
        for number, item in enumerate(qa):
            evidence = [note_id(name, m.group(0)) for text in item.get("evidence", [])
                        for m in TURN_ID.finditer(str(text))]
            relevant = sorted({e for e in evidence if e in notes})
            if relevant and item.get("question"):
                queries.append({"id": f"{name}-{number}", "project": f"locomo-{name}",
                                "category": int(item.get("category", 0)), "query": str(item["question"]).strip(),
                                "relevant": relevant})
    return queries


def print_table(rows: dict[str, dict[str, dict[str, object]]], title: str) -> None:
    head = (f"{'category':<22} {'n':>5} | {score_labels('memctl', 13)} {'p50/p95 ms':>11} "
            f"| {score_labels('bm25', 11)}")
    print_heading(title, head)
    for key, cells in rows.items():
        m, b = cells["memctl"], cells["bm25"]
        latency = latency_cell(m)
        print(f"{key:<22} {m['n']:>5} | {scores(m, 13)} {latency:>11} | {scores(b, 11)}")
        if key.startswith("questions"):
            print("-" * len(head))


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="LoCoMo's data/locomo10.zip, or the JSON in it")
    parser.add_argument("--out", type=Path, default=HERE / "out" / "locomo")
    parser.add_argument("--limit-queries", type=int, default=None, help="ask only every k-th question, about N in all")
    args = parser.parse_args()

    started = time.perf_counter()
    out: Path = args.out.resolve()
    store = out / "store"
    if store.exists():
        if not (out / MARKER).exists():
            raise SystemExit(f"{store} exists and was not made by this script; refusing to delete it")
        shutil.rmtree(store)
    store.mkdir(parents=True)
    (out / MARKER).write_text("made by bench/bench_locomo.py\n", encoding="utf-8")

    conversations = load_conversations(args.data)
    docs, latest = write_store(store, conversations)
    queries = questions_of(conversations, {doc.id for doc in docs})
    if args.limit_queries and args.limit_queries < len(queries):
        step = len(queries) / args.limit_queries
        queries = [queries[int(i * step)] for i in range(args.limit_queries)]
    now_text = stamp(latest.replace(hour=0, minute=0) + timedelta(days=1))

    memctl, env, version, reindexed, reindex_s = indexed_store(store, now_text, out)
    sys.stderr.write(f"{version}: {len(docs)} turns of {len(conversations)} conversations indexed in "
                     f"{reindex_s:.1f} s ({reindexed.get('errors')} errors)\n")

    baseline = Baseline("bm25_porter", "porter unicode61", False, docs)
    run_memctl(memctl, search_args(store, "photo", str(queries[0]["project"])), env, out)  # warm caches, untimed
    results: dict[str, list[Outcome]] = {"memctl": [], "bm25": []}
    for number, query in enumerate(queries, start=1):
        text, project, relevant = str(query["query"]), str(query["project"]), set(query["relevant"])  # type: ignore[arg-type]
        done, seconds = run_memctl(memctl, search_args(store, text, project), env, out)
        hits = json.loads(done.stdout)
        mine = outcome([str(hit["id"]) for hit in hits], relevant, {})
        mine.seconds = seconds
        results["memctl"].append(mine)
        results["bm25"].append(outcome(baseline.search(text, project), relevant, {}))
        if number % 200 == 0:
            sys.stderr.write(f"  {number}/{len(queries)} questions\n")

    # The questions of the first half of the conversations and of the second, apart: a
    # ranking change chosen by looking at one half is checked on the other (bench/README.md).
    names = sorted(str(c["name"]) for c in conversations)
    first_half = set(names[:len(names) // 2])
    halves = (f"1-4, {','.join(sorted(first_half))}",
              f"1-4, {','.join(n for n in names if n not in first_half)}")
    groups: dict[str, list[int]] = {}
    for i, query in enumerate(queries):
        category = int(query["category"])  # type: ignore[call-overload]
        groups.setdefault(f"{category} {CATEGORIES.get(category, '?')}", []).append(i)
        if category in QUESTION_CATEGORIES:
            groups.setdefault("questions 1-4", []).append(i)
            half = halves[0] if str(query["project"]).removeprefix("locomo-") in first_half else halves[1]
            groups.setdefault(half, []).append(i)
        groups.setdefault("all", []).append(i)
    order = sorted(k for k in groups if k[0].isdigit() and k not in halves) + [*halves, "questions 1-4", "all"]
    rows = {key: {system: summary([results[system][i] for i in groups[key]]) for system in results}
            for key in order if key in groups}
    title = (f"memctl search vs plain BM25 on LoCoMo: {len(queries)} questions over {len(docs)} turns in "
             f"{len(conversations)} conversations, MEMCTL_NOW={now_text}, {version}\n"
             f"bm25 = FTS5 porter unicode61, the question's words OR-ed; a hit = a turn of the question's evidence "
             f"in the top {TOP}; latency = `memctl search` subprocess wall time")
    print_table(rows, title)
    print(f"run took {time.perf_counter() - started:.0f} s")
    report = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "command": " ".join([".venv/bin/python", "bench/bench_locomo.py", *sys.argv[1:]]),
        "memctl": version,
        "turns": len(docs),
        "metrics": rows,
        "queries": [{**query, **{system: {"rank": results[system][i].rank, "hits": results[system][i].hits,
                                          "top": results[system][i].ids[:5]} for system in results},
                     "memctl_ms": round((results["memctl"][i].seconds or 0) * 1000, 1)}
                    for i, query in enumerate(queries)],
    }
    (out / "results.json").write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    sys.stderr.write(f"wrote {out / 'results.json'}\n")


if __name__ == "__main__":
    main()
