"""A kept draft of `memctl edit` against what other commands did to the note since
(docs/format.md, "Editing by hand"): a reopened draft takes the lifecycle fields the person
left alone from the note as it is now, so it never makes a superseded or archived note
active again; and a forgotten note's kept draft is set aside, not left behind for ever."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from conftest import Cli, git, run_memctl
from test_broken_files import EDITOR  # the scripted editor, one copy

from memctl.core.noteformat import parse_text

MARK = "# memctl:"


def edit(cli: Cli, note_id: str, *, edits: list[tuple[str, str]] = (), append: str = "",
         env: dict[str, str] | None = None):
    """`memctl edit` with the scripted editor; returns (result, the text the editor saw)."""
    script = cli.store.parent / "editor.py"
    script.write_text(EDITOR)
    seen = cli.store.parent / "seen.txt"
    result = cli("edit", note_id, env={
        "EDITOR": f"{sys.executable} {script}", "VISUAL": "", "SEEN": str(seen),
        "EDITS": json.dumps([list(pair) for pair in edits]), "APPEND": append, **(env or {})})
    return result, seen.read_text(encoding="utf-8")


def add(cli: Cli, text: str, *args: str, env: dict[str, str] | None = None) -> dict:
    return cli.ok("add", text, "--json", "--force", *args, env=env).json()


def draft_of(cli: Cli, note_id: str) -> Path:
    return cli.store / ".memctl" / "edit" / f"{note_id}.md"


def keep_a_draft(cli: Cli, note_id: str, broken: tuple[str, str], typed: str) -> str:
    """A failed save: the draft holds `typed` and the `broken` replacement; its text."""
    failed, _seen = edit(cli, note_id, edits=[broken], append=typed)
    assert failed.exit_code == 1 and "your edit is kept" in failed.stderr, failed.stderr
    return draft_of(cli, note_id).read_text(encoding="utf-8")


def without_header(text: str) -> list[str]:
    return [line for line in text.splitlines() if not line.startswith(MARK)]


def meta_of(cli: Cli, path: str) -> dict:
    return parse_text((cli.store / path).read_text(encoding="utf-8")).meta


# --- lifecycle fields of a kept draft -------------------------------------------------------


def assert_saved_superseded(cli: Cli, reopened, note: dict, newer: dict) -> None:
    """The reopened draft was saved: the note is still superseded by `newer`, and the words
    the person typed in the draft are in it."""
    assert reopened.exit_code == 0, reopened.stderr
    meta = meta_of(cli, note["path"])
    assert (meta["status"], meta.get("superseded_by")) == ("superseded", newer["id"])
    assert "Words I typed." in (cli.store / note["path"]).read_text(encoding="utf-8")


def test_a_reopened_draft_takes_the_supersession_and_keeps_the_persons_text(cli: Cli) -> None:
    """The kept draft held `status: active`; saving it after `supersede` made the note
    active again. The reopened draft now shows the note's status and superseded_by."""
    note = add(cli, "Deploy on Fridays after the change freeze")
    newer = add(cli, "Releases go out on Tuesdays with the new pipeline")
    kept = keep_a_draft(cli, note["id"], ("type: fact", "type: banana"), "Words I typed.\n")
    cli.ok("supersede", note["id"], newer["id"])

    reopened, seen = edit(cli, note["id"], edits=[("type: banana", "type: fact")])
    assert_saved_superseded(cli, reopened, note, newer)
    assert (f"{MARK} the note has changed since this edit began; its status and superseded_by "
            "are taken from the note as it is now; saving puts this edit in its place.") in seen
    # Only those fields' lines changed in the draft; the person's lines are as they typed them.
    before, after = without_header(kept), without_header(seen)
    assert [line for line in before if line not in after] == ["status: active"]
    assert [line for line in after if line not in before] == [
        "status: superseded", f"superseded_by: {newer['id']}"]
    shown = cli.ok("show", note["id"], "--json").json()
    assert shown["status"] == "superseded"
    assert git(cli.store, "status", "--porcelain") == ""


def test_a_draft_that_did_not_parse_takes_the_status_on_save(cli: Cli) -> None:
    """The kept draft's front matter does not parse, so the reopen cannot change it: the
    header says what the save will take, and the save takes it."""
    note = add(cli, "Deploy on Fridays after the change freeze")
    newer = add(cli, "Releases go out on Tuesdays with the new pipeline")
    keep_a_draft(cli, note["id"], ("type: fact", "type: [fact"), "Words I typed.\n")
    cli.ok("supersede", note["id"], newer["id"])

    reopened, seen = edit(cli, note["id"], edits=[("type: [fact", "type: fact")])
    assert_saved_superseded(cli, reopened, note, newer)
    assert "status: active" in seen  # shown as the person left it
    assert ("on save, its status and superseded_by are taken from the note as it is now "
            "unless you changed them") in seen


def test_a_kept_draft_of_a_note_archived_since_saves_to_the_archive_still_archived(
        cli: Cli) -> None:
    """`archive` moved the note to `archive/` with `status: archived`: the reopened draft
    is saved there (the note as it is now), still archived, and nowhere else."""
    note = add(cli, "Deploy on Fridays after the change freeze", "--importance", "1",
               env={"MEMCTL_NOW": "2026-01-01T00:00:00Z"})
    keep_a_draft(cli, note["id"], ("type: fact", "type: banana"), "Words I typed.\n")
    swept = cli.ok("archive", "--json", env={"MEMCTL_NOW": "2029-06-01T00:00:00Z"}).json()
    assert swept["archived"] == [note["id"]]
    archived = note["path"].replace("/notes/", "/archive/")
    assert (cli.store / archived).is_file()

    reopened, seen = edit(cli, note["id"], edits=[("type: banana", "type: fact")],
                          env={"MEMCTL_NOW": "2029-06-02T00:00:00Z"})
    assert reopened.exit_code == 0, reopened.stderr
    assert not (cli.store / note["path"]).exists()
    text = (cli.store / archived).read_text(encoding="utf-8")
    assert "Words I typed." in text and parse_text(text).meta["status"] == "archived"
    listed = run_memctl("list", "--status", "any", "--json", store=cli.store).json()
    assert [(e["id"], e["status"], e["path"]) for e in listed] == [
        (note["id"], "archived", archived)]
    assert f"{MARK} the note has changed since this edit began; its status is taken" in seen
    assert git(cli.store, "status", "--porcelain") == ""


def test_a_lifecycle_field_the_person_changed_stays_theirs(cli: Cli) -> None:
    """The sweep demoted both notes (importance, `demoted`) after their drafts were kept:
    the draft whose importance the person left takes the note's; the one whose importance
    the person changed keeps theirs, and only the untouched `demoted` is taken."""
    at = {"MEMCTL_NOW": "2026-01-01T00:00:00Z"}
    mine = add(cli, "Deploy on Fridays after the change freeze", "--importance", "4", env=at)
    left = add(cli, "Releases go out on Tuesdays with the new pipeline", "--importance", "4",
               env=at)
    keep_a_draft(cli, mine["id"], ("importance: 4", "importance: [7"), "Mine.\n")
    keep_a_draft(cli, left["id"], ("type: fact", "type: [fact"), "Left.\n")
    swept = cli.ok("archive", "--json", env={"MEMCTL_NOW": "2026-05-01T00:00:00Z"}).json()
    assert sorted(swept["demoted"]) == sorted([mine["id"], left["id"]])

    later = {"MEMCTL_NOW": "2026-05-02T00:00:00Z"}
    assert edit(cli, mine["id"], edits=[("importance: [7", "importance: 7")],
                env=later)[0].exit_code == 0
    assert edit(cli, left["id"], edits=[("type: [fact", "type: fact")],
                env=later)[0].exit_code == 0
    kept_mine, taken = meta_of(cli, mine["path"]), meta_of(cli, left["path"])
    assert kept_mine["importance"] == "7" and "demoted" in kept_mine
    assert taken["importance"] == "3" and "demoted" in taken
    assert "Mine." in (cli.store / mine["path"]).read_text(encoding="utf-8")


def test_a_draft_kept_by_an_older_memctl_is_reopened_as_before(cli: Cli) -> None:
    """No bytes of the note recorded (a draft from before they were): nothing is merged,
    the header only says the note changed, and the draft is saved as the person left it."""
    note = add(cli, "Deploy on Fridays after the change freeze")
    newer = add(cli, "Releases go out on Tuesdays with the new pipeline")
    keep_a_draft(cli, note["id"], ("type: fact", "type: banana"), "Words I typed.\n")
    state = cli.store / ".memctl" / "edit" / f"{note['id']}.json"
    recorded = json.loads(state.read_text())
    assert "base_note" in recorded
    del recorded["base_note"]
    state.write_text(json.dumps(recorded))
    cli.ok("supersede", note["id"], newer["id"])

    reopened, seen = edit(cli, note["id"], edits=[("type: banana", "type: fact")])
    assert reopened.exit_code == 0, reopened.stderr
    assert (f"{MARK} the note has changed since this edit began; saving puts this edit in "
            "its place.") in seen
    assert meta_of(cli, note["path"])["status"] == "active"


# --- forget ------------------------------------------------------------------------------------


def test_forget_sets_the_kept_draft_aside_with_the_typing_in_it(cli: Cli) -> None:
    """The kept draft (and its record) stayed in `.memctl/edit/` for ever once its note was
    forgotten: no `memctl edit ID` could reopen it. It is moved to `forgotten/`, whole."""
    note = add(cli, "Deploy on Fridays after the change freeze")
    other = add(cli, "Releases go out on Tuesdays with the new pipeline")
    kept = keep_a_draft(cli, note["id"], ("type: fact", "type: banana"), "Words I typed.\n")
    edit_dir = cli.store / ".memctl" / "edit"
    forgot = cli.ok("forget", note["id"], "--json").json()
    assert forgot["kept_edit"] == f".memctl/edit/forgotten/{note['id']}.md"
    assert not draft_of(cli, note["id"]).exists()
    assert not (edit_dir / f"{note['id']}.json").exists()
    aside = edit_dir / "forgotten" / f"{note['id']}.md"
    assert aside.read_text(encoding="utf-8") == kept  # nothing typed is lost
    # No draft: nothing set aside, nothing named.
    assert cli.ok("forget", other["id"], "--json").json()["kept_edit"] is None
    assert sorted(path.name for path in (edit_dir / "forgotten").iterdir()) == [
        f"{note['id']}.md"]
    assert git(cli.store, "status", "--porcelain") == ""


def test_the_merge_changes_only_the_lines_of_the_fields_it_takes() -> None:
    """`restore` made the note active again and removed superseded_by: the draft the person
    left as it was takes both (a line changed, a line removed), in its own line endings;
    a status the person changed stays; a draft that does not parse is left for the save."""
    from memctl.memory.notes import _lifecycle_merge

    def note(*fields: str, body: str = "Body\n", newline: str = "\n") -> bytes:
        return newline.join(["---", "id: 01m8p03ee0pc1z47", *fields, "---", body]).encode()

    base = note("status: superseded", "superseded_by: 01m8p03ee0pc1z48", "importance: 5")
    current = note("status: active", "importance: 5", "updated: 2026-12-01T00:00:00.000Z")
    draft = note("status: superseded  # as it was", "superseded_by: 01m8p03ee0pc1z48",
                 "importance: 9", body="My words\r\n", newline="\r\n")
    merged, taken = _lifecycle_merge(draft, base, current)
    assert taken == ["status", "superseded_by"]
    assert merged == note("status: active  # as it was", "importance: 9", body="My words\r\n",
                          newline="\r\n")

    mine = note("status: archived", "superseded_by: 01m8p03ee0pc1z48")
    assert _lifecycle_merge(mine, base, current) == (
        note("status: archived"), ["superseded_by"])
    assert _lifecycle_merge(b"---\nstatus: [x\n---\nb\n", base, current) == (
        None, ["status", "superseded_by"])
    assert _lifecycle_merge(draft, None, current) == (draft, [])  # kept by an older memctl
    assert _lifecycle_merge(draft, current, current) == (draft, [])


def test_a_note_whose_front_matter_cannot_be_stamped_keeps_the_draft_and_says_how_to_save(
        cli: Cli) -> None:
    """A flow mapping (`{id: …, type: …}`) is legal YAML that memctl reads but cannot stamp
    `updated` into: the save said "edit the file by hand", not that the draft was kept, and
    every later `memctl edit` failed the same way. Written as `key: value` lines in the
    draft, it saves."""
    folder = cli.store / "demo" / "notes" / "fact"
    folder.mkdir(parents=True, exist_ok=True)
    flow = "{id: flowmap000000001, type: fact, project: demo}"
    path = folder / "flow.md"
    path.write_text(f"---\n{flow}\n---\nThe analytics DB is ClickHouse.\n", encoding="utf-8")
    git(cli.store, "add", "-A")
    git(cli.store, "commit", "-qm", "a hand-made note")
    before = path.read_bytes()
    failed, _seen = edit(cli, "flowmap000000001", append="Words I typed.\n")
    assert failed.exit_code == 1 and failed.error.count("\n") == 1, failed.stderr
    assert "one `key: value` line per field" in failed.stderr
    assert "your edit is kept" in failed.stderr and "memctl edit flowmap000000001" in failed.stderr
    assert path.read_bytes() == before
    assert "Words I typed." in draft_of(cli, "flowmap000000001").read_text(encoding="utf-8")
    saved, _seen = edit(cli, "flowmap000000001", edits=[
        (flow, "id: flowmap000000001\ntype: fact\nproject: demo")])
    assert saved.exit_code == 0, saved.stderr
    text = path.read_text(encoding="utf-8")
    assert "Words I typed." in text and "updated:" in text
    assert git(cli.store, "status", "--porcelain") == ""


def test_an_edit_that_empties_the_file_says_so_and_changes_nothing(cli: Cli) -> None:
    """An editor that leaves the draft empty (or only blank lines) is "the file is empty",
    as every reader of a memory file says (docs/format.md): it was reported as a change of
    the note's id to the one its draft's file name gives."""
    note = add(cli, "Backups run nightly at two.")
    path = cli.store / note["path"]
    before = path.read_bytes()
    for blank in ("", "\n\n  \n"):
        script = cli.store.parent / "blank.py"
        script.write_text(f"open(__import__('sys').argv[1], 'w').write({blank!r})\n")
        result = cli("edit", note["id"], env={"EDITOR": f"{sys.executable} {script}",
                                              "VISUAL": ""})
        assert result.exit_code == 1, result.stdout
        assert "the file is empty" in result.stderr and "id changed" not in result.stderr, \
            result.stderr
        assert result.stderr.count("\n") == 1
        assert path.read_bytes() == before
    assert git(cli.store, "status", "--porcelain") == ""


def test_an_edit_that_drops_the_opening_dashes_says_the_front_matter_is_gone(cli: Cli) -> None:
    """A draft whose first `---` line was deleted is "front matter is gone", line 1: it was
    read as a file with no front matter, the id its file name gives, and reported as "the id
    changed from … to …", of an id the person never touched. The note stays as it was, the
    draft is kept with what was typed, and it saves once the line is back."""
    note = add(cli, "Cache TTL is 60s.")
    path = cli.store / note["path"]
    before = path.read_bytes()
    failed, _seen = edit(cli, note["id"], edits=[("---\nid:", "id:")], append="Words I typed.\n")
    assert failed.exit_code == 1, failed.stdout
    where = f".memctl/edit/{note['id']}.md"
    assert f"{where}:1: front matter is gone: the file no longer opens with '---'" \
        in failed.stderr, failed.stderr
    assert "id changed" not in failed.stderr and failed.stderr.count("\n") == 1
    assert "your edit is kept" in failed.stderr and f"memctl edit {note['id']}" in failed.stderr
    assert path.read_bytes() == before
    assert git(cli.store, "status", "--porcelain") == ""
    draft = draft_of(cli, note["id"]).read_text(encoding="utf-8")
    assert "Words I typed." in draft and not draft.startswith("---")

    # Reopened, the reason is on top, its line counted in the draft as the editor shows it.
    saved, seen = edit(cli, note["id"], edits=[(f"id: {note['id']}", f"---\nid: {note['id']}")])
    header = [line for line in seen.splitlines() if line.startswith(MARK)]
    assert f"{MARK} line {len(header) + 1}: front matter is gone" in seen, seen
    assert saved.exit_code == 0, saved.stderr
    text = path.read_text(encoding="utf-8")
    assert text.startswith("---\n") and "Words I typed." in text
    assert meta_of(cli, note["path"])["id"] == note["id"]
    assert not draft_of(cli, note["id"]).exists()


def test_a_note_written_without_front_matter_is_still_edited_without_it(cli: Cli) -> None:
    """Only a note that has front matter must keep it: one written by hand with none
    (docs/format.md, "No front matter at all") is saved as before."""
    (cli.store / "demo" / "notes").mkdir(parents=True, exist_ok=True)
    (cli.store / "demo" / "notes" / "plain.md").write_text("A plain note.\n", encoding="utf-8")
    cli.ok("reindex")
    found = cli.ok("list", "--json", "-p", "demo").json()
    note_id = next(n["id"] for n in (found["notes"] if isinstance(found, dict) else found)
                   if n["path"].endswith("plain.md"))
    saved, _seen = edit(cli, note_id, edits=[("A plain note.", "A plain note, edited.")])
    assert saved.exit_code == 0, saved.stderr
    assert "A plain note, edited." in (cli.store / "demo" / "notes" / "plain.md").read_text()


def test_an_edit_of_a_broken_note_that_changes_its_id_is_refused(cli: Cli) -> None:
    """A note whose front matter does not parse is edited from its last good version; an
    `id:` changed in that edit was refused ("ids are permanent"), until its file name's id
    was taken as the id of a file with no `id:` line and the change went through silently,
    reverted on save."""
    note = add(cli, "The queue is RabbitMQ 3.12")
    path = cli.store / note["path"]
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("importance:", "importance: [unclosed", 1), encoding="utf-8")
    result, _seen = edit(cli, note["id"], edits=[("importance: [unclosed", "importance:"),
                                                (f"id: {note['id']}", "id: 01zzzzzzzzzzzzzz")])
    assert result.exit_code == 1
    assert f"the id changed from {note['id']} to 01zzzzzzzzzzzzzz; ids are permanent" \
        in result.stderr


def test_saving_a_kept_draft_never_loses_a_hand_edit_of_the_note_made_since(cli: Cli) -> None:
    """A kept draft, then a line typed into the note file itself (never committed): saving
    the draft put it in the note's place and the typed line was in no file and no commit.
    It is copied first, as `forget` copies an uncommitted hand edit, and the save says where."""
    note = add(cli, "Backups run nightly at two")
    keep_a_draft(cli, note["id"], ("type: fact", "type: banana"), "Words I typed.\n")
    path = cli.store / note["path"]
    path.write_text(path.read_text(encoding="utf-8") + "Restore drill every first Monday.\n",
                    encoding="utf-8")

    saved, _seen = edit(cli, note["id"], edits=[("type: banana", "type: fact")])
    assert saved.exit_code == 0, saved.stderr
    assert "Words I typed." in path.read_text(encoding="utf-8")
    kept = cli.store / ".memctl" / "edit" / "replaced" / f"{note['id']}.md"
    assert "Restore drill every first Monday." in kept.read_text(encoding="utf-8")
    assert ".memctl/edit/replaced/" in saved.stderr

    # A note as committed is in git already: nothing is copied.
    again = add(cli, "Logs are kept for thirty days")
    keep_a_draft(cli, again["id"], ("type: fact", "type: banana"), "More words.\n")
    cli.ok("supersede", again["id"], note["id"])
    saved, _seen = edit(cli, again["id"], edits=[("type: banana", "type: fact")])
    assert saved.exit_code == 0, saved.stderr
    assert not (kept.parent / f"{again['id']}.md").exists()
    assert "replaced" not in saved.stderr
