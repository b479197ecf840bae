"""Importers on realistic sources (tests/data/importers/): what each one brings in, and what
importing the same source again does: nothing new when it did not change; when it did,
exactly the changed records are updated and the vanished ones retired, and a note edited here
since the import is never overwritten (docs/sync.md, "Importing again")."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import zipfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from conftest import PINNED_NOW, git, tree_snapshot

from memctl.core.clock import format_time, parse_time

DATA = Path(__file__).parent / "data" / "importers"
# File times the importers date notes by: a day before the pinned clock, and an hour after
# that for an edit (never today's date).
BEFORE = parse_time(PINNED_NOW) - timedelta(days=1)
NEWS = ("added", "updated", "retired", "conflicts", "conflict_copies", "deleted", "revived",
        "rejected")


def copy_fixture(name: str, tmp_path: Path) -> Path:
    target = tmp_path / name
    shutil.copytree(DATA / name, target, symlinks=True)
    settle(target)
    return target


def settle(root: Path, hours: int = 0) -> None:
    """Every file's time, at BEFORE plus `hours` (an edit is made later than the import)."""
    moment = (BEFORE + timedelta(hours=hours)).timestamp()
    for path in [root, *root.rglob("*")]:
        if not path.is_symlink():
            os.utime(path, (moment, moment))


def imported(cli, source: Path, *options: str) -> dict:
    return cli.ok("import", str(source), "--json", *options).json()


def news(report: dict) -> dict:
    """What a report says changed (empty when a re-import brought nothing new)."""
    return {key: report[key] for key in NEWS if report[key]}


def notes(cli, project: str = "demo", status: str = "active") -> dict[str, dict]:
    listed = cli.ok("list", "--json", "--project", project, "--status", status).json()
    return {n["id"]: cli.ok("show", n["id"], "--json").json() for n in listed}


def by_origin(shown: dict[str, dict]) -> dict[str, dict]:
    return {note["imported_from"]: note for note in shown.values()}


def edit_file(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, old
    path.write_text(text.replace(old, new), encoding="utf-8")


# --- CLAUDE.md / AGENTS.md --------------------------------------------------------------------


def test_claude_md_follows_its_imports_and_nested_agent_files(cli, tmp_path):
    repo = copy_fixture("claude-repo", tmp_path)
    (tmp_path / "team-notes.md").write_text("## Outside\nThe repository must not import me.\n")
    (repo / "docs" / "fenced-not-an-import.md").write_text("## Fenced\nOnly named in a code block.\n")
    report = imported(cli, repo / "CLAUDE.md")
    found = by_origin(notes(cli))
    assert set(found) == {
        "CLAUDE.md: (preamble)", "CLAUDE.md: Conventions", "CLAUDE.md: Commands",
        "CLAUDE.md: Architecture", "CLAUDE.md: Pitfalls",
        "docs/testing.md: Unit tests", "docs/testing.md: Integration tests",  # @docs/testing.md
        "docs/conventions/naming.md: Test names",  # two hops: imported by docs/testing.md
        "packages/api/AGENTS.md: Rules", "packages/api/AGENTS.md: Commands",  # nested
    }
    assert len(report["added"]) == len(found)
    assert found["docs/testing.md: Integration tests"]["body"].startswith("## Integration tests\n")
    assert found["docs/testing.md: Unit tests"]["tags"] == ["claude-md"]
    assert found["packages/api/AGENTS.md: Rules"]["type"] == "rule"
    assert found["packages/api/AGENTS.md: Rules"]["tags"] == ["agents-md"]
    skipped = {item["path"]: item["reason"] for item in report["skipped"]}
    assert skipped["CLAUDE.md: @../team-notes.md"] == "outside the imported folder: not read"
    assert "home or absolute path" in skipped["CLAUDE.md: @~/.claude/payments-personal.md"]
    assert skipped["CLAUDE.md: @package.json"].startswith("not Markdown")
    stored = "".join(p.read_text() for p in cli.store.rglob("*.md"))
    assert "must not import me" not in stored and "Only named in a code block" not in stored
    assert "installed code" not in stored  # node_modules/left-pad/AGENTS.md
    assert news(imported(cli, repo / "CLAUDE.md")) == {}


def test_imports_stop_after_five_hops(cli, tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "CLAUDE.md").write_text("## Start\nSee @hop1.md\n")
    for hop in range(1, 8):
        (repo / f"hop{hop}.md").write_text(f"## Hop {hop}\nNext: @hop{hop + 1}.md\n")
    report = imported(cli, repo / "CLAUDE.md")
    origins = set(by_origin(notes(cli)))
    assert "hop5.md: Hop 5" in origins and "hop6.md: Hop 6" not in origins
    assert {"path": "hop5.md: @hop6.md",
            "reason": "more than 5 hops of @imports (Claude Code's limit): not imported"} in report["skipped"]


def test_an_import_through_a_link_is_not_followed(cli, tmp_path):
    secret_dir = tmp_path / "elsewhere"
    secret_dir.mkdir()
    (secret_dir / "notes.md").write_text("## Private\nOutside the repository.\n")
    repo = tmp_path / "repo"
    (repo / "docs").mkdir(parents=True)
    os.symlink(secret_dir / "notes.md", repo / "docs" / "linked.md")
    os.symlink(secret_dir, repo / "shared")
    (repo / "CLAUDE.md").write_text("## Start\nRead @docs/linked.md and @shared/notes.md\n")
    report = imported(cli, repo / "CLAUDE.md")
    reasons = {item["path"]: item["reason"] for item in report["skipped"]}
    assert reasons["CLAUDE.md: @docs/linked.md"] == "goes through a symbolic link: not followed"
    assert reasons["CLAUDE.md: @shared/notes.md"] == "goes through a symbolic link: not followed"
    assert "Outside the repository" not in "".join(p.read_text() for p in cli.store.rglob("*.md"))


def test_reimporting_an_edited_claude_md_updates_and_retires_exactly_what_changed(cli, tmp_path):
    repo = copy_fixture("claude-repo", tmp_path)
    source = repo / "CLAUDE.md"
    imported(cli, source)
    before = by_origin(notes(cli))
    edit_file(source, "- Never log card numbers; use `mask.PAN()`.\n",
              "- Never log card numbers; use `mask.PAN()`.\n- Amounts are int64 cents.\n")
    edit_file(source, "## Pitfalls\nThe sandbox acquirer declines every amount ending in 13.\n", "")
    settle(repo, hours=1)
    report = imported(cli, source)
    conventions = before["CLAUDE.md: Conventions"]["id"]
    pitfalls = before["CLAUDE.md: Pitfalls"]["id"]
    assert news(report) == {"updated": [conventions], "retired": [pitfalls]}
    assert not (cli.store / ".conflicts").exists()
    after = cli.ok("show", conventions, "--json").json()
    assert "int64 cents" in after["body"] and after["created"] == before["CLAUDE.md: Conventions"]["created"]
    gone = cli.ok("show", pitfalls, "--json").json()
    assert gone["status"] == "archived" and gone["path"].startswith("demo/archive/")
    assert pitfalls not in notes(cli)
    assert news(imported(cli, source)) == {}
    # The section comes back: the archived note is brought back, not duplicated.
    source.write_text(source.read_text() + "## Pitfalls\nThe sandbox declines amounts ending in 13.\n")
    settle(repo, hours=2)
    assert news(imported(cli, source)) == {"updated": [pitfalls]}
    assert cli.ok("show", pitfalls, "--json").json()["status"] == "active"


def test_a_note_edited_here_is_kept_and_the_source_change_becomes_a_conflict_copy(cli, tmp_path):
    repo = copy_fixture("claude-repo", tmp_path)
    source = repo / "CLAUDE.md"
    imported(cli, source)
    found = by_origin(notes(cli))
    architecture = found["CLAUDE.md: Architecture"]
    commands = found["CLAUDE.md: Commands"]
    for note, old, new in ((architecture, "nothing else touches", "NOTHING else touches"),
                           (commands, "make lint", "make lint-all")):
        edit_file(cli.store / note["path"], old, new)
    cli.ok("reindex")  # the edits are in the store; the next import sees them
    edit_file(source, "Ledger writes go through `ledger.Post`; nothing else touches the `entries` table.",
              "Ledger writes go through `ledger.Post` only.")
    edit_file(source, "## Commands\n", "## Build commands\n")  # the old heading is gone
    settle(repo, hours=1)
    report = imported(cli, source)
    assert sorted(report["conflicts"]) == sorted([architecture["id"], commands["id"]])
    assert report["updated"] == [] and report["retired"] == []
    assert len(report["added"]) == 1  # the section under its new heading
    kept = cli.ok("show", architecture["id"], "--json").json()
    assert "NOTHING else touches" in kept["body"]
    [copy] = report["conflict_copies"]
    assert "`ledger.Post` only." in (cli.store / copy).read_text()
    assert cli.ok("show", commands["id"], "--json").json()["status"] == "active"  # edited: kept
    assert news(imported(cli, source)) == {}
    # Taking the source's version resolves it; the note then follows the source again.
    cli.ok("conflicts", "keep", copy)
    assert "`ledger.Post` only." in cli.ok("show", architecture["id"], "--json").json()["body"]
    assert news(imported(cli, source)) == {}


def test_a_folder_import_splits_agent_files_into_sections(cli, tmp_path):
    repo = copy_fixture("claude-repo", tmp_path)
    imported(cli, repo, "--from", "markdown")
    origins = set(by_origin(notes(cli)))
    assert {"CLAUDE.md: Conventions", "packages/api/AGENTS.md: Rules",
            "docs/testing.md"} <= origins
    assert "CLAUDE.md" not in origins  # not one whole-file note


# --- Obsidian vault ---------------------------------------------------------------------------


def test_an_obsidian_vault_keeps_its_fields_tags_links_and_says_what_it_skipped(cli, tmp_path):
    vault = copy_fixture("obsidian-vault", tmp_path)
    report = imported(cli, vault)
    assert {(item["path"], item["reason"]) for item in report["skipped"]} == {
        ("Templates/Daily note.md", "template (the vault's templates folder)"),
        ("Inbox/Untitled.md", "empty note (no text)"),
        ("Attachments/diagram.png",
         "attachment: not imported (memctl keeps text); embedded by Projects/Payments.md"),
    }
    found = by_origin(notes(cli))
    assert set(found) == {"Projects/Payments.md", "Tech/Postgres.md", "Tech/Ledger rules.md",
                          "Daily/2025-03-01.md"}
    payments, postgres = found["Projects/Payments.md"], found["Tech/Postgres.md"]
    ledger = found["Tech/Ledger rules.md"]
    assert payments["body"] == (vault / "Projects" / "Payments.md").read_text().split("---\n", 2)[2]
    assert payments["status"] == "active" and payments["original_status"] == "done"
    assert payments["author"] == {"name": "Ann", "team": "payments"}
    assert payments["created"] == payments["updated"] == "2025-03-02"
    assert payments["modified"] == "2025-03-02" and payments["aliases"] == ["Payments service"]
    assert set(payments["tags"]) == {"work", "projects", "golang", "payments/ledger"}
    assert payments["links"] == [postgres["id"], ledger["id"]]  # `notatag`, `NotALink` are code
    assert payments["attachments"] == ["Attachments/diagram.png"]
    assert postgres["links"] == [payments["id"]]  # through the alias `Payments service`
    assert postgres["type"] == "decision" and postgres["importance"] == 8
    assert ledger["original_id"] == "20250112-ledger" and set(ledger["tags"]) == {"ledger", "rules", "tech"}
    hits = {hit["id"] for hit in cli.ok("search", "Postgres", "--json").json()}
    assert payments["id"] in hits  # the link's text is searchable
    assert news(imported(cli, vault)) == {}

    edit_file(vault / "Projects" / "Payments.md", "Written in Go.", "Written in Go 1.22.")
    (vault / "Daily" / "2025-03-01.md").unlink()
    (vault / "Tech" / "Kafka.md").write_text("# Kafka\n\nOrdered partitions per merchant.\n")
    settle(vault, hours=1)
    again = imported(cli, vault)
    assert news(again) == {"added": [again["added"][0]], "updated": [payments["id"]],
                           "retired": [found["Daily/2025-03-01.md"]["id"]]}
    assert news(imported(cli, vault)) == {}


def test_show_names_the_notes_an_imported_note_links_to(cli, tmp_path):
    """docs/sync.md: a wikilink between two imported notes is listed in `links:` and
    `memctl show` names it (the body keeps `[[Postgres]]`, which names no id)."""
    vault = copy_fixture("obsidian-vault", tmp_path)
    imported(cli, vault)
    found = by_origin(notes(cli))
    payments, postgres = found["Projects/Payments.md"], found["Tech/Postgres.md"]
    ledger = found["Tech/Ledger rules.md"]
    shown = cli.ok("show", payments["id"]).stdout
    assert postgres["id"] in shown and ledger["id"] in shown
    assert payments["id"] in cli.ok("show", postgres["id"]).stdout
    assert " links " not in cli.ok("show", ledger["id"]).stdout  # no link, no line


def test_a_template_outside_the_configured_folder_is_skipped_by_its_placeholders(cli, tmp_path):
    vault = tmp_path / "vault"
    (vault / "_templates").mkdir(parents=True)
    (vault / "_templates" / "Meeting.md").write_text("---\ndate: {{date}}\n---\n# {{title}}\n")
    (vault / "Note.md").write_text("A note.\n")
    report = imported(cli, vault)
    assert len(report["added"]) == 1
    assert report["skipped"] == [{"path": "_templates/Meeting.md",
                                  "reason": "template ({{…}} placeholders)"}]


# --- Cline memory bank ------------------------------------------------------------------------


def test_a_cline_memory_bank_lands_in_memory_md_the_scratchpad_and_typed_notes(cli, tmp_path):
    repo = copy_fixture("cline-repo", tmp_path)
    report = imported(cli, repo)
    assert {"demo/MEMORY.md", "demo/SCRATCHPAD.md"} <= set(report["added"])
    memory = cli.ok("project", "show", "--json").json()["text"]
    sections = {name: memory.split(f"## {name}\n", 1)[1].split("\n## ", 1)[0]
                for name in ("Constraints", "Decisions", "Progress", "Lessons")}
    assert "- PCI scope: card numbers never leave the vault service." in sections["Constraints"]
    assert "- Kafka over SQS: we need ordered partitions per merchant." in sections["Decisions"]
    assert "idempotency key" in sections["Decisions"]
    assert "- Streaming settlement is live for 40% of merchants." in sections["Progress"]
    assert "- Duplicate webhook deliveries are dropped only after 24 h." in sections["Lessons"]
    scratch = cli.ok("scratch", "show", "--json").json()
    assert scratch["focus"] == "Moving refunds onto the streaming settlement path."
    assert scratch["next"] == ["Write the refund consumer", "Backfill refunds from March",
                               "Switch the batch job off", "Refund consumer", "Third acquirer"]
    found = by_origin(notes(cli))
    assert set(found) == {f"memory-bank/{name}.md" for name in
                          ("projectbrief", "productContext", "activeContext", "systemPatterns",
                           "techContext")}  # progress.md is all MEMORY.md and scratchpad
    patterns = found["memory-bank/systemPatterns.md"]
    assert patterns["type"] == "decision" and "Outbox pattern" in patterns["body"]
    assert "Kafka over SQS" not in patterns["body"]  # in MEMORY.md, not twice
    assert found["memory-bank/projectbrief.md"]["importance"] == 8
    assert "table-driven" in found["memory-bank/activeContext.md"]["body"]
    assert news(imported(cli, repo)) == {}

    bank = repo / "memory-bank"
    edit_file(bank / "progress.md", "- Payments settle through the streaming path for two acquirers.\n",
              "- Payments settle through the streaming path for two acquirers.\n"
              "- Refunds settle through it too.\n")
    edit_file(bank / "progress.md", "## Known issues\n- Duplicate webhook deliveries are dropped "
                                    "only after 24 h.\n", "")
    settle(repo, hours=1)
    again = imported(cli, repo)
    assert news(again) == {"updated": ["demo/MEMORY.md"]}
    after = cli.ok("project", "show", "--json").json()["text"]
    assert "- Refunds settle through it too." in after and "Duplicate webhook" not in after
    assert [line for line in memory.splitlines() if "memctl import" not in line
            and "Duplicate webhook" not in line] == \
        [line for line in after.splitlines() if "memctl import" not in line
         and "Refunds settle through it too" not in line]  # nothing else moved
    assert news(imported(cli, repo)) == {}


def test_an_edited_memory_md_block_is_kept_and_the_source_change_is_a_conflict_copy(cli, tmp_path):
    repo = copy_fixture("cline-repo", tmp_path)
    imported(cli, repo)
    memory_file = cli.store / "demo" / "MEMORY.md"
    edit_file(memory_file, "with a `-refund` suffix.", "with a `-refund` suffix (agreed with Bob).")
    cli.ok("project", "add", "decisions", "Hand-written decision")
    edit_file(repo / "memory-bank" / "activeContext.md", "with a `-refund` suffix.", "with `-r`.")
    settle(repo, hours=1)
    report = imported(cli, repo)
    assert report["conflicts"] == ["demo/MEMORY.md"] and report["updated"] == []
    text = memory_file.read_text()
    assert "(agreed with Bob)" in text and "Hand-written decision" in text
    [copy] = report["conflict_copies"]
    copied = (cli.store / copy).read_text()
    assert "with `-r`." in copied and "Hand-written decision" in copied
    assert news(imported(cli, repo)) == {}


# --- Claude Code auto-memory ------------------------------------------------------------------


def test_a_claude_code_project_folder_is_read_as_auto_memory_not_as_a_bundle(cli, tmp_path):
    projects = copy_fixture("claude-code-projects", tmp_path)
    folder = projects / "-home-ann-payments"
    report = imported(cli, folder)
    found = by_origin(notes(cli))
    assert {note["original_type"]: note["type"] for note in found.values()} == {
        "feedback": "rule", "user": "preference", "project": "fact"}
    assert found["memory/user_role.md"]["description"] == "role and how she likes answers"
    assert found["memory/debugging.md"]["title"] == "Debugging the acquirer sandbox"
    assert "demo/MEMORY.md" in report["added"]
    assert "- Ledger entries are never updated, only reversed (2026-11-12)." in \
        cli.ok("project", "show", "--json").json()["text"]
    scratch = cli.ok("scratch", "show", "--json").json()
    assert scratch["focus"] == "Refund consumer for the streaming settlement path."
    assert scratch["next"] == ["Backfill March refunds"]
    # The memory folder itself is the same source: nothing new.
    assert news(imported(cli, folder / "memory")) == {}
    (folder / "memory" / "project_freeze.md").unlink()  # as Claude Code forgets: file and pointer
    edit_file(folder / "memory" / "MEMORY.md", "- [Release freeze](project_freeze.md)\n", "")
    settle(projects, hours=1)
    assert news(imported(cli, folder)) == {"retired": [found["memory/project_freeze.md"]["id"]]}


# --- mem0 / OpenMemory ------------------------------------------------------------------------


def openmemory_zip(tmp_path: Path, memories: dict | None = None, lines: bytes | None = None) -> Path:
    """An export zip as OpenMemory's backup router writes it."""
    source = DATA / "openmemory"
    target = tmp_path / "memories_export_ann.zip"
    payload = memories if memories is not None else json.loads((source / "memories.json").read_text())
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("memories.json", json.dumps(payload, indent=2))
        archive.writestr("memories.jsonl.gz",
                         gzip.compress(lines if lines is not None else (source / "memories.jsonl").read_bytes()))
    settle(tmp_path)
    return target


def test_an_openmemory_export_zip_maps_states_categories_and_types(cli, tmp_path):
    report = imported(cli, openmemory_zip(tmp_path))
    assert len(report["added"]) == 5
    assert report["skipped"] == [{"path": "memories_export_ann.zip",
                                  "reason": "1 deleted memory: not imported"}]
    everything = {note["body"].strip(): note for note in notes(cli, status="any").values()}
    assert "Lives in Berlin" not in everything  # deleted
    dark = everything["Prefers dark mode in every editor"]
    assert dark["type"] == "preference" and dark["status"] == "active"
    assert dark["tags"] == ["mem0", "preferences"] and dark["mem0_app"] == "cursor"
    assert dark["created"] == "2025-06-01T10:00:00.123456+00:00" and dark["mem0_user_id"] == "ann"
    pnpm = everything["Uses pnpm, never npm, for JavaScript projects"]  # categorised by the join rows
    assert pnpm["type"] == "preference" and set(pnpm["tags"]) == {"mem0", "ai-ml-technology", "preferences"}
    paused = everything["Is training for a marathon in April"]
    assert paused["status"] == "archived" and paused["mem0_state"] == "paused"
    assert set(paused["tags"]) == {"mem0", "health", "personal"} and paused["type"] == "fact"
    assert everything["Used Vim before switching to Helix"]["mem0_state"] == "archived"
    assert everything["Works on the payments service, written in Go"]["type"] == "fact"
    assert news(imported(cli, openmemory_zip(tmp_path))) == {}

    payload = json.loads((DATA / "openmemory" / "memories.json").read_text())
    for memory in payload["memories"]:
        if memory["content"].startswith("Prefers dark mode"):
            memory["content"] = "Prefers dark mode, except in the terminal"
            memory["updated_at"] = "2025-08-01T10:00:00+00:00"
        if memory["content"].startswith("Works on the payments"):
            memory["state"] = "deleted"
    again = imported(cli, openmemory_zip(tmp_path, payload, lines=b""))
    assert news(again) == {"updated": [dark["id"]],
                           "retired": [everything["Works on the payments service, written in Go"]["id"]]}
    assert cli.ok("show", dark["id"], "--json").json()["body"] == "Prefers dark mode, except in the terminal\n"


def test_an_import_that_recognises_nothing_says_so_and_changes_nothing(cli, store_path, tmp_path):
    stray = tmp_path / "photos.zip"
    with zipfile.ZipFile(stray, "w") as archive:
        archive.writestr("IMG_0001.jpg", b"\xff\xd8\xff")
    pictures = tmp_path / "pictures"
    pictures.mkdir()
    (pictures / "cat.png").write_bytes(b"\x89PNG\r\n")
    empty_export = tmp_path / "empty.json"
    empty_export.write_text("[]")
    before, head = tree_snapshot(store_path), git(store_path, "rev-parse", "HEAD")
    for source, words in ((stray, "nothing in"), (pictures, "found nothing to import"),
                          (empty_export, "no memories found"),
                          (openmemory_zip(tmp_path), "nothing in")):
        options = ("--from", "bundle") if source.name.endswith("ann.zip") else ()
        result = cli("import", str(source), *options)
        assert result.exit_code == 1 and result.stderr.startswith("error:"), result.stderr
        assert words in result.stderr
    assert tree_snapshot(store_path) == before and git(store_path, "rev-parse", "HEAD") == head


@pytest.mark.parametrize("entry", ["../evil.json", "/abs/memories.json"])
def test_an_openmemory_zip_with_a_hostile_entry_is_refused(cli, store_path, tmp_path, entry):
    target = tmp_path / "memories_export_x.zip"
    with zipfile.ZipFile(target, "w") as archive:
        archive.writestr("memories.json", (DATA / "openmemory" / "memories.json").read_text())
        archive.writestr(entry, "{}")
    before = tree_snapshot(store_path)
    result = cli("import", str(target))
    assert result.exit_code == 1 and result.stderr.startswith("error:")
    assert tree_snapshot(store_path) == before


def test_an_openmemory_zip_with_a_corrupt_gzip_stream_is_a_one_line_refusal(cli, store_path, tmp_path):
    garbled = bytearray(gzip.compress((DATA / "openmemory" / "memories.jsonl").read_bytes() * 20))
    for index in range(12, 32):
        garbled[index] ^= 0xFF
    target = tmp_path / "memories_export_x.zip"
    with zipfile.ZipFile(target, "w") as archive:
        archive.writestr("memories.json", (DATA / "openmemory" / "memories.json").read_text())
        archive.writestr("memories.jsonl.gz", bytes(garbled))
    before = tree_snapshot(store_path)
    result = cli("import", str(target))
    assert result.exit_code == 1 and result.stderr.startswith("error:"), result.stderr
    assert "memories.jsonl.gz" in result.stderr
    assert tree_snapshot(store_path) == before


@pytest.mark.parametrize("fields, problem", [
    ({"memories": [{"id": "m1", "memory": "User likes tea", "category_ids": 5},
                   {"id": "m2", "memory": "User likes rain"}], "categories": []},
     "memories[0]: `category_ids` must be a list, not int"),
    ({"memories": [{"id": "m1", "memory": "User likes tea"}], "categories": 7},
     "`categories` must be a list, not int"),
    ({"memories": [{"id": "m1", "memory": "User likes tea"}], "categories": [],
      "memory_categories": 3}, "`memory_categories` must be a list, not int"),
    ({"memories": [{"id": "m1", "memory": "User likes tea"}], "categories": [], "apps": 9},
     "`apps` must be a list, not int"),
])
@pytest.mark.parametrize("source", ["auto", "mem0"])
def test_an_openmemory_field_of_the_wrong_type_is_named_not_a_traceback(
        cli, store_path, tmp_path, fields, problem, source):
    export = tmp_path / "om.json"
    export.write_text(json.dumps(fields))
    before = tree_snapshot(store_path)
    options = ("--from", "mem0") if source == "mem0" else ()
    result = cli("import", str(export), *options)
    assert result.exit_code == 1 and result.stderr.startswith("error:"), result.stderr
    assert f"om.json: {problem}" in result.stderr and "--skip-invalid" in result.stderr
    assert tree_snapshot(store_path) == before


def test_a_mem0_string_that_is_no_text_is_refused_not_a_traceback(cli, store_path, tmp_path):
    # `\ud800` is valid JSON and no text: before, writing the note raised UnicodeEncodeError.
    export = tmp_path / "surr.json"
    export.write_text('[{"id": "a", "memory": "hello \\ud800 world"}]')
    lines = tmp_path / "surr.jsonl"
    lines.write_text('{"id": "a", "memory": "hello \\ud800"}\n{"id": "b", "memory": "fine"}\n')
    before = tree_snapshot(store_path)
    for source in (export, lines):
        result = cli("import", str(source), "--from", "mem0")
        assert result.exit_code == 1 and result.stderr.startswith("error:"), result.stderr
        assert "lone surrogate" in result.stderr and "Traceback" not in result.stderr
        assert tree_snapshot(store_path) == before
    kept = cli("import", str(lines), "--from", "mem0", "--skip-invalid", "--json")
    assert kept.exit_code == 0, kept.stderr


def test_a_mem0_export_holding_one_id_twice_loses_neither_memory(cli, store_path, tmp_path):
    # Before, the memories were kept in a dict by id: the last one won and the first was
    # dropped without a word (and id-less lines of a memories.jsonl.gz were all one memory).
    export = tmp_path / "twice.json"
    export.write_text(json.dumps([{"id": "a1", "memory": "Prefers tea"},
                                  {"id": "a1", "memory": "Prefers coffee in the morning"},
                                  {"id": "a1", "memory": "Prefers tea"}]))
    report = imported(cli, export)
    assert len(report["added"]) == 2
    assert report["skipped"] == [{"path": "twice.json[2]", "reason": "the same memory as "
                                  "twice.json[0] (same id, same text): imported once"}]
    texts = {note["body"]: note for note in notes(cli).values()}
    assert set(texts) == {"Prefers tea\n", "Prefers coffee in the morning\n"}
    assert {note["mem0_id"] for note in texts.values()} == {"a1"}
    assert news(imported(cli, export)) == {}  # the same ids again: nothing new

    folder = tmp_path / "om"
    folder.mkdir()
    (folder / "memories.jsonl.gz").write_bytes(gzip.compress(
        b'{"memory": "Lives in Lisbon"}\n{"memory": "Works remotely"}\n'))
    assert len(imported(cli, folder, "--project", "om")["added"]) == 2


# --- what every import keeps to ---------------------------------------------------------------


def test_a_linked_agents_md_is_skipped_and_a_repository_folder_reads_its_claude_md(cli, tmp_path):
    repo = copy_fixture("claude-repo", tmp_path)
    os.symlink("CLAUDE.md", repo / "AGENTS.md")  # the usual way to serve both agents
    report = imported(cli, repo, "--from", "agents")
    assert {"path": "AGENTS.md", "reason": "a symbolic link: not followed"} in report["skipped"]
    assert "CLAUDE.md: Conventions" in by_origin(notes(cli))
    assert news(imported(cli, repo / "CLAUDE.md")) == {}  # the same source, named as a file


def test_a_linked_folder_of_a_repository_is_named_and_never_read(cli, tmp_path):
    """An AGENTS.md in a linked folder (a package shared by a link) is what an agent working
    there would read; memctl never follows the link, and says so rather than passing over
    it in silence. Not listed: a linked file of another name (no instructions file), a linked
    vendor folder (passed over as a real one is), a link to a folder of the repository that
    the walk goes through (its files are read by their own path); listed, a link to a dot
    folder of the repository, which no walk goes through."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "AGENTS.md").write_text("## Private\nOutside the repository.\n")
    repo = tmp_path / "repo"
    (repo / "packages" / "api").mkdir(parents=True)
    (repo / "CLAUDE.md").write_text("## Start\nThe monorepo.\n")
    (repo / "packages" / "api" / "AGENTS.md").write_text("## API\nUse Fastify.\n")
    os.symlink(elsewhere, repo / "packages" / "shared")
    os.symlink(repo / "CLAUDE.md", repo / "packages" / "readme.txt")
    os.symlink(elsewhere, repo / "packages" / "node_modules")  # a vendor folder, linked
    os.symlink(repo / "packages" / "api", repo / "api")  # inside: walked by its own path
    os.symlink(".", repo / "packages" / "here")  # the same
    (repo / ".shared").mkdir()  # inside, but in a dot folder no walk goes through
    (repo / ".shared" / "AGENTS.md").write_text("## Hidden\nDot folder rules.\n")
    os.symlink(repo / ".shared", repo / "shared")
    report = imported(cli, repo, "--from", "agents")
    reason = "a linked folder: not followed (an instructions file in it is not imported)"
    assert [item for item in report["skipped"] if item["reason"].startswith("a linked")] == [
        {"path": "packages/shared", "reason": reason}, {"path": "shared", "reason": reason}]
    assert "packages/api/AGENTS.md: API" in by_origin(notes(cli))
    assert "Outside the repository" not in "".join(p.read_text() for p in cli.store.rglob("*.md"))


@pytest.mark.parametrize("fixture, target", [("claude-repo", "CLAUDE.md"),
                                             ("cline-repo", "memory-bank/progress.md")])
def test_an_imported_secret_is_refused_unless_allowed(cli, store_path, tmp_path, fixture, target):
    source = copy_fixture(fixture, tmp_path)
    key = "AKIA" + "QYLPMN5HHHFPZAM2"  # an AWS access key id, split so no scanner flags this file
    with open(source / target, "a", encoding="utf-8") as handle:
        handle.write(f"\n## Current status\nDeploy key {key} is in the vault now.\n")
    before, head = tree_snapshot(store_path), git(store_path, "rev-parse", "HEAD")
    refused = cli("import", str(source / "CLAUDE.md" if fixture == "claude-repo" else source))
    assert refused.exit_code == 1 and "secret" in refused.stderr
    assert tree_snapshot(store_path) == before and git(store_path, "rev-parse", "HEAD") == head
    cli.ok("import", str(source / "CLAUDE.md" if fixture == "claude-repo" else source),
           "--allow-secret")
    assert key in "".join(p.read_text() for p in store_path.rglob("*.md"))


def test_a_dry_run_reimport_lists_the_changes_and_makes_none(cli, store_path, tmp_path):
    repo = copy_fixture("cline-repo", tmp_path)
    imported(cli, repo)
    edit_file(repo / "memory-bank" / "productContext.md", "twice a month", "every week")
    (repo / "memory-bank" / "techContext.md").unlink()
    settle(repo, hours=1)
    before, head = tree_snapshot(store_path), git(store_path, "rev-parse", "HEAD")
    planned = cli.ok("import", str(repo), "--dry-run")
    assert "would write demo/notes/fact/product-context-" in planned.stderr + planned.stdout
    assert "would remove demo/notes/fact/tech-context-" in planned.stderr + planned.stdout
    assert tree_snapshot(store_path) == before and git(store_path, "rev-parse", "HEAD") == head
    report = imported(cli, repo)
    assert len(report["updated"]) == 2 and len(report["retired"]) == 1  # the note, MEMORY.md


def test_the_import_output_names_what_was_skipped_and_retired(cli, tmp_path):
    vault = copy_fixture("obsidian-vault", tmp_path)
    first = cli.ok("import", str(vault))
    shown = first.stdout + first.stderr
    assert "skipped Templates/Daily note.md: template (the vault's templates folder)" in shown
    assert "skipped Inbox/Untitled.md: empty note (no text)" in shown
    daily = by_origin(notes(cli))["Daily/2025-03-01.md"]["id"]
    (vault / "Daily" / "2025-03-01.md").unlink()
    again = cli.ok("import", str(vault))
    assert f"retired {daily}: the source no longer has it (archived; `memctl restore {daily}` " \
           "brings it back)" in again.stdout + again.stderr
    assert "1 retired" in again.stdout + again.stderr


def test_a_record_left_out_as_invalid_is_not_retired(cli, tmp_path):
    vault = copy_fixture("obsidian-vault", tmp_path)
    imported(cli, vault)
    ledger = by_origin(notes(cli))["Tech/Ledger rules.md"]["id"]
    edit_file(vault / "Tech" / "Ledger rules.md", "  - rules\n", "  - rules\nsource: [unclosed\n")
    settle(vault, hours=1)
    assert cli("import", str(vault)).exit_code == 1  # refused whole, as before
    report = imported(cli, vault, "--skip-invalid")
    assert [item["path"] for item in report["rejected"]] == ["Tech/Ledger rules.md"]
    assert news(report) == {"rejected": report["rejected"]}  # Payments still links to it
    assert cli.ok("show", ledger, "--json").json()["status"] == "active"


def test_a_cline_focus_with_a_sub_heading_and_a_fence_stays_the_focus(cli, tmp_path):
    repo = copy_fixture("cline-repo", tmp_path)
    edit_file(repo / "memory-bank" / "activeContext.md",
              "Moving refunds onto the streaming settlement path.\n",
              "Moving refunds onto the streaming settlement path.\n### Blockers\n```\n"
              "## Not a heading in code\n```\n")
    settle(repo)
    imported(cli, repo)
    scratch = cli.ok("scratch", "show", "--json").json()
    assert scratch["focus"] == ("Moving refunds onto the streaming settlement path.\n"
                                "### Blockers\n```\n## Not a heading in code\n```")
    assert scratch["next"][:3] == ["Write the refund consumer", "Backfill refunds from March",
                                   "Switch the batch job off"]
    assert news(imported(cli, repo)) == {}


# --- values a source gives that memctl cannot take as they are ----------------------------------


def test_a_created_edited_here_leaves_an_unchanged_source_unchanged(cli, tmp_path):
    """The first row of docs/sync.md's "Importing again" table holds for an edit of `created`
    too: it is an edit made here, and the source that did not change is no news (before, the
    stored `created` was put into the source's version before it was compared with the
    recorded hash, so the source looked changed: a conflict and a conflict copy)."""
    source = tmp_path / "r1.json"
    source.write_text(json.dumps([{"id": "q", "memory": "uses helix",
                                   "created_at": "2026-01-01T00:00:00Z"}]))
    [note_id] = imported(cli, source)["added"]
    cli.ok("edit", note_id, env={"EDITOR": r"sed -i s/^created:.*/created:\ 2025-06-01T00:00:00Z/"})
    assert cli.ok("show", note_id, "--json").json()["created"] == "2025-06-01T00:00:00Z"
    again = imported(cli, source)
    assert news(again) == {} and again["unchanged"] == [note_id]
    assert not (cli.store / ".conflicts").exists()
    assert cli.ok("show", note_id, "--json").json()["created"] == "2025-06-01T00:00:00Z"  # kept
    # The other rows still hold: the source changing the record is a conflict (edited here)…
    source.write_text(json.dumps([{"id": "q", "memory": "uses helix and kakoune",
                                   "created_at": "2026-01-01T00:00:00Z"}]))
    changed = imported(cli, source)
    assert changed["conflicts"] == [note_id] and len(changed["conflict_copies"]) == 1
    assert news(imported(cli, source)) == {}  # …once
    # …and the source dropping it keeps the edited note, reported once.
    source.write_text(json.dumps([{"id": "other", "memory": "uses git"}]))
    gone = imported(cli, source)
    assert gone["conflicts"] == [note_id] and gone["retired"] == []


def test_claude_memory_front_matter_that_is_not_text_is_left_out_with_a_warning(cli, tmp_path):
    folder = tmp_path / "cm" / "memory"
    folder.mkdir(parents=True)
    (folder / "deploy.md").write_text("---\nname: [deploy, rules]\ntype: [feedback]\n"
                                      "description: {a: 1}\n---\nNever push to main\n")
    settle(folder)
    result = cli.ok("import", str(folder), "--from", "claude-memory")
    for name, kind in (("type", "list"), ("name", "list"), ("description", "dict")):
        assert f"warning: deploy.md: `{name}` is not text ({kind}): left out\n" in result.stderr
    [note] = notes(cli).values()
    assert note["title"] == "deploy" and "original_type" not in note and "description" not in note
    text = (cli.store / note["path"]).read_text()
    assert "['" not in text and "{'" not in text and "Never push to main" in text
    assert news(imported(cli, folder, "--from", "claude-memory")) == {}


def test_a_mem0_id_or_openmemory_name_that_is_not_text_is_left_out_with_a_warning(cli, tmp_path):
    source = tmp_path / "ids.json"
    source.write_text(json.dumps([{"id": ["a", "b"], "memory": "uses helix"}]))
    report = imported(cli, source)
    assert report["warnings"] == [{"path": "ids.json[0]", "reason": "`id` is not text (list): left out"}]
    [note] = notes(cli).values()
    assert "mem0_id" not in note and "['" not in (cli.store / note["path"]).read_text()
    payload = json.loads((DATA / "openmemory" / "memories.json").read_text())
    for app in payload["apps"]:
        app["name"] = ["cursor"]
    report = imported(cli, openmemory_zip(tmp_path, payload, lines=b""))
    assert {w["reason"] for w in report["warnings"]} == {"`name` is not text (list): left out"}
    assert all("mem0_app" not in note for note in notes(cli, status="any").values())


def test_an_imported_memory_is_dated_consistently_with_a_warning_naming_it(cli, tmp_path):
    """`updated` is never before `created` (it takes `created`) and no date is after now (it
    takes now): `updated_at: 0001-01-01` made `archive` see a memory not recalled for
    739,954 days."""
    # A month before the suite's clock (which CI moves years ahead: tests/conftest.py).
    month_ago = (parse_time(PINNED_NOW) - timedelta(days=30)).strftime("%Y-%m-%dT%H:%M:%SZ")
    source = tmp_path / "mm.json"
    source.write_text(json.dumps([
        {"id": "x", "memory": "uses emacs", "created_at": month_ago,
         "updated_at": "0001-01-01"},
        {"id": "y", "memory": "uses vim", "created_at": "2999-01-01T00:00:00Z",
         "updated_at": "3000-01-01"},
    ]))
    result = cli.ok("import", str(source))
    now = format_time(parse_time(PINNED_NOW))
    for line in (f"mem0:mm.json#x: `updated` 0001-01-01 is before `created` {month_ago}: "
                 f"imported as {month_ago}",
                 f"mem0:mm.json#y: `created` 2999-01-01T00:00:00Z is in the future: imported as {now}",
                 f"mem0:mm.json#y: `updated` 3000-01-01 is in the future: imported as {now}"):
        assert f"warning: {line}\n" in result.stderr
    dated = {note["mem0_id"]: (note["created"], note["updated"]) for note in notes(cli).values()}
    assert dated == {"x": (month_ago, month_ago), "y": (now, now)}
    assert cli.ok("archive", "--dry-run", "--json").json()["plan"]["archive"] == []
    assert news(imported(cli, source)) == {}


def test_dates_are_made_consistent_for_every_importer_in_one_place(cli, tmp_path):
    """The rule is applied to the notes of every importer (here a vault's front matter and a
    `CLAUDE.md` dated by its file's time, from a clock years ahead)."""
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "old.md").write_text("---\ncreated: 2026-06-01\nupdated: 2020-01-01\n---\nA fact.\n")
    (vault / "CLAUDE.md").write_text("# Guide\n\n## Rules\nNever push to main.\n")
    ahead = datetime(2100, 1, 1, tzinfo=UTC).timestamp()
    os.utime(vault / "CLAUDE.md", (ahead, ahead))
    report = imported(cli, vault)
    now = format_time(parse_time(PINNED_NOW))
    rules = "markdown:vault#CLAUDE.md#Rules#1"
    assert sorted((w["path"], w["reason"]) for w in report["warnings"]) == [
        (rules, f"`created` 2100-01-01T00:00:00.000Z is in the future: imported as {now}"),
        (rules, f"`updated` 2100-01-01T00:00:00.000Z is in the future: imported as {now}"),
        ("markdown:vault#old.md", "`updated` 2020-01-01 is before `created` 2026-06-01: "
                                  "imported as 2026-06-01")]
    dated = sorted((note["created"], note["updated"]) for note in notes(cli).values())
    assert dated == [("2026-06-01", "2026-06-01"), (now, now)]


def test_a_folder_imported_as_dot_is_the_same_source_as_by_its_name(cli, tmp_path, monkeypatch):
    """`memctl import .` from inside a vault named no source at all (`markdown:`, commit
    `import : …`), so the same folder imported by its name and as `.` rewrote every note."""
    vault = tmp_path / "vault"
    (vault / "sub").mkdir(parents=True)
    (vault / "a.md").write_text("Alpha body text\n")
    (vault / "sub" / "b.md").write_text("Beta body text\n")
    settle(vault)
    assert news(imported(cli, vault))["added"]
    monkeypatch.chdir(vault)
    assert news(imported(cli, Path("."))) == {}
    monkeypatch.chdir(vault / "sub")
    assert news(imported(cli, Path(".."))) == {}
    assert {note["source_key"] for note in notes(cli).values()} == {
        "markdown:vault#a.md", "markdown:vault#sub/b.md"}
    assert "import :" not in git(cli.store, "log", "--format=%s")


def test_an_allowed_secret_never_reaches_an_imported_notes_file_name(cli, tmp_path):
    """With --allow-secret the key went into the file name, lowercased (`key-is-akiaqylp…`):
    `add` masks it there (docs/security.md, "Never shown, even when allowed")."""
    key = "AKIA" + "QYLPMN5HHHFPZAM2"  # split so no scanner flags this file
    export = tmp_path / "mem0.json"
    export.write_text(json.dumps([{"id": "m1", "memory": f"Key is {key} for ci"}]))
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "ci.md").write_text(f"---\ntitle: CI key {key}\n---\nThe CI key.\n")
    settle(vault)
    for source in (export, vault):
        cli.ok("import", str(source), "--allow-secret")
    names = git(cli.store, "log", "--name-only", "--format=%s%n%b")
    assert "key-is-akia-for-ci-" in names and "ci-key-akia-" in names
    assert key.lower() not in names.lower()
    assert key in "".join(p.read_text() for p in cli.store.rglob("*.md"))


def test_a_vaults_tags_that_are_a_mapping_are_kept_as_original_tags_never_as_python(cli, tmp_path):
    """`tags: {area: ops}` became the tag `{'area': 'ops'}` (Python's notation, the source's
    value lost): a value memctl cannot take for a field it owns is kept as `original_<field>`
    (docs/sync.md, "Markdown and Obsidian vaults")."""
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "ops.md").write_text("---\ntags: {area: ops}\n---\nRotate the logs weekly #ops\n")
    settle(vault)
    cli.ok("import", str(vault))
    note = by_origin(notes(cli))["ops.md"]
    assert note["tags"] == ["ops"] and note["original_tags"] == {"area": "ops"}
    assert "{'area'" not in "".join(p.read_text() for p in cli.store.rglob("*.md"))
    # A list holding a mapping lost the mapping without a word: kept whole too.
    (vault / "web.md").write_text("---\ntags: [{area: web}, frontend]\n---\nShip the CSS\n")
    settle(vault)
    cli.ok("import", str(vault))
    note = by_origin(notes(cli))["web.md"]
    assert note["original_tags"] == [{"area": "web"}, "frontend"]


def test_a_reimport_that_retires_a_note_holding_an_allowed_secret_is_not_refused(cli, tmp_path):
    """A mem0 memory imported with --allow-secret, then gone from the export: the next import
    retires its note (moves it to archive/) and was refused for the secret the note already
    held, as if it added one; an edit of the note is not (docs/security.md). A new secret
    in the same import is still refused."""
    key = "AKIA" + "QYLPMN5HHHFPZAM2"  # split so no scanner flags this file
    export = tmp_path / "mem0.json"
    export.write_text(json.dumps([{"id": "m1", "memory": f"Key is {key} for ci"},
                                  {"id": "m2", "memory": "Deploys run on Fridays"}]))
    cli.ok("import", str(export), "--allow-secret")
    export.write_text(json.dumps([{"id": "m2", "memory": "Deploys run on Fridays"}]))
    done = cli.ok("import", str(export), "--json").json()
    assert len(done["retired"]) == 1, done
    assert git(cli.store, "status", "--porcelain") == ""
    other = "AKIA" + "ZZZZMN5HHHFPZAM2"
    export.write_text(json.dumps([{"id": "m2", "memory": f"Deploys use {other}"}]))
    refused = cli("import", str(export))
    assert refused.exit_code == 1 and "looks like it contains a secret" in refused.stderr


def test_a_mem0_memory_holding_a_nul_byte_is_named_at_its_record_and_skippable(cli, tmp_path):
    """A memory with a NUL byte refused the whole import, even with --skip-invalid, naming
    the note file it would have made (not written yet) instead of the export's record."""
    export = tmp_path / "mem0.json"
    export.write_text(json.dumps([{"id": "m1", "memory": "Deploy\u0000x"},
                                  {"id": "m2", "memory": "Deploys run on Fridays"}]))
    refused = cli("import", str(export))
    assert refused.exit_code == 1
    assert "mem0.json[0]: not text: binary content (NUL bytes)" in refused.stderr
    assert "notes/fact" not in refused.stderr
    done = cli.ok("import", str(export), "--skip-invalid", "--json").json()
    assert len(done["added"]) == 1, done


def test_a_mem0_time_memctl_cannot_read_is_named_not_silently_the_files(cli, tmp_path):
    export = tmp_path / "mem0.json"
    export.write_text(json.dumps([
        {"id": "m1", "memory": "Deploys run on Fridays", "created_at": "not a date"},
        {"id": "m2", "memory": "The cache is Redis", "created_at": 1700000000,
         "updated_at": "2024-13-45T99:99:99Z"}]))
    said = cli.ok("import", str(export))
    assert "mem0.json[0]: `created_at` is not a time memctl reads ('not a date'): left out" \
        in said.stderr
    assert "mem0.json[1]: `created_at` is not a time memctl reads ('1700000000')" in said.stderr
    assert "mem0.json[1]: `updated_at` is not a time memctl reads" in said.stderr


def test_an_allowed_secret_joined_to_a_word_by_a_dash_never_reaches_a_file_name(cli, tmp_path):
    """`deploy-ghp_…` (a vault file's name taken as its title) is no token to the text's rules,
    so the masked title kept the key and it went into the file name, lowercased, with
    --allow-secret; without it the import was refused for the file name it made itself."""
    key = "ghp_" + "R8kq2VbX7mPz4Lw9NcT3yHd6Fj1Qs5GaUe0K"  # split so no scanner flags this file
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / f"deploy-{key}.md").write_text("The deploy key for the CI.\n")
    (vault / "other.md").write_text(f"# release-{key}\nThe release key.\n")
    settle(vault)
    cli.ok("import", str(vault), "--allow-secret")
    names = git(cli.store, "log", "--name-only", "--format=%s%n%b")
    assert key.lower() not in names.lower() and "deploy-ghp-" in names, names
    added = cli.ok("add", f"use deploy-{key} to ship", "--allow-secret", "--json").json()
    assert key.lower() not in added["path"].lower()
    cli.ok("forget", added["id"])
    log = git(cli.store, "log", "--name-only", "--format=%s%n%b")
    assert key not in log and key.lower() not in log.lower()
    assert key not in (cli.store / ".tombstones" / f"{added['id']}.md").read_text()


def test_a_reimport_refused_for_a_secret_names_the_file_that_adds_it(cli, tmp_path):
    """The secrets the replaced files held were shared by every file in turn, so the error
    could name a file that only keeps its own (an updated or retired note holding an
    allowed key) while the file that added a copy of it went through unnamed."""
    key = "AKIA" + "QYLPMN5HHHFPZAM2"  # split so no scanner flags this file
    export = tmp_path / "mem0.json"
    export.write_text(json.dumps([{"id": "m1", "memory": f"Key is {key} for ci"},
                                  {"id": "m2", "memory": "Deploys run on Fridays"}]))
    cli.ok("import", str(export), "--allow-secret")
    export.write_text(json.dumps([{"id": "m1", "memory": f"Key is {key} for ci now"},
                                  {"id": "m2", "memory": "Deploys run on Fridays"},
                                  {"id": "m3", "memory": f"Also {key} here"}]))
    refused = cli("import", str(export))
    assert refused.exit_code == 1 and "the file " in refused.stderr
    assert "also-akia" in refused.stderr and "key-is-akia" not in refused.stderr, refused.stderr
    export.write_text(json.dumps([{"id": "m2", "memory": f"Deploys run on Fridays {key}"}]))
    refused = cli("import", str(export))
    assert refused.exit_code == 1 and "deploys-run-on-fridays" in refused.stderr, refused.stderr
    assert "archive/" not in refused.stderr
    export.write_text(json.dumps([{"id": "m1", "memory": f"Key is {key} for ci now"},
                                  {"id": "m2", "memory": "Deploys run on Fridays"}]))
    assert cli.ok("import", str(export), "--json").json()["updated"]


def test_a_vault_note_that_expired_before_its_import_is_said_to(cli, tmp_path):
    """A vault note whose `expires` has passed was imported active and expired from its first
    moment (out of search and recall) without a word."""
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "promo.md").write_text("---\nexpires: 2020-01-01\n---\nThe old promo code\n")
    (vault / "later.md").write_text("---\nexpires: 2099-01-01\n---\nThe next promo code\n")
    settle(vault)
    said = cli.ok("import", str(vault))
    assert "promo.md: `expires` 2020-01-01 is past: imported expired" in said.stderr
    warned = [line for line in said.stderr.splitlines() if line.startswith("warning:")]
    assert not any("later.md" in line for line in warned), warned


@pytest.mark.parametrize(("unreadable", "code"), [
    ('{"results": "oops"}', 1),  # no list of memories: nothing of the format read at all
    ("[1, 2]", 1),  # entries that are no memory: nothing read either
    ('{"memories": [{"id": "m1", "memory": "Works at Acme", "category_ids": 5}, '
     '{"id": "m3", "memory": "Rides a bike"}], "categories": []}', 0),  # one left out: which
    # ones the export holds is not known
    ("not json at all", 1),
])
def test_an_export_read_in_part_with_skip_invalid_retires_none_of_its_memories(
        cli, store_path, tmp_path, unreadable, code):
    # A record left out as invalid is not retired (docs/sync.md, "Importing again"); an
    # export whose memories could not all be told apart left out records that could not be
    # kept by name, and every note of the earlier import went to archive/ as "gone". An
    # export in which nothing could be read is refused whole, --skip-invalid or not.
    export = tmp_path / "export.json"
    export.write_text(json.dumps([{"id": "m1", "memory": "Works at Acme"},
                                  {"id": "m2", "memory": "Likes dark mode"}]))
    assert len(imported(cli, export)["added"]) == 2
    before = tree_snapshot(store_path)
    export.write_text(unreadable)
    result = cli("import", str(export), "--json", "--skip-invalid", "--from", "mem0")
    assert result.exit_code == code, result.stderr
    if code == 0:
        report = result.json()
        assert report["rejected"] and report["retired"] == [], report
    else:
        assert result.stderr.startswith("error: refusing to import") \
            and "--skip-invalid" not in result.stderr, result.stderr
    if code == 0:
        assert len(notes(cli)) == 3  # the one readable memory added, none retired
    else:
        assert len(notes(cli)) == 2
        assert tree_snapshot(store_path) == before


@pytest.mark.parametrize("skip", [[], ["--skip-invalid"]])
def test_an_export_with_no_memories_stops_and_offers_no_skip_invalid(
        cli, store_path, tmp_path, skip):
    """An export with no memories (`[]`) is an import that finds nothing it can read: it
    exits 1, nothing written (docs/sync.md). With --skip-invalid it said "1 rejected" and
    exit 0, and without it the error offered --skip-invalid "to import the valid entries",
    of which there were none."""
    export = tmp_path / "export.json"
    export.write_text("[]")
    before = tree_snapshot(store_path)
    result = cli("import", str(export), "--from", "mem0", *skip)
    assert result.exit_code == 1 and result.stderr.startswith("error:"), result.stderr
    assert "no memories found" in result.stderr and "--skip-invalid" not in result.stderr
    assert tree_snapshot(store_path) == before
