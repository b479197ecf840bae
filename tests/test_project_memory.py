"""`memctl project`: the L2 MEMORY.md, shown, added to a section at a time, replaced whole."""

from __future__ import annotations

import os
import shutil
import stat
import sys
from datetime import UTC, datetime

import pytest
from conftest import git, run_memctl
from hypothesis import given, settings
from hypothesis import strategies as st

from memctl.core import sections

NOW = {"MEMCTL_NOW": "2026-11-30T12:00:00Z", "TZ": "UTC"}


def commits(store) -> int:
    return int(git(store, "rev-list", "--count", "HEAD").strip())


def test_add_creates_the_file_from_the_template_and_commits_once(cli, store_path):
    before = commits(store_path)
    result = cli.ok("project", "add", "decisions", "Use PostgreSQL 16; no ORM", "--json", env=NOW)
    data = result.json()
    assert data["path"] == "demo/MEMORY.md"
    assert data["section"] == "decisions"
    assert data["item"].endswith("] Use PostgreSQL 16; no ORM")
    text = (store_path / "demo" / "MEMORY.md").read_text()
    for heading in ("## Constraints", "## Decisions", "## Progress", "## Lessons"):
        assert heading in text
    decisions = text.split("## Decisions", 1)[1].split("## Progress", 1)[0]
    assert "- [11-30] Use PostgreSQL 16; no ORM" in decisions
    assert commits(store_path) == before + 1
    assert git(store_path, "status", "--porcelain") == ""


def test_add_keeps_the_blank_lines_inside_the_text(cli, store_path):
    """A blank line in the text is a paragraph break of the item, kept as given (it was
    dropped, joining the paragraphs)."""
    cli.ok("project", "add", "lessons", "line one\nline two\n\nline four after blank", env=NOW)
    text = (store_path / "demo" / "MEMORY.md").read_text()
    assert "- [11-30] line one\n  line two\n\n  line four after blank\n" in text
    assert sections.format_item("a\n\nb") == ["- a", "  b"]  # scratchpad items: one paragraph


def test_add_keeps_a_hand_written_file_byte_for_byte(cli, store_path):
    original = (
        "# My project\r\n\r\n## 技术约束\r\n- 只支持 Python 3.11   \r\n\r\n"
        "## 关键决策\r\n<!-- 为什么 -->\r\n- [10-01] 用 PostgreSQL\r\n\r\n## 自由笔记\r\n随便写写"
    )
    path = store_path / "demo" / "MEMORY.md"
    path.parent.mkdir(parents=True)
    path.write_bytes(original.encode("utf-8"))
    cli.ok("project", "add", "关键决策", "不用 ORM", env=NOW)
    cli.ok("project", "add", "lessons", "先写测试", env=NOW)
    data = path.read_bytes().decode("utf-8")
    expected = (
        original.replace(
            "- [10-01] 用 PostgreSQL\r\n", "- [10-01] 用 PostgreSQL\r\n- [11-30] 不用 ORM\r\n"
        )
        + "\r\n\r\n## 教训\r\n- [11-30] 先写测试\r\n"
    )
    assert data == expected


def test_show_prints_the_file_and_one_section(cli):
    cli.ok("project", "add", "progress", "v1 shipped", env=NOW)
    shown = cli.ok("project", "show").stdout
    assert "## Progress" in shown and "- [11-30] v1 shipped" in shown
    section = cli.ok("project", "show", "--section", "当前进度").stdout
    assert section.strip().endswith("- [11-30] v1 shipped")
    assert "Constraints" not in section
    data = cli.ok("project", "show", "--json").json()
    assert data["exists"] is True and data["over_budget"] is False
    assert data["text"] == shown


def test_show_of_a_section_named_twice_shows_both(cli, store_path):
    """Two `## Decisions` (a merge or a hand can make them): `--section` showed the first
    alone, without a word of the second."""
    memory = store_path / "demo" / "MEMORY.md"
    memory.parent.mkdir(exist_ok=True)
    memory.write_text("# demo\n\n## Decisions\n- a\n\n## Progress\n- p\n\n## Decisions\n- b\n",
                      encoding="utf-8")
    shown = cli.ok("project", "show", "--section", "decisions").stdout
    assert "- a" in shown and "## Decisions\n- b" in shown and "- p" not in shown


def test_show_of_a_section_holding_a_subsection_of_its_name_shows_it_once(cli, store_path):
    """`### Decisions` under `## Decisions` is part of the first one's text: it was shown
    again after it, twice in all."""
    memory = store_path / "demo" / "MEMORY.md"
    memory.parent.mkdir(exist_ok=True)
    memory.write_text("# demo\n\n## Decisions\n- a\n\n### Decisions\n- sub\n\n## Progress\n- p\n",
                      encoding="utf-8")
    shown = cli.ok("project", "show", "--section", "decisions").stdout
    assert shown.count("- sub") == 1 and "- a" in shown and "- p" not in shown


def test_a_heading_inside_a_comment_is_no_section(cli, store_path):
    """A guiding comment over several lines that shows an example `## Decisions`: that
    heading was read as the section, so `project add` wrote the item into the comment (where
    recall never shows it) and `--section` showed the comment's lines."""
    memory = store_path / "demo" / "MEMORY.md"
    memory.parent.mkdir(exist_ok=True)
    memory.write_text("# demo\n\n<!-- Sections look like this:\n## Decisions\n- example\n"
                      "-->\n\n## Progress\n- p\n", encoding="utf-8")
    cli.ok("project", "add", "decisions", "Kysely for every new query")
    text = memory.read_text(encoding="utf-8")
    assert text.startswith("# demo\n\n<!-- Sections look like this:\n## Decisions\n- example\n"
                           "-->\n\n## Progress\n- p\n")
    assert text.endswith("] Kysely for every new query\n")
    assert text.count("## Decisions") == 2 and "-->\n\n## Progress\n- p\n\n## Decisions\n- [" in text
    shown = cli.ok("project", "show", "--section", "decisions").stdout
    assert "Kysely" in shown and "example" not in shown
    assert "Kysely for every new query" in cli.ok("recall").stdout


def test_a_section_added_after_an_unclosed_comment_closes_it_first(cli, store_path):
    memory = store_path / "demo" / "MEMORY.md"
    memory.parent.mkdir(exist_ok=True)
    memory.write_text("# demo\n\n<!-- left open\n", encoding="utf-8")
    cli.ok("project", "add", "decisions", "Kysely for every new query")
    text = memory.read_text(encoding="utf-8")
    assert text.startswith("# demo\n\n<!-- left open\n-->\n\n## Decisions\n- [")
    assert text.endswith("] Kysely for every new query\n")
    assert "Kysely for every new query" in cli.ok("recall").stdout


def test_show_of_a_missing_file_says_how_to_create_it(cli):
    result = cli.ok("project", "show", "--json")
    assert result.json()["text"] is None
    result = cli.ok("project", "show")
    assert result.stdout == ""
    assert "memctl project add" in result.stderr


def test_replace_takes_the_whole_file_from_stdin_exactly(cli, store_path):
    cli.ok("project", "add", "lessons", "old lesson", env=NOW)
    new = "# Distilled\n\n## Decisions\n- pg 16, no ORM\n\n## Lessons\n- test first"  # no final \n
    result = cli.ok("project", "replace", "--json", input=new)
    assert result.json()["changed"] is True
    assert (store_path / "demo" / "MEMORY.md").read_bytes() == new.encode()
    assert git(store_path, "status", "--porcelain") == ""
    assert "rewrite MEMORY.md" in git(store_path, "log", "-1", "--format=%s")


def test_replace_refuses_an_empty_file(cli, store_path):
    cli.ok("project", "add", "lessons", "keep me", env=NOW)
    result = cli("project", "replace", input="  \n")
    assert result.exit_code == 2
    assert "keep me" in (store_path / "demo" / "MEMORY.md").read_text()
    # How to remove items, in words that hold for the MCP tool too (whose `project edit` is
    # its action replace: "edit it with … replace to remove items" sent it back to the refusal).
    assert "to remove items, give the whole text without them (`memctl project edit`)" \
        in result.stderr


def test_over_budget_file_is_flagged(cli, store_path):
    path = store_path / "demo" / "MEMORY.md"
    path.parent.mkdir(parents=True)
    path.write_text(
        "# Big\n\n## Progress\n" + "".join(f"- item {i} " + "x" * 80 + "\n" for i in range(100))
    )
    result = cli.ok("project", "add", "progress", "one more", env=NOW)
    assert "warning:" in result.stderr and "distil" in result.stderr
    assert cli.ok("project", "show", "--json").json()["over_budget"] is True


def test_bad_section_and_bad_project_are_usage_errors(cli, store_path):
    result = cli("project", "add", "banana", "x")
    assert result.exit_code == 2
    assert "banana" in result.stderr
    result = cli("project", "add", "lessons", "x", "--project", "../evil")
    assert result.exit_code == 2
    assert "--project" in result.stderr
    assert not (store_path.parent / "evil").exists()


def test_global_scope_has_its_own_memory_file(cli, store_path):
    cli.ok("project", "add", "constraints", "answer in English", "--global", env=NOW)
    assert "answer in English" in (store_path / "global" / "MEMORY.md").read_text()


def test_edit_opens_the_editor_and_commits_the_change(cli, store_path, tmp_path):
    editor = tmp_path / "editor.sh"
    editor.write_text('#!/bin/sh\nprintf -- "- [11-30] edited by hand\\n" >> "$1"\n')
    editor.chmod(editor.stat().st_mode | stat.S_IEXEC)
    before = commits(store_path)
    result = cli.ok("project", "edit", "--json", env={"EDITOR": str(editor)})
    assert result.json()["changed"] is True
    assert "edited by hand" in (store_path / "demo" / "MEMORY.md").read_text()
    assert git(store_path, "status", "--porcelain") == ""
    assert commits(store_path) == before + 1  # one commit for the command
    assert git(store_path, "log", "-1", "--format=%s").strip() == "project demo: create MEMORY.md"


def test_an_edit_of_a_memory_file_not_there_yet_commits_nothing_unless_it_is_saved(
        cli, store_path, tmp_path):
    """The template is written only with what the editor left: an editor that fails or
    changes nothing left a commit of the template alone (one command, two commits when it
    saved)."""
    memory = store_path / "demo" / "MEMORY.md"
    head = git(store_path, "rev-parse", "HEAD")
    failing = cli("project", "edit", env={"EDITOR": _editor(tmp_path, "no.sh", "exit 4\n")})
    assert failing.exit_code == 1 and "MEMORY.md is unchanged" in failing.stderr
    unchanged = cli.ok("project", "edit", "--json", env={"EDITOR": _editor(tmp_path, "t.sh", "")})
    assert unchanged.json()["changed"] is False
    assert not memory.exists() and git(store_path, "rev-parse", "HEAD") == head
    assert git(store_path, "status", "--porcelain") == ""


def _editor(tmp_path, name: str, script: str):
    editor = tmp_path / name
    editor.write_text("#!/bin/sh\n" + script)
    editor.chmod(editor.stat().st_mode | stat.S_IEXEC)
    return str(editor)


TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


@pytest.mark.parametrize(("script", "said"), [
    (f'printf -- "- [11-30] token {TOKEN}\\n" >> "$1"\n',
     "the edit adds what looks like a secret: github-token"),
    ('printf -- "- [11-30] half done\\n" >> "$1"\nexit 3\n', "editor exited with 3"),
    ('printf "\\000nul\\n" >> "$1"\n', "NUL"),
    ('printf "\\377\\376 latin-1\\n" >> "$1"\n', "UTF-8"),
    ('head -c 1100000 /dev/zero | tr "\\000" x >> "$1"\n', "larger than 1024 KB"),
], ids=["secret", "editor-fails", "nul", "not-utf8", "too-large"])
def test_an_edit_a_write_would_refuse_is_kept_aside_and_nothing_changes(
        cli, store_path, tmp_path, script, said):
    """`project edit` works on the file itself: what it adds goes through the checks of
    every other write, and a refused or failed edit leaves MEMORY.md as it was (nothing
    for the next command to commit) with the edit kept, and named, in `.memctl/edit/`."""
    cli.ok("project", "add", "decisions", "Use PostgreSQL 16", env=NOW)
    memory = store_path / "demo" / "MEMORY.md"
    before, head = memory.read_bytes(), git(store_path, "rev-parse", "HEAD")
    result = cli("project", "edit", env={"EDITOR": _editor(tmp_path, "ed.sh", script)})
    assert result.exit_code == 1, result.stderr
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("error: ") and said in line and "Traceback" not in line
    assert TOKEN not in line
    kept = store_path / ".memctl" / "edit" / "demo.MEMORY.md"
    assert f"your edit is kept in {kept}" in line
    assert f"memctl project replace {kept} -p demo" in line
    assert kept.read_bytes().startswith(before) and kept.read_bytes() != before
    assert memory.read_bytes() == before
    assert git(store_path, "status", "--porcelain") == ""
    assert git(store_path, "rev-parse", "HEAD") == head
    # The next command commits its own change only.
    cli.ok("project", "add", "progress", "step two", env=NOW)
    assert TOKEN not in git(store_path, "log", "-p", "-1") and "half done" not in memory.read_text()


def test_an_editor_that_changes_nothing_or_cannot_start_says_memory_is_unchanged(
        cli, store_path, tmp_path):
    cli.ok("project", "add", "decisions", "Use PostgreSQL 16", env=NOW)
    failing = cli("project", "edit", env={"EDITOR": _editor(tmp_path, "no.sh", "exit 4\n")})
    assert failing.exit_code == 1
    assert failing.stderr.strip() == "error: editor exited with 4; MEMORY.md is unchanged"
    assert not (store_path / ".memctl" / "edit" / "demo.MEMORY.md").exists()
    for editor, said in (("'", "cannot be read: No closing quotation"),
                         ("   ", "$VISUAL or $EDITOR is empty"),
                         (str(tmp_path), "cannot be run: Permission denied"),
                         (str(tmp_path / "nowhere"), "not found; set $EDITOR")):
        result = cli("project", "edit", env={"EDITOR": editor, "VISUAL": ""})
        assert result.exit_code == 1, (editor, result.stderr)
        [line] = result.stderr.strip().splitlines()
        assert line.startswith("error: ") and said in line, (editor, line)
    assert git(store_path, "status", "--porcelain") == ""


def test_an_edit_of_a_memory_file_that_already_held_a_secret_is_committed(
        cli, store_path, tmp_path):
    """Only what the edit adds is checked (as for `memctl edit`): a secret written before
    with --allow-secret does not make the file uneditable."""
    cli.ok("project", "add", "decisions", f"token {TOKEN}", "--allow-secret", env=NOW)
    editor = _editor(tmp_path, "ed.sh", 'printf -- "- [11-30] plain\\n" >> "$1"\n')
    result = cli.ok("project", "edit", "--json", env={"EDITOR": editor})
    assert result.json()["changed"] is True
    assert git(store_path, "status", "--porcelain") == ""
    # Another key of the same kind is a new secret (every one has the same masked form).
    other = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"
    more = _editor(tmp_path, "more.sh", f'printf -- "- [11-30] also {other}\\n" >> "$1"\n')
    refused = cli("project", "edit", env={"EDITOR": more})
    assert refused.exit_code == 1 and "adds what looks like a secret" in refused.stderr
    assert other not in (store_path / "demo" / "MEMORY.md").read_text()


def test_a_second_failed_edit_keeps_the_first_kept_edit(cli, store_path, tmp_path):
    cli.ok("project", "add", "decisions", "Use PostgreSQL 16", env=NOW)
    first = cli("project", "edit", env={"EDITOR": _editor(
        tmp_path, "one.sh", f'printf -- "- [11-30] first try {TOKEN}\\n" >> "$1"\n')})
    second = cli("project", "edit", env={"EDITOR": _editor(
        tmp_path, "two.sh", 'printf -- "- [11-30] second try\\n" >> "$1"\nexit 1\n')})
    assert first.exit_code == second.exit_code == 1
    folder = store_path / ".memctl" / "edit"
    assert f"kept in {folder / 'demo.MEMORY.md'}" in first.stderr
    assert f"kept in {folder / 'demo.MEMORY-2.md'}" in second.stderr
    assert "first try" in (folder / "demo.MEMORY.md").read_text()
    assert "second try" in (folder / "demo.MEMORY-2.md").read_text()


def test_a_project_add_made_while_the_editor_is_open_is_never_undone(
        cli, store_path, tmp_path):
    """The editor works on a copy: MEMORY.md is written by memctl only, under the lock. An
    editor that failed once put back the bytes it started from over an agent's `project
    add` made meanwhile, calling that change "your edit"."""
    cli.ok("project", "add", "decisions", "Use PostgreSQL 16", env=NOW)
    memctl = shutil.which("memctl", path=os.path.dirname(sys.executable))
    agent = (f'MEMCTL_STORE="{store_path}" MEMCTL_PROJECT=demo "{memctl}" project add '
             f'decisions "Use Redis for caching" >/dev/null\n')
    for script, said in ((agent + "exit 1\n", "editor exited with 1; MEMORY.md is unchanged"),
                         (agent + 'printf -- "- [11-30] mine\\n" >> "$1"\n',
                          "MEMORY.md changed while you edited it")):
        result = cli("project", "edit", env={"EDITOR": _editor(tmp_path, "ed.sh", script)})
        assert result.exit_code == 1 and said in result.stderr, result.stderr
        assert "Use Redis for caching" in (store_path / "demo" / "MEMORY.md").read_text()
        assert git(store_path, "status", "--porcelain") == ""
        assert "Use Redis for caching" in git(store_path, "show", "HEAD:demo/MEMORY.md")
    kept = store_path / ".memctl" / "edit" / "demo.MEMORY.md"
    assert "mine" in kept.read_text()


def test_a_memory_file_removed_while_the_editor_is_open_keeps_the_edit(
        cli, store_path, tmp_path):
    """MEMORY.md removed while its copy was open (a checkout, a hand `rm`): the error said
    only that the file does not exist, and never named the copy holding what was typed."""
    cli.ok("project", "add", "decisions", "Use PostgreSQL 16", env=NOW)
    memory = store_path / "demo" / "MEMORY.md"
    script = f'rm "{memory}"\nprintf -- "- [11-30] typed meanwhile\\n" >> "$1"\n'
    result = cli("project", "edit", env={"EDITOR": _editor(tmp_path, "rm.sh", script)})
    kept = store_path / ".memctl" / "edit" / "demo.MEMORY.md"
    assert result.exit_code == 1, result.stderr
    assert result.stderr.startswith("error: MEMORY.md cannot be read now (")
    assert f"kept in {kept}" in result.stderr and "Traceback" not in result.stderr
    assert "typed meanwhile" in kept.read_text()
    assert not memory.exists()  # nothing written in its place


def test_an_editor_that_leaves_a_link_is_refused_and_nothing_follows_it(
        cli, store_path, tmp_path):
    cli.ok("project", "add", "decisions", "Use PostgreSQL 16", env=NOW)
    outside = tmp_path / "outside.md"
    script = f'cp "$1" "{outside}"; printf -- "- x\\n" >> "{outside}"; ln -sf "{outside}" "$1"\n'
    result = cli("project", "edit", env={"EDITOR": _editor(tmp_path, "ed.sh", script)})
    assert result.exit_code == 1 and "the editor left a link, not a file" in result.stderr
    assert not (store_path / "demo" / "MEMORY.md").is_symlink()
    assert git(store_path, "status", "--porcelain") == ""


def test_installed_command_reads_stdin_for_add(store_path):
    env = dict(NOW)
    result = run_memctl(
        "project", "add", "constraints", "-", store=store_path, input="Node 20 LTS only\n", env=env
    )
    assert result.exit_code == 0, result.stderr
    assert "- [11-30] Node 20 LTS only" in (store_path / "demo" / "MEMORY.md").read_text()
    assert os.environ.get("MEMCTL_STORE") is None


def test_secrets_are_refused_unless_allowed(cli, store_path):
    secret = "staging db is postgres://app:s3cr3tpw@db:5432/blog"
    result = cli("project", "add", "constraints", secret)
    assert result.exit_code == 1
    assert "secret" in result.stderr and "s3cr3tpw" not in result.stderr
    assert not (store_path / "demo" / "MEMORY.md").exists()
    for args in (("scratch", "note", secret), ("episode", "add", "--goal", secret,
                                               "--outcome", "failed")):
        result = cli(*args)
        assert result.exit_code == 1 and "secret" in result.stderr
    assert not (store_path / "demo" / "SCRATCHPAD.md").exists()
    cli.ok("project", "add", "constraints", secret, "--allow-secret")
    assert "s3cr3tpw" in (store_path / "demo" / "MEMORY.md").read_text()


def test_a_multi_line_item_never_makes_a_section(cli, store_path):
    cli.ok("project", "add", "decisions", "Chose Kysely\n## Lessons\nsee ADR-7\n```", env=NOW)
    cli.ok("project", "add", "lessons", "Cast int8 counts with ::int", env=NOW)
    text = (store_path / "demo" / "MEMORY.md").read_text(encoding="utf-8")
    found = sections.parse_sections(text)
    assert [s.key for s in found if s.key] == list(sections.MEMORY_SECTIONS)
    decisions = sections.section_body(text, "decisions") or ""
    lessons = sections.section_body(text, "lessons") or ""
    assert "Chose Kysely" in decisions and "ADR-7" in decisions and "Cast int8" not in decisions
    assert "Cast int8 counts with ::int" in lessons and "Kysely" not in lessons
    lines = [sections.restore(line.strip(), item=True) for line in decisions.splitlines()]
    assert "## Lessons" in lines and "```" in lines


_MEMORY = ("# Project memory\n\n## Constraints\n- [11-01] Postgres 16\n\n## Decisions\n"
           "- [11-02] Kysely\n\n## Progress\n\n## Lessons\n- [11-03] cast int8\n")


@settings(max_examples=150, deadline=None)
@given(item=st.lists(st.one_of(st.sampled_from([
    "## Lessons", "# Constraints", "  ### Progress", "```", "~~~", "<!-- c -->", "<!--", "",
    "- a dash", "3. numbered", "\\## escaped", "\\- escaped"]), st.text(max_size=12)),
    min_size=1, max_size=5).map("\n".join).filter(str.strip),
    key=st.sampled_from(sections.MEMORY_SECTIONS))
def test_any_item_reads_back_in_its_section_and_leaves_the_others(item: str, key: str) -> None:
    after = sections.append_dated_item(_MEMORY, key, item, datetime(2026, 11, 30, tzinfo=UTC))
    before_parts = {s.key: _MEMORY[s.body_start:s.end] for s in sections.parse_sections(_MEMORY)}
    after_sections = sections.parse_sections(after)
    assert [(s.level, s.title) for s in after_sections] == [
        (s.level, s.title) for s in sections.parse_sections(_MEMORY)]
    for found in after_sections:
        part = after[found.body_start:found.end]
        if found.key is None:
            continue  # the title: the whole file is under it
        if found.key != key:
            assert part == before_parts[found.key]
            continue
        added = part[len(before_parts[key].rstrip("\n")):].strip("\n").splitlines()
        lines = [added[0].split("] ", 1)[1] if "] " in added[0] else ""] + [
            sections.restore(line.strip(), item=True) for line in added[1:]]
        # Blank lines inside are kept as blank lines of the item.
        assert lines == [line.strip() for line in item.strip().splitlines()]


@pytest.mark.parametrize("title", ["Decisions", "关键决策"])
def test_a_bom_before_the_first_heading_is_read_as_usual_and_kept(cli, store_path, title):
    """A UTF-8 BOM in front of the first heading (what some Windows editors save): the
    heading was not read as one, so `project add` put a second section of the same name at
    the end and recall served both. The item goes into the section, and the BOM stays, as it
    does in a note memctl edits (docs/format.md)."""
    memory = store_path / "demo" / "MEMORY.md"
    memory.parent.mkdir(parents=True, exist_ok=True)
    memory.write_bytes(f"\ufeff## {title}\n- old\n".encode())
    git(store_path, "add", "-A")
    git(store_path, "commit", "-qm", "a MEMORY.md saved with a BOM")
    cli.ok("project", "add", "decisions", "new2", env=NOW)
    assert memory.read_bytes() == f"\ufeff## {title}\n- old\n- [11-30] new2\n".encode()
    recalled = cli.ok("recall", env=NOW).stdout
    assert recalled.count(f"## {title}") == 1 and "\ufeff" not in recalled, recalled
    assert "- [11-30] new2" in recalled
    assert git(store_path, "status", "--porcelain") == ""
