"""memctl: long-term memory for AI coding agents, kept as Markdown files in git."""

__version__ = "0.1.0"
