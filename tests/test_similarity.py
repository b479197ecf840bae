"""Near-duplicates and contradiction candidates: what `add` merges, and what it only reports."""

from __future__ import annotations

import pytest
from conftest import python_lines
from hypothesis import given, settings
from hypothesis import strategies as st

from memctl.core.similarity import candidates, compare, normalize, score, similar_pairs

DUPLICATES = [
    ("The blog backend uses PostgreSQL 16; no ORM.",
     "the blog backend uses PostgreSQL 16, no ORM"),
    ("User prefers tabs over spaces in Python code",
     "The user prefers tabs over spaces in python code."),
    ("The API server listens on port 8080 in dev", "In dev the API server listens on port 8080"),
    ("Don't commit directly to main", "Do not commit directly to main"),
    ("Always run the tests with pytest -q before pushing.",
     "Always run tests with pytest -q before you push."),
    ("数据库使用 PostgreSQL 16，不用 ORM。", "数据库使用PostgreSQL 16, 不用ORM"),
    ("以后都用中文回复用户的问题", "以后都用中文回复用户问题"),
    ("记住：提交前先运行测试", "记住，提交之前先运行测试"),
    ("我们的项目使用 pnpm 管理依赖", "项目使用 pnpm 管理依赖"),
]

# Similar wording, different meaning: never merged, reported as possible contradictions.
CONTRADICTIONS = [
    ("use port 5432", "use port 5433", "number"),
    ("The blog backend uses MySQL", "The blog backend uses PostgreSQL", "value"),
    ("Always use tabs for indentation", "Never use tabs for indentation", "negation"),
    ("Caching is enabled in production", "Caching is disabled in production", "antonym"),
    ("When deploying to production, always run database migrations first",
     "When deploying to production, always run database migrations last", "antonym"),
    ("数据库连接池大小设为 20", "数据库连接池大小设为 50", "number"),
    ("部署前需要运行集成测试", "部署前不需要运行集成测试", "negation"),
    ("使用 Redis 做缓存", "使用 Memcached 做缓存", "value"),
    ("数据库用 MySQL", "数据库改用 PostgreSQL", "value"),
]

UNRELATED = [
    ("Use port 5432 for the database", "Redis cache runs on the default port"),
    ("The user likes dark mode in the editor", "Builds run on GitHub Actions with Ubuntu"),
    ("使用 Redis 做缓存", "使用 Kafka 做消息队列"),
    ("前端使用 React 18", "后端使用 Go 1.22"),
    ("Use port 5432", "Use port 5432 for the dev database and 5433 for the test database"),
    # Short notes that share a lead and nothing else: no statement to contradict.
    ("added from non-repo dir", "added from store root"),
    ("added from repo dir", "added from store root"),
]


@pytest.mark.parametrize(("a", "b"), DUPLICATES)
def test_near_duplicates_merge_in_english_and_chinese(a: str, b: str) -> None:
    verdict = compare(a, b)
    assert verdict.duplicate, verdict
    assert compare(b, a).duplicate


@pytest.mark.parametrize(("a", "b", "reason"), CONTRADICTIONS)
def test_similar_but_different_is_reported_not_merged(a: str, b: str, reason: str) -> None:
    verdict = compare(a, b)
    assert not verdict.duplicate
    assert verdict.similar
    assert reason in verdict.reasons


@pytest.mark.parametrize(("a", "b"), UNRELATED)
def test_unrelated_notes_are_neither(a: str, b: str) -> None:
    verdict = compare(a, b)
    assert not verdict.duplicate and not verdict.similar


def test_a_short_note_with_one_other_word_may_still_contradict() -> None:
    verdict = compare("port 5432", "port 5433")
    assert verdict.similar and not verdict.duplicate and "number" in verdict.reasons


def test_port_5432_and_5433_are_similar_not_merged() -> None:
    verdict = compare("use port 5432", "use port 5433")
    assert verdict.score >= 90  # nearly the same characters …
    assert not verdict.duplicate  # … but a different value
    assert verdict.similar


def test_normalisation_folds_width_case_punctuation_and_spacing() -> None:
    assert normalize("ＰｏｓｔｇｒｅＳＱＬ１６！") == normalize("postgresql16")
    assert normalize("数据库使用PostgreSQL 16") == normalize("数据库使用 PostgreSQL 16。")
    assert normalize("See [the docs](https://example.com/x) **now**") == "see the docs now"
    assert normalize("can’t") == normalize("cannot") == "can not"


def test_a_text_of_symbols_alone_keeps_them_and_scores_by_them() -> None:
    """Emoji or punctuation alone folded to "": every two such texts scored 100, alike."""
    assert normalize("🚀  🎉 ✅") == "🚀 🎉 ✅" and normalize("--> ！！") == "--> !!"
    assert normalize("🚀 deploy ✅") == "deploy" and normalize(" \n") == ""
    assert score("🚀 🎉 ✅", "🚀 🎉 ✅") == 100.0
    assert score("🚀", "✅") == 0.0 and not compare("🚀", "✅").duplicate


def test_thresholds_are_respected() -> None:
    a, b = "use port 5432", "use port 5433"
    assert not compare(a, b, similar_threshold=99).similar
    strict = compare("Deploy on Fridays", "deploy on fridays!", duplicate_threshold=100)
    assert strict.duplicate


def test_candidates_rank_best_first() -> None:
    others = [
        ("a", "Redis cache runs on the default port"),
        ("b", "the blog backend uses postgresql 16"),
        ("c", "The blog backend uses PostgreSQL 15"),
    ]
    found = candidates("The blog backend uses PostgreSQL 16", others, threshold=70)
    assert [key for key, _ in found] == ["b", "c"]
    assert found[0][1] == 100


def test_similar_pairs_finds_each_pair_once() -> None:
    items = [("1", "use port 5432"), ("2", "Deploys need approval"), ("3", "use port 5433")]
    pairs = similar_pairs(items, threshold=70)
    assert [(a, b) for a, b, _ in pairs] == [("1", "3")]


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80), st.text(max_size=80))
def test_score_is_symmetric_bounded_and_total(a: str, b: str) -> None:
    value = score(a, b)
    assert 0 <= value <= 100
    assert value == pytest.approx(score(b, a))
    compare(a, b)  # never raises, whatever the text


@settings(max_examples=100, deadline=None)
@given(st.text(min_size=1, max_size=80))
def test_a_text_is_a_duplicate_of_itself(text: str) -> None:
    verdict = compare(text, text)
    assert verdict.score == 100
    assert verdict.duplicate


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(
    ["use port 5432", "use port 5433", "Use port 5432 for the dev db", "使用 Redis 做缓存",
     "使用 Memcached 做缓存", "deploy on fridays", "never deploy on fridays", "a", "",
     "The blog backend uses PostgreSQL 16", "blog backend uses postgresql 16!"]),
    max_size=12))
def test_similar_pairs_finds_exactly_what_comparing_every_pair_finds(texts: list[str]) -> None:
    items = [(str(i), text) for i, text in enumerate(texts)]
    brute = {
        (str(i), str(j))
        for i in range(len(texts)) for j in range(i + 1, len(texts))
        if normalize(texts[i]) and normalize(texts[j]) and score(texts[i], texts[j]) >= 70
    }
    found = {(min(a, b, key=int), max(a, b, key=int)) for a, b, _ in similar_pairs(items,
                                                                                    threshold=70)}
    assert found == brute


_TEXTS = st.sampled_from(
    ["use port 5432", "use port 5433", "Use port 5432 for the dev db", "使用 Redis 做缓存",
     "使用 Memcached 做缓存", "deploy on fridays", "never deploy on fridays", "a", "",
     "The blog backend uses PostgreSQL 16", "blog backend uses postgresql 16!"])


@settings(max_examples=80, deadline=None)
@given(st.lists(_TEXTS, min_size=1, max_size=14),
       st.lists(st.tuples(st.sampled_from(["edit", "add", "drop", "reorder"]),
                          st.integers(0, 20), _TEXTS), max_size=6))
def test_pairs_kept_between_reports_equal_comparing_everything_again(
        texts: list[str], edits: list[tuple[str, int, str]]) -> None:
    """The health report's cache: after any edits, adds, deletes and reorderings, the pairs it
    gives are exactly those of a full comparison, in the same order (JSON round trip included)."""
    import json
    import random

    from memctl.memory.paircache import group_pairs

    items = [(f"n{i}", text) for i, text in enumerate(texts)]
    _, entry = group_pairs(items, None, 70)
    for action, number, text in edits:
        if action == "add" or not items:
            items.append((f"n{len(items) + number + 100}", text))
        elif action == "edit":
            key = items[number % len(items)][0]
            items[number % len(items)] = (key, text)
        elif action == "drop":
            del items[number % len(items)]
        else:
            random.Random(number).shuffle(items)
        entry = json.loads(json.dumps(entry))
        pairs, entry = group_pairs(items, entry, 70)
        assert [(a, b, round(v, 9)) for a, b, v in pairs] == \
            [(a, b, round(v, 9)) for a, b, v in similar_pairs(items, threshold=70)]


def test_token_codes_kept_from_group_to_group_never_make_two_tokens_one(monkeypatch) -> None:
    """The pair search codes tokens once for every group of a report (`_Views.remembered`:
    `global`'s notes are in every project's group). Past CODES distinct tokens the codes
    repeat, and a token of one group could get the code of another group's: the group is
    then coded on its own, and its scores are the texts' scores."""
    from memctl.core import similarity

    monkeypatch.setattr(similarity, "CODES", 21)
    similarity.forget()
    try:
        words = " ".join(f"t{n}" for n in range(20))
        assert similar_pairs([("a1", words), ("a2", words.replace("t19", "zz"))])  # 21 codes
        # `u` would get t0's code: "u x y" and "t0 x y" would be the same token sequence.
        assert similar_pairs([("b1", "u x y"), ("b2", "t0 x y")]) == [
            ("b1", "b2", score("u x y", "t0 x y"))]
        assert score("u x y", "t0 x y") < 80
    finally:
        similarity.forget()


def test_kept_pairs_that_do_not_read_right_are_found_afresh() -> None:
    """The kept pairs are positions among the kept items (memory/paircache.py): a position
    the entry does not have, or anything but a number, makes the group be compared again,
    never read into a wrong pair (-1 would name the last note)."""
    from memctl.memory.paircache import group_pairs

    items = [("a", "use port 5432"), ("b", "use port 5433"), ("c", "deploy on fridays"),
             ("d", "never deploy on fridays")]
    fresh, entry = group_pairs(items, None, 70)
    assert fresh and len(entry["pairs"]) == 3 * len(fresh)
    assert group_pairs(items, entry, 70)[0] == fresh
    for bad in ([0, -1, 90.0], [0, 9, 90.0], [0, 1, "90"], [True, 3, 90.0], [0, 1.0, 90.0],
                [0, 1]):
        assert group_pairs(items, {"items": entry["items"], "pairs": bad}, 70)[0] == fresh


def test_a_pair_judged_with_the_score_it_was_found_with_is_compared_the_same() -> None:
    """The health report judges the pairs `similar_pairs` finds with the scores it found them
    with (`judge`, no second scoring): the same score as `score`, the same verdict as
    `compare`, for short, Chinese and long (cut) texts."""
    from memctl.core.similarity import judge

    words = " ".join(f"step{i} runs" for i in range(150))
    long_text = "deploy the blog backend on fridays " * 400
    texts = [text for pair in DUPLICATES + CONTRADICTIONS + UNRELATED for text in pair[:2]]
    texts += [words + " on mysql", words + " on postgresql", long_text,
              long_text + "but never on a holiday", "deploy the blog backend on fridays"]
    found = similar_pairs([(str(number), text) for number, text in enumerate(texts)])
    assert len(found) > 20
    for a, b, value in found:
        first, second = texts[int(a)], texts[int(b)]
        assert value == score(first, second)
        for thresholds in ({}, {"duplicate_threshold": 95, "similar_threshold": 80}):
            assert judge(first, second, value, **thresholds) == compare(first, second, **thresholds)


def test_long_texts_are_compared_by_their_start() -> None:
    """A bounded part of a long note is compared (the module docstring): the cut falls
    between words, and a pair with a cut text is a duplicate only if the texts are the same."""
    from memctl.core.similarity import MAX_COMPARED_CHARS, UNCHECKED, _compared

    long_a = "deploy the blog backend on fridays " * 400  # 14,000 characters
    part, cut = _compared(long_a)
    assert cut and len(part) <= MAX_COMPARED_CHARS and part.endswith(("deploy", "the", "blog",
                                                                       "backend", "on", "fridays"))
    assert compare(long_a, long_a + "\n").duplicate
    changed = long_a + "but never on a holiday"
    verdict = compare(long_a, changed)
    assert verdict.score == 100 and not verdict.duplicate and verdict.similar
    assert verdict.reasons == (UNCHECKED,)
    short = "deploy the blog backend on fridays"
    assert _compared(short) == (short, False)
    assert compare(short, short + "!").reasons == ()  # short texts: as before


def test_a_replaced_word_is_found_in_texts_of_many_words() -> None:
    """Past ~200 words each, replaced words are found by the LCS in C, not difflib."""
    words = " ".join(f"step{i} runs" for i in range(150))  # 300 words
    assert "value" in compare(words + " on mysql", words + " on postgresql").reasons
    assert "value" not in compare(words + " pushing code", words + " push code").reasons


_PIECES = st.sampled_from(
    ["deploy the blog backend on fridays. ", "数据库连接池的超时是三十秒，", "[the docs](https://x.io/a) ",
     "[unclosed ", "] ", "](", ") ", "don't ", "ＡＢＣ全角 ", "\n\n## Heading\n", "使用PostgreSQL16。",
     "it’s fine ", "a\u3000b ", "[x]", "(y) ", "   ", "\t", "'quoted' ", "─── ", "🚀 ✅ ", "!!! "])


@settings(max_examples=120, deadline=None)
@given(st.lists(_PIECES, min_size=1, max_size=40), st.integers(1, 400), st.lists(_PIECES, max_size=8))
def test_a_long_text_read_from_its_start_compares_the_same_part(
        pieces: list[str], repeat: int, tail: list[str]) -> None:
    """A long text's compared part is normalised from its first characters only when that
    gives what normalising the text up to MAX_SOURCE_CHARS gives (links across the cut, a cut
    far from any blank, too little text left after normalising: the whole way instead)."""
    from memctl.core.similarity import _compared, _compared_whole

    text = "".join(pieces) * repeat + "".join(tail)
    _compared.cache_clear()
    assert _compared(text) == _compared_whole(text)


def test_a_long_text_opening_with_symbols_is_compared_by_its_words() -> None:
    """A banner of symbols longer than the start read first was taken for the compared part
    (symbols alone are kept: `normalize`), so two texts under the same banner were alike."""
    from memctl.core.similarity import _compared, _compared_whole

    banner = "─ " * 3500
    alpha = banner + " ".join(f"alpha{i}" for i in range(800))
    _compared.cache_clear()
    assert _compared(alpha) == _compared_whole(alpha) and _compared(alpha)[0].startswith("alpha0")
    assert not compare(alpha, banner + " ".join(f"beta{i}" for i in range(800))).duplicate


def test_the_start_of_a_long_text_is_enough_unless_a_link_straddles_the_cut() -> None:
    from memctl.core.similarity import _START_CHARS, _compared_from_start, _compared_whole

    plain = "deploy the blog backend on fridays " * 400
    assert _compared_from_start(plain) == _compared_whole(plain)
    straddling = "[" + "see the runbook " * 500 + "](https://example.invalid/runbook) " + plain
    assert _compared_from_start(straddling) is None  # read the whole way instead
    assert _compared_whole(straddling)[0].startswith("see the runbook")
    assert len(plain) > _START_CHARS


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["数据库", "使用", "PostgreSQL", "16", " ", "。", "，", "'", "don't",
                                 "can't", "cannot", "Ｐｏｓｔ", "_", "[a](b)", "\n", "ok'", "'s",
                                 "x", "库'", "\u3000", "won't"]), max_size=30))
def test_normalising_with_blanks_around_cjk_runs_gives_the_same_text(parts: list[str]) -> None:
    """normalize puts a blank on both sides of every CJK run where it used to insert one only
    between a CJK character and another non-blank (the look-arounds of `_BOUNDARY`), and
    skips the contraction pass on text without an apostrophe or `cannot`: the same text."""
    import re
    import unicodedata

    from memctl.core import similarity

    text = "".join(parts)
    cjk = similarity._CJK
    boundary = re.compile(rf"(?<=[{cjk}])(?=[^{cjk}\s])|(?<=[^{cjk}\s])(?=[{cjk}])")

    def before(value: str) -> str:
        value = unicodedata.normalize("NFKC", value)
        value = similarity._reduce_links(value)
        value = value.replace("\u2019", "'").replace("\u2018", "'").casefold()
        value = similarity._CONTRACTION.sub(similarity._expand_contraction, value)
        value = re.sub(rf"[^\w\s'{cjk}]", " ", value.replace("_", " "))
        value = boundary.sub(" ", value)
        return " ".join(part.strip("'") for part in value.split() if part.strip("'"))

    folded = unicodedata.normalize("NFKC", text).casefold()
    assert normalize(text) == (before(text) or " ".join(folded.split()))  # symbols alone kept


@settings(max_examples=1000)
@given(st.text(alphabet=st.sampled_from("a 1_'\u33ff\u3400\u4dbf\u4dc0\u4e00\u9fff\ua000"
                                        "\uf8ff\uf900\ufaff\ufb00\u3000。é"), max_size=3)
       | st.text(max_size=3))
def test_a_cjk_start_is_told_as_the_class_tells_it(text: str) -> None:
    """`_starts_cjk` (three comparisons) answers as the class of CJK ranges did, which is
    compiled only for a text that is not ASCII (its ~3 ms are not in every `memctl add`)."""
    import re

    from memctl.core import similarity

    assert similarity._starts_cjk(text) == bool(re.match(f"[{similarity._CJK}]", text))


def test_an_ascii_text_is_compared_without_compiling_the_cjk_classes() -> None:
    script = ("from memctl.core import similarity\n"
              "print(similarity.normalize(\"Don't use the [old](x) pool_size: 20!\"),"
              " similarity._cjk_rules.cache_info().currsize)\n"
              "print(similarity.normalize('数据库使用PostgreSQL 16。'),"
              " similarity._cjk_rules.cache_info().currsize)\n")
    assert python_lines(script) == ["do not use the old pool size 20 0",
                                    "数据库使用 postgresql 16 1"]


def _judged_the_long_way(a: str, b: str, value: float, duplicate_threshold: float = 88.0,
                         similar_threshold: float = 70.0):
    """`judge` as it was before it told apart texts that cannot say the same thing: the signs
    and difflib's matching for every pair scoring `similar_threshold` or more."""
    import difflib

    from memctl.core import similarity

    (na, cut_a), (nb, cut_b) = similarity._compared(a), similarity._compared(b)
    if value < similar_threshold:
        return similarity.Comparison(value, False, False, ())
    ta, tb = similarity.tokens(na), similarity.tokens(nb)

    def matched(x: list[str], y: list[str]) -> list[tuple[str, int, int, int, int]]:
        return difflib.SequenceMatcher(a=x, b=y, autojunk=False).get_opcodes() \
            if len(x) * len(y) <= similarity._DIFFLIB_MAX_PRODUCT else similarity._lcs_opcodes(x, y)

    opcodes, back = matched(ta, tb), matched(tb, ta)  # both orders: the cautious answer
    fa, fb = similarity._features(na), similarity._features(nb)
    signs = tuple(name for name, sign in (
        ("number", fa.numbers != fb.numbers), ("negation", fa.negations != fb.negations),
        ("antonym", similarity._swapped(fa.antonyms, fb.antonyms)),
        ("value", similarity._value_changed(ta, tb, opcodes)
         or similarity._value_changed(tb, ta, back))) if sign)
    same = similarity._same_statement(ta, tb, opcodes) or similarity._same_statement(tb, ta, back)
    unchecked = similarity._unchecked(a, b, cut_a or cut_b)
    reasons = signs + unchecked
    similar = bool(unchecked) or (bool(signs) and same)
    return similarity.Comparison(value, value >= duplicate_threshold and not reasons, similar,
                                 reasons if similar else ())


JUDGED_WORDS = st.sampled_from(["use", "port", "5432", "5433", "never", "not", "always",
                                "deploy", "deploys", "on", "off", "fridays", "the", "redis",
                                "mysql", "数", "据", "库", "不", "开启", "关闭", "tabs"])


@settings(max_examples=400, deadline=None)
@given(st.lists(JUDGED_WORDS, min_size=1, max_size=12),
       st.lists(JUDGED_WORDS, min_size=1, max_size=12),
       st.sampled_from([70.0, 75.5, 87.9, 88.0, 95.0, 100.0]))
def test_judging_tells_apart_texts_that_cannot_say_the_same_as_judging_them_fully(
        first: list[str], second: list[str], value: float) -> None:
    """`judge` skips the signs and the word matching of two texts that share too few words in
    the same order to say the same thing (a possible contradiction needs it, and a score
    below the merge threshold rules out a duplicate): whatever the texts and the score, the
    verdict is the one judging them fully gives."""
    from memctl.core.similarity import judge

    a, b = " ".join(first), " ".join(second)
    for thresholds in ({}, {"duplicate_threshold": 95.0, "similar_threshold": 75.0}):
        assert judge(a, b, value, **thresholds) == _judged_the_long_way(a, b, value, **thresholds)


@settings(max_examples=400, deadline=None)
@given(st.lists(JUDGED_WORDS, min_size=1, max_size=12),
       st.lists(JUDGED_WORDS, min_size=1, max_size=12))
def test_the_verdict_on_two_texts_does_not_depend_on_their_order(
        first: list[str], second: list[str]) -> None:
    """`add` judges the new note against the one it meets (new first), `health` the two
    notes in the order of their group: the same two texts get the same verdict either way
    (matching words is greedy, and its steps from a to b are not those from b to a)."""
    a, b = " ".join(first), " ".join(second)
    assert compare(a, b) == compare(b, a)


def test_a_pair_judged_one_way_by_add_and_another_by_health() -> None:
    """Found by reviews: merged when one was added first, a possible contradiction when
    the other was. The cautious verdict, either way: a changed value blocks the merge (the
    second pair was merged, losing `use`, when judged in one fixed order)."""
    for a, b in (("always never staging friday merge tests the",
                  "always never staging friday the run tests"),
                 ("never merge use port to", "never merge to port")):
        assert compare(a, b) == compare(b, a)
        assert not compare(a, b).duplicate and "value" in compare(a, b).reasons


def test_texts_that_cannot_say_the_same_are_judged_without_matching_their_words(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Two similar texts that share too few words in order (at most half of the longer's) are
    no contradiction, and below the merge threshold no duplicate: judged without difflib's
    matching (the health report judges ~60,000 pairs at 100,000 notes, a third of them such)."""
    from memctl.core import similarity

    def no_matching(*_args: object) -> list[tuple[str, int, int, int, int]]:
        raise AssertionError("the words were matched")

    monkeypatch.setattr(similarity, "_opcodes", no_matching)
    apart = ("deploy the blog on fridays after the tests pass",
             "the tests pass on fridays so deploy the blog after")
    assert similarity.judge(*apart, 80.0) == similarity.Comparison(80.0, False, False, ())
    with pytest.raises(AssertionError, match="matched"):  # saying the same: matched as before
        similarity.judge("use port 5432 for the blog", "use port 5433 for the blog", 80.0)


@settings(max_examples=1500, deadline=None)
@given(st.lists(st.sampled_from("abcde"), max_size=16), st.lists(st.sampled_from("abcde"),
                                                                  max_size=16))
def test_the_word_matching_is_difflibs(first: list[str], second: list[str]) -> None:
    """`_difflib_opcodes` (the matching the `value` sign reads, in one function without junk
    handling) gives what difflib's SequenceMatcher gives, repeated words and all."""
    import difflib

    from memctl.core.similarity import _difflib_opcodes

    assert _difflib_opcodes(first, second) == \
        difflib.SequenceMatcher(a=first, b=second, autojunk=False).get_opcodes()


# Text as notes hold it: words of a small vocabulary (so texts share some), CJK characters,
# and every kind of blank and punctuation normalising folds.
_WORDS = st.sampled_from(["use", "port", "5432", "the", "blog", "deploy", "never", "redis",
                          "使用", "缓存", "数据库", "不", "Ünïcode", "naïve", "ﬁle", "x"])
_GLUE = st.sampled_from([" ", "  ", "\t", "\n", "\u3000", "\u00a0", "\u2028", "\x1c", ", ",
                         "。", "", "_", "'", "-"])
_NOTE_TEXT = st.lists(st.tuples(_WORDS, _GLUE), max_size=24).map(
    lambda pairs: "".join(word + glue for word, glue in pairs))


@settings(max_examples=1500, deadline=None)
@given(st.one_of(st.text(max_size=60), _NOTE_TEXT), st.one_of(st.text(max_size=60), _NOTE_TEXT))
def test_a_ratio_scored_in_python_is_rapidfuzz_s_to_the_last_bit(a: str, b: str) -> None:
    """`add` scores a few short pairs in Python rather than import rapidfuzz (~20 ms): its
    characters', sorted words' and tokens' ratios must be rapidfuzz's, the same floats, and
    so its longest common subsequence of tokens (`_apart`)."""
    from rapidfuzz import fuzz
    from rapidfuzz.distance import Indel

    from memctl.core.similarity import _lcs_length, _python_ratio, _sorted_words, tokens

    assert _python_ratio(a, b) == fuzz.ratio(a, b)
    na, nb = normalize(a), normalize(b)
    assert _python_ratio(_sorted_words(na), _sorted_words(nb)) == fuzz.token_sort_ratio(na, nb)
    ta, tb = tokens(na), tokens(nb)
    assert _python_ratio(ta, tb) == fuzz.ratio(ta, tb)
    assert _lcs_length(ta, tb) == (len(ta) + len(tb) - Indel.distance(ta, tb)) // 2


@settings(max_examples=300, deadline=None)
@given(_NOTE_TEXT, st.lists(_NOTE_TEXT, max_size=10), st.sampled_from([50.0, 70.0, 88.0]))
def test_add_s_checks_scored_in_python_find_and_judge_what_rapidfuzz_finds(
        text: str, others: list[str], threshold: float) -> None:
    """`candidates` and `compare`, each pair scored in Python (what `add` does while rapidfuzz
    is not loaded), give what every text scored by rapidfuzz gives: the same keys, order,
    scores and verdicts."""
    from memctl.core import similarity

    pool = [(f"k{number}", other) for number, other in enumerate(others)]
    with pytest.MonkeyPatch.context() as patch:  # every text through the views, in C
        patch.setattr(similarity, "_FEW_TEXTS", -1)
        patch.setattr(similarity, "_in_python", lambda a, b: False)
        expected = candidates(text, pool, threshold=threshold)
        verdicts = [compare(text, other) for other in others]
    with pytest.MonkeyPatch.context() as patch:  # as if rapidfuzz were not loaded
        patch.setattr(similarity, "_in_python",
                      lambda a, b: len(a) * len(b) <= similarity._PYTHON_LCS_MAX)
        assert candidates(text, pool, threshold=threshold) == expected
        assert [compare(text, other) for other in others] == verdicts
    # Each score is the pair's own (`score`): `add` judges the pair with it (memory/checks.py).
    texts = dict(pool)
    assert [value for _, value in expected] == [score(text, texts[key]) for key, _ in expected]


def test_an_add_beside_a_near_duplicate_does_not_load_rapidfuzz(tmp_path) -> None:
    """The checks of an `add` whose text is near a note's (reported as similar, then merged)
    score the pair in Python: rapidfuzz's import is no part of the command."""
    import json
    import subprocess
    import sys

    store = tmp_path / "store"
    script = ("import atexit, sys\n"
              "atexit.register(lambda: print('rapidfuzz' in sys.modules, file=sys.stderr))\n"
              "from memctl.cli import main\n"
              "sys.argv = ['memctl', '--store', sys.argv[1], *sys.argv[2:]]\n"
              "main()\n")

    def memctl(*args: str) -> tuple[dict, str]:
        ran = subprocess.run([sys.executable, "-c", script, str(store), *args],
                             capture_output=True, text=True, check=True)
        return json.loads(ran.stdout or "{}"), ran.stderr.strip().splitlines()[-1]

    subprocess.run([sys.executable, "-m", "memctl", "init", str(store)], check=True,
                   capture_output=True)
    first, _ = memctl("add", "--project", "blog", "The blog backend uses PostgreSQL 16",
                      "--json")
    similar, loaded = memctl("add", "--project", "blog", "The blog backend uses PostgreSQL 15",
                             "--json")
    assert (similar["similar"], loaded) == ([first["id"]], "False")
    merged, loaded = memctl("add", "--project", "blog", "the blog backend uses PostgreSQL 16!",
                            "--json")
    assert (merged["action"], merged["id"], loaded) == ("merged", first["id"], "False")


def test_scoring_in_python_stays_within_its_budget() -> None:
    """A pool of many long candidates, or a pair whose words `judge` matches with rapidfuzz
    anyway (more than 200 x 200 tokens), is left to rapidfuzz: Python scores only where it
    costs less than rapidfuzz's import."""
    from memctl.core import similarity

    latin = normalize(" ".join(f"deploy{number} step" for number in range(70)))
    assert similarity._scored_here(latin, [latin], [0], 70.0) == [(0, 100.0)]
    many = [latin] * (similarity._PYTHON_LCS_MAX // (len(latin) * len(latin)) + 1)
    assert similarity._scored_here(latin, many, list(range(len(many))), 70.0) is None
    chinese = normalize("数据库连接池大小设为二十" * 20)  # 240 tokens, 240 characters
    assert len(chinese) * len(chinese) <= similarity._PYTHON_LCS_MAX
    assert similarity._scored_here(chinese, [chinese], [0], 70.0) is None
    assert similarity._scored_here(chinese[:150], [chinese[:150]], [0], 70.0) == [(0, 100.0)]
