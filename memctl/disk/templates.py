"""Templates for new files: the store's own `.templates/<name>` first (people may edit them),
then the ones packaged with memctl."""

from __future__ import annotations

import os
import re
from pathlib import Path

from memctl.core.errors import MemctlError, NoteFormatError
from memctl.core.vocab import MAX_FILE_BYTES, NOTE_TYPES

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (start-up)
if TYPE_CHECKING:
    from memctl.disk.storefiles import StoreFiles

STORE_TEMPLATE_DIR = ".templates"
PLACEHOLDER = "{{text}}"


def packaged_template_dir() -> Path:
    package = Path(__file__).resolve().parent.parent  # memctl/
    installed = package / "templates"  # inside a wheel (pyproject.toml force-includes it)
    if installed.is_dir():
        return installed
    return package.parent / "templates"  # a source checkout or an editable install


def packaged_templates() -> list[Path]:
    return sorted(p for p in packaged_template_dir().iterdir() if p.is_file() and p.suffix == ".md")


def load_template(store: StoreFiles | None, name: str) -> str:
    """The text of template `name` (such as `decision.md` or `MEMORY.md`): the store's own,
    read through the store's one safe reader (a link on the way, file or `.templates`
    folder, is refused, never followed out of the store: docs/security.md; a file memctl
    cannot read is one line), else the packaged one (none of the store's, or not UTF-8)."""
    if store is not None:
        relpath = f"{STORE_TEMPLATE_DIR}/{name}"
        path = store.resolve(relpath)  # raises for a link anywhere on the way
        if os.path.isfile(path):
            try:
                return store.read_text(relpath)[0]
            except NoteFormatError:
                pass  # not UTF-8 text: the packaged template, as for a missing one
    return (packaged_template_dir() / name).read_text(encoding="utf-8")


def with_text(template: str, text: str, template_name: str = "") -> str:
    """A note's template filled with its text: in place of `{{text}}`, or after the
    template's body when an edit took the placeholder out, so the text is never lost
    (docs/format.md; `memctl health` lists such a template). `template_name` as for `fill`."""
    if PLACEHOLDER not in template:
        kept = template.rstrip("\n")
        closed = kept.endswith("\n---") or kept == "---" or not kept  # no body: text is it
        template = kept + ("\n" if closed else "\n\n") + PLACEHOLDER + "\n"
    return fill(template, template_name, text=text)


def template_problems(store: StoreFiles) -> list[dict[str, str]]:
    """The store's note templates that lose or refuse a note's text: one without `{{text}}`
    (the text is added after its body), one memctl cannot read (`add` of that type fails)."""
    problems = []
    for note_type in NOTE_TYPES:
        relpath = f"{STORE_TEMPLATE_DIR}/{note_type}.md"
        try:
            if not os.path.lexists(store.resolve(relpath)):
                continue
            text = load_template(store, f"{note_type}.md")
        except MemctlError as exc:
            problems.append({"path": relpath, "problem": str(exc)})
            continue
        times = text.count(PLACEHOLDER)
        if not times:
            problems.append({"path": relpath, "problem": f"no {PLACEHOLDER}: a note's text is "
                             "added after the template's body"})
        elif times > 1:
            problems.append({"path": relpath, "problem": f"{PLACEHOLDER} {times:,} times: a "
                             f"note's text is written {times:,} times over"})
    return problems


def fill(template: str, template_name: str = "", **values: str) -> str:
    """Replace `{{name}}` placeholders, in one pass: a placeholder inside a value (`{{summary}}`
    typed into an episode's goal) is that value's text, never filled again (it was, by a
    later key, which made 12 KB of input a 12 MB episode), and braces in text are safe. A
    template that would make a file larger than memctl reads back (MAX_FILE_BYTES) is
    refused before anything is made: a placeholder an edit repeated thousands of times put
    the value in as many times (20,000 `{{text}}` and a 1 MB note: 20 GB of memory).
    `template_name` (`fact.md`) names the template in that error."""
    size = len(template.encode("utf-8"))
    largest = (0, "", 0)  # (bytes it adds, placeholder, times)
    for key, value in values.items():
        placeholder = "{{" + key + "}}"
        times = template.count(placeholder)
        added = times * (len(value.encode("utf-8")) - len(placeholder))
        size += added
        largest = max(largest, (added, placeholder, times))
    if size > MAX_FILE_BYTES:
        _, placeholder, times = largest
        named = f"{STORE_TEMPLATE_DIR}/{template_name}" if template_name else "the template"
        raise MemctlError(
            f"{named} would make a file of {size / 1024 / 1024:,.0f} MB, more than memctl "
            f"reads back ({MAX_FILE_BYTES // 1024 // 1024} MB): it holds {placeholder} "
            f"{times:,} times; keep it once")
    if not values:
        return template
    pattern = re.compile("|".join(re.escape("{{" + key + "}}") for key in values))
    return pattern.sub(lambda found: values[found.group()[2:-2]], template)
