"""Text as the full-text index sees it: English words stemmed, every CJK character a word.

SQLite's `unicode61` tokenizer keeps a run of Chinese as one token, so `数据库` inside a
sentence is never found. Putting a separator around each CJK character makes every
character its own token; a query word then becomes a phrase of characters, which finds any
substring (two-character words included) with no dictionary (docs/search.md).

The separator is U+001F (a control character, a separator for `unicode61`) rather than a
space, so the transform can be undone exactly: original text never keeps a U+001F (it is
replaced by a space first), and removing every U+001F gives the original back. That lets
snippets be cut from the indexed text and shown as the user wrote it.
"""

from __future__ import annotations

import functools
import re
from itertools import islice

# Bump whenever the transform or FTS_TOKENIZE changes: the index is rebuilt on a mismatch.
# 2: full-width letters and digits are indexed as the ASCII ones (FULL_WIDTH_ALNUM), in
# the text and in the tags (memctl.index.scope.tag_key).
TOKENIZER_VERSION = 2
FTS_TOKENIZE = "porter unicode61 remove_diacritics 2"
SEP = "\x1f"

# Full-width letters and digits (`ｐｏｏｌ`, `５４３３`: what an input method in its full-width
# mode types) as the ASCII ones, in the index and in queries alike: unicode61 keeps them apart,
# so a note saying `５４３３` was found by no query once queries were read as ASCII, and one
# saying `5433` by no full-width query before. Full-width punctuation is left as it is (`？`
# ends a question, `：` follows a project's name; unicode61 separates words at it anyway).
FULL_WIDTH_ALNUM = {code: code - 0xFEE0 for code in (*range(0xFF10, 0xFF1A),
                                                     *range(0xFF21, 0xFF3B),
                                                     *range(0xFF41, 0xFF5B))}

# Han (with extensions and compatibility blocks), kana, bopomofo and hangul. CJK punctuation
# (U+3000-303F, full-width forms) is left out: unicode61 already treats it as a separator.
_CJK_CLASS = (
    "\u1100-\u11ff"  # hangul jamo
    "\u2e80-\u2fdf"  # CJK radicals, Kangxi radicals
    "\u3040-\u309f"  # hiragana
    "\u30a0-\u30ff"  # katakana
    "\u3100-\u312f"  # bopomofo
    "\u3130-\u318f"  # hangul compatibility jamo
    "\u31a0-\u31bf"  # bopomofo extended
    "\u31f0-\u31ff"  # katakana phonetic extensions
    "\u3400-\u4dbf"  # CJK extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\ua960-\ua97f"  # hangul jamo extended A
    "\uac00-\ud7ff"  # hangul syllables, jamo extended B
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\uff66-\uff9f"  # half-width katakana
    "\U00020000-\U0003134f"  # CJK extensions B-G, compatibility supplement
)


@functools.cache
def _cjk_run() -> re.Pattern[str]:
    # Compiled on first use (a few ms): an English-only search never pays for it.
    return re.compile(f"[{_CJK_CLASS}]+")


# Characters that must never reach the index or a query as themselves: our separator and
# other C0 controls (NUL ends an FTS5 query string early) except tab and newlines.
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def cjk_runs(text: str) -> list[tuple[str, str]]:
    """`text` cut into (text before a run of CJK characters, the run) pairs, in order; the
    last pair's run is empty when the text ends with other characters."""
    pairs: list[tuple[str, str]] = []
    position = 0
    for match in _cjk_run().finditer(text):
        pairs.append((text[position:match.start()], match.group()))
        position = match.end()
    if position < len(text):
        pairs.append((text[position:], ""))
    return pairs


def has_cjk(text: str) -> bool:
    return not text.isascii() and _cjk_run().search(text) is not None


def clean(text: str) -> str:
    """Replace control characters (and any stray separator) with spaces."""
    if text.isascii() and text.isprintable():
        return text
    return _CONTROL.sub(" ", text)


def to_index(text: str) -> str:
    """The form of `text` that goes into the FTS table and into query phrases."""
    text = clean(text)
    if text.isascii():
        return text
    text = text.translate(FULL_WIDTH_ALNUM)
    # One call per run of CJK (not per character): joining in C is what keeps indexing fast.
    return _cjk_run().sub(_split_run, text)


def _split_run(match: re.Match[str]) -> str:
    return SEP + SEP.join(match.group()) + SEP


def cjk_pairs(text: str) -> str:
    """Every two CJK characters that are neighbouring words of `text` for the index (one
    after the other, or with only spaces and punctuation between them), each pair written
    as one word, separated by spaces: the words of the index's `fts_pairs` table
    (docs/search.md, "Pairs of characters"). They are exactly the places where the phrase of
    the two characters matches in the main index, so a query's pair is found in the same
    entries as a look-up of one word, where the phrase reads both characters' positions in
    every note that has them. Empty for text without CJK."""
    if text.isascii():
        return ""
    # One pass in C: each match is a CJK character and the CJK character after it, either
    # right after it or past characters that are neither CJK nor a token's (`has_token_chars`:
    # not alphanumeric, `_` included, not private use). ~0.6× the time of a loop over the
    # runs, which was an eighth of a cold reindex's CPU (bench/README.md, "Scale table");
    # tests/test_pairs_index.py holds the two equal.
    if len(text) > _PAIRS_AT_ONCE:
        return _cjk_pairs_in_batches(text)
    return " ".join(map("".join, _cjk_pairs().findall(text)))


# Text longer than this is paired a batch of matches at a time: `findall` builds a tuple of
# three strings for every CJK character before the first is joined, ~900 MB for a note of
# 9 MB in Chinese (a file dropped by hand, under the index's 10 MB: tests/test_hostile_input.py).
_PAIRS_AT_ONCE = 1 << 16


def _cjk_pairs_in_batches(text: str, batch: int = 1 << 14) -> str:
    """`cjk_pairs` of a long text, holding at most `batch` matches at a time."""
    matches = _cjk_pairs().finditer(text)
    pieces: list[str] = []
    while taken := list(islice(matches, batch)):
        pieces.append(" ".join([match[1] + (match[2] or match[3]) for match in taken]))
    return " ".join(pieces)


@functools.cache
def _cjk_pairs() -> re.Pattern[str]:
    # The gap is greedy and stops at the first character it cannot take, so each match
    # costs at most the gap it crosses once: linear in the text.
    cjk = f"[{_CJK_CLASS}]"
    gap = f"(?:[^\\w\ue000-\uf8ff{_CJK_CLASS}]|_)+"
    return re.compile(f"({cjk})(?:(?=({cjk}))|{gap}(?=({cjk})))")


def warm_patterns() -> None:
    """Compile the patterns compiled at their first use now (a server that forks a process
    per search: memctl.cli.searchserver)."""
    _cjk_run()
    _cjk_pairs()


def from_index(text: str) -> str:
    """Undo `to_index`: exactly, for text that had no control characters, but for full-width
    letters and digits, which come back as the ASCII ones (a search's snippet says `5433` of
    a note that says `５４３３`)."""
    return text.replace(SEP, "")


def has_token_chars(text: str) -> bool:
    """Whether `unicode61` would find at least one token in `text`.

    unicode61 keeps letters, numbers and private-use characters (categories L*, N*, Co);
    Python's `isalnum` covers L* and N*. A phrase with no token is useless to FTS5.
    """
    return any(ch.isalnum() or "\ue000" <= ch <= "\uf8ff" for ch in text)


def scope_token(project: str) -> str:
    """The one token of the index's `scope` column: `p` and the project name in hex (any
    name is a single alphanumeric token, and no two names share one)."""
    return "p" + project.encode("utf-8").hex()
