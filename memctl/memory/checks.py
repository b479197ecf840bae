"""The write-time decision of `add` (docs/lifecycle.md), pure: given a new note and the active notes of
its project and of `global`, say what to do.

- **merged**: the text is a near-duplicate of an active note (see `memctl.core.similarity`) → no
  new file; the existing note is refreshed. Never across a correction boundary (a correction
  only merges into a correction), never into a note that is about another subject/predicate.
  `force` turns merging off; the duplicates are then reported as `similar`. A text that
  scores as a near-duplicate but holds other symbols or other code (`similarity.mergeable`:
  `attempts >= 5` / `attempts <= 5`) is never merged: it is written and reported as
  `similar`, reason `symbol`.
- **supersedes**: active notes of the *same* scope with the same `subject` + `predicate`
  (case-insensitive). A project note never retires a global note by subject/predicate, since
  the global note serves every project. The note a correction names in `corrects` is never
  retired by it: it stays active, and the correction ranks ahead of it (docs/lifecycle.md).
- **similar**: notes that score high but may say the opposite (a negation, another number,
  a swapped value): the new note is written, and these are reported for a person to decide.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

from memctl.core.note import Note
from memctl.core.records import dataclass, field
from memctl.core.similarity import (
    DEFAULT_DUPLICATE_THRESHOLD,
    DEFAULT_SIMILAR_THRESHOLD,
    candidates,
    judge,
    mergeable,
)
from memctl.core.vocab import fact_key

CREATED = "created"
SYMBOL = "symbol"  # the reason a near-duplicate was not merged: a symbol or code differs
MERGED = "merged"


@dataclass
class WriteDecision:
    action: str  # created | merged
    merged_into: str | None = None
    supersedes: list[str] = field(default_factory=list)
    similar: list[str] = field(default_factory=list)
    # id -> (score, reasons) of every note that played a part, for messages and --explain
    details: dict[str, tuple[float, tuple[str, ...]]] = field(default_factory=dict)


def _same_key(a: str | None, b: str | None) -> bool:
    return bool(a and b) and fact_key(a) == fact_key(b)  # type: ignore[arg-type]


def _can_merge(
    note: Note, note_type: str, subject: str | None, predicate: str | None,
    expires: str | None = None,
) -> bool:
    if (note.type == "correction") != (note_type == "correction"):
        return False
    # Nor into a note that expires otherwise: a merge keeps the note's `expires`, so a fact
    # said again to expire tomorrow never expired, and one said again for good was archived
    # with the copy that expired.
    if (expires or None) != (note.expires or None):
        return False
    # A new note that names a subject or predicate merges only into a note that names the
    # same: merged into a note without them, the key was lost (`get` found nothing) and the
    # note that held the key before was never superseded (`get` kept serving the old fact).
    if subject and not _same_key(subject, note.subject):
        return False
    if predicate and not _same_key(predicate, note.predicate):
        return False
    return True


def live(notes: Iterable[Note], moment: datetime | None) -> list[Note]:
    """The notes a new one can collide with: active and, when a time is given, not expired."""
    return [
        n for n in notes
        if n.status == "active" and (moment is None or not n.is_expired(moment))
    ]


def decide(
    text: str,
    *,
    note_type: str,
    project: str,
    existing: Sequence[Note],
    subject: str | None = None,
    predicate: str | None = None,
    expires: str | None = None,
    corrects: Sequence[str] = (),
    force: bool = False,
    moment: datetime | None = None,
    duplicate_threshold: float = DEFAULT_DUPLICATE_THRESHOLD,
    similar_threshold: float = DEFAULT_SIMILAR_THRESHOLD,
) -> WriteDecision:
    """What `add` should do with `text`, given the notes of its project and global."""
    pool = live(existing, moment)
    by_id = {note.id: note for note in pool}
    decision = WriteDecision(CREATED)

    scored = candidates(text, ((n.id, n.body) for n in pool), threshold=similar_threshold)
    duplicates: list[str] = []
    similar: list[str] = []
    for note_id, value in scored:
        # `candidates` gave each note's score (`score(text, body)`): judged with it, the pair
        # is not scored a second time.
        verdict = judge(
            text, by_id[note_id].body, value,
            duplicate_threshold=duplicate_threshold, similar_threshold=similar_threshold,
        )
        reasons = verdict.reasons
        if verdict.duplicate and not mergeable(text, by_id[note_id].body):
            # Scores as a near-duplicate, but a symbol or code differs (`>=`/`<=`, `app.log`/
            # `app_log`): merging would lose it, so the note is written and reported.
            reasons = (*reasons, SYMBOL)
            similar.append(note_id)
        elif verdict.duplicate and _can_merge(by_id[note_id], note_type, subject, predicate,
                                              expires):
            duplicates.append(note_id)
        elif verdict.duplicate or verdict.similar:
            similar.append(note_id)
        else:
            continue
        decision.details[note_id] = (verdict.score, reasons)

    if duplicates and not force:
        # Prefer the project's own note over a global one, then the best score.
        best = sorted(
            duplicates,
            key=lambda i: (by_id[i].project != project, -decision.details[i][0], i),
        )[0]
        decision.action = MERGED
        decision.merged_into = best
        decision.details = {best: decision.details[best]}
        return decision

    supersedes: list[str] = []
    if subject and predicate:
        for note in pool:
            if (
                note.project == project
                and note.id not in corrects
                and _same_key(note.subject, subject)
                and _same_key(note.predicate, predicate)
            ):
                supersedes.append(note.id)
    decision.supersedes = supersedes
    # A correction differs from what it corrects on purpose: that is no news to report.
    decision.similar = [i for i in duplicates + similar if i not in supersedes and i not in corrects]
    return decision
