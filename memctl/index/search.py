"""Ranked search over the index, in one SQL query.

score = -bm25(title ×4, tags ×2, body ×1) × importance factor × recency factor × type factor
- importance factor: 0.5 + importance / 10 (1 → 0.6, 5 → 1.0, 10 → 1.5);
- recency factor: 0.4 + 0.6 × 0.5^(age / half-life), age from `updated`, half-life the
  `search.recency_half_life_days` setting: an old note keeps 40 % of its weight, never 0;
- type factor: 1.25 for a correction; a correction is also placed ahead of the note it
  corrects (`corrects: <id>`, or the same subject and predicate), and brought in when that
  note is a hit and the correction is not.
Scope: the project plus `global` unless told otherwise; superseded, archived and expired
entries only with `include_stale`. With no hit, words are matched fuzzily against the words
of titles, tags and subjects (`postgress` → PostgreSQL) and the search runs again.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from memctl.core import arguments
from memctl.core.clock import now
from memctl.core.query import Query, Unit, parse
from memctl.core.tokenize import from_index, scope_token
from memctl.core.vocab import MAX_LIMIT
from memctl.disk.layout import GLOBAL
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
    import json

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
        subjects=parsed.subjects, predicates=parsed.predicates)
    half_life = _half_life_days(store) * 86400.0
    ctx = RankContext(index.conn, where, params, now_ts, half_life, limit, explain)
    if scope is not None:
        ctx.scope_match = " OR ".join(scope_token(name) for name in scope)
        ctx.projects = scope
    if parsed.any_match is not None:
        hits = _best_match(ctx, parsed)
    else:
        hits = ctx.run(parsed.match, parsed.exclude)
    if not hits and parsed.words:
        hits = _fuzzy_fallback(ctx, parsed)
    hits = _corrections_first(ctx, hits)
    for hit in hits:
        if isinstance(hit.tags, str):
            hit.tags = json.loads(hit.tags)
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
            snippets: bool = True, rowids: list[int] | None = None) -> list[Hit]:
        """Hits for an FTS5 MATCH (or, with none, every entry in scope but `exclude`), best
        first by BM25 and the factors."""
        limit = self.limit if limit is None else limit
        importance, recency, kind = self.factors_sql()
        scoped = match
        if match is not None:
            rank = "bm25(fts, " + ", ".join(map(str, WEIGHTS)) + ")"
            if self.scope_match is not None:
                scoped = f"({match}) AND scope : ({self.scope_match})"
            among = ""
            if rowids is not None:
                among = f" AND +fts.rowid IN ({', '.join('?' * len(rowids))})"
            sql = (f"SELECT {_COLUMNS}, {rank}, {importance}, {recency}, {kind}"
                   f" FROM fts JOIN docs d ON d.rowid = fts.rowid"
                   f" WHERE fts MATCH ? AND {self.where}{among}"
                   f" ORDER BY {rank} * {importance} * {recency} * {kind}, d.id LIMIT ?")
            params = [scoped, *self.params, *(rowids or ()), limit]
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

    def add_snippets(self, hits: list[Hit], match: str | None) -> None:
        scoped = match
        if match is not None and self.scope_match is not None:
            scoped = f"({match}) AND scope : ({self.scope_match})"
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
                hit.snippet_marked = ctx.snippets([hit.rowid], None).get(hit.rowid, "")
                hit.score = 0.0
                hits.append(hit)
                present.add(hit.id)
    order = list(hits)
    for correction in [h for h in hits if h.type == "correction"]:
        targets = [h for h in order if h is not correction and h.type != "correction" and (
            (correction.corrects and h.id == correction.corrects)
            or (correction.subject and correction.predicate
                and (h.subject, h.predicate) == (correction.subject, correction.predicate)))]
        if not targets:
            continue
        first = min(order.index(t) for t in targets)
        if order.index(correction) > first:
            order.remove(correction)
            order.insert(first, correction)
            correction.score = max(correction.score, order[first + 1].score)
            if correction.explain is not None:
                correction.explain["placed_ahead_of"] = [t.id for t in targets]
    return order


def _best_match(ctx: RankContext, parsed: Query) -> list[Hit]:
    """Every entry matching a unit of the query, ranked by BM25 and the factors times its
    coverage of the query (`memctl.index.bestmatch`)."""
    size = max(ctx.limit, bestmatch.CANDIDATES)
    # The words as typed: worth a query only when no function word was left out (a question
    # as typed, `的` and `what` included, is almost never in a note, and its long phrase is
    # the costliest thing to look for).
    strict_match = parsed.match if parsed.plain else None
    strict = ctx.run(strict_match, limit=size, snippets=False) if strict_match else []
    if len(strict) >= min(ctx.limit, bestmatch.STRICT_ENOUGH) \
            or (strict and parsed.any_match == parsed.match
                and not any(unit.begins for unit in parsed.units)):
        # Enough notes have every word as typed (a keyword search): they cover the whole
        # query, so no partial match could rank among them (coverage² × the exact bonus).
        for hit in strict:
            hit.score *= bestmatch.EXACT_BONUS
            if hit.explain is not None:
                hit.explain.update({"coverage": 1.0, "matched": [u.label for u in parsed.units],
                                    "exact": True, "exact_factor": bestmatch.EXACT_BONUS,
                                    "fact": False, "fact_factor": 1.0})
        _rank_named_facts(parsed, strict)
        best = sorted(strict, key=lambda hit: (-hit.score, hit.id))[:ctx.limit]
        ctx.add_snippets(best, parsed.match)
        return best
    ranker = bestmatch.BestMatch(ctx.conn)
    units = list(parsed.units)
    weights = ranker.weights(units)
    slots = list(range(len(units)))
    slot_weights: dict[int, float] = {}
    # A word also matches the words it begins (`migr` → migration), as a lesser match; a
    # word no note has but that begins some is not looked for as a misspelling.
    beginnings = _word_beginnings(ranker, units, weights, slot_weights)
    completed = {slot for slot, _, _ in beginnings}
    # The typo fallback, word by word: a word the index does not have at all is matched by
    # its closest words. The misspelt word counts as much as the rarest of them; a note
    # matching one gets that times how close the word it has is.
    alternatives = _close_units(ranker, units, weights, skip=completed)
    extra = [unit for _, unit, _ in alternatives]
    alternative_weights = ranker.term_weights([unit.text for unit in extra])
    for (slot, _unit, _closeness), weight in zip(alternatives, alternative_weights, strict=True):
        slot_weights[slot] = max(slot_weights.get(slot, 0.0), weight)
    for slot, unit, closeness in alternatives:
        units.append(unit)
        weights.append(slot_weights[slot] * closeness)
        slots.append(slot)
    for slot, unit, weight in beginnings:
        units.append(unit)
        weights.append(weight)
        slots.append(slot)
    expression = parsed.matching_any([unit.match for unit in extra + [u for _, u, _ in beginnings]])
    candidates = ctx.run(expression, limit=size, snippets=False)
    if strict:
        # The strict matches are always candidates, however many notes match some word of
        # the query with a better BM25; scored again by the same expression as the others.
        known = {hit.rowid for hit in candidates}
        missing = [hit.rowid for hit in strict if hit.rowid not in known]
        if missing:
            candidates += ctx.run(expression, limit=len(missing), snippets=False, rowids=missing)
    if not candidates:
        return []
    fuzzy_labels = {unit.label for unit in extra}
    covered = ranker.coverage([hit.rowid for hit in candidates], units, weights,
                              strict_match, slots, slot_weights)
    for hit in candidates:
        coverage = covered[hit.rowid]
        hit.coverage = coverage.share
        hit.exact = coverage.exact
        hit.fuzzy = not coverage.exact and any(label in fuzzy_labels for label in coverage.matched)
        hit.score *= bestmatch.factor(coverage)
        if hit.explain is not None:
            hit.explain.update({
                "coverage": round(coverage.share, 4), "matched": coverage.matched,
                "exact": coverage.exact,
                "exact_factor": bestmatch.EXACT_BONUS if coverage.exact else 1.0,
                "fact": False, "fact_factor": 1.0})
    _rank_named_facts(parsed, candidates)
    # Nothing rather than noise: a hit covering far less of the query than the best one is
    # left out (the best is always kept, so a question with any matching word has a result).
    floor = bestmatch.RELATIVE_FLOOR * max(hit.coverage for hit in candidates)
    kept = [hit for hit in candidates if hit.coverage >= floor]
    kept.sort(key=lambda hit: (-hit.score, hit.id))
    best = kept[:ctx.limit]
    ctx.add_snippets(best, expression)
    return best


def _rank_named_facts(parsed: Query, hits: list[Hit]) -> None:
    """An exact fact first: a hit whose subject and predicate the query names."""
    for hit in hits:
        if bestmatch.names_the_fact(parsed.raw, hit.subject, hit.predicate):
            hit.score *= bestmatch.FACT_BONUS
            if hit.explain is not None:
                hit.explain.update({"fact": True, "fact_factor": bestmatch.FACT_BONUS})
        if hit.explain is not None:
            hit.explain["score"] = round(hit.score, 6)


def _word_beginnings(ranker: bestmatch.BestMatch, units: list[Unit], weights: list[float],
                     slot_weights: dict[int, float]) -> list[tuple[int, Unit, float]]:
    """(slot, unit, weight) for the words each bare word of the query begins, when the stemmer
    leaves the word whole (`migr`, `kube`, `deploy`; not `running`, whose stem `run` would
    begin `runtime`). Such a match counts PREFIX_SHARE of the word. For a word no note has,
    the word's weight is the rarity of the words it begins (one FTS5 count; none: no unit,
    and the word is left to the misspelling search), recorded in `slot_weights`."""
    found = []
    for slot, (unit, weight) in enumerate(zip(units, weights, strict=True)):
        stems = ranker.tokens.get(slot, set())
        if unit.begins is None or len(stems) != 1 or len(next(iter(stems))) != len(unit.text):
            continue
        if weight == 0:
            weight = ranker.match_weight(unit.begins)
            if weight == 0:
                continue
            slot_weights[slot] = weight
        found.append((slot, Unit(unit.begins, unit.text, unit.text + "…"),
                      weight * bestmatch.PREFIX_SHARE))
    return found


def _close_units(ranker: bestmatch.BestMatch, units: list[Unit], weights: list[float],
                 skip: set[int] | None = None) -> list[tuple[int, Unit, float]]:
    """(slot, unit, closeness 0-1) for the closest words of each unit no note has, found
    among the index's own terms that start alike. Those are stems, which the stemmer does not
    always leave as they are (`respons` would become `respon`): each is matched as a prefix
    of the index's terms, which the stemmer does not touch."""
    found = []
    for slot, (unit, weight) in enumerate(zip(units, weights, strict=True)):
        stems = ranker.tokens.get(slot, set())
        if weight != 0 or slot in (skip or ()) or unit.required or len(stems) != 1 \
                or not unit.match.startswith('"') \
                or unit.match.endswith("*") or not fuzzy.can_expand(unit.text):
            continue
        stem = next(iter(stems))
        # Only the nearest: `postgress` is `postgres`/`postgresql`, not `progress`.
        for word, score in fuzzy.close_words(stem, ranker.similar_terms(stem)):
            found.append((slot, Unit('"' + word.replace('"', '""') + '" *', word,
                                     f"{unit.text}→{word}"), score / 100.0))
    return found


def _fuzzy_fallback(ctx: RankContext, parsed: Query) -> list[Hit]:
    """No exact hit: run again with each word OR its close words (`memctl.index.fuzzy`)."""
    # The vocabulary kept with the index, read for the projects in scope and the lengths
    # that could be close: not every title in scope at each miss (memctl.index.fuzzy).
    expansion = fuzzy.expand(parsed.words,
                             lambda word: fuzzy.stored_words(ctx.conn, ctx.projects, word))
    if expansion is None:
        return []
    hits = ctx.run(expansion.all_of())
    if not hits and len(expansion.groups) > 1:
        hits = ctx.run(expansion.any_of())
    for hit in hits:
        hit.fuzzy = True
        hit.exact = False
        if hit.explain is not None:
            hit.explain["fuzzy"] = expansion.used
    return hits
