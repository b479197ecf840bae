"""The words each active note is compared by, kept with the index for `memctl add`'s checks.

`add` (and `update`) compares a new text with the active notes of its project and `global`
(memctl.memory.checks). Reading and normalising every one of them was half of an add on a
big store (10k notes: ~900 notes, ~130 ms of a ~300 ms add; bench/bench_write.py). Only
texts sharing enough of their words can be candidates (memctl.core.nearpairs), so the index
keeps each note's distinct words (`near_words`), its number of tokens and whether it has one
or two words only (`near_docs`), and the checks read just (`nearpairs.Probe`):

- the notes whose shared words could reach the short regime's bound: for each note, the new
  text's occurrences of the words both hold, summed by SQLite over the postings of the new
  text's words in the scope, against the note's number of tokens;
- the notes of one or two words, when the new text has one or two (they pair by their
  characters too);
- with a subject and a predicate, the notes of the project that have both (supersession);
- the notes whose words are not kept yet (or are of an older version of the file);
- every note, for a new text of `nearpairs.LONG_MIN` tokens or more.

Those are all the notes the whole scope would make candidates, so the decision is the same
(tests/test_checks.py holds the two equal on generated notes).

Filled lazily, by the checks themselves, for the notes of the scopes they read, and by
`add` for the note it wrote, while git commits it (`keep_words`): each row is
keyed by the note's path, its file's hash (a changed file is read again) and VERSION, so a
reindex costs nothing more and the first add in a project pays for its notes once. Derived
like the rest of the index: a new schema drops the tables, a reindex empties them
(memctl.index.db).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence

from memctl.core import nearpairs
from memctl.core.similarity import compared_tokens
from memctl.core.tokenize import from_index

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (~4 ms of start-up)
if TYPE_CHECKING:
    from typing import Any

# Bump when what is kept changes (memctl.core.similarity's normalising, nearpairs' words):
# rows of another version are computed again.
VERSION = 4  # 2: one- or two-word texts of any length are `tiny` (nearpairs); 3: symbols;
# 4: a short word's plural `s` (`nearpairs.word_key`)
TABLES = ("near_docs", "near_words")
_SCHEMA = (
    "CREATE TABLE near_docs(doc INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE,"
    " project TEXT NOT NULL, hash TEXT NOT NULL, version INTEGER NOT NULL,"
    " tiny INTEGER NOT NULL, size INTEGER NOT NULL, words TEXT NOT NULL)",
    "CREATE TABLE near_words(project TEXT NOT NULL, word TEXT NOT NULL, doc INTEGER NOT NULL,"
    " PRIMARY KEY(project, word, doc)) WITHOUT ROWID",
    "CREATE INDEX near_docs_project ON near_docs(project)",
)
_COLUMNS = ("SELECT doc, path, project, hash, version, tiny, size, words FROM near_docs LIMIT 0",
            "SELECT project, word, doc FROM near_words LIMIT 0")
_CHUNK = 400  # SQL parameters per statement (well under SQLite's limit)
_LIVE = "d.kind = 'note' AND d.status = 'active'"
# A note whose file does not parse now (emptied, say: the index serves its last good version)
# is no note to merge into or supersede: either would write to a file that says otherwise.
_SCOPE = (_LIVE + " AND d.project IN ({marks})"
          " AND d.path NOT IN (SELECT path FROM files WHERE error IS NOT NULL)")


def check_pool(conn: sqlite3.Connection, projects: Sequence[str], text: str, *,
               same_key_project: str | None = None) -> list[tuple[dict[str, Any], str]]:
    """(fields, body) of the active notes of `projects` that the write-time checks of `text`
    must see (module docstring); with `same_key_project`, also that project's notes with a
    subject and a predicate. Every active note when the words cannot be kept (a read-only
    index) or the text is long. The index must be fresh for `projects`."""
    names = sorted(set(projects))
    marks = ", ".join("?" * len(names))
    scope = _SCOPE.format(marks=marks)
    tokens, _ = compared_tokens(text)
    probe = nearpairs.Probe(tokens)
    if probe.exhaustive or not _tables(conn):
        return _rows(conn, scope, names, None)
    # Whatever their words: the notes whose words are not kept (or are of another version of
    # the file), which are kept now for the next time; the one- and two-word notes for a
    # text of one or two words; the notes a subject and a predicate may supersede.
    stale = "n.doc IS NULL OR n.hash IS NOT fl.hash OR n.version != ?"
    always = stale
    params: list[Any] = [VERSION, *names, VERSION]
    if probe.tiny:
        always += " OR n.tiny"
    if same_key_project is not None:
        always += " OR (d.project = ? AND d.subject IS NOT NULL AND d.predicate IS NOT NULL)"
        params.append(same_key_project)
    found = conn.execute(
        f"SELECT d.path, {stale} FROM docs d JOIN files fl ON fl.path = d.path"
        f" LEFT JOIN near_docs n ON n.path = d.path WHERE {scope} AND ({always})",
        params).fetchall()
    paths = {path for path, _ in found}
    unkept = [path for path, is_stale in found if is_stale]
    if unkept:
        try:
            _keep(conn, unkept, names)
        except sqlite3.OperationalError:
            return _rows(conn, scope, names, None)  # cannot be written: every note, as before
    # The others by their words: for each note holding some word of the text, the text's
    # occurrences of the words it holds (summed in SQLite), against the bound.
    counted = sorted(probe.counts.items())
    shared: dict[int, int] = {}
    for start in range(0, len(counted), _CHUNK // 2):
        chunk = counted[start:start + _CHUNK // 2]
        values = ", ".join(["(?, ?)"] * len(chunk))
        for doc, number in conn.execute(
                f"WITH q(word, occurs) AS (VALUES {values}) SELECT w.doc, sum(q.occurs)"
                f" FROM q JOIN near_words w ON w.project IN ({marks}) AND w.word = q.word"
                f" GROUP BY w.doc", [*(value for pair in chunk for value in pair), *names]):
            shared[doc] = shared.get(doc, 0) + number
    if shared:
        docs = sorted(shared)
        for start in range(0, len(docs), _CHUNK):
            chunk_docs = docs[start:start + _CHUNK]
            paths.update(path for doc, path, size in conn.execute(
                f"SELECT doc, path, size FROM near_docs WHERE version = ? AND doc IN"
                f" ({', '.join('?' * len(chunk_docs))})", [VERSION, *chunk_docs])
                if probe.may_pair(shared[doc], size))
    return _rows(conn, scope, names, sorted(paths))


def _rows(conn: sqlite3.Connection, scope: str, names: list[str], paths: list[str] | None
          ) -> list[tuple[dict[str, Any], str]]:
    """(fields, body) of the active notes in scope: those at `paths`, or every one."""
    select = "SELECT d.meta, f.body FROM docs d JOIN fts f ON f.rowid = d.rowid"
    if paths is None:
        rows = list(conn.execute(f"{select} WHERE {scope}", names))
    else:
        rows = []
        for start in range(0, len(paths), _CHUNK):
            chunk = paths[start:start + _CHUNK]
            rows.extend(conn.execute(
                f"{select} WHERE {scope} AND d.path IN ({', '.join('?' * len(chunk))})",
                [*names, *chunk]))
    return [(json.loads(meta), from_index(body or "")) for meta, body in rows]


def _tables(conn: sqlite3.Connection) -> bool:
    """Make the tables if they are missing (or were made by a memctl keeping other
    columns); False when the index cannot be written here."""
    try:
        for statement in _COLUMNS:
            conn.execute(statement)
        return True
    except sqlite3.OperationalError:
        pass
    try:
        for table in TABLES:
            conn.execute(f"DROP TABLE IF EXISTS {table}")
        for statement in _SCHEMA:
            conn.execute(statement)
    except sqlite3.OperationalError:
        return False  # read-only
    return True


def keep_words(conn: sqlite3.Connection, paths: list[str], projects: Sequence[str]) -> None:
    """Keep the words of the notes at `paths`, just written and indexed, so that the next
    check finds them kept and writes nothing before it decides: `add` calls this while git
    commits its note (memctl.store.Store.commit, bench/bench_write.py). Best effort: what
    cannot be written here is kept by the next check."""
    try:
        if _tables(conn):
            _keep(conn, paths, sorted(set(projects)))
    except sqlite3.Error:
        pass


def _keep(conn: sqlite3.Connection, paths: list[str], projects: list[str]) -> None:
    """Keep the words of the notes at `paths`, and drop the rows of `projects` whose note is
    no longer an active note (deleted, moved, archived, superseded: kept again if it comes
    back), so the tables stay the size of the scopes checked."""
    computed = []
    for start in range(0, len(paths), _CHUNK):
        chunk = paths[start:start + _CHUNK]
        # The hash and the body read together: the words are those of that version.
        for path, project, digest, body in conn.execute(
                f"SELECT d.path, d.project, fl.hash, f.body FROM docs d"
                f" JOIN files fl ON fl.path = d.path JOIN fts f ON f.rowid = d.rowid"
                f" WHERE d.kind = 'note' AND d.path IN ({', '.join('?' * len(chunk))})", chunk):
            tokens, norm = compared_tokens(from_index(body or ""))
            tiny = nearpairs.pairs_by_characters(tokens)
            computed.append((path, project, digest, tiny, len(tokens),
                             sorted(nearpairs.words(tokens))))
    marks = ", ".join("?" * len(projects))
    conn.execute("BEGIN IMMEDIATE")
    try:
        gone = conn.execute(
            f"SELECT n.doc, n.project, n.words FROM near_docs n WHERE n.project IN ({marks})"
            f" AND NOT EXISTS (SELECT 1 FROM docs d WHERE d.path = n.path AND {_LIVE})",
            projects).fetchall()
        for doc, project, words in gone:
            conn.executemany("DELETE FROM near_words WHERE project = ? AND word = ? AND doc = ?",
                             [(project, word, doc) for word in words.split(" ") if word])
            conn.execute("DELETE FROM near_docs WHERE doc = ?", (doc,))
        for path, project, digest, tiny, size, words in computed:
            old = conn.execute("SELECT doc, project, words FROM near_docs WHERE path = ?",
                               (path,)).fetchone()
            if old is not None:
                conn.executemany("DELETE FROM near_words WHERE project = ? AND word = ?"
                                 " AND doc = ?", [(old[1], word, old[0])
                                                  for word in old[2].split(" ") if word])
                conn.execute("DELETE FROM near_docs WHERE doc = ?", (old[0],))
            doc = conn.execute(
                "INSERT INTO near_docs(path, project, hash, version, tiny, size, words)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (path, project, digest, VERSION, int(tiny), size, " ".join(words))).lastrowid
            conn.executemany("INSERT INTO near_words(project, word, doc) VALUES (?, ?, ?)",
                             [(project, word, doc) for word in words])
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
