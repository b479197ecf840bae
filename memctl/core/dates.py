"""Dates named in a query: `on October 13, 2023`, `in August 2023`, `in June`, `2023-10-13`,
`2023年8月`, `10月13日`, `２０２３年８月` (pure).

A question that names when something happened (`what did we decide in March?`) is answered
by a note written then: the search counts a note whose `created` or `updated` day falls in
the period as matching one more word of the query (docs/search.md, "Dates in a query").
A date without a year is the latest one on or before today: `in June` asked in January 2024
is June 2023. Relative dates (`last week`, `yesterday`) are not read: an agent relaying a
person's words cannot know the day they were said.

Each pattern is a fixed sequence of bounded pieces, so a scan is linear in the query.
"""

from __future__ import annotations

import re
from datetime import date, timedelta

from memctl.core.lazyre import LazyPattern

_MONTHS = {
    "january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3, "april": 4,
    "apr": 4, "may": 5, "june": 6, "jun": 6, "july": 7, "jul": 7, "august": 8, "aug": 8,
    "september": 9, "sept": 9, "sep": 9, "october": 10, "oct": 10, "november": 11, "nov": 11,
    "december": 12, "dec": 12,
}
_MONTH = "(?:" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?:[12][0-9]|3[01]|0?[1-9])(?:st|nd|rd|th)?"
_YEAR = r"(?:19[7-9][0-9]|20[0-9][0-9])"

# A year said as a number of something is no year (`retry in 2025 ms`, `fits in 2048 bytes`).
_UNIT_AFTER = (r"(?!\s*(?:ms|s|secs?|seconds?|mins?|minutes?|h|hours?|b|bytes?|kb|mb|gb|tb|k|px"
               r"|rows?|lines?|items?|requests?|req|qps|rps|users?|times)(?![A-Za-z]))")
# One alternation, longest forms first; the named groups say which form matched. The edges
# are ASCII letters, digits, `-` and an apostrophe (`Jan's`) only: Chinese has no spaces
# around a date. An ISO date may go on with a time (`2026-03-04T10:00:00Z`).
_EDGE = "0-9A-Za-z'’-"
_PATTERN = LazyPattern(
    rf"(?<![{_EDGE}])(?:"
    rf"(?P<iso_y>{_YEAR})-(?P<iso_m>0[1-9]|1[0-2])(?:-(?P<iso_d>0[1-9]|[12][0-9]|3[01])"
    rf"(?:[T ][0-2][0-9]:[0-5][0-9](?::[0-5][0-9](?:\.[0-9]{{1,9}})?)?Z?)?)?(?![{_EDGE}])"
    rf"|(?P<md_m>{_MONTH})\s+(?P<md_d>{_DAY})(?:,?\s+(?P<md_y>{_YEAR}))?(?![{_EDGE}])"
    rf"|(?P<dm_d>{_DAY})\s+(?:of\s+)?(?P<dm_m>{_MONTH}),?(?:\s+(?P<dm_y>{_YEAR}))?(?![{_EDGE}])"
    rf"|(?P<my_m>{_MONTH}),?\s+(?P<my_y>{_YEAR})(?![{_EDGE}])"
    rf"|(?:in|during)\s+(?P<in_m>{_MONTH})(?![{_EDGE}])(?!,?\s+\d)"
    rf"|(?:in|during)\s+(?P<in_y>{_YEAR})(?![{_EDGE}]){_UNIT_AFTER}"
    rf"|(?P<zh_y>{_YEAR})\s*年(?:\s*(?P<zh_m>1[0-2]|0?[1-9])\s*月(?:\s*(?P<zh_d>[12][0-9]|3[01]|0?[1-9])\s*[日号])?)?"
    rf"|(?P<zm_m>1[0-2]|0?[1-9])\s*月(?:\s*(?P<zm_d>[12][0-9]|3[01]|0?[1-9])\s*[日号])?"
    r")",
    re.IGNORECASE,
)


# Full-width digits (`２０２６年３月`, as a Chinese or Japanese input method may type them) are
# read as ASCII ones: one character for one, so a match's place is the same in the query.
_FULL_WIDTH_DIGITS = str.maketrans("０１２３４５６７８９", "0123456789")

# Every form has a digit but `in March`, whose month is a whole run of ASCII letters: a query
# with neither (most) is answered without compiling _PATTERN (~3 ms of a search's start).
_DIGIT = re.compile("[0-9]")
_LETTERS = re.compile("[A-Za-z]+")


def _may_name_a_date(text: str) -> bool:
    return _DIGIT.search(text) is not None or any(
        word.lower() in _MONTHS for word in _LETTERS.findall(text))


class Period:
    """A span of days, `first` to `last` inclusive (`YYYY-MM-DD`), named in a query by
    `text`."""

    __slots__ = ("first", "last", "text")

    def __init__(self, first: date, last: date, text: str) -> None:
        self.first = first.isoformat()
        self.last = last.isoformat()
        self.text = text

    def __repr__(self) -> str:
        return f"Period({self.first}..{self.last}, {self.text!r})"

    @property
    def label(self) -> str:
        """How --explain names it: `date:2023-10-13`, `date:2023-08-01..2023-08-31`."""
        return f"date:{self.first}" if self.first == self.last else f"date:{self.first}..{self.last}"


MAX_PERIODS = 3  # a query naming more is a pasted log, not a question about a time


def periods_in(text: str, today: date) -> list[Period]:
    """The dates and months and years `text` names, each once, in order of appearance; at
    most MAX_PERIODS of them (the search reads the notes of each)."""
    found: dict[tuple[str, str], Period] = {}
    readable = folded_digits(text)
    if not _may_name_a_date(readable):
        return []
    for match in _PATTERN.finditer(readable):
        period = _period(match.groupdict(), text[match.start():match.end()], today)
        if period is not None:
            found.setdefault((period.first, period.last), period)
            if len(found) == MAX_PERIODS:
                break
    return list(found.values())


# The characters that write a Chinese date around its numbers.
_DATE_MARKS = frozenset("年月日号")


def notation_words(periods: list[Period]) -> set[str]:
    """The words that only write the dates read (`2026`, `3` and `月` of `2026年3月`, `13`
    of `October 13`): their numbers (full-width digits as ASCII) and 年 月 日 号. As words of
    the query they matched every note with a `3` (`Python 3.11`) or a `2026` in it, and
    outweighed the notes written then; the date itself stands for them. The number of a
    date that is a whole year (`in 2026`, `2026年`) and a month's name stay words (`the 2026
    roadmap`, `the October release`)."""
    words: set[str] = set()
    for period in periods:
        whole_year = period.first.endswith("-01-01") and period.last.endswith("-12-31")
        run = ""
        for char in folded_digits(period.text) + " ":
            if "0" <= char <= "9":
                run += char
                continue
            if 1 <= len(run) <= 2 or (len(run) == 4 and not whole_year):
                words.add(run)
            run = ""
            if char in _DATE_MARKS:
                words.add(char)
    return words


def folded_digits(text: str) -> str:
    """`text` with full-width digits as ASCII ones (one character for one)."""
    return text.translate(_FULL_WIDTH_DIGITS)


def _period(groups: dict[str, str | None], text: str, today: date) -> Period | None:
    year = _number(groups, "iso_y", "md_y", "dm_y", "my_y", "in_y", "zh_y")
    month_name = groups["md_m"] or groups["dm_m"] or groups["my_m"] or groups["in_m"]
    if month_name is not None:
        name = month_name.rstrip(".").lower()
        if not month_name[0].isupper() and (len(name) == 3 or name in ("may", "march", "sept")):
            # `may` and `march` are verbs, `dec`, `mar`, `jan` words or numbers' bases as
            # often as months: those only as names (`show it in dec`, `convert 10 dec`).
            return None
        month: int | None = _MONTHS.get(name)
        if month is None:  # a letter that folds to an ASCII one (`Auguſt`): no month's name
            return None
    else:
        month = _number(groups, "iso_m", "zh_m", "zm_m")
    day = _number(groups, "iso_d", "md_d", "dm_d", "zh_d", "zm_d")
    if month is None:
        if year is None:
            return None
        return Period(date(year, 1, 1), date(year, 12, 31), text.strip())
    if year is None:
        # The latest such day or month on or before today (a 29 February: of a leap year).
        year = today.year
        if (month, day or 1) > (today.month, today.day if day else 1):
            year -= 1
        while (month, day) == (2, 29) and _days_in(year, 2) == 28:
            year -= 1
    last_day = _days_in(year, month)
    if day is None:
        return Period(date(year, month, 1), date(year, month, last_day), text.strip())
    if day > last_day:
        return None
    return Period(date(year, month, day), date(year, month, day), text.strip())


def _days_in(year: int, month: int) -> int:
    """The number of days of a month (no `calendar`: it imports `locale` at start-up)."""
    following = date(year + 1, 1, 1) if month == 12 else date(year, month + 1, 1)
    return (following - timedelta(days=1)).day


def _number(groups: dict[str, str | None], *names: str) -> int | None:
    """The number of the first group that matched, without what follows its digits (`13th`,
    `13TH`, `1ſt`: the pattern is case-blind, and `ſ` folds to `s`)."""
    for name in names:
        value = groups[name]
        if value is not None:
            end = 0
            while end < len(value) and value[end] in "0123456789":
                end += 1
            return int(value[:end])
    return None
