"""Candidate pairs for the similarity checks (memctl/core/nearpairs.py): the lanes count exactly
what they say, and on a store like the benchmark's the candidates find every pair the full
comparison finds while scoring a small share of all pairs (bench/bench_health.py measures
the same at 1k-100k notes)."""

from __future__ import annotations

import random
import sys
from collections import Counter
from itertools import combinations
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memctl.core import nearpairs
from memctl.core.nearpairs import (
    LONG_DIVISOR,
    SHORT_DIVISOR,
    TINY_DIVISOR,
    Shape,
    candidate_pairs,
    candidate_partners,
    matches,
)
from memctl.core.similarity import (
    _compared,
    candidates,
    compare,
    exhaustive_pairs,
    normalize,
    score,
    similar_pairs,
    tokens,
)

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
from gen_corpus import sentence  # noqa: E402


def _bound_holds(a: list[str] | None, b: list[str] | None, divisor: int) -> bool:
    """The rule, counted the slow way: shared elements (each occurrence its own element)
    at least (n_a + n_b) / divisor."""
    if not a or not b:
        return False
    shared = sum(min(a.count(e), b.count(e)) for e in set(a))
    return shared * divisor >= len(a) + len(b)


def _brute(shapes: list[Shape], own: int) -> set[tuple[int, int]]:
    return {(i, j) for i, j in combinations(range(len(shapes)), 2) if i < own and (
        _bound_holds(shapes[i].tiny, shapes[j].tiny, TINY_DIVISOR)
        or _bound_holds(shapes[i].short, shapes[j].short, SHORT_DIVISOR)
        or _bound_holds(shapes[i].long, shapes[j].long, LONG_DIVISOR))}


WORDS = st.sampled_from(["the", "a", "port", "5432", "5433", "deploy", "deploys", "数", "据",
                         "库", "redis", "cache", "never", "on", "fridays", "连", "接", "池"])


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(WORDS, max_size=14), min_size=2, max_size=24), st.data())
def test_the_lanes_count_exactly_what_the_rule_says(token_lists: list[list[str]], data) -> None:
    """Whatever the texts (repeated words, empty ones, some the group's own and some its
    partners), the pairs found are those whose bags meet the bound, no more, no fewer; with
    `rows`, those of the pairs that involve a row; one text against the rest, the same; by
    first text (`candidate_partners`, what the scoring reads), each pair once."""
    shapes = [Shape(words) for words in token_lists]
    own = data.draw(st.integers(1, len(shapes)))
    expected = _brute(shapes, own)
    assert set(candidate_pairs(shapes, own=own)) == expected
    by_first = [(i, j) for i, others in candidate_partners(shapes, own=own).items()
                for j in others]
    assert sorted(by_first) == sorted(expected)
    rows = set(data.draw(st.lists(st.integers(0, len(shapes) - 1), max_size=4)))
    assert set(candidate_pairs(shapes, own=own, rows=rows)) == \
        {pair for pair in expected if pair[0] in rows or pair[1] in rows}
    others = shapes[1:]
    assert matches(shapes[0], others) == sorted(
        j - 1 for i, j in _brute(shapes, 1) if i == 0)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(WORDS, max_size=14), min_size=2, max_size=40), st.data())
def test_texts_taken_in_blocks_pair_as_texts_taken_whole(token_lists: list[list[str]],
                                                         data) -> None:
    """A big group's texts are taken in blocks whose sums leave out the lanes before the
    block (`_lane_hits`): blocks of any size, the group's own texts and partners anywhere,
    the pairs are those whose bags meet the bound."""
    shapes = [Shape(words) for words in token_lists]
    own = data.draw(st.integers(1, len(shapes)))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(nearpairs, "BLOCK_MIN", data.draw(st.integers(1, 6)))
        patch.setattr(nearpairs, "BLOCKS", data.draw(st.integers(1, 12)))
        by_first = [(i, j) for i, others in candidate_partners(shapes, own=own).items()
                    for j in others]
        assert sorted(by_first) == sorted(_brute(shapes, own))


_SMALL_WORDS = st.sampled_from(["abc", "cab", "bca", "port", "trop", "5432", "数", "据",
                                "deploy", "on", "fridays"])


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(_SMALL_WORDS, min_size=1, max_size=4), min_size=2, max_size=30),
       st.integers(1, 8), st.data())
def test_a_texts_own_search_finds_what_the_groups_finds_for_it(
        token_lists: list[list[str]], cap: int, data) -> None:
    """What the health report's cache relies on: the search of one text's pairs
    (`candidate_pairs` with `rows` and `limit`) says the text is crowded exactly when the whole
    group's search counts it so (its candidates in every regime together, both directions),
    and otherwise finds the very pairs the group's search keeps for it."""
    shapes = [Shape(words) for words in token_lists]
    own = data.draw(st.integers(1, len(shapes)))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(nearpairs, "CANDIDATES_PER_TEXT", cap)
        group = {(i, j) for i, others in candidate_partners(shapes, own=own).items()
                 for j in others}
        every = _brute(shapes, own)
        for row in range(len(shapes)):
            count = sum(1 for pair in every if row in pair)
            alone = candidate_pairs(shapes, own=own, rows=[row], limit=cap)
            if count > cap:
                assert alone is None
            else:
                assert alone == sorted(pair for pair in group if row in pair) == sorted(
                    pair for pair in every if row in pair)


def test_a_text_crowded_by_two_regimes_together_is_crowded_for_its_own_search(
        monkeypatch) -> None:
    """`abc port` has two candidates by its characters (its words rearranged) and two by its
    words: four, over a limit of three, though neither regime alone is over it."""
    monkeypatch.setattr(nearpairs, "CANDIDATES_PER_TEXT", 3)
    shapes = [Shape(words) for words in (["abc", "port"], ["cab", "trop"], ["bca", "trop"],
                                         ["abc", "port", "5432"], ["abc", "port", "on"])]
    assert candidate_partners(shapes)[0] == [1, 2, 3, 4]
    assert candidate_pairs(shapes, rows=[0], limit=3) is None


def test_long_texts_are_paired_by_shared_runs_of_words(monkeypatch) -> None:
    """Long texts count shingles of SHINGLE words: an edited copy is a candidate, a text on
    another subject written with the same common words is not. Dense and sparse elements
    (a lane integer, or counted pair by pair) give the same pairs."""
    rng = random.Random(3)
    vocabulary = [f"w{n}" for n in range(400)]
    common = ["the", "of", "and", "to", "in", "is"]

    def text() -> list[str]:
        return [rng.choice(common) if rng.random() < 0.4 else rng.choice(vocabulary)
                for _ in range(600)]

    base, other = text(), text()
    edited = [rng.choice(vocabulary) if rng.random() < 0.15 else word for word in base]
    shapes = [Shape(base), Shape(other), Shape(edited)]
    assert shapes[0].short is None and shapes[0].long  # long texts: the long regime only
    assert candidate_pairs(shapes) == [(0, 2)]
    monkeypatch.setattr(nearpairs, "DENSE_SHARE", 10**9)  # every element a lane integer
    assert candidate_pairs(shapes) == [(0, 2)]
    monkeypatch.setattr(nearpairs, "DENSE_SHARE", 1)  # held by two texts: counted pair by pair
    assert candidate_pairs(shapes) == [(0, 2)]


def _corpus(seed: int, projects: int, per_project: int, shared: int
            ) -> tuple[dict[str, list[tuple[str, str]]], list[tuple[str, str]]]:
    """Notes as bench/gen_corpus.py writes them (English, Chinese, mixed; one to six
    sentences), in projects plus a `global` group."""
    rng = random.Random(seed)

    def body() -> str:
        language = rng.choices(["zh", "en", "mixed"], weights=[40, 30, 30])[0]
        return " ".join(sentence(rng, language) for _ in range(rng.choice([1, 1, 2, 2, 3, 4, 6])))

    groups = {f"p{p}": [(f"p{p}-{n}", body()) for n in range(per_project)] for p in range(projects)}
    return groups, [(f"g-{n}", body()) for n in range(shared)]


def test_on_a_store_like_the_benchmark_the_candidates_find_what_comparing_all_pairs_finds() -> None:
    """The health report's groups (a project's notes with global's as partners; global's own
    pairs in global's group): the candidate search finds exactly the pairs, with the same
    scores, that the full comparison (`exhaustive_pairs`, kept as the reference) finds,
    while scoring a small share of all pairs."""
    groups, shared = _corpus(seed=11, projects=3, per_project=350, shared=120)
    partner_keys = {key for key, _ in shared}
    scored = total = found = 0
    for own, partners in [*((items, shared) for items in groups.values()), (shared, [])]:
        everything = own + partners
        reference = [(a, b, score) for a, b, score in exhaustive_pairs(everything)
                     if not (a in partner_keys and b in partner_keys) or not partners]
        assert similar_pairs(own, partners=partners) == reference
        shapes = [Shape(tokens(_compared(text)[0])) for _, text in everything]
        scored += len(candidate_pairs(shapes, own=len(own)))
        total += len(own) * (len(own) - 1) // 2 + len(own) * len(partners)
        found += len(reference)
    assert found > 150  # template siblings: plenty of pairs to find
    assert scored < total / 10


@pytest.mark.parametrize(("first", "second"), [
    ("Tests run nightly", "Test runs nightly"),
    ("Deploy hooks run tests", "Deploy hook runs test"),
    ("The logs of the jobs rotate", "The log of the job rotates"),
])
def test_short_words_and_their_plurals_count_as_one(first: str, second: str) -> None:
    """A word cut to its first five letters kept `test`/`tests` and `run`/`runs` apart:
    these pairs score 90 and more, and shared too few words to be candidates, so `health`
    and `add` never saw them (docs/lifecycle.md)."""
    texts = [("a", normalize(first)), ("b", normalize(second))]
    assert score(texts[0][1], texts[1][1]) >= 90
    shapes = [Shape(tokens(_compared(text)[0])) for _, text in texts]
    assert candidate_pairs(shapes, own=2) == [(0, 1)]
    assert [(a, b) for a, b, _ in similar_pairs(texts)] == [("a", "b")]
    assert nearpairs.word_key("class") == "class" and nearpairs.word_key("classes") == "class"


def test_add_and_the_report_see_the_same_candidates() -> None:
    """`candidates` (the write-time check of `add`) scores what the pairs of the report
    would have scored: the same notes, the same scores."""
    groups, _ = _corpus(seed=5, projects=1, per_project=300, shared=0)
    items = groups["p0"]
    pairs = similar_pairs(items)
    counts = Counter(key for a, b, _ in pairs for key in (a, b))
    for new_key, _ in counts.most_common(5):
        new_text = dict(items)[new_key]
        found = candidates(new_text, [item for item in items if item[0] != new_key])
        expected = sorted(((b if a == new_key else a), score) for a, b, score in pairs
                          if new_key in (a, b))
        assert sorted(found) == expected and len(found) > 1
        assert all(compare(new_text, dict(items)[key]).score == score for key, score in found)


_TEXTS = st.sampled_from(
    ["use port 5432", "use port 5433", "Use port 5432 for the dev db", "使用 Redis 做缓存",
     "使用 Memcached 做缓存", "deploy on fridays", "never deploy on fridays", "a", "",
     "The blog backend uses PostgreSQL 16", "blog backend uses postgresql 16!"])


@settings(max_examples=60, deadline=None)
@given(st.lists(_TEXTS, min_size=1, max_size=10), st.lists(_TEXTS, max_size=6),
       st.lists(st.tuples(st.sampled_from(["edit", "edit-partner", "add", "drop", "to-global",
                                           "from-global"]),
                          st.integers(0, 20), _TEXTS), max_size=5))
def test_pairs_kept_with_partners_equal_finding_them_again(
        texts: list[str], shared: list[str], edits: list[tuple[str, int, str]]) -> None:
    """The health report's cache for a project's group with global's notes as partners: after
    edits of either side, and notes moved between the two, the pairs given are those found
    afresh (memory/paircache.py)."""
    import json

    from memctl.memory.paircache import group_pairs

    items = [(f"n{i}", text) for i, text in enumerate(texts)]
    partners = [(f"g{i}", text) for i, text in enumerate(shared)]
    _, entry = group_pairs(items, None, 70, partners)
    for step, (action, number, text) in enumerate(edits):
        if action == "add":  # a key no note has had (one per step: the same note is a move)
            items.append((f"n{100 + step}", text))
        elif action == "edit":
            items[number % len(items)] = (items[number % len(items)][0], text)
        elif action == "edit-partner" and partners:
            partners[number % len(partners)] = (partners[number % len(partners)][0], text)
        elif action == "drop" and len(items) > 1:
            del items[number % len(items)]
        elif action == "to-global" and len(items) > 1:  # a note moved into global, as it is
            partners.append(items.pop(number % len(items)))
        elif action == "from-global" and partners:  # and back into the project
            items.append(partners.pop(number % len(partners)))
        entry = json.loads(json.dumps(entry))
        pairs, entry = group_pairs(items, entry, 70, partners)
        fresh = similar_pairs(items, threshold=70, partners=partners)
        assert [(a, b, round(v, 9)) for a, b, v in pairs] == [(a, b, round(v, 9)) for a, b, v in fresh]
        shared_keys = {key for key, _ in partners}
        assert not any(a in shared_keys and b in shared_keys for a, b, _ in pairs)


@settings(max_examples=300, deadline=None)
@given(st.text(st.sampled_from("abcd54 数据'"), min_size=1, max_size=16),
       st.text(st.sampled_from("abcd54 数据'"), min_size=1, max_size=16))
def test_no_pair_of_one_or_two_word_texts_that_scores_is_missed(a: str, b: str) -> None:
    """Texts of one or two words are compared by their characters too, and that bound follows
    from the scores: `5432` / `5433` (75) or `3a` / `3da` (80) share no word, yet are found."""
    na, nb = normalize(a), normalize(b)
    items = [("a", a), ("b", b)]
    if na and nb and len(tokens(na)) <= 2 and len(tokens(nb)) <= 2 and score(a, b) >= 70:
        assert [(x, y) for x, y, _ in similar_pairs(items)] == [("a", "b")]
    assert similar_pairs(items) == exhaustive_pairs(items) or len(tokens(na)) > 2 \
        or len(tokens(nb)) > 2


@settings(max_examples=80, deadline=None)
@given(st.text(st.sampled_from("でーたべすのせつぞく54"), min_size=150, max_size=700),
       st.text(st.sampled_from("でーたべすのせつぞく54"), min_size=1, max_size=40))
def test_no_pair_of_long_one_word_texts_that_scores_is_missed(word: str, edit: str) -> None:
    """A word of a script written without spaces that memctl does not split into characters
    (kana) can be hundreds of characters long: two such notes are compared by their
    characters at any length, by the report and by `add` (8-bit lanes hold 190 characters;
    longer ones take 16-bit lanes)."""
    at = len(edit) % len(word)
    other = word[:at] + edit + word[at + len(edit):]
    items = [("a", word), ("b", other)]
    assert len(tokens(normalize(word))) == 1
    assert similar_pairs(items) == exhaustive_pairs(items)
    scored = exhaustive_pairs(items)
    assert [key for key, _ in candidates(word, [("b", other)])] == [b for _, b, _ in scored]


def test_a_long_one_word_note_and_its_edited_copy_are_a_pair() -> None:
    """The two notes of a review: 229 characters of kana each, the second with a word put in
    front and the port changed. Only their first five letters were compared."""
    sentence_ = "でーたべーすのせつぞくぷーるはかならずごせんよんひゃくさんじゅうにばんのぽーとをつかうこと"
    a, b = sentence_ * 5 + "5432", "ぜったいに" + sentence_ * 5 + "5433"
    assert len(a) > nearpairs.TINY_MAX
    pairs = similar_pairs([("a", a), ("b", b)])
    assert [(x, y) for x, y, _ in pairs] == [("a", "b")] == [
        (x, y) for x, y, _ in exhaustive_pairs([("a", a), ("b", b)])]
    assert compare(a, b).similar and [key for key, _ in candidates(b, [("a", a)])] == ["a"]


def test_long_one_word_notes_of_one_script_are_not_all_candidates() -> None:
    """Two long texts of one script share most of their characters whatever they say:
    compared by their characters, 1,000 notes of 3,000 kana each made every pair a
    candidate (210 s of scoring, where nothing scored 70). Past CHAR_RUNS_MIN characters
    they pair by their runs of characters instead: only an edited copy is a candidate."""
    rng = random.Random(5)
    kana = [chr(code) for code in range(0x3041, 0x3094)]
    texts = ["".join(rng.choice(kana) for _ in range(1_000)) for _ in range(200)]
    texts.append(texts[0][:500] + "ぜったいに" + texts[0][505:])  # an edited copy of the first
    shapes = [Shape(tokens(_compared(text)[0]), _compared(text)[0]) for text in texts]
    assert all(len(tokens(_compared(text)[0])) == 1 for text in texts)
    pairs = [(i, j) for i, others in candidate_partners(shapes).items() for j in others]
    assert (0, 200) in pairs and len(pairs) < 200
    items = [(f"k{n:03d}", text) for n, text in enumerate(texts)]
    assert [(a, b) for a, b, _ in similar_pairs(items)] == [("k000", "k200")]


@pytest.mark.parametrize("alphabet", ["01", "acgu", "でーたべすのせつぞく", "abcdefghij"])
def test_a_long_word_of_few_letters_and_its_copy_with_one_change_are_a_pair(
        alphabet: str) -> None:
    """Runs picked by their first character: a word made only of letters the hash does not
    pick (a bit string, an RNA sequence) had no runs at all, and its copy with one letter
    changed was found by neither `add` nor `health` (a review). Runs are picked by the whole
    run, and a text of few different runs keeps them all."""
    rng = random.Random(len(alphabet))
    word = "".join(rng.choice(alphabet) for _ in range(300))
    copy = alphabet[(alphabet.index(word[0]) + 1) % len(alphabet)] + word[1:]
    items = [("a", word), ("b", copy)]
    assert nearpairs.Shape(tokens(word), word).long
    assert similar_pairs(items) == exhaustive_pairs(items) != []
    assert [key for key, _ in candidates(copy, [("a", word)])] == ["a"]


def test_a_note_with_many_candidates_keeps_its_pair_with_one_that_has_few(monkeypatch) -> None:
    """Note A has more candidates than CANDIDATES_PER_TEXT (many notes holding a part of its
    words, none alike enough to be a pair) and R, an edited copy of A, comes after all of them
    in the group. The pair (A, R) is kept whatever the order, and the report's cache (the
    search of R's pairs alone) finds what a fresh report finds: R is not crowded."""
    monkeypatch.setattr(nearpairs, "CANDIDATES_PER_TEXT", 8)
    rng = random.Random(11)
    words = ["".join(rng.choice("bcdfghjklmnpqrstvwxz") + rng.choice("aeiou") for _ in range(4))
             for _ in range(40)]
    a_text = " ".join(words) + " port 5432"
    parts = []
    for _ in range(12):  # each a third of A's words, in A's order: a candidate of A, no pair
        chosen = sorted(rng.sample(range(40), 14))
        parts.append(" ".join(words[n] for n in chosen))
    r_words = list(words)
    r_words[3], r_words[17] = "changed", "other"
    r_text = " ".join(r_words) + " port 5433"
    items = [("a", a_text), *((f"p{n:02d}", text) for n, text in enumerate(parts)),
             ("r", r_text)]
    shapes = [Shape(tokens(_compared(text)[0])) for _, text in items]
    assert len(candidate_pairs(shapes, rows=[0])) > nearpairs.CANDIDATES_PER_TEXT
    expected = exhaustive_pairs(items)
    assert ("a", "r") in [(x, y) for x, y, _ in expected]
    assert similar_pairs(items) == expected
    for order in (items[::-1], [items[-1], *items[:-1]], [*items[1:], items[0]]):
        assert {frozenset((x, y)) for x, y, _ in similar_pairs(order)} == {
            frozenset((x, y)) for x, y, _ in expected}
    from memctl.core.similarity import pairs_involving

    assert pairs_involving(items, {"r"}) == [pair for pair in expected if "r" in pair[:2]]


def test_many_alike_notes_that_are_no_crowd_keep_every_pair() -> None:
    """160 notes that differ by a number: each has 159 candidates (no crowd: at most
    CANDIDATES_PER_TEXT), so every pair is found, more than SIMILAR_PER_TEXT for each note,
    and the report's cache after an edit gives what a fresh report gives."""
    from memctl.core.similarity import SIMILAR_PER_TEXT
    from memctl.memory.paircache import group_pairs

    items = [(f"n{i:04d}", f"deploy the service with helm chart version {i} on cluster alpha")
             for i in range(160)]
    expected = exhaustive_pairs(items)
    assert len(expected) == 160 * 159 // 2 > 160 * SIMILAR_PER_TEXT // 2
    assert similar_pairs(items) == expected
    _, entry = group_pairs(items, None, 70)
    items[150] = ("n0150", items[150][1].replace("alpha", "beta"))
    kept, _ = group_pairs(items, entry, 70)
    assert kept == similar_pairs(items) == exhaustive_pairs(items)


_ALIKE = st.sampled_from([f"deploy the service with chart {n} on cluster alpha" for n in range(6)]
                         + ["completely unrelated words zebra quilt", "use port 5432",
                            "use port 5433", "redis holds the sessions"])


@settings(max_examples=150, deadline=None)
@given(st.lists(_ALIKE, min_size=2, max_size=12), st.lists(_ALIKE, max_size=3),
       st.lists(st.tuples(st.sampled_from(["edit", "add", "drop", "to-global"]),
                          st.integers(0, 30), _ALIKE), min_size=1, max_size=4),
       st.integers(2, 6), st.integers(1, 3))
def test_pairs_kept_equal_a_fresh_report_when_notes_become_crowded_or_stop_being(
        texts: list[str], shared: list[str], edits: list[tuple[str, int, str]],
        cap: int, similar_cap: int) -> None:
    """Which notes are crowded decides which of their pairs are kept, and an edit of one note
    changes how many candidates the others have: with the bounds made small, a group of
    alike notes crosses them both ways, and the report's cache still gives what a fresh
    report gives (it compares afresh when a note may have come to be crowded)."""
    import json

    from memctl.core import similarity
    from memctl.memory import paircache
    from memctl.memory.paircache import group_pairs

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(nearpairs, "CANDIDATES_PER_TEXT", cap)
        patch.setattr(paircache, "CANDIDATES_PER_TEXT", cap, raising=False)
        patch.setattr(similarity, "SIMILAR_PER_TEXT", similar_cap)
        items = [(f"n{i}", text) for i, text in enumerate(texts)]
        partners = [(f"g{i}", text) for i, text in enumerate(shared)]
        _, entry = group_pairs(items, None, 70, partners)
        for number, (action, at, text) in enumerate(edits):
            if action == "edit":
                items[at % len(items)] = (items[at % len(items)][0], text)
            elif action == "add":
                items.append((f"a{number}", text))
            elif action == "drop" and len(items) > 1:
                del items[at % len(items)]
            elif action == "to-global" and len(items) > 1:
                partners.append(items.pop(at % len(items)))
            entry = json.loads(json.dumps(entry))
            pairs, entry = group_pairs(items, entry, 70, partners)
            assert pairs == similar_pairs(items, threshold=70, partners=partners)


def test_a_crowd_of_alike_notes_makes_pairs_in_proportion_to_its_size_not_its_square() -> None:
    """Thousands of near-copies (a remote pushing them, a script pasting them) made every
    pair: 5,000 took `health` 109 s and 3 GB. Each text now keeps at most
    CANDIDATES_PER_TEXT candidates and SIMILAR_PER_TEXT pairs after it, and every text of
    the crowd still pairs with its neighbours, so each is counted as a near-duplicate."""
    from memctl.core.similarity import SIMILAR_PER_TEXT

    size = 700
    items = [(f"n{i:04d}", f"spam note number {i} word{i % 97}") for i in range(size)]
    shapes = [Shape(tokens(_compared(text)[0])) for _, text in items]
    partners = candidate_partners(shapes)
    assert max(map(len, partners.values())) == nearpairs.CANDIDATES_PER_TEXT
    pairs = similar_pairs(items)
    assert len(pairs) <= SIMILAR_PER_TEXT * size < size * (size - 1) // 2
    assert {key for pair in pairs for key in pair[:2]} == {key for key, _ in items}
    # Each text's pairs are its nearest alike texts after it.
    first = [b for a, b, _ in pairs if a == "n0000"]
    assert sorted(first) == [f"n{i:04d}" for i in range(1, len(first) + 1)]
    # The health report's kept pairs ask for the pairs of changed notes only: in a crowd,
    # the same pairs as the whole search's, never all of the crowd's.
    from memctl.core.similarity import pairs_involving

    changed = {"n0000", "n0350", "n0699"}
    assert pairs_involving(items, changed) == [
        pair for pair in pairs if pair[0] in changed or pair[1] in changed]
