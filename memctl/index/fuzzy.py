"""The fallback when a search finds nothing: words close to what was typed.

Each query word is compared (rapidfuzz, edit-distance ratio) with the words of the titles,
tags, subjects and predicates in scope, so `postgress` finds notes about PostgreSQL and
`kubernets` those tagged kubernetes. The search then runs again with each word replaced by
itself OR its close words. Only reached when the exact search has no hit, so its cost (a scan
of the titles in scope) is paid rarely.
"""

from __future__ import annotations

import json
import re

from memctl.core.tokenize import has_cjk, to_index

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (start-up)
if TYPE_CHECKING:
    from typing import Any

MIN_WORD = 4  # shorter words have too many close neighbours to be useful
SCORE_CUTOFF = 78.0
MAX_CANDIDATES = 4
NEAREST_MARGIN = 5.0  # close words more than this far (Jaro-Winkler) below the closest are dropped
_WORD = re.compile(r"[^\W_]{3,}", re.UNICODE)


def vocabulary(rows: Any) -> set[str]:
    """Lowercased words of titles, tags, subjects and predicates."""
    words: set[str] = set()
    for title, tags, subject, predicate in rows:
        text = " ".join([title or "", subject or "", predicate or ""])
        try:
            text += " " + " ".join(str(tag) for tag in json.loads(tags or "[]"))
        except ValueError:
            pass
        words.update(word.lower() for word in _WORD.findall(text) if not has_cjk(word))
    return words


def can_expand(word: str) -> bool:
    """Whether a word is worth looking up close words for (long enough, not CJK)."""
    cleaned = "".join(ch for ch in word if ch.isalnum())
    return len(cleaned) >= MIN_WORD and not has_cjk(cleaned)


def close_words(word: str, vocab: set[str] | list[str]) -> list[tuple[str, float]]:
    """Words of `vocab` close to `word`, best first, with their similarity (0-100): found by
    edit distance (`fuzz.ratio` at least SCORE_CUTOFF), scored by Jaro-Winkler, which favours
    a shared beginning: for `postgress`, `postgresql` 93.8 is closer than `progress` 89.6
    (plain edit distance says 84.2 and 82.4). Only words within NEAREST_MARGIN of the closest
    are kept."""
    from rapidfuzz import fuzz, process
    from rapidfuzz.distance import JaroWinkler

    word = word.lower()
    if len(word) < MIN_WORD or has_cjk(word):
        return []
    found = process.extract(word, list(vocab), scorer=fuzz.ratio, score_cutoff=SCORE_CUTOFF,
                            limit=MAX_CANDIDATES)
    scored = sorted(((candidate, JaroWinkler.normalized_similarity(word, candidate) * 100)
                     for candidate, _, _ in found if candidate != word), key=lambda c: -c[1])
    best = scored[0][1] if scored else 0.0
    return [(candidate, score) for candidate, score in scored if score >= best - NEAREST_MARGIN]


class Expansion:
    """Each query word OR-ed with its close words, as FTS5 MATCH text."""

    def __init__(self, groups: list[list[str]], used: dict[str, list[str]]) -> None:
        self.groups = groups  # per query word: the word, then its close words
        self.used = used  # the words that got close words, for --explain

    def all_of(self) -> str:
        return " AND ".join(_group_sql(group) for group in self.groups)

    def any_of(self) -> str:
        return " OR ".join(_group_sql(group) for group in self.groups)


def expand(words: list[str], vocab: set[str]) -> Expansion | None:
    """Close words for each query word, or None when no word has any."""
    if not vocab:
        return None
    groups: list[list[str]] = []
    used: dict[str, list[str]] = {}
    for word in words:
        cleaned = "".join(ch for ch in word if ch.isalnum())
        close = close_words(cleaned, vocab) if cleaned else []
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
