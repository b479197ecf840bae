"""`memctl scratch`: working memory that moves with the task and stays pleasant to edit."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from conftest import git, tree_snapshot
from hypothesis import given, settings
from hypothesis import strategies as st

from memctl.core.errors import MemctlError, UsageError
from memctl.memory import scratchpad

NOW = {"MEMCTL_NOW": "2026-11-30T12:34:00Z"}
WHEN = datetime(2026, 11, 30, 12, 34, tzinfo=UTC)


def test_a_task_end_to_end(cli, store_path):
    cli.ok("scratch", "focus", "Make recall respect the budget", env=NOW)
    cli.ok("scratch", "question", "Should episodes be recalled?", env=NOW)
    for step in ("write the budget tests", "cut notes on word boundaries", "wire the CLI"):
        cli.ok("scratch", "next", step, env=NOW)
    cli.ok("scratch", "done", "2", env=NOW)
    cli.ok("scratch", "note", "FTS5 trigram is too slow here", env=NOW)
    data = cli.ok("scratch", "show", "--json").json()
    assert data["focus"] == "Make recall respect the budget"
    assert data["questions"] == ["Should episodes be recalled?"]
    assert data["next"] == ["write the budget tests", "wire the CLI"]
    assert data["done"] == ["cut notes on word boundaries"]
    assert data["notes"] == ["FTS5 trigram is too slow here"]

    text = (store_path / "demo" / "SCRATCHPAD.md").read_text()
    stamp = scratchpad.time_stamp(WHEN)
    # Numbered steps renumbered after one moved; done and notes carry the time.
    assert "1. write the budget tests\n2. wire the CLI\n" in text
    assert f"- [x] [{stamp}] cut notes on word boundaries" in text
    assert f"- [{stamp}] FTS5 trigram is too slow here" in text
    assert cli.ok("scratch", "show").stdout == text
    assert git(store_path, "status", "--porcelain") == ""
    assert "scratch demo: note:" in git(store_path, "log", "-1", "--format=%s")


def test_done_by_words_and_focus_replaces(cli):
    cli.ok("scratch", "focus", "first")
    cli.ok("scratch", "focus", "second")
    cli.ok("scratch", "next", "Write docs/agents.md")
    cli.ok("scratch", "next", "Register the MCP server")
    cli.ok("scratch", "done", "mcp server")
    data = cli.ok("scratch", "show", "--json").json()
    assert data["focus"] == "second"
    assert data["next"] == ["Write docs/agents.md"]
    assert data["done"] == ["Register the MCP server"]


def test_done_errors(cli, store_path):
    cli.ok("scratch", "next", "write tests for recall")
    cli.ok("scratch", "next", "write tests for mcp")
    result = cli("scratch", "done", "7")
    assert result.exit_code == 1 and "no next step 7" in result.stderr  # as words (docs/agents.md)
    result = cli("scratch", "done", "write tests")
    assert result.exit_code == 1 and "several" in result.stderr
    # Text that is no next step is an error, not a made-up Done item (a typo would be one).
    before = tree_snapshot(store_path)
    commits = git(store_path, "rev-list", "--count", "HEAD")
    result = cli("scratch", "done", "fixed a flaky test")
    assert result.exit_code == 1 and result.error.count("\n") == 1
    assert result.stderr.startswith("error: 'fixed a flaky test' is not one of the next steps")
    assert "`memctl scratch note`" in result.stderr
    assert tree_snapshot(store_path) == before
    assert git(store_path, "rev-list", "--count", "HEAD") == commits
    assert cli.ok("scratch", "show", "--json").json()["done"] == []
    # `²` is a digit to str.isdigit but no number: words that match no step, not a traceback.
    for command, ref in (("done", "²"), ("resolve", "²"), ("done", "9" * 5000)):
        odd = cli("scratch", command, ref)
        assert odd.exit_code == 1 and odd.error.count("\n") == 1, odd.stderr
        assert odd.stderr.startswith("error: '") and "is not one of the" in odd.stderr
        assert "Traceback" not in odd.stderr
    assert tree_snapshot(store_path) == before


def test_hand_edits_survive_every_command(cli, store_path):
    hand = (
        "# 草稿\r\n\r\nMy own preamble, kept.\r\n\r\n## 当前焦点\r\n旧的焦点\r\n\r\n"
        "## 下一步\r\n- [ ] 看日志\r\n  (continuation)\r\n- [ ] 修复\r\n\r\n"
        "## Random section\r\nkeep\r\n"
    )
    path = store_path / "demo" / "SCRATCHPAD.md"
    path.parent.mkdir(parents=True)
    path.write_bytes(hand.encode())
    cli.ok("scratch", "focus", "新的焦点", env=NOW)
    cli.ok("scratch", "done", "1", env=NOW)
    cli.ok("scratch", "next", "写测试", env=NOW)
    text = path.read_bytes().decode()
    stamp = scratchpad.time_stamp(WHEN)
    assert text.startswith(
        "# 草稿\r\n\r\nMy own preamble, kept.\r\n\r\n## 当前焦点\r\n新的焦点\r\n\r\n"
    )
    assert "## 下一步\r\n- [ ] 修复\r\n- [ ] 写测试\r\n\r\n## Random section\r\nkeep\r\n" in text
    # The missing Done section is added in the file's language.
    assert text.endswith(f"keep\r\n\r\n## 已完成\r\n- [x] [{stamp}] 看日志\r\n  (continuation)\r\n")
    data = cli.ok("scratch", "show", "--json").json()
    assert data["focus"] == "新的焦点"
    assert data["next"] == ["修复", "写测试"]


def test_clear_empties_and_can_archive_an_episode(cli, store_path):
    cli.ok("scratch", "focus", "Ship the MCP server")
    cli.ok("scratch", "next", "list tools")
    cli.ok("scratch", "done", "1")
    cli.ok("scratch", "note", "stdio client works")
    cli.ok("scratch", "question", "streamable http later?")
    result = cli("scratch", "clear", "--archive")
    assert result.exit_code == 2 and "--outcome" in result.stderr  # no default outcome
    data = cli.ok("scratch", "clear", "--archive", "--outcome", "completed", "--json").json()
    episode = data["episode"]
    assert episode["goal"] == "Ship the MCP server"
    assert episode["outcome"] == "completed"
    assert [s["action"] for s in episode["steps"]] == ["list tools"]
    body = (store_path / episode["path"]).read_text()
    assert "stdio client works" in body and "streamable http later?" in body
    after = cli.ok("scratch", "show", "--json").json()
    assert after["focus"] == "" and after["done"] == [] and after["exists"] is True
    log = git(store_path, "log", "-1", "--name-only", "--format=%s")
    assert "SCRATCHPAD.md" in log and episode["path"] in log  # one commit for both
    head = git(store_path, "rev-parse", "HEAD")
    again = cli.ok("scratch", "clear", "--json").json()  # already the template: no change
    assert again["changed"] is False and again["message"] == "the scratchpad is already empty"
    assert git(store_path, "rev-parse", "HEAD") == head
    assert git(store_path, "status", "--porcelain") == ""


def test_a_template_that_cannot_be_read_stops_clear_archive_before_the_episode(
        cli, store_path, tmp_path):
    """The template was read after the episode was written: the clear failed with the
    episode on disk and uncommitted, and the retry made a second one."""
    cli.ok("scratch", "focus", "Doing Y")
    cli.ok("scratch", "next", "step")
    cli.ok("scratch", "done", "1")
    template = store_path / ".templates" / "SCRATCHPAD.md"
    moved = tmp_path / "SCRATCHPAD.md"
    template.rename(moved)
    template.symlink_to(moved)  # a link memctl refuses to follow
    git(store_path, "add", "-A")
    git(store_path, "commit", "-qm", "template linked by hand")
    before, head = tree_snapshot(store_path), git(store_path, "rev-parse", "HEAD")
    result = cli("scratch", "clear", "--archive", "--outcome", "completed")
    assert result.exit_code == 1 and result.error.count("\n") == 1, result.stderr
    assert tree_snapshot(store_path) == before
    assert git(store_path, "rev-parse", "HEAD") == head
    assert git(store_path, "status", "--porcelain") == ""
    template.unlink()
    moved.rename(template)
    git(store_path, "commit", "-qam", "template back")
    cli.ok("scratch", "clear", "--archive", "--outcome", "completed")
    assert len(cli.ok("episode", "list", "--json").json()) == 1


def test_archiving_a_focus_over_the_front_matter_limit_is_one_error_and_changes_nothing(
        cli, store_path):
    """The focus becomes the episode's goal, a front matter field: 70 KB of it is refused in
    one line saying the limit and how to archive anyway, the scratchpad kept (docs/format.md)."""
    cli.ok("scratch", "focus", "f" * 70_000)
    before = tree_snapshot(store_path)
    result = cli("scratch", "clear", "--archive", "--outcome", "completed")
    assert result.exit_code == 1, result.stderr
    assert result.stderr.startswith("error: ") and result.error.count("\n") == 1
    assert "64 KB" in result.stderr and "--goal" in result.stderr
    assert tree_snapshot(store_path) == before
    result = cli("scratch", "clear", "--archive", "--outcome", "completed", "--goal", "x" * 70_000)
    assert result.exit_code == 1 and "64 KB" in result.stderr and "Traceback" not in result.stderr
    assert tree_snapshot(store_path) == before
    data = cli.ok("scratch", "clear", "--archive", "--outcome", "completed", "--goal", "Ship",
                  "--json").json()
    assert data["episode"]["goal"] == "Ship"


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc to see the wait")
def test_clear_archive_keeps_a_note_written_while_it_waited_for_the_lock(cli, store_path):
    """`clear --archive` read the scratchpad before it waited for the store lock: a note
    written meanwhile (a `scratch note` that got the lock first) was in neither the episode
    nor the cleared file."""
    from conftest import memctl_executable

    from memctl.disk.locking import store_lock

    cli.ok("scratch", "focus", "Ship the release")
    cli.ok("scratch", "note", "first note")
    with store_lock(store_path, "scratch note"):
        clear = subprocess.Popen([memctl_executable(), "--store", str(store_path), "scratch",
                                  "clear", "--archive", "--outcome", "completed", "--json"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 env={**os.environ, "MEMCTL_PROJECT": "demo"})
        deadline = time.monotonic() + 60
        while not _waits_for_the_lock(clear.pid, store_path) and time.monotonic() < deadline:
            time.sleep(0.01)  # until it waits for the lock (the folder's flock)
        assert _waits_for_the_lock(clear.pid, store_path)
        # What the holder writes before it lets go: the note a concurrent command adds.
        path = store_path / "demo" / "SCRATCHPAD.md"
        path.write_text(scratchpad.add_note(path.read_text(), "second note", WHEN))
    out, err = clear.communicate(timeout=60)
    assert clear.returncode == 0, err
    body = (store_path / json.loads(out)["episode"]["path"]).read_text()
    assert "first note" in body and "second note" in body


def _waits_for_the_lock(pid: int, store: Path) -> bool:
    for entry in Path(f"/proc/{pid}/fd").iterdir():
        try:
            if os.readlink(entry) == str(store):
                return True
        except OSError:
            pass
    return False


def test_a_guiding_comment_over_several_lines_in_focus_is_no_focus_and_stays(cli, store_path):
    """A comment of two lines under `## Focus` (as a store's own template may have) was read
    as the focus, archived as an episode's goal from a scratchpad with nothing in it, and
    replaced by `scratch focus`."""
    path = store_path / "demo" / "SCRATCHPAD.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    comment = "<!-- One paragraph: what we are doing\n     right now, and why. -->\n"
    path.write_text("# Scratchpad\n\n## Focus\n" + comment + "\n## Notes\n")
    assert cli.ok("scratch", "show", "--json").json()["focus"] == ""
    result = cli("scratch", "clear", "--archive", "--outcome", "completed")
    assert result.exit_code == 1 and "the scratchpad is empty" in result.stderr
    cli.ok("scratch", "focus", "Ship the release")
    cli.ok("scratch", "focus", "Ship the release, again")
    assert comment + "Ship the release, again\n" in path.read_text()
    assert cli.ok("scratch", "show", "--json").json()["focus"] == "Ship the release, again"


def test_clear_archive_takes_allow_secret_for_what_the_scratchpad_was_allowed(cli, store_path):
    """A step written with --allow-secret becomes a step of the archived episode, which meets
    the secret guard: the refusal advises --allow-secret, so `scratch clear` takes it (and MCP
    `update_scratchpad`'s allow_secret reaches it); before, the option did not exist and the
    MCP argument was dropped, so the scratchpad could not be archived at all."""
    key = "AKIA" + "Q7R2T5V8X1Z4B6D9"
    cli.ok("scratch", "next", f"rotate {key}", "--allow-secret", env=NOW)
    cli.ok("scratch", "done", "1", env=NOW)
    before = tree_snapshot(store_path)
    refused = cli("scratch", "clear", "--archive", "--outcome", "completed", env=NOW)
    assert refused.exit_code == 1 and "pass --allow-secret" in refused.stderr
    assert tree_snapshot(store_path) == before
    cleared = cli.ok("scratch", "clear", "--archive", "--outcome", "completed", "--allow-secret",
                     "--json", env=NOW).json()
    episode = cli.ok("show", cleared["episode"]["id"], "--json").json()
    assert key in json.dumps(episode)
    from memctl.services import working
    from memctl.store import Store

    store = Store(store_path)  # the service MCP's update_scratchpad calls
    cli.ok("scratch", "focus", "next task", env=NOW)
    with pytest.raises(MemctlError, match="looks like it contains a secret"):
        working.scratchpad(store, "demo", "clear", archive=True, outcome="completed",
                           goal=f"rotate {key}")
    view = working.scratchpad(store, "demo", "clear", archive=True, outcome="completed",
                              goal=f"rotate {key}", allow_secret=True)
    assert view.episode is not None


def test_clear_options_only_with_archive(cli):
    cli.ok("scratch", "focus", "x")
    assert cli("scratch", "clear", "--outcome", "failed").exit_code == 2


# --- the pure model --------------------------------------------------------------------------


def test_model_functions_on_an_empty_text():
    text = scratchpad.add_next("", "one")
    text = scratchpad.add_next(text, "two")
    assert text == "## Next steps\n1. one\n2. two\n"
    text, step = scratchpad.mark_done(text, "1", WHEN)
    assert step == "one"
    assert text.startswith("## Next steps\n1. two\n")
    with pytest.raises(UsageError):
        scratchpad.set_focus(text, "   ")
    with pytest.raises(MemctlError, match="no next step 0"):
        scratchpad.mark_done(text, "0", WHEN)


def test_renumbering_handles_two_digit_numbers():
    text = "".join(scratchpad.add_next("", "s0") for _ in range(1))
    for i in range(1, 12):
        text = scratchpad.add_next(text, f"s{i}")
    text, step = scratchpad.mark_done(text, "1", WHEN)
    assert step == "s0"
    assert [i.text for i in scratchpad.items(text, "next")] == [f"s{i}" for i in range(1, 12)]
    assert "10. s10\n11. s11\n" in text


def test_a_wider_number_takes_what_is_nested_under_its_step_along():
    # A list numbered `1.` throughout: `done 1` numbers it 1..10, and the eleventh step's
    # `1.` becomes `10.`; its sub-list, indented to the old step's text (3 spaces), would be
    # a step of its own under the wider marker unless it moves along.
    steps = "".join(f"1. step {i}\n" for i in range(1, 11))
    text = ("## Next steps\n" + steps + "1. step 11\n   - sub of 11\n   more of 11\n"
            "  lazy line\n\n## Done\n")
    text, step = scratchpad.mark_done(text, "1", WHEN)
    assert step == "step 1"
    assert [item.text for item in scratchpad.items(text, "next")][-2:] == [
        "step 10", "step 11 - sub of 11 more of 11 lazy line"]
    assert "9. step 10\n10. step 11\n    - sub of 11\n    more of 11\n  lazy line\n" in text


def test_a_narrower_number_keeps_what_is_nested_under_its_step_aligned():
    text = "## Next steps\n" + "".join(f"{i}. step {i}\n" for i in range(1, 10))
    text += "10. step 10\n    1. first part\n\n## Done\n"
    text, _step = scratchpad.mark_done(text, "1", WHEN)
    assert "8. step 9\n9. step 10\n   1. first part\n" in text
    assert scratchpad.items(text, "next")[-1].text == "step 10 1. first part"


def test_ambiguous_words_name_the_candidates():
    text = scratchpad.add_next(scratchpad.add_next("", "fix login"), "fix logout")
    with pytest.raises(MemctlError, match="1. fix login; 2. fix logout"):
        scratchpad.find_step(text, "fix")


# --- property: moving a step loses nothing ----------------------------------------------------

_NUMBER = re.compile(r"^(\s*)\d+([.)])")
_scratch_line = st.one_of(
    st.sampled_from([
        "## Next steps", "## 下一步", "## Done", "## Notes", "## Focus", "# Title", "1. alpha",
        "2. beta", "- gamma", "- [ ] delta", "  continued", "", "```", "text", "10. ten",
    ]),
    st.text(alphabet="ab 数-.[]x", max_size=12),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_scratch_line, max_size=16), st.integers(min_value=1, max_value=6),
       st.sampled_from(["\n", "\r\n"]))
def test_done_moves_a_step_and_keeps_every_other_line(lines, number, eol):
    text = eol.join(lines) + eol
    steps = scratchpad.items(text, "next")
    if number > len(steps):
        return
    step = steps[number - 1]
    moved = text[step.start:step.end].splitlines()
    result, _step_text = scratchpad.mark_done(text, str(number), WHEN)

    def normal(value: str) -> list[str]:
        return sorted(_NUMBER.sub(r"\1#\2", line) for line in value.splitlines() if line.strip())

    kept = normal(text)
    for line in normal("\n".join(moved)):
        kept.remove(line)
    remaining = normal(result)
    for line in kept:
        assert line in remaining, f"lost {line!r}"
        remaining.remove(line)
    # What is left over is the step, now in Done with its time.
    assert any("[x]" in line for line in remaining)
    first = moved[0].split(maxsplit=1)[1] if len(moved[0].split(maxsplit=1)) > 1 else ""
    first = re.sub(r"^\[[ xX]\]\s*", "", first).strip()
    assert first in result[result.index("[x]"):] or not first


# --- resolving a question; dates with the year -------------------------------------------------


def test_resolve_a_question_by_number_or_words(cli, store_path):
    cli.ok("scratch", "question", "Do we keep soft-deleted comments?", env=NOW)
    cli.ok("scratch", "question", "Which queue for the backfill?", env=NOW)
    cli.ok("scratch", "question", "Is the old API still called?", env=NOW)
    data = cli.ok("scratch", "resolve", "2", "--answer", "Redis streams", "--json", env=NOW).json()
    assert data["message"] == "resolved: Which queue for the backfill?"
    assert data["questions"] == ["Do we keep soft-deleted comments?", "Is the old API still called?"]
    assert data["notes"] == ["resolved: Which queue for the backfill? → Redis streams"]
    cli.ok("scratch", "resolve", "soft-deleted", env=NOW)  # words of it; no answer
    state = cli.ok("scratch", "show", "--json").json()
    assert state["questions"] == ["Is the old API still called?"]
    assert state["notes"][-1] == "resolved: Do we keep soft-deleted comments?"
    text = (store_path / "demo" / "SCRATCHPAD.md").read_text()
    assert f"- [{scratchpad.time_stamp(WHEN)}] resolved: Which queue" in text
    assert "resolved: Do we keep soft-deleted" in git(store_path, "log", "-1", "--format=%s")
    assert git(store_path, "status", "--porcelain") == ""


def test_resolving_what_is_not_a_question_changes_nothing(cli, store_path):
    cli.ok("scratch", "question", "Do we keep soft-deleted comments?")
    before = tree_snapshot(store_path)
    for ref, code, words in (("3", 1, "there is no open question 3"),
                             ("the weather", 1, "is not one of the open questions")):
        result = cli("scratch", "resolve", ref, "--answer", "yes")
        assert result.exit_code == code and result.error.count("\n") == 1, result.stderr
        assert words in result.stderr
    assert tree_snapshot(store_path) == before


def test_stamps_carry_the_year_and_old_stamps_still_read(cli, store_path):
    assert scratchpad.time_stamp(WHEN) == WHEN.astimezone().strftime("%Y-%m-%d %H:%M")
    path = store_path / "demo" / "SCRATCHPAD.md"
    path.parent.mkdir(parents=True)
    path.write_text("## Done\n- [x] [11-29 09:12] Drafted the schema\n\n"
                    "## Notes\n- [11-29] The old table has 1.2M rows.\n")
    cli.ok("scratch", "next", "Backfill counts", env=NOW)
    cli.ok("scratch", "done", "1", env=NOW)
    cli.ok("scratch", "note", "Backfill took 40 s", env=NOW)
    data = cli.ok("scratch", "show", "--json").json()
    assert data["done"] == ["Drafted the schema", "Backfill counts"]
    assert data["notes"] == ["The old table has 1.2M rows.", "Backfill took 40 s"]
    year = WHEN.astimezone().strftime("%Y")
    assert re.search(rf"^- \[x\] \[{year}-\d\d-\d\d \d\d:\d\d\] Backfill counts$", path.read_text(), re.M)
    assert re.search(rf"^- \[{year}-\d\d-\d\d \d\d:\d\d\] Backfill took 40 s$", path.read_text(), re.M)


# Lines a written text may hold that read as structure in Markdown: headings (of the file's
# own sections too), fences, comments, list items, escapes, indents (docs/format.md, "Text
# inside a section").
_TRICKY_LINE = st.one_of(
    st.sampled_from([
        "## Done", "## Next steps", "# Focus", "### Notes", "  ## Open questions", "##",
        "```", "~~~", "```python", "<!-- a comment -->", "<!--", "-->", "- a dash item",
        "1. a numbered item", "  2) another", "* star", "+ plus", "\\## escaped already",
        "\\\\## twice", "\\- escaped dash", "\\```", "#hashtag", "", "   ", "\t## tabbed",
        "[x] checked", "[ ] open", "[2026-01-02 10:00] stamped", "[11-30] day", "\\[x] escaped",
    ]),
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc", "Zl", "Zp")),
            max_size=20),
)
_WRITTEN = st.lists(_TRICKY_LINE, min_size=1, max_size=6).map("\n".join).filter(
    lambda text: text.strip())


def _expected_item(text: str) -> str:
    return " ".join(line.strip() for line in text.splitlines() if line.strip())


def _headings(text: str) -> list[tuple[int, str]]:
    from memctl.core import sections

    return [(h.level, h.title) for h in sections.parse_headings(text)]


def _base() -> str:
    text = "# Scratchpad: demo\n\n## Focus\nold focus\n\n## Open questions\n- q1\n\n" \
           "## Next steps\n1. first\n2. second\n\n## Done\n- [x] [2026-11-30 10:00] zero\n\n" \
           "## Notes\n- [2026-11-30 10:01] n1\n"
    return text


@settings(max_examples=150, deadline=None)
@given(written=_WRITTEN, action=st.sampled_from(["focus", "question", "next", "note", "done"]))
def test_text_written_into_a_section_reads_back_as_given_and_leaves_the_others(
        written: str, action: str) -> None:
    before = _base()
    old = scratchpad.parse(before)
    if action == "focus":
        after = scratchpad.set_focus(before, written)
    elif action == "question":
        after = scratchpad.add_question(before, written)
    elif action == "next":
        after = scratchpad.add_next(before, written)
    elif action == "note":
        after = scratchpad.add_note(before, written, WHEN)
    else:
        after, _ = scratchpad.mark_done(scratchpad.add_next(before, written), "3", WHEN)
    new = scratchpad.parse(after)
    assert _headings(after) == _headings(before)
    expected = {
        "focus": "\n".join(line.strip() for line in written.splitlines() if line.strip()),
        "questions": [*old.questions, _expected_item(written)],
        "next": [*old.next, _expected_item(written)],
        "notes": [*old.notes, _expected_item(written)],
        "done": [*old.done, _expected_item(written)],
    }
    key = {"question": "questions", "note": "notes"}.get(action, action)
    for name in ("focus", "questions", "next", "done", "notes"):
        want = expected[name] if name == key else getattr(old, name)
        assert getattr(new, name) == want, (name, after)


def test_a_focus_with_a_heading_line_is_one_focus_and_archives_the_real_done_items(cli):
    cli.ok("scratch", "next", "Wrote migration 0061", env=NOW)
    cli.ok("scratch", "done", "1", env=NOW)
    cli.ok("scratch", "focus", "Ship threads\n## Done\n- nothing yet\n## Next steps\n- drop it",
           env=NOW)
    data = cli.ok("scratch", "show", "--json").json()
    assert data["focus"] == "Ship threads\n## Done\n- nothing yet\n## Next steps\n- drop it"
    assert data["done"] == ["Wrote migration 0061"] and data["next"] == []
    archived = cli.ok("scratch", "clear", "--archive", "--outcome", "partial", "--json",
                      env=NOW).json()
    episode = cli.ok("episode", "show", archived["episode"]["id"], "--json").json()
    assert [step["action"] for step in episode["steps"]] == ["Wrote migration 0061"]


def test_a_comment_opened_inside_written_text_hides_no_section_from_recall_or_search(cli):
    """`<!--` in the middle of a focus and `-->` in a later note: readers take a comment
    opened inside a line only up to the end of that line, so what lies between (the questions,
    the next steps) still reaches recall and search (memctl.core.sections.strip_comments)."""
    cli.ok("scratch", "focus", "fix the parser <!-- later", env=NOW)
    cli.ok("scratch", "next", "write the tests", env=NOW)
    cli.ok("scratch", "question", "is the memoization cache needed?", env=NOW)
    cli.ok("scratch", "note", "arrow syntax a --> b works", env=NOW)
    block = cli.ok("recall", "parser", env=NOW).stdout
    assert "write the tests" in block and "memoization cache needed" in block
    found = cli.ok("search", "memoization", "--json", env=NOW).json()
    assert any("SCRATCHPAD.md" in str(hit.get("path", "")) for hit in found), found


def test_an_item_that_starts_with_a_bracket_reads_back_as_given(cli):
    """A question, step or note whose text starts like memctl's own checkbox or stamp keeps
    it: the reader takes off only the checkbox and stamp memctl wrote."""
    cli.ok("scratch", "question", "[x] is the flag needed?", env=NOW)
    cli.ok("scratch", "next", "[2026-01-02 10:00] review deadline", env=NOW)
    cli.ok("scratch", "note", "[ ] is how a checkbox is typed", env=NOW)
    data = cli.ok("scratch", "show", "--json").json()
    assert data["questions"] == ["[x] is the flag needed?"]
    assert data["next"] == ["[2026-01-02 10:00] review deadline"]
    assert [note["text"] if isinstance(note, dict) else note for note in data["notes"]] == \
        ["[ ] is how a checkbox is typed"]


def test_a_bom_before_the_first_heading_is_read_as_usual_and_kept(cli, store_path):
    """SCRATCHPAD.md saved with a UTF-8 BOM: its first section was read as no section, so
    `scratch focus` added a second `## Focus` and `show` read neither as the focus. The BOM
    is read as usual and stays in the file (docs/format.md, as in MEMORY.md)."""
    pad = store_path / "demo" / "SCRATCHPAD.md"
    pad.parent.mkdir(parents=True, exist_ok=True)
    pad.write_bytes("\ufeff## Focus\nold focus\n\n## Next steps\n1. a\n".encode())
    cli.ok("scratch", "focus", "new focus", env=NOW)
    cli.ok("scratch", "next", "b", env=NOW)
    text = pad.read_text(encoding="utf-8")
    assert text == "\ufeff## Focus\nnew focus\n\n## Next steps\n1. a\n2. b\n", text
    data = cli.ok("scratch", "show", "--json").json()
    assert data["focus"] == "new focus" and data["next"] == ["a", "b"]
    recalled = cli.ok("recall", env=NOW).stdout
    assert recalled.count("## Focus") == 1 and "\ufeff" not in recalled, recalled


def test_a_step_with_steps_of_its_own_is_one_step_and_moves_whole(cli, store_path):
    """`1. write migration` then `   1. add column`: Markdown reads the second as an item of
    the first one's own list. They were steps of their own: `next` listed four, `done 1`
    left the sub-steps behind under the next step, and numbers went wrong."""
    folder = store_path / "demo"
    folder.mkdir(exist_ok=True)
    (folder / "SCRATCHPAD.md").write_text(
        "## Focus\nx\n\n## Next steps\n1. write migration\n   1. add column\n   2. backfill\n"
        "2. deploy\n\n## Done\n\n## Notes\n", encoding="utf-8")
    assert cli.ok("scratch", "show", "--json").json()["next"] == [
        "write migration 1. add column 2. backfill", "deploy"]
    added = cli.ok("scratch", "next", "announce")
    assert "next step 3" in added.stdout + added.stderr
    cli.ok("scratch", "done", "1")
    text = (folder / "SCRATCHPAD.md").read_text(encoding="utf-8")
    assert "## Next steps\n1. deploy\n2. announce\n" in text
    next_steps, done = text.split("## Done\n", 1)
    assert "add column" not in next_steps and "backfill" not in next_steps
    # Still a list of its own, under the Done item as it was under the step.
    assert "] write migration\n  1. add column\n  2. backfill\n" in done


def test_the_same_focus_again_changes_nothing_and_says_so(cli, store_path):
    cli.ok("scratch", "focus", "Fix the pool timeout")
    head = git(store_path, "rev-parse", "HEAD")
    again = cli.ok("scratch", "focus", "Fix the pool timeout", "--json").json()
    assert again["changed"] is False and git(store_path, "rev-parse", "HEAD") == head
    said = cli.ok("scratch", "focus", "Fix the pool timeout")
    assert "unchanged" in said.stdout + said.stderr
    assert cli.ok("scratch", "focus", "Something else", "--json").json()["changed"] is True


def test_a_scratchpad_grown_past_1_mb_by_hand_can_still_be_worked_down(cli, store_path):
    """A scratchpad over 1 MB (grown by hand or by a sync): `done` and `resolve`, which make
    it no larger, work; a note that would make it larger is refused as the file's state
    (exit 1, the way out named), not as bad usage of the argument (exit 2 and a help hint)."""
    cli.ok("scratch", "next", "ship the release", env=NOW)
    cli.ok("scratch", "question", "who signs it?", env=NOW)
    path = store_path / "demo" / "SCRATCHPAD.md"
    path.write_text(path.read_text() + "\n## Notes\n\n" + "- filler line of a note\n" * 50_000)
    assert path.stat().st_size > 1024 * 1024
    cli.ok("scratch", "done", "1", env=NOW)
    cli.ok("scratch", "resolve", "1", "--answer", "the lead", env=NOW)
    refused = cli("scratch", "note", "one more", env=NOW)
    assert refused.exit_code == 1, refused.stderr
    assert "larger than 1024 KB" in refused.stderr and "scratch clear` with --archive" in refused.stderr
    assert "hint:" not in refused.stderr
