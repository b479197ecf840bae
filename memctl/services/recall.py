"""The recall block: what an agent reads at the start of a task (docs/agents.md)."""

from __future__ import annotations

from memctl.core import arguments
from memctl.core.errors import CLI, Front
from memctl.index.db import heals_damaged_index
from memctl.memory.recall import RecallResult
from memctl.memory.recall import recall as recall_block
from memctl.store import Store

__all__ = ["RecallResult", "recall"]


@heals_damaged_index
def recall(store: Store, project: str, query: str | None = None, *,
           max_notes: int | None = None, note_chars: int | None = None,
           total_chars: int | None = None, wording: Front = CLI) -> RecallResult:
    """The budgeted block an agent reads at the start of a task (docs/agents.md)."""
    if max_notes is not None:
        arguments.limit(max_notes, low=0)  # as `memctl recall -n` checks it
    return recall_block(store, arguments.scope_name(project), query, max_notes=max_notes,
                        note_chars=note_chars, total_chars=total_chars, wording=wording)
