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
from typing import TYPE_CHECKING, Any

from memctl.core.tokenize import has_cjk

if TYPE_CHECKING:
    from memctl.core.query import Query
    from memctl.index.search import Hit, _Ctx

MIN_WORD = 4  # shorter words have too many close neighbours to be useful
SCORE_CUTOFF = 78.0
MAX_CANDIDATES = 4
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


def close_words(word: str, vocab: set[str] | list[str]) -> list[tuple[str, float]]:
    """Words of `vocab` close to `word`, best first, with their similarity (0-100)."""
    from rapidfuzz import fuzz, process

    word = word.lower()
    if len(word) < MIN_WORD or has_cjk(word):
        return []
    found = process.extract(word, list(vocab), scorer=fuzz.ratio, score_cutoff=SCORE_CUTOFF,
                            limit=MAX_CANDIDATES)
    return [(candidate, score) for candidate, score, _ in found if candidate != word]


def fuzzy_match(ctx: _Ctx, parsed: Query) -> list[Hit]:
    rows = ctx.conn.execute(
        f"SELECT d.title, d.tags, d.subject, d.predicate FROM docs d WHERE {ctx.where}",
        ctx.params)
    vocab = vocabulary(rows)
    if not vocab:
        return []
    groups: list[list[str]] = []
    used: dict[str, list[str]] = {}
    for word in parsed.words:
        cleaned = "".join(ch for ch in word if ch.isalnum())
        close = close_words(cleaned, vocab) if cleaned else []
        if close:
            used[word] = [candidate for candidate, _ in close]
        groups.append([word, *used.get(word, [])])
    if not used:
        return []

    def quoted(text: str) -> str:
        from memctl.core.tokenize import to_index

        return '"' + to_index(text).replace('"', '""') + '"'

    def group_sql(group: list[str]) -> str:
        return "(" + " OR ".join(quoted(w) for w in group if any(c.isalnum() for c in w)) + ")"

    groups = [g for g in groups if any(any(c.isalnum() for c in w) for w in g)]
    hits = ctx.run(" AND ".join(group_sql(g) for g in groups))
    if not hits and len(groups) > 1:
        hits = ctx.run(" OR ".join(group_sql(g) for g in groups))
    for hit in hits:
        hit.fuzzy = True
        if hit.explain is not None:
            hit.explain["fuzzy"] = used
    return hits
