"""The WHERE clause every listing of the index shares: scope, filters, staleness."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

from memctl.core import arguments
from memctl.core.clock import now
from memctl.core.tokenize import FULL_WIDTH_ALNUM
from memctl.core.vocab import fact_key

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (start-up)
if TYPE_CHECKING:
    from typing import Any


def _timestamp(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, datetime):
        return value.timestamp()
    return arguments.since(str(value)).timestamp()


def tag_key(tag: str) -> str:
    """A tag as the index keeps it and a filter compares it: without blanks, a leading `#`,
    case or full width (`ｏｐｓ` is `ops`, as in a query: memctl.core.tokenize), whether it
    came from `tag:#x` in a query, a `--tag '#x'` option or a note's `tags:`
    (memctl.core.note.parse_tags reads `#x` in a file as `x`)."""
    return tag.strip().lstrip("#").strip().lower().translate(FULL_WIDTH_ALNUM)


def scope_sql(*, projects: Sequence[str] | None, types: Sequence[str] = (),
              tags: Sequence[str] = (), status: str | None = None, since: Any = None,
              include_stale: bool = False, kinds: Sequence[str] | None = None,
              exclude_tags: Sequence[str] = (), exclude_types: Sequence[str] = (),
              now_ts: float | None = None, subjects: Sequence[str] = (),
              predicates: Sequence[str] = (),
              tag_any: Sequence[Sequence[str]] = (),
              exclude_subjects: Sequence[str] = (),
              exclude_predicates: Sequence[str] = ()) -> tuple[str, list[Any]]:
    """A WHERE clause over `docs d` for the filters every listing shares."""
    clauses: list[str] = []
    params: list[Any] = []

    def among(column: str, values: Iterable[Any], negate: bool = False) -> None:
        values = list(dict.fromkeys(values))
        marks = ", ".join("?" * len(values))
        clauses.append(f"{column} {'NOT ' if negate else ''}IN ({marks})")
        params.extend(values)

    if kinds:
        among("d.kind", kinds)
    if projects is not None:
        among("d.project", projects)
    if types:
        among("d.type", [t.lower() for t in types])
    if exclude_types:
        among("d.type", [t.lower() for t in exclude_types], negate=True)
    # A tag that is nothing once blanks and `#` are gone (`--tag ""`, an empty variable)
    # filters nothing, for every listing alike (`search` found nothing where `list` listed all).
    # Every needed tag, and every excluded one, in one subquery each: one per tag made a
    # query of thousands of `tag:`/`-tag:` filters take time growing faster than its length
    # (8,000 exclusions, 90 KB: 23 s and 770 MB).
    needed = list(dict.fromkeys(filter(None, map(tag_key, tags))))
    if len(needed) == 1:
        clauses.append("d.rowid IN (SELECT doc FROM doc_tags WHERE tag = ?)")
        params.append(needed[0])
    elif needed:  # (a note holds a tag once: doc_tags' key is (tag, doc))
        clauses.append(f"d.rowid IN (SELECT doc FROM doc_tags WHERE tag IN "
                       f"({', '.join('?' * len(needed))}) GROUP BY doc HAVING COUNT(*) = ?)")
        params.extend([*needed, len(needed)])
    # `tag:a OR tag:b`: one of each group. A single group is one IN; several are one
    # subquery over (group, tag) rows, a note holding a tag of every group: a subquery per
    # group cost SQLite ~200 KB each (2,400 groups, a 64 KB query: 500 MB).
    groups = [keys for keys in (list(dict.fromkeys(filter(None, map(tag_key, group))))
                                for group in tag_any) if keys]
    if len(groups) == 1:
        clauses.append(f"d.rowid IN (SELECT doc FROM doc_tags WHERE tag IN "
                       f"({', '.join('?' * len(groups[0]))}))")
        params.extend(groups[0])
    elif groups:
        rows = ", ".join("(?, ?)" for keys in groups for _ in keys)
        clauses.append(f"d.rowid IN (SELECT t.doc FROM doc_tags t JOIN (VALUES {rows}) w "
                       "ON t.tag = w.column2 GROUP BY t.doc HAVING COUNT(DISTINCT w.column1) = ?)")
        params.extend(value for number, keys in enumerate(groups) for key in keys
                      for value in (number, key))
        params.append(len(groups))
    excluded = list(dict.fromkeys(filter(None, map(tag_key, exclude_tags))))
    if excluded:
        clauses.append(f"d.rowid NOT IN (SELECT doc FROM doc_tags WHERE tag IN "
                       f"({', '.join('?' * len(excluded))}))")
        params.extend(excluded)
    for column, values in (("d.subject_key", subjects), ("d.predicate_key", predicates)):
        if values:  # a note has one of each: `subject:a subject:b` (or `OR`) is either, as types
            among(column, [fact_key(value) for value in values])  # (vocab.fact_key: add's keys)
    for column, values in (("d.subject_key", exclude_subjects),
                           ("d.predicate_key", exclude_predicates)):
        if values:  # a note with no subject has none to leave out (NULL NOT IN … is no row)
            among(f"COALESCE({column}, '')", [fact_key(value) for value in values], negate=True)
    if status is not None:
        clauses.append("d.status = ?")
        params.append(status)
    elif not include_stale:
        clauses.append("d.status = 'active'")
    if not include_stale and (status is None or status == "active"):
        if now_ts is None:
            now_ts = now().timestamp()
        clauses.append("(d.expires_ts IS NULL OR d.expires_ts > ?)")
        params.append(now_ts)
    since_ts = _timestamp(since)
    if since_ts is not None:
        clauses.append("d.updated_ts >= ?")
        params.append(since_ts)
    # One clause per kind of filter, whatever their number: SQLite refuses an expression
    # more than 1,000 deep, and a clause per tag made 1,000 `tag:` filters a traceback.
    return (" AND ".join(clauses) or "1"), params
