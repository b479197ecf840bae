"""Retrieval quality of `memctl search` on labelled queries, beside a plain BM25 baseline.

1. builds a store and `queries.jsonl` with bench/gen_qa.py (fixed seed; labels from the
   generator, never from memctl), makes it a store with `memctl init` and runs `memctl reindex`;
2. runs every query as a user would: `memctl --store S search --project P --limit 10 --json Q`
   with MEMCTL_NOW pinned to the generator's clock, timing each subprocess;
3. runs the same queries against a plain BM25 baseline in SQLite FTS5 over the same texts
   (active notes, MEMORY.md sections, scratchpads; the query's project plus `global`):
   English with `porter unicode61` and the query's words OR-ed; Chinese as overlapping
   character bigrams OR-ed (the standard lexical baseline for unsegmented text);
4. prints one table (hit@1, hit@5, MRR@10, share with no result, stale leaks, latency) and
   writes OUT/results.json with the figures and every query's ranks.

    .venv/bin/python bench/bench_retrieval.py [--out bench/out/retrieval] [--seed 7] [--notes 3200] [--limit-queries N]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TypedDict

HERE = Path(__file__).resolve().parent
CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
CJK_RUN = re.compile(f"[{CJK}]+")
WORD = re.compile(r"[^\W_]+")  # what FTS5's unicode61 calls a token: letters and digits
TOP = 10
CLASSES = ("keyword", "partial", "typo", "question", "agent", "pasted")
RETRY_WAIT_S = 60  # memctl's modules may be mid-move while the package is restructured

# One line of queries.jsonl ("class" is a keyword, hence the functional form).
Query = TypedDict("Query", {"id": str, "lang": str, "class": str, "query": str, "relevant": list[str],
                            "project": str, "frame": str, "stale_versions": list[str]})


# ---------------------------------------------------------------------------------------
# memctl as a subprocess
# ---------------------------------------------------------------------------------------


def memctl_command() -> str:
    beside = Path(sys.executable).with_name("memctl")
    found = str(beside) if beside.exists() else shutil.which("memctl")
    if not found:
        raise SystemExit("memctl not found: install it in this Python's environment or put it on PATH")
    return found


def run_memctl(memctl: str, args: list[str], env: dict[str, str], cwd: Path,
               retries: int = 5) -> tuple[subprocess.CompletedProcess[str], float]:
    """Run memctl; a crash (a traceback, not a usage error) is retried after a pause."""
    for attempt in range(retries + 1):
        started = time.perf_counter()
        done = subprocess.run([memctl, *args], capture_output=True, text=True, encoding="utf-8", env=env, cwd=cwd)
        elapsed = time.perf_counter() - started
        if done.returncode == 0:
            return done, elapsed
        transient = "Traceback" in done.stderr or "Error" in done.stderr
        if not transient or attempt == retries:
            raise SystemExit(f"memctl {' '.join(args)} failed ({done.returncode}):\n{done.stderr}")
        sys.stderr.write(f"memctl failed ({done.stderr.strip().splitlines()[-1][:120]}); retrying in {RETRY_WAIT_S} s\n")
        time.sleep(RETRY_WAIT_S)
    raise AssertionError("unreachable")


def indexed_store(store: Path, now_text: str, cwd: Path) -> tuple[str, dict[str, str], str, dict[str, object], float]:
    """`store` made a store (`memctl init`) and indexed (`memctl reindex`), with the clock at
    `now_text` and no store or project taken from the caller's environment: memctl's command,
    that environment, memctl's version, the reindex's summary and its wall time."""
    memctl = memctl_command()
    env = {**os.environ, "MEMCTL_NOW": now_text}
    for name in ("MEMCTL_STORE", "MEMCTL_PROJECT", "MEMCTL_NO_FAST_PATH"):
        env.pop(name, None)
    version = run_memctl(memctl, ["--version"], env, cwd)[0].stdout.strip()
    run_memctl(memctl, ["--store", str(store), "init", "--json"], env, cwd)
    reindex, reindex_s = run_memctl(memctl, ["--store", str(store), "reindex", "--json"], env, cwd)
    return memctl, env, version, json.loads(reindex.stdout), reindex_s


def search_args(store: Path, query: str, project: str, include_stale: bool = False) -> list[str]:
    args = ["--store", str(store), "search", "--project", project, "--limit", str(TOP), "--json"]
    if include_stale:
        args.append("--include-stale")
    # A query starting with "-" would be read as an option (or an exclusion) otherwise.
    return [*args, "--", query] if query.startswith("-") else [*args, query]


# ---------------------------------------------------------------------------------------
# The store as memctl sees it, read from the files
# ---------------------------------------------------------------------------------------


@dataclass
class Doc:
    id: str
    project: str
    text: str


def front_matter(text: str) -> tuple[dict[str, str], str]:
    """The `key: value` lines of the front matter (all the generator writes) and the body."""
    if not text.startswith("---\n"):
        return {}, text
    end = text.find("\n---\n", 4)
    if end < 0:
        return {}, text
    meta = {}
    for line in text[4:end].splitlines():
        key, sep, value = line.partition(":")
        if sep:
            meta[key.strip()] = value.strip()
    return meta, text[end + 5:]


def tag_list(value: str) -> list[str]:
    return [t.strip() for t in value.strip("[]").split(",") if t.strip()]


def read_store(store: Path, now: datetime) -> tuple[list[Doc], dict[str, str]]:
    """Searchable documents (active notes, MEMORY.md sections, scratchpads) and the stale note ids."""
    docs: list[Doc] = []
    stale: dict[str, str] = {}
    for folder in sorted(p for p in store.iterdir() if p.is_dir() and not p.name.startswith(".")):
        project = folder.name
        for path in sorted(folder.rglob("*.md")):
            relpath = path.relative_to(store).as_posix()
            parts = relpath.split("/")
            if any(part.startswith(".") for part in parts) or parts[1] == "episodes":
                continue
            text = path.read_text(encoding="utf-8")
            if len(parts) == 2 and parts[1] == "MEMORY.md":
                # One document per `##` section, heading included, as memctl indexes it.
                for number, chunk in enumerate(re.split(r"(?m)^(?=## )", text)):
                    if chunk.startswith("## "):
                        slug = chunk[3:].splitlines()[0].strip().lower().replace(" ", "-")
                        docs.append(Doc(f"{relpath}#{slug}-{number}", project, chunk))
                continue
            if len(parts) == 2 and parts[1] == "SCRATCHPAD.md":
                docs.append(Doc(relpath, project, text))
                continue
            meta, body = front_matter(text)
            note_id = meta.get("id", relpath)
            reason = None
            if meta.get("status") == "superseded":
                reason = "superseded"
            elif meta.get("status") == "archived" or parts[1] == "archive":
                reason = "archived"
            elif meta.get("expires") and datetime.fromisoformat(meta["expires"]).replace(tzinfo=UTC) <= now:
                reason = "expired"
            if reason:
                stale[note_id] = reason
                continue
            # Title + body + tags (subject and predicate go with the tags in memctl). The
            # title is the first body line unless a `title:` field says otherwise, so only an
            # explicit title is added: a plain BM25 document should not count that line twice.
            fields = [meta.get("title", ""), body, " ".join(tag_list(meta.get("tags", ""))),
                      meta.get("subject", ""), meta.get("predicate", "")]
            docs.append(Doc(note_id, project, "\n".join(f for f in fields if f)))
    return docs, stale


# ---------------------------------------------------------------------------------------
# The BM25 baselines
# ---------------------------------------------------------------------------------------


def bigram_tokens(text: str) -> list[str]:
    """Overlapping character bigrams of each CJK run (a lone character stays a unigram), Latin words as they are."""
    tokens: list[str] = []
    for word in WORD.findall(text.lower()):
        for piece in re.findall(f"[{CJK}]+|[^{CJK}]+", word):
            if CJK_RUN.fullmatch(piece):
                tokens += [piece[i:i + 2] for i in range(len(piece) - 1)] if len(piece) > 1 else [piece]
            else:
                tokens.append(piece)
    return tokens


def word_tokens(text: str) -> list[str]:
    return WORD.findall(text.lower())


def or_query(tokens: list[str]) -> str:
    """Each term double-quoted (a `"` doubled), OR-ed: any term may match, BM25 ranks."""
    unique = list(dict.fromkeys(tokens))
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in unique)


class Baseline:
    """One in-memory FTS5 table: plain bm25(), no stop words, no recency, no importance."""

    def __init__(self, name: str, tokenizer: str, prepare: bool, docs: list[Doc]) -> None:
        self.name = name
        self.prepare = prepare  # bigram mode: text is turned into tokens before FTS5 sees it
        self.db = sqlite3.connect(":memory:")
        self.db.execute(f"CREATE VIRTUAL TABLE docs USING fts5(text, project UNINDEXED, doc_id UNINDEXED, tokenize='{tokenizer}')")
        rows = ((" ".join(bigram_tokens(d.text)) if prepare else d.text, d.project, d.id) for d in docs)
        self.db.executemany("INSERT INTO docs (text, project, doc_id) VALUES (?, ?, ?)", rows)

    def search(self, query: str, project: str) -> list[str]:
        match = or_query(bigram_tokens(query) if self.prepare else word_tokens(query))
        if not match:
            return []
        rows = self.db.execute(
            "SELECT doc_id FROM docs WHERE docs MATCH ? AND project IN (?, 'global') "
            "ORDER BY bm25(docs), doc_id LIMIT ?", (match, project, TOP))
        return [row[0] for row in rows]


# ---------------------------------------------------------------------------------------
# Metrics
# ---------------------------------------------------------------------------------------


@dataclass
class Outcome:
    rank: int | None  # 1-based rank of the labelled note in the top 10
    hits: int
    stale_hits: int = 0
    seconds: float | None = None
    fuzzy: bool = False
    ids: list[str] = field(default_factory=list)


def outcome(ids: list[str], relevant: set[str], stale: dict[str, str]) -> Outcome:
    rank = next((i + 1 for i, doc in enumerate(ids) if doc in relevant), None)
    return Outcome(rank, len(ids), sum(1 for doc in ids if doc in stale), ids=ids)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def summary(outcomes: list[Outcome]) -> dict[str, float | int | None]:
    n = len(outcomes)
    if not n:
        return {"n": 0}
    times = [o.seconds * 1000 for o in outcomes if o.seconds is not None]
    return {
        "n": n,
        "hit@1": sum(o.rank == 1 for o in outcomes) / n,
        "hit@5": sum(o.rank is not None and o.rank <= 5 for o in outcomes) / n,
        "mrr@10": sum(1 / o.rank for o in outcomes if o.rank) / n,
        "no_result": sum(o.hits == 0 for o in outcomes) / n,
        "stale_hits": sum(o.stale_hits for o in outcomes),
        "queries_with_stale": sum(o.stale_hits > 0 for o in outcomes),
        "fuzzy": sum(o.fuzzy for o in outcomes),
        "latency_ms_p50": statistics.median(times) if times else None,
        "latency_ms_p95": percentile(times, 0.95) if times else None,
    }


def grouped(queries: list[Query], results: dict[str, list[Outcome]]) -> dict[str, dict[str, dict[str, object]]]:
    """system -> "lang/class" (and "lang/all", "all/all") -> summary."""
    table: dict[str, dict[str, dict[str, object]]] = {}
    for system, outcomes in results.items():
        cells: dict[str, list[Outcome]] = {}
        for query, result in zip(queries, outcomes, strict=True):
            for key in (f"{query['lang']}/{query['class']}", f"{query['lang']}/all", f"all/{query['class']}", "all/all"):
                cells.setdefault(key, []).append(result)
        table[system] = {key: summary(value) for key, value in cells.items()}
    return table


def pct(value: object) -> str:
    return f"{100 * float(value):3.0f}%" if isinstance(value, float) else "   -"


def latency_cell(summary: dict[str, object]) -> str:
    """`p50/p95` in ms of a summary's searches, or `-` when they were not timed."""
    p50, p95 = summary.get("latency_ms_p50"), summary.get("latency_ms_p95")
    return "-" if p50 is None else f"{float(p50):.0f}/{float(p95):.0f}"  # type: ignore[arg-type]


def score_labels(name: str, width: int) -> str:
    """The labels over `scores`: `memctl: hit@1 hit@5 MRR none`."""
    return f"{name + ': hit@1':>{width}} {'hit@5':>5} {'MRR':>5} {'none':>5}"


def print_heading(title: str, head: str) -> None:
    print(title)
    print(head)
    print("-" * len(head))


def scores(summary: dict[str, object], width: int) -> str:
    """A summary's `hit@1 hit@5 MRR none` cells, the first `width` wide (under its label)."""
    return (f"{pct(summary['hit@1']):>{width}} {pct(summary['hit@5']):>5} "
            f"{float(summary['mrr@10']):5.2f} {pct(summary['no_result']):>5}")  # type: ignore[arg-type]


def print_table(metrics: dict[str, dict[str, dict[str, object]]], title: str) -> None:
    head = (f"{'lang':<4} {'class':<8} {'n':>4} | {score_labels('memctl', 13)} {'stale':>5} "
            f"{'p50/p95 ms':>11} | {score_labels('bm25', 11)} | {'MRR porter':>10} {'bigram':>6}")
    print_heading(title, head)
    rows = [(lang, cls) for lang in ("en", "zh") for cls in (*CLASSES, "all")] + [("all", "all")]
    for lang, cls in rows:
        key = f"{lang}/{cls}"
        m, b = metrics["memctl"].get(key), metrics["bm25"].get(key)
        if not m or not b or not m.get("n"):
            continue
        p, g = metrics["bm25_porter"][key], metrics["bm25_bigram"][key]
        latency = latency_cell(m)
        print(f"{lang:<4} {cls:<8} {m['n']:>4} | {scores(m, 13)} {m['stale_hits']:>5} {latency:>11} | "
              f"{scores(b, 11)} | {float(p['mrr@10']):10.2f} {float(g['mrr@10']):6.2f}")
        if cls == "all":
            print("-" * len(head))


# ---------------------------------------------------------------------------------------
# The run
# ---------------------------------------------------------------------------------------


def subset(queries: list[Query], limit: int | None) -> list[Query]:
    """The first `limit` queries taken in turn from each language × class, so every cell is seen."""
    if not limit or limit >= len(queries):
        return queries
    groups: dict[tuple[str, str], list[Query]] = {}
    for query in queries:
        groups.setdefault((query["lang"], query["class"]), []).append(query)
    chosen: list[Query] = []
    turn = 0
    while len(chosen) < limit:
        for group in groups.values():
            if turn < len(group) and len(chosen) < limit:
                chosen.append(group[turn])
        turn += 1
    order = {id(q): i for i, q in enumerate(queries)}
    return sorted(chosen, key=lambda q: order[id(q)])


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE / "out" / "retrieval")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--notes", type=int, default=3200)
    parser.add_argument("--limit-queries", type=int, default=None, help="run only N queries (spread over every cell)")
    args = parser.parse_args()

    sys.path.insert(0, str(HERE))
    import gen_qa  # bench/ is not a package: gen_qa sits beside this script

    started = time.perf_counter()
    out: Path = args.out.resolve()
    store = out / "store"
    if store.exists():
        # Only ever remove what this script made: a store folder beside our meta.json.
        if not (out / "meta.json").exists():
            raise SystemExit(f"{store} exists and was not made by gen_qa.py; refusing to delete it")
        shutil.rmtree(store)
    out.mkdir(parents=True, exist_ok=True)
    meta = gen_qa.generate(out, args.seed, args.notes)
    now_text = str(meta["now"])
    now = datetime.fromisoformat(now_text.replace("Z", "+00:00"))

    memctl, env, version, reindexed, reindex_s = indexed_store(store, now_text, out)
    sys.stderr.write(f"{version}: {meta['notes']} notes indexed in {reindex_s:.1f} s ({reindexed.get('errors')} errors)\n")

    queries: list[Query] = subset([json.loads(line) for line in (out / "queries.jsonl").read_text(encoding="utf-8").splitlines()],
                     args.limit_queries)

    docs, stale = read_store(store, now)
    porter = Baseline("bm25_porter", "porter unicode61", False, docs)
    bigram = Baseline("bm25_bigram", "unicode61", True, docs)

    # One search before timing: the first run pays for cold caches that a user's shell has warm.
    run_memctl(memctl, search_args(store, "database", "global"), env, out)
    results: dict[str, list[Outcome]] = {"memctl": [], "bm25": [], "bm25_porter": [], "bm25_bigram": []}
    stale_competes = 0
    for number, query in enumerate(queries, start=1):
        text, project, relevant = query["query"], query["project"], set(query["relevant"])
        done, seconds = run_memctl(memctl, search_args(store, text, project), env, out)
        hits = json.loads(done.stdout)
        result = outcome([str(hit["id"]) for hit in hits], relevant, stale)
        result.seconds, result.fuzzy = seconds, any(hit.get("fuzzy") for hit in hits)
        results["memctl"].append(result)
        by_porter = outcome(porter.search(text, project), relevant, stale)
        by_bigram = outcome(bigram.search(text, project), relevant, stale)
        results["bm25_porter"].append(by_porter)
        results["bm25_bigram"].append(by_bigram)
        results["bm25"].append(by_bigram if query["lang"] == "zh" else by_porter)
        if query["stale_versions"]:
            # A check that the stale versions are real competitors: would they be in the top 10
            # if memctl did not leave them out? (Not timed, not in the metrics.)
            shown, _ = run_memctl(memctl, search_args(store, text, project, include_stale=True), env, out)
            if any(str(hit["id"]) in stale for hit in json.loads(shown.stdout)):
                stale_competes += 1
        if number % 50 == 0:
            sys.stderr.write(f"  {number}/{len(queries)} queries\n")

    metrics = grouped(queries, results)
    command = " ".join([".venv/bin/python", "bench/bench_retrieval.py", *sys.argv[1:]])
    title = (f"memctl search vs plain BM25: {len(queries)} queries, {meta['notes']} notes, seed {args.seed}, "
             f"MEMCTL_NOW={now_text}, {version}\n"
             f"bm25 = porter unicode61 for en, CJK bigrams for zh; stale = superseded/archived/expired notes in "
             f"memctl's top {TOP}; latency = `memctl search` subprocess wall time")
    print_table(metrics, title)
    elapsed = time.perf_counter() - started
    with_stale = [i for i, query in enumerate(queries) if query["stale_versions"]]
    leaked = sum(results["memctl"][i].stale_hits > 0 for i in with_stale)
    print(f"{len(docs)} searchable docs, {len(stale)} stale notes; {len(with_stale)} queries have a stale version "
          f"of their answer in the store ({stale_competes} of them would show one with --include-stale); "
          f"memctl returned a stale note for {leaked} of them "
          f"(for {metrics['memctl']['all/all']['queries_with_stale']} queries in all); run took {elapsed:.0f} s")

    report = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),  # when the benchmark ran, not content
        "command": command,
        "memctl": version,
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "generator": meta,
        "reindex": {**reindexed, "wall_s": round(reindex_s, 2)},
        "searchable_docs": len(docs),
        "stale_notes": len(stale),
        "queries_with_stale_version": len(with_stale),
        "memctl_leaks_on_those": leaked,
        "stale_in_top10_with_include_stale": stale_competes,
        "metrics": metrics,
        "queries": [
            {**query, **{system: {"rank": results[system][i].rank, "hits": results[system][i].hits,
                                  "stale_hits": results[system][i].stale_hits, "top": results[system][i].ids[:3]}
                         for system in results},
             "memctl_ms": round((results["memctl"][i].seconds or 0) * 1000, 1), "memctl_fuzzy": results["memctl"][i].fuzzy}
            for i, query in enumerate(queries)
        ],
    }
    (out / "results.json").write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    sys.stderr.write(f"wrote {out / 'results.json'}\n")


if __name__ == "__main__":
    main()
