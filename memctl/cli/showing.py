"""What `memctl show` does once its arguments are parsed: shared by the typer command and
the fast path (`memctl.cli.fast`), and free of typer so the fast path never imports it."""

from __future__ import annotations

import json

from memctl.cli.context import get_store
from memctl.cli.output import console, emit_json, print_episode, visible, warn, write
from memctl.services.showing import show

# A body longer than this is printed as it is, not rendered as Markdown: rich takes ~15 µs a
# character of headings or list items (64 KB: about a second) and more than linear time on a
# long paragraph, so a hand-dropped note of some MB held `show` for minutes
# (tests/test_linear_time.py). `show --json` and plain text are linear.
MARKDOWN_MAX_CHARS = 32 * 1024


_FIELD_CHARS = 200  # of another field's value in the panel
# The fields the panel shows on its own lines above; any other is listed after them.
_IN_THE_PANEL = frozenset({"id", "type", "importance", "status", "project", "tags", "created",
                           "updated", "expires", "subject", "predicate", "superseded_by",
                           "links"})


def run_show(note_id: str, *, json_output: bool = False) -> None:
    """Show one note (or episode): JSON on stdout, or a panel and the Markdown for people."""
    shown = show(get_store(), note_id)
    episode, note = shown.episode, shown.note
    if shown.broken is not None:
        # A file that does not parse is shown as it is, with its problem: `memctl edit`
        # opens it for fixing (docs/format.md).
        note_ref = (shown.last_good or {}).get("id", note_id)
        warn(f"{shown.broken}; shown as it is: `memctl edit {note_ref}` opens it for "
             "fixing (search and recall use its last good version)")
        if json_output:
            emit_json(shown.to_dict())
        else:
            write(shown.to_dict()["raw"])
        return
    if episode is not None:
        print_episode(episode, json_output)  # as `memctl episode show` prints it
        return
    assert note is not None
    data = shown.to_dict()
    if json_output:
        emit_json(data)
        return
    from rich.markdown import Markdown
    from rich.markup import escape
    from rich.panel import Panel

    def shown_as_is(value: object) -> str:
        """A field's value as written: never rich markup (a tag `[/]`), nothing a terminal
        acts on."""
        return escape(visible(str(value)))

    v = shown_as_is
    fields = [f"[bold]{v(note.id)}[/]  {v(note.type)}  importance {note.importance}  "
              f"{v(note.status)}",
              f"project {v(note.project)}   tags {v(', '.join(note.tags) or '-')}   "
              f"path {v(note.path)}",
              f"created {v(note.created)}   updated {v(note.updated)}"
              + (f"   expires {v(note.expires)}" if note.expires else "")]
    if note.subject or note.predicate:
        fields.append(f"subject {v(note.subject or '-')}   predicate {v(note.predicate or '-')}")
    if note.superseded_by:
        fields.append(f"superseded by {v(note.superseded_by)}")
    if shown.corrected_by:
        fields.append(f"corrected by {v(', '.join(shown.corrected_by))} (read the correction "
                      "first)")
    # The ids an imported note's [[wikilinks]] resolved to: the body names titles only (docs/sync.md).
    links = [str(link) for link in note.meta.get("links") or []]
    if links:
        fields.append(f"links {v(', '.join(links))}")
    # Every other field of the front matter, as written (docs/format.md: fields memctl does
    # not know are kept and shown here; `corrects`, `pinned`, `source` too).
    for key, value in note.meta.items():
        if key in _IN_THE_PANEL or value is None or value in ("", [], {}):
            continue
        written = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False,
                                                                  default=str)
        # One line each (a `|` block's breaks written `\n`, as a terminal's controls are),
        # and its start when long: `--json` has every value whole.
        written = written.rstrip("\n").replace("\r\n", "\n").replace("\n", "\\n")
        if len(written) > _FIELD_CHARS:
            written = written[:_FIELD_CHARS] + "… (--json shows it whole)"
        fields.append(f"{v(key)} {v(written)}")
    count = data["access_count"]
    fields.append(f"accessed {count} time{'' if count == 1 else 's'} (search hits and recalls), "
                  f"last {v(data['last_accessed'] or 'never')}")
    console().print(Panel("\n".join(fields), expand=False))
    if len(note.body) > MARKDOWN_MAX_CHARS:
        write(note.body if note.body.endswith("\n") else note.body + "\n")
    else:
        console().print(Markdown(visible(note.body)))
