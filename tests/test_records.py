"""memctl.core.records makes of a class what `dataclasses.dataclass` makes of it, for the
features memctl's data classes use, without importing `dataclasses` (and `inspect`): ~8 ms
of every `memctl add` and `show` (bench/bench_write.py)."""

from __future__ import annotations

import dataclasses
import inspect
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memctl.core import records


def _pair(frozen: bool) -> tuple[type, type]:
    """The same class made by each."""
    made = []
    for module in (dataclasses, records):
        @module.dataclass(frozen=frozen)
        class Point:
            x: int
            label: str
            tags: list[str] = module.field(default_factory=list)
            weight: float = 1.5
            hidden: str = module.field(default="****", repr=False, compare=False)
            extra: dict[str, int] = module.field(default_factory=dict)

            def norm(self) -> int:
                return abs(self.x)

        made.append(Point)
    return made[0], made[1]


values = st.tuples(st.integers(-3, 3), st.sampled_from(["a", "b"]),
                   st.lists(st.sampled_from(["t", "u"]), max_size=2), st.sampled_from([1.5, 2.0]),
                   st.sampled_from(["****", "secret"]))


@pytest.mark.parametrize("frozen", [False, True])
@given(first=values, second=values)
def test_init_repr_eq_and_hash_are_those_of_dataclasses(frozen: bool, first: tuple,
                                                        second: tuple) -> None:
    reference, ours = _pair(frozen)
    for args in (first, first[:2], first[:4]):
        theirs, mine = reference(*args), ours(*args)
        assert repr(mine) == repr(theirs)
        assert vars(mine) == vars(theirs)
    a, b = reference(*first), reference(*second)
    c, d = ours(*first), ours(*second)
    assert (c == d) == (a == b) and (c != d) == (a != b)
    assert c.norm() == a.norm()
    assert (c == a) is False  # another class: never equal
    if frozen:
        with pytest.raises(TypeError):  # a list among the fields: neither can hash it
            hash(a)
        with pytest.raises(TypeError):
            hash(c)
        theirs, mine = [], []
        for module, made in ((dataclasses, theirs), (records, mine)):
            @module.dataclass(frozen=True)
            class Span:
                start: int
                end: int
                kind: str = module.field(default="", compare=False)

            made.extend([Span(first[0], second[0], first[1]), Span(second[0], first[0])])
        assert [hash(span) for span in mine] == [hash(span) for span in theirs]
        assert (mine[0] == mine[1]) == (theirs[0] == theirs[1])
    else:
        with pytest.raises(TypeError):
            hash(c)


def test_defaults_keywords_and_the_signature_are_those_of_dataclasses() -> None:
    reference, ours = _pair(False)
    mine = inspect.signature(ours).parameters
    theirs = inspect.signature(reference).parameters
    assert list(mine) == list(theirs)
    for name in ("x", "label", "weight", "hidden"):  # a factory's stand-in is spelled otherwise
        assert mine[name].default == theirs[name].default
    mine, theirs = ours(x=1, label="a", weight=3.0), reference(x=1, label="a", weight=3.0)
    assert vars(mine) == vars(theirs)
    assert ours(1, "a").tags is not ours(1, "a").tags  # a new list each time
    assert ours.weight == reference.weight == 1.5 and ours.hidden == reference.hidden
    assert not hasattr(ours, "tags") and not hasattr(reference, "tags")
    with pytest.raises(TypeError):
        ours(1)  # a field without a default is required


def test_a_frozen_record_refuses_assignment_as_dataclasses_does() -> None:
    reference, ours = _pair(True)
    for made in (reference(1, "a"), ours(1, "a")):
        with pytest.raises(AttributeError):
            made.x = 2
        with pytest.raises(AttributeError):
            del made.label
    assert issubclass(records.FrozenInstanceError, AttributeError)


def test_the_add_path_loads_neither_dataclasses_nor_inspect() -> None:
    script = ("import sys\n"
              "import memctl.memory.notes, memctl.services.showing, memctl.index.docs\n"
              "print(sorted(m for m in ('dataclasses', 'inspect') if m in sys.modules))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "[]"
