"""Ranked search (the recall block is `memctl.services.recall`). On `memctl search`'s start-up path, so
this module imports nothing the search does not need (tests/test_layers.py)."""

from __future__ import annotations

from memctl.core import arguments
from memctl.core.arguments import MAX_TAGS
from memctl.core.errors import ArgumentError
from memctl.core.query import Query, parse, without_scope_words
from memctl.core.vocab import GLOBAL, MAX_LIMIT
from memctl.disk.counters import leave_open_at_exit, record_access
from memctl.disk.counters import open_ahead as open_counters_ahead
from memctl.disk.layout import DEFAULT_PROJECT
from memctl.index.db import Index, ParseError, fresh_during, heals_damaged_index, open_ahead
from memctl.index.search import CLOSE, OPEN, Hit  # OPEN/CLOSE mark matches in snippets
from memctl.index.search import search as ranked_search
from memctl.store import Store

__all__ = ["CLOSE", "OPEN", "Hit", "SearchResult", "leave_open_at_exit", "open_ahead_of_search",
           "search"]


class SearchResult:
    """Hits best first; the files that do not parse (the index kept their last good
    version); whether the query was cut to its first words; with no hit, how many stale
    entries (superseded, archived, expired) `include_stale` would show, and how many entries
    of other projects `all_projects` would show (docs/search.md, "When nothing matches")."""

    __slots__ = ("hits", "parse_errors", "truncated", "stale_matches", "other_project_matches")

    def __init__(self, hits: list[Hit], parse_errors: list[ParseError], truncated: bool,
                 stale_matches: int = 0, other_project_matches: int = 0) -> None:
        self.hits = hits
        self.parse_errors = parse_errors
        self.truncated = truncated
        self.stale_matches = stale_matches
        self.other_project_matches = other_project_matches


@heals_damaged_index
def search(store: Store, query: str | Query, *, project: str | None, all_projects: bool = False,
           types: list[str] | tuple[str, ...] = (), tags: list[str] | tuple[str, ...] = (),
           since: str | None = None, limit: int | None = None, include_stale: bool = False,
           explain: bool = False) -> SearchResult:
    """Ranked search of `project` + global (every project with `all_projects`). Each note
    found counts as accessed (the counters that keep recalled notes from being archived)."""
    parsed = query if isinstance(query, Query) else parse(query)  # bad syntax: bad usage first
    chosen_types = [arguments.search_type(value) for value in types]
    if len(tags) > MAX_TAGS:  # (a query of ~1,000 tags passed SQLite's expression depth)
        raise ArgumentError("tag", f"{len(tags)} tags; a search takes at most {MAX_TAGS}")
    tags = [arguments.utf8_text(tag, "tag") for tag in tags]
    if limit is None:  # the setting: clamped, never an error about an option nobody gave
        limit = min(max(1, int(store.settings.get("search.default_limit"))), MAX_LIMIT)
    else:
        arguments.limit(limit)
    if since is not None:
        arguments.since(since)
    if project is not None:
        arguments.scope_name(project)
    def ranked(index: Index) -> tuple[list[Hit], int, int]:
        def run(*, everywhere: bool, stale_too: bool, query: Query = parsed) -> list[Hit]:
            return ranked_search(store, query, project=None if everywhere else project,
                                 all_projects=everywhere, types=chosen_types, tags=list(tags),
                                 since=since, limit=limit, include_stale=stale_too,
                                 explain=explain, index=index)

        hits = run(everywhere=all_projects, stale_too=include_stale)
        stale = elsewhere = 0
        if not hits and not include_stale:
            # Nothing live matches: say whether stale entries do, not a bare "no matches".
            stale = sum(1 for hit in run(everywhere=all_projects, stale_too=True)
                        if hit.status != "active" or hit.expired)
        if not hits and not all_projects:
            # Nor in this project or global: say whether other projects hold matches (an
            # agent started in another folder than it thought searches another project).
            # It asks what the scoped search asked: without the words naming the project
            # (which a search of one project leaves out, docs/search.md).
            asked = without_scope_words(parsed, project)[0] \
                if project not in (None, GLOBAL, DEFAULT_PROJECT) else parsed
            elsewhere = sum(1 for hit in run(everywhere=True, stale_too=include_stale,
                                             query=asked)
                            if hit.project not in (project, GLOBAL))
        return hits, stale, elsewhere

    # The query runs while a live watcher answers whether it has indexed everything written
    # before now (run again if it had not: memctl.index.db.fresh_during).
    index, (hits, stale, elsewhere) = fresh_during(store, ranked)
    # Every read of the index before the access record: a damaged index met on the way is
    # made anew and the search run again (heals_damaged_index), never a hit counted twice.
    try:
        errors = index.parse_errors()
    finally:
        index.close()
    record_access(store, [hit.id for hit in hits if hit.kind in ("note", "episode")])
    return SearchResult(hits, errors, parsed.truncated, stale, elsewhere)


def open_ahead_of_search(root: str) -> None:
    """Open the index and the access counters of the store at `root` for the one search this
    process will answer (a worker of the watcher's search server, while it waits:
    memctl.index.db.open_ahead, memctl.disk.counters.open_ahead). Opening the counters costs
    a search that counts its hits ~1.5 ms (docs/watch.md)."""
    open_ahead(root)
    open_counters_ahead(root)
