"""What people read: tables that give the room to the text and never cut a path, search hits
that stay compact at 80 columns, one style for every error, examples in --help, and words
that agree with the JSON. Run as the installed `memctl` with COLUMNS set, as in a terminal."""

from __future__ import annotations

import json
import re
import shlex
import sys
from pathlib import Path

import pytest
from conftest import BODY_EDITOR, Cli, run_memctl
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.cells import cell_len

LONG_TITLE = ("Deploy checklist: run the migrations first, then restart the workers, "
              "then clear the CDN cache")


def lines_of(text: str) -> list[str]:
    return [line.rstrip() for line in text.splitlines()]


def assert_fits(text: str, columns: int) -> None:
    for line in text.splitlines():
        assert cell_len(line.rstrip()) <= columns, line


# --- list: the title gets the room --------------------------------------------------------------


@pytest.mark.parametrize("project", ["demo", "a-rather-long-project-name"])
def test_list_at_80_columns_gives_the_title_the_room(store_path: Path, project: str) -> None:
    added = run_memctl("add", LONG_TITLE, "--type", "decision", "--json", store=store_path,
                       project=project).json()
    shown = run_memctl("list", "--json", store=store_path, project=project).json()[0]
    result = run_memctl("list", store=store_path, project=project, env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.stderr
    assert_fits(result.stdout, 80)
    row = next(line.strip() for line in lines_of(result.stdout) if added["id"] in line)
    # the short columns are whole, the title is cut with "…" and still has the most room
    for value in (added["id"], "decision", str(shown["importance"]), shown["updated"][:10]):
        assert f"{value}  " in row, (value, row)
    title = row[row.index(LONG_TITLE[:10]):]
    assert title.endswith("…") and LONG_TITLE.startswith(title[:-1])
    assert len(title) >= 24, row
    project_cell = row.split()[3]
    assert project_cell == project or (project_cell.endswith("…") and len(project_cell) < len(title))


def test_list_at_200_columns_shows_the_whole_title_as_written(store_path: Path) -> None:
    title = "[draft] " + LONG_TITLE  # brackets are text, never markup
    added = run_memctl("add", title, "--json", store=store_path).json()
    result = run_memctl("list", store=store_path, env={"COLUMNS": "200"})
    row = next(line.strip() for line in lines_of(result.stdout) if added["id"] in line)
    assert row.endswith(title) and "…" not in row


# --- search: compact hits ----------------------------------------------------------------------


def hits_of(stdout: str) -> list[list[str]]:
    """The printed hits: each starts with its number, its other lines are indented."""
    hits: list[list[str]] = []
    for line in lines_of(stdout):
        if re.match(r"^ *\d+  \S", line):
            hits.append([line])
        else:
            assert hits and line.startswith("   "), f"a line outside any hit: {line!r}"
            hits[-1].append(line)
    return hits


def test_search_hits_take_at_most_three_lines_at_80_columns(store_path: Path) -> None:
    project = "a-rather-long-project-name"
    run_memctl("project", "add", "decisions", "We deploy with blue-green switches because the "
               "migrations must run before any worker restarts and the CDN cache is cleared "
               "last, after the health checks pass on every machine of the fleet",
               store=store_path, project=project)
    note = run_memctl("add", LONG_TITLE + ". " + "The deploy takes ten minutes; " * 8,
                      "--type", "skill", "--json", store=store_path, project=project).json()
    result = run_memctl("search", "deploy", store=store_path, project=project,
                        env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.stderr
    assert_fits(result.stdout, 80)
    hits = hits_of(result.stdout)
    assert len(hits) == 2, result.stdout
    assert all(len(hit) <= 3 for hit in hits), result.stdout
    assert any(hit[0].split()[1] == note["id"] for hit in hits), "a note's id is shown whole"
    memory = next(hit for hit in hits if "MEMORY.md" in hit[0])
    assert re.search(r"\bMEMORY\.md:\d+\b", memory[0]) and "Decisions" in " ".join(memory)
    assert " ".join(hits[0] + hits[1]).count("…") >= 1, "long text is cut with …"


def test_search_explain_adds_its_line_to_the_compact_hit(store_path: Path) -> None:
    run_memctl("add", LONG_TITLE, store=store_path)
    result = run_memctl("search", "deploy", "--explain", store=store_path,
                        env={"COLUMNS": "80"})
    (hit,) = hits_of(result.stdout)
    assert "bm25" in " ".join(hit) and "importance" in " ".join(hit)


# --- conflicts: paths whole at any width --------------------------------------------------------


EDITOR = BODY_EDITOR


def _conflict(tmp_path: Path) -> Cli:
    """A real conflict copy with a long path: one note edited on two stores, carried by zip."""
    laptop, desktop = Cli(tmp_path / "laptop", "a-rather-long-project-name"), Cli(tmp_path / "desktop")
    for cli in (laptop, desktop):
        cli.ok("init", str(cli.store))
    note = laptop.ok("add", "The session cache time to live on the frontend edge servers is sixty "
                     "seconds", "--json", env={"MEMCTL_NOW": "2026-11-01T00:00:00Z"}).json()["id"]
    laptop.ok("export", str(tmp_path / "one.zip"))
    desktop.ok("import", str(tmp_path / "one.zip"))
    script = tmp_path / "editor.py"
    script.write_text(EDITOR)
    for cli, body, now in ((laptop, "sixty", "2026-11-02T00:00:00Z"),
                           (desktop, "ninety", "2026-11-03T00:00:00Z")):
        cli.ok("edit", note, env={"EDITOR": f"{sys.executable} {script}", "NEW_BODY": body,
                                  "MEMCTL_NOW": now})
    desktop.ok("export", str(tmp_path / "two.zip"))
    laptop.ok("import", str(tmp_path / "two.zip"))
    return laptop


def _column(stdout: str, header: str, next_header: str) -> str:
    """The text of one column of a table, its folded lines joined."""
    lines = lines_of(stdout)
    rule = next(number for number, line in enumerate(lines) if line.strip().startswith("─"))
    heading = lines[rule - 1]
    start = re.search(rf"(?<!\S){re.escape(header)}(?!\S)", heading).start()
    end = re.search(rf"(?<!\S){re.escape(next_header)}(?!\S)", heading).start()
    return "".join(line[start:end].strip() for line in lines[rule + 1:])


@pytest.mark.parametrize("columns", [200, 120, 80])
def test_conflicts_shows_paths_whole_at_any_width(tmp_path: Path, columns: int) -> None:
    laptop = _conflict(tmp_path)
    (copy,) = laptop.ok("conflicts", "--json").json()
    assert len(copy["path"]) > 100
    result = run_memctl("conflicts", store=laptop.store, env={"COLUMNS": str(columns)})
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    # Each path whole on a line of its own (a terminal may wrap it; memctl never cuts it).
    assert f"   copy:    {copy['path']}" in lines
    assert f"   current: {copy['current']}" in lines
    assert len(lines) == 3 and lines[0].startswith(f"1  {copy['id']}  ")


# --- errors: one style -------------------------------------------------------------------------


@pytest.mark.parametrize("args", [
    ["add", "some text", "--bogus"],           # unknown option
    ["add"],                                   # missing argument
    ["list", "--sort", "sideways"],            # bad choice
    ["add", "x", "--importance", "11"],        # a value memctl's validators refuse
    ["nosuchcommand"],                         # unknown command
    ["--bogus", "list"],                       # unknown global option
    ["conflicts", "keep"],                     # missing argument of a subcommand
    ["project", "add", "decisions"],
], ids=lambda args: " ".join(args))
def test_usage_errors_are_one_plain_error_line(cli: Cli, args: list[str]) -> None:
    result = cli(*args)
    assert result.exit_code == 2
    assert result.stderr.startswith("error: ")
    assert not {"╭", "│", "╰"} & set(result.stderr + result.stdout)
    lines = result.stderr.splitlines()
    assert len(lines) <= 2 and all(line.startswith("hint: try 'memctl ") for line in lines[1:])


def test_usage_errors_of_the_installed_program(store_path: Path) -> None:
    for args in (["search", "x", "--type", "banana"], ["show"], ["health", "--strikt"]):
        result = run_memctl(*args, store=store_path)
        assert result.exit_code == 2 and result.stderr.startswith("error: "), args
        assert "╭" not in result.stderr and "Traceback" not in result.stderr
        assert result.stderr.splitlines()[-1] == f"hint: try 'memctl {args[0]} --help'"


@pytest.mark.parametrize("fast_path", [True, False], ids=["fast path", "typer app"])
@pytest.mark.parametrize(("args", "command"), [
    (["add", ""], "add"),                      # refused by memctl, not by the option parser
    (["add", "x", "--expires", "2020-01-01"], "add"),
    (["show", ""], "show"),
    (["search", ""], "search"),
    (["list", "--limit", "0"], "list"),
    (["project", "add", "decisions", ""], "project add"),
    (["scratch", "focus", ""], "scratch focus"),
    (["--store", "", "list"], "list"),
    # Raised by click's parser without a context: they had no hint line.
    (["search", "pool", "-n"], "search"),
    (["list", "--limit"], "list"),
    (["project", "add", "-p"], "project add"),
    (["search", "pool", "--json=1"], "search"),
    (["--store"], ""),
], ids=lambda value: " ".join(value) if isinstance(value, list) else "")
def test_every_usage_error_ends_with_the_hint_of_its_command(
        store_path: Path, args: list[str], command: str, fast_path: bool) -> None:
    """README, "Errors": bad usage exits 2 with a second line naming the command's --help,
    whether the option parser or memctl itself refuses it, on the fast path or not."""
    env = {} if fast_path else {"MEMCTL_NO_FAST_PATH": "1"}
    result = run_memctl(*args, store=store_path, env=env)
    assert result.exit_code == 2, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 2 and lines[0].startswith("error: "), result.stderr
    assert lines[1] == f"hint: try '{' '.join(['memctl', *command.split()])} --help'"


@pytest.mark.parametrize("env", [{"MEMCTL_NOW": "garbage"}, {"MEMCTL_PROJECT": "../up"}],
                         ids=["MEMCTL_NOW", "MEMCTL_PROJECT"])
def test_a_bad_variable_is_bad_usage_without_a_commands_hint(store_path: Path,
                                                            env: dict[str, str]) -> None:
    """No command's --help says how to set the environment: one line, still exit 2."""
    result = run_memctl("add", "x", store=store_path, env=env)
    assert result.exit_code == 2 and result.stderr.startswith("error: invalid value for MEMCTL_")
    assert result.error.count("\n") == 1


# --- help: examples ----------------------------------------------------------------------------


MAIN_COMMANDS = ["init", "add", "search", "recall", "get", "list", "show", "edit", "forget",
                 "sync", "health", "import", "export"]


def test_search_help_shows_examples() -> None:
    result = run_memctl("search", "--help", env={"COLUMNS": "120"})
    assert result.exit_code == 0
    assert "Examples:" in result.stdout and "memctl search postgres" in result.stdout


def test_every_command_has_examples_that_parse() -> None:
    """The README says `memctl COMMAND --help` ends with examples: every command's (a group's
    too: `memctl project --help`), each one accepted as the command line would be."""
    import typer

    from memctl.cli.app import app

    root = typer.main.get_command(app)
    names = [name for name, command in root.commands.items()  # type: ignore[attr-defined]
             if not command.hidden]
    assert set(MAIN_COMMANDS) <= set(names) and len(names) > len(MAIN_COMMANDS)
    for name in names:
        command = root.commands[name]  # type: ignore[attr-defined]
        assert command.epilog and "Examples:" in command.epilog, name
        if hasattr(command, "commands"):  # a group (typer bundles its own click: no isinstance)
            # Each of a group's commands too (`memctl scratch focus --help` had none).
            for sub_name, sub in command.commands.items():
                if sub.hidden:
                    continue
                assert sub.epilog and "Examples:" in sub.epilog, f"{name} {sub_name}"
                own = [line[line.index("memctl "):] for line in sub.epilog.split("\n")
                       if "memctl " in line]
                assert own and all(shlex.split(line)[2] == sub_name for line in own), own
                for line in own:  # each accepted as the command line would be
                    with root.make_context("memctl", [name]) as parent, \
                            command.make_context(name, [sub_name], parent=parent) as group:
                        sub.make_context(sub_name, shlex.split(line)[3:], parent=group)
        commands = [line[line.index("memctl "):] for line in command.epilog.split("\n")
                    if "memctl " in line]
        assert commands, name
        for line in commands:
            words = shlex.split(line)
            assert words[1] == name, line
            # parsed as the command line would be: every option and value is accepted
            with root.make_context("memctl", [name]) as parent:
                if hasattr(command, "commands") and len(words) > 2:
                    sub = command.commands[words[2]]
                    with command.make_context(name, [words[2]], parent=parent) as group:
                        sub.make_context(words[2], words[3:], parent=group)
                else:
                    command.make_context(name, words[2:], parent=parent)


def test_help_keeps_bracketed_words() -> None:
    """Typer reads help as rich markup, where `[mcp]` is a tag that vanishes: the install
    line must show the extra as the README writes it."""
    result = run_memctl("mcp", "--help", env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert "pip install 'memctl-md[mcp]'" in result.stdout


def test_every_help_text_shows_its_brackets(cli: Cli) -> None:
    """Every command's docstring and option help, as `--help` shows it, keeps each `[...]` it
    was written with (`- [11-30] …` of `memctl project add` too)."""
    import typer

    from memctl.cli.app import app

    def walk(command, path):
        yield path, command
        for name, sub in getattr(command, "commands", {}).items():
            yield from walk(sub, [*path, name])

    checked = 0
    for path, command in walk(typer.main.get_command(app), []):
        written = " ".join(t for t in [command.help, *(getattr(p, "help", None) for p in command.params)]
                           if t).replace("\\[", "[")
        brackets = re.findall(r"\[[^\]\[]*\]", written)
        if not brackets:
            continue
        shown = " ".join(cli(*path, "--help", env={"COLUMNS": "400"}).stdout.replace("│", " ").split())
        for bracket in brackets:
            assert bracket in shown, (path, bracket)
        checked += 1
    assert checked >= 2


# --- words that agree with the JSON ------------------------------------------------------------


def test_add_says_created_and_merged_like_its_json(cli: Cli) -> None:
    text = cli.ok("add", "The blog backend uses PostgreSQL 16; no ORM.")
    first = cli.ok("list", "--json").json()[0]
    assert text.stderr.startswith(f"created {first['id']}  ")
    again = cli.ok("add", "the blog backend uses PostgreSQL 16, no ORM", "--json").json()
    assert again["action"] == "merged"
    # (a dash standing alone is a symbol a merge keeps: docs/lifecycle.md)
    merged = cli.ok("add", "The blog backend uses PostgreSQL 16: no ORM")
    assert merged.stderr.startswith(f"merged into {first['id']}  ")


def test_health_counts_what_its_words_say(cli: Cli, tmp_path: Path) -> None:
    """A note only ever found by `search`, never recalled: health calls its count accesses
    (search hits and recalls), not recalls."""
    note = cli.ok("add", "Blue-green deploys need the load balancer drained first", "--json").json()
    cli.ok("search", "drained")
    report = cli.ok("health", "--json").json()
    (top,) = report["top_recalled"]
    assert (top["id"], top["accesses_30d"], top["recalls_30d"]) == (note["id"], 1, 1)
    text = run_memctl("health", store=cli.store, env={"COLUMNS": "120"}).stdout
    assert "recalled" not in text and "recalls" not in text
    heading = next(line for line in lines_of(text) if "most accessed" in line)
    assert "search or recall" in heading
    columns = lines_of(text)[lines_of(text).index(heading) + 1].split()
    row = next(line for line in lines_of(text) if line.startswith(note["id"]))
    assert columns[2] == "accesses" and row.split()[2] == "1"
    markdown = tmp_path / "report.md"
    cli.ok("health", "--markdown", str(markdown))
    written = markdown.read_text(encoding="utf-8")
    assert "Most accessed by search or recall" in written and "recalls" not in written
    shown = cli.ok("show", note["id"], env={"COLUMNS": "120"}).stdout
    assert "accessed 1 time (search hits and recalls)" in shown


@pytest.mark.parametrize("columns", [80, 120])
def test_health_shows_the_way_out_of_each_problem_whole_at_any_width(
        cli: Cli, columns: int) -> None:
    """The problem column of `health` ends with what to run (`memctl restore ID`): at 80
    columns it was cut to "superseded by 01zzzzzzzzzzzzzz, whi…", the command lost."""
    note = cli.ok("add", "Nightly backups run at 3am", "--json").json()
    path = cli.store / note["path"]
    path.write_text(path.read_text().replace(
        "status: active", "status: superseded\nsuperseded_by: 01zzzzzzzzzzzzzz", 1))
    (entry,) = cli.ok("health", "--json").json()["supersession"]
    text = run_memctl("health", store=cli.store, env={"COLUMNS": str(columns)}).stdout
    assert_fits(text, columns)
    lines = lines_of(text)
    heading = next(n for n, line in enumerate(lines)
                   if line.strip().startswith("supersessions that"))
    start = lines[heading + 1].index("problem")
    rows = []
    for line in lines[heading + 3:]:
        if not (line.startswith(note["id"]) or line.startswith(" ")):
            break
        rows.append(line[start:].strip())
    assert " ".join(rows) == entry["message"]
    assert f"`memctl restore {note['id']}`" in entry["message"]


# --- what a terminal would act on is shown, never sent (docs/security.md) --------------------

_HOSTILE = ("Innocent \x1b]0;PWNED-TITLE\x07title \x1b[2J\x1b[31mRED kwesc \x9b6n "
            "\u202eevil\u202c \x7f bell\x07 cr\rover")
_RAW = ("\x1b", "\x07", "\x9b", "\u202e", "\u202c", "\x7f", "\r")


def test_control_characters_in_notes_reach_no_terminal_raw_and_json_stays_exact(
        store_path: Path) -> None:
    folder = store_path / "p" / "notes" / "fact"
    folder.mkdir(parents=True)
    (folder / "e.md").write_text(f'---\nid: esc1\ntags: ["t\\e[5m", "[/]"]\n'
                                 f'subject: "[bold red]s"\n---\n{_HOSTILE}\n',
                                 encoding="utf-8", newline="")
    (store_path / "p" / "SCRATCHPAD.md").write_text(f"# p\n\n## Focus\n{_HOSTILE}\n",
                                                    encoding="utf-8", newline="")
    (store_path / "p" / "MEMORY.md").write_text(f"# p\n\n## Decisions\n- {_HOSTILE}\n",
                                                encoding="utf-8", newline="")
    for command in (["list", "-p", "p"], ["search", "kwesc", "-p", "p"], ["show", "esc1"],
                    ["recall", "kwesc", "-p", "p"], ["project", "show", "-p", "p"],
                    ["get", "nothing", "-p", "p"], ["list", "-p", "p", "--tag", "nope"],
                    ["scratch", "show", "-p", "p"], ["health"], ["health", "--markdown", "-"]):
        said = run_memctl(*command, store=store_path, env={"COLUMNS": "300"})
        for raw in _RAW:
            assert raw not in said.stdout + said.stderr, (command, raw, said.stdout)
    shown = run_memctl("show", "esc1", store=store_path).stdout
    assert "tags t\\x1b[5m, [/]" in shown and "subject [bold red]s" in shown  # never markup
    assert "\\x1b]0;PWNED-TITLE\\x07title \\x1b[2J" in shown and "\\u202eevil" in shown
    assert "\\x9b6n" in shown and "cr\\x0dover" in shown
    data = run_memctl("show", "esc1", "--json", store=store_path)
    assert json.loads(data.stdout)["body"] == _HOSTILE + "\n"
    assert json.loads(data.stdout)["tags"] == ["t\x1b[5m", "[/]"]
    assert "\x9b" not in data.stdout and "\u202e" not in data.stdout and "\x1b" not in data.stdout


# --- --json: exactly json.dumps(indent=2), written faster ------------------------------------

_JSON_SCALARS = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True)
                 | st.text(alphabet=st.characters(codec="utf-8") | st.sampled_from(
                     "\x7f\x85\x9b\u202a\u202e\u2066\u2069\n\"\\")))
_JSON_KEYS = st.text(max_size=8) | st.integers() | st.floats() | st.booleans() | st.none()
_JSON_DATA = st.recursive(_JSON_SCALARS, lambda inner: (
    st.lists(inner, max_size=5) | st.lists(inner, max_size=5).map(tuple)
    | st.dictionaries(_JSON_KEYS, inner, max_size=5)), max_leaves=40)


def _emitted(data: object) -> str:
    """What `emit_json` writes on stdout for `data`."""
    import io

    from memctl.cli import output

    written = io.StringIO()
    real, sys.stdout = sys.stdout, written
    try:
        output.emit_json(data)
    finally:
        sys.stdout = real
    return written.getvalue()


@settings(max_examples=400)
@given(_JSON_DATA)
def test_json_output_is_exactly_json_dumps_with_indent_two(data: object) -> None:
    """`emit_json` writes lists and dicts of scalars with json's encoder in C (its separators
    carry the line breaks): the document is still byte for byte json.dumps(indent=2), with
    only the characters a terminal would act on escaped (docs/security.md)."""
    expected = json.dumps(data, ensure_ascii=False, indent=2, default=str)
    expected = re.sub("[\x7f-\x9f\u202a-\u202e\u2066-\u2069]",
                      lambda found: f"\\u{ord(found.group()):04x}", expected) + "\n"
    assert _emitted(data) == expected


def test_json_output_writes_what_json_cannot_encode_as_its_text() -> None:
    from datetime import date
    from pathlib import PurePosixPath

    data = {"when": date(2026, 12, 3), "where": [PurePosixPath("a/b"), {"deep": {1, 2} - {2}}]}
    assert _emitted(data) == json.dumps(data, ensure_ascii=False, indent=2, default=str) + "\n"


def _into_a_closed_pipe(*args: str, store: Path) -> tuple[int, str]:
    """The installed memctl writing into a pipe nobody reads any more (`| head -1` gone)."""
    import os
    import subprocess

    from conftest import memctl_executable

    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run([memctl_executable(), *args], stdout=write_end,
                              stderr=subprocess.PIPE, text=True, timeout=60,
                              env={**os.environ, "MEMCTL_STORE": str(store),
                                   "MEMCTL_PROJECT": "demo"})
    finally:
        os.close(write_end)
    return done.returncode, done.stderr


def test_a_closed_pipe_ends_every_layout_quietly_with_the_same_code(cli: Cli) -> None:
    """`memctl list | head -1`: output laid out by rich (a table, a note's panel, help-less
    search hits with characters rich measures) ended with exit 1 (rich's own SystemExit),
    the same output written plainly (`--json`, search hits of plain text) with 0. Every
    layout now ends as `run_command` ends a closed pipe: quietly, 0."""
    plain = cli.ok("add", "The kiosk serves espresso", "--json").json()["id"]
    cli.ok("add", "\u4e2d\u6587 espresso \U0001f469\u200d\U0001f467 note")
    for args in (["list"], ["list", "--json"], ["show", plain], ["show", plain, "--json"],
                 ["search", "espresso"], ["search", "espresso", "--json"], ["health"]):
        code, err = _into_a_closed_pipe(*args, store=cli.store)
        assert code == 0 and "Traceback" not in err and "error" not in err, (args, code, err)


@pytest.mark.parametrize("closed", [">&-", "2>&-"])
def test_a_closed_stdout_or_stderr_is_no_traceback_and_loses_no_output(
        cli: Cli, tmp_path: Path, closed: str) -> None:
    """`memctl list --json >&-`: Python makes a closed stream None, and memctl's first write
    to it was an AttributeError traceback (exit 1); with stderr closed, `list` ended 1 after
    printing everything and `get` printed nothing, its line on stderr coming first. The
    closed stream is now held on /dev/null: the other one gets all its output, exit 0."""
    import os
    import subprocess

    from conftest import memctl_executable

    note = cli.ok("add", "The kiosk serves espresso", "--subject", "kiosk", "--predicate",
                  "drink", "--json").json()["id"]
    out = tmp_path / "out.txt"
    for args in (["list", "--json"], ["list"], ["search", "espresso", "--json"],
                 ["show", note, "--json"], ["get", "kiosk", "drink"], ["health", "--json"]):
        other = "2>" if closed == ">&-" else ">"
        done = subprocess.run(["sh", "-c", f'exec "$@" {closed} {other}"{out}"', "sh",
                               memctl_executable(), *args], capture_output=True, text=True,
                              timeout=60, env={**os.environ, "MEMCTL_STORE": str(cli.store),
                                               "MEMCTL_PROJECT": "demo"})
        written = out.read_text(encoding="utf-8")
        assert done.returncode == 0 and "Traceback" not in written, (args, written)
        if closed == "2>&-":
            assert "espresso" in written, (args, written)


@pytest.mark.parametrize("columns", [20, 21, 22])
def test_search_hits_in_a_narrow_terminal_skip_no_text_between_their_lines(
        store_path: Path, columns: int) -> None:
    """Below 23 columns the hit's text was wrapped 20 cells wide beside a 3-cell margin: each
    line was cut at the terminal's edge with "…", and the next line went on after what the
    cut dropped (`部…` then `记…`: `署笔` lost). Each line now holds what the margin leaves,
    and the lines read on from one another."""
    title = "\u4e2d\u6587\u5bbd\u5b57\u7b26\u6d4b\u8bd5\u90e8\u7f72\u7b14\u8bb0\uff0c\u8fd9\u662f\u4e00\u4e2a\u5f88\u957f\u7684\u53e5\u5b50\u7528\u6765\u6d4b\u8bd5"
    assert run_memctl("add", title, store=store_path).exit_code == 0
    result = run_memctl("search", "\u90e8\u7f72", store=store_path, env={"COLUMNS": str(columns)})
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert all(cell_len(line) <= columns for line in lines), lines
    text = "".join(line.strip().rstrip("\u2026").strip() for line in lines[1:3])
    assert title.startswith(text) and len(text) >= 10, lines


@pytest.mark.parametrize("args", [["--help"], ["add", "--help"], ["search", "--help"],
                                  ["scratch", "--help"], ["--version"]])
def test_help_into_a_closed_pipe_ends_quietly_with_zero(cli: Cli, args: list[str]) -> None:
    """`memctl --help | head -1` ended with exit 1: click, which prints the help, ends a
    closed pipe so. memctl ends it as every command's output does: quietly, 0."""
    code, err = _into_a_closed_pipe(*args, store=cli.store)
    assert code == 0 and "Traceback" not in err and "error" not in err, (args, code, err)
