"""The one clock of memctl. `MEMCTL_NOW` overrides it everywhere (tests, reproducible reports)."""

from __future__ import annotations

import os
import re
from datetime import UTC, date, datetime, timedelta

from memctl.core.errors import VariableError, quoted

# The years a clock may say: git dates no commit after 2099 (nor, portably, before 1970),
# and a file stamped in year 1 is one memctl itself cannot read back (docs/security.md).
FIRST_YEAR, LAST_YEAR = 1970, 2099
# How far ahead of this machine's clock a time stamp may be and still count as what it says
# (clocks of machines differ; more than this is a wrong clock or a forged date).
FUTURE_TOLERANCE = timedelta(days=1)


def ahead(moment: datetime, reference: datetime | None = None) -> bool:
    """Whether `moment` is more than FUTURE_TOLERANCE ahead of `reference` (default: the later
    of `MEMCTL_NOW` and this machine's clock, `latest_now`): a time that proves nothing."""
    return moment - (latest_now() if reference is None else reference) > FUTURE_TOLERANCE


def now() -> datetime:
    """The current time in UTC, or `MEMCTL_NOW` when set (a time of 1970..2099)."""
    override = os.environ.get("MEMCTL_NOW")
    if override:
        parsed = parse_time(override)
        if parsed is None:
            raise VariableError(f"invalid value for MEMCTL_NOW: {quoted(override)} is not an ISO 8601 "
                             "time (2026-03-01T09:00:00Z); set one or unset MEMCTL_NOW")
        if not FIRST_YEAR <= parsed.year <= LAST_YEAR:
            raise VariableError(f"invalid value for MEMCTL_NOW: {quoted(override)} is outside the "
                             f"years {FIRST_YEAR}..{LAST_YEAR} (git cannot date a commit "
                             "then); set a time in them or unset MEMCTL_NOW")
        return parsed
    return datetime.now(UTC)


def seconds_setting(name: str, default: float, most: float = float("inf")) -> float:
    """The number of seconds the environment variable `name` sets (0 to `most`; `inf` when
    `most` is: for ever), else `default`; another value is a `VariableError` naming it (exit
    2)."""
    raw = os.environ.get(name)
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 <= value <= most:  # (NaN too)
        span = "0 or more (inf: for ever)" if most == float("inf") else f"from 0 to {most:g}"
        raise VariableError(f"invalid value for {name}: {raw[:40]!r} is not a number of "
                            f"seconds {span}; set one or unset {name}")
    return value


def latest_now() -> datetime:
    """The later of `now()` and the machine's own clock: what "in the future" is measured
    against (a `MEMCTL_NOW` set in the past must not make today's files look like they come
    from the future; docs/sync.md)."""
    return max(now(), datetime.now(UTC))


def format_time(moment: datetime) -> str:
    """UTC ISO 8601 with milliseconds and a Z, the form memctl writes into files."""
    if moment.tzinfo is not UTC:
        moment = moment.astimezone(UTC)
    if moment.year < 1000:  # strftime's %Y of such a year is the C library's to pad, or not
        return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
    # Formatted by hand: half the time of strftime, and `health` formats every note's dates
    # (~2 % of its first report at 10k notes, bench/bench_health.py).
    return (f"{moment.year}-{moment.month:02d}-{moment.day:02d}T{moment.hour:02d}:"
            f"{moment.minute:02d}:{moment.second:02d}.{moment.microsecond // 1000:03d}Z")


def now_text() -> str:
    return format_time(now())


def parse_time(text: object) -> datetime | None:
    """Parse what people write for a time: a date, a datetime with or without zone.

    Returns an aware UTC datetime, or None when the text is not a time. A bare date means
    midnight UTC; a datetime without zone is taken as UTC.
    """
    if isinstance(text, datetime):
        return text if text.tzinfo else text.replace(tzinfo=UTC)
    if isinstance(text, date):
        return datetime(text.year, text.month, text.day, tzinfo=UTC)
    if not isinstance(text, str):
        return None
    value = text.strip()
    if not value:
        return None
    try:
        # Python 3.11 reads `Z` and a space separator itself: the common case in one C call.
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return parse_time_spelled_out(value)
    return _in_utc(parsed)


def _in_utc(parsed: datetime) -> datetime | None:
    """`parsed` in UTC (a time without zone is UTC), or None when UTC has no such moment:
    `9999-12-31T23:59:59-23:59` is past the last day a datetime holds (OverflowError, which
    a hand-written or pushed `expires` turned into a failure of every command)."""
    try:
        return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).astimezone(UTC)
    except OverflowError:
        return None


def parse_time_spelled_out(value: str) -> datetime | None:
    """The reading `parse_time` falls back to (and a test holds its fast path equal to):
    `Z` spelled `+00:00`, a space between date and time spelled `T`."""
    value = value.strip()
    if value.endswith(("Z", "z")):
        value = value[:-1] + "+00:00"
    value = value.replace(" ", "T", 1) if re.match(r"\d{4}-\d\d-\d\d \d", value) else value
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return _in_utc(parsed)


# A span: a count and a unit. `m` is months (as in `3m`); minutes are spelled `min`. Months
# and years are the calendar's (`_add_months`), not 30 or 365 days.
_RELATIVE = re.compile(r"^(\d+)\s*(min|[hdwmy])$")
_SPAN_UNITS = {"min": timedelta(minutes=1), "h": timedelta(hours=1), "d": timedelta(days=1),
               "w": timedelta(days=7)}
_MONTHS = {"m": 1, "y": 12}
SPAN_EXAMPLES = "90min, 12h, 30d, 6w, 3m, 1y"


def _span(text: str) -> tuple[int, str] | None:
    match = _RELATIVE.match(text.strip().lower())
    return None if match is None else (int(match.group(1)), match.group(2))


def _shifted(text: str, base: datetime | None, sign: int) -> datetime | None:
    """`base` (default: now) moved by the span `text` (90min, 12h, 30d, 6w, 3m, 1y) forward
    (sign 1) or back (-1); None when `text` is not a span. A span beyond the calendar is a
    ValueError."""
    span = _span(text)
    if span is None:
        return None
    amount, unit = span
    try:
        if unit in _MONTHS:
            return _add_months(base or now(), sign * amount * _MONTHS[unit])
        return (base or now()) + sign * amount * _SPAN_UNITS[unit]
    except OverflowError:
        way = "ahead" if sign > 0 else "back"
        raise ValueError(f"{quoted(text)} is further {way} than any calendar goes") from None


def _add_months(moment: datetime, months: int) -> datetime:
    """`moment` that many calendar months later (earlier if negative), on the same day of
    the month or, past the end of a shorter month, its last day: 31 January + 1m is
    28 February (29th in a leap year), 29 February + 1y is 28 February."""
    total = moment.year * 12 + moment.month - 1 + months
    year, month = divmod(total, 12)
    month += 1
    if not 1 <= year <= 9999:
        raise OverflowError(year)
    last_day = 31 if month == 12 else (date(year, month + 1, 1) - timedelta(days=1)).day
    return moment.replace(year=year, month=month, day=min(moment.day, last_day))


# Days by name, counted from the day of `base` (UTC, the zone of every date memctl writes).
_DAY_WORDS = {"yesterday": -1, "today": 0, "tomorrow": 1}


def _named_day(text: str, base: datetime | None) -> date | None:
    """The UTC date `text` names as a word (yesterday, today, tomorrow), else None."""
    offset = _DAY_WORDS.get(text.strip().lower())
    if offset is None:
        return None
    return (base or now()).astimezone(UTC).date() + timedelta(days=offset)


def parse_expiry(text: str, base: datetime | None = None) -> str:
    """`--expires` accepts a date or time (kept as written), a span such as 12h, 30d, 6w,
    3m, 1y, or `tomorrow` (written as its date, as `1d` is). A span of days or more is written as the date it ends on; one of hours or
    minutes as the exact time (its date would often be today, already past). A moment that
    is not after `base` (default: now) is refused: the note would be stale from its first
    second, and the next sweep would archive it (docs/lifecycle.md)."""
    value = text.strip()
    base = base or now()
    moved = _shifted(value, base, 1)
    day = _named_day(value, base)
    if day is not None:
        written = day.isoformat()
    elif moved is not None:
        span = _span(value)
        if span is not None and span[1] in ("h", "min"):
            written = format_time(moved)
        else:
            written = moved.date().isoformat()
    else:
        written = value
    moment = parse_time(written)
    if moment is None:
        raise ValueError(f"{quoted(text)} is neither a date (2027-03-01), a span ({SPAN_EXAMPLES}) "
                         "nor tomorrow")
    if moment <= base:
        raise ValueError(f"{quoted(text)} is not in the future (now is {format_time(base)}); a note "
                         "that has already expired is archived by the next sweep")
    return written


def parse_since(text: str, base: datetime | None = None) -> datetime:
    """`--since` accepts a date/time, a span back from now (90min, 12h, 7d, 2w, 3m, 1y), or
    `today` / `yesterday` (from the start of that UTC day)."""
    value = text.strip()
    day = _named_day(value, base)
    if day is not None:
        return datetime(day.year, day.month, day.day, tzinfo=UTC)
    moved = _shifted(value, base, -1)
    if moved is not None:
        return moved
    parsed = parse_time(value)
    if parsed is None:
        raise ValueError(f"{quoted(text)} is neither a date (2026-11-01), a span ({SPAN_EXAMPLES}) "
                         "nor today or yesterday")
    return parsed
