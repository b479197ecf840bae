"""The everyday commands through the CLI: init, add, show, list, edit, forget, and errors."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import Cli, edit, git, run_memctl, tree_snapshot

from memctl.core.ids import is_id
from memctl.core.noteformat import parse_text


def test_init_creates_a_git_store_and_is_idempotent(tmp_path):
    root = tmp_path / "new-store"
    first = run_memctl("init", str(root), "--json", project=None)
    assert first.exit_code == 0, first.stderr
    assert first.json() == {"store": str(root), "created": True}
    for name in ("memctl.toml", ".gitignore", "global", ".templates/fact.md"):
        assert (root / name).exists(), name
    assert ".memctl/" in (root / ".gitignore").read_text()
    assert git(root, "status", "--porcelain") == ""
    commits = git(root, "rev-list", "--count", "HEAD").strip()
    again = run_memctl("init", str(root), "--json", project=None)
    assert again.json()["created"] is False
    assert git(root, "rev-list", "--count", "HEAD").strip() == commits


def test_init_refuses_a_file(tmp_path):
    target = tmp_path / "afile"
    target.write_text("x")
    result = run_memctl("init", str(target), project=None)
    assert result.exit_code == 1 and result.stderr.startswith("error:")
    assert target.read_text() == "x"


def test_add_writes_a_committed_note_with_the_documented_fields(cli: Cli):
    added = cli.ok("add", "Use PostgreSQL 16, no ORM", "--type", "decision", "--tags", "db, postgres",
                   "--importance", "8", "--subject", "blog", "--predicate", "database", "--json").json()
    assert added["action"] == "created" and is_id(added["id"])
    path = cli.store / added["path"]
    meta = parse_text(path.read_text()).meta
    assert meta["type"] == "decision" and meta["importance"] == "8"
    assert meta["tags"] == ["db", "postgres"] and meta["project"] == "demo"
    assert meta["created"] == meta["updated"] and meta["created"].endswith("Z")
    assert git(cli.store, "status", "--porcelain") == ""
    assert added["id"] in git(cli.store, "log", "-1", "--format=%s")


def test_add_from_stdin_and_global_scope(cli: Cli):
    added = cli.ok("add", "-", "--global", "--json", input="偏好：回答用中文\n").json()
    assert added["path"].startswith("global/")
    shown = cli.ok("show", added["id"], "--json").json()
    assert shown["body"].strip() == "偏好：回答用中文" and shown["project"] == "global"


def test_add_uses_mcmctl_now_for_times(cli: Cli):
    added = cli.ok("add", "clocked", "--json", env={"MEMCTL_NOW": "2026-01-02T03:04:05Z"}).json()
    shown = cli.ok("show", added["id"], "--json").json()
    assert shown["created"] == "2026-01-02T03:04:05.000Z"


def test_expires_accepts_spans_and_dates(cli: Cli):
    env = {"MEMCTL_NOW": "2026-11-30T00:00:00Z"}
    span = cli.ok("add", "temporary", "--expires", "30d", "--json", env=env).json()
    assert cli.ok("show", span["id"], "--json").json()["expires"] == "2026-12-30"
    bad = cli("add", "x", "--expires", "someday")
    assert bad.exit_code == 2 and "--expires" in bad.stderr


@pytest.mark.parametrize(("now", "span", "expires"), [
    ("2027-01-31T12:00:00Z", "1m", "2027-02-28"),  # past the end of a shorter month: its last day
    ("2028-01-31T12:00:00Z", "1m", "2028-02-29"),
    ("2027-01-31T12:00:00Z", "12m", "2028-01-31"),  # twelve months are a year
    ("2027-01-31T12:00:00Z", "1y", "2028-01-31"),
    ("2028-02-29T12:00:00Z", "1y", "2029-02-28"),
    ("2026-11-30T00:00:00Z", "3m", "2027-02-28"),
])
def test_a_span_of_months_or_years_is_the_calendars(cli: Cli, now: str, span: str,
                                                     expires: str) -> None:
    """`m` is months (docs/lifecycle.md): calendar months, not 30 days (`1m` from 31 January
    was 2 March); a year is twelve of them, not 365 days."""
    added = cli.ok("add", f"a note for {span}", "--expires", span, "--json",
                   env={"MEMCTL_NOW": now}).json()
    assert cli.ok("show", added["id"], "--json").json()["expires"] == expires


def test_since_a_span_of_months_goes_back_calendar_months(cli: Cli) -> None:
    cli.ok("add", "written on the last day of February", "--json",
           env={"MEMCTL_NOW": "2027-02-28T06:00:00Z"})
    cli.ok("add", "written the day before", "--json", env={"MEMCTL_NOW": "2027-02-27T06:00:00Z"})
    found = cli.ok("list", "--since", "1m", "--json", env={"MEMCTL_NOW": "2027-03-31T00:00:00Z"})
    assert [note["title"] for note in found.json()] == ["written on the last day of February"]


def test_a_note_said_again_with_another_expiry_is_written_not_merged(cli: Cli) -> None:
    """A merge keeps the note's `expires`: a fact said again to expire tomorrow was merged
    into the lasting one and never expired, and one said again for good was merged into a
    copy that expired and was archived with it. Each is written, and the other named."""
    env = {"MEMCTL_NOW": "2026-11-30T00:00:00Z"}
    lasting = cli.ok("add", "The staging database is read-only during the migration",
                     "--json", env=env).json()
    passing = cli.ok("add", "The staging database is read-only during the migration.",
                     "--expires", "1d", "--json", env=env).json()
    assert passing["action"] == "created" and passing["id"] != lasting["id"]
    assert lasting["id"] in passing["similar"]
    assert cli.ok("show", passing["id"], "--json").json()["expires"] == "2026-12-01"
    assert cli.ok("show", lasting["id"], "--json").json()["expires"] is None
    again = cli.ok("add", "The staging database is read-only during the migration!",
                   "--expires", "1d", "--json", env=env).json()
    assert again["action"] == "merged" and again["id"] == passing["id"]  # the same expiry


def test_show_lists_every_field_it_has_no_line_of_its_own_for(cli: Cli) -> None:
    """docs/format.md: fields memctl does not know are kept and shown by `memctl show`; the
    panel showed none of them, nor `corrects`, `pinned` or `source` (only `--json` did)."""
    folder = cli.store / "demo" / "notes" / "fact"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "handmade.md").write_text(
        "---\nid: handmade01\ntype: fact\nproject: demo\npinned: true\nowner: alice\n"
        "reviewed: 2026-01-05\nlabels: [ops, db]\ncorrects: 0000000000000000\n"
        "steps: |\n  one\n  two\nlong: " + "x" * 3000 + "\n---\n"
        "A note made by hand\n", encoding="utf-8")
    shown = cli.ok("show", "handmade01").stdout
    for line in ("pinned true", "owner alice", "reviewed 2026-01-05", 'labels ["ops", "db"]',
                 "corrects 0000000000000000", "steps one\\ntwo"):
        assert line in shown, line
    # A long value: its start, on the panel's lines (which wrap it).
    flat = "".join(shown.replace("│", "").split())
    assert "long" + "x" * 200 + "…(--jsonshowsitwhole)" in flat and shown.count("x") == 200
    assert "owner" not in cli.ok("show", cli.ok("add", "plain", "--json").json()["id"]).stdout


def test_same_subject_and_predicate_supersedes(cli: Cli):
    old = cli.ok("add", "The blog uses MySQL", "--subject", "blog", "--predicate", "db", "--json").json()
    new = cli.ok("add", "The blog moved to PostgreSQL", "--subject", "blog", "--predicate", "db", "--json").json()
    assert new["superseded"] == [old["id"]]
    shown = cli.ok("show", old["id"], "--json").json()
    assert shown["status"] == "superseded" and shown["superseded_by"] == new["id"]
    assert (cli.store / old["path"]).exists()


def test_show_by_unambiguous_prefix_and_errors(cli: Cli):
    a = cli.ok("add", "first", "--json").json()
    b = cli.ok("add", "second", "--json").json()
    assert cli.ok("show", a["id"][:14] if a["id"][:14] != b["id"][:14] else a["id"], "--json").json()["id"] == a["id"]
    common = os.path.commonprefix([a["id"], b["id"]])
    ambiguous = cli("show", common)
    assert ambiguous.exit_code == 1 and "ambiguous" in ambiguous.stderr
    unknown = cli("show", "zzzzzz")
    assert unknown.exit_code == 1 and unknown.stderr.startswith("error:")


@pytest.mark.parametrize("args, option", [
    (["--type", "banana"], "--type"),
    (["--importance", "11"], "--importance"),
    (["--importance", "0"], "--importance"),
    (["--project", "../x"], "--project"),
    (["--project", ".git"], "--project"),
])
def test_bad_option_values_are_usage_errors_and_write_nothing(cli: Cli, args, option):
    before = tree_snapshot(cli.store)
    result = cli("add", "text", *args)
    assert result.exit_code == 2
    assert option in result.stderr
    assert tree_snapshot(cli.store) == before


def test_missing_store_and_store_that_is_a_file(tmp_path):
    missing = run_memctl("list", store=tmp_path / "nope")
    assert missing.exit_code == 1 and "does not exist" in missing.stderr and "memctl init" in missing.stderr
    afile = tmp_path / "file"
    afile.write_text("x")
    as_file = run_memctl("list", store=afile)
    assert as_file.exit_code == 1 and "is a file" in as_file.stderr


def test_list_filters_and_json(cli: Cli):
    cli.ok("add", "a rule", "--type", "rule", "--tags", "ops", env={"MEMCTL_NOW": "2026-01-01T00:00:00Z"})
    cli.ok("add", "a fact", "--type", "fact", env={"MEMCTL_NOW": "2026-11-01T00:00:00Z"})
    cli.ok("add", "other project", "--project", "other")
    cli.ok("add", "global pref", "--type", "preference", "--global")
    listed = cli.ok("list", "--json").json()
    assert {n["body"] if "body" in n else n["title"] for n in listed} == {"a rule", "a fact", "global pref"}
    assert [n["title"] for n in cli.ok("list", "--type", "rule", "--json").json()] == ["a rule"]
    assert [n["title"] for n in cli.ok("list", "--tag", "ops", "--json").json()] == ["a rule"]
    assert len(cli.ok("list", "--all-projects", "--json").json()) == 4
    since = cli.ok("list", "--since", "2026-06-01", "--json").json()
    assert "a rule" not in {n["title"] for n in since}
    assert len(cli.ok("list", "--limit", "1", "--json").json()) == 1
    assert all("path" in n and "/" in n["path"] for n in listed)


def test_list_sorts_by_time_not_by_text_and_newest_first_in_each_group(cli: Cli):
    """`--sort created` ordered the `created` text (`10:00+09:00` is 01:00 UTC, before
    `05:00Z`), and `--sort type`/`project` put the oldest first within each group."""
    folder = cli.store / "demo" / "notes" / "fact"
    folder.mkdir(parents=True, exist_ok=True)
    for name, created in (("tokyo", "2026-05-01T10:00:00+09:00"),
                          ("five", "2026-05-01T05:00:00Z"), ("three", "2026-05-01T03:00:00.000Z")):
        (folder / f"{name}.md").write_text(f"---\nid: {name}\ntype: fact\ncreated: {created}\n"
                                          f"updated: {created}\n---\nNote {name}\n")
    assert [n["id"] for n in cli.ok("list", "--sort", "created", "--json").json()] == [
        "five", "three", "tokyo"]
    cli.ok("add", "a rule", "--type", "rule", env={"MEMCTL_NOW": "2026-01-01T00:00:00Z"})
    cli.ok("add", "a newer rule", "--type", "rule", env={"MEMCTL_NOW": "2026-09-01T00:00:00Z"})
    by_type = [(n["type"], n["title"]) for n in cli.ok("list", "--sort", "type", "--json").json()]
    assert by_type == [("fact", "Note five"), ("fact", "Note three"), ("fact", "Note tokyo"),
                       ("rule", "a newer rule"), ("rule", "a rule")]


def _editor_script(tmp_path: Path, python_code: str) -> str:
    script = tmp_path / "editor.py"
    script.write_text("import sys\npath = sys.argv[1]\ntext = open(path, encoding='utf-8').read()\n" + python_code)
    return f"{sys.executable} {script}"


def test_edit_stamps_updated_and_keeps_the_rest(cli: Cli, tmp_path):
    added = cli.ok("add", "Deploy on Fridays", "--json", env={"MEMCTL_NOW": "2026-01-01T00:00:00Z"}).json()
    before = (cli.store / added["path"]).read_text()
    editor = _editor_script(tmp_path, "open(path, 'w', encoding='utf-8').write(text.replace('Fridays', 'Tuesdays'))")
    cli.ok("edit", added["id"], env={"EDITOR": editor, "MEMCTL_NOW": "2026-02-01T00:00:00Z"})
    after = (cli.store / added["path"]).read_text()
    assert "Tuesdays" in after
    changed = [(a, b) for a, b in zip(before.splitlines(), after.splitlines(), strict=False) if a != b]
    assert {a.split(":")[0] for a, _ in changed} <= {"updated", "checksum", "Deploy on Fridays"}
    assert "updated: 2026-02-01T00:00:00.000Z" in after
    assert git(cli.store, "status", "--porcelain") == ""


@pytest.mark.parametrize(("editor", "said"), [
    ("vi -c 'x", "cannot be read: No closing quotation"),  # shlex.split raised ValueError
    ("   ", "is empty"),  # ran the copy itself as the editor
    (".", "'.' cannot be run: Permission denied"),  # a folder: PermissionError
])
def test_an_editor_that_cannot_be_run_is_one_line_and_changes_nothing(
        cli: Cli, editor: str, said: str) -> None:
    added = cli.ok("add", "Keep me as I am", "--json").json()
    before = tree_snapshot(cli.store)
    result = cli("edit", added["id"], env={"EDITOR": editor, "VISUAL": ""})
    assert result.exit_code == 1 and "Traceback" not in result.stderr
    assert result.stderr.startswith("error: ") and said in result.stderr, result.stderr
    assert result.error.count("\n") == 1
    assert tree_snapshot(cli.store) == before


def test_edit_with_invalid_result_keeps_the_note_and_the_draft(cli: Cli, tmp_path):
    added = cli.ok("add", "Keep me", "--json").json()
    before = (cli.store / added["path"]).read_bytes()
    editor = _editor_script(tmp_path, "open(path, 'w', encoding='utf-8').write(text.replace('type: fact', 'type: [broken'))")
    result = cli("edit", added["id"], env={"EDITOR": editor})
    assert result.exit_code == 1 and "unchanged" in result.stderr and ".memctl/edit/" in result.stderr
    assert (cli.store / added["path"]).read_bytes() == before


def _edit_that_fails(cli: Cli, tmp_path, text: str, editor_code: str,
                     said: str) -> tuple[dict, str]:
    """A note of `text` added, then `memctl edit` of it by an editor that runs `editor_code`:
    one line saying `said` (and nothing of a full disk), the note unchanged. The note, and
    the editor's command."""
    added = cli.ok("add", text, "--json").json()
    before = (cli.store / added["path"]).read_bytes()
    editor = _editor_script(tmp_path, editor_code)
    result = cli("edit", added["id"], env={"EDITOR": editor, "VISUAL": ""})
    assert result.exit_code == 1 and "Traceback" not in result.stderr
    assert result.error.count("\n") == 1 and said in result.error, result.stderr
    assert "disk" not in result.error
    assert (cli.store / added["path"]).read_bytes() == before
    return added, editor


def _edit_plainly(cli: Cli, tmp_path, added: dict, old: str, new: str, *options: str) -> None:
    """`memctl edit` of the note `added` by an editor that replaces `old` with `new`: saved."""
    plain = _editor_script(tmp_path, f"open(path, 'w', encoding='utf-8').write("
                                     f"text.replace({old!r}, {new!r}))")
    cli.ok("edit", added["id"], *options, env={"EDITOR": plain, "VISUAL": ""})
    assert new in (cli.store / added["path"]).read_text()


def test_a_draft_the_editor_turned_into_a_link_is_never_read_through_it(cli: Cli, tmp_path):
    """An editor that leaves a symbolic link where the draft was: the note's new text was read
    from the file it points to, outside the store, and saved (a link to /etc/passwd was read
    too). memctl reads no store file through a link (docs/security.md)."""
    outside = tmp_path / "outside.md"
    added, editor = _edit_that_fails(cli, tmp_path, "Rotate the keys monthly", (
        f"open({str(outside)!r}, 'w', encoding='utf-8').write(text.replace('monthly', 'never'))\n"
        f"import os\nos.remove(path)\nos.symlink({str(outside)!r}, path)\n"), "symbolic link")
    assert git(cli.store, "status", "--porcelain") == ""
    again = cli("edit", added["id"], env={"EDITOR": editor, "VISUAL": ""})  # refused again
    assert again.exit_code == 1 and "--fresh" in again.error
    _edit_plainly(cli, tmp_path, added, "monthly", "weekly", "--fresh")
    assert "never" in outside.read_text()  # the file it pointed to, left alone


def test_a_draft_the_editor_turned_into_a_folder_is_moved_aside(cli: Cli, tmp_path):
    """An editor that leaves a folder where the draft was: the error spoke of a full disk,
    and every later edit of the note failed, `--fresh` too, until the folder was removed by
    hand. It is moved aside (with what it holds) and the next edit starts from the note."""
    added, _editor = _edit_that_fails(cli, tmp_path, "Back up the database nightly", (
        "import os\nos.remove(path)\nos.mkdir(path)\n"
        "open(os.path.join(path, 'kept.txt'), 'w').write('what the editor put here')\n"),
        "is a folder now")
    _edit_plainly(cli, tmp_path, added, "nightly", "hourly")
    aside = cli.store / ".memctl" / "edit" / f"{added['id']}.md.aside" / "kept.txt"
    assert aside.read_text() == "what the editor put here"


@pytest.mark.parametrize("left", ["a link to a folder", "a FIFO", "a socket"])
def test_a_draft_the_editor_turned_into_no_file_is_replaced_by_the_next_edit(
        cli: Cli, tmp_path, left: str) -> None:
    """What an editor left in the draft's place that is no file: each edit after it failed,
    `--fresh` too (the write of a new draft refused a link to a folder, a FIFO and a socket),
    and a socket's error spoke of a full disk."""
    (tmp_path / "folder").mkdir()
    make = {"a link to a folder": f"os.symlink({str(tmp_path / 'folder')!r}, path)",
            "a FIFO": "os.mkfifo(path)",
            # (bound by its name alone: a socket's whole path may be too long to bind)
            "a socket": "import socket\nos.chdir(os.path.dirname(path))\n"
                        "socket.socket(socket.AF_UNIX).bind(os.path.basename(path))"}[left]
    added, _editor = _edit_that_fails(cli, tmp_path, "Renew the certificate yearly",
                                      f"import os\nos.remove(path)\n{make}\n", "--fresh")
    _edit_plainly(cli, tmp_path, added, "yearly", "monthly")
    assert (tmp_path / "folder").is_dir()  # the link's target, left as it was


def test_forget_deletes_and_leaves_a_tombstone(cli: Cli):
    added = cli.ok("add", "Obsolete", "--json").json()
    cli.ok("forget", added["id"])
    assert not (cli.store / added["path"]).exists()
    tombstone = cli.store / ".tombstones" / f"{added['id']}.md"
    assert parse_text(tombstone.read_text()).meta["id"] == added["id"]
    assert cli("show", added["id"]).exit_code == 1
    assert git(cli.store, "status", "--porcelain") == ""


@pytest.mark.parametrize("change", ["forget", "edit", "supersede"])
def test_a_note_renamed_by_hand_then_changed_commits_the_rename(cli: Cli, tmp_path, change):
    """A note file renamed by hand (not committed), then forgotten or changed by memctl: the
    commit held only the new path (or the tombstone), so HEAD kept the old file and every
    clone served the note again. The old path's removal is part of the change."""
    added = cli.ok("add", "The renf billing service runs on Fly.io in region ams.",
                   "--json").json()
    old = cli.store / added["path"]
    new = old.parent / "billing-by-hand.md"
    old.rename(new)
    other = cli.store / cli.ok("add", "An unrelated note about the cache", "--json").json()["path"]
    other.unlink()  # another note deleted by hand: not memctl's change to commit
    served = [added["id"]]
    if change == "forget":
        cli.ok("forget", added["id"])
        served = []
    elif change == "edit":
        edit(cli, added["id"], "The renf billing service runs on Fly.io in region fra.",
             "2026-11-30T13:00:00Z")
    else:
        newer = cli.ok("add", "Billing moved to Hetzner", "--force", "--json").json()
        cli.ok("supersede", added["id"], newer["id"])
        served = [newer["id"]]
    tracked = git(cli.store, "ls-files", "demo").split()
    assert added["path"] not in tracked
    assert ("demo/notes/fact/billing-by-hand.md" in tracked) == (change != "forget")
    assert git(cli.store, "status", "--porcelain") == f" D {other.relative_to(cli.store)}\n"
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(cli.store), str(clone)], check=True)
    found = run_memctl("search", "--json", "billing", store=clone).json()
    assert [hit["id"] for hit in found] == served


def test_hand_dropped_file_is_listed_and_never_rewritten(cli: Cli):
    folder = cli.store / "demo" / "notes"
    folder.mkdir(parents=True)
    hand = folder / "hand.md"
    content = b"\xef\xbb\xbfMy own note\r\nwith CRLF and no front matter"
    hand.write_bytes(content)
    listed = cli.ok("list", "--json").json()
    assert any(n["path"] == "demo/notes/hand.md" and n["type"] == "fact" and n["importance"] == 5 for n in listed)
    assert hand.read_bytes() == content


def test_broken_file_is_reported_not_fatal(cli: Cli):
    cli.ok("add", "fine")
    broken = cli.store / "demo" / "notes" / "broken.md"
    broken.write_text("---\ntags: [a\n---\nbody\n")
    listed = cli("list", "--json")
    assert listed.exit_code == 0
    assert [n["title"] for n in listed.json()] == ["fine"]
    assert "warning: demo/notes/broken.md:" in listed.stderr
    assert broken.read_text() == "---\ntags: [a\n---\nbody\n"


def test_python_dash_m_works(store_path):
    import subprocess

    result = subprocess.run([sys.executable, "-m", "memctl", "--store", str(store_path), "list", "--json"],
                            capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout.strip() == "[]"


def test_end_to_end_add_show_forget_as_a_user_would(store_path):
    added = run_memctl("add", "Remember: run migrations before deploy", "--type", "rule", "--json", store=store_path)
    assert added.exit_code == 0, added.stderr
    note_id = added.json()["id"]
    shown = run_memctl("show", note_id[:12], store=store_path)
    assert shown.exit_code == 0 and "migrations" in shown.stdout
    gone = run_memctl("forget", note_id, store=store_path)
    assert gone.exit_code == 0
    again = run_memctl("show", note_id, store=store_path)
    assert again.exit_code == 1 and again.stderr.startswith("error:")


def test_project_from_git_repo_name(tmp_path, store_path):
    repo = tmp_path / "my-service"
    repo.mkdir()
    git(repo, "init", "-q")
    env = dict(os.environ)
    env.pop("MEMCTL_PROJECT", None)
    import subprocess

    from conftest import memctl_executable
    out = subprocess.run([memctl_executable(), "--store", str(store_path), "add", "x", "--json"],
                         cwd=repo / ".", capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout and '"my-service/' in out.stdout


def test_show_accepts_an_episode_id_and_notes_point_back_to_episodes(sample_store):
    cli = Cli(sample_store, project="blog-backend")
    episode = cli.ok("show", "01m3w3demw", "--json").json()
    assert episode["outcome"] == "completed" and episode["path"].startswith("blog-backend/episodes/")
    added = cli.ok("add", "Search uses a GIN index on tsvector", "--source-episode", "01m3w3demw", "--json").json()
    assert cli.ok("show", added["id"], "--json").json()["source_episode"] == episode["id"]
    missing = cli("add", "x", "--source-episode", "zzzz")
    assert missing.exit_code == 1 and "no episode" in missing.stderr


def test_an_empty_note_file_is_reported_not_listed_as_a_note(cli: Cli):
    """A save or a git checkout cut short leaves an empty file: not a note, and never lost
    from the index if it had a good version (the index keeps that)."""
    kept = cli.ok("add", "Keep this text", "--json").json()
    (cli.store / kept["path"]).write_text("")
    empty = cli.store / "demo" / "notes" / "empty.md"
    empty.write_text("")
    listed = cli.ok("list", "--json")
    assert [n["id"] for n in listed.json()] == [kept["id"]]
    assert "demo/notes/empty.md:1: the file is empty" in listed.stderr
    shown = cli("show", kept["id"])  # shown as it is, with the problem (tests/test_broken_files.py)
    assert shown.exit_code == 0 and shown.stdout == ""
    assert f"{kept['path']}:1: the file is empty" in shown.stderr


def test_a_missing_git_program_is_a_clear_error(tmp_path):
    empty_path = tmp_path / "no-git-here"
    empty_path.mkdir()
    result = run_memctl("init", str(tmp_path / "store"), project=None, env={"PATH": str(empty_path)})
    assert result.exit_code == 1
    assert result.stderr.startswith("error: git is not installed"), result.stderr


def _at(delta_minutes: int) -> dict[str, str]:
    """The pinned clock moved by some minutes, as MEMCTL_NOW for one command."""
    from datetime import timedelta

    from memctl.core.clock import format_time, now

    return {"MEMCTL_NOW": format_time(now() + timedelta(minutes=delta_minutes))}


def test_since_and_expires_take_hours_and_minutes(cli: Cli):
    cli.ok("add", "written three hours ago", env=_at(-180))
    cli.ok("add", "written forty minutes ago", env=_at(-40))
    for span, expected in (("1h", {"written forty minutes ago"}), ("90min", {"written forty minutes ago"}),
                           ("4h", {"written three hours ago", "written forty minutes ago"}),
                           ("30min", set())):
        listed = cli.ok("list", "--since", span, "--json").json()
        assert {n["title"] for n in listed} == expected, span
    hits = cli.ok("search", "written", "--since", "2h", "--json").json()
    assert [hit["title"] for hit in hits] == ["written forty minutes ago"]
    # An expiry in hours is the exact time (its date alone would be today, already past).
    added = cli.ok("add", "the build cache is warm", "--expires", "12h", "--json").json()
    expected_time = _at(12 * 60)["MEMCTL_NOW"]
    assert cli.ok("show", added["id"], "--json").json()["expires"] == expected_time
    assert [hit["id"] for hit in cli.ok("search", "build cache", "--json").json()] == [added["id"]]
    assert cli.ok("search", "build cache", "--json", env=_at(13 * 60)).json() == []  # expired


@pytest.mark.parametrize("when", ["2020-01-01", "0d", "today", "1999-12-31T23:00:00Z"])
def test_an_expiry_in_the_past_is_refused(cli: Cli, when: str):
    from memctl.core.clock import now

    before = tree_snapshot(cli.store)
    commits = git(cli.store, "rev-list", "--count", "HEAD")
    value = now().date().isoformat() if when == "today" else when  # midnight: already past
    result = cli("add", "a note that would vanish at once", "--expires", value)
    assert result.exit_code == 2
    assert result.error.count("\n") == 1 and result.stderr.startswith("error: invalid value for --expires")
    assert "not in the future" in result.stderr
    assert tree_snapshot(cli.store) == before
    assert git(cli.store, "rev-list", "--count", "HEAD") == commits


def test_a_template_without_its_text_placeholder_never_loses_the_note_text(cli: Cli) -> None:
    # A person edited the store's template and took `{{text}}` out: the note's text is added
    # after the template's body, and health names the template (docs/format.md).
    (cli.store / ".templates" / "fact.md").write_text("---\nimportance: 6\n---\nA fact.\n")
    (cli.store / ".templates" / "rule.md").write_text("---\nimportance: 7\n---\n")
    fact = cli.ok("add", "Staging DB is at 10.0.3.7, user app_ro", "--json").json()
    rule = cli.ok("add", "Always run the tests", "--type", "rule", "--json").json()
    fact_text = parse_text((cli.store / fact["path"]).read_text())
    assert fact_text.body == "A fact.\n\nStaging DB is at 10.0.3.7, user app_ro\n"
    assert str(fact_text.meta["importance"]) == "6"
    assert parse_text((cli.store / rule["path"]).read_text()).body == "Always run the tests\n"
    assert [e["id"] for e in cli.ok("search", "staging", "--json").json()] == [fact["id"]]
    report = cli("health", "--json").json()
    assert sorted(e["path"] for e in report["templates"]) == [".templates/fact.md",
                                                              ".templates/rule.md"]
    assert "templates" in {problem["kind"] for problem in report["problems"]}


def test_a_template_that_repeats_its_placeholder_is_named_and_never_makes_an_unreadable_note(
        cli: Cli) -> None:
    """`{{text}}` 20,000 times in a hand-edited template made `add` of a 1,000-character text
    write (and commit) a 20 MB note that memctl then never read (the index skips files over
    10 MB), and a 1 MB text would have needed 20 GB of memory. Such a fill is refused before
    anything is written; a template with the placeholder twice still works as written, and
    health names both."""
    (cli.store / ".templates" / "fact.md").write_text(
        "---\nimportance: 5\n---\n" + "{{text}}" * 20_000 + "\n")
    (cli.store / ".templates" / "rule.md").write_text("---\nimportance: 7\n---\n{{text}}\n\n"
                                                     "Again: {{text}}\n")
    before, commits = tree_snapshot(cli.store), git(cli.store, "rev-list", "--count", "HEAD")
    result = cli("add", "w" * 1000, "--force")
    assert result.exit_code == 1, result.stderr
    assert result.stderr == ("error: .templates/fact.md would make a file of 19 MB, more than "
                             "memctl reads back (10 MB): it holds {{text}} 20,000 times; keep it "
                             "once\n")
    assert tree_snapshot(cli.store) == before
    assert git(cli.store, "rev-list", "--count", "HEAD") == commits
    rule = cli.ok("add", "Always run the tests", "--type", "rule", "--json").json()
    assert parse_text((cli.store / rule["path"]).read_text()).body == (
        "Always run the tests\n\nAgain: Always run the tests\n")
    problems = {e["path"]: e["problem"] for e in cli("health", "--json").json()["templates"]}
    assert problems == {".templates/fact.md": "{{text}} 20,000 times: a note's text is written "
                                              "20,000 times over",
                        ".templates/rule.md": "{{text}} 2 times: a note's text is written 2 "
                                              "times over"}


def test_a_placeholder_typed_into_an_episode_is_its_text_never_filled_again(cli: Cli) -> None:
    """The episode template was filled one placeholder after another, so a `{{summary}}`
    typed into the goal was filled with the summary: 12 KB of goal and summary made a 12 MB
    episode (an MCP client's 1 MB each, some GB). Each placeholder is filled once, from the
    template alone: what a value holds is its text."""
    goal = "{{summary}} " * 1000 + "ship"
    summary = "word " * 2400
    made = cli.ok("episode", "add", "--goal", goal, "--outcome", "completed", "--summary",
                  summary, "--json").json()
    text = (cli.store / made["path"]).read_text()
    assert text.count("{{summary}}") == 2000  # the goal as typed: in the front matter, the title
    assert text.count("word") == 2400
    assert len(text.encode()) < 60_000


# --- edits racing other commands --------------------------------------------------------------

MEANWHILE_EDITOR = """
import os, subprocess, sys
memctl, store, inner, command, path = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:-1], sys.argv[-1]
env = dict(os.environ, EDITOR=inner, VISUAL="")
if command[0] == "archive":
    env["MEMCTL_NOW"] = "2029-06-01T00:00:00Z"
if command[0] == "hand":  # a person (or another tool) saves the note itself
    with open(command[1], "a", encoding="utf-8") as handle:
        handle.write("Saved by hand meanwhile.\\n")
else:
    done = subprocess.run([memctl, "--store", store, *command], capture_output=True,
                          text=True, env=env)
    assert done.returncode == 0, done.stderr
with open(path, "a", encoding="utf-8") as handle:
    handle.write("Added in the editor while the other command ran.\\n")
"""


@pytest.mark.parametrize("meanwhile", ["forget", "supersede", "archive", "hand"])
def test_an_edit_never_undoes_what_another_command_did_while_the_editor_was_open(
        cli: Cli, tmp_path: Path, meanwhile: str) -> None:
    """`memctl edit` waits in the editor without the store lock. An archive, forget,
    supersede or hand save made meanwhile was undone by the save (the note alive again
    beside its tombstone, `status: active` again) or left the note in two files (notes/ and
    archive/). The save is now refused, and the draft kept."""
    from conftest import memctl_executable

    note = cli.ok("add", "Deploy on Fridays after the change freeze", "--importance", "1",
                  "--json", env={"MEMCTL_NOW": "2026-01-01T00:00:00Z"}).json()
    newer = cli.ok("add", "Releases go out on Tuesdays with the new pipeline", "--json").json()
    command = {"forget": ["forget", note["id"]],
               "supersede": ["supersede", note["id"], newer["id"]],
               "archive": ["archive"],
               "hand": ["hand", str(cli.store / note["path"])]}[meanwhile]
    script = tmp_path / "meanwhile.py"
    script.write_text(MEANWHILE_EDITOR)
    editor = (f"{sys.executable} {script} {memctl_executable()} {cli.store} unused"
              f" {' '.join(command)}")
    before = git(cli.store, "log", "--format=%s")
    result = cli("edit", note["id"], env={"EDITOR": editor, "VISUAL": "",
                                         "MEMCTL_NOW": "2026-02-01T00:00:00Z"})
    assert result.exit_code == 1, result.stdout + result.stderr
    assert result.stderr.startswith(f"error: note {note['id']} changed while you edited it ("), \
        result.stderr
    assert "your edit is kept" in result.stderr and "Traceback" not in result.stderr
    draft = cli.store / ".memctl" / "edit" / f"{note['id']}.md"
    if meanwhile == "forget":  # no note to reopen it for: set aside, as `forget` does
        assert not draft.exists()
        draft = cli.store / ".memctl" / "edit" / "forgotten" / f"{note['id']}.md"
        assert f".memctl/edit/forgotten/{note['id']}.md" in result.stderr
    assert "Added in the editor" in draft.read_text()  # nothing typed is lost
    files = [path for path in cli.store.rglob("*.md") if note["id"] in path.name
             and ".memctl" not in path.parts and ".tombstones" not in path.parts]
    listed = run_memctl("list", "--status", "any", "--json", store=cli.store).json()
    mine = [entry for entry in listed if entry["id"] == note["id"]]
    if meanwhile == "forget":
        assert files == [] and mine == []
    else:
        assert len(files) == 1 and len(mine) == 1
        text = files[0].read_text()
        assert "Added in the editor" not in text
        if meanwhile == "supersede":
            assert mine[0]["status"] == "superseded"
        if meanwhile == "archive":
            assert "/archive/" in files[0].as_posix()
        if meanwhile == "hand":
            assert "Saved by hand meanwhile." in text
    # At most the other command's commit: the refused save committed nothing.
    assert git(cli.store, "log", "--format=%s").count("\n") \
        == before.count("\n") + (meanwhile != "hand")


def test_a_second_edit_of_a_note_being_edited_is_refused(cli: Cli, tmp_path: Path) -> None:
    """Two `memctl edit` of one note at once shared its draft: the second took the first's
    live draft for a kept one and saved it, then the first saved over the second. The second
    is now refused while the first is open."""
    from conftest import memctl_executable

    note = cli.ok("add", "Deploy on Fridays after the change freeze", "--json").json()
    script = tmp_path / "second.py"
    script.write_text(
        "import os, subprocess, sys\n"
        "memctl, store, note, said, path = sys.argv[1:6]\n"
        "env = dict(os.environ, EDITOR=sys.executable + ' -c pass', VISUAL='')\n"
        "done = subprocess.run([memctl, '--store', store, 'edit', note], capture_output=True,"
        " text=True, env=env)\n"
        "open(said, 'w').write(f'{done.returncode}\\n{done.stderr}')\n"
        "open(path, 'a').write('The first edit.\\n')\n")
    said = tmp_path / "second.txt"
    editor = f"{sys.executable} {script} {memctl_executable()} {cli.store} {note['id']} {said}"
    cli.ok("edit", note["id"], env={"EDITOR": editor, "VISUAL": ""})
    code, message = said.read_text().split("\n", 1)
    assert code == "1", message
    assert message == (f"error: note {note['id']} is being edited already (another `memctl "
                       "edit` has it open); finish that edit first, then edit it again\n")
    assert "The first edit." in (cli.store / note["path"]).read_text()


def test_forget_finds_the_note_where_it_is_once_it_has_the_lock(cli: Cli) -> None:
    """`forget` looked the note up before it waited for the store lock, then deleted that
    path: a note moved meanwhile (by `archive`, `restore`, a person) stayed alive beside its
    tombstone, while forget said "forgot"."""
    import subprocess
    import time

    from conftest import memctl_executable

    from memctl.disk.locking import store_lock

    note = cli.ok("add", "Deploy on Fridays after the change freeze", "--json").json()
    old = cli.store / note["path"]
    moved = cli.store / note["path"].replace("/notes/", "/archive/")
    with store_lock(cli.store, "archive"):
        forget = subprocess.Popen([memctl_executable(), "--store", str(cli.store), "forget",
                                   note["id"]], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True)
        time.sleep(2.0)  # it has found the note (~0.1 s) and waits for the lock
        moved.parent.mkdir(parents=True, exist_ok=True)
        moved.write_text(old.read_text().replace("status: active", "status: archived"))
        old.unlink()
    out, err = forget.communicate(timeout=60)
    assert forget.returncode == 0, err
    assert not moved.exists() and not old.exists()
    assert (cli.store / ".tombstones" / f"{note['id']}.md").exists()
    assert run_memctl("list", "--status", "any", "--json", store=cli.store).json() == []


def _superseded_by(cli: Cli, path: str) -> str | None:
    return parse_text((cli.store / path).read_text(encoding="utf-8")).meta.get("superseded_by")


def _chain_of_three(cli: Cli) -> tuple[dict, dict, dict]:
    """Three notes of one fact, A superseded by B and B by C."""
    a = cli.ok("add", "Kilo stores its data in MySQL 5", "--json").json()
    b = cli.ok("add", "Kilo stores its data in PostgreSQL 16 now", "--force", "--json").json()
    c = cli.ok("add", "Kilo stores its data in CockroachDB since spring", "--force",
               "--json").json()
    cli.ok("supersede", a["id"], b["id"])
    cli.ok("supersede", b["id"], c["id"])
    return a, b, c


def test_forgetting_a_note_in_a_chain_of_supersessions_hands_its_successor_down(cli: Cli):
    """A superseded by B, B by C, then B forgotten: A named a note that no longer was, and was
    hidden from everything with nothing said (health then blamed the store). A now names C,
    in the forget's own commit (docs/lifecycle.md, "Forgetting a note")."""
    a, b, c = _chain_of_three(cli)
    head = git(cli.store, "rev-parse", "HEAD").strip()
    done = cli.ok("forget", b["id"], "--json").json()
    assert done["successor"] == c["id"] and done["repointed"] == [a["id"]]
    assert done["left_superseded"] == []
    assert _superseded_by(cli, a["path"]) == c["id"]
    assert git(cli.store, "rev-list", "--count", f"{head}..HEAD").strip() == "1"  # one commit
    assert git(cli.store, "status", "--porcelain") == ""
    assert a["path"] in git(cli.store, "show", "--name-only", "--format=", "HEAD").split()
    health = cli.ok("health", "--json").json()
    assert not health.get("supersession"), health.get("supersession")


def test_forgetting_the_note_that_superseded_others_says_they_stay_superseded(cli: Cli):
    """B superseded A and had no successor of its own: A stays superseded, as its file says
    (nothing brings an old fact back by itself), and forget names it with the way back."""
    a = cli.ok("add", "Kilo stores its data in MySQL 5", "--json").json()
    b = cli.ok("add", "Kilo stores its data in PostgreSQL 16 now", "--force", "--json").json()
    cli.ok("supersede", a["id"], b["id"])
    said = cli.ok("forget", b["id"])
    assert a["id"] in said.stderr and "stays superseded" in said.stderr
    assert "`memctl restore`" in said.stderr
    assert _superseded_by(cli, a["path"]) == b["id"]  # the file as it was
    alone = cli.ok("add", "Kilo stores its data in SQLite", "--force", "--json").json()
    done = cli.ok("forget", alone["id"], "--json").json()
    assert done["left_superseded"] == [] and done["repointed"] == [] and done["successor"] is None


def test_a_supersession_loop_made_by_hand_is_left_as_it_is_by_forget(cli: Cli):
    """B superseded by A and A by B, by hand: forgetting B does not point A at itself."""
    a = cli.ok("add", "Kilo stores its data in MySQL 5", "--json").json()
    b = cli.ok("add", "Kilo stores its data in PostgreSQL 16 now", "--force", "--json").json()
    for mine, other in ((a, b), (b, a)):
        path = cli.store / mine["path"]
        text = path.read_text(encoding="utf-8").replace(
            "status: active", f"status: superseded\nsuperseded_by: {other['id']}", 1)
        path.write_text(text, encoding="utf-8")
    done = cli.ok("forget", b["id"], "--json").json()
    assert done["repointed"] == [] and done["left_superseded"] == [a["id"]]
    assert _superseded_by(cli, a["path"]) == b["id"]


def test_forget_goes_on_when_a_note_it_superseded_does_not_parse(cli: Cli):
    """A note B had superseded, whose front matter no longer parses, made `forget B` fail
    on A's parse error: B could not be forgotten until A was fixed. A is left as it is and
    named; B is forgotten."""
    a, b, c = _chain_of_three(cli)
    path = cli.store / a["path"]
    broken = path.read_text(encoding="utf-8").replace("importance:", "importance: [unclosed", 1)
    path.write_text(broken, encoding="utf-8")
    said = cli.ok("forget", b["id"])
    assert f"{a['id']} still names {b['id']}: its file does not parse" in said.stderr
    assert "`memctl health` names the line" in said.stderr
    assert path.read_text(encoding="utf-8") == broken  # left as it was
    assert not (cli.store / b["path"]).exists()
    c_gone = cli.ok("forget", c["id"], "--json").json()
    assert c_gone["left_superseded"] == [] and c_gone["unreadable"] == []


def test_forget_keeps_a_hand_edit_that_was_never_committed(cli: Cli):
    """A note edited by hand and not committed yet, then forgotten: the edit was in no file
    and no commit anywhere (supersede or restore commit it with the note). It is copied to
    `.memctl/edit/forgotten/` first, as a kept edit is; a note as committed leaves nothing."""
    added = cli.ok("add", "The queue is RabbitMQ 3.12", "--json").json()
    path = cli.store / added["path"]
    path.write_text(path.read_text(encoding="utf-8") + "\nHANDTOKEN: the vhost is /ops\n",
                    encoding="utf-8")
    done = cli.ok("forget", added["id"], "--json").json()
    kept = cli.store / done["kept_text"]
    assert kept.parent == cli.store / ".memctl" / "edit" / "forgotten"
    assert "HANDTOKEN: the vhost is /ops" in kept.read_text(encoding="utf-8")
    assert git(cli.store, "status", "--porcelain") == ""
    other = cli.ok("add", "The cache is Redis 7", "--force", "--json").json()
    assert cli.ok("forget", other["id"], "--json").json()["kept_text"] is None


def test_a_forget_that_stops_leaves_no_copy_of_the_hand_edit_and_the_note_as_it_was(cli: Cli):
    """The copy of an uncommitted hand edit is made before the note is removed: a forget that
    then stops (a folder where its tombstone goes) takes the copy back, and the note keeps
    its file, hand edit included."""
    added = cli.ok("add", "The queue is RabbitMQ 3.12", "--json").json()
    path = cli.store / added["path"]
    edited = path.read_text(encoding="utf-8") + "\nHANDTOKEN: the vhost is /ops\n"
    path.write_text(edited, encoding="utf-8")
    (cli.store / ".tombstones" / f"{added['id']}.md").mkdir(parents=True)
    refused = cli("forget", added["id"])
    assert refused.exit_code == 1 and refused.stderr.startswith("error: ")
    assert path.read_text(encoding="utf-8") == edited
    forgotten = cli.store / ".memctl" / "edit" / "forgotten"
    assert not forgotten.exists() or not any(forgotten.iterdir())
