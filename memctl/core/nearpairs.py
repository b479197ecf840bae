"""Candidate pairs for the similarity checks, without comparing every pair (pure, no I/O).

`memctl.core.similarity` scores two texts 0..100 with three ratios (characters, sorted words,
word sequence). Scoring every pair of a project is quadratic: minutes for 5,000 notes, and for
a few thousand long documents hours. Here each text becomes a bag of *elements*, and a pair is
a candidate when the bags share enough; only candidates are scored, exactly as before.

- **Short texts** (at most SHORT_MAX words) are bags of their words (each occurrence counted:
  `the` twice is two elements; a Latin word by its first STEM letters, so `deploy` and
  `deploys` share one; every CJK character a word, as `similarity.tokens` says). Candidates
  share at least half of their elements by the Dice coefficient: 2·shared ≥ ½·(n_a + n_b).
  `similarity` reports a contradiction only when more than half of the longer text's words
  are shared, in order, or all but one: every such pair of short texts meets this bound,
  but for two texts of one word each, which the next regime covers.
- **Texts of one or two words** (up to TINY_MAX characters) are also bags of their
  characters; candidates share two thirds of them. A ratio of 70 or more over their
  characters (or their sorted words: the same characters) needs 70 % shared, and over their
  words the same words: no pair of two such texts is missed. From CHAR_RUNS_MIN characters
  on (a word of a script written without spaces that is not split into characters, as kana
  are not, can be thousands long) they are also bags of their runs of CHAR_RUN characters
  (one run in SAMPLE, picked by a fixed hash of the run; all of them in a text of few
  different runs), in the long texts' regime (a tenth shared): every two long texts of one
  script share two thirds of their characters, but not their runs, unless one is an edited
  copy of the other.
  Texts of CHAR_RUNS_MIN..TINY_MAX characters are both, so two within the length ratio a
  score of 70 needs (0.54) meet in one of the two.
- **Long texts** (at least LONG_MIN words) are bags of their shingles (SHINGLE words in a
  row) that start with one of a fixed eighth of all words (a crc32 of the word: the same
  shingles are kept in every text, so shared ones stay shared); candidates share a tenth of
  them. Single words say little about long texts (two unrelated ones share most of their
  commonest words); runs of four say whether one is an edited copy of the other.
  Texts of LONG_MIN..SHORT_MAX words are both, so two texts within a factor of two of each
  other's length (the ratios need 0.54) meet in at least one of the two.

These bounds are not implied by the scores, so a pair can be missed: one that scores 70 or
more with less than half of its words shared (a typo in most words), two long texts that
only share their commonest words (their sorted words align), a text of more than SHORT_MAX
words and its copy with a word changed in every run of SHINGLE, or a word of more than
TINY_MAX characters and a copy edited in most of the runs the hash picks (docs/lifecycle.md).
bench/bench_health.py measures it: 99.92 % of the pairs scoring 70+ on the 10k benchmark
store, all of those the report lists. `similarity.exhaustive_pairs` keeps the full comparison as the reference.

How shares are counted: the texts are numbered, and an element held by many texts gets one
Python integer with a lane of 8 bits (16 for long texts) per text, holding 1 where the text
has the element. The sum of the integers of one text's elements holds, in each lane, what that
text shares with every other (additions in C over a few hundred machine words); a bias per
lane turns "at least the bound" into the top bit of the lane. Elements held by few texts are
counted pair by pair instead, so memory stays linear in the number of elements. A text pairs
with the texts after it only, so a big group's texts are taken in blocks, each summed over the
lanes from its block's first text on.
"""

from __future__ import annotations

import sys
import zlib
from array import array
from collections import Counter, defaultdict, deque
from collections.abc import Collection, Iterable, Iterator, Sequence
from itertools import accumulate, chain, compress, repeat

SHORT_MAX = 250  # words; an 8-bit lane holds the counts of the bound below up to 254
LONG_MIN = 120  # words; < SHORT_MAX / 2, so texts within a factor of 2 share a regime
STEM = 5  # characters of a Latin word that count (inflections: deploy, deploys, deployed)
SHINGLE = 4  # words in a row: the elements of a long text
SAMPLE = 8  # a shingle is kept when its first word is one of a fixed eighth of all words
SHORT_DIVISOR = 4  # shared ≥ (n_a + n_b) / 4: Dice ≥ 1/2
LONG_DIVISOR = 20  # shared ≥ (n_a + n_b) / 20: Dice ≥ 1/10
DENSE_SHARE = 64  # an element held by 1/64 of the texts or more gets a lane integer
TINY_WORDS = 2  # texts of one or two words are also compared by their characters
TINY_MAX = 190  # characters; an 8-bit lane holds the counts of the bound below up to 192
CHAR_RUNS_MIN = 100  # characters; ≤ TINY_MAX · 0.54, so the two bags of one- or two-word texts
CHAR_RUN = 4  # characters in a row: the long elements of a one- or two-word text
CHAR_RUNS_MAX = 32_000  # characters; a 16-bit lane holds the long bound up to 36,407 elements
# (similarity compares 4,000 characters at most)
RUNS_ALL_BELOW = 64  # different runs: a text with fewer keeps all of its runs
TINY_DIVISOR = 3  # shared ≥ (n_a + n_b) / 3: Dice ≥ 2/3
BLOCKS = 16  # a group's texts are taken in this many blocks (`_lane_hits`) ...
BLOCK_MIN = 1024  # ... of this many texts at least
# A crowd of alike texts (thousands of near-copies, pushed by a remote or pasted by a script)
# makes every text a candidate of every other: quadratic pairs, minutes and gigabytes for
# 5,000 of them. A text with more candidates than this (in both directions) is *crowded*,
# far more than a real store gives one text (at most 325 on the 100k benchmark store,
# bench/bench_health.py). A pair of two crowded texts is kept only among the first this
# many after the first of them in the group (its neighbours); every pair with a text that
# is not crowded is kept, whatever the order of the group (so the cut depends on the texts,
# not on where their files are listed, and a text's own search, `candidate_pairs` with
# `rows`, finds what the whole group's finds for it: tests/test_nearpairs.py).
CANDIDATES_PER_TEXT = 512

Pair = tuple[int, int]


def word_key(token: str) -> str:
    """A word as the bags count it: its first STEM characters, after the `s` that ends a
    word of at most STEM letters (`tests`, `runs`, `logs`: not `class`). Cut to STEM alone,
    `test`/`tests` and `run`/`runs` were two words, and `Tests run nightly` / `Test runs
    nightly` (94 when scored) shared too few to be a candidate (tests/test_nearpairs.py)."""
    if 2 < len(token) <= STEM and token[-1] == "s" and token[-2] != "s" and token.isascii():
        return token[:-1]
    return token[:STEM]


def short_elements(tokens: Sequence[str]) -> list[str]:
    """The bag of a short text: each word (a Latin word as `word_key` counts it; every CJK
    character is a word of one), each occurrence from the second on numbered (`the`,
    `the\x1f1`, ...), in no particular order. Interned: the bags of a group's texts are kept
    together (memctl.core.similarity remembers them), and share a small vocabulary."""
    counts = Counter(map(sys.intern, map(word_key, tokens)))
    out = list(counts)
    out.extend(sys.intern(f"{word}\x1f{number}") for word, count in counts.items() if count > 1
               for number in range(1, count))
    return out


class _Anchors:
    """Whether each word starts the shingles a long text keeps: a fixed hash (crc32, the same
    in every process, unlike `hash`) picks one word in SAMPLE."""

    def __init__(self) -> None:
        self.known: dict[str, bool] = {}

    def of(self, tokens: Sequence[str]) -> list[bool]:
        known = self.known
        if len(known) > 1 << 18:
            known.clear()  # a server process sees words without end: bounded memory
        flags = list(map(known.get, tokens))
        if None in flags:
            for token in set(tokens).difference(known):
                known[token] = not zlib.crc32(token.encode("utf-8", "surrogatepass")) % SAMPLE
            flags = list(map(known.__getitem__, tokens))
        return flags  # type: ignore[return-value]


_ANCHORS = _Anchors()


def long_elements(tokens: Sequence[str]) -> list[str]:
    """The bag of a long text: its shingles (SHINGLE words in a row) that start with a word
    the fixed hash picks (one word in SAMPLE: the same shingles are kept in every text, at the
    cost of one hash per distinct word), numbered as in `short_elements`."""
    starts = compress(range(len(tokens) - SHINGLE + 1), _ANCHORS.of(tokens))
    counts = Counter(["\x1e".join(tokens[start:start + SHINGLE]) for start in starts])
    out = list(counts)
    out.extend(f"{pair}\x1f{number}" for pair, count in counts.items() if count > 1
               for number in range(1, count))
    return out


def tiny_elements(text: str) -> list[str]:
    """The bag of a text of one or two words: its characters, numbered as in
    `short_elements`."""
    counts = Counter(text)
    out = list(counts)
    out.extend(f"{char}\x1f{number}" for char, count in counts.items() if count > 1
               for number in range(1, count))
    return out


class Shape:
    """What the candidate search needs of one text (`tokens`, and the normalised `text` they
    come from when it is at hand): its bags in the regimes that apply."""

    __slots__ = ("tiny", "short", "long")

    def __init__(self, tokens: Sequence[str], text: str | None = None) -> None:
        size = len(tokens)
        self.tiny = self.long = None
        if pairs_by_characters(tokens):
            text = " ".join(tokens) if text is None else text
            if len(text) <= TINY_MAX:
                self.tiny = tiny_elements(text)
            if CHAR_RUNS_MIN <= len(text) <= CHAR_RUNS_MAX:
                self.long = char_runs(text)
        self.short = short_elements(tokens) if 0 < size <= SHORT_MAX else None
        if size >= LONG_MIN:
            self.long = long_elements(tokens)


def pairs_by_characters(tokens: Sequence[str]) -> bool:
    """Whether a text (its tokens) is paired by its characters too: one or two words."""
    return 0 < len(tokens) <= TINY_WORDS


def char_runs(text: str) -> list[str]:
    """The long bag of a one- or two-word text: its runs of CHAR_RUN characters that the
    fixed hash picks (one in SAMPLE, by the whole run, whatever the alphabet), or all of them
    when the text has fewer than RUNS_ALL_BELOW different runs (`0101…`, `acgu…`: one in
    eight of so few may be none); numbered as in `short_elements`, marked so that none is
    ever a run of words."""
    counts = Counter([text[start:start + CHAR_RUN]
                      for start in range(len(text) - CHAR_RUN + 1)])
    runs = list(counts)
    if len(runs) >= RUNS_ALL_BELOW:
        runs = list(compress(runs, _ANCHORS.of(runs)))
    out = [f"\x1d{run}" for run in runs]
    out.extend(f"\x1d{run}\x1f{number}" for run in runs for number in range(1, counts[run]))
    return out


def candidate_pairs(shapes: Sequence[Shape], own: int | None = None,
                    rows: Collection[int] | None = None, limit: int | None = None
                    ) -> list[Pair] | None:
    """Candidate pairs (i, j), i < j, sorted. Texts [0, own) are the group's own and texts
    [own, count) its partners: pairs of two partners are left out (a project's notes with the
    global notes: global pairs are looked for once, in global's own group). With `rows`, only
    pairs involving one of those texts; with `limit` too, None as soon as one of them has
    more candidates than that (a crowd: its pairs would be quadratic)."""
    own = len(shapes) if own is None else own
    found: set[Pair] = set()
    # Each text's candidates in all regimes together: crowded as `candidate_partners` counts.
    of_row: defaultdict[int, set[int]] = defaultdict(set)
    for elements, width, divisor in _regimes(shapes):
        for first, others in _lane_hits(elements, own, rows, width, divisor):
            if limit is not None and rows is not None:
                mine = of_row[first]
                mine.update(others)
                if len(mine) > limit:
                    return None
            found.update((first, other) if first < other else (other, first)
                         for other in others)
    return sorted(found)


def candidate_partners(shapes: Sequence[Shape], own: int | None = None,
                       crowding: Crowding | None = None) -> dict[int, list[int]]:
    """The pairs of `candidate_pairs(shapes, own)` by their first text, {i: [j, ...]} with
    i < j, each j once: what the scoring goes through, without a tuple per pair (at 100,000
    notes the benchmark store's groups make 6 million candidates). `crowding`, when given,
    is filled in from the candidates before any crowd is cut."""
    own = len(shapes) if own is None else own
    partners: dict[int, list[int]] = {}
    several: set[int] = set()  # texts with hits in two regimes: a pair may be in both
    for elements, width, divisor in _regimes(shapes):
        for first, others in _lane_hits(elements, own, None, width, divisor):
            before = partners.get(first)
            if before is None:
                partners[first] = others
            else:
                before.extend(others)
                several.add(first)
    for first in several:
        partners[first] = sorted(set(partners[first]))
    cut = any(len(others) > CANDIDATES_PER_TEXT for others in partners.values())
    if crowding is None and not cut:
        return partners  # nobody asked, and no text can be crowded
    counted = (crowding or Crowding()).count(partners)
    if cut:
        _cut_crowds(partners, counted.crowded)
    return partners


class Crowding:
    """How many candidates the texts of a group have, both directions (`candidate_partners`
    gives each pair once, by its first text): the most any text has, and the crowded ones
    (more than CANDIDATES_PER_TEXT)."""

    __slots__ = ("most", "crowded")

    def __init__(self) -> None:
        self.most = 0
        self.crowded: set[int] = set()

    def count(self, partners: dict[int, list[int]]) -> Crowding:
        counts = Counter({first: len(others) for first, others in partners.items()})
        counts.update(chain.from_iterable(partners.values()))
        self.most = max(counts.values(), default=0)
        self.crowded = {text for text, count in counts.items() if count > CANDIDATES_PER_TEXT}
        return self


def _cut_crowds(partners: dict[int, list[int]], crowded: set[int]) -> None:
    """Leave out of `partners` the pairs of two crowded texts (see CANDIDATES_PER_TEXT)
    beyond the first CANDIDATES_PER_TEXT after a text."""
    for others in partners.values():
        if len(others) > CANDIDATES_PER_TEXT:
            others[CANDIDATES_PER_TEXT:] = [other for other in others[CANDIDATES_PER_TEXT:]
                                            if other not in crowded]


def _regimes(shapes: Sequence[Shape]) -> list[tuple[list[list[str] | None], int, int]]:
    """Each regime's bags, lane width and divisor."""
    return [([shape.tiny for shape in shapes], 8, TINY_DIVISOR),
            ([shape.short for shape in shapes], 8, SHORT_DIVISOR),
            ([shape.long for shape in shapes], 16, LONG_DIVISOR)]


def _vector(lanes: Iterable[int], values: Iterable[int], count: int, lane_bytes: int,
            first: int = 0) -> int:
    """The integer of `count` lanes of `lane_bytes` (little-endian) holding `values` at
    `lanes` and 0 elsewhere, written in C rather than by a Python loop per lane; from lane
    `first` on (the lanes below dropped)."""
    raw = bytearray(count * lane_bytes)
    if lane_bytes == 1:
        deque(map(raw.__setitem__, lanes, values), maxlen=0)
    elif sys.byteorder == "little":  # a machine word per lane, in the integer's own order
        deque(map(memoryview(raw).cast("H").__setitem__, lanes, values), maxlen=0)
    else:
        for lane, value in zip(lanes, values, strict=True):
            raw[lane * 2:lane * 2 + 2] = value.to_bytes(2, "little")
    return int.from_bytes(memoryview(raw)[first * lane_bytes:] if first else raw, "little")


def _packed(values: Iterable[int], lane_bytes: int) -> int:
    """The integer whose lanes of `lane_bytes` (little-endian) hold `values` in turn."""
    if lane_bytes == 1:
        return int.from_bytes(bytes(values), "little")
    words = array("H", values)
    if sys.byteorder != "little":
        words.byteswap()
    return int.from_bytes(words.tobytes(), "little")


def _lane_hits(elements: Sequence[list[str] | None], own: int, rows: Collection[int] | None,
               width: int, divisor: int) -> Iterator[tuple[int, list[int]]]:
    """(i, [j, ...]) for the texts whose bags share at least ceil((n_i + n_j) / divisor)
    elements (see the module docstring for the lanes): without `rows`, each own text i with
    the texts j > i; with `rows`, each of those texts with every other."""
    members = [number for number, bag in enumerate(elements) if bag]
    if len(members) < 2:
        return
    bags: list[list[str]] = [elements[number] for number in members]  # type: ignore[misc]
    lane_bytes = width // 8
    count = len(members)
    own_positions = sum(1 for number in members if number < own)  # own texts come first
    # Which texts hold each element (one held by a single text can be shared with none).
    # Elements held by many texts get a lane integer; the others are counted pair by pair,
    # so memory stays linear in the number of elements: at most DENSE_SHARE integers per
    # element of the average text.
    dense_from = max(2, count // DENSE_SHARE)
    holders: defaultdict[str, list[int]] = defaultdict(list)
    for position, bag in enumerate(bags):
        deque(map(list.append, map(holders.__getitem__, bag), repeat(position)), maxlen=0)
    lanes: dict[str, int] = {}
    sparse: dict[str, list[int]] = {}
    for element, positions in holders.items():
        if len(positions) >= dense_from:
            lanes[element] = _vector(positions, repeat(1), count, lane_bytes)
        elif len(positions) > 1:
            sparse[element] = positions
    del holders
    bias = 1 << (width - 1)
    ones = int.from_bytes((b"\x01" + b"\x00" * (lane_bytes - 1)) * count, "little")
    tops = ones << (width - 1)
    sizes = [len(bag) for bag in bags]
    # A lane never borrows (bias ≥ the bound) nor overflows (shared - bound < bias): with
    # n ≤ the largest bag, the bound is at most 2n/divisor and shared - bound at most
    # 2n(1/2 - 1/divisor). SHORT_MAX and the compared part's cap keep bags within both.
    largest = max(sizes)
    if 2 * largest > divisor * bias or largest * (divisor - 2) > (bias - 1) * divisor:
        raise ValueError(f"a bag of {largest} elements does not fit lanes of {width} bits")
    # bound(x, y) = ceil((n_x + n_y) / divisor) = q + ceil((r + n_y) / divisor) for
    # n_x = q·divisor + r: one lane vector per remainder r, each lane bias - ceil((r + n_y)/d);
    # with q·ones taken off, one start per size n_x (made once per size).
    biases = []
    for r in range(divisor):
        lane_of_size = [bias - (r + n + divisor - 1) // divisor for n in range(largest + 1)]
        biases.append(_packed(map(lane_of_size.__getitem__, sizes), lane_bytes))
    sparse_of = sparse.get
    if rows is None:
        # Each text pairs with the texts after it only: taken in blocks, each text's sums are
        # made over the lanes from its block's first text on (the lanes are independent, so
        # dropping the lower ones drops nothing else): about half the additions of full
        # lanes when the group has no partners, a quarter with as many partners as texts.
        step = max(BLOCK_MIN, -(-own_positions // BLOCKS))
        blocks: list[Sequence[int]] = [range(first, min(first + step, own_positions))
                                       for first in range(0, own_positions, step)]
    else:
        position_of = {number: position for position, number in enumerate(members)}
        blocks = [sorted(position_of[number] for number in set(rows) if number in position_of)]
    every = count == len(elements)  # members[k] == k
    for block in blocks:
        cut = block[0] if rows is None and block else 0  # the block's lanes start here
        if cut:
            shift = width * cut
            present = set(chain.from_iterable(map(bags.__getitem__, block)))
            block_lanes = {element: lanes[element] >> shift for element in present
                           if element in lanes}
            block_ones, block_tops = ones >> shift, tops >> shift
            block_biases = [vector >> shift for vector in biases]
        else:
            block_lanes, block_ones, block_tops, block_biases = lanes, ones, tops, biases
        lane_of = block_lanes.get
        starts: dict[int, int] = {}
        for position in block:
            bag = bags[position]
            begin = starts.get(sizes[position])
            if begin is None:
                quotient, remainder = divmod(sizes[position], divisor)
                begin = starts[sizes[position]] = block_biases[remainder] - quotient * block_ones
            total = sum(map(lane_of, bag, repeat(0)), begin)
            shared = Counter(chain.from_iterable(filter(None, map(sparse_of, bag))))
            if shared:
                total += _vector(shared.keys(), shared.values(), count, lane_bytes, cut)
            flags = total & block_tops
            if rows is None:
                start = position + 1  # each pair once: with the texts after this one
            else:
                start = 0
                flags &= ~(1 << (width * position + width - 1))  # not with itself
                if position >= own_positions:  # a partner pairs with the group's own only
                    flags &= (1 << (width * own_positions)) - 1
            # The top bit of lane k moved to bit 0 of its first byte: one byte per lane is 1
            # or 0.
            flagged = (flags >> (width * (start - cut) + width - 1)).to_bytes(
                (count - start) * lane_bytes, "little")
            if lane_bytes > 1:
                flagged = flagged[::lane_bytes]
            # Where the 1s are, in C: the lengths of the runs of 0s between them, summed.
            runs = flagged.split(b"\x01")
            runs.pop()
            hits = list(accumulate(map((1).__add__, map(len, runs)), initial=start - 1))
            del hits[0]
            if hits:
                yield members[position], hits if every else list(map(members.__getitem__, hits))


def matches(query: Shape, others: Sequence[Shape]) -> list[int]:
    """The numbers of the texts of `others` that `candidate_pairs` pairs with `query` (the
    same bounds), counted directly: one pass over their elements, for a single new text."""
    found: set[int] = set()
    for regime, divisor in (("tiny", TINY_DIVISOR), ("short", SHORT_DIVISOR),
                            ("long", LONG_DIVISOR)):
        mine = getattr(query, regime)
        if not mine:
            continue
        wanted = set(mine).__contains__
        for number, other in enumerate(others):
            theirs = getattr(other, regime)
            if theirs and number not in found \
                    and sum(map(wanted, theirs)) * divisor >= len(mine) + len(theirs):
                found.add(number)
    return sorted(found)


def words(tokens: Sequence[str]) -> set[str]:
    """The distinct words of a text as its short bag counts them: a Latin word by `word_key`,
    a CJK character as itself (the bag without its occurrence numbers)."""
    return set(map(word_key, tokens))


class Probe:
    """What one new text needs to find, among other texts known only by their words (as
    `words` gives them) and their number of tokens, every text `matches` would pair it with
    (`memctl add` looks for its candidates in the index this way: memctl.index.nearwords).

    - `exhaustive`: a text of LONG_MIN tokens or more pairs in the long regime, by shingles,
      which words alone do not bound: every text is a candidate.
    - `tiny`: the text has one or two words, so it also pairs by its characters (or its
      runs of characters) with every other such text, whatever their words (`Shape.tiny`,
      `char_runs`).
    - otherwise, the short regime: a pair shares at least (n_a + n_b) / SHORT_DIVISOR
      elements, and a text shares at most this text's occurrences (`counts`) of the words
      both hold: `may_pair(shared, size)` with `shared` that sum, `size` its n_b."""

    def __init__(self, tokens: Sequence[str]) -> None:
        self.size = len(tokens)
        self.counts = Counter(map(word_key, tokens))
        self.tiny = pairs_by_characters(tokens)
        self.exhaustive = self.size >= LONG_MIN

    def may_pair(self, shared: int, size: int) -> bool:
        # n_b ≤ SHORT_MAX (beyond, no short bag) and ≤ (SHORT_DIVISOR - 1)·n_a (it shares at
        # most n_a elements).
        if not 0 < size <= min(SHORT_MAX, (SHORT_DIVISOR - 1) * self.size):
            return False
        return shared * SHORT_DIVISOR >= self.size + size
