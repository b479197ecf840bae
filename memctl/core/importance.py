"""Importance of a note when the user did not give one (pure).

The rule, so a person can predict it (docs/lifecycle.md):
- start from the type's base, the `importance:` of its template (packaged defaults: correction
  8 — the agent was wrong, recall it first —, decision 7, rule 7, error 6, preference 6,
  fact/skill/experience 5; a store's own `.templates/` may change them);
- add 2 for each distinct strong marker ("remember", "always", "never", 记住, 以后都, 千万不要)
  and 1 for each distinct mild marker ("don't"/"do not", "prefer…", 偏好, 不要);
- never go above 8 by inference (unless the base is higher): 9 and 10 are never archived
  automatically, so they are the user's call.

Markers are matched as whole words in English (any case, straight or curly apostrophe) and as
substrings in Chinese; 千万不要 counts once, not also as 不要.
"""

from __future__ import annotations

import re

from memctl.core.records import dataclass

DEFAULT_IMPORTANCE = 5
MAX_INFERRED = 8
# The same values as the packaged templates' `importance:`; used when no template is at hand.
TYPE_BASE = {
    "correction": 8, "decision": 7, "rule": 7, "error": 6, "preference": 6,
    "fact": 5, "skill": 5, "experience": 5,
}

_STRONG_EN = {
    "remember": re.compile(r"\bremember(?:s|ed)?\b", re.IGNORECASE),
    "always": re.compile(r"\balways\b", re.IGNORECASE),
    "never": re.compile(r"\bnever\b", re.IGNORECASE),
}
_MILD_EN = {
    "don't": re.compile(r"\b(?:don't|dont|do\s+not)\b", re.IGNORECASE),
    "prefer": re.compile(r"\bprefer(?:s|red|ence|ences|ring)?\b", re.IGNORECASE),
}
# Longest first: a matched span is blanked so that a shorter marker inside it is not counted.
_STRONG_ZH = ("千万不要", "以后都", "记住")
_MILD_ZH = ("偏好", "不要")


@dataclass(frozen=True)
class ImportanceGuess:
    value: int
    markers: tuple[str, ...]  # the markers found, in the order of the rule above


def _find_markers(text: str) -> tuple[list[str], list[str]]:
    text = text.replace("\u2019", "'").replace("\u2018", "'")
    strong = [name for name, rx in _STRONG_EN.items() if rx.search(text)]
    mild = [name for name, rx in _MILD_EN.items() if rx.search(text)]
    rest = text
    for marker in _STRONG_ZH:
        if marker in rest:
            strong.append(marker)
            rest = rest.replace(marker, " ")
    for marker in _MILD_ZH:
        if marker in rest:
            mild.append(marker)
            rest = rest.replace(marker, " ")
    return strong, mild


def explain_importance(
    text: str, note_type: str = "fact", base: int | None = None
) -> ImportanceGuess:
    """The inferred importance of `text` and the markers that raised it.

    `base` is the type's starting value (the template's `importance:`); by default the
    packaged one.
    """
    strong, mild = _find_markers(text)
    if base is None:
        base = TYPE_BASE.get(note_type, DEFAULT_IMPORTANCE)
    base = min(10, max(1, base))
    value = max(base, min(MAX_INFERRED, base + 2 * len(strong) + len(mild)))
    return ImportanceGuess(value, tuple(strong + mild))


def infer_importance(text: str, note_type: str = "fact", base: int | None = None) -> int:
    """Importance 1..10 for a note whose writer gave none."""
    return explain_importance(text, note_type, base).value
