"""A note file that does not parse, one rule for every command (docs/format.md): `show`
prints it as it is with `path:line`, `edit` opens it for fixing, `recall` and `search` use the
last good version, `export` leaves it out naming it (the zip always imports), `sync` names it.
And `memctl edit` never loses typing: a failed save keeps the draft, the next edit reopens it
with the reason on top, and only memctl's own lines are removed on save (docs/format.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import Cli, git, tree_snapshot

from memctl.core.note import derive_id
from memctl.core.noteformat import parse_text

# Records the text the editor was given (in $SEEN), then makes the replacements in $EDITS
# (a JSON list of [old, new]) and appends $APPEND: a person at the keyboard, scripted.
EDITOR = """import json, os, sys
path = sys.argv[1]
text = open(path, encoding="utf-8", newline="").read()
open(os.environ["SEEN"], "w", encoding="utf-8", newline="").write(text)
for old, new in json.loads(os.environ.get("EDITS", "[]")):
    assert old in text, old
    text = text.replace(old, new, 1)
text += os.environ.get("APPEND", "")
open(path, "w", encoding="utf-8", newline="").write(text)
"""


def edit(cli: Cli, note_id: str, *args: str, edits: list[tuple[str, str]] = (), append: str = ""):
    """`memctl edit` with the scripted editor; returns (result, the text the editor saw)."""
    script = cli.store.parent / "editor.py"
    script.write_text(EDITOR)
    seen = cli.store.parent / "seen.txt"
    result = cli("edit", note_id, *args, env={
        "EDITOR": f"{sys.executable} {script}", "SEEN": str(seen),
        "EDITS": json.dumps([list(pair) for pair in edits]), "APPEND": append})
    return result, seen.read_text(encoding="utf-8")


def add(cli: Cli, text: str) -> dict:
    return cli.ok("add", text, "--json", "--force").json()


def break_tags(cli: Cli, path: str) -> str:
    """An unclosed `[` on the `tags` line (line 6 of a note memctl wrote); returns the text."""
    file = cli.store / path
    text = file.read_text(encoding="utf-8")
    assert text.splitlines()[5] == "tags: []"
    broken = text.replace("tags: []", "tags: [postgres", 1)
    file.write_text(broken, encoding="utf-8")
    return broken


# --- the line of a YAML error -------------------------------------------------------------------


@pytest.mark.parametrize("line", ["type: [broken", "type: {broken", 'type: "broken', "tags: [a, b"])
def test_an_unclosed_bracket_or_quote_is_reported_on_the_line_that_opened_it(line: str):
    text = f"---\nid: abc\n{line}\nproject: demo\nimportance: 5\n---\nbody\n"
    problem = parse_text(text).problem
    assert problem is not None and problem.line == 3, problem


# --- show, edit, recall, search ------------------------------------------------------------------


def test_show_prints_a_file_that_does_not_parse_as_it_is_with_path_and_line(cli: Cli):
    note = add(cli, "Postgres is the database we use")
    broken = break_tags(cli, note["path"])
    shown = cli("show", note["id"])
    assert shown.exit_code == 0, shown.stderr
    assert shown.stdout == broken
    assert f"{note['path']}:6: front matter does not parse" in shown.stderr
    assert f"memctl edit {note['id']}" in shown.stderr
    data = cli.ok("show", note["id"], "--json").json()
    assert (data["id"], data["path"], data["line"], data["raw"]) == (note["id"], note["path"], 6, broken)


def test_edit_opens_a_file_that_does_not_parse_and_saves_the_fix(cli: Cli):
    note = add(cli, "Postgres is the database we use")
    broken = break_tags(cli, note["path"])
    result, seen = edit(cli, note["id"], edits=[("tags: [postgres", "tags: [postgres]")])
    assert result.exit_code == 0, result.stderr
    assert seen == broken  # the file as it is, for fixing
    assert cli.ok("show", note["id"], "--json").json()["tags"] == ["postgres"]
    assert git(cli.store, "status", "--porcelain") == ""
    assert git(cli.store, "log", "-1", "--format=%s").startswith(f"edit {note['id']}")


def test_edit_of_a_broken_file_left_as_it_is_says_it_still_does_not_parse(cli: Cli):
    note = add(cli, "Postgres is the database we use")
    broken = break_tags(cli, note["path"])
    result, _seen = edit(cli, note["id"])
    assert result.exit_code == 0 and "unchanged" in result.stderr
    assert f"{note['path']}:6: " in result.stderr and "still does not parse" in result.stderr
    assert (cli.store / note["path"]).read_text(encoding="utf-8") == broken


def test_recall_and_search_use_the_last_good_version_of_a_file_that_does_not_parse(cli: Cli):
    note = add(cli, "Postgres is the database we use")
    file = cli.store / note["path"]
    break_tags(cli, note["path"])
    file.write_text(file.read_text().replace("Postgres is the database", "Half-typed"))
    recalled = cli.ok("recall", "postgres", "--json")
    block = recalled.json()
    assert [(n["id"], n["text"]) for n in block["notes"]] == [
        (note["id"], "Postgres is the database we use")]
    assert any(w.startswith(f"{note['path']}:6: ") for w in block["warnings"])
    assert f"{note['path']}:6: " in recalled.stderr
    hits = cli.ok("search", "postgres", "--json").json()
    assert [hit["id"] for hit in hits] == [note["id"]]


def test_get_serves_the_last_good_version_of_a_fact_whose_file_does_not_parse(cli: Cli):
    """`get` read every note it found from its file: one that did not parse made the whole
    lookup an error, and a newer note of the same subject and predicate (which could not
    supersede it: its file cannot be stamped) could not be fetched."""
    old = cli.ok("add", "The cache is Memcached", "--subject", "cache", "--predicate",
                 "engine", "--json").json()
    break_tags(cli, old["path"])
    new = cli.ok("add", "The cache is Redis 7", "--subject", "cache", "--predicate", "engine",
                 "--json", "--force").json()
    # It could not be superseded (its file cannot be changed), and the add says so.
    assert new["superseded"] == [] and new["not_superseded"] == [old["id"]]
    said = cli.ok("add", "The cache is Redis 7.2", "--subject", "cache", "--predicate",
                  "engine", "--force")
    assert f"{old['id']} has the same subject and predicate but its file does not parse" \
        in said.stderr
    newest = said.stderr.split()[1]  # `created ID  PATH`
    found = cli.ok("get", "cache", "engine", "--json").json()
    by_id = {fact["id"]: fact for fact in found}
    assert set(by_id) == {old["id"], newest}  # the second add superseded the first
    assert "problem" not in by_id[newest]
    assert by_id[old["id"]]["body"].strip() == "The cache is Memcached"
    assert by_id[old["id"]]["problem"].startswith(f"{old['path']}:6: ")
    said = cli.ok("get", "cache", "engine")
    assert f"{old['path']}:6: " in said.stderr and "The cache is Redis 7.2" in said.stdout


# --- export and import ------------------------------------------------------------------------------


def copied_to_another_store(cli: Cli, tmp_path: Path, note: dict) -> tuple[Cli, bytes]:
    """A second store that imported an export of `cli`'s, and `note`'s file as it holds it."""
    other = Cli(tmp_path / "other")
    other.ok("init", str(other.store))
    cli.ok("export", str(tmp_path / "first.zip"))
    other.ok("import", str(tmp_path / "first.zip"))
    return other, (other.store / note["path"]).read_bytes()


def test_export_leaves_out_a_broken_note_naming_it_and_the_zip_imports(cli: Cli, tmp_path: Path):
    kept = add(cli, "Redis holds the sessions")
    note = add(cli, "Postgres is the database we use")
    other, good = copied_to_another_store(cli, tmp_path, note)

    break_tags(cli, note["path"])
    exported = cli("export", str(tmp_path / "second.zip"), "--json")
    assert exported.exit_code == 0, exported.stderr
    assert exported.json()["broken"] == [{"path": note["path"], "line": 6, "message": (
        "front matter does not parse: did not find expected ',' or ']' (the '[' on this line "
        "is not closed)"), "id": note["id"]}]
    assert exported.json()["removals_withheld"] is False
    assert f"{note['path']}:6: " in exported.stderr and "left out of the zip" in exported.stderr
    imported = other("import", str(tmp_path / "second.zip"), "--json")
    assert imported.exit_code == 0, imported.stderr
    # Left out is not removed: the other machine keeps the version it has.
    assert (other.store / note["path"]).read_bytes() == good
    assert (other.store / kept["path"]).is_file()


def test_an_emptied_note_is_a_file_that_does_not_parse_for_health_export_and_import(
        cli: Cli, tmp_path: Path):
    """An emptied note file (`: > note.md`) is listed by health, left out of an export and
    named, and refused by an import, which never writes 0 bytes over the good copy
    (docs/format.md, one rule in memctl.core.noteformat.parse_file)."""
    note = add(cli, "Prod DB password rotation runbook: step one, step two")
    other = Cli(tmp_path / "other")
    other.ok("init", str(other.store))
    cli.ok("export", str(tmp_path / "good.zip"))
    other.ok("import", str(tmp_path / "good.zip"))
    good = (other.store / note["path"]).read_bytes()

    (cli.store / note["path"]).write_bytes(b"")
    errors = cli.ok("health", "--json").json()["parse_errors"]
    assert {"path": note["path"], "line": 1, "message": "the file is empty"} in errors
    exported = cli("export", str(tmp_path / "bad.zip"), "--json")
    assert exported.exit_code == 0, exported.stderr
    assert [item["path"] for item in exported.json()["broken"]] == [note["path"]]
    assert f"{note['path']}:1: the file is empty" in exported.stderr

    # A zip made by hand (or by an older memctl) that carries the empty file is refused.
    from memctl.exchange.bundle import BundleFile, manifest_for, write_zip

    empty = BundleFile(note["path"], b"", "2026-12-31T00:00:00.000Z")
    write_zip(tmp_path / "worse.zip", [empty],
              manifest_for([empty], machine="laptop", time="2026-12-31T00:00:00.000Z"))
    before = tree_snapshot(other.store)
    for bundle in ("bad.zip", "worse.zip"):
        other("import", str(tmp_path / bundle))
        assert (other.store / note["path"]).read_bytes() == good
    refused = other("import", str(tmp_path / "worse.zip"))
    assert refused.exit_code == 1 and f"{note['path']}:1: the file is empty" in refused.stderr
    assert tree_snapshot(other.store) == before


def rename_by_hand(cli: Cli, path: str, name: str) -> str:
    """`mv` a note to a name without its id, and commit it as `git commit -a` would."""
    new = f"{path.rsplit('/', 1)[0]}/{name}"
    (cli.store / path).rename(cli.store / new)
    git(cli.store, "add", "-A")
    git(cli.store, "commit", "-qm", "renamed by hand")
    return new


@pytest.mark.parametrize("id_line", ["readable", "broken too"])
def test_a_broken_note_renamed_by_hand_is_left_out_by_its_id_never_deleted_on_import(
        cli: Cli, tmp_path: Path, id_line: str):
    """Left out of an export is not removed, whatever the file's name: the note is known by
    its `id:` line; when that line does not read either, no note removal travels at all."""
    note = add(cli, "Renamed broken note about SENTINEL_X")
    gone = add(cli, "A note deleted by hand")
    other, good = copied_to_another_store(cli, tmp_path, note)

    renamed = rename_by_hand(cli, note["path"], "sentinel.md")
    break_tags(cli, renamed)
    if id_line == "broken too":
        text = (cli.store / renamed).read_text()
        (cli.store / renamed).write_text(text.replace(f"id: {note['id']}", f"id: [{note['id']}"))
    (cli.store / gone["path"]).unlink()
    exported = cli("export", str(tmp_path / "second.zip"), "--json")
    assert exported.exit_code == 0, exported.stderr
    report = exported.json()
    assert [item["path"] for item in report["broken"]] == [renamed]
    assert "left out of the zip" in exported.stderr
    if id_line == "readable":
        assert report["broken"][0]["id"] == note["id"] and report["removals_withheld"] is False
        assert f"keeps its version of {note['id']}" in exported.stderr
    else:
        assert report["broken"][0]["id"] is None and report["removals_withheld"] is True
        assert "carries no note removals" in exported.stderr
    imported = other("import", str(tmp_path / "second.zip"), "--json")
    assert imported.exit_code == 0, imported.stderr
    assert (other.store / note["path"]).read_bytes() == good, "left out is never removed"
    assert note["id"] not in imported.json()["deleted"]
    # The hand deletion travels only when the broken note is known by its id.
    assert imported.json()["deleted"] == ([gone["id"]] if id_line == "readable" else [])


def test_an_import_meeting_a_note_broken_here_keeps_one_file_and_a_conflict_copy(
        cli: Cli, tmp_path: Path):
    """A note broken by hand here and edited on the other machine: the import merges the two
    by the id the broken file's `id:` line gives, never writing a second file of that id."""
    note = add(cli, "Postgres is the database we use")
    other = Cli(tmp_path / "other")
    other.ok("init", str(other.store))
    cli.ok("export", str(tmp_path / "first.zip"))
    other.ok("import", str(tmp_path / "first.zip"))
    (other.store / note["path"]).write_text(
        break_tags(other, note["path"]).replace("we use", "we use HAND_EDIT_HERE"))
    cli.ok("edit", note["id"], env={"EDITOR": f"{sys.executable} -c \"import sys; p=sys.argv[1]; "
                                   f"open(p, 'a').write('EDITED_THERE\\n')\""})
    cli.ok("export", str(tmp_path / "second.zip"))
    report = other.ok("import", str(tmp_path / "second.zip"), "--json").json()
    assert report["conflicts"] == [note["id"]] and len(report["conflict_copies"]) == 1
    files = [p for p, d in tree_snapshot(other.store).items()
             if p.endswith(".md") and f"id: {note['id']}\n".encode() in d]
    assert sorted(p.startswith(".conflicts/") for p in files) == [False, True], files
    texts = "".join((other.store / p).read_text() for p in files)
    assert "HAND_EDIT_HERE" in texts and "EDITED_THERE" in texts
    assert other.ok("health", "--json").json()["duplicate_ids"] == []


@pytest.mark.parametrize("renamed", [False, True])
def test_import_skip_invalid_never_deletes_a_note_a_bundle_lists_as_removed_and_broken(
        cli: Cli, tmp_path: Path, renamed: bool):
    """A bundle made by an export that packed a broken note also listed the note's id as
    removed (its file no longer read as that id): skipping the file must not delete the note,
    also when the file was renamed without its id (known by its `id:` line)."""
    from memctl.exchange.bundle import BundleFile, manifest_for, write_zip

    note = add(cli, "Postgres is the database we use")
    good = (cli.store / note["path"]).read_bytes()
    oid = git(cli.store, "hash-object", note["path"]).strip()
    sent = note["path"].rsplit("/", 1)[0] + "/renamed.md" if renamed else note["path"]
    broken = BundleFile(sent, good.replace(b"tags: []", b"tags: [postgres"), None, (oid,))
    removed = {f"id:{note['id']}": {"path": note["path"], "history": [oid]}}
    manifest = manifest_for([broken], machine="laptop", time="2026-11-30T12:00:00.000Z",
                            extra={"project": None, "removed": removed})
    write_zip(tmp_path / "old.zip", [broken], manifest)

    refused = cli("import", str(tmp_path / "old.zip"))
    assert refused.exit_code == 1 and f"{sent}:6: " in refused.stderr
    report = cli("import", str(tmp_path / "old.zip"), "--skip-invalid", "--json")
    assert report.exit_code == 0, report.stderr
    assert [item["path"] for item in report.json()["rejected"]] == [sent]
    assert (cli.store / note["path"]).read_bytes() == good
    assert report.json()["deleted"] == []


# --- sync -------------------------------------------------------------------------------------------


def test_sync_names_a_file_that_does_not_parse_with_path_and_line(tmp_path: Path):
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    laptop = Cli(tmp_path / "laptop")
    laptop.ok("init", str(laptop.store))
    note = add(laptop, "Postgres is the database we use")
    laptop.ok("sync", "--remote", str(remote))
    break_tags(laptop, note["path"])
    synced = laptop("sync", "--json")
    assert synced.exit_code == 0, synced.stderr
    assert synced.json()["broken"] == [{"path": note["path"], "line": 6, "message": (
        "front matter does not parse: did not find expected ',' or ']' (the '[' on this line "
        "is not closed)")}]
    assert f"{note['path']}:6: " in synced.stderr and "synced as it is" in synced.stderr


# --- memctl edit keeps every keystroke -------------------------------------------------------------


def test_a_failed_save_names_the_draft_line_the_user_edited(cli: Cli):
    note = add(cli, "Keep me")
    before = (cli.store / note["path"]).read_bytes()
    result, seen = edit(cli, note["id"], edits=[("type: fact", "type: [fact")])
    assert seen.splitlines()[2] == "type: fact"  # the third line of the file
    assert result.exit_code == 1
    assert f".memctl/edit/{note['id']}.md:3: front matter does not parse" in result.stderr
    assert "unchanged" in result.stderr and "--fresh" in result.stderr
    assert (cli.store / note["path"]).read_bytes() == before


def test_the_next_edit_reopens_the_kept_draft_with_the_reason_on_top(cli: Cli):
    note = add(cli, "Keep me")
    failed, _seen = edit(cli, note["id"], edits=[("type: fact", "type: [fact")],
                         append="Words I typed and must not lose.\n")
    assert failed.exit_code == 1
    draft = cli.store / ".memctl" / "edit" / f"{note['id']}.md"

    reopened, seen = edit(cli, note["id"], edits=[("type: [fact", "type: fact")])
    assert reopened.exit_code == 0, reopened.stderr
    lines = seen.splitlines()
    header = [line for line in lines if line.startswith("# memctl:")]
    assert lines[:len(header)] == header and len(header) >= 3
    # The reason, with the line as it is in the reopened draft (below the header).
    assert lines[len(header) + 2] == "type: [fact"
    assert f"# memctl: line {len(header) + 3}: front matter does not parse" in seen
    assert "memctl edit " + note["id"] + " --fresh" in seen
    assert "Words I typed and must not lose." in seen
    saved = (cli.store / note["path"]).read_text(encoding="utf-8")
    assert "Words I typed and must not lose." in saved and "# memctl" not in saved
    assert not draft.exists()
    assert "from your kept edit" in reopened.stderr


def test_a_second_failure_after_reopening_names_the_line_in_the_reopened_draft(cli: Cli):
    note = add(cli, "Keep me")
    edit(cli, note["id"], edits=[("type: fact", "type: [fact")])
    again, seen = edit(cli, note["id"], edits=[("type: [fact", "type: fact"),
                                               ("project: demo", "project: [demo")])
    assert again.exit_code == 1
    number = next(n for n, line in enumerate(seen.splitlines(), 1) if line == "project: demo")
    assert f".memctl/edit/{note['id']}.md:{number}: " in again.stderr


def test_fresh_drops_the_kept_draft_and_starts_from_the_note(cli: Cli):
    note = add(cli, "Keep me")
    edit(cli, note["id"], edits=[("type: fact", "type: [fact")], append="a half-done edit\n")
    result, seen = edit(cli, note["id"], "--fresh")
    assert result.exit_code == 0 and "unchanged" in result.stderr
    assert seen == (cli.store / note["path"]).read_text(encoding="utf-8")
    assert not (cli.store / ".memctl" / "edit" / f"{note['id']}.md").exists()
    assert edit(cli, note["id"])[1] == seen  # no draft left to reopen


def test_only_memctls_own_lines_are_removed_on_save(cli: Cli):
    note = add(cli, "Keep me")
    edit(cli, note["id"], edits=[("type: fact", "type: [fact")], append="First words.\n")
    # The person deletes one of memctl's lines, fixes the field and types lines of their own
    # that look like memctl's.
    script = cli.store.parent / "drop_line.py"
    script.write_text(
        "import sys\npath = sys.argv[1]\nlines = open(path, encoding='utf-8').read().split('\\n')\n"
        "lines = [l for l in lines if not l.startswith('# memctl: line ')]\n"
        "text = '\\n'.join(lines).replace('type: [fact', 'type: fact')\n"
        "text += '# memctl: a heading I typed\\n# memctl:\\n'\n"
        "open(path, 'w', encoding='utf-8').write(text)\n")
    cli.ok("edit", note["id"], env={"EDITOR": f"{sys.executable} {script}"})
    saved = (cli.store / note["path"]).read_text(encoding="utf-8")
    assert saved.startswith("---\n")
    assert saved.endswith("Keep me\nFirst words.\n# memctl: a heading I typed\n# memctl:\n")


def test_a_changed_memctl_line_is_never_taken_for_the_note_nor_dropped(cli: Cli):
    note = add(cli, "Keep me")
    before = (cli.store / note["path"]).read_bytes()
    edit(cli, note["id"], edits=[("type: fact", "type: [fact")])
    result, seen = edit(cli, note["id"], edits=[("# memctl: your edit", "# memctl: MY edit"),
                                                ("type: [fact", "type: fact")])
    assert result.exit_code == 1
    assert f".memctl/edit/{note['id']}.md:1: " in result.stderr
    assert (cli.store / note["path"]).read_bytes() == before
    draft = cli.store / ".memctl" / "edit" / f"{note['id']}.md"
    assert "# memctl: MY edit" in draft.read_text(encoding="utf-8")  # nothing dropped


def test_a_note_that_itself_starts_like_memctls_lines_is_reopened_without_them(cli: Cli):
    """No line is added that could be taken for the person's own, so none is removed."""
    hand = cli.store / "demo" / "notes" / "tools.md"
    hand.parent.mkdir(parents=True, exist_ok=True)
    hand.write_text("# memctl: how we use it\nline two\n", encoding="utf-8")
    note_id = cli.ok("list", "--json").json()[0]["id"]
    failed, _seen = edit(cli, note_id, append="key AKIAIOSFODNN7EXAMPLE\n")
    assert failed.exit_code == 1 and "secret" in failed.stderr
    assert f".memctl/edit/{note_id}.md:3: " in failed.stderr
    reopened, seen = edit(cli, note_id, edits=[("key AKIAIOSFODNN7EXAMPLE", "no key here")])
    assert reopened.exit_code == 0, reopened.stderr
    assert seen == "# memctl: how we use it\nline two\nkey AKIAIOSFODNN7EXAMPLE\n"
    assert hand.read_text(encoding="utf-8").endswith("# memctl: how we use it\nline two\nno key here\n")


def test_an_edit_that_fails_changes_nothing_in_the_store(cli: Cli):
    note = add(cli, "Keep me")
    before = tree_snapshot(cli.store)
    head = git(cli.store, "rev-parse", "HEAD")
    edit(cli, note["id"], edits=[("type: fact", "type: [fact")])
    again, seen = edit(cli, note["id"])  # reopened and saved as it was: still refused
    assert again.exit_code == 1 and "type: [fact" in seen
    assert tree_snapshot(cli.store) == before and git(cli.store, "rev-parse", "HEAD") == head


def test_the_show_tool_gives_a_model_the_file_as_it_is_with_path_and_line(cli: Cli):
    """The MCP `show` of a note that does not parse: the problem and the raw file, and the
    structured result still valid under the tool's output schema (last good fields)."""
    pytest.importorskip("mcp.server.mcpserver")
    import jsonschema
    from test_mcp import run_session

    note = add(cli, "Postgres is the database we use")
    broken = break_tags(cli, note["path"])

    async def script(session):
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        return {"schema": tools["show"].output_schema,
                "result": await session.call_tool("show", {"id": note["id"]})}

    outcome = run_session(cli.store, script)
    result = outcome["result"]
    assert not result.is_error, result.content[0].text
    assert result.content[0].text.startswith(f"{note['path']}:6: front matter does not parse")
    assert result.content[0].text.endswith(broken)
    jsonschema.validate(result.structured_content, outcome["schema"])
    shown = result.structured_content["note"]
    assert (shown["id"], shown["line"], shown["raw"]) == (note["id"], 6, broken)


# --- a file that is no text: one name, one line, in every command -----------------------------


@pytest.mark.parametrize(("content", "line", "message"), [
    (b"---\nid: nul1\n---\nfirst line\nnul\x00inside\n", 5, "not text: binary content (NUL bytes)"),
    (b"---\nid: lat1\n---\nfirst line\ncaf\xe9 au lait\n", 5, "not text: invalid UTF-8"),
])
def test_a_file_that_is_no_text_is_named_with_the_same_line_by_every_command(
        store_path: Path, tmp_path: Path, content: bytes, line: int, message: str):
    from conftest import run_memctl

    folder = store_path / "p" / "notes" / "fact"
    folder.mkdir(parents=True)
    (folder / "bad.md").write_bytes(content)
    named = f"p/notes/fact/bad.md:{line}: {message}"
    listed = run_memctl("list", "-p", "p", store=store_path)
    assert named in listed.stderr, listed.stderr
    report = json.loads(run_memctl("health", "--json", store=store_path).stdout)
    assert report["parse_errors"] == [{"path": "p/notes/fact/bad.md", "line": line,
                                       "message": message}]
    exported = run_memctl("export", str(tmp_path / "x.zip"), "--json", store=store_path)
    assert exported.exit_code == 0, exported.stderr
    assert json.loads(exported.stdout)["broken"] == [
        {"path": "p/notes/fact/bad.md", "line": line, "message": message,
         "id": content.split(b"\n")[1][4:].decode()}]
    assert named in exported.stderr
    zipped = tmp_path / "hand.zip"
    from memctl.exchange.bundle import BundleFile, manifest_for, write_zip

    bad = BundleFile("p/notes/fact/bad.md", content, None, ())
    write_zip(zipped, [bad], manifest_for([bad], machine="laptop", time="2026-11-30T12:00:00.000Z",
                                          extra={"project": None, "removed": {}}))
    refused = run_memctl("import", str(zipped), store=store_path)
    assert refused.exit_code == 1 and named in refused.stderr, refused.stderr


def test_a_file_name_that_is_not_utf8_is_named_by_health_and_breaks_no_command(
        store_path: Path, tmp_path: Path) -> None:
    """A Latin-1 `caf\\xe9.md` dropped in by hand: every command reads the rest of the store
    (before, each one stopped with a UnicodeEncodeError from the index or the export),
    health names it escaped among the files that do not parse, export leaves it out."""
    from conftest import run_memctl

    assert run_memctl("add", "Cafe opening hours are kept in the wiki",
                      store=store_path).exit_code == 0
    folder = store_path / "demo" / "notes" / "fact"
    folder.mkdir(parents=True, exist_ok=True)
    bad = bytes(folder) + b"/caf\xe9.md"
    with open(bad, "wb") as handle:
        handle.write(b"---\ntype: fact\n---\nCafe note with a Latin-1 name\n")
    git(store_path, "add", "-A")  # committed by plain git, as a collaborator could
    git(store_path, "commit", "-qm", "a Latin-1 name")
    for command in (("list",), ("search", "cafe"), ("recall", "cafe"), ("reindex",)):
        done = run_memctl(*command, store=store_path)
        assert done.exit_code == 0 and "Traceback" not in done.stderr, (command, done.stderr)
    listed = run_memctl("list", "--json", store=store_path).json()
    assert [note["title"] for note in listed] == ["Cafe opening hours are kept in the wiki"]
    report = run_memctl("health", "--json", store=store_path).json()
    assert {"path": "demo/notes/fact/caf\\xe9.md", "line": 1,
            "message": "the name is not UTF-8: no command reads this; rename it"} \
        in report["parse_errors"]
    exported = run_memctl("export", str(tmp_path / "out.zip"), store=store_path)
    assert exported.exit_code == 0, exported.stderr
    import zipfile

    with zipfile.ZipFile(tmp_path / "out.zip") as archive:
        names = archive.namelist()
    assert any(name.startswith("demo/notes/fact/cafe-opening") for name in names)
    reimported = run_memctl("import", str(tmp_path / "out.zip"), store=store_path)
    assert reimported.exit_code == 0, reimported.stderr
    assert not any(name.startswith("demo/notes/fact/caf") and "opening" not in name
                   for name in names)


@pytest.mark.parametrize("kind", ["fifo", "socket"])
def test_a_note_replaced_by_a_fifo_or_a_socket_hangs_nothing(store_path: Path, kind: str,
                                                            monkeypatch) -> None:
    """An indexed note replaced by a FIFO (which a plain open waits on for ever) or a socket
    (which refuses to open): every command goes on, the note is gone from the index, and
    `show` of its id says in one line what is there."""
    import os
    import socket

    from conftest import run_memctl

    added = run_memctl("add", "The queue drains every minute", "--json", store=store_path)
    note = json.loads(added.stdout)
    path = store_path / note["path"]
    assert run_memctl("search", "drains", store=store_path).stdout.count(note["id"]) == 1
    path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    else:
        monkeypatch.chdir(path.parent)  # (a socket's path is short: at most 107 bytes)
        listener = socket.socket(socket.AF_UNIX)
        listener.bind(path.name)
    shown = run_memctl("show", note["id"], store=store_path, timeout=30)
    assert shown.exit_code == 1 and shown.error.count("\n") == 1, shown.stderr
    assert shown.stderr.startswith("error:") and "Traceback" not in shown.stderr
    found = run_memctl("search", "drains", store=store_path, timeout=30)
    assert found.exit_code == 0 and note["id"] not in found.stdout
    assert run_memctl("health", "--json", store=store_path, timeout=60).exit_code in (0, 1)


# --- counts and warnings agree on what a broken file still is ------------------------------


def test_health_counts_the_notes_list_shows_from_their_last_good_version(cli: Cli):
    kept = add(cli, "Postgres is the database we use")
    add(cli, "Deploys go out on Tuesdays")
    break_tags(cli, kept["path"])
    listed = cli.ok("list", "--json")
    assert len(listed.json()) == 2  # the broken one from its last good version
    assert f"{kept['path']}:6: " in listed.stderr and "(its last good version is used)" in listed.stderr
    report = cli.ok("health", "--json").json()
    # Read from the files: 1 note; the other is counted apart, not lost from the totals.
    assert report["totals"]["notes"] == 1 and report["totals"]["last_good"] == 1
    assert report["index"]["last_good_notes"] == 1
    assert [error["path"] for error in report["parse_errors"]] == [kept["path"]]
    shown = cli("health").stdout
    assert "1 note, 0 episodes" in shown
    assert "and 1 note listed and searched from its last good version" in shown


def test_a_file_that_never_parsed_is_said_to_be_left_out_not_served(cli: Cli):
    add(cli, "Deploys go out on Tuesdays")
    dropped = cli.store / "demo" / "notes" / "fact" / "dropped-by-hand.md"
    dropped.write_text("---\nid: [01m8p03ee0pc1z47\n---\nTuesdays are for deploys\n")
    listed = cli.ok("list", "--json")
    assert len(listed.json()) == 1
    warning = next(line for line in listed.stderr.splitlines() if "dropped-by-hand.md" in line)
    assert warning.endswith("(left out until it parses)"), warning
    searched = cli.ok("search", "Tuesdays", "--json")
    assert "dropped-by-hand.md:2: " in searched.stderr
    assert "(left out until it parses)" in searched.stderr
    assert cli.ok("health", "--json").json()["totals"]["last_good"] == 0


@pytest.mark.parametrize("id_line", [None, "id: bogus!"])
def test_a_note_whose_id_line_is_lost_keeps_the_id_its_file_name_carries(cli: Cli, id_line):
    """An `id:` line deleted or broken by hand made a memctl note known by a hash of its path:
    `show ID` said "no note", its supersession and counters named an id no note had, and the
    warning said it was "read as the id from the file name", which it was not. The id at the
    end of the file name (as memctl names every note) is its id (docs/format.md)."""
    old = cli.ok("add", "The queue is RabbitMQ 3.12", "--json").json()
    new = cli.ok("add", "The queue moved to NATS JetStream", "--force", "--json").json()
    cli.ok("supersede", old["id"], new["id"])
    path = cli.store / new["path"]
    text = path.read_text(encoding="utf-8")
    lines = [line for line in text.splitlines(keepends=True) if not line.startswith("id: ")]
    if id_line is not None:
        lines.insert(1, id_line + "\n")
    path.write_text("".join(lines), encoding="utf-8")
    assert cli.ok("show", new["id"], "--json").json()["id"] == new["id"]
    listed = [row["id"] for row in cli.ok("list", "--json").json()]
    assert new["id"] in listed
    health = cli.ok("health", "--json").json()
    assert not health.get("supersession"), health["supersession"]
    if id_line is not None:
        warned = " ".join(str(item) for item in health["invalid_ids"])
        assert f"read as {new['id']}, the id at the end of its file name" in warned, warned


def test_a_dropped_file_without_an_id_in_its_name_keeps_the_id_its_path_gives(cli: Cli):
    folder = cli.store / "demo" / "notes" / "fact"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "queue-facts.md").write_text("The queue is RabbitMQ\n", encoding="utf-8")
    (folder / "queue-0123456789abcdef.md").write_text("The cache is Redis\n", encoding="utf-8")
    listed = {row["path"]: row["id"] for row in cli.ok("list", "--json").json()}
    assert listed["demo/notes/fact/queue-0123456789abcdef.md"] == "0123456789abcdef"
    assert listed["demo/notes/fact/queue-facts.md"] == derive_id("demo/notes/fact/queue-facts.md")
