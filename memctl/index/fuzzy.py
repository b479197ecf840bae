"""The fallback when a search finds nothing: words close to what was typed.

Each query word is compared (rapidfuzz, edit-distance ratio) with the words of the titles,
tags, subjects and predicates of the projects in scope, so `postgress` finds notes about
PostgreSQL and `kubernets` those tagged kubernetes. The search then runs again with each word
replaced by itself OR its close words.

Those words are kept with the index, in `fuzzy_words` (project, length, word, and how many
entries have it), counted up and down as entries are indexed and removed: a search that finds
nothing reads only the words of its projects whose length could score SCORE_CUTOFF, instead of
every title in scope (which made a miss the slowest search: +115 ms at 10k notes, +1.15 s at
100k; bench/bench_search.py). The words of every entry of a project count, whatever its
status or kind: the search that runs again applies the scope's filters.
"""

from __future__ import annotations

import json
import re

from memctl.core.tokenize import has_cjk, to_index

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (start-up)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

MIN_WORD = 4  # shorter words have too many close neighbours to be useful
SCORE_CUTOFF = 78.0
CODE_CUTOFF = 90.0  # for a word in capitals (`cutoff_for`)
MAX_CANDIDATES = 4
NEAREST_MARGIN = 5.0  # close words more than this far (Jaro-Winkler) below the closest are dropped
_WORD = re.compile(r"[^\W_]{3,}", re.UNICODE)


def vocabulary(rows: Any) -> set[str]:
    """Lowercased words of titles, tags (as the index's JSON), subjects and predicates."""
    words: set[str] = set()
    for title, tags, subject, predicate in rows:
        try:
            tag_list = [str(tag) for tag in json.loads(tags or "[]")]
        except ValueError:
            tag_list = []
        words.update(doc_words(title, tag_list, subject, predicate))
    return words


def doc_words(title: str | None, tags: Any, subject: str | None,
              predicate: str | None) -> list[str]:
    """The words one entry adds to the vocabulary: lowercased, three letters or more, no CJK
    (sorted, each once)."""
    text = " ".join([title or "", subject or "", predicate or "", *(str(tag) for tag in tags)])
    return sorted({word.lower() for word in _WORD.findall(text) if not has_cjk(word)})


def length_band(word: str) -> tuple[int, int]:
    """The lengths a word can have and still score SCORE_CUTOFF against `word`: the ratio of
    two words is at most 2·shorter/(shorter + longer)."""
    share = SCORE_CUTOFF / (200.0 - SCORE_CUTOFF)
    return int(len(word) * share), int(len(word) / share) + 1


def stored_words(conn: Any, projects: list[str] | None, word: str) -> list[str]:
    """The vocabulary of these projects (None: all) that could be close to `word`."""
    low, high = length_band(word)
    if projects is None:
        rows = conn.execute("SELECT DISTINCT word FROM fuzzy_words WHERE length BETWEEN ? AND ?",
                            (low, high))
    else:
        marks = ", ".join("?" * len(projects))
        rows = conn.execute(f"SELECT DISTINCT word FROM fuzzy_words WHERE project IN ({marks})"
                            f" AND length BETWEEN ? AND ?", (*projects, low, high))
    return [found for (found,) in rows]


def count_words(conn: Any, changes: dict[tuple[str, str], int]) -> None:
    """Add (or take away) entries to the counts of (project, word); a word no entry has any
    longer leaves the vocabulary. Inside the index's write transaction."""
    conn.executemany(
        "INSERT INTO fuzzy_words(project, length, word, docs) VALUES (?, ?, ?, ?)"
        " ON CONFLICT(project, length, word) DO UPDATE SET docs = docs + excluded.docs",
        [(project, len(word), word, number) for (project, word), number in changes.items()
         if number])
    conn.executemany(
        "DELETE FROM fuzzy_words WHERE project = ? AND length = ? AND word = ? AND docs <= 0",
        [(project, len(word), word) for (project, word), number in changes.items() if number < 0])


def can_expand(word: str) -> bool:
    """Whether a word is worth looking up close words for (long enough, not CJK)."""
    cleaned = "".join(ch for ch in word if ch.isalnum())
    return len(cleaned) >= MIN_WORD and not has_cjk(cleaned)


def cutoff_for(word: str) -> float:
    """The edit-distance ratio a close word of `word` needs. A word in capitals is a code or
    a name (`ECONNREFUSED`, `ENOENT`, `SIGKILL`), whose neighbours are other codes
    (`ECONNRESET` scores 81.8): it takes CODE_CUTOFF, about one character in ten, which a
    letter left out or doubled meets (`ECONREFUSED` 95.7, `POSTGRESS` → postgres 94.1)."""
    cleaned = "".join(ch for ch in word if ch.isalnum())
    return CODE_CUTOFF if cleaned.isupper() else SCORE_CUTOFF


def close_words(word: str, vocab: set[str] | list[str], cutoff: float | None = None
                ) -> list[tuple[str, float]]:
    """Words of `vocab` close to `word`, best first, with their similarity (0-100): found by
    edit distance (`fuzz.ratio` at least `cutoff`, by default `cutoff_for(word)`), scored by
    Jaro-Winkler, which favours a shared beginning: for `postgress`, `postgresql` 93.8 is
    closer than `progress` 89.6 (plain edit distance says 84.2 and 82.4). Only words within
    NEAREST_MARGIN of the closest are kept."""
    if cutoff is None:
        cutoff = cutoff_for(word)
    word = word.lower()
    if len(word) < MIN_WORD or has_cjk(word) or not vocab:
        return []
    within_reach = reachable(word, vocab)
    if not within_reach:
        return []  # a plain miss: rapidfuzz is never imported (tests/test_search.py)
    from rapidfuzz import fuzz, process  # here: ~15 ms of start-up a search seldom needs
    from rapidfuzz.distance import JaroWinkler

    found = process.extract(word, within_reach, scorer=fuzz.ratio, score_cutoff=cutoff,
                            limit=MAX_CANDIDATES)
    scored = sorted(((candidate, JaroWinkler.normalized_similarity(word, candidate) * 100)
                     for candidate, _, _ in found if candidate != word), key=lambda c: -c[1])
    best = scored[0][1] if scored else 0.0
    return [(candidate, score) for candidate, score in scored if score >= best - NEAREST_MARGIN]


def reachable(word: str, vocab: set[str] | list[str]) -> list[str]:
    """The words of `vocab` that could score SCORE_CUTOFF against `word`, in their order.

    `fuzz.ratio` is 200 × (longest common subsequence) / (sum of the lengths), and the common
    subsequence has no more characters than the two words share: counted generously, each
    character of `word` that the other word has at all, as often as `word` has it. A word
    whose bound is below the cutoff cannot be close, so a search for a word nothing is like
    (`zqxwvy`) ends here, without importing rapidfuzz (~15 ms; the no-hit search cost 25 %
    more than one with hits end to end, bench/bench_search.py `miss`). Linear in the
    vocabulary: one set intersection per word."""
    counts: dict[str, int] = {}
    for char in word:
        counts[char] = counts.get(char, 0) + 1
    letters = counts.keys()
    size = len(word)
    return [other for other in vocab
            if 200 * sum(counts[char] for char in letters & set(other))
            >= SCORE_CUTOFF * (size + len(other))]


class Expansion:
    """Each query word OR-ed with its close words, as FTS5 MATCH text."""

    def __init__(self, groups: list[list[str]], used: dict[str, list[str]]) -> None:
        self.groups = groups  # per query word: the word, then its close words
        self.used = used  # the words that got close words, for --explain

    def all_of(self) -> str:
        return " AND ".join(_group_sql(group) for group in self.groups)

    def any_of(self) -> str:
        return " OR ".join(_group_sql(group) for group in self.groups)


def expand(words: list[str], vocab: set[str] | Callable[[str], list[str]]) -> Expansion | None:
    """Close words for each query word, or None when no word has any. `vocab` is the
    vocabulary, or what gives the words worth comparing with one word (`stored_words`)."""
    if not vocab:
        return None
    groups: list[list[str]] = []
    used: dict[str, list[str]] = {}
    for word in words:
        cleaned = "".join(ch for ch in word if ch.isalnum())
        close: list[tuple[str, float]] = []
        if cleaned and can_expand(cleaned):
            close = close_words(cleaned, vocab(cleaned.lower()) if callable(vocab) else vocab)
        if close:
            used[word] = [candidate for candidate, _ in close]
        groups.append([word, *used.get(word, [])])
    if not used:
        return None
    groups = [g for g in groups if any(any(c.isalnum() for c in w) for w in g)]
    return Expansion(groups, used)


def _quoted(text: str) -> str:
    return '"' + to_index(text).replace('"', '""') + '"'


def _group_sql(group: list[str]) -> str:
    return "(" + " OR ".join(_quoted(w) for w in group if any(c.isalnum() for c in w)) + ")"
