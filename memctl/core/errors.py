"""Errors a user can cause. The CLI turns them into one-line messages."""


class MemctlError(Exception):
    """Something went wrong while running; the CLI prints `error: <message>` and exits 1."""


class UsageError(MemctlError):
    """Bad usage, such as an invalid option value; the CLI exits 2."""
