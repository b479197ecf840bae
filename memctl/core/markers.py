"""git's conflict markers left in a file's text (docs/health.md).

memctl never writes them (docs/sync.md), but a person's own merge or editor can leave them in
a note, MEMORY.md or a scratchpad. A file holds them when a line starting `<<<<<<< ` is
followed by a line `=======` and then by a line starting `>>>>>>> `: a complete block, so a
lone `=======` (a Markdown heading's underline) or a quoted marker line is not one. One pass
over the lines, no regular expression: linear in the text (tests/test_linear_time.py).
"""

from __future__ import annotations

OPENING = "<<<<<<< "
MIDDLE = "======="
CLOSING = ">>>>>>> "


def conflict_markers(text: str) -> int | None:
    """The line (from 1) of the `<<<<<<< ` that opens the first complete block of conflict
    markers in `text`, or None when it has none."""
    if OPENING not in text:  # nearly every file: one search in C, no split into lines
        return None
    opened: int | None = None
    divided = False
    for number, line in enumerate(text.splitlines(), 1):
        if opened is None:
            if line.startswith(OPENING):
                opened = number  # the first opening: any later one is inside its block
        elif not divided and line.rstrip() == MIDDLE:
            divided = True
        elif divided and line.startswith(CLOSING):
            return opened
    return None
