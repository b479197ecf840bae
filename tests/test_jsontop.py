"""The top level of a JSON object read without recursion (memctl.core.jsontop): the same
members as Python's reader wherever that one reads the text, and any depth beyond it."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from memctl.core.jsontop import OPAQUE, top_level_members, top_level_scalars

SCALARS = (st.none() | st.booleans() | st.integers()
           | st.floats(allow_nan=False, allow_infinity=False) | st.text())
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(st.text(), inner, max_size=4), max_leaves=20)
LAYOUTS = st.sampled_from([{}, {"indent": 2}, {"separators": (",", ":")},
                           {"separators": (" , ", " : ")}, {"indent": "\t"}])


def _scalars(document: dict) -> dict:
    return {key: value for key, value in document.items() if not isinstance(value, list | dict)}


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(st.text(), VALUES, max_size=6), LAYOUTS, st.booleans())
def test_the_members_are_those_pythons_reader_finds(document, layout, ascii_only):
    text = json.dumps(document, ensure_ascii=ascii_only, **layout)
    assert top_level_scalars(text) == _scalars(json.loads(text))
    assert top_level_scalars(f" \n{text}\t") == _scalars(document)


def _members(document: dict) -> dict:
    return {key: OPAQUE if isinstance(value, list | dict) else value
            for key, value in document.items()}


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(st.text(), VALUES, max_size=6), LAYOUTS, st.booleans())
def test_every_key_is_one_pythons_reader_finds(document, layout, ascii_only):
    """`top_level_members`: every key (spelled with escapes too), the scalars as read, the
    rest `OPAQUE`: the MCP server tells a request from a notification by its keys alone."""
    text = json.dumps(document, ensure_ascii=ascii_only, **layout)
    assert top_level_members(text) == _members(json.loads(text))


def test_a_number_longer_than_python_converts_is_opaque_to_members_alone():
    line = '{"a": 1' + "0" * 5000 + ', "\\u0069d": {"x": 1}, "n": 2}'
    assert top_level_members(line) == {"a": OPAQUE, "id": OPAQUE, "n": 2}
    assert top_level_scalars(line) is None
    assert top_level_members('{"a": 1e5000x}') is None


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(st.text(), VALUES, max_size=6), st.data())
def test_a_text_cut_short_or_with_a_character_left_out_is_no_object(document, data):
    """Whatever Python's reader makes of a damaged text: where it reads an object, the same
    members; where it reads something else or nothing at the top, None."""
    text = json.dumps(document)
    at = data.draw(st.integers(0, len(text) - 1))
    for damaged in (text[:at], text[:at] + text[at + 1:]):
        try:
            read = json.loads(damaged)
        except ValueError:
            read = None
        found = top_level_scalars(damaged)
        if isinstance(read, dict):
            assert found == _scalars(read)
        elif found is not None:
            # Only what lies below the top level is not checked (a comma or a colon within
            # an array or object): the top level itself read as an object.
            assert damaged.strip().startswith("{") and damaged.strip().endswith("}")


def test_a_request_nested_deeper_than_pythons_reader_goes_gives_its_top_level():
    deep = "[" * 200_000 + '"a string with ]} and \\" inside"' + "]" * 200_000
    line = f'{{"jsonrpc": "2.0", "id": 7, "params": {{"a": {deep}}}, "method": "ping"}}'
    try:
        json.loads(line)
        raise AssertionError("Python's reader read it: the test needs a deeper line")
    except RecursionError:
        pass
    assert top_level_scalars(line) == {"jsonrpc": "2.0", "id": 7, "method": "ping"}
    # Brackets that do not match, or a string left open, below the top level: no object.
    assert top_level_scalars(line.replace("]]", "}]", 1)) is None
    assert top_level_scalars(line.replace('\\" inside"', "")) is None
    assert top_level_scalars(line[:-1]) is None


def test_what_is_no_object_is_none():
    for text in ("", "   ", "[]", '"x"', "3", "{", '{"a"}', '{"a": }', '{"a": 1,}', '{"a": 1} x',
                 '{"a": tru}', '{1: 2}', "{'a': 1}"):
        assert top_level_scalars(text) is None, text
    assert top_level_scalars('{"id": 1, "id": "two"}') == {"id": "two"}  # as json.loads
    assert top_level_scalars('{"id": 1, "id": [1]}') == {}
