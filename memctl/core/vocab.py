"""The words of the note format and project names, with no heavy imports: the CLI needs
them at start-up."""

import re
import unicodedata

NOTE_TYPES = ("fact", "preference", "rule", "decision", "correction", "skill", "error", "experience")
STATUSES = ("active", "superseded", "archived")
# Kinds of entry other than notes, searchable with `type:` / `--type`.
KIND_TYPES = ("memory", "scratchpad", "episode")
OUTCOMES = ("completed", "partial", "in_progress", "failed")  # of an episode
IMPORTANCE_RANGE = (1, 10)  # a note's importance: lowest, highest
# What `list` filters on and sorts by (the CLI's choices and the MCP tool's enums).
LIST_STATUSES = (*STATUSES, "any")
LIST_SORTS = ("updated", "created", "importance", "type", "project")
GLOBAL = "global"  # the scope every project also sees
# Endings of files editors and merges leave beside a note (vim's `.note.md.swp`, `note.md~`,
# `*.orig`): never memory, never committed (docs/watch.md).
# What `memctl merge-file --identify` prints: how a sync tells this memctl on PATH from
# another program of the same name before naming it git's merge driver (docs/sync.md).
MERGE_DRIVER_IDENTITY = "memctl-md merge driver 1"
DEBRIS_SUFFIXES = ("~", ".swp", ".swx", ".tmp", ".bak", ".orig")
SOURCES = ("cli", "manual", "import", "mcp", "extraction")

# The largest N an `--limit N` takes: beyond any store, and within SQLite's integers.
MAX_LIMIT = 1_000_000

# A project's name is a folder of the store (docs/format.md, "Project names"): letters and
# digits of any script (`数据平台`, `café`), `_`, `.` and `-`, in Unicode NFC; not starting
# with `.` or `-`; not `..`; at most 100 bytes of UTF-8. So never a separator, a control or
# format character (a bidi override), a space, or a name that leaves the store.
MAX_PROJECT_BYTES = 100
PROJECT_NAME_RULE = ("letters and digits of any script, '_', '-', '.'; not starting with '.' or "
                     "'-'; no spaces or '/'; at most 100 bytes")
_ASCII_PROJECT_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")  # the common case, at once
# The same rule's shape for a JSON schema (ECMA regexes lack Unicode classes everywhere): it
# admits more than the rule, which `valid_project_name` then applies.
PROJECT_NAME = re.compile(r"^[^\s./\\\x00-\x1f\x7f-][^\s/\\\x00-\x1f\x7f]*$")


def fact_key(text: str) -> str:
    """A note's `subject` or `predicate` as two spellings of one fact compare: blanks at the
    ends, case (every script's, `Über` = `über`, `Straße` = `STRASSE`) and Unicode form
    (`é` composed = `e` + accent) make no difference (Unicode's canonical caseless match).
    `add` supersedes, and `get` finds, by this key (docs/format.md, the `subject` field)."""
    return unicodedata.normalize("NFC", unicodedata.normalize("NFD", text.strip()).casefold())


def _name_char(char: str, first: bool) -> bool:
    if char in "_.-":
        return char == "_" or not first
    category = unicodedata.category(char)
    # Letters and decimal digits; marks (the vowel signs of Devanagari, Thai) after a first
    # character. Not other numbers (`²`), symbols, spaces, controls or format characters.
    return category[0] == "L" or category == "Nd" or (not first and category in ("Mn", "Mc"))


def valid_project_name(name: str) -> bool:
    if _ASCII_PROJECT_NAME.fullmatch(name):
        return name not in (".", "..") and len(name) <= MAX_PROJECT_BYTES
    if not name or not all(_name_char(char, number == 0) for number, char in enumerate(name)):
        return False
    return unicodedata.normalize("NFC", name) == name \
        and len(name.encode("utf-8")) <= MAX_PROJECT_BYTES


def project_from_folder(name: str) -> str:
    """The project a folder name stands for (a git repository's folder): NFC, each run of
    characters a project name cannot hold made one `-`, no `.`/`-` in front or `-` behind,
    cut to the size limit. "" when nothing is left, or when that is `global`: the scope every
    project reads is no repository's (its notes were in every project's recall)."""
    name = unicodedata.normalize("NFC", name)
    kept: list[str] = []
    for char in name:
        if _name_char(char, not kept):
            kept.append(char)
        elif kept and kept[-1] != "-":
            kept.append("-")
    project = "".join(kept).rstrip("-")
    while len(project.encode("utf-8")) > MAX_PROJECT_BYTES:
        project = project[:-1].rstrip("-")
    return project if valid_project_name(project) and project != GLOBAL else ""

# The largest note text memctl writes (a note is a statement, not a document).
MAX_NOTE_BYTES = 1024 * 1024
# The largest file memctl reads back: a larger one is reported, not indexed (a pasted dump is
# not a memory), and no template may make one (memctl.disk.templates.fill).
MAX_FILE_BYTES = 10 * 1024 * 1024
