"""The words of the note format and project names, with no heavy imports: the CLI needs
them at start-up."""

import re

NOTE_TYPES = ("fact", "preference", "rule", "decision", "correction", "skill", "error", "experience")
STATUSES = ("active", "superseded", "archived")
# Kinds of entry other than notes, searchable with `type:` / `--type`.
KIND_TYPES = ("memory", "scratchpad", "episode")
OUTCOMES = ("completed", "partial", "in_progress", "failed")  # of an episode
GLOBAL = "global"  # the scope every project also sees
SOURCES = ("cli", "manual", "import", "mcp", "extraction")

# The largest N an `--limit N` takes: beyond any store, and within SQLite's integers.
MAX_LIMIT = 1_000_000

PROJECT_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")


def valid_project_name(name: str) -> bool:
    return bool(PROJECT_NAME.match(name)) and name not in {".", ".."} and len(name) <= 100

# The largest note text memctl writes (a note is a statement, not a document).
MAX_NOTE_BYTES = 1024 * 1024
