"""Near-duplicate and contradiction heuristics for note texts (pure, no I/O).

Rules a person can predict (docs/lifecycle.md): a note is a *duplicate* of another when their normalised
texts score at or above the duplicate threshold **and** nothing suggests they disagree; two
notes are *similar* (a contradiction candidate) when they score at or above the similar
threshold **and** one of them negates what the other says, a number differs, a known antonym
was swapped, or a word was replaced by an unrelated one ("MySQL" -> "PostgreSQL").

Merging is the costly mistake (the new text is not written), so any sign of disagreement
blocks a merge; a false "similar" only adds a line to the health report.

Long notes are compared by their start, so that a pair costs the same bounded time however
long its notes are (a pasted 900 KB log took seconds in `add` and minutes in `health`):

- only the first MAX_SOURCE_CHARS (32,000) characters of a text are normalised, and only the
  first MAX_COMPARED_CHARS (4,000) characters of that are compared (cut before a word the
  cap would split). Every entry point (score, compare, contradiction_reasons, candidates,
  similar_pairs, pairs_involving) compares these same parts;
- since the rest was not compared, two texts of which one was cut are never duplicates
  unless they are the same text (but for blanks at either end): the reason `unchecked` is
  given instead, so the new text is written and the pair reported (a short note that
  repeats the start of a long one scores high against it);
- which words were replaced (the `value` reason) is found with difflib's matching
  (`_difflib_opcodes`, the same steps without its junk handling) for texts of up to
  about 200 words each, as always; for longer ones with the longest common subsequence of
  the words (rapidfuzz, in C), since difflib's matcher takes seconds to minutes on a few
  thousand repetitive words.

The regular expressions that see the text run in linear time (no nested or overlapping
repetition); Markdown links are reduced by a scan, not a regex (see `_reduce_links`).
"""

from __future__ import annotations

import functools
import re
import sys
import threading
import unicodedata
from collections import Counter
from collections.abc import Collection, Iterable, Sequence

from memctl.core import nearpairs
from memctl.core.records import dataclass

DEFAULT_DUPLICATE_THRESHOLD = 88.0
DEFAULT_SIMILAR_THRESHOLD = 70.0

# The bounded part of a long text that is compared (see the module docstring).
MAX_COMPARED_CHARS = 4_000
MAX_SOURCE_CHARS = 8 * MAX_COMPARED_CHARS
# Pairs of token sequences up to this product go to difflib (as they always did); beyond,
# the LCS in C. 200 x 200 repetitive tokens cost difflib ~0.07 s; 2,000 x 2,000, ~80 s.
_DIFFLIB_MAX_PRODUCT = 200 * 200
UNCHECKED = "unchecked"

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
# Punctuation (ASCII and full-width, which NFKC mostly folds) becomes a space; apostrophes
# are kept so that "don't" stays one negating word. In ASCII text no character is CJK, so
# the class without the CJK ranges finds the same: those classes (~3 ms each to compile)
# are compiled for the first text that has other characters (`_cjk_rules`), not in every
# `memctl add` (bench/bench_write.py).
_NON_WORD_ASCII = re.compile(r"[^\w\s']")


@functools.cache
def _cjk_rules() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """Punctuation but CJK characters, and the runs of CJK characters (a group: `split`
    keeps the runs)."""
    return re.compile(rf"[^\w\s'{_CJK}]"), re.compile(f"([{_CJK}]+)")


def _starts_cjk(text: str) -> bool:
    """Whether `text` starts with a CJK character (of `_CJK`): as `re.match(f"[{_CJK}]",
    text)`, without compiling that class."""
    return bool(text) and ("\u3400" <= text[0] <= "\u4dbf" or "\u4e00" <= text[0] <= "\u9fff"
                           or "\uf900" <= text[0] <= "\ufaff")
_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")
_CONTRACTION = re.compile(r"\b(won|can|shan|\w+)'t\b|\bcannot\b")
_IRREGULAR = {"won": "will", "can": "can", "shan": "shall"}

_EN_NEGATIONS = frozenset(
    {
        "not", "no", "never", "none", "nothing", "nor", "cannot", "without", "avoid",
        "dont", "doesnt", "didnt", "isnt", "arent", "wasnt", "werent", "wont", "cant",
        "shouldnt", "mustnt", "neednt", "couldnt", "wouldnt", "hasnt", "havent",
    }
)
# Longest first, so that 千万不要 counts once and not also as 不要 and 不.
_ZH_NEGATIONS = ("千万不要", "不要", "不用", "不能", "不必", "无需", "无须", "禁止", "没有",
                 "不", "没", "别", "勿", "未")
_ANTONYMS = (
    ("always", "never"), ("enable", "disable"), ("enabled", "disabled"), ("true", "false"),
    ("on", "off"), ("yes", "no"), ("allow", "deny"), ("allowed", "forbidden"),
    ("include", "exclude"), ("before", "after"), ("first", "last"), ("increase", "decrease"),
    ("more", "less"), ("sync", "async"), ("public", "private"),
    ("开启", "关闭"), ("启用", "禁用"), ("允许", "禁止"), ("之前", "之后"), ("增加", "减少"),
)


# Each word of an antonym pair with where to look for it in `_word_forms`: 0 the words, 1 the
# characters without blanks (a CJK word).
_ANTONYM_TERMS = tuple(sorted({(term, int(_starts_cjk(term)))
                               for pair in _ANTONYMS for term in pair}))


@dataclass(frozen=True)
class Comparison:
    """How two texts relate: score 0..100 and the verdict under the given thresholds."""

    score: float
    duplicate: bool
    similar: bool
    reasons: tuple[str, ...]  # why they may disagree: number, negation, antonym, value, unchecked


def normalize(text: str) -> str:
    """Fold case, width, contractions and punctuation; Markdown links are reduced to their text.

    CJK runs and Latin words are separated by one space, so "数据库使用PostgreSQL 16" and
    "数据库使用 PostgreSQL 16。" normalise to the same string, and "don't" to "do not".
    A text of symbols alone ("🚀 ✅", "-> !!"), which would fold to nothing, keeps its
    symbols: two such notes are compared by them, never all alike (tests/test_similarity.py).
    """
    text = unicodedata.normalize("NFKC", text)
    folded = _fold_words(text)
    if folded or not text.strip():
        return folded
    return " ".join(text.casefold().split())


def _fold_words(text: str) -> str:
    text = _reduce_links(text)
    text = text.replace("\u2019", "'").replace("\u2018", "'").casefold()
    if "'" in text or "cannot" in text:  # (most Chinese text has neither: no regex pass)
        text = _CONTRACTION.sub(_expand_contraction, text)
    text = text.replace("_", " ")
    if text.isascii():  # no CJK run to set apart
        text = _NON_WORD_ASCII.sub(" ", text)
    else:
        non_word, cjk_run = _cjk_rules()
        text = non_word.sub(" ", text)
        # A blank on both sides of every CJK run: where one was already, the split below
        # drops the extra (one pass over the runs, rather than look-arounds at every
        # character; tests/test_similarity.py holds it equal to inserting blanks only where
        # needed). Split and joined: the same as substituting " run " for each run, without
        # a Python call per run.
        text = " ".join(cjk_run.split(text))
    if "'" not in text:  # nothing to strip: the words as they are
        return " ".join(text.split())
    return " ".join(part.strip("'") for part in text.split() if part.strip("'"))


def _reduce_links(text: str) -> str:
    """`re.sub(r"\\[([^\\]]*)\\]\\([^)]*\\)", r"\\1", text)` in linear time.

    That regex is tried at every `[` and scans to the end when no `]` or `)` follows, so it
    was quadratic on `[[[[…` or `[a](` repeated. Here each `[` looks for its `]` once; every
    `[` before that `]` would find the same `]` and fail the same way, so they are skipped;
    and with no `]` or `)` left, no later `[` can match either."""
    if "](" not in text:
        return text
    out: list[str] = []
    position = search = 0
    while True:
        start = text.find("[", search)
        if start < 0:
            break
        close = text.find("]", start + 1)
        if close < 0:
            break
        if text.startswith("(", close + 1):
            end = text.find(")", close + 2)
            if end < 0:
                break
            out.append(text[position:start])
            out.append(text[start + 1:close])
            position = search = end + 1
        else:
            search = close + 1
    if not out:
        return text
    out.append(text[position:])
    return "".join(out)


# Remembered: the health report scores a note against many others, and `global`'s notes in
# every project's group; a server process adds note after note to the same project.
@functools.lru_cache(maxsize=1 << 15)
def _compared(text: str) -> tuple[str, bool]:
    """The part of `text` that is compared, normalised, and whether the text was cut."""
    if len(text) > _START_CHARS:
        found = _compared_from_start(text)
        if found is not None:
            return found
    return _compared_whole(text)


# A long text's compared part is read from its start: normalising its first _START_CHARS
# characters (up to a blank) gives the same part as normalising its first MAX_SOURCE_CHARS
# when they alone make more than MAX_COMPARED_CHARS and no Markdown link straddles the cut
# (a link is reduced as a whole). A 30 KB document is then normalised in a fifth of the time;
# tests/test_similarity.py holds the two equal.
_START_CHARS = MAX_COMPARED_CHARS * 3 // 2
_BLANK = re.compile(r"\s")


def _compared_from_start(text: str) -> tuple[str, bool] | None:
    blank = _BLANK.search(text, _START_CHARS, _START_CHARS + 2_000)
    if blank is None:
        return None
    start = text[:blank.start()]
    opening = start.rfind("[")
    if opening >= 0 and start.find("]", opening) < 0:
        return None  # a link may begin here and end after the cut
    link = start.rfind("](")
    if link >= 0 and start.find(")", link) < 0:
        return None
    # The words alone: a start of symbols (a banner of `─`) is not the text's compared part
    # when words follow (`_compared_whole` finds them, and the two must agree).
    norm = _fold_words(unicodedata.normalize("NFKC", start))
    if len(norm) <= MAX_COMPARED_CHARS:
        return None
    return _capped(norm), True


def _compared_whole(text: str) -> tuple[str, bool]:
    cut = len(text) > MAX_SOURCE_CHARS
    if cut:
        source = text[:MAX_SOURCE_CHARS]
        if not text[MAX_SOURCE_CHARS].isspace():
            # Not half a word (or half a link) at the end: back to the last blank, if near.
            blank = max(source.rfind(" "), source.rfind("\n"), source.rfind("\t"))
            if blank > MAX_SOURCE_CHARS - 1_000:
                source = source[:blank]
        text = source
    norm = normalize(text)
    if len(norm) <= MAX_COMPARED_CHARS:
        return norm, cut
    return _capped(norm), True


def _capped(norm: str) -> str:
    """The first MAX_COMPARED_CHARS characters of a longer normalised text."""
    end = MAX_COMPARED_CHARS
    if norm[end] != " " and not _starts_cjk(norm[end]):
        # A Latin word straddles the cap: leave it out (a CJK run is cut between tokens).
        blank = norm.rfind(" ", 0, end)
        if blank > 0:
            end = blank
    return norm[:end]


def _expand_contraction(match: re.Match[str]) -> str:
    stem = match.group(1)
    if stem is None:
        return "can not"
    if stem in _IRREGULAR:
        return f"{_IRREGULAR[stem]} not"
    return f"{stem[:-1]} not" if stem.endswith("n") else f"{stem} not"


def tokens(text: str) -> list[str]:
    """Words of a normalised text, each CJK character its own token (no dictionary needed)."""
    if text.isascii():  # no CJK character: the words as they are
        return text.split()
    out: list[str] = []
    for word in text.split():
        # (no call for the Latin words of a text that has other characters too)
        if word[0] >= "\u3400" and _starts_cjk(word):
            out.extend(word)
        else:
            out.append(word)
    return out


def score(a: str, b: str) -> float:
    """Similarity 0..100 of two texts (normalised here; word order barely matters). Long
    texts: their compared parts (see the module docstring)."""
    return _score_normalized(_compared(a)[0], _compared(b)[0])


def _score_normalized(na: str, nb: str) -> float:
    if not na or not nb:
        return 100.0 if na == nb else 0.0
    # Characters, sorted words, and the token sequence: the last keeps "使用 Redis 做缓存" and
    # "使用 Memcached 做缓存" close although most of their characters differ. (The words of a
    # normalised text are split by single spaces: sorted and joined, they are what
    # rapidfuzz's `token_sort_ratio` compares; tests/test_similarity.py holds them equal.)
    return max(_ratio(na, nb), _ratio(_sorted_words(na), _sorted_words(nb)),
               _ratio(tokens(na), tokens(nb)))


def _sorted_words(norm: str) -> str:
    return " ".join(sorted(norm.split()))


# --- the longest common subsequence, in Python for small pairs -----------------------------
#
# rapidfuzz (in C) scores pairs fast, but importing it costs ~20 ms on this kind of machine:
# as much as the rest of `add`'s checks, which mostly score a few short texts
# (bench/bench_write.py). A pair up to this product of lengths is scored here instead while
# rapidfuzz is not loaded (1,000 x 1,000 characters: ~0.7 ms); the numbers are the same, to
# the last bit (tests/test_similarity.py), so which one scored a pair never shows.
_PYTHON_LCS_MAX = 1_000_000


def _in_python(a: Sequence[object], b: Sequence[object]) -> bool:
    return "rapidfuzz" not in sys.modules and len(a) * len(b) <= _PYTHON_LCS_MAX


def _lcs_length(a: Sequence[object], b: Sequence[object]) -> int:
    """The length of the longest common subsequence of two sequences, bit-parallel (Hyyrö's
    algorithm, as rapidfuzz's Indel computes it in C): one step per item of the longer
    sequence, each a few operations on an integer with a bit per item of the shorter."""
    if len(a) < len(b):
        a, b = b, a
    masks: dict[object, int] = {}
    bit = 1
    for item in b:
        masks[item] = masks.get(item, 0) | bit
        bit <<= 1
    full = bit - 1
    row = full
    mask_of = masks.get
    for item in a:
        matched = row & mask_of(item, 0)
        row = ((row + matched) | (row - matched)) & full
    return len(b) - row.bit_count()


def _ratio(a: Sequence[object], b: Sequence[object]) -> float:
    """rapidfuzz's `fuzz.ratio` of two sequences (the normalised Indel similarity, 0..100),
    the same float: `(1 - distance / (len(a) + len(b))) * 100`, with distance the items of
    both not in their longest common subsequence."""
    if not _in_python(a, b):
        from rapidfuzz import fuzz

        return fuzz.ratio(a, b)
    return _python_ratio(a, b)


def _python_ratio(a: Sequence[object], b: Sequence[object]) -> float:
    total = len(a) + len(b)
    if not total:
        return 100.0
    return (1.0 - (total - 2 * _lcs_length(a, b)) / total) * 100


class _Views:
    """Three precomputed views of normalised texts, each compared with plain `fuzz.ratio`:
    the characters, the words sorted (what `token_sort_ratio` compares), and the token
    sequence with every distinct token coded as one character (a token-level ratio in C)."""

    def __init__(self, norms: Sequence[str], codebook: dict[str, str] | None = None) -> None:
        self.codebook = codebook if codebook is not None else {}
        self.chars = list(norms)
        self.sorted = [" ".join(sorted(n.split())) for n in norms]
        self.coded = [self.code(n) for n in norms]

    @classmethod
    def remembered(cls, norms: Sequence[str]) -> _Views:
        """The views of `norms` with this process's codes (`_remembered_views`), or, when
        those have run out (past CODES distinct tokens), with codes of their own."""
        with _SHARED_LOCK:  # one group's codes made at once, whatever other threads do
            made = [_remembered_views(norm) for norm in norms]
            if len(_SHARED_CODES) > CODES:  # some codes repeat: start again, and not here
                forget()
                return cls(norms)
        views = cls.__new__(cls)
        views.codebook = _SHARED_CODES
        views.chars = list(norms)
        views.sorted = [words for words, _ in made]
        views.coded = [coded for _, coded in made]
        return views

    def code(self, norm: str) -> str:
        return _code(norm, self.codebook)

    def best(self, i_or_query: int | str, start: int, threshold: float) -> dict[int, float]:
        """Index (from `start`) -> best score of each text scoring at least `threshold`."""
        from rapidfuzz import fuzz, process

        if isinstance(i_or_query, int):
            i = i_or_query
            queries = (self.chars[i], self.sorted[i], self.coded[i])
        else:
            q = i_or_query
            queries = (q, " ".join(sorted(q.split())), self.code(q))
        best: dict[int, float] = {}
        # One C call per view rather than a Python loop per pair: this runs on every `add`.
        for query, view in zip(queries, (self.chars, self.sorted, self.coded), strict=True):
            choices = view[start:] if start else view
            for _, value, idx in process.extract(
                query, choices, scorer=fuzz.ratio, processor=None, score_cutoff=threshold,
                limit=None,
            ):
                best[idx + start] = max(best.get(idx + start, 0.0), value)
        return best


# Past this many distinct tokens codes repeat, which can only make a score a little too high.
CODES = 131068


def _code(norm: str, book: dict[str, str]) -> str:
    """A text's tokens, each coded as one character (the same character for the same token
    throughout `book`)."""
    words = tokens(norm)
    codes = list(map(book.get, words))  # in C: most tokens have a code already
    if None in codes:
        for token in words:  # new tokens get codes in the order they first appear
            if token not in book:
                # Planes 15-16 are private use: no clash with real text.
                n = len(book) % CODES
                book[token] = chr(0xF0000 + n) if n < 65534 else chr(0x100000 + n - 65534)
        codes = list(map(book.__getitem__, words))
    return "".join(codes)


# The codes of the pair search, the same for every group of a report: a text's views are then
# made once (`global`'s notes are partners in every project's group, and their views were
# made again for each; a score does not depend on which code a token has, only on which
# tokens share one). `forget` drops both.
_SHARED_CODES: dict[str, str] = {}
_SHARED_LOCK = threading.RLock()


@functools.lru_cache(maxsize=1 << 14)
def _remembered_views(norm: str) -> tuple[str, str]:
    """The words of a normalised text sorted, and its tokens coded with `_SHARED_CODES`."""
    return " ".join(sorted(norm.split())), _code(norm, _SHARED_CODES)


def _negations(norm: str) -> int:
    count = 0
    for word in norm.split():
        if _starts_cjk(word):
            rest = word
            for marker in _ZH_NEGATIONS:
                count += rest.count(marker)
                rest = rest.replace(marker, " ")
        elif word.replace("'", "") in _EN_NEGATIONS or word.endswith("n't"):
            count += 1
    return count


def _word_forms(norm: str) -> tuple[frozenset[str], str]:
    """A text's words, and its characters without blanks (where a CJK word is looked for)."""
    return frozenset(norm.split()), norm.replace(" ", "")


def _antonym_terms(norm: str) -> frozenset[str]:
    """The words of `_ANTONYMS` a text holds: all the antonym check needs to know of it (a
    text is split once, and only these few words are kept: `_features`)."""
    forms = _word_forms(norm)
    return frozenset(term for term, where in _ANTONYM_TERMS if term in forms[where])


def _swapped(fa: frozenset[str], fb: frozenset[str]) -> bool:
    for left, right in _ANTONYMS:
        a_left, a_right = left in fa, right in fa
        b_left, b_right = left in fb, right in fb
        if (a_left and not a_right and b_right and not b_left) or (
            a_right and not a_left and b_left and not b_right
        ):
            return True
    return False


def _inflection_of(old: list[str], new: list[str]) -> bool:
    """True when a replaced run of words is a re-wording of the same words (push/pushing)."""
    if any(_starts_cjk(t) for t in old + new):
        return False  # single characters carry meaning; no stemming without a dictionary
    olds = {t[:4] for t in old if len(t) >= 3}
    news = {t[:4] for t in new if len(t) >= 3}
    return bool(olds & news)


def _opcodes(ta: list[str], tb: list[str]) -> list[tuple[str, int, int, int, int]]:
    if len(ta) * len(tb) <= _DIFFLIB_MAX_PRODUCT:
        return _difflib_opcodes(ta, tb)
    return _lcs_opcodes(ta, tb)


def _difflib_opcodes(ta: list[str], tb: list[str]) -> list[tuple[str, int, int, int, int]]:
    """`difflib.SequenceMatcher(a=ta, b=tb, autojunk=False).get_opcodes()`, the same steps
    without junk (nothing is junk, nothing popular) in one function: half the time of the
    general matcher, which the health report runs on ~40,000 pairs on the 100,000-note
    benchmark store (tests/test_similarity.py holds the two equal)."""
    b2j: dict[str, list[int]] = {}
    for j, token in enumerate(tb):
        b2j.setdefault(token, []).append(j)
    positions = b2j.get
    none: list[int] = []
    blocks: list[tuple[int, int, int]] = []
    queue = [(0, len(ta), 0, len(tb))]
    while queue:
        alo, ahi, blo, bhi = queue.pop()
        # The longest matching block, the first in `ta` (then in `tb`) of those as long
        # (difflib's find_longest_match): the run ending at (i, j) is one longer than the
        # one ending at (i - 1, j - 1).
        besti, bestj, bestsize = alo, blo, 0
        ending: dict[int, int] = {}
        for i in range(alo, ahi):
            longer: dict[int, int] = {}
            previous = ending.get
            for j in positions(ta[i], none):
                if j < blo:
                    continue
                if j >= bhi:
                    break
                k = longer[j] = previous(j - 1, 0) + 1
                if k > bestsize:
                    besti, bestj, bestsize = i - k + 1, j - k + 1, k
            ending = longer
        if bestsize:
            blocks.append((besti, bestj, bestsize))
            if alo < besti and blo < bestj:
                queue.append((alo, besti, blo, bestj))
            if besti + bestsize < ahi and bestj + bestsize < bhi:
                queue.append((besti + bestsize, ahi, bestj + bestsize, bhi))
    blocks.sort()
    opcodes: list[tuple[str, int, int, int, int]] = []
    i = j = 0
    # Adjacent blocks joined, then the gaps between them named (difflib's get_opcodes).
    for ai, bj, size in _joined(blocks) + [(len(ta), len(tb), 0)]:
        if i < ai and j < bj:
            opcodes.append(("replace", i, ai, j, bj))
        elif i < ai:
            opcodes.append(("delete", i, ai, j, bj))
        elif j < bj:
            opcodes.append(("insert", i, ai, j, bj))
        i, j = ai + size, bj + size
        if size:
            opcodes.append(("equal", ai, i, bj, j))
    return opcodes


def _joined(blocks: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    """Sorted matching blocks with each run of adjacent ones made one."""
    out: list[tuple[int, int, int]] = []
    i1 = j1 = k1 = 0
    for i2, j2, k2 in blocks:
        if i1 + k1 == i2 and j1 + k1 == j2:
            k1 += k2
        else:
            if k1:
                out.append((i1, j1, k1))
            i1, j1, k1 = i2, j2, k2
    if k1:
        out.append((i1, j1, k1))
    return out


def _value_changed(ta: list[str], tb: list[str],
                   opcodes: list[tuple[str, int, int, int, int]]) -> bool:
    for tag, i1, i2, j1, j2 in opcodes:
        if tag == "replace" and not _inflection_of(ta[i1:i2], tb[j1:j2]):
            return True
    return False


def _same_statement(ta: list[str], tb: list[str],
                    opcodes: list[tuple[str, int, int, int, int]]) -> bool:
    """Whether two texts say mostly the same thing, so that a difference between them can be
    a disagreement: more than half of the longer one's words are shared (in order), or only
    one word differs. Short unrelated notes share a lead and nothing else (`added from
    non-repo dir` / `added from store root`: 2 words of 5), which is no contradiction."""
    shared = sum(i2 - i1 for tag, i1, i2, _j1, _j2 in opcodes if tag == "equal")
    longer = max(len(ta), len(tb))
    return 2 * shared > longer or longer - shared <= 1


def _apart(ta: list[str], tb: list[str]) -> bool:
    """Whether `_same_statement` is False whatever the opcodes: the equal runs of any opcodes
    are a common subsequence, so they share at most the longest one's words, and those are
    at most half of the longer text's and two or more short of it (the longest common
    subsequence, bit-parallel)."""
    longer = max(len(ta), len(tb))
    if _in_python(ta, tb):
        shared = _lcs_length(ta, tb)
    else:
        from rapidfuzz.distance import Indel

        shared = (len(ta) + len(tb) - Indel.distance(ta, tb)) // 2
    return 2 * shared <= longer and longer - shared > 1


def _lcs_opcodes(ta: list[str], tb: list[str]) -> list[tuple[str, int, int, int, int]]:
    """difflib-style opcodes from the longest common subsequence of two token lists, in C
    (bit-parallel, no worse than len(ta) * len(tb) / 64 steps): a run of deletions and
    insertions between two equal runs is a `replace`, as difflib names it."""
    from rapidfuzz.distance import Indel

    out: list[tuple[str, int, int, int, int]] = []
    pending: list[int] | None = None  # [i1, i2, j1, j2] of the changes since the last equal

    def flush() -> None:
        if pending is not None:
            i1, i2, j1, j2 = pending
            tag = "replace" if i2 > i1 and j2 > j1 else "delete" if i2 > i1 else "insert"
            out.append((tag, i1, i2, j1, j2))

    for op in Indel.opcodes(ta, tb):
        if op.tag == "equal":
            flush()
            pending = None
            out.append(("equal", op.src_start, op.src_end, op.dest_start, op.dest_end))
        elif pending is None:
            pending = [op.src_start, op.src_end, op.dest_start, op.dest_end]
        else:
            pending[1], pending[3] = op.src_end, op.dest_end
    flush()
    return out


def contradiction_reasons(a: str, b: str) -> tuple[str, ...]:
    """Signs that two (already similar) texts disagree; empty when none, or when the texts
    do not say mostly the same thing (`_same_statement`)."""
    (na, cut_a), (nb, cut_b) = _compared(a), _compared(b)
    reasons, same = _reasons(na, nb)
    return (reasons if same else ()) + _unchecked(a, b, cut_a or cut_b)


def _unchecked(a: str, b: str, cut: bool) -> tuple[str, ...]:
    """(`unchecked`,) when part of a text was not compared and the texts are not the same
    (blanks at either end aside: a note's body is stored with its final line break)."""
    return (UNCHECKED,) if cut and a.strip() != b.strip() else ()


class _Features:
    """What `_reasons` reads of one normalised text, worked out once per text (`_features`):
    the health report judges each note against many others. Not its tokens (cheap to make
    again, and a long Chinese text's are thousands of one-character strings to keep)."""

    __slots__ = ("numbers", "negations", "antonyms")

    def __init__(self, norm: str) -> None:
        self.numbers = Counter(_NUMBER.findall(norm))
        self.negations = _negations(norm)
        self.antonyms = _antonym_terms(norm)


@functools.lru_cache(maxsize=1 << 14)
def _features(norm: str) -> _Features:
    return _Features(norm)


def _reasons(na: str, nb: str, ta: list[str] | None = None, tb: list[str] | None = None
             ) -> tuple[tuple[str, ...], bool]:
    """The signs of disagreement, and whether the texts say mostly the same thing (only then
    do the signs make them a possible contradiction; any sign still blocks a merge). `ta`,
    `tb`: the texts' tokens, when made already."""
    if ta is None or tb is None:
        ta, tb = tokens(na), tokens(nb)
    fa, fb = _features(na), _features(nb)
    reasons: list[str] = []
    if fa.numbers != fb.numbers:
        reasons.append("number")
    if fa.negations != fb.negations:
        reasons.append("negation")
    if _swapped(fa.antonyms, fb.antonyms):
        reasons.append("antonym")
    # Matching words is greedy: its steps from a to b are not those from b to a, so `add`
    # (the new note first) and `health` (the notes in their group's order) could judge one
    # pair differently. Both orders are asked, and the cautious answer kept: a changed value
    # either way is a sign (it blocks a merge), and the texts say the same thing if either
    # way finds enough words in common (tests/test_similarity.py).
    opcodes = _opcodes(ta, tb)
    value, same = _value_changed(ta, tb, opcodes), _same_statement(ta, tb, opcodes)
    if not (value and same):
        back = _opcodes(tb, ta)
        value = value or _value_changed(tb, ta, back)
        same = same or _same_statement(tb, ta, back)
    if value:
        reasons.append("value")
    return tuple(reasons), same


def compare(
    a: str,
    b: str,
    *,
    duplicate_threshold: float = DEFAULT_DUPLICATE_THRESHOLD,
    similar_threshold: float = DEFAULT_SIMILAR_THRESHOLD,
) -> Comparison:
    """Compare two texts: duplicate (merge), similar (contradiction candidate), or neither."""
    return judge(a, b, score(a, b), duplicate_threshold=duplicate_threshold,
                 similar_threshold=similar_threshold)


def judge(
    a: str,
    b: str,
    value: float,
    *,
    duplicate_threshold: float = DEFAULT_DUPLICATE_THRESHOLD,
    similar_threshold: float = DEFAULT_SIMILAR_THRESHOLD,
) -> Comparison:
    """`compare` of two texts whose score (`score(a, b)`) is known: the health report judges
    the pairs `similar_pairs` found with their scores, and scoring two long texts again
    costs a millisecond (tests/test_similarity.py holds the two verdicts equal)."""
    (na, cut_a), (nb, cut_b) = _compared(a), _compared(b)
    if value < similar_threshold:
        return Comparison(value, False, False, ())
    unchecked = _unchecked(a, b, cut_a or cut_b)
    ta, tb = tokens(na), tokens(nb)
    if value < duplicate_threshold and not unchecked and _apart(ta, tb):
        # Neither a duplicate (the score says so) nor a possible contradiction, whatever the
        # signs: the texts do not say mostly the same thing. Told in C, before the signs and
        # the matching of their words: the health report judges ~60,000 pairs on the
        # 100,000-note benchmark store, and about a third of them are such pairs.
        return Comparison(value, False, False, ())
    signs, same = _reasons(na, nb, ta, tb)
    reasons = signs + unchecked
    duplicate = value >= duplicate_threshold and not reasons  # any sign blocks a merge
    similar = bool(unchecked) or (bool(signs) and same)
    return Comparison(value, duplicate, similar, reasons if similar else ())


def compared_tokens(text: str) -> tuple[list[str], str]:
    """The tokens of the part of `text` that is compared, and that part normalised: what
    `candidates` bags a text by (memctl.core.nearpairs.Shape)."""
    norm = _compared(text)[0]
    return tokens(norm), norm


# Up to this many texts, `candidates` first looks which pair with the new one, and scores
# those alone (beyond, their bags cost more than scoring every text in C).
_FEW_TEXTS = 64


def candidates(
    text: str, others: Iterable[tuple[str, str]], *, threshold: float = DEFAULT_SIMILAR_THRESHOLD
) -> list[tuple[str, float]]:
    """Keys of `others` ((key, text) pairs) scoring at least `threshold`, best first, among
    the candidate pairs of memctl.core.nearpairs: `add` and the health report see the same
    pairs. One text against many is linear, so every text is scored (in C, cheaper than
    building each one's bags) and the candidate rule then applied to those that score; a few
    texts are first looked at by the rule alone, and only those it keeps are scored: the
    same ones, with the same scores."""
    keys: list[str] = []
    texts: list[str] = []
    for key, other in others:
        keys.append(key)
        texts.append(_compared(other)[0])
    if not texts:
        return []  # nothing to score: rapidfuzz (~12 ms to import) is not needed
    query = _compared(text)[0]
    if not query:
        return []
    shape = nearpairs.Shape(tokens(query), query)
    if len(texts) <= _FEW_TEXTS:
        # `add` mostly gets a few texts from the index (memctl.index.nearwords), and most
        # share too few words: no text is a candidate pair with this one, so none can be kept
        # whatever it scores. The few that are, short ones, are scored in Python.
        matched = nearpairs.matches(shape, list(map(_shape, texts)))
        if not matched:
            return []
        scored = _scored_here(query, texts, matched, threshold)
        if scored is not None:
            ranked = sorted(scored, key=lambda item: (-item[1], keys[item[0]]))
            return [(keys[idx], value) for idx, value in ranked]
    best = sorted(_Views(texts).best(query, 0, threshold).items())
    if not best:
        return []
    kept = nearpairs.matches(shape, [_shape(texts[number]) for number, _ in best])
    ranked = sorted((best[position] for position in kept),
                    key=lambda item: (-item[1], keys[item[0]]))
    return [(keys[idx], value) for idx, value in ranked]


def _scored_here(query: str, texts: list[str], matched: list[int],
                 threshold: float) -> list[tuple[int, float]] | None:
    """(number, score) of the `matched` texts scoring at least `threshold`, scored one by one
    (`_score_normalized`, in Python while rapidfuzz is not loaded), as `_Views.best` would
    score them. None where that could differ: a score at the threshold itself (rapidfuzz
    compares the cut-off on its own scale), or more distinct tokens than the views' codes
    (CODES: theirs repeat, this would not). None too where Python would not be the cheaper:
    more than _PYTHON_LCS_MAX characters' pairs in all (64 texts of 1,000 characters took
    three times rapidfuzz's import and scores), or a pair whose words `judge` matches with
    rapidfuzz anyway (`_opcodes`: more than _DIFFLIB_MAX_PRODUCT pairs of tokens)."""
    if len(query) + sum(map(len, texts)) > CODES \
            or len(query) * sum(len(texts[number]) for number in matched) > _PYTHON_LCS_MAX:
        return None
    query_tokens = len(tokens(query))
    if any(query_tokens * len(tokens(texts[number])) > _DIFFLIB_MAX_PRODUCT
           for number in matched):
        return None
    scored: list[tuple[int, float]] = []
    for number in matched:
        value = _score_normalized(query, texts[number])
        if abs(value - threshold) < 1e-6:
            return None
        if value >= threshold:
            scored.append((number, value))
    return scored


# A crowded text's similar pairs with other crowded texts (memctl.core.nearpairs: more than
# CANDIDATES_PER_TEXT candidates) are looked for until it has this many: a crowd of alike
# notes would otherwise make every pair, quadratic in the crowd. Every other pair is scored:
# one with a text that is not crowded, whose candidates are bounded (so a kept report, which
# scores a changed text's pairs alone, and a fresh one agree). The 100k benchmark store's
# most paired text has 98 after it (bench/bench_health.py), so only a crowd is cut, and
# docs/health.md says what it costs.
SIMILAR_PER_TEXT = 128


def similar_pairs(
    items: Sequence[tuple[str, str]], *, threshold: float = DEFAULT_SIMILAR_THRESHOLD,
    partners: Sequence[tuple[str, str]] = (), crowding: nearpairs.Crowding | None = None,
) -> list[tuple[str, str, float]]:
    """The pairs (key_a, key_b, score) scoring at least `threshold` among `items` and between
    `items` and `partners` (never two partners: a project's notes with the global notes,
    whose own pairs are looked for once, in their own group), best first.

    Only the candidate pairs of memctl.core.nearpairs are scored (texts sharing half of their
    words; long texts a third of their word pairs), so the cost grows with the pairs that
    look alike rather than with every pair; `exhaustive_pairs` is the full comparison it is
    measured against (bench/bench_health.py, tests/test_similarity.py). `crowding`, when
    given, is filled in (the health report's cache keeps how many candidates a note has at
    most: memctl.memory.paircache).
    """
    return _candidate_pairs(items, partners, None, threshold, crowding)


def pairs_involving(
    items: Sequence[tuple[str, str]], keys: Collection[str], *,
    threshold: float = DEFAULT_SIMILAR_THRESHOLD, partners: Sequence[tuple[str, str]] = (),
    crowding: nearpairs.Crowding | None = None,
) -> list[tuple[str, str, float]]:
    """The pairs of `similar_pairs(items, partners=partners)` that involve one of `keys` (for
    the health report's cache: only new or edited notes are compared again). `crowding`,
    when given, gets the most candidates one of `keys` has (or the group's counts, when one
    of them is crowded and the whole group was searched)."""
    return _candidate_pairs(items, partners, keys, threshold, crowding)


def load_scorers() -> None:
    """Import the scorers in C now rather than at the first pair (~30 ms): a process that
    is about to fork children which score pairs imports them once, for all of them."""
    from rapidfuzz import fuzz, process  # noqa: F401
    from rapidfuzz.distance import Indel  # noqa: F401


def forget() -> None:
    """Drop the remembered normalised texts and bags (a server process, after a health
    report of a big store, need not keep them)."""
    _compared.cache_clear()
    _shape.cache_clear()
    _features.cache_clear()
    with _SHARED_LOCK:
        _remembered_views.cache_clear()
        _SHARED_CODES.clear()


@functools.lru_cache(maxsize=1 << 14)
def _shape(norm: str) -> nearpairs.Shape:
    """A normalised text's bags for the candidate search (remembered, as `_compared`:
    global's notes are partners in every project's group). Not its tokens: a long Chinese
    text's are thousands of one-character strings."""
    return nearpairs.Shape(tokens(norm), norm)


def _candidate_pairs(items: Sequence[tuple[str, str]], partners: Sequence[tuple[str, str]],
                     keys: Collection[str] | None, threshold: float,
                     crowding: nearpairs.Crowding | None = None
                     ) -> list[tuple[str, str, float]]:
    from rapidfuzz import fuzz, process

    everything = [*items, *partners]
    all_keys = [key for key, _ in everything]
    norms = [_compared(text)[0] for _, text in everything]
    shapes = [_shape(norm) for norm in norms]
    crowded: set[int] = set()
    if keys is None:
        counted = nearpairs.Crowding() if crowding is None else crowding
        partners_of = nearpairs.candidate_partners(shapes, own=len(items), crowding=counted)
        crowded = counted.crowded
    else:
        rows = [number for number, key in enumerate(all_keys) if key in keys]
        found = nearpairs.candidate_pairs(shapes, own=len(items), rows=rows,
                                          limit=nearpairs.CANDIDATES_PER_TEXT)
        if found is None:
            # A crowd: the pairs of the whole group's search (which bounds the crowd) that
            # involve these texts (docs/health.md).
            return [pair for pair in _candidate_pairs(items, partners, None, threshold,
                                                      crowding)
                    if pair[0] in keys or pair[1] in keys]
        partners_of = {}
        for first, second in found:
            partners_of.setdefault(first, []).append(second)
        if crowding is not None:
            of_row = Counter(number for pair in found for number in pair)
            crowding.most = max((of_row[row] for row in rows), default=0)
    # The three views of the texts in some candidate pair only (a long text's word codes cost
    # a millisecond: not worth it for a text no pair needs).
    involved = sorted(set(partners_of).union(*partners_of.values()))
    at = {number: position for position, number in enumerate(involved)}
    views = _Views.remembered([norms[number] for number in involved])
    pairs: list[tuple[str, str, float]] = []
    each_view = (views.chars, views.sorted, views.coded)
    ratio, extract = fuzz.ratio, process.extract
    for first, candidates_of_first in partners_of.items():
        key = all_keys[first]
        found = 0
        # (candidates, whether their pairs count towards SIMILAR_PER_TEXT): a crowded text's
        # candidates that are not crowded in one go, then the crowded ones a chunk at a time
        # until it has that many pairs with them; any other text's all at once.
        chunks: list[tuple[list[int], bool]] = [(candidates_of_first, False)]
        if first in crowded:
            loose = [other for other in candidates_of_first if other not in crowded]
            packed = [other for other in candidates_of_first if other in crowded]
            chunks = [(loose, False)] if loose else []
            chunks += [(packed[begin:begin + SIMILAR_PER_TEXT], True)
                       for begin in range(0, len(packed), SIMILAR_PER_TEXT)]
        for others, counted in chunks:
            spots = list(map(at.__getitem__, others))
            best: dict[int, float] = {}
            for view in each_view:
                # One C call per text and view over its candidates, not a call per pair.
                for _, value, idx in extract(view[at[first]],
                                             list(map(view.__getitem__, spots)),
                                             scorer=ratio, processor=None,
                                             score_cutoff=threshold, limit=None):
                    if best.get(idx, 0.0) < value:
                        best[idx] = value
            pairs.extend((key, all_keys[others[idx]], value) for idx, value in best.items())
            if counted:
                found += len(best)
                if found >= SIMILAR_PER_TEXT:
                    break
    pairs.sort(key=lambda p: (-p[2], p[0], p[1]))
    return pairs


def exhaustive_pairs(
    items: Sequence[tuple[str, str]], *, threshold: float = DEFAULT_SIMILAR_THRESHOLD
) -> list[tuple[str, str, float]]:
    """Every pair (key_a, key_b, score) among `items` scoring at least `threshold`: the full
    comparison, kept as the reference `similar_pairs` is measured against.

    Quadratic, but exact and in C: a ratio of r% needs the shorter text to be at
    least r/(200-r) of the longer one, so each view only compares a text with the texts of
    a similar length (characters for the first two views, tokens for the third).
    """
    from bisect import bisect_right

    from rapidfuzz import fuzz, process

    keys = [key for key, _ in items]
    views = _Views([_compared(text)[0] for _, text in items])
    bound = threshold / (200.0 - threshold) if threshold > 0 else 0.0
    best: dict[tuple[int, int], float] = {}
    passes = (
        ([len(t) for t in views.chars], (views.chars, views.sorted)),
        ([len(t) for t in views.coded], (views.coded,)),
    )
    for lengths, texts_of_view in passes:
        order = sorted(range(len(keys)), key=lambda k: lengths[k])
        ordered_lengths = [lengths[k] for k in order]
        for view in texts_of_view:
            ordered = [view[k] for k in order]
            for pos, k in enumerate(order):
                if not lengths[k]:
                    continue
                limit = lengths[k] / bound if bound else float("inf")
                end = bisect_right(ordered_lengths, limit, lo=pos + 1)
                if end <= pos + 1:
                    continue
                for _, value, idx in process.extract(
                    ordered[pos], ordered[pos + 1:end], scorer=fuzz.ratio, processor=None,
                    score_cutoff=threshold, limit=None,
                ):
                    other = order[pos + 1 + idx]
                    pair = (min(k, other), max(k, other))
                    best[pair] = max(best.get(pair, 0.0), value)
    pairs = [(keys[i], keys[j], value) for (i, j), value in best.items()]
    pairs.sort(key=lambda p: (-p[2], p[0], p[1]))
    return pairs


# What `add` may merge (docs/lifecycle.md, "What a merge ignores"): normalising drops
# punctuation, so `attempts >= 5` and `attempts <= 5`, `app.log` and `app_log`, `/data` and
# `/data/` score 100; merging one into the other would throw the new words away. A merge
# therefore also needs `merge_key` equal: the words that hold a symbol, and code exactly.
# Ignorable: case and blanks outside code, the width of a character (NFKC), typographic
# quotes, `n't` for ` not`, and prose punctuation (`_PROSE_MARKS`) that ends a word or
# touches a CJK character.
_PROSE_MARKS = frozenset(".,;:!\u3002\u3001")
_PROSE_CHARS = "".join(sorted(_PROSE_MARKS))
_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})


def _is_cjk(char: str) -> bool:
    return _starts_cjk(char)


def _symbol_word(word: str) -> str | None:
    """`word` (casefolded, outside code) without its ignorable prose marks, or None when what
    is left is letters and digits only (nothing a merge could lose that the score missed)."""
    ends = len(word.rstrip(_PROSE_CHARS))  # the marks from here on end the word
    last = len(word) - 1
    kept: list[str] = []
    for i, char in enumerate(word):
        if char in _PROSE_MARKS and (
            i >= ends or (i > 0 and _is_cjk(word[i - 1])) or (i < last and _is_cjk(word[i + 1]))
        ):
            continue
        kept.append(char)
    left = "".join(kept)
    return None if not left or left.isalnum() else left


def _prose_key(prose: str) -> list[str]:
    text = prose.casefold()
    if "'" in text:
        text = _CONTRACTION.sub(_expand_contraction, text)
    words = text.split()
    key: list[str] = []
    for i, word in enumerate(words):
        symbol = _symbol_word(word)
        if symbol is None:
            continue
        if not any(c.isalnum() for c in symbol):
            # An operator alone (`>=`, `->`, `-`): what it stands between is part of it.
            before = words[i - 1].rstrip(_PROSE_CHARS) if i else ""
            after = words[i + 1].rstrip(_PROSE_CHARS) if i + 1 < len(words) else ""
            symbol = f"{before} {symbol} {after}"
        key.append(symbol)
    return key


def _backtick_split(text: str) -> list[str]:
    """`text` cut at each run of backticks, the runs kept: [prose, run, code, run, prose, …]
    (a segment after an odd number of runs counts as code; one pass, no regex)."""
    parts: list[str] = []
    start = i = 0
    n = len(text)
    while i < n:
        if text[i] == "`":
            j = i
            while j < n and text[j] == "`":
                j += 1
            parts.append(text[start:i])
            parts.append(text[i:j])
            start = i = j
        else:
            i += 1
    parts.append(text[start:])
    return parts


def merge_key(text: str) -> tuple[str, ...]:
    """What two texts must share for `add` to merge one into the other, besides scoring as
    near-duplicates: every word holding a symbol (`app.log`, `post:{slug}:v{version}`,
    `/data/`), an operator with its neighbours, each run of backticks, and code between
    backticks exactly (but for blanks). Linear in the text."""
    text = unicodedata.normalize("NFKC", text).translate(_QUOTES)
    key: list[str] = []
    for i, part in enumerate(_backtick_split(text)):
        if i % 2:  # a run of backticks
            key.append(part)
        elif (i // 2) % 2:  # between an opening and a closing run: code
            key.append(" ".join(part.split()))
        else:
            key.extend(_prose_key(part))
    return tuple(key)


def mergeable(a: str, b: str) -> bool:
    """Whether merging `b` into `a` (or back) loses no symbol: the same text (blanks at either
    end aside), or the same `merge_key`."""
    return a.strip() == b.strip() or merge_key(a) == merge_key(b)
