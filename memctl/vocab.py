"""The words of the note format, with no imports: the CLI needs them at start-up."""

NOTE_TYPES = ("fact", "preference", "rule", "decision", "correction", "skill", "error", "experience")
STATUSES = ("active", "superseded", "archived")
SOURCES = ("cli", "manual", "import", "mcp", "extraction")
