"""Reading files memctl did not write, and surgical edits that keep every other byte."""

from __future__ import annotations

import string
from datetime import UTC, datetime, timedelta, timezone

from conftest import python_lines
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memctl.core.note import note_from_parsed
from memctl.core.noteformat import compute_checksum, parse_text, render_note, set_fields


def note(text: str, relpath: str = "p/notes/x.md"):
    parsed = parse_text(text)
    return parsed, note_from_parsed(parsed, text=text, relpath=relpath, project="p")


def test_no_front_matter_is_a_fact_with_defaults():
    parsed, n = note("# Deploy notes\n\nRun the migration before deploy.\n")
    assert parsed.problem is None and not parsed.has_front_matter
    assert (n.type, n.importance, n.status, n.title) == ("fact", 5, "active", "Deploy notes")
    assert n.body.startswith("# Deploy notes")


def test_partial_front_matter_gets_defaults():
    _, n = note("---\ntags: [ops]\n---\nbody\n")
    assert (n.type, n.importance, n.tags, n.status) == ("fact", 5, ["ops"], "active")


def test_windows_line_endings_and_bom():
    text = "\ufeff---\r\ntype: rule\r\nimportance: 9\r\n---\r\nAlways run tests.\r\n"
    parsed, n = note(text)
    assert parsed.bom and parsed.newline == "\r\n"
    assert (n.type, n.importance) == ("rule", 9)
    assert n.body == "Always run tests.\r\n"


def test_yaml_implicit_conversions_do_not_corrupt_values():
    _, n = note("---\nsubject: no\npredicate: 0123\ncreated: 2025-03-12\nwhen: 12:30\nflag: on\n---\nx\n")
    assert n.subject == "no"
    assert n.predicate == "0123"
    assert n.created == "2025-03-12"
    assert n.meta["when"] == "12:30" and n.meta["flag"] == "on"


def test_list_instead_of_mapping_is_reported_with_line():
    parsed = parse_text("---\n- a\n- b\n---\nbody\n")
    assert parsed.problem is not None and parsed.problem.line == 2
    assert "list" in parsed.problem.message


def test_missing_closing_delimiter_is_reported():
    parsed = parse_text("---\ntype: fact\nbody without end\n")
    assert parsed.problem is not None and parsed.problem.line == 1
    assert "never closed" in parsed.problem.message


def test_malformed_yaml_reports_the_file_line():
    parsed = parse_text("---\ntype: fact\ntags: [a, b\nimportance: 3\n---\nbody\n")
    assert parsed.problem is not None
    assert parsed.problem.line in (3, 4, 5)


def test_unsafe_tags_and_aliases_are_refused():
    assert "tag" in parse_text("---\nx: !!python/object/apply:os.system ['true']\n---\n").problem.message
    bomb = "---\na: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: [*b, *b, *b, *b, *b, *b, *b, *b, *b]\n---\n"
    assert "alias" in parse_text(bomb).problem.message


def test_oversized_and_deeply_nested_front_matter_are_errors_not_crashes():
    big = "---\n" + "k: " + "x" * (70 * 1024) + "\n---\nbody\n"
    assert "larger" in parse_text(big).problem.message
    deep = "---\nk: " + "[" * 5000 + "]" * 5000 + "\n---\n"
    assert parse_text(deep).problem is not None or parse_text(deep).meta


def test_unknown_values_fall_back_with_a_warning():
    _, n = note("---\ntype: banana\nimportance: lots\npinned: maybe\n---\nbody\n")
    assert (n.type, n.importance, n.pinned) == ("fact", 5, False)
    assert len(n.warnings) == 3


def test_set_fields_keeps_every_other_byte():
    original = (
        "---\r\n# my comment\r\nid: abc\r\ntype: fact   # inline comment\r\nzeta: 1\r\n"
        "tags:\r\n  - a\r\n  - b\r\nalpha: no\r\n---\r\nBody line\r\n\r\nNo final newline"
    )
    changed = set_fields(original, {"type": "rule", "tags": ["x"], "status": "superseded"})
    assert changed.startswith("---\r\n# my comment\r\nid: abc\r\ntype: rule   # inline comment\r\nzeta: 1\r\ntags: [x]\r\nalpha: no\r\nstatus: superseded\r\n---\r\n")
    assert changed.endswith("---\r\nBody line\r\n\r\nNo final newline")


def test_a_quoted_key_is_changed_where_it_is_not_written_twice():
    """`"updated": …` is the key `updated`: a second, plain `updated:` line was added beside
    it, a key twice (memctl reads the last; stricter YAML readers refuse the file)."""
    original = ("---\n\"id\": abc\n'updated': 2026-01-01T00:00:00.000Z\n\"status\": active\n"
                "---\nBody\n")
    changed = set_fields(original, {"updated": "2026-11-30T12:00:00.000Z", "status": "superseded"})
    assert changed == ("---\n\"id\": abc\nupdated: 2026-11-30T12:00:00.000Z\n"
                       "status: superseded\n---\nBody\n")
    assert parse_text(changed).meta == {"id": "abc", "updated": "2026-11-30T12:00:00.000Z",
                                        "status": "superseded"}


def test_set_fields_on_file_without_front_matter_adds_a_block_and_keeps_body():
    body = "\ufeffJust text\nsecond line"
    changed = set_fields(body, {"status": "archived"})
    assert changed == "\ufeff---\nstatus: archived\n---\nJust text\nsecond line"


def test_checksum_ignores_its_own_line_and_notices_edits():
    text = render_note({"id": "x", "type": "fact"}, "body\n")
    stamped = set_fields(text, {"checksum": compute_checksum(text)})
    _, n = note(stamped)
    assert n.stamped
    _, edited = note(stamped.replace("body", "body edited"))
    assert not edited.stamped


# --- properties --------------------------------------------------------------------------

keys = st.text(alphabet=string.ascii_lowercase + "_", min_size=1, max_size=12).filter(
    lambda k: k != "checksum")
scalars = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="\x85\u2028\u2029\ufeff"),
    max_size=40,
).map(str.strip).filter(bool)
values = st.one_of(scalars, st.lists(scalars, max_size=4))
bodies = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00\r"), max_size=200)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(keys, values, max_size=8), bodies)
def test_what_memctl_writes_reads_back_the_same(meta, body):
    text = render_note(meta, body)
    parsed = parse_text(text)
    assert parsed.problem is None
    assert parsed.meta == meta
    assert parsed.body == body


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(keys, values, min_size=1, max_size=6), bodies,
       st.dictionaries(keys, st.one_of(values, st.none()), min_size=1, max_size=3),
       st.sampled_from(["\n", "\r\n"]))
def test_surgical_update_changes_only_the_named_fields(meta, body, updates, newline):
    text = render_note(meta, body.replace("\n", newline), newline)
    changed = set_fields(text, updates)
    parsed = parse_text(changed)
    assert parsed.problem is None
    expected = {k: v for k, v in meta.items()}
    for key, value in updates.items():
        if value is None:
            expected.pop(key, None)
        else:
            expected[key] = value
    assert parsed.meta == expected
    assert parsed.body == body.replace("\n", newline)
    # Untouched field lines keep their bytes and their order.
    head_before = text.split(newline)[1:len(meta) + 1]
    untouched = [line for line in head_before if line.split(":", 1)[0] not in updates]
    changed_head = changed.split(newline)[1:]
    positions = [changed_head.index(line) for line in untouched]
    assert positions == sorted(positions)


@settings(max_examples=500)
@given(st.text(max_size=300))
def test_any_text_parses_or_reports_never_raises(text):
    parsed = parse_text(text)
    assert parsed.problem is None or parsed.problem.line >= 1


_BLANK_TO_PYTHON = " \t\r\n\v\f\x1c\x1d\x1e\x1f\x85\xa0\u2028\u3000"


@settings(max_examples=1500)
@given(st.lists(st.text(alphabet=st.sampled_from(_BLANK_TO_PYTHON), max_size=3),
                max_size=4).map("\n".join)
       | st.lists(st.one_of(st.text(alphabet=st.sampled_from(" \t"), max_size=3),
                            st.sampled_from(["a: b", "tags: [x]", "# a comment"])),
                  max_size=4).map("\n".join),
       st.sampled_from(["---", "..."]), st.booleans(),
       st.sampled_from(["importance", "tags", "title"]),
       st.sampled_from([3, ["x", "y"], [], "new title"]))
def test_a_front_matter_that_reads_is_one_whose_fields_can_be_set(head, closer, bom, key,
                                                                   value):
    """A front matter of white space, or of fields and blank lines of spaces and tabs: if
    it reads without a problem, `set_fields` changes it, and the result reads back as the
    value set and every other field as it was. A head of white space YAML refuses (\x1d,
    \xa0) reads as no fields, and could not be edited (bench/fuzz.py)."""
    text = ("\ufeff" if bom else "") + f"---\n{head}\n{closer}\nthe body\n"
    before = parse_text(text)
    if not head.strip():
        assert before.problem is None and before.meta == {}  # a note, with no fields
    try:
        after = parse_text(set_fields(text, {key: value}))
    except ValueError:
        assert before.problem is not None, f"refused a file that reads: {text!r}"
        return
    assert after.problem is None
    assert after.meta[key] == ([str(v) for v in value] if isinstance(value, list) else str(value))
    assert {k: v for k, v in after.meta.items() if k != key} == \
        {k: v for k, v in before.meta.items() if k != key}
    assert after.body == before.body


def _reference_parse_time(text: str):
    """parse_time without its fast path: normalise `Z` and a space, then fromisoformat."""
    from memctl.core.clock import parse_time_spelled_out

    return parse_time_spelled_out(text) if text.strip() else None


@given(st.datetimes(), st.sampled_from(["T", " "]), st.sampled_from(["", "Z", "z", "+02:00",
       "-05:30", "+00:00"]), st.sampled_from(["seconds", "milliseconds", "minutes", "auto"]),
       st.booleans())
def test_times_read_the_same_on_the_fast_path(moment, separator, zone, spec, date_only):
    from memctl.core.clock import parse_time

    text = moment.date().isoformat() if date_only else \
        moment.isoformat(sep=separator, timespec=spec) + zone
    assert parse_time(text) == _reference_parse_time(text)
    assert parse_time(f"  {text} ") == _reference_parse_time(text)


@given(st.datetimes(min_value=datetime(2, 1, 1), max_value=datetime(9998, 12, 30)),
       st.sampled_from([UTC, timezone(timedelta(hours=5, minutes=30)), timezone(timedelta(0)),
                        timezone(timedelta(hours=-8))]))
def test_a_time_is_written_as_strftime_writes_it(moment, zone):
    """`format_time` formats by hand what strftime formatted: the same text for any time in
    any zone, so no stamp memctl writes changes."""
    from memctl.core.clock import format_time

    aware = moment.replace(tzinfo=zone)
    utc = aware.astimezone(UTC)
    assert format_time(aware) == utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


@given(st.text(alphabet="0123456789-:T Zz+.W ", max_size=32) | st.text(max_size=12))
def test_any_text_reads_as_the_same_time_or_as_none(text):
    from memctl.core.clock import parse_time

    assert parse_time(text) == _reference_parse_time(text)


# The class of 65k characters that told a plain YAML scalar, before it was written so that
# compiling it costs ~0.1 ms instead of ~8 ms (core/noteformat.py).
_PLAIN_SAFE_BEFORE = r"^[A-Za-z0-9_\u0080-\uffff][A-Za-z0-9_ .:/+@()\u0080-\uffff-]*$"
_EDGES = "aZ09_ .:/+@()-\n\t'\"#~!\x7f\x80\u00e9\u4e2d\uffff\U00010000\U0001f600"


@settings(max_examples=2000)
@given(st.text(alphabet=st.sampled_from(_EDGES), max_size=8) | st.text(max_size=8))
def test_a_plain_scalar_is_told_as_by_the_class_of_65k_characters(text):
    import re

    from memctl.core.noteformat import _plain_safe

    assert bool(_plain_safe().match(text)) == bool(re.match(_PLAIN_SAFE_BEFORE, text))


# --- the front matter memctl writes, read without YAML --------------------------------------

# Mostly what a plain value holds, and every character that could end or change one.
_PLAIN_CHARS = "aZ09_ .:/+@()-\u00e9\u4e2d"
_ODD_CHARS = ",[]{}#'\"!&*?|>%`~\t\r\\\x7f\x85\xa0\u3000\u2028\ufeff"
_plain_text = st.from_regex("[A-Za-z0-9_\u00e9\u4e2d][A-Za-z0-9_ .:/+@()\u00e9\u4e2d-]{0,7}",
                            fullmatch=True)
_field_text = st.one_of(_plain_text, _plain_text,
                        st.text(alphabet=st.sampled_from(_PLAIN_CHARS * 4 + _ODD_CHARS),
                                max_size=8))
_field_value = st.one_of(
    _field_text, _field_text,
    st.builds(lambda items, sep: "[" + sep.join(items) + "]", st.lists(_field_text, max_size=3),
              st.sampled_from([", "] * 6 + [",", " , ", ",  "])),
    st.sampled_from(["null", "~", "NULL", "yes", "0123", "2026-11-30T12:00:00.000Z", "[]",
                     "[ ]", "a: b", "a #b", "a:", "- a", "[a, b]", "'q'", '"q"', "{a: b}"]))
_field_key = st.one_of(st.from_regex(r"[a-z_][a-z0-9_-]{0,6}", fullmatch=True),
                       st.sampled_from(["id", "type", "tags", "x-y", "_k", "a b", "-k", "k:",
                                        "<<", "1", "", "Id"]))


@settings(max_examples=3000, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(_field_key, _field_value,
                          st.sampled_from([": "] * 8 + [":", ":  ", " : "])),
                max_size=4), st.sampled_from(["\n", "\r\n"]), st.booleans())
def test_front_matter_read_without_yaml_is_what_yaml_reads(fields, newline, last_newline):
    """Where the reader of memctl's own front matter answers (`_plain_mapping`), the
    strict YAML loader reads exactly the same fields; anywhere else YAML reads the text."""
    import yaml

    from memctl.core.noteformat import _plain_mapping, _strict_loader

    text = newline.join(f"{key}{sep}{value}" for key, value, sep in fields)
    if last_newline and text:
        text += newline
    fast = _plain_mapping(text) if text.strip() else None  # empty: `load_yaml_mapping` says {}
    if fast is None:
        return
    assert fast == yaml.load(text, Loader=_strict_loader())  # noqa: S506 - the strict loader
    assert parse_text(f"---\n{text}{newline if text and not last_newline else ''}---\nbody\n"
                      ).meta == fast


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(keys, values, max_size=8))
def test_what_memctl_writes_with_plain_values_is_read_without_yaml(meta):
    from memctl.core.noteformat import _plain_mapping, render_value

    head = render_note(meta, "body\n").split("---\n")[1]
    plain = all(render_value(value).strip("[]") == ", ".join(value)
                if isinstance(value, list) else render_value(value) == value
                for value in meta.values())
    assert (_plain_mapping(head) == meta) if plain else True
    if plain and meta:
        assert _plain_mapping(head) is not None


def test_a_note_memctl_wrote_is_read_without_loading_yaml() -> None:
    script = ("import sys\n"
              "from memctl.core.noteformat import parse_text\n"
              "parsed = parse_text('---\\nid: 01m8sh9tb7rm7mbz\\ntype: fact\\nimportance: 5\\n"
              "tags: [db, cache]\\ncreated: 2026-11-30T12:00:00.000Z\\nsubject: the api\\n"
              "---\\nbody\\n')\n"
              "print(parsed.meta['tags'], parsed.meta['subject'], 'yaml' in sys.modules)\n")
    assert python_lines(script) == ["['db', 'cache'] the api False"]


def test_values_memctl_cannot_read_fall_back_to_their_defaults_with_a_warning_each():
    _, n = note("---\nid: n2\nproject: ../../etc\ncreated: yesterday\nupdated: 2026-13-45\n"
                "expires: never\ntags: {a: b}\nsubject: [x, y]\n---\nOdd values\n",
                relpath="blog/notes/fact/b.md")
    assert n.project == "p"  # the folder the note helper reads it in
    assert n.created == "" and n.updated == "" and n.expires is None
    assert n.tags == [] and n.subject is None
    said = " | ".join(n.warnings)
    for field in ("project", "created", "updated", "expires", "tags", "subject"):
        assert field in said, (field, said)
    assert len(n.warnings) == 6
    _, n = note("---\ncreated: 2026-11-01\nupdated: 2026-13-45\ntags: [a, [b], c]\n---\nx\n")
    assert (n.created, n.updated, n.tags) == ("2026-11-01", "2026-11-01", ["a", "c"])
    assert len(n.warnings) == 2


def test_fields_over_the_front_matter_limit_are_refused_where_they_are_written():
    """Front matter memctl writes is held to the limit every reader holds a file to, in the
    two places it is written (a new file, a field edit): a one-line error naming the field,
    never a file that would not parse (docs/format.md, "Limits")."""
    import pytest

    from memctl.core.errors import MemctlError
    from memctl.core.noteformat import MAX_FRONT_MATTER_BYTES, FrontMatterTooLarge

    big = "g" * 70_000
    with pytest.raises(FrontMatterTooLarge) as raised:
        render_note({"id": "x", "goal": big}, "body\n")
    assert "64 KB" in str(raised.value) and "`goal`" in str(raised.value)
    assert isinstance(raised.value, MemctlError) and not isinstance(raised.value, ValueError)
    small = render_note({"id": "x", "tags": ["a"]}, "body\n")
    with pytest.raises(FrontMatterTooLarge, match="`tags`"):
        set_fields(small, {"tags": [f"t{i}-" + "x" * 190 for i in range(400)]})
    # At the limit itself, what is written reads back.
    for size in range(MAX_FRONT_MATTER_BYTES - 12, MAX_FRONT_MATTER_BYTES - 4):
        try:
            text = render_note({"goal": "g" * size}, "body\n")
        except FrontMatterTooLarge:
            continue
        assert parse_text(text).problem is None
        try:
            edited = set_fields(text, {"id": "x"})
        except FrontMatterTooLarge:
            continue
        assert parse_text(edited).problem is None
