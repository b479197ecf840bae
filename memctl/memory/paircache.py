"""The health report's near-duplicate pairs, kept between runs in `.memctl/health-pairs.json`.

Finding a group's pairs costs about a second for 5,000 notes (memctl.core.similarity scores
only the candidate pairs of memctl.core.nearpairs). Between two reports most notes do not
change, and a pair of unchanged texts scores as it did: so a note whose text is unchanged
keeps its pairs with the other unchanged notes, and only new or edited notes are compared
again, each with its whole group. When more than a third of a group changed, the group is
compared afresh. A group is a project's notes with `global`'s as partners (pairs of two
global notes belong to `global`'s own group).

Each group is kept as `{"items": {key: digest of its text}, "pairs": [i, j, score, ...]}`:
a pair as the positions of its two notes among the items, flat (at 100,000 notes the
benchmark store has ~400,000 pairs, which as `[key, key, score]` lists took ~140 MB to read
back and more to write).

The file is derived and local like the index: delete it any time. A test holds the result
equal to comparing everything again. (One exception, by construction: past 131,068 distinct
words in one group, memctl.core.similarity's word codes repeat and a score can depend on the
order of the texts; kept and fresh scores may then differ slightly near the threshold.)
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence

from memctl.core.errors import MemctlError
from memctl.core.nearpairs import CANDIDATES_PER_TEXT, Crowding
from memctl.core.similarity import pairs_involving, similar_pairs
from memctl.disk.atomic import atomic_write_text
from memctl.disk.layout import state_path

# Bump when memctl.core.similarity scores texts differently or the entries change (2: long
# notes capped; 3: candidate pairs, and a project's group no longer holds the pairs of two
# global notes; 4: pairs as flat positions; 5: one- or two-word texts of any length paired
# by their characters, a crowded note's pairs with notes that are not crowded kept, a
# partner's digest marked as one; 6: the most candidates a note may have, `reach`; 7: a
# text of symbols alone compared by its symbols; 8: a short word and its plural one word in
# the candidates, memctl.core.nearpairs.word_key). The candidates count too: pairs kept by a
# memctl that never made some pair a candidate hide it for as long as both notes stay as
# they are.
FORMAT = 8
PARTNER_MARK = "g:"
FILE = "health-pairs.json"
REFRESH_SHARE = 3  # more than 1/3 of a group changed: compare the whole group again

Pair = tuple[str, str, float]


def group_pairs(items: Sequence[tuple[str, str]], previous: object, threshold: float,
                partners: Sequence[tuple[str, str]] = ()) -> tuple[list[Pair], dict[str, object]]:
    """Pure: the similar pairs of one group (key, text) and of it with its `partners` (see
    `similarity.similar_pairs`), and what to keep of it for next time. `previous` is what
    this returned last time for the group (anything else is ignored)."""
    everything = [*items, *partners]
    # A partner's digest is marked as one: a note moved between the project and global (same
    # key, same text) is a changed note, whose pairs are found again on its new side.
    digests = {key: _digest(text) for key, text in items}
    digests.update((key, PARTNER_MARK + _digest(text)) for key, text in partners)
    unique = len(digests) == len(everything)  # a key twice (a copied note): no shortcut
    before = _entry(previous)
    if unique and before is not None:
        old_items, old_pairs, reach = before
        unchanged = {key for key, digest in digests.items() if old_items.get(key) == digest}
        changed = set(digests) - unchanged
        # Each note changed, added or removed adds or takes at most one candidate of any
        # other note: while none can have come to more than CANDIDATES_PER_TEXT, no crowd is
        # cut (memctl.core.nearpairs) and the pairs of the unchanged notes stand as they were.
        # Otherwise, and when a changed note has more, the group is compared afresh: which
        # notes are crowded decides which of their pairs are kept.
        touched = len(changed) + len(set(old_items) - set(digests))
        if len(changed) * REFRESH_SHARE <= len(digests) \
                and reach + touched <= CANDIDATES_PER_TEXT:
            crowding = Crowding()
            fresh = pairs_involving(items, changed, threshold=threshold, partners=partners,
                                    crowding=crowding) if changed else []
            reach = max(reach + touched, crowding.most)
            if reach <= CANDIDATES_PER_TEXT:
                # Each pair in the order of its two texts now, as similar_pairs gives it (the
                # notes may have been listed in another order last time).
                position = {key: number for number, (key, _) in enumerate(everything)}
                kept = [(a, b, score) if position[a] < position[b] else (b, a, score)
                        for a, b, score in old_pairs if a in unchanged and b in unchanged]
                pairs = sorted(kept + fresh, key=lambda p: (-p[2], p[0], p[1]))
                return pairs, _made(digests, pairs, reach)
    crowding = Crowding()
    pairs = similar_pairs(items, threshold=threshold, partners=partners, crowding=crowding)
    # Keys used twice (a copied note): nothing is kept, the next report compares afresh.
    return pairs, _made(digests, pairs, crowding.most) if unique else {"items": {}, "pairs": []}


def _made(digests: dict[str, str], pairs: Sequence[Pair], reach: int) -> dict[str, object]:
    """The entry kept for a group: its items' digests, its pairs as flat positions, and the
    most candidates a note of it may have (`reach`)."""
    position = {key: number for number, key in enumerate(digests)}
    flat: list[object] = []
    for a, b, score in pairs:
        flat += (position[a], position[b], score)
    return {"items": digests, "pairs": flat, "reach": reach}


def _entry(value: object) -> tuple[dict[str, str], list[Pair], int] | None:
    """A valid cached entry, or None (a damaged file only costs a full comparison)."""
    if not isinstance(value, dict):
        return None
    items, pairs, reach = value.get("items"), value.get("pairs"), value.get("reach")
    if not isinstance(items, dict) or not items or not isinstance(pairs, list) \
            or len(pairs) % 3 or type(reach) is not int or reach < 0:
        return None
    keys = [str(key) for key in items]
    kept: list[Pair] = []
    for a, b, score in zip(pairs[::3], pairs[1::3], pairs[2::3], strict=True):
        if type(a) is not int or type(b) is not int or not (0 <= a < len(keys) and
                                                            0 <= b < len(keys)) \
                or type(score) not in (int, float):
            return None
        kept.append((keys[a], keys[b], float(score)))
    return ({key: str(digest) for key, digest in zip(keys, items.values(), strict=True)}, kept,
            reach)


def _digest(text: str) -> str:
    from hashlib import blake2b

    return blake2b(text.encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()


def load(root: str | os.PathLike[str], threshold: float) -> dict[str, object]:
    """The cached groups, if the file is there, readable and made with these settings."""
    try:
        data = json.loads(state_path(root, FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("format") != FORMAT \
            or data.get("threshold") != threshold or not isinstance(data.get("groups"), dict):
        return {}
    return data["groups"]


def encoded(entry: dict[str, object]) -> str:
    """A group's entry as the JSON `save` writes (made where the group was found: a child
    process sends text, which is cheap to send, and `save` only joins)."""
    return json.dumps(entry, ensure_ascii=False, separators=(",", ":"))


def save(root: str | os.PathLike[str], threshold: float, groups: dict[str, str]) -> None:
    """Best effort: a report is never refused because its cache cannot be written. `groups`:
    each group's entry, `encoded`."""
    head = json.dumps({"format": FORMAT, "threshold": threshold}, separators=(",", ":"))
    text = head[:-1] + ',"groups":{' + ",".join(
        json.dumps(name, ensure_ascii=False) + ":" + entry for name, entry in groups.items()) + "}}"
    try:
        # Not synced to disk: a cache lost to a power cut costs one full comparison, and the
        # sync was a wait at the end of every report (a 100,000-note store's file: 18 MB).
        atomic_write_text(state_path(root, FILE), text, durable=False)
    except (OSError, MemctlError):
        pass
