"""Dates named in a query (memctl.core.dates; docs/search.md, "Dates in a query")."""

from __future__ import annotations

from datetime import date

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memctl.core import dates
from memctl.core.dates import Period, periods_in

TODAY = date(2026, 11, 30)


@pytest.mark.parametrize(("text", "first", "last"), [
    ("what did we change on 2026-03-04?", "2026-03-04", "2026-03-04"),
    ("the 2026-02 billing run", "2026-02-01", "2026-02-28"),
    ("on October 13, 2023", "2023-10-13", "2023-10-13"),
    ("on Oct. 13th 2023", "2023-10-13", "2023-10-13"),
    ("on 9 October, 2022", "2022-10-09", "2022-10-09"),
    ("in August 2023", "2023-08-01", "2023-08-31"),
    ("Feb 2024", "2024-02-01", "2024-02-29"),  # a leap year
    ("during 2025", "2025-01-01", "2025-12-31"),
    ("在2026年3月4日上线的", "2026-03-04", "2026-03-04"),
    ("2025年8月的故障", "2025-08-01", "2025-08-31"),
    ("2024年的预算", "2024-01-01", "2024-12-31"),
    # No year: the latest such day or month on or before today (2026-11-30).
    ("in March", "2026-03-01", "2026-03-31"),
    ("in December", "2025-12-01", "2025-12-31"),
    ("on May 3", "2026-05-03", "2026-05-03"),
    ("12月1日的会议", "2025-12-01", "2025-12-01"),
    ("11月30日", "2026-11-30", "2026-11-30"),
    ("on Feb 29", "2024-02-29", "2024-02-29"),  # the latest 29 February
    ("2月29日", "2024-02-29", "2024-02-29"),
    ("at 2026-03-04T10:00:00.000Z", "2026-03-04", "2026-03-04"),  # as memctl writes times
    ("on 2026-03-04 10:00", "2026-03-04", "2026-03-04"),
    ("on the 3rd of March 2026", "2026-03-03", "2026-03-03"),
    ("in Dec", "2025-12-01", "2025-12-31"),
    # Full-width digits, as an input method types them.
    ("２０２６年３月４日的发布", "2026-03-04", "2026-03-04"),
    ("１２月１日的会议", "2025-12-01", "2025-12-01"),
    ("on ２０２６-０３-０４", "2026-03-04", "2026-03-04"),
    ("October １３, ２０２３", "2023-10-13", "2023-10-13"),
])
def test_a_named_date_is_its_days(text: str, first: str, last: str) -> None:
    [period] = periods_in(text, TODAY)
    assert (period.first, period.last) == (first, last)
    assert period.text in text


@pytest.mark.parametrize("text", [
    "we may deploy on friday", "march the branch into main", "in march",  # verbs, not months
    "3个月以后", "version 2023.1", "port 2023", "the 30th", "a 10-20 range", "SEP-2023-12",
    "February 30, 2026", "2026-02-30", "2026-13-01", "within June", "Junebug 2023",
    "13 octopus", "123月", "the bug in Jan's code", "show the value in dec", "convert 10 dec to hex",
    "fits in 2048 bytes", "retry in 2025 ms", "sept 2025",
])
def test_what_is_no_date(text: str) -> None:
    assert periods_in(text, TODAY) == []


def test_each_period_once_in_order_and_three_at_most() -> None:
    found = periods_in("in March 2026 and in May 2026, and again in March 2026", TODAY)
    assert [p.label for p in found] == ["date:2026-03-01..2026-03-31", "date:2026-05-01..2026-05-31"]
    pasted = " ".join(f"2026-03-{day:02d} ok" for day in range(1, 29))
    assert [p.first for p in periods_in(pasted, TODAY)] == ["2026-03-01", "2026-03-02", "2026-03-03"]


_PIECES = [*"0123456789-年月日号 ,.", "October", "May", "march", "Dec", "2023", "in ", "13th",
           "during ", "\u3000", "x", "Auguſt", "ſept", "\u00a0", "İn ", "13TH", "1ſt", "2ND",
           *"０１２３９", "２０２３"]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=25).map("".join),
       st.dates(min_value=date(1971, 1, 1), max_value=date(2099, 12, 31)))
def test_any_text_gives_valid_periods(text: str, today: date) -> None:
    found = periods_in(text, today)
    for period in found:
        first, last = date.fromisoformat(period.first), date.fromisoformat(period.last)
        assert first <= last and (last - first).days < 366
        assert period.text and period.text in text
    # The quick test that spares most queries the pattern never drops a date the pattern reads.
    assert [(p.label, p.text) for p in found] == [
        (p.label, p.text) for p in periods_in_by_pattern(text, today)]


def periods_in_by_pattern(text: str, today: date) -> list[Period]:
    """periods_in without its quick test: every match of the pattern, read."""
    found: dict[tuple[str, str], Period] = {}
    readable = dates.folded_digits(text)
    for match in dates._PATTERN.finditer(readable):
        period = dates._period(match.groupdict(), text[match.start():match.end()], today)
        if period is not None:
            found.setdefault((period.first, period.last), period)
            if len(found) == dates.MAX_PERIODS:
                break
    return list(found.values())


def test_the_notation_of_a_date_is_its_day_and_month_numbers_and_the_chinese_marks() -> None:
    def notation(text: str) -> set[str]:
        return dates.notation_words(periods_in(text, TODAY))

    assert notation("2026年3月4日的发布") == {"2026", "3", "4", "年", "月", "日"}
    assert notation("２０２６年１２月") == {"2026", "12", "年", "月"}
    assert notation("on October 13, 2023") == {"13", "2023"}
    assert notation("in March 2026") == {"2026"}  # a month's name stays a word
    assert notation("during 2026") == set() and notation("2026年的预算") == {"年"}  # a year
    assert notation("what changed on 2026-03-04?") == {"2026", "03", "04"}
    assert notation("no date here") == set()


def test_an_ordinal_suffix_in_any_case_is_read() -> None:
    """The pattern is case-blind: `13TH` and `1ſt` once raised ValueError in int()."""
    for text, label in (("on October 13TH", "date:2026-10-13"), ("1ST of March", "date:2026-03-01"),
                        ("October 1ſt", "date:2026-10-01"), ("Oct. 3RD", "date:2026-10-03")):
        assert [p.label for p in periods_in(text, TODAY)] == [label], text


def test_a_letter_that_folds_to_ascii_names_no_month() -> None:
    """`ſ` (long s) matches `s` in a case-blind pattern: `in Auguſt` once raised KeyError."""
    assert periods_in("what happened in Auguſt?", TODAY) == []
    assert periods_in_by_pattern("what happened in Auguſt?", TODAY) == []
    assert [p.label for p in periods_in("what happened in August?", TODAY)] == [
        "date:2026-08-01..2026-08-31"]
