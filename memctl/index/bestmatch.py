"""Best-match ranking: how much of a query each candidate covers (docs/search.md).

The search finds candidates with `Query.any_match` (any unit), ranked by BM25 and the usual
factors, and this module re-ranks the best of them by coverage: the share of the query's
units a note matches, each unit weighted by its rarity (BM25's idf). A note matching three of
four rare words then beats one matching the two commonest, and one that has every word as
typed (the strict `match`) gets a bonus on top. A bare word also matches the words it begins
(`migr` → migration), at PREFIX_SHARE of its weight (`memctl.index.search._word_beginnings`).

Everything is exact and runs in SQLite with the index's own tokenizer (stems, CJK characters):
- a unit's rarity: its words are tokenized in a scratch FTS5 table, and each token's document
  count read from an `fts5vocab` table over the index (a phrase counts as its rarest token);
- which units a candidate matches: the candidates' text is copied into a second scratch FTS5
  table and each unit's MATCH is run there. Only the first TEXT_CAP characters of each column
  are read, so the cost is bounded whatever the size of a note.
The scratch tables are TEMP tables of the index connection (never written to the index file).
"""

from __future__ import annotations

import math
import sqlite3

from memctl.core.query import Unit
from memctl.core.tokenize import FTS_TOKENIZE, to_index

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (start-up)
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

CANDIDATES = 60  # rows re-ranked by coverage (at least the search's limit)
STRICT_ENOUGH = 5  # this many notes with every word as typed: partial matches are not looked for
TEXT_CAP = 16_384  # characters of each column of a candidate that the coverage check reads
COVERAGE_POWER = 2.0  # score × coverage²: half the query's weight matched → a quarter
EXACT_BONUS = 1.25  # every word as typed (the strict match)
RELATIVE_FLOOR = 0.4  # hits covering less than 40 % of what the best hit covers are left out
FACT_BONUS = 2.0  # the query names the note's subject and predicate: an exact fact
PREFIX_SHARE = 0.5  # a word matched only as the beginning of a longer word counts half

_SETUP = (
    f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.memctl_words USING fts5(x, tokenize='{FTS_TOKENIZE}')",
    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.memctl_words_v USING fts5vocab(temp, memctl_words, instance)",
    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.memctl_vocab USING fts5vocab(main, fts, row)",
    f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.memctl_cand USING fts5(title, tags, body,"
    f" tokenize='{FTS_TOKENIZE}')",
)


class Coverage:
    """What one candidate matched of the query."""

    __slots__ = ("share", "matched", "exact")

    def __init__(self, share: float, matched: list[str], exact: bool) -> None:
        self.share = share  # 0..1: the weight of the units matched over the weight of all
        self.matched = matched  # the labels of the units matched
        self.exact = exact  # matches the strict query (every word as typed)


class BestMatch:
    """Coverage of candidates by a query's units, on one index connection."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        for statement in _SETUP:
            conn.execute(statement)
        self.tokens: dict[int, set[str]] = {}  # of the units of the last `weights` call
        self.documents: int | None = None  # rows of the index, read once

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

    def weights(self, units: Sequence[Unit]) -> list[float]:
        """Each unit's idf; 0 for a unit none of whose words is in the index."""
        conn = self.conn
        conn.execute("DELETE FROM temp.memctl_words")
        conn.executemany("INSERT INTO temp.memctl_words(rowid, x) VALUES (?, ?)",
                         [(number, to_index(unit.text)) for number, unit in enumerate(units)])
        tokens: dict[int, set[str]] = {}
        for doc, term in conn.execute("SELECT doc, term FROM temp.memctl_words_v"):
            tokens.setdefault(doc, set()).add(term)
        self.tokens = tokens
        counts = self._counts({term for terms in tokens.values() for term in terms})
        return [self._idf(min((counts[term] for term in tokens.get(number, ())), default=0))
                for number in range(len(units))]

    def term_weights(self, terms: Sequence[str]) -> list[float]:
        """The idf of terms of the index (stems, as the index keeps them)."""
        counts = self._counts(set(terms))
        return [self._idf(counts[term]) for term in terms]

    def match_weight(self, match: str) -> float:
        """The idf of an FTS5 expression (a prefix such as `migr*`): from the number of
        entries of the index it matches, counted by one query."""
        found = self.conn.execute("SELECT count(*) FROM fts WHERE fts MATCH ?", (match,))
        return self._idf(found.fetchone()[0])

    def _counts(self, terms: set[str]) -> dict[str, int]:
        counts: dict[str, int] = {}
        for term in terms:
            row = self.conn.execute("SELECT doc FROM temp.memctl_vocab WHERE term = ?",
                                    (term,)).fetchone()
            counts[term] = row[0] if row else 0
        return counts

    def _idf(self, frequency: int) -> float:
        """BM25's idf; 0 for a term no note has."""
        if frequency == 0:
            return 0.0
        if self.documents is None:
            self.documents = self.conn.execute("SELECT max(rowid) FROM fts").fetchone()[0] or 0
        return math.log(1 + (self.documents - frequency + 0.5) / (frequency + 0.5))

    def coverage(self, rowids: Iterable[int], units: Sequence[Unit], weights: Sequence[float],
                 strict: str | None, slots: Sequence[int] | None = None,
                 slot_weights: dict[int, float] | None = None) -> dict[int, Coverage]:
        """The coverage of each candidate (by index rowid). Units sharing a slot are
        alternatives (a word and its close words): a slot counts once, by the best unit of it
        a candidate matches, against `slot_weights` (default: its best unit's weight)."""
        conn = self.conn
        wanted = list(rowids)
        conn.execute("DELETE FROM temp.memctl_cand")
        if not wanted:
            return {}
        marks = ", ".join("?" * len(wanted))
        conn.execute(
            f"INSERT INTO temp.memctl_cand(rowid, title, tags, body) SELECT rowid,"
            f" substr(title, 1, {TEXT_CAP}), substr(tags, 1, {TEXT_CAP}),"
            f" substr(body, 1, {TEXT_CAP}) FROM fts WHERE rowid IN ({marks})", wanted)
        matched: dict[int, list[int]] = {rowid: [] for rowid in wanted}
        for number, unit in enumerate(units):
            for (rowid,) in conn.execute(
                    "SELECT rowid FROM temp.memctl_cand WHERE memctl_cand MATCH ?", (unit.match,)):
                matched[rowid].append(number)
        exact: set[int] = set()
        if strict is not None:
            exact = {row[0] for row in conn.execute(
                "SELECT rowid FROM temp.memctl_cand WHERE memctl_cand MATCH ?", (strict,))}
        slot_of = list(slots) if slots is not None else list(range(len(units)))
        full: dict[int, float] = {}
        for number, slot in enumerate(slot_of):
            full[slot] = max(full.get(slot, 0.0), weights[number])
        full.update(slot_weights or {})
        total = sum(full.values())
        found: dict[int, Coverage] = {}
        for rowid, numbers in matched.items():
            if total > 0:
                best: dict[int, float] = {}
                for number in numbers:
                    slot = slot_of[number]
                    best[slot] = max(best.get(slot, 0.0), weights[number])
                share = sum(best.values()) / total
            else:
                share = len({slot_of[n] for n in numbers}) / len(set(slot_of)) if units else 1.0
            found[rowid] = Coverage(min(1.0, share), [units[n].label for n in numbers],
                                    rowid in exact)
        return found


def names_the_fact(query: str, subject: str | None, predicate: str | None) -> bool:
    """Whether a query names both a note's subject and its predicate (case-insensitive, as
    written: `what database does blog-backend use` names blog-backend + database)."""
    if not subject or not predicate:
        return False
    text = query.casefold()
    return subject.casefold() in text and predicate.casefold() in text


def factor(coverage: Coverage) -> float:
    """What a candidate's score is multiplied by."""
    return coverage.share ** COVERAGE_POWER * (EXACT_BONUS if coverage.exact else 1.0)
