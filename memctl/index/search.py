"""Ranked search over the index, in one SQL query.

score = -bm25(title ×4, tags ×2, body ×1) × importance factor × recency factor × type factor
- importance factor: 0.5 + importance / 10 (1 → 0.6, 5 → 1.0, 10 → 1.5);
- recency factor: RECENCY_FLOOR + (1 - RECENCY_FLOOR) × 0.5^(age / half-life), age from
  `updated`, half-life the `search.recency_half_life_days` setting: an old note keeps 75 % of
  its weight, so a year-old exact answer still beats a fresh loose match (docs/search.md);
- type factor: 1.25 for a correction; a correction is also placed ahead of the note it
  corrects (`corrects: <id>`, or the same subject and predicate), and brought in when that
  note is a hit and the correction is not.
Scope: the project plus `global` unless told otherwise; superseded, archived and expired
entries only with `include_stale`. With no hit, words are matched fuzzily against the words
of titles, tags and subjects (`postgress` → PostgreSQL) and the search runs again.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from memctl.core import arguments
from memctl.core.clock import now
from memctl.core.dates import Period, notation_words, periods_in
from memctl.core.query import (
    Query,
    Unit,
    every_phrase_and_any_unit,
    fts_phrase,
    parse,
    without_date_notation,
    without_scope_words,
)
from memctl.core.stopwords import bare, is_english_stop
from memctl.core.tokenize import FTS_TOKENIZE, from_index, has_cjk, scope_token
from memctl.core.vocab import MAX_LIMIT, fact_key
from memctl.disk.layout import DEFAULT_PROJECT, GLOBAL
from memctl.disk.settings import Settings
from memctl.index import bestmatch, fuzzy
from memctl.index.db import Index, ensure_fresh
from memctl.index.scope import scope_sql

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (start-up)
if TYPE_CHECKING:
    from typing import Any

    from memctl.disk.layout import StoreLike


WEIGHTS = (4.0, 2.0, 1.0, 0.0)  # title, tags, body, scope
CORRECTION_FACTOR = 1.25
RECENCY_FLOOR = 0.75
SNIPPET_TOKENS = 24
SNIPPET_MAX_BODY = 65_536  # characters; longer bodies get their beginning as the snippet
OPEN, CLOSE = "\x02", "\x03"
ALL_KINDS = ("note", "episode", "memory", "scratchpad")
_SPACES = re.compile(r"\s+")


class Hit:
    """One search result. A plain class (see memctl.core.query on dataclasses and start-up);
    hits are compared by identity, so reordering them stays cheap."""

    def __init__(self, *, id: str, path: str, project: str, type: str, kind: str,
                 importance: int, status: str, score: float, title: str,
                 snippet_marked: str, section: str | None = None, line: int = 1,
                 tags: list[str] | None = None, updated: str | None = None,
                 fuzzy: bool = False, explain: dict[str, Any] | None = None, rowid: int = 0,
                 subject: str | None = None, predicate: str | None = None,
                 corrects: str | None = None, expired: bool = False) -> None:
        self.id = id
        self.path = path
        self.project = project
        self.type = type
        self.kind = kind
        self.importance = importance
        self.status = status
        self.score = score
        self.title = title
        self.snippet_marked = snippet_marked  # the match between OPEN and CLOSE marks
        self.section = section
        self.line = line
        self.tags = tags if tags is not None else []
        self.updated = updated
        self.fuzzy = fuzzy
        self.explain = explain
        self.rowid = rowid
        self.subject = subject
        self.predicate = predicate
        self.corrects = corrects
        self.expired = expired  # past its `expires` (shown only with include_stale)
        self.coverage = 1.0  # the share of the query matched (best match; 1 for filters)
        self.exact = True  # has every word of the query as typed

    def __repr__(self) -> str:
        return f"Hit(id={self.id!r}, score={self.score!r}, title={self.title!r})"

    @property
    def snippet(self) -> str:
        """The snippet with the match in Markdown bold."""
        return self.snippet_marked.replace(OPEN, "**").replace(CLOSE, "**")

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": self.id, "path": self.path, "project": self.project, "type": self.type,
            "kind": self.kind, "importance": self.importance, "status": self.status,
            "score": round(self.score, 6), "title": self.title, "snippet": self.snippet,
            "section": self.section, "line": self.line, "tags": self.tags,
            "updated": self.updated, "fuzzy": self.fuzzy, "coverage": round(self.coverage, 4),
            "exact": self.exact, "expired": self.expired,
        }
        if self.explain is not None:
            data["explain"] = self.explain
        return data


_COLUMNS = ("d.rowid, d.id, d.path, d.kind, d.project, d.type, d.importance, d.status, d.title,"
            " d.section, d.line, d.tags, d.updated, d.updated_ts, d.subject, d.predicate,"
            " d.corrects, d.expires_ts")


def search(store: StoreLike, query: str | Query, *, project: str | None = None,
           all_projects: bool = False, projects: Sequence[str] | None = None,
           types: Sequence[str] = (), tags: Sequence[str] = (), since: Any = None,
           limit: int = 20, include_stale: bool = False, explain: bool = False,
           kinds: Sequence[str] = ALL_KINDS, index: Index | None = None) -> list[Hit]:
    """Hits for `query`, best first. `index` skips the freshness check when the caller just
    did it (`ensure_fresh`)."""
    parsed = query if isinstance(query, Query) else parse(query)
    limit = arguments.limit(min(limit, MAX_LIMIT))  # a library caller's huge number must not overflow SQLite
    if index is None:
        index = ensure_fresh(store)
    if not parsed.searches_text and not parsed.has_filters and not tags and not types:
        return []  # nothing searchable was typed (only punctuation or emoji)
    if all_projects:
        scope = None
    else:
        scope = list(dict.fromkeys([*(projects or ([project] if project else [])), GLOBAL]))
    now_ts = now().timestamp()
    where, params = scope_sql(
        projects=scope, types=[*types, *parsed.types], tags=[*tags, *parsed.tags],
        since=since, include_stale=include_stale, kinds=kinds,
        exclude_tags=parsed.exclude_tags, exclude_types=parsed.exclude_types, now_ts=now_ts,
        subjects=parsed.subjects, predicates=parsed.predicates, tag_any=parsed.tag_any,
        exclude_subjects=parsed.exclude_subjects, exclude_predicates=parsed.exclude_predicates)
    half_life = _half_life_days(store) * 86400.0
    ctx = RankContext(index.conn, where, params, now_ts, half_life, limit, explain)
    if scope is not None:
        ctx.scope_match = " OR ".join(scope_token(name) for name in scope)
        ctx.projects = scope
    scope_words: list[str] = []
    if scope is not None and len(scope) == 2 and parsed.any_match is not None \
            and scope[0] != DEFAULT_PROJECT:
        # One project searched: the words naming it rank nothing (docs/search.md). Not the
        # fallback project's `default`, a word people ask about (`the default port`).
        parsed, scope_words = without_scope_words(parsed, scope[0])
    periods = periods_in(_date_text(parsed), now().date())
    if periods and parsed.any_match is not None:
        parsed = without_date_notation(parsed, notation_words(periods))
    if parsed.any_match is not None or periods:
        hits = _best_match(ctx, parsed, periods)
    else:
        hits = ctx.run(parsed.match, parsed.exclude)
    if not hits and parsed.words and not periods:
        # (A query naming a date that matches nothing: nothing was written then, and the
        # date's words are no misspellings.)
        hits = _fuzzy_fallback(ctx, parsed)
    hits = _corrections_first(ctx, hits)
    for hit in hits:
        if isinstance(hit.tags, str):
            hit.tags = json.loads(hit.tags)
        if scope_words and hit.explain is not None:
            hit.explain["scope_words"] = scope_words
    return hits[:limit]


def _half_life_days(store: StoreLike) -> float:
    settings = getattr(store, "settings", None)
    if settings is None:
        from pathlib import Path

        settings = Settings.load(Path(store))  # type: ignore[arg-type]
    value = float(settings.get("search.recency_half_life_days"))
    return value if value > 0 else 90.0


class RankContext:
    """One search's connection, scope and ranking parameters (shared with the fuzzy pass)."""

    def __init__(self, conn: Any, where: str, params: list[Any], now_ts: float,
                 half_life: float, limit: int, explain: bool) -> None:
        self.conn, self.where, self.params = conn, where, params
        self.now_ts, self.half_life, self.limit, self.explain = now_ts, half_life, limit, explain
        # Projects in scope as an FTS5 condition: FTS5 intersects the posting lists, so hits
        # in other projects never reach the join (the SQL WHERE still checks them).
        self.scope_match: str | None = None
        self.projects: list[str] | None = None  # the projects in scope (None: all)

    def factors_sql(self) -> tuple[str, str, str]:
        importance = "(0.5 + d.importance / 10.0)"
        recency = (f"({RECENCY_FLOOR} + {1 - RECENCY_FLOOR} * exp(-0.6931471805599453 * "
                   f"max(0.0, {self.now_ts!r} - d.updated_ts) / {self.half_life!r}))")
        kind = f"(CASE d.type WHEN 'correction' THEN {CORRECTION_FACTOR} ELSE 1.0 END)"
        return importance, recency, kind

    def run(self, match: str | None, exclude: str | None = None, *, limit: int | None = None,
            snippets: bool = True) -> list[Hit]:
        """Hits for an FTS5 MATCH (or, with none, every entry in scope but `exclude`), best
        first by BM25 and the factors."""
        limit = self.limit if limit is None else limit
        importance, recency, kind = self.factors_sql()
        if match is not None:
            rank = "bm25(fts, " + ", ".join(map(str, WEIGHTS)) + ")"
            sql = (f"SELECT {_COLUMNS}, {rank}, {importance}, {recency}, {kind}"
                   f" FROM fts JOIN docs d ON d.rowid = fts.rowid"
                   f" WHERE fts MATCH ? AND {self.where}"
                   f" ORDER BY {rank} * {importance} * {recency} * {kind}, d.id LIMIT ?")
            params = [bestmatch.in_scope(match, self.scope_match), *self.params, limit]
        else:
            sql = (f"SELECT {_COLUMNS}, NULL, {importance}, {recency}, {kind} FROM docs d"
                   f" WHERE {self.where}")
            params = list(self.params)
            if exclude is not None:
                sql += " AND d.rowid NOT IN (SELECT rowid FROM fts WHERE fts MATCH ?)"
                params.append(exclude)
            sql += f" ORDER BY {importance} * {recency} * {kind} DESC, d.id LIMIT ?"
            params.append(limit)
        hits = [self._hit(row) for row in self.conn.execute(sql, params)]
        if snippets:
            self.add_snippets(hits, match)
        return hits

    def run_pool(self, match: str | None, pool: list[tuple[float, set[int]]],
                 limit: int, pairs: str | None = None,
                 dated: dict[int, float] | None = None) -> list[Hit]:
        """The best `limit` of the entries of `pool`, given in groups (what their score is
        multiplied by: their coverage; the rowids), by BM25 of `match` and the factors times
        that, without snippets. One evaluation of `match`, joined to the pool (a TEMP table):
        BM25 and the factors are computed for the pool's entries alone. `pairs`, an
        expression over the pairs table (pairs of CJK characters), adds its BM25 there;
        `dated` (rowid → a BM25 of its own) does the same for the notes written on a date the
        query names."""
        conn = self.conn
        began = not conn.in_transaction
        if began:
            conn.execute("BEGIN")
        try:
            conn.execute("DELETE FROM temp.memctl_pool")
            conn.execute("DELETE FROM temp.memctl_dated")
            for factor, rowids in pool:
                if rowids:
                    conn.execute("INSERT INTO temp.memctl_pool(rowid, factor)"
                                 " SELECT value, ? FROM json_each(?)",
                                 (factor, json.dumps(list(rowids))))
            if dated:  # (rows outside the pool are left out by the join with it)
                conn.execute("INSERT INTO temp.memctl_dated(rowid, score) SELECT key, value"
                             " FROM json_each(?)",
                             (json.dumps({str(rowid): -score for rowid, score in dated.items()}),))
        finally:
            if began:
                conn.execute("COMMIT")
        importance, recency, kind = self.factors_sql()
        if pairs is None and match is not None and not dated:
            rank = "bm25(fts, " + ", ".join(map(str, WEIGHTS)) + ")"
            # The order by numbers alone, then the columns of the best: SQLite would copy
            # every column of every entry in the pool into its sorter.
            sql = (f"SELECT fts.rowid, {rank} AS bm25 FROM fts JOIN temp.memctl_pool c"
                   f" ON c.rowid = fts.rowid JOIN docs d ON d.rowid = fts.rowid"
                   f" WHERE fts MATCH ? AND {self.where}"
                   f" ORDER BY bm25 * {importance} * {recency} * {kind} * c.factor, d.id LIMIT ?")
            scoped = bestmatch.in_scope(match, self.scope_match)
            best = dict(conn.execute(sql, [scoped, *self.params, limit]).fetchall())
        else:
            best = self._pool_with_pairs(match, pairs, limit, bool(dated))
        if not best:
            return []
        rows = conn.execute(f"SELECT {_COLUMNS}, {importance}, {recency}, {kind} FROM docs d"
                            f" WHERE d.rowid IN (SELECT value FROM json_each(?))",
                            (json.dumps(list(best)),)).fetchall()
        # `_hit` reads the columns, then BM25, then the three factors.
        return [self._hit((*row[:-3], best[row[0]], *row[-3:])) for row in rows]

    def _pool_with_pairs(self, match: str | None, pairs: str | None,
                         limit: int, dated: bool = False) -> dict[int, float]:
        """`run_pool`'s best entries (rowid → BM25) when some units are pairs of CJK
        characters or dates: BM25 of the words in `fts` plus BM25 of the pairs in
        `fts_pairs`, each one evaluation joined to the pool, plus the dates' part
        (`temp.memctl_dated`), summed and ordered with the factors in one statement, as
        `run_pool` orders."""
        weights = ", ".join(map(str, WEIGHTS))
        parts, names, params = [], [], []
        for table, expression in (("fts", match), ("fts_pairs", pairs)):
            if expression is not None:
                # Materialized: an auxiliary function such as bm25 cannot be evaluated once
                # SQLite flattens its query into the aggregate below.
                names.append(f"s_{table}")
                parts.append(f"s_{table} AS MATERIALIZED (SELECT {table}.rowid AS rowid,"
                             f" bm25({table}, {weights}) AS score FROM {table}"
                             f" JOIN temp.memctl_pool c ON c.rowid = {table}.rowid"
                             f" WHERE {table} MATCH ?)")
                params.append(bestmatch.in_scope(expression, self.scope_match))
        if dated:
            names.append("temp.memctl_dated")
        if not names:
            return {}
        importance, recency, kind = self.factors_sql()
        union = " UNION ALL ".join(f"SELECT rowid, score FROM {name}" for name in names)
        sql = (f"{'WITH ' + ', '.join(parts) if parts else ''} SELECT t.rowid, t.bm25 FROM"
               f" (SELECT rowid, sum(score) AS bm25 FROM ({union}) GROUP BY rowid) t"
               f" CROSS JOIN temp.memctl_pool c ON c.rowid = t.rowid"
               f" CROSS JOIN docs d ON d.rowid = t.rowid WHERE {self.where}"
               f" ORDER BY t.bm25 * {importance} * {recency} * {kind} * c.factor, d.id LIMIT ?")
        return dict(self.conn.execute(sql, [*params, *self.params, limit]).fetchall())

    def add_snippets(self, hits: list[Hit], match: str | None, copied: bool = False) -> None:
        if copied and match is not None:
            # A best match's expression has many units, common ones among them: evaluating it
            # over the scope costs more than the snippets. The hits are copied into a TEMP
            # FTS5 table of their own, where the same expression finds the same words.
            snippets = self.copied_snippets([hit.rowid for hit in hits], match)
            for hit in hits:
                hit.snippet_marked = snippets.get(hit.rowid, "")
            return
        scoped = match if match is None else bestmatch.in_scope(match, self.scope_match)
        # The scoped MATCH for the snippets too: FTS5 then streams only this scope's matches
        # (a prefix such as `deploy*` matches thousands of notes store-wide). Scope tokens
        # live in their own column, so they are never highlighted.
        snippets = self.snippets([hit.rowid for hit in hits], scoped)
        for hit in hits:
            hit.snippet_marked = snippets.get(hit.rowid, "")

    def _hit(self, row: Sequence[Any]) -> Hit:
        (rowid, doc_id, path, kind, project, doc_type, importance, status, title, section,
         line, tags, updated, updated_ts, subject, predicate, corrects, expires_ts,
         bm25, imp_factor, rec_factor, type_factor) = row
        relevance = 1.0 if bm25 is None else -bm25
        score = relevance * imp_factor * rec_factor * type_factor
        hit = Hit(id=doc_id, path=path, project=project, type=doc_type, kind=kind,
                  importance=importance, status=status, score=score, title=title,
                  snippet_marked="", section=section or None, line=line, tags=tags,
                  updated=updated, rowid=rowid, subject=subject, predicate=predicate,
                  corrects=corrects, expired=expires_ts is not None and expires_ts <= self.now_ts)
        if self.explain:
            hit.explain = {
                "bm25": None if bm25 is None else round(-bm25, 6),
                "importance_factor": round(imp_factor, 4),
                "recency_factor": round(rec_factor, 4),
                "age_days": round(max(0.0, self.now_ts - updated_ts) / 86400.0, 1),
                "type_factor": type_factor,
                "score": round(score, 6),
            }
        return hit

    def snippets(self, rowids: list[int], match: str | None) -> dict[int, str]:
        """Snippets of these rows, highlighted for `match`, from one evaluation of it.

        `+rowid` keeps SQLite from running the MATCH once per row (a prefix query would
        expand its terms each time); instead the matches are filtered as they stream by."""
        if not rowids:
            return {}
        marks = ", ".join("?" * len(rowids))
        found: dict[int, str] = {}
        # FTS5's snippet() costs the square of a word's occurrences in one text (a pasted log
        # with the word on every line: 40,000 hits take 10 s). A body that long gets its
        # beginning instead, like a hit without a match (linear time on user text).
        long_bodies = {row[0] for row in self.conn.execute(
            f"SELECT rowid FROM fts WHERE rowid IN ({marks}) AND length(body) > ?",
            (*rowids, SNIPPET_MAX_BODY))}
        rowids_to_mark = [rowid for rowid in rowids if rowid not in long_bodies]
        marks = ", ".join("?" * len(rowids_to_mark))
        if match is not None and rowids_to_mark:
            for rowid, body, title in self.conn.execute(
                    f"SELECT rowid, snippet(fts, 2, char(2), char(3), '…', {SNIPPET_TOKENS}),"
                    f" highlight(fts, 0, char(2), char(3)) FROM fts"
                    f" WHERE fts MATCH ? AND +rowid IN ({marks})", (match, *rowids_to_mark)):
                if OPEN not in body and OPEN in title:
                    body = title  # matched in the title only: show the title highlighted
                found[rowid] = _tidy(from_index(body))
        missing = [rowid for rowid in rowids if rowid not in found]
        if missing:
            marks = ", ".join("?" * len(missing))
            for rowid, body in self.conn.execute(
                    f"SELECT rowid, substr(body, 1, 4096) FROM fts WHERE rowid IN ({marks})",
                    missing):
                found[rowid] = _tidy(from_index(body), cut=160)
        return found

    def copied_snippets(self, rowids: list[int], match: str) -> dict[int, str]:
        """The snippets of `snippets`, taken from a copy of these rows (title, tags, body)."""
        conn = self.conn
        for statement in _SNIPPET_SETUP:
            conn.execute(statement)
        began = not conn.in_transaction
        if began:
            conn.execute("BEGIN")
        try:
            conn.execute("INSERT INTO temp.memctl_snip(memctl_snip) VALUES ('delete-all')")
            conn.execute("DELETE FROM temp.memctl_text")
            # A body too long for snippet() gets its beginning (`snippets`), so is not copied.
            conn.execute("INSERT INTO temp.memctl_text(rowid, title, tags, body) SELECT rowid,"
                         " title, tags, body FROM fts WHERE rowid IN (SELECT value FROM"
                         " json_each(?)) AND length(body) <= ?",
                         (json.dumps(rowids), SNIPPET_MAX_BODY))
            conn.execute("INSERT INTO temp.memctl_snip(rowid, title, tags, body)"
                         " SELECT rowid, title, tags, body FROM temp.memctl_text")
        finally:
            if began:
                conn.execute("COMMIT")
        found: dict[int, str] = {}
        for rowid, body, title in conn.execute(
                f"SELECT rowid, snippet(memctl_snip, 2, char(2), char(3), '…', {SNIPPET_TOKENS}),"
                f" highlight(memctl_snip, 0, char(2), char(3)) FROM temp.memctl_snip"
                f" WHERE memctl_snip MATCH ?", (match,)):
            if OPEN not in body and OPEN in title:
                body = title  # matched in the title only: show the title highlighted
            found[rowid] = _tidy(from_index(body))
        missing = [rowid for rowid in rowids if rowid not in found]
        if missing:
            found.update(self.snippets(missing, None))
        return found


_SNIPPET_SETUP = (
    "CREATE TABLE IF NOT EXISTS temp.memctl_text(rowid INTEGER PRIMARY KEY, title, tags, body)",
    f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.memctl_snip USING fts5(title, tags, body,"
    f" content='memctl_text', tokenize='{FTS_TOKENIZE}')",
)


def _tidy(text: str, cut: int | None = None) -> str:
    text = _SPACES.sub(" ", text).strip()
    if cut is not None and len(text) > cut:
        text = text[:cut].rstrip() + "…"
    return text


def _corrections_first(ctx: RankContext, hits: list[Hit]) -> list[Hit]:
    """Put each correction ahead of the hit it corrects; bring in missing corrections."""
    if not hits:
        return hits
    ids = [hit.id for hit in hits if hit.type != "correction"]
    present = {hit.id for hit in hits}
    if ids:
        marks = ", ".join("?" * len(ids))
        importance, recency, kind = ctx.factors_sql()
        # Without statistics the planner would walk the project's rows instead.
        sql = (f"SELECT {_COLUMNS}, NULL, {importance}, {recency}, {kind} FROM docs d"
               f" INDEXED BY docs_corrects WHERE d.corrects IS NOT NULL AND d.corrects IN ({marks})"
               f" AND d.type = 'correction' AND {ctx.where}")
        for row in ctx.conn.execute(sql, [*ids, *ctx.params]):
            hit = ctx._hit(row)
            if hit.id not in present:
                # Brought in for the hit it corrects, not for the query's words.
                hit.snippet_marked = ctx.snippets([hit.rowid], None).get(hit.rowid, "")
                hit.score = 0.0
                hit.coverage, hit.exact = 0.0, False
                if hit.explain is not None:
                    hit.explain.update({"coverage": 0.0, "exact": False,
                                        "brought_in_for": hit.corrects})
                hits.append(hit)
                present.add(hit.id)
    order = list(hits)
    # Each hit's fact as `add` compares it (vocab.fact_key), made once, not per pair.
    facts = {id(h): (fact_key(h.subject), fact_key(h.predicate)) for h in hits
             if h.subject and h.predicate}
    for correction in [h for h in hits if h.type == "correction"]:
        fact = facts.get(id(correction))
        targets = [h for h in order if h is not correction and h.type != "correction" and (
            (correction.corrects and h.id == correction.corrects)
            or (fact is not None and facts.get(id(h)) == fact))]
        if not targets:
            continue
        first = min(order.index(t) for t in targets)
        if order.index(correction) > first:
            order.remove(correction)
            order.insert(first, correction)
            correction.score = max(correction.score, order[first + 1].score)
            if correction.explain is not None:
                correction.explain["placed_ahead_of"] = [t.id for t in targets]
                correction.explain["score"] = round(correction.score, 6)
    return order


def _best_match(ctx: RankContext, parsed: Query, periods: list[Period]) -> list[Hit]:
    """Every entry matching a unit of the query, ranked by BM25 and the factors times its
    coverage of the query (`memctl.index.bestmatch`)."""
    size = max(ctx.limit, bestmatch.CANDIDATES)
    # The words as typed: worth a query only when no function word was left out (a question
    # as typed, `的` and `what` included, is almost never in a note, and its long phrase is
    # the costliest thing to look for).
    strict_match = parsed.match if parsed.plain else None
    strict = ctx.run(strict_match, limit=size, snippets=False) if strict_match else []
    if not periods and (len(strict) >= bestmatch.STRICT_ENOUGH
                        or (strict and parsed.any_match == parsed.match
                            and not any(unit.begins for unit in parsed.units))):
        # Enough notes have every word as typed (a keyword search): they cover the whole
        # query, so no partial match could rank among them (coverage³ × the exact bonus).
        # Not when the query names a date: the notes written then are one more unit. Never
        # "enough" by the limit: this way ranks by BM25 over every word, the other over the
        # rarest units, so `--limit 1` took this way where the default did not and gave
        # another first hit (tests/test_questions.py).
        for hit in strict:
            hit.score *= bestmatch.EXACT_BONUS
            if hit.explain is not None:
                hit.explain.update({"coverage": 1.0, "coverage_power": bestmatch.COVERAGE_POWER,
                                    "matched": [u.label for u in parsed.units],
                                    "exact": True, "exact_factor": bestmatch.EXACT_BONUS,
                                    "fact": False, "fact_factor": 1.0})
        _rank_named_facts(parsed, strict)
        best = sorted(strict, key=lambda hit: (-hit.score, hit.id))[:ctx.limit]
        ctx.add_snippets(best, parsed.match)
        return best
    ranker = bestmatch.BestMatch(ctx.conn, ctx.scope_match, ctx.projects)
    units = list(parsed.units)
    # Which entries in scope have each unit, read once per unit (no ranking, no join): the
    # coverage of every entry, exactly, and how rare each unit is where the search looks.
    found = _unit_rows(ranker, units)
    # A word said again in another form (`connect: connection refused`, `deploy deploying`)
    # is one unit: counted twice, it doubled the weight of the notes that have it against
    # the one with the error line's port (bench/bench_retrieval.py, `pasted`).
    repeats = _repeated_words(ranker, units, found)
    if repeats:
        units = [unit for number, unit in enumerate(units) if number not in repeats]
        found = [rows for number, rows in enumerate(found) if number not in repeats]
    typed = len(units)
    weights = [ranker.rarity(len(rows)) * unit.share
               for unit, rows in zip(units, found, strict=True)]
    slots = list(range(len(units)))
    slot_weights: dict[int, float] = {}
    stems = _stems(ranker, units, found)
    # A word also matches the words it begins (`migr` → migration), as a lesser match; a
    # word no note has but that begins some is not looked for as a misspelling, nor is a
    # word of a date (`October` is not a misspelt `octo`).
    date_words = {slot for slot, unit in enumerate(units)
                  if any(bare(unit.text) in period.text.lower() for period in periods)}
    beginnings = _word_beginnings(ranker, units, stems, weights, slot_weights, date_words)
    completed = {slot for slot, _, _, _ in beginnings} | date_words
    # The notes of each date the query names, read before any misspelling is looked for.
    period_rows = [ranker.dated_rows(period.first, period.last) for period in periods]
    if periods and not any(found) and not beginnings and not any(period_rows):
        # A query naming a date (any form `memctl.core.dates` reads) that nothing matches has
        # no result: nothing was written then, and its other words are not looked for as
        # misspellings, here or in the fallback (`search`; docs/search.md "Dates in a query").
        return []
    # The typo fallback, word by word: a word the index does not have at all is matched by
    # its closest words. The misspelt word counts as much as the rarest of them; a note
    # matching one gets that times how close the word it has is.
    alternatives = [(slot, unit, closeness, ranker.rows(unit.match)) for slot, unit, closeness
                    in _close_units(ranker, units, stems, found, skip=completed)]
    # A pasted path, address or assignment no note has whole (`src/db/pool.ts:42:13`,
    # `localhost:5432`, `AWS_PROFILE=staging`): matched by its longest runs of parts that
    # notes have, each weighed by its own rarity, as a word of the query is (`10` of an
    # address is everywhere, its port is not), times the words its parts are worth
    # (`_run_parts`): the host `s3-prod-03.internal` of `ubuntu@s3-prod-03.internal`, four
    # parts in a row in one note, weighed one word's worth and lost to a note saying
    # `permissions` (hit@1 of pasted errors 75 → 83 % English, 54 → 75 % Chinese stores,
    # bench/bench_retrieval.py). Not also by the share of the word's parts a run keeps: that
    # cut the hit@1 of pasted errors from 67 % to 42 % (English) and from 46 % to 17 %.
    parts = [(slot, unit, _run_parts(unit.text, len(rows)), rows)
             for slot, unit, rows in _part_units(ranker, units, found, skip=completed)]
    for slot, _unit, _closeness, rows in alternatives:
        # As the word's own share (a word after the question's mark weighs AFTER_SHARE).
        slot_weights[slot] = max(slot_weights.get(slot, 0.0),
                                 ranker.rarity(len(rows)) * units[slot].share)
    for slot, _unit, length, rows in parts:
        slot_weights[slot] = max(slot_weights.get(slot, 0.0),
                                 ranker.rarity(len(rows)) * units[slot].share * length)
    for slot, unit, closeness, rows in alternatives:
        units.append(unit)
        weights.append(slot_weights[slot] * closeness)
        slots.append(slot)
        found.append(rows)
    for slot, unit, length, rows in parts:
        units.append(unit)
        weights.append(ranker.rarity(len(rows)) * units[slot].share * length)
        slots.append(slot)
        found.append(rows)
    alternatives += parts
    begun: dict[int, int] = {}  # slot → its beginnings unit
    for slot, unit, weight, rows in beginnings:
        begun[slot] = len(units)
        units.append(unit)
        weights.append(weight)
        slots.append(slot)
        found.append(rows)
    # A date the query names (`in August 2023`, `10月13日`) is one more thing to match: the
    # notes written then (memctl.core.dates), weighed by their rarity like a word. FTS5 has
    # no such word, so its part of BM25 is added beside the words' (`dated`): as a word
    # found once in a note's text would count (DATE_BM25 times its rarity), so a note of that
    # day is ranked, not dropped for having none of the words BM25 is computed over, and is
    # never left out for one that covers less.
    dated_slots: set[int] = set()
    dated: dict[int, float] = {}
    # A query that is a date and nothing else (`2026-10`): a note written then answers it as
    # well as one that says it, however many notes were written then (as rare as the word,
    # the date is never too common to rank; tests/test_questions.py).
    said = max((weights[slot] for slot in date_words), default=0.0) \
        if periods and len(date_words) == typed else 0.0
    for number, (period, rows) in enumerate(zip(periods, period_rows, strict=True)):
        slot = typed + number  # after the slots of the units as typed
        weight = max(ranker.rarity(len(rows)), said) if rows else 0.0
        units.append(Unit("", period.text, period.label))
        weights.append(weight)
        slots.append(slot)
        found.append(rows)
        dated_slots.add(slot)
        for rowid in rows:
            dated[rowid] = dated.get(rowid, 0.0) + weight * bestmatch.DATE_BM25
    extra = [unit for _, unit, _, _ in alternatives] + [unit for _, unit, _, _ in beginnings]
    excluded = ranker.rows(parsed.negative) if parsed.negative else set()
    covered = bestmatch.Covered(units, found, weights, slots, slot_weights, excluded)
    best_weight = _best_covered(ctx, covered.levels)
    if best_weight is None:
        return []
    # Nothing rather than noise: an entry covering less than RELATIVE_FLOOR of what the best
    # one covers is left out (the best is always kept: a question with any matching word has
    # a result), and so is one matching only the query's commonest words, which together
    # weigh less than COMMON_FLOOR of it (`common`: they do not rank the candidates; a date
    # among them too). The candidates are the entries covering the most, level by level,
    # from the best that passes the filters (the levels above it have none that does),
    # until there are POOL of them: none is left out for one that covers less.
    floor = bestmatch.RELATIVE_FLOOR * best_weight
    common = covered.needless_slots(bestmatch.COMMON_FLOOR * best_weight)
    needless = common | dated_slots  # (a date's part of BM25 is added apart: `dated`)
    free = [number for number, unit in enumerate(units) if not unit.required]
    # (A quoted phrase the candidates all have tells them apart as any word does.)
    telling = set().union(*(found[number] for number in range(len(units))
                            if slots[number] not in common))
    worded = set().union(*(found[number] for number in free if slots[number] not in needless))
    pool: list[tuple[float, set[int]]] = []
    pooled = 0
    for weight, rowids in covered.levels:
        if weight > best_weight * (1 + 1e-9):
            continue  # (no entry of it passes the filters: `_best_covered`)
        if weight < floor * (1 - 1e-9) or pooled >= bestmatch.POOL:
            break
        rowids = rowids & telling
        if rowids:
            pool.append((weight, rowids))
            pooled += len(rowids)
    ranked = _ranking_units(units, found, slots, typed, begun, needless,
                            set().union(*(r for _, r in pool)) & worded)
    # BM25 in `fts` for the words, in `fts_pairs` for the pairs of CJK characters, summed.
    required = [units[number].match for number in ranked if units[number].required]
    optional = [units[number].match for number in ranked
                if not units[number].required and units[number].pair is None]
    pairs = [bestmatch.pair_match(units[number].pair) for number in ranked
             if units[number].pair is not None]
    ranking = every_phrase_and_any_unit(required, optional)
    if ranking and parsed.negative:
        ranking = f"({ranking}) NOT ({parsed.negative})"
    exact = ranker.rows(strict_match) if strict_match else set()
    factors: list[tuple[float, set[int]]] = []
    for weight, rowids in pool:
        share = covered.share(weight)
        factors += [(bestmatch.factor(share, False), rowids - exact),
                    (bestmatch.factor(share, True), rowids & exact)]
    candidates = ctx.run_pool(ranking or None, factors, size, " OR ".join(pairs) or None, dated)
    fuzzy_labels = {unit.label for _, unit, _, _ in alternatives}
    ranked_labels = [units[number].label for number in ranked]
    for hit in candidates:
        hit.coverage = covered.share(next(weight for weight, rows in pool if hit.rowid in rows))
        hit.exact = hit.rowid in exact
        matched = covered.matched(hit.rowid)
        hit.fuzzy = not hit.exact and any(label in fuzzy_labels for label in matched)
        hit.score *= bestmatch.factor(hit.coverage, hit.exact)
        if hit.explain is not None:
            hit.explain.update({
                "coverage": round(hit.coverage, 4),
                "coverage_power": bestmatch.COVERAGE_POWER, "matched": matched,
                "bm25_units": ranked_labels, "exact": hit.exact,
                "exact_factor": bestmatch.EXACT_BONUS if hit.exact else 1.0,
                "fact": False, "fact_factor": 1.0})
    _rank_named_facts(parsed, candidates)
    candidates.sort(key=lambda hit: (-hit.score, hit.id))
    best = candidates[:ctx.limit]
    # (No words left: a query that is a date alone. Its snippets are the notes' beginnings.)
    ctx.add_snippets(best, parsed.matching_any([unit.match for unit in extra]) or None, copied=True)
    return best


def _repeated_words(ranker: bestmatch.BestMatch, units: list[Unit], found: list[set[int]]
                    ) -> set[int]:
    """The numbers of the words that say again what another word of the query says: the
    same stems, found in the same entries (`connect: connection refused`). Of each such
    group one word stays: the one with the largest share (a word said before and after a
    question's mark keeps its full weight), then one that also matches the words it begins
    (`config` of `configs config`: its `config…` finds `configuration`, as
    `_word_beginnings` allows), then the first."""
    bare = [number for number, unit in enumerate(units)
            if found[number] and not unit.required and unit.pair is None
            and unit.match.startswith('"') and not unit.match.endswith("*")
            and not has_cjk(unit.text)]
    if len(bare) < 2:
        return set()
    kept: dict[frozenset[str], tuple[int, tuple[float, bool]]] = {}
    repeats: set[int] = set()
    for number, words in zip(bare, ranker.stems([units[n].text for n in bare]), strict=True):
        unit = units[number]
        begins = unit.begins is not None and len(words) == 1 \
            and len(next(iter(words))) == len(unit.text)
        rank = (unit.share, begins)
        key = frozenset(words)
        first, first_rank = kept.setdefault(key, (number, rank))
        if first == number or found[first] != found[number]:
            continue
        if rank > first_rank:
            kept[key] = (number, rank)
            repeats.add(first)
        else:
            repeats.add(number)
    return repeats


def _date_text(parsed: Query) -> str:
    """The words a date is read from: the query's words as typed, not a quoted phrase (words to
    find as typed), a prefix, an excluded word (`NOT 2026-03-04`) or a filter (`tag:2026-03`)."""
    return " ".join(term.text for term in parsed.terms
                    if not (term.phrase or term.prefix or term.negated))


def _unit_rows(ranker: bestmatch.BestMatch, units: list[Unit]) -> list[set[int]]:
    """Each unit's entries in scope. A run of Chinese is looked for only when each of its
    pairs is in some entry (a pair none has: neither has the run; the unspaced questions'
    runs often span two words, and a phrase of common characters is costly to look for).
    The pairs come before their run; a set of the ones no entry has keeps this linear in the
    query's length."""
    found: list[set[int]] = []
    missing: set[str] = set()  # the pieces of Chinese no entry has
    for unit in units:
        cjk = _is_cjk_phrase(unit)
        text = unit.text
        if cjk and any(text[at:at + 2] in missing for at in range(len(text) - 1)):
            rows: set[int] = set()
        else:
            rows = ranker.unit_rows(unit)
        if cjk and not rows:
            missing.add(text)
        found.append(rows)
    return found


def _is_cjk_phrase(unit: Unit) -> bool:
    """A unit that is a quoted run of CJK characters (each character a word of the index)."""
    return not unit.match.endswith("*") and unit.match.startswith('"') \
        and all(has_cjk(char) for char in unit.text)


def _ranking_units(units: list[Unit], found: list[set[int]], slots: list[int], typed: int,
                   begun: dict[int, int], needless: set[int], pool: set[int]) -> list[int]:
    """The units the candidates are ranked by (BM25): the rarest unit some candidate has,
    then the next rarest that a candidate not yet reached has, and so on: the units as typed
    before the beginnings and close words of a word, the units of `needless` slots never (no
    candidate matches only those). `pool`: the candidates a word reaches. Each word taken
    brings the words it begins (BM25 counts both, as it always has), and every quoted phrase
    is in. The commoner units count in
    coverage only: BM25's idf reads each of its units' posting lists over the whole index,
    which for a common word or a pair of common characters was most of a question's time."""
    optional = [number for number, unit in enumerate(units)
                if found[number] and not unit.required and slots[number] not in needless]
    optional.sort(key=lambda number: (number >= typed, len(found[number]), number))
    chosen = [number for number, unit in enumerate(units) if unit.required and found[number]]
    uncovered = set(pool) if optional else set()
    for number in optional:
        if not uncovered:
            break
        if uncovered & found[number]:
            chosen.append(number)
            uncovered -= found[number]
            if number < typed and slots[number] in begun:
                chosen.append(begun[slots[number]])
    return sorted(set(chosen))


def _best_covered(ctx: RankContext, levels: list[tuple[float, set[int]]]) -> float | None:
    """The weight covered by the best entry in scope that passes the filters (status, type,
    tags…), or None when none does."""
    for weight, rows in levels:
        rowids = sorted(rows)
        for start in range(0, len(rowids), 500):
            if ctx.conn.execute(f"SELECT 1 FROM docs d WHERE d.rowid IN (SELECT value FROM"
                                f" json_each(?)) AND {ctx.where} LIMIT 1",
                                [json.dumps(rowids[start:start + 500]), *ctx.params]).fetchone():
                return weight
    return None


def _stems(ranker: bestmatch.BestMatch, units: list[Unit], found: list[set[int]]) -> list[set[str]]:
    """The stems of the units that may have beginnings or close words (bare words); none for
    the others."""
    wanted = [number for number, unit in enumerate(units)
              if unit.begins is not None or (not found[number] and not unit.required
                                             and unit.match.startswith('"')
                                             and not unit.match.endswith("*")
                                             and fuzzy.can_expand(unit.text))]
    stems: list[set[str]] = [set() for _ in units]
    if wanted:
        for number, words in zip(wanted, ranker.stems([units[n].text for n in wanted]),
                                 strict=True):
            stems[number] = words
    return stems


def _rank_named_facts(parsed: Query, hits: list[Hit]) -> None:
    """An exact fact first: a hit whose subject and predicate the query names."""
    asked = fact_key(parsed.raw)
    for hit in hits:
        if bestmatch.names_the_fact(asked, hit.subject, hit.predicate):
            hit.score *= bestmatch.FACT_BONUS
            if hit.explain is not None:
                hit.explain.update({"fact": True, "fact_factor": bestmatch.FACT_BONUS})
        if hit.explain is not None:
            hit.explain["score"] = round(hit.score, 6)


# A word the stemmer shortens by an ending of at most 2 letters to a stem this long has
# beginnings too: it may be the beginning of a longer word (`postgres` → postgr… →
# PostgreSQL). A shorter stem begins too many other words (`users` → user… → username), and
# a longer ending was an inflection (`authorization` → author… → authored, `listening` →
# listen… → listener: bench/bench_retrieval.py).
MIN_STEMMED_BEGINNING = 5
MAX_STEMMED_ENDING = 2


def _cut_short(word: str, stem: str) -> bool:
    """Whether the stemmer only cut a short ending off `word` (its stem a beginning of it)."""
    word = word.lower()
    return len(stem) >= MIN_STEMMED_BEGINNING and word.startswith(stem) \
        and len(word) - len(stem) <= MAX_STEMMED_ENDING


def _word_beginnings(ranker: bestmatch.BestMatch, units: list[Unit], stems: list[set[str]],
                     weights: list[float], slot_weights: dict[int, float],
                     date_words: set[int]) -> list[tuple[int, Unit, float, set[int]]]:
    """(slot, unit, weight, rows) for the words each bare word of the query begins, when the
    stemmer leaves the word whole (`migr`, `kube`, `deploy`; not `running`, whose stem `run`
    would begin `runtime`) or only cuts a short ending off it (`postgres`: `_cut_short`),
    and it is no word of a date the query names (`date_words`). Such a match counts PREFIX_SHARE of the word. For a word no note
    in scope has, the word's weight is the rarity of the words it begins (none: no unit, and
    the word is left to the misspelling search), recorded in `slot_weights`."""
    found = []
    for slot, (unit, weight) in enumerate(zip(units, weights, strict=True)):
        words = stems[slot]
        if unit.begins is None or len(words) != 1 or slot in date_words:
            continue  # (a word of a date the query names: `October` begins no `Octobr`)
        stem = next(iter(words))
        if len(stem) != len(unit.text) and not _cut_short(unit.text, stem):
            continue
        rows = ranker.rows(unit.begins)
        if weight == 0:
            weight = ranker.rarity(len(rows)) * unit.share
            if weight == 0:
                continue
            slot_weights[slot] = weight
        found.append((slot, Unit(unit.begins, unit.text, unit.text + "…"),
                      weight * bestmatch.PREFIX_SHARE, rows))
    return found


def _close_units(ranker: bestmatch.BestMatch, units: list[Unit], stems: list[set[str]],
                 found: list[set[int]], skip: set[int] | None = None
                 ) -> list[tuple[int, Unit, float]]:
    """(slot, unit, closeness 0-1) for the closest words of each word no note of the index
    has, found among the index's own terms that start alike. Those are stems, which the
    stemmer does not always leave as they are (`respons` would become `respon`): each is
    matched as a prefix of the index's terms, which the stemmer does not touch."""
    close = []
    for slot, unit in enumerate(units):
        words = stems[slot]
        if found[slot] or slot in (skip or ()) or unit.required or len(words) != 1 \
                or not unit.match.startswith('"') \
                or unit.match.endswith("*") or not fuzzy.can_expand(unit.text) \
                or ranker.in_index(unit.match):
            continue
        stem = next(iter(words))
        # Only the nearest: `postgress` is `postgres`/`postgresql`, not `progress`.
        cutoff = fuzzy.cutoff_for(unit.text)  # (the stem has lost the word's capitals)
        for word, score in fuzzy.close_words(stem, ranker.similar_terms(stem), cutoff):
            close.append((slot, Unit('"' + word.replace('"', '""') + '" *', word,
                                     f"{unit.text}→{word}"), score / 100.0))
    return close


# The parts of a word as the index's tokenizer (unicode61) cuts it: runs of letters and
# digits; `_`, `.`, `/`, `:`, `=`, `@` and the rest separate them.
_PART = re.compile(r"[^\W_]+")
# The parts of such a word looked at (its first ones), and the lookups of runs of parts one
# search makes at most: a bounded cost whatever the query (linear time on user text; 32
# words of 16 parts each, every part a word of the index, is the worst case).
MAX_PARTS = 16
MAX_RUN_LOOKUPS = 160


def _part_units(ranker: bestmatch.BestMatch, units: list[Unit], found: list[set[int]],
                skip: set[int] | None = None) -> list[tuple[int, Unit, set[int]]]:
    """(slot, unit, rows) for each word of several parts that no entry in scope has whole
    (a pasted path, address or assignment): the longest runs of its parts that entries have
    (`src/db/pool.ts` of `src/db/pool.ts:42:13`, `5432` of `localhost:5432`,
    `db-stg-03.internal` of `postgres://app@db-stg-03.internal:5432/app`). Shown as close
    ones are (docs/search.md, "Pasted paths and addresses")."""
    out: list[tuple[int, Unit, set[int]]] = []
    budget = [MAX_RUN_LOOKUPS]
    for slot, unit in enumerate(units):
        if found[slot] or slot in (skip or ()) or unit.required or unit.pair is not None \
                or not unit.match.startswith('"') or unit.match.endswith("*") \
                or has_cjk(unit.text):
            continue
        parts = [match.span() for match in _PART.finditer(unit.text)]
        if len(parts) < 2:
            continue
        for piece, rows in _longest_runs(ranker, unit.text, parts[:MAX_PARTS], budget):
            out.append((slot, Unit(fts_phrase(piece), piece, f"{unit.text}→{piece}"), rows))
    return out


def _longest_runs(ranker: bestmatch.BestMatch, text: str, parts: list[tuple[int, int]],
                  budget: list[int]) -> list[tuple[str, set[int]]]:
    """The runs of `parts` (fewer than all of them), as long as can be, that entries in
    scope have: (their text, their rows); none when no entry has even one part (a part
    alone only when it is no function word and no number of one or two digits). Only runs
    of parts the index has at all are looked up, while `budget` (the lookups left to the
    search) lasts."""
    known = [ranker.in_index(fts_phrase(text[start:end])) for start, end in parts]
    for length in range(len(parts) - 1, 0, -1):
        runs: dict[str, set[int]] = {}
        for start in range(len(parts) - length + 1):
            piece = text[parts[start][0]:parts[start + length - 1][1]]
            if piece in runs or not all(known[start:start + length]) \
                    or length == 1 and (is_english_stop(piece) or _small_number(piece)):
                continue
            if budget[0] <= 0:
                return list(runs.items())
            budget[0] -= 1
            rows = ranker.rows(fts_phrase(piece))
            if rows:
                runs[piece] = rows
        if runs:
            return list(runs.items())
    return []


def _run_parts(run: str, entries: int) -> float:
    """The words a run of a pasted word's parts counts for: all its parts when one entry has
    it (a host, a path: that entry's name), its parts beyond the first shared out among the
    entries that have it otherwise, so a prefix many notes share (`https://github.com/acme/
    api/pull` of a pull request's link) counts little more than a word (tests/test_questions.py:
    `…several_parts_outweighs_a_common_word`, `…link_prefix_many_notes_share…`)."""
    return 1.0 + (len(_PART.findall(run)) - 1) / max(1, entries)


def _small_number(part: str) -> bool:
    """A number of one or two digits: alone, it stands for no address (`10` of
    `10.3.175.210:9009`, `42` of a line number) and is in every note that counts something."""
    return len(part) <= 2 and part.isdigit()


def _fuzzy_fallback(ctx: RankContext, parsed: Query) -> list[Hit]:
    """No exact hit: run again with each word OR its close words (`memctl.index.fuzzy`)."""
    # The vocabulary kept with the index, read for the projects in scope and the lengths
    # that could be close: not every title in scope at each miss (memctl.index.fuzzy).
    # A quoted phrase is required as typed (docs/search.md), here too: `"pool connection"`
    # was taken for a misspelt `connection` and listed notes without the phrase.
    # A phrase one of an OR group (`"pool connection" OR kafak`) is no required unit: it
    # stays one of the words, or the fallback required it and the close words of the other
    # side found nothing.
    phrases = [unit.match for unit in parsed.units if unit.required]
    alone = {unit.text for unit in parsed.units if unit.required}
    words = [term.text for term in parsed.terms
             if not term.negated and not (term.phrase and term.text in alone)]
    expansion = fuzzy.expand(words,
                             lambda word: fuzzy.stored_words(ctx.conn, ctx.projects, word))
    if expansion is None:
        return []

    def required(match: str) -> str:
        return " AND ".join([*phrases, f"({match})"]) if phrases else match

    # An excluded word (`-mysql`) holds here too: the close words of `postgres` found the
    # note saying "PostgreSQL instead of MySQL" (tests/test_search.py).
    hits = ctx.run(parsed.without_negative(required(expansion.all_of())))
    if not hits and len(expansion.groups) > 1:
        hits = ctx.run(parsed.without_negative(required(expansion.any_of())))
    for hit in hits:
        hit.fuzzy = True
        hit.exact = False
        if hit.explain is not None:
            hit.explain["fuzzy"] = expansion.used
    return hits
