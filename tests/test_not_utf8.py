"""Text that is not UTF-8 (`é` typed in a Latin-1 terminal reaches Python as a lone surrogate,
as does a JSON `"\\udce9"`) is refused where it comes in, with one line naming what it was
and exit 2, before anything is read or written: no index query or file can hold it
(memctl.core.arguments.utf8_text). It once made a traceback of `search`, `add`, `recall`
and `scratch note`."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import memctl_executable, run_memctl

from memctl.core import arguments
from memctl.core.errors import UsageError

LATIN1_E = "caf\udce9"  # the bytes `caf\xe9` of argv, as Python decodes them


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(path.relative_to(root)): path.read_bytes() for path in sorted(root.rglob("*"))
            if path.is_file() and ".memctl" not in path.parts and ".git" not in path.parts}


def head(root: Path) -> str:
    return subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()


@pytest.mark.parametrize(("args", "what"), [
    (("search", LATIN1_E), "search query"),
    (("search", f"{LATIN1_E} in March", "--json"), "search query"),
    (("recall", f"{LATIN1_E} deploy"), "search query"),
    (("add", f"{LATIN1_E} is closed on Mondays"), "note text"),
    (("add", "The café is closed on Mondays", "--tags", LATIN1_E), "tag"),
    (("add", "A fact", "--subject", LATIN1_E, "--predicate", "opens"), "subject"),
    (("scratch", "note", LATIN1_E), "text"),
    (("project", "add", "Decisions", LATIN1_E), "text"),
    (("episode", "add", "--goal", LATIN1_E, "--outcome", "completed"), "goal"),
    (("episode", "add", "--goal", "g", "--outcome", "completed", "--step", LATIN1_E), "step"),
    (("search", "deploy", "--tag", LATIN1_E), "tag"),
])
def test_text_that_is_not_utf8_is_refused_in_one_line_and_nothing_changes(
        sample_store: Path, args: tuple[str, ...], what: str) -> None:
    before, commit = snapshot(sample_store), head(sample_store)
    result = run_memctl(*args, store=sample_store, project="blog-backend")
    assert result.exit_code == 2, result.stderr
    assert result.error.count("\n") == 1 and result.stderr.startswith(f"error: the {what} is not UTF-8")
    assert "byte 0xE9 at character 4" in result.stderr and "Traceback" not in result.stderr
    assert snapshot(sample_store) == before and head(sample_store) == commit


@pytest.mark.parametrize("args", [("log", LATIN1_E),
                                  ("episode", "add", "--goal", "g", "--outcome", "completed",
                                   "--link", LATIN1_E)])
def test_an_id_that_is_not_utf8_is_no_id(sample_store: Path, args: tuple[str, ...]) -> None:
    before, commit = snapshot(sample_store), head(sample_store)
    result = run_memctl(*args, store=sample_store, project="blog-backend")
    assert result.exit_code == 2, result.stderr
    assert result.error.count("\n") == 1 and "is not an id" in result.stderr
    assert snapshot(sample_store) == before and head(sample_store) == commit


def test_a_lone_surrogate_of_json_is_named_by_its_code_point() -> None:
    with pytest.raises(UsageError, match=r"not UTF-8 \(U\+D800 at character 2\)"):
        arguments.utf8_text("a\ud800", "search query")
    assert arguments.utf8_text("café 缓存", "search query") == "café 缓存"


def test_a_file_system_read_as_ascii_leaves_names_beyond_ascii_out_without_a_traceback(
        tmp_path: Path) -> None:
    """Python told that file names are ASCII (`LC_ALL=C PYTHONUTF8=0`): a UTF-8 name such as
    `café.md` reads as surrogate escapes, which is no text memctl keeps. The walk took it on
    its bytes, and `list` and `search` then ended in a traceback from SQLite; it is left out,
    as every other part of memctl leaves it out, and the rest is listed and found."""
    store = tmp_path / "store"
    assert run_memctl("init", str(store), store=store).exit_code == 0
    assert run_memctl("add", "The kiwi orchard note", store=store).exit_code == 0
    folder = store / "demo" / "notes" / "fact"
    (folder / "café.md").write_text("---\ntype: fact\n---\nA kiwi note with an accent\n",
                                    encoding="utf-8")
    ascii_names = {"LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}
    for args in (["list", "--json"], ["search", "kiwi", "--json"]):
        result = run_memctl(*args, store=store, env=ascii_names)
        assert result.exit_code == 0 and "Traceback" not in result.stderr, result.stderr
        assert [entry["title"] for entry in result.json()] == ["The kiwi orchard note"]
    # health said such a name "is not UTF-8 … rename it"; it is UTF-8, read here as ASCII.
    report = run_memctl("health", "--json", store=store, env=ascii_names).json()
    [unread] = [entry for entry in report["parse_errors"] if "caf" in entry["path"]]
    assert "the name is UTF-8, but this process reads file names as ASCII" in unread["message"]
    assert "PYTHONUTF8=1" in unread["message"] and "rename" not in unread["message"]


def _run_bytes(*args: str, store: Path, env: dict[str, str]) -> tuple[int, bytes, bytes]:
    """The installed memctl, its output as bytes (in Latin-1 they are no UTF-8)."""
    full = {**os.environ, "MEMCTL_STORE": str(store), "MEMCTL_PROJECT": "demo", **env}
    done = subprocess.run([memctl_executable(), *args], capture_output=True, env=full,
                          timeout=60)
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize("encoding", [{"LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"},
                                      {"PYTHONIOENCODING": "latin-1"}])
def test_a_terminal_that_cannot_show_a_notes_characters_gets_escapes_never_a_traceback(
        tmp_path: Path, encoding: dict[str, str]) -> None:
    """stdout in ASCII (`LC_ALL=C PYTHONUTF8=0`) or Latin-1: a note with an accent, an emoji
    or a table cut with "…" ended `show`, `list`, `search` and `recall` in a
    UnicodeEncodeError traceback, with nothing printed. What the stream cannot encode is
    written as an escape, and `--json` as JSON's own escapes: the same values."""
    store = tmp_path / "store"
    assert run_memctl("init", str(store), store=store).exit_code == 0
    # An ASCII title (its file's name: a name beyond ASCII is no file to such a memctl)
    text = ("Espresso prices " + "long " * 30 + "\nAt the caf\u00e9 it costs 3 \u20ac "
            "\U0001f469\u200d\U0001f467")
    added = run_memctl("add", text, "--json", store=store)
    assert added.exit_code == 0, added.stderr
    note_id = added.json()["id"]
    env = {**encoding, "COLUMNS": "70"}  # the title cut with "…"
    for args in (["show", note_id], ["list"], ["search", "espresso"], ["recall", "espresso"]):
        code, out, err = _run_bytes(*args, store=store, env=env)
        assert code == 0 and b"Traceback" not in err, (args, err)
        assert b"Espresso" in out
        code, out, err = _run_bytes(*args, "--json", store=store, env=env)
        assert code == 0 and b"Traceback" not in err, (args, err)
        assert out.isascii() and json.loads(out)
    found = json.loads(_run_bytes("search", "espresso", "--json", store=store, env=env)[1])
    assert [hit["id"] for hit in found] == [note_id]
    shown = json.loads(_run_bytes("show", note_id, "--json", store=store, env=env)[1])
    assert shown["body"].strip() == text.strip()


def test_show_of_a_note_named_beyond_ascii_in_an_ascii_locale_is_one_error_line(
        tmp_path: Path) -> None:
    """A note whose file name is beyond ASCII (memctl names `Café hours` `café-hours-….md`),
    indexed as usual, then asked for by `show` or `log` with `LC_ALL=C PYTHONUTF8=0`: the
    indexed path could not be encoded for `lstat`, a UnicodeEncodeError traceback. Such a
    memctl leaves the file out, as `list` and `search` do: one `error:` line."""
    store = tmp_path / "store"
    assert run_memctl("init", str(store), store=store).exit_code == 0
    added = run_memctl("add", "Caf\u00e9 hours are nine to five", "--json", store=store)
    note_id = added.json()["id"]
    assert "caf\u00e9" in added.json()["path"]
    ascii_names = {"LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}
    for args in (["show", note_id], ["show", note_id, "--json"], ["log", note_id]):
        code, out, err = _run_bytes(*args, store=store, env=ascii_names)
        assert b"Traceback" not in err, (args, err)
        assert code in (0, 1) and (code == 0 or err.startswith(b"error: ")), (args, err)
