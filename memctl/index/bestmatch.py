"""Best-match ranking: which entries a query's units reach and how much of it each covers
(docs/search.md, "Best match").

Each unit's entries in the projects searched are read once, as a set of rowids (`BestMatch.
rows`: one read of its posting lists, no ranking). From those sets come, exactly:
- each unit's weight, its rarity where the search looks (BM25's idf over the entries in
  scope; a word or a pair of characters counts as what it is, a phrase as itself);
- the coverage of every entry (`Covered`): the weight of the units it matches over the weight
  of all, a slot (a word with its beginnings and close words) counted once by its best unit;
- the candidates: the entries covering the most, level by level, until there are POOL of
  them, none covering less than RELATIVE_FLOOR of the best, nor matching only the query's
  commonest words (together less than COMMON_FLOOR of the best). An entry is never left out
  for one that covers less.
The candidates are then ranked by BM25 and the usual factors times coverage³ in one query,
BM25 over the rarest units that reach every candidate (`memctl.index.search._ranking_units`):
BM25's idf reads each of its units' posting lists over the whole index, which for a common
word or a pair of common characters was most of a question's time. A note matching three of
four rare words then beats one matching the two commonest, and one that has every word as
typed (the strict `match`) gets a bonus on top. A bare word also matches the words it begins
(`migr` → migration), at PREFIX_SHARE of its weight (`memctl.index.search._word_beginnings`).

Everything runs in SQLite with the index's own tokenizer (stems, CJK characters); the scratch
tables are TEMP tables of the index connection (never written to the index file).
"""

from __future__ import annotations

import json
import math
import sqlite3

from memctl.core.query import Unit
from memctl.core.tokenize import FTS_TOKENIZE, to_index
from memctl.core.vocab import fact_key

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (start-up)
if TYPE_CHECKING:
    from collections.abc import Sequence

CANDIDATES = 60  # rows ranked in full, then by coverage and facts (at least the search's limit)
POOL = 200  # candidates ranked by BM25: the best-covering entries, whole levels, at least this many
STRICT_ENOUGH = 5  # this many notes with every word as typed: partial matches are not looked for
COVERAGE_POWER = 3.0  # score × coverage³: half the query's weight matched → an eighth
EXACT_BONUS = 1.25  # every word as typed (the strict match)
RELATIVE_FLOOR = 0.3  # hits covering less than 30 % of what the best hit covers are left out
COMMON_FLOOR = 0.4  # ...and so are those matching only the commonest words, together < 40 % of it
FACT_BONUS = 2.0  # the query names the note's subject and predicate: an exact fact
PREFIX_SHARE = 0.5  # a word matched only as the beginning of a longer word counts half
MAX_DATED = 2000  # a period holding more notes in scope tells too little apart to be read
DATE_BM25 = 5.0  # a note written on a date the query names: BM25 of its rarity, as for a word found
# once in both the title and the body (weights 4 + 1: memctl.index.search.WEIGHTS)

_SETUP = (
    f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.memctl_stems USING fts5(x, content='',"
    f" tokenize='{FTS_TOKENIZE}')",
    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.memctl_stems_v USING fts5vocab(temp, memctl_stems,"
    " instance)",
    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.memctl_vocab USING fts5vocab(main, fts, row)",
    "CREATE TABLE IF NOT EXISTS temp.memctl_pool(rowid INTEGER PRIMARY KEY, factor REAL NOT NULL)",
    "CREATE TABLE IF NOT EXISTS temp.memctl_dated(rowid INTEGER PRIMARY KEY, score REAL NOT NULL)",
)


class BestMatch:
    """The rows of a query's units and their rarity, on one index connection, in the projects
    searched (`projects`, and `scope_match` the FTS5 condition on the scope column that says
    the same; None: every project)."""

    def __init__(self, conn: sqlite3.Connection, scope_match: str | None = None,
                 projects: Sequence[str] | None = None) -> None:
        self.conn = conn
        self.scope_match = scope_match
        self.projects = projects
        for statement in _SETUP:
            conn.execute(statement)
        self._size: int | None = None  # entries in scope, counted once

    def rows(self, match: str, table: str = "fts") -> set[int]:
        """The entries in scope (rowids) that match an FTS5 expression: one read of its
        posting lists, no ranking, no join. The list is built by SQLite (json_group_array):
        a row at a time through Python costs three times as much for a common word."""
        found = self.conn.execute(f"SELECT json_group_array(rowid) FROM {table}"
                                  f" WHERE {table} MATCH ?",
                                  (in_scope(match, self.scope_match),)).fetchone()[0]
        return set(json.loads(found))

    def unit_rows(self, unit: Unit) -> set[int]:
        """The entries in scope that have a unit: a pair of CJK characters is one word of the
        pairs table, anything else its expression in `fts`."""
        if unit.pair is not None:
            return self.rows(pair_match(unit.pair), "fts_pairs")
        return self.rows(unit.match)

    def dated_rows(self, first: str, last: str) -> set[int]:
        """The notes and episodes in scope created or updated on a day from `first` to `last`
        (`YYYY-MM-DD`, inclusive), the day as the note writes it. Not MEMORY.md sections nor
        scratchpads: their only date is their file's, which a clone or a checkout changes.
        A range read of the index's `docs_project_created` and `docs_project_updated` per
        project, stopped after MAX_DATED notes: a period holding more (`in 2026` in a store
        of that year) is as common as the commonest words and would cost a read of every
        note: none."""
        projects = list(self.projects) if self.projects is not None else [
            project for (project,) in self.conn.execute("SELECT DISTINCT project FROM docs")]
        marks = ", ".join("?" * len(projects))
        rows: set[int] = set()
        for column in ("created", "updated"):
            found = self.conn.execute(
                f"SELECT json_group_array(rowid) FROM (SELECT rowid FROM docs"
                f" INDEXED BY docs_project_{column} WHERE project IN ({marks})"
                f" AND substr({column}, 1, 10) BETWEEN ? AND ? AND kind IN ('note', 'episode')"
                f" LIMIT ?)", [*projects, first, last, MAX_DATED + 1]).fetchone()[0]
            rows.update(json.loads(found))
            if len(rows) > MAX_DATED:
                break
        return rows if len(rows) <= MAX_DATED else set()

    def in_index(self, match: str) -> bool:
        """Whether any entry of the index, in any project, matches an FTS5 expression."""
        return self.conn.execute("SELECT 1 FROM fts WHERE fts MATCH ? LIMIT 1",
                                 (match,)).fetchone() is not None

    def rarity(self, count: int) -> float:
        """BM25's idf of something `count` entries in scope have (0 when none has it): the
        rarity where the search looks, read from the rows already found."""
        if count == 0:
            return 0.0
        if self._size is None:
            if self.projects is None:
                found = self.conn.execute("SELECT max(rowid) FROM fts").fetchone()
            else:  # every entry is a row of `docs` and of `fts`: the smaller index to count
                marks = ", ".join("?" * len(self.projects))
                found = self.conn.execute(f"SELECT count(*) FROM docs WHERE project IN ({marks})",
                                          list(self.projects)).fetchone()
            self._size = found[0] or 0
        size = max(self._size, count)
        return math.log(1 + (size - count + 0.5) / (count + 0.5))

    def stems(self, texts: Sequence[str]) -> list[set[str]]:
        """Each text's words as the index keeps them (stems, CJK characters)."""
        conn = self.conn
        conn.execute("INSERT INTO temp.memctl_stems(memctl_stems) VALUES ('delete-all')")
        conn.execute("INSERT INTO temp.memctl_stems(rowid, x) SELECT key, value FROM json_each(?)",
                     (json.dumps([to_index(text) for text in texts]),))
        tokens: list[set[str]] = [set() for _ in texts]
        for doc, term in conn.execute("SELECT doc, term FROM temp.memctl_stems_v"):
            tokens[doc].add(term)
        return tokens

    def similar_terms(self, stem: str, spread: int = 3) -> list[str]:
        """Terms of the index that begin with the same two characters as `stem` and are about
        as long: where a misspelling's right spelling is found. A range read of the index's
        term dictionary, so it costs the same whatever the size of the store."""
        start = stem[:2]
        if len(start) < 2:
            return []
        end = start[:-1] + chr(ord(start[-1]) + 1)
        return [term for (term,) in self.conn.execute(
            "SELECT term FROM temp.memctl_vocab WHERE term >= ? AND term < ?", (start, end))
            if abs(len(term) - len(stem)) <= spread]


def in_scope(match: str, scope_match: str | None) -> str:
    """An FTS5 expression limited to the projects searched (`scope_match`, the condition on
    the scope column; None: every project). Both `fts` and `fts_pairs` have that column."""
    return match if scope_match is None else f"({match}) AND scope : ({scope_match})"


def pair_match(pair: str) -> str:
    """The FTS5 expression of a pair of CJK characters in the pairs table (one token; CJK
    characters are never a double quote)."""
    return f'"{pair}"'


class Covered:
    """How much of a query every entry in scope covers, from the rows of its units."""

    def __init__(self, units: Sequence[Unit], found: Sequence[set[int]],
                 weights: Sequence[float], slots: Sequence[int],
                 slot_weights: dict[int, float] | None = None,
                 excluded: set[int] | None = None) -> None:
        """Units sharing a slot are alternatives (a word, its beginnings, its close words): a
        slot counts once, by the best unit of it an entry matches, against `slot_weights`
        (default: its best unit's weight). An entry must match every required unit (a quoted
        phrase), some other unit if there are no required ones (a phrase is a unit: a note
        with it and none of the other words is found, docs/search.md), and nothing
        `excluded`."""
        self.units, self.found, self.slots = units, found, slots
        full: dict[int, float] = {}
        for number, slot in enumerate(slots):
            full[slot] = max(full.get(slot, 0.0), weights[number])
        full.update(slot_weights or {})
        self.full = full  # each slot's weight
        self.total = sum(full.values())
        required = [found[n] for n, unit in enumerate(units) if unit.required]
        optional = [found[n] for n, unit in enumerate(units) if not unit.required]
        entries = set(required[0]) if required else set().union(*optional)
        for rows in required:
            entries &= rows
        if excluded:
            entries -= excluded
        by_slot: dict[int, list[int]] = {}
        for number in sorted(range(len(units)), key=lambda n: -weights[n]):
            by_slot.setdefault(slots[number], []).append(number)
        # The entries split into groups that cover the same weight, slot by slot: each
        # group's entries that have the slot's best unit, else its next one..., else none.
        # Set operations only (a few per group and unit), whatever the number of entries.
        groups: list[tuple[float, set[int]]] = [(0.0, entries)] if entries else []
        for numbers in by_slot.values():
            split: list[tuple[float, set[int]]] = []
            for weight, rows in groups:
                for number in numbers:
                    having = rows & found[number]
                    if having:
                        split.append((weight + weights[number], having))
                        rows = rows - having
                        if not rows:
                            break
                if rows:
                    split.append((weight, rows))
            groups = split
        levels: dict[float, list[set[int]]] = {}
        for weight, rows in groups:
            levels.setdefault(weight, []).append(rows)
        # The entries grouped by the weight of the query they cover, most first.
        self.levels = sorted(((weight, set().union(*parts)) for weight, parts in levels.items()),
                             key=lambda level: -level[0])

    def share(self, weight: float) -> float:
        """0..1: a covered weight over the weight of all the query's units."""
        return min(1.0, weight / self.total) if self.total > 0 else 1.0

    def matched(self, rowid: int) -> list[str]:
        """The labels of the units an entry matches (--explain)."""
        return [self.units[number].label for number, rows in enumerate(self.found)
                if rowid in rows]

    def needless_slots(self, floor: float) -> set[int]:
        """The commonest slots, as many as weigh less together than `floor`: an entry that
        matches nothing else is never shown, so they are not needed to rank the candidates
        (docs/search.md, "Nothing rather than noise"). With a margin, so that rounding never
        makes such an entry a candidate."""
        needless: set[int] = set()
        weight = 0.0
        for slot in sorted(self.full, key=lambda s: (self.full[s], s)):
            weight += self.full[slot]
            if weight >= floor * (1 - 1e-6):
                break
            needless.add(slot)
        return needless


def names_the_fact(asked: str, subject: str | None, predicate: str | None) -> bool:
    """Whether a query names both a note's subject and its predicate, compared as `add`
    compares them (`asked`: the query through vocab.fact_key, once for all its hits):
    `what database does blog-backend use` names blog-backend + database."""
    if not subject or not predicate:
        return False
    return fact_key(subject) in asked and fact_key(predicate) in asked


def factor(share: float, exact: bool) -> float:
    """What a candidate's score is multiplied by for its coverage (0..1) and exactness."""
    return share ** COVERAGE_POWER * (EXACT_BONUS if exact else 1.0)
