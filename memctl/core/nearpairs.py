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
  words the same words: no pair of two such texts is missed.
- **Long texts** (at least LONG_MIN words) are bags of their shingles (SHINGLE words in a
  row) that start with one of a fixed eighth of all words (a crc32 of the word: the same
  shingles are kept in every text, so shared ones stay shared); candidates share a tenth of
  them. Single words say little about long texts (two unrelated ones share most of their
  commonest words); runs of four say whether one is an edited copy of the other.
  Texts of LONG_MIN..SHORT_MAX words are both, so two texts within a factor of two of each
  other's length (the ratios need 0.54) meet in at least one of the two.

These bounds are not implied by the scores, so a pair can be missed: one that scores 70 or
more with less than half of its words shared (a typo in most words), or two long texts that
only share their commonest words (their sorted words align). bench/bench_health.py measures
it: 99.92 % of the pairs scoring 70+ on the 10k benchmark store, all of those the report
lists. `similarity.exhaustive_pairs` keeps the full comparison as the reference.

How shares are counted: the texts are numbered, and an element held by many texts gets one
Python integer with a lane of 8 bits (16 for long texts) per text, holding 1 where the text
has the element. The sum of the integers of one text's elements holds, in each lane, what that
text shares with every other (additions in C over a few hundred machine words); a bias per
lane turns "at least the bound" into the top bit of the lane. Elements held by few texts are
counted pair by pair instead, so memory stays linear in the number of elements.
"""

from __future__ import annotations

import zlib
from collections import Counter
from collections.abc import Collection, Sequence
from itertools import chain, compress, repeat

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
TINY_DIVISOR = 3  # shared ≥ (n_a + n_b) / 3: Dice ≥ 2/3

Pair = tuple[int, int]


def short_elements(tokens: Sequence[str]) -> list[str]:
    """The bag of a short text: each word (a Latin word cut to STEM characters; every CJK
    character is a word of one), each occurrence from the second on numbered (`the`,
    `the\x1f1`, ...), in no particular order."""
    counts = Counter([token[:STEM] for token in tokens])
    out = list(counts)
    out.extend(f"{word}\x1f{number}" for word, count in counts.items() if count > 1
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
        if 0 < size <= TINY_WORDS:
            text = " ".join(tokens) if text is None else text
            self.tiny = tiny_elements(text) if len(text) <= TINY_MAX else None
        else:
            self.tiny = None
        self.short = short_elements(tokens) if 0 < size <= SHORT_MAX else None
        self.long = long_elements(tokens) if size >= LONG_MIN else None


def candidate_pairs(shapes: Sequence[Shape], own: int | None = None,
                    rows: Collection[int] | None = None) -> list[Pair]:
    """Candidate pairs (i, j), i < j, sorted. Texts [0, own) are the group's own and texts
    [own, count) its partners: pairs of two partners are left out (a project's notes with the
    global notes: global pairs are looked for once, in global's own group). With `rows`, only
    pairs involving one of those texts."""
    own = len(shapes) if own is None else own
    found: set[Pair] = set()
    found.update(_lane_pairs([shape.tiny for shape in shapes], own, rows, 8, TINY_DIVISOR))
    found.update(_lane_pairs([shape.short for shape in shapes], own, rows, 8, SHORT_DIVISOR))
    found.update(_lane_pairs([shape.long for shape in shapes], own, rows, 16, LONG_DIVISOR))
    return sorted(found)


def _lane_pairs(elements: Sequence[list[str] | None], own: int,
                rows: Collection[int] | None, width: int, divisor: int) -> list[Pair]:
    """The pairs whose bags share at least ceil((n_a + n_b) / divisor) elements (see the
    module docstring for the lanes)."""
    members = [number for number, bag in enumerate(elements) if bag]
    if len(members) < 2:
        return []
    bags: list[list[str]] = [elements[number] for number in members]  # type: ignore[misc]
    lane_bytes = width // 8
    count = len(members)
    size = count * lane_bytes
    own_positions = sum(1 for number in members if number < own)  # own texts come first
    # Which texts hold each element (one held by a single text can be shared with none).
    # Elements held by many texts get a lane integer; the others are counted pair by pair,
    # so memory stays linear in the number of elements: at most DENSE_SHARE integers per
    # element of the average text.
    dense_from = max(2, count // DENSE_SHARE)
    frequency = Counter(chain.from_iterable(bags))
    holders: dict[str, list[int]] = {element: [] for element, seen in frequency.items() if seen > 1}
    del frequency
    for position, bag in enumerate(bags):
        for element in bag:
            found = holders.get(element)
            if found is not None:
                found.append(position)
    lanes: dict[str, int] = {}
    sparse: dict[str, list[int]] = {}
    for element, positions in holders.items():
        if len(positions) < dense_from:
            sparse[element] = positions
            continue
        raw = bytearray(size)
        for position in positions:
            raw[position * lane_bytes] = 1
        lanes[element] = int.from_bytes(raw, "little")
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
    # n_x = q·divisor + r: one lane vector per remainder r, each lane bias - ceil((r + n_y)/d).
    biases = [int.from_bytes(b"".join((bias - (r + n + divisor - 1) // divisor).to_bytes(
        lane_bytes, "little") for n in sizes), "little") for r in range(divisor)]
    lane_of, sparse_of = lanes.get, sparse.get
    if rows is None:
        wanted: Sequence[int] = range(own_positions)
    else:
        position_of = {number: position for position, number in enumerate(members)}
        wanted = sorted(position_of[number] for number in set(rows) if number in position_of)
    pairs: list[Pair] = []
    for position in wanted:
        bag = bags[position]
        quotient, remainder = divmod(sizes[position], divisor)
        total = sum(map(lane_of, bag, repeat(0))) + biases[remainder] - quotient * ones
        shared = Counter(chain.from_iterable(filter(None, map(sparse_of, bag))))
        if shared:
            raw = bytearray(size)
            for other, number in shared.items():
                raw[other * lane_bytes:(other + 1) * lane_bytes] = number.to_bytes(
                    lane_bytes, "little")
            total += int.from_bytes(raw, "little")
        flags = total & tops
        if rows is None:
            start = position + 1  # each pair once: with the texts after this one
        else:
            start = 0
            flags &= ~(1 << (width * position + width - 1))  # not with itself
            if position >= own_positions:  # a partner pairs with the group's own only
                flags &= (1 << (width * own_positions)) - 1
        # The top bit of lane k moved to bit 0 of byte k·lane_bytes: one byte per lane to find.
        flagged = (flags >> (width * start + width - 1)).to_bytes(
            (count - start) * lane_bytes, "little")
        first = members[position]
        at = flagged.find(1)
        while at >= 0:
            other = members[start + at // lane_bytes]
            pairs.append((first, other) if first < other else (other, first))
            at = flagged.find(1, at + lane_bytes)
    return pairs


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
