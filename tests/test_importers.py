"""Importers for other tools' memory: each note has `source: import`, keeps the original text,
and importing the same source again updates instead of duplicating."""

from __future__ import annotations

import json
import os
import time

import pytest
from conftest import git, tree_snapshot

CLAUDE_MD = """# Project guide

This repository is the blog backend.

## Conventions
- Always use Kysely for queries; never an ORM.
- Tabs, not spaces.

## Commands
```bash
make test   # ## not a heading inside code
```

## Pitfalls
The staging database resets every night.
"""


def notes(cli, project="demo"):
    return cli.ok("list", "--json", "--project", project).json()


@pytest.mark.real_clock  # the importer dates notes by their files' times, which are real
def test_claude_md_sections_become_notes(cli, tmp_path):
    source = tmp_path / "CLAUDE.md"
    source.write_text(CLAUDE_MD)
    report = cli.ok("import", str(source), "--json").json()
    assert len(report["added"]) == 4
    found = {n["type"]: n for n in notes(cli)}
    assert set(found) == {"fact", "rule", "skill", "error"}
    rule = cli.ok("show", found["rule"]["id"], "--json").json()
    assert rule["source"] == "import"
    assert rule["body"] == "## Conventions\n- Always use Kysely for queries; never an ORM.\n- Tabs, not spaces.\n"
    assert "make test   # ## not a heading" in cli.ok("show", found["skill"]["id"], "--json").json()["body"]
    again = cli.ok("import", str(source), "--json").json()
    assert again["added"] == [] and sorted(again["unchanged"]) == sorted(report["added"])
    source.write_text(CLAUDE_MD.replace("Tabs, not spaces.", "Spaces, four of them."))
    later = time.time() + 3600  # after the first import's stamps, whenever the test runs
    os.utime(source, (later, later))
    changed = cli.ok("import", str(source), "--json").json()
    assert changed["updated"] == [found["rule"]["id"]] and changed["added"] == []


def test_markdown_folder_with_and_without_front_matter(cli, tmp_path):
    vault = tmp_path / "vault"
    (vault / "Tech").mkdir(parents=True)
    (vault / ".obsidian").mkdir()
    (vault / ".obsidian" / "app.json").write_text("{}")
    (vault / "plain.md").write_text("Just a thought with no front matter.\n")
    (vault / "Tech" / "postgres.md").write_text(
        "---\ntags: [db]\ntype: decision\ncreated: 2025-03-12\naliases: [pg]\n---\n# Postgres\n\nWe use 16.\n")
    (vault / "image.png").write_bytes(b"\x89PNG\r\n\x00")
    report = cli.ok("import", str(vault), "--json").json()
    assert len(report["added"]) == 2
    by_type = {n["type"]: n for n in notes(cli)}
    decision = cli.ok("show", by_type["decision"]["id"], "--json").json()
    assert decision["body"] == "# Postgres\n\nWe use 16.\n"
    assert set(decision["tags"]) == {"db", "tech"} and decision["created"] == "2025-03-12"
    assert decision["source"] == "import" and decision["aliases"] == ["pg"]
    plain = cli.ok("show", by_type["fact"]["id"], "--json").json()
    assert plain["body"] == "Just a thought with no front matter.\n" and plain["title"] == "plain"


def test_cline_memory_bank(cli, tmp_path):
    bank = tmp_path / "repo" / "memory-bank"
    bank.mkdir(parents=True)
    (bank / "projectbrief.md").write_text("# Project brief\n\nA CLI for memory.\n")
    (bank / "systemPatterns.md").write_text("Files are the truth; the index is derived.\n")
    (bank / "progress.md").write_text("")
    report = cli.ok("import", str(tmp_path / "repo"), "--json").json()
    assert len(report["added"]) == 2
    shown = [cli.ok("show", n["id"], "--json").json() for n in notes(cli)]
    bodies = {s["type"]: s["body"] for s in shown}
    assert bodies["fact"] == "# Project brief\n\nA CLI for memory.\n"
    assert "Files are the truth" in bodies["decision"]
    assert all("cline" in s["tags"] for s in shown)


def test_a_folder_file_that_does_not_parse_is_named_as_every_command_names_it(cli, tmp_path):
    """`path:line: problem` (docs/format.md, "A file that does not parse"), as an import of a
    zip says it: the folder import said `bad.md: line 2: …`."""
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "bad.md").write_text("---\n- a\n---\nbody\n")
    (vault / "good.md").write_text("---\ntitle: ok\n---\nfine\n")
    refused = cli("import", str(vault))
    assert refused.exit_code == 1
    assert "bad.md:2: front matter must be fields (key: value), found a list" in refused.stderr
    report = cli.ok("import", str(vault), "--skip-invalid", "--json").json()
    assert [(problem["path"], problem.get("line")) for problem in report["rejected"]] == \
        [("bad.md", 2)], report["rejected"]


def test_mem0_json_export(cli, tmp_path):
    source = tmp_path / "mem0.json"
    source.write_text(json.dumps({"results": [
        {"id": "5b1f", "memory": "Prefers dark mode", "categories": ["preferences"],
         "created_at": "2025-06-01T10:00:00-07:00", "updated_at": "2025-06-02T10:00:00-07:00",
         "user_id": "alice"},
        {"id": "77aa", "memory": "Works in Berlin", "created_at": "2025-06-03T10:00:00Z"},
        {"id": "bad", "memory": ""},
    ]}))
    refused = cli("import", str(source))
    assert refused.exit_code == 1 and "no memory text" in refused.stderr
    report = cli.ok("import", str(source), "--skip-invalid", "--json").json()
    assert len(report["added"]) == 2 and report["rejected"][0]["path"] == "mem0.json[2]"
    texts = {cli.ok("show", n["id"], "--json").json()["body"].strip(): n for n in notes(cli)}
    dark = cli.ok("show", texts["Prefers dark mode"]["id"], "--json").json()
    assert dark["updated"] == "2025-06-02T10:00:00-07:00" and "preferences" in dark["tags"]
    assert dark["mem0_id"] == "5b1f" and dark["source"] == "import"


@pytest.mark.parametrize("kind", ["link", "binary"])
def test_importers_refuse_hazards_untouched(cli, store_path, tmp_path, kind):
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "fine.md").write_text("fine\n")
    if kind == "link":
        os.symlink("/etc/passwd", vault / "passwd.md")
    else:
        (vault / "blob.md").write_bytes(b"\x00\x01binary")
    before, head = tree_snapshot(store_path), git(store_path, "rev-parse", "HEAD")
    result = cli("import", str(vault))
    assert result.exit_code == 1 and result.stderr.startswith("error:")
    assert tree_snapshot(store_path) == before and git(store_path, "rev-parse", "HEAD") == head


@pytest.mark.parametrize("source, options", [
    ("store", ("--from", "markdown")), ("store", ()), ("store/demo", ()),
    ("store/demo", ("--from", "bundle")), ("store/demo/notes/fact", ("--from", "markdown")),
    (".", ("--from", "markdown")), (".", ()),
])
def test_the_store_itself_is_refused_as_a_source(cli, store_path, tmp_path, source, options):
    # Before, `--from markdown` on the store (or a folder holding it, or one inside it) read
    # every note as a new one: each run doubled the store.
    cli.ok("add", "Postgres 16 runs the ledger")
    before, head = tree_snapshot(store_path), git(store_path, "rev-parse", "HEAD")
    result = cli("import", str(tmp_path / source), *options)
    assert result.exit_code == 2, result.stdout + result.stderr
    assert result.stderr.startswith("error:") and len(result.error.strip().splitlines()) == 1
    assert "choose a file or folder outside the store" in result.stderr
    assert tree_snapshot(store_path) == before and git(store_path, "rev-parse", "HEAD") == head


def test_a_folder_holding_the_store_in_a_dot_folder_still_imports(tmp_path):
    # The default store sits in ~/.local/share, where no importer's walk goes: importing a
    # folder of the home is no copy of the store (docs/sync.md).
    from conftest import Cli

    from memctl.store import Store

    home = tmp_path / "home"
    Store.init(home / ".local" / "store")
    (home / "idea.md").write_text("Try SQLite for the cache.\n")
    cli = Cli(home / ".local" / "store")
    assert len(cli.ok("import", str(home), "--from", "markdown", "--json").json()["added"]) == 1


@pytest.mark.parametrize("via", ["file", "vault"])
def test_a_heading_with_no_text_under_it_is_skipped_not_an_empty_note(cli, tmp_path, via):
    # Before, `## Later` with nothing under it became a note holding only its heading.
    folder = tmp_path / "repo"
    folder.mkdir()
    (folder / "CLAUDE.md").write_text("# Guide\n\n## Later\n\n## Tools\n### Editors\n\n"
                                      "## Conventions\nTabs, not spaces.\n")
    source = folder / "CLAUDE.md" if via == "file" else folder
    report = cli.ok("import", str(source), "--json").json()
    assert len(report["added"]) == 1
    assert report["skipped"] == [
        {"path": "CLAUDE.md: Later", "reason": "a heading with no text under it: not imported"},
        {"path": "CLAUDE.md: Tools", "reason": "a heading with no text under it: not imported"}]
    [note] = notes(cli)
    assert cli.ok("show", note["id"], "--json").json()["body"] == "## Conventions\nTabs, not spaces.\n"
    shown = cli.ok("import", str(source))
    assert "skipped CLAUDE.md: Later: a heading with no text under it" in shown.stdout + shown.stderr


@pytest.mark.parametrize("layout", ["vault", "cline", "claude-memory"])
def test_a_linked_folder_in_an_imported_folder_is_refused_never_followed(
        cli, store_path, tmp_path, layout):
    # Before, a vault's `attachments -> elsewhere` was listed as an attachment, and a memory
    # bank or Claude Code memory folder passed over a linked folder without a word.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "secret.md").write_text("The root password is hunter2.\n")
    folder = {"vault": tmp_path / "vault", "cline": tmp_path / "repo" / "memory-bank",
              "claude-memory": tmp_path / "-home-me-repo" / "memory"}[layout]
    folder.mkdir(parents=True)
    (folder / {"vault": "fine.md", "cline": "projectbrief.md",
               "claude-memory": "MEMORY.md"}[layout]).write_text("# Fine\n\nA fine note.\n")
    os.symlink(elsewhere, folder / "attachments")
    source = folder.parent if layout != "vault" else folder
    before, head = tree_snapshot(store_path), git(store_path, "rev-parse", "HEAD")
    result = cli("import", str(source))
    assert result.exit_code == 1 and result.stderr.startswith("error:"), result.stdout + result.stderr
    assert "attachments: a symbolic link" in result.stderr and "Traceback" not in result.stderr
    assert cli("import", str(source), "--skip-invalid").exit_code == 1  # a hazard, not invalid
    assert tree_snapshot(store_path) == before and git(store_path, "rev-parse", "HEAD") == head
