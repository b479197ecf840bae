"""memctl.toml: documented defaults, partial files, clear errors."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib

import pytest
from conftest import REPO, Cli, run_memctl
from hypothesis import given, settings
from hypothesis import strategies as st

from memctl.core.errors import MemctlError
from memctl.core.tomlkeys import MAX_KEY_PARTS, most_key_parts
from memctl.disk.settings import DEFAULTS, Settings, _simple_toml, default_toml


def test_init_writes_every_default_and_the_docs_show_the_same_text(store_path):
    written = (store_path / "memctl.toml").read_text()
    assert written == default_toml()
    assert tomllib.loads(written) == DEFAULTS
    assert default_toml() in (REPO / "docs" / "settings.md").read_text()


def test_a_partial_file_falls_back_to_defaults_and_changes_count(store_path):
    (store_path / "memctl.toml").write_text("[recall]\nmax_notes = 3\n")
    settings = Settings.load(store_path)
    assert settings.get("recall.max_notes") == 3
    assert settings.get("search.default_limit") == DEFAULTS["search"]["default_limit"]


def test_wrong_values_and_broken_files_are_named(store_path):
    (store_path / "memctl.toml").write_text('[recall]\nmax_notes = "many"\n')
    with pytest.raises(MemctlError, match="recall.max_notes"):
        Settings.load(store_path).get("recall.max_notes")
    (store_path / "memctl.toml").write_text("[recall\n")
    result = Cli(store_path)("add", "a note that needs the settings")
    assert result.exit_code == 1 and "memctl.toml does not parse" in result.stderr


@pytest.mark.parametrize(("text", "command", "said"), [
    ("search = 3\n", ("search", "postgres"), "memctl.toml: search must be a table of settings"),
    ('ttl = "x"\n', ("health",), "memctl.toml: ttl must be a table of settings"),
    ("recall = []\n", ("recall",), "memctl.toml: recall must be a table of settings"),
    ("[search]\ndefault_limit = 1.5\n", ("search", "postgres"),
     "memctl.toml: search.default_limit must be a whole number, not 1.5"),
    ("[recall]\nmax_notes = 2.7\n", ("recall",),
     "memctl.toml: recall.max_notes must be a whole number, not 2.7"),
])
def test_a_section_that_is_no_table_or_a_count_with_decimals_is_one_error(
        store_path, text, command, said):
    """`search = 3` gave a traceback (a value where a table goes), and `default_limit = 1.5`
    was cut to 1 without a word."""
    cli = Cli(store_path)
    cli.ok("add", "Postgres backups run nightly", env={"MEMCTL_NOW": "2026-11-30T12:00:00Z"})
    (store_path / "memctl.toml").write_text(text)
    result = cli(*command, env={"MEMCTL_NOW": "2026-11-30T12:00:00Z"})
    assert result.exit_code == 1, result.stdout
    assert result.stderr.startswith(f"error: {said}") and result.stderr.count("\n") == 1, \
        result.stderr


def test_a_whole_number_written_with_a_point_is_read(store_path):
    (store_path / "memctl.toml").write_text("[search]\ndefault_limit = 7.0\n")
    value = Settings.load(store_path).get("search.default_limit")
    assert value == 7 and isinstance(value, int)


def test_the_untouched_default_file_and_an_edited_one_both_read_right(store_path):
    """An untouched memctl.toml is read without the TOML parser: it must give the defaults,
    and any edit of it must be parsed."""
    settings = Settings.load(store_path)
    for section, values in DEFAULTS.items():
        for key, value in values.items():
            assert settings.get(f"{section}.{key}") == value
    edited = default_toml().replace("default_limit = 20", "default_limit = 7")
    assert edited != default_toml()
    (store_path / "memctl.toml").write_text(edited)
    assert Settings.load(store_path).get("search.default_limit") == 7


@pytest.mark.parametrize("text", ["", "# only a comment\n", "\n  # indented\n\n"])
def test_a_file_of_comments_gives_the_defaults(store_path, text):
    (store_path / "memctl.toml").write_text(text)
    assert Settings.load(store_path).get("search.default_limit") == \
        DEFAULTS["search"]["default_limit"]


# Files of the kinds the simple reader knows, and near misses it must leave to tomllib.
KEYS = st.sampled_from(["default_limit", "max_notes", "x-y_z", "A1", "note_chars"])
VALUES = st.one_of(st.integers(-10**6, 10**6).map(str),
                   st.sampled_from(["0.5", "-0.0", "+3", "+0", "-0", "1.25", "true", "false",
                                    '"text"', '"é 注释 #"', '""', '"tab\there"']))
COMMENTS = st.sampled_from(["", "  # why", "#", "\t# tab", " # é 注释"])
NEAR_MISSES = st.sampled_from([
    "007 = 1", "a = 007", "a = 1e3", "a = 1_000", "a = .5", "a = 1.", "a = inf", "a = 'lit'",
    'a = "esc\\"aped"', "a.b = 1", '"quoted" = 1', "[a.b]", "[[array]]", "a = [1, 2]",
    "a = {b = 1}", "a = 1979-05-27", "a =", "= 1", "[search", "a = 1 2", "a = \x01",
    "# bell \x07", "a = 1\r", "\ufeff[search]", "[search]", "max_notes = 1", "top = 1"])


@st.composite
def toml_files(draw: st.DrawFn) -> str:
    lines = [] if draw(st.booleans()) else ["# memctl settings", ""]
    for name in draw(st.lists(st.sampled_from(["search", "recall", "ttl", "health"]), unique=True)):
        lines.append(draw(st.sampled_from([f"[{name}]", f"[ {name} ]", f"[{name}]  # why"])))
        for key in draw(st.lists(KEYS, unique=True, max_size=4)):
            lines.append(draw(st.sampled_from(["", "  ", "\t"])) + f"{key}"
                         + draw(st.sampled_from([" = ", "=", " =\t"])) + draw(VALUES) + draw(COMMENTS))
        lines.extend(draw(st.lists(st.sampled_from(["", "# note"]), max_size=1)))
    if lines and draw(st.integers(0, 3)) == 0:
        lines.insert(draw(st.integers(0, len(lines))), draw(NEAR_MISSES))
    return draw(st.sampled_from(["\n", "\r\n"])).join(lines)


@settings(max_examples=400, deadline=None)
@given(text=toml_files())
def test_the_simple_reader_reads_what_tomllib_reads_or_leaves_it(text: str) -> None:
    read = _simple_toml(text.encode("utf-8"))
    try:
        expected = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        assert read is None
        return
    assert read is None or read == expected
    if read is not None:  # -0.0 and 0.0 compare equal: the types and signs must match too
        assert repr(read) == repr(expected)


@pytest.mark.parametrize("text", ["[search]\n[search]\n", "[search]\na = 1\na = 2\n", "a = 1\n",
                                  "[search]\na = 1e3\n", "[search]\na = 'x'\n", "[search]\na = \"\\n\"\n",
                                  "[search.x]\n", "[search]\r\na = 1\r", "[search]\na = 01\n"])
def test_what_the_simple_reader_leaves_to_tomllib(text: str) -> None:
    """A table or key twice, a key outside a table, and any value or line beyond the simple
    ones: tomllib reads it (or words its error)."""
    assert _simple_toml(text.encode("utf-8")) is None


def test_the_file_of_an_older_memctl_is_read_without_tomllib(store_path):
    """A store made before a setting was added (the sample store's file has no [health])
    or with one value changed is read without importing tomllib and typing (~10 ms)."""
    (store_path / "memctl.toml").write_text((REPO / "sample_memory" / "memctl.toml").read_text())
    script = ("import sys; from memctl.disk.settings import Settings; "
              f"print(Settings.load({str(store_path)!r}).get('search.default_limit'), "
              "'tomllib' in sys.modules, 'typing' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["20", "False", "False"]


# --- keys of many parts: refused before Python's TOML reader, which is quadratic in them ---

_BARE = st.sampled_from(["a", "b2", "x_y", "k-1", "7"])
_QUOTED = st.sampled_from(['"a.b"', '"#.c"', "'d.e'", '"q\\".r"', '""'])
_STRINGS = st.sampled_from(['"1.2.3"', "'a.b.c # d.e'", '"x\\"y.z"', '"""\nm.n.o.p = 1\n"""',
                            "'''\na.b.c.d = 2\n'''", '""'])


@st.composite
def _key(draw: st.DrawFn) -> tuple[str, int]:
    parts = draw(st.lists(_BARE | _QUOTED, min_size=1, max_size=12))
    return draw(st.sampled_from([".", " . "])).join(parts), len(parts)


@st.composite
def _value(draw: st.DrawFn, depth: int = 0) -> tuple[str, int]:
    """A TOML value and the most parts of a key inside it (its inline tables')."""
    kind = draw(st.integers(0, 4 if depth < 2 else 1))
    if kind == 0:
        return draw(st.sampled_from(["1.5", "-0.25", "1e3", "true", "1979-05-27T07:32:00.999Z"])), 1
    if kind == 1:
        return draw(_STRINGS), 1
    items = draw(st.lists(_value(depth + 1), max_size=3))
    if kind == 2:
        return "[" + ", ".join(text for text, _ in items) + "]", max([1, *(m for _, m in items)])
    pairs = [(draw(_key()), value) for value in items]
    text = "{" + ", ".join(f"{key} = {value}" for (key, _), (value, _) in pairs) + "}"
    return text, max([1, *(max(n, m) for (_, n), (_, m) in pairs)])


@st.composite
def _toml_lines(draw: st.DrawFn) -> tuple[str, int]:
    lines, most = [], 1
    for _ in range(draw(st.integers(1, 6))):
        key, parts = draw(_key())
        if draw(st.booleans()):
            lines.append(f"[{key}]" + draw(st.sampled_from(["", "  # x.y.z.w.v"])))
            most = max(most, parts)
        else:
            value, inner = draw(_value())
            lines.append(f"{key} = {value}" + draw(st.sampled_from(["", " # a.b.c.d.e.f"])))
            most = max(most, parts, inner)
    return "\n".join(lines) + "\n", most


@settings(max_examples=400, deadline=None)
@given(_toml_lines())
def test_the_parts_of_the_longest_key_are_counted_strings_and_values_aside(document) -> None:
    """The count that guards Python's TOML reader (memctl.core.tomlkeys): every dotted key,
    table header and inline table's key; never a dot in a string, a comment or a number."""
    text, most = document
    assert most_key_parts(text)[0] == most, text


def test_a_key_of_thousands_of_parts_is_one_error_before_the_toml_reader(store_path):
    """A 400 KB `memctl.toml` of one dotted key held every command for minutes (Python's TOML
    reader is quadratic in a key's parts). It is refused in one line; a key of up to
    MAX_KEY_PARTS parts is still read."""
    settings_file = store_path / "memctl.toml"
    settings_file.write_text("[search]\ndefault_limit = 7\nx." + "a." * 200_000 + "b = 1\n")
    result = Cli(store_path)("search", "postgres")
    assert result.exit_code == 1, result.stderr
    assert result.stderr == ("error: memctl.toml line 3: a key of 200,002 parts, where memctl's "
                             "settings have two ([section], then key = value); fix the file, or "
                             "delete it and run `memctl init` to write the defaults\n")
    settings_file.write_text("[search]\ndefault_limit = 7\n" + ".".join("k" * MAX_KEY_PARTS)
                             + " = 1\n")
    assert Settings.load(store_path).get("search.default_limit") == 7


def test_the_way_out_a_broken_settings_file_names_gives_a_working_store(store_path):
    """A settings file that does not parse said "fix the file or delete it to use the
    defaults"; deleted, the folder was no store ("no memctl.toml") for every command. The
    error names the step that brings the defaults back, and following it works."""
    (store_path / "memctl.toml").write_text("[search\n")
    cli = Cli(store_path)
    refused = cli("search", "postgres")
    assert refused.exit_code == 1 and "run `memctl init`" in refused.stderr, refused.stderr
    (store_path / "memctl.toml").unlink()
    cli.ok("init")
    assert cli("search", "postgres").exit_code == 0
    assert Settings.load(store_path).get("search.default_limit") == 20


@pytest.mark.parametrize("number", ["1" + "0" * 5000, "1_" + "0" * 5000])
def test_a_number_of_thousands_of_digits_is_one_error_not_a_traceback(store_path, number):
    """Python converts at most 4,300 digits to an int: a `default_limit` of 5,001 digits (read
    by the simple reader, or by tomllib when written `1_000…`) was a ValueError traceback in
    every command that read the settings, and "failed unexpectedly (a bug)" over MCP."""
    (store_path / "memctl.toml").write_text(f"[search]\ndefault_limit = {number}\n")
    result = Cli(store_path)("search", "postgres")
    assert result.exit_code == 1, result.stderr
    assert result.stderr == ("error: memctl.toml does not parse: it holds a number of thousands "
                             "of digits; fix the file, or delete it and run `memctl init` to write "
                             "the defaults\n")


@pytest.mark.parametrize("odd", ["folder", "fifo", "broken-link"])
def test_a_settings_file_that_is_no_file_is_named_by_every_command_and_init(
        tmp_path, odd: str) -> None:
    """A `memctl.toml` that is a folder, a pipe or a broken link: every command said the
    folder was no store ("create one with memctl init") and `memctl init` that it already
    was one. Both now name the file and what to do, and nothing is made."""
    store = tmp_path / "store"
    store.mkdir()
    settings_file = store / "memctl.toml"
    if odd == "folder":
        settings_file.mkdir()
    elif odd == "fifo":
        os.mkfifo(settings_file)
    else:
        settings_file.symlink_to(tmp_path / "nowhere.toml")
    for args in (("search", "x"), ("init", str(store))):
        result = run_memctl(*args, store=store, timeout=30)
        assert result.exit_code == 1, (args, result.stderr)
        assert result.stderr.count("\n") == 1
        assert "memctl.toml is not a file" in result.stderr and "remove it" in result.stderr
    assert sorted(entry.name for entry in store.iterdir()) == ["memctl.toml"]


def test_health_names_the_settings_memctl_does_not_know(store_path) -> None:
    """A misspelt setting changed nothing without a word (exit 0, the default applied):
    `health` lists it, with the setting it is likely meant to be, as a problem."""
    (store_path / "memctl.toml").write_text(
        "default_limit = 0\n[recall]\nmax_note = 1\nmax_notes = 3\n[serch]\ndefault_limit = 0\n",
        encoding="utf-8")
    report = run_memctl("health", "--json", store=store_path).json()
    found = {entry["setting"]: entry["message"] for entry in report["unknown_settings"]}
    assert sorted(found) == ["default_limit", "recall.max_note", "serch.default_limit"]
    assert found["recall.max_note"].endswith("did you mean recall.max_notes?")
    assert found["serch.default_limit"].endswith("did you mean search.default_limit?")
    assert {"kind": "unknown_settings", "count": 3,
            "message": "settings memctl does not know: 3"} in report["problems"]
    assert "recall.max_note" in run_memctl("health", store=store_path).stdout
    (store_path / "memctl.toml").write_text("[recall]\nmax_notes = 3\n", encoding="utf-8")
    assert run_memctl("health", "--json", store=store_path).json()["unknown_settings"] == []


def test_a_setting_of_the_wrong_kind_says_what_to_do_in_one_short_line(store_path) -> None:
    """`search.default_limit = "x"` named the problem and not the fix; a value of 20 MB was
    quoted whole. And a `MEMCTL_NOW` of 5,000 characters was quoted whole too."""
    (store_path / "memctl.toml").write_text(
        '[search]\ndefault_limit = "' + "x" * 5000 + '"\n', encoding="utf-8")
    result = run_memctl("search", "x", store=store_path)
    assert result.exit_code == 1 and result.stderr.count("\n") == 1
    assert "search.default_limit must be a number" in result.stderr
    assert "fix it or delete the line for the default" in result.stderr
    assert len(result.stderr) < 300
    (store_path / "memctl.toml").unlink()
    late = run_memctl("search", "x", store=store_path, env={"MEMCTL_NOW": "9" * 5000})
    assert late.exit_code == 2 and late.stderr.count("\n") == 1 and len(late.stderr) < 300
