"""The compiled walk (memctl/disk/_statwalk.c, built by hatch_build.py where a C compiler
is): one folder listed in C gives what the Python listing gives, byte for byte, so a
folder's digest is the same whichever made it; and whatever the C code does not write as
marshal would (a name that is not UTF-8, a time past 64 bits of nanoseconds) is left to the
Python listing. Real folders, real files, real stat calls."""

from __future__ import annotations

import importlib.util
import marshal
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_memctl, write_memory_file
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memctl.disk import filescan

statwalk = pytest.importorskip(
    "memctl.disk._statwalk", reason="the compiled walk was not built (no C compiler at install)")

REPOSITORY = Path(__file__).resolve().parent.parent


def python_listing(folder: Path) -> tuple[bytes, int, list[bytes]]:
    """What the Python code lists of `folder`: marshal.dumps of its entries sorted, their
    number, its subfolders."""
    below: list[tuple[bytes, bytes]] = []
    entries = filescan._list_folder(b"f/", os.fsencode(folder), below)
    entries.sort()
    return marshal.dumps(entries, 2), len(entries), [here[2:-1] for here, _ in below]


def compiled_listing(folder: Path, utf8_names: bool = True) -> tuple[bytes, int, list[bytes]] | None:
    listed = statwalk.list_folder(os.fsencode(folder), utf8_names)
    return None if listed is None else (listed[0], listed[1], list(listed[2]))


def set_times(path: Path, nanoseconds: int) -> None:
    os.utime(path, ns=(nanoseconds, nanoseconds), follow_symlinks=False)


def test_a_folder_of_every_kind_of_entry_is_listed_alike(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    for name in ("a.md", "B.MD", "c.Md", "d.mD", ".hidden.md", "notes.txt", "md", "中文笔记.md",
                 "emoji-🚀.md"):
        (folder / name).write_text(f"# {name}\n", encoding="utf-8")
    (folder / "empty.md").write_bytes(b"")
    (folder / "link.md").symlink_to(folder / "a.md")
    (folder / "sub").mkdir()
    (folder / "子目录").mkdir()
    (folder / ".git").mkdir()
    (folder / "dirlink").symlink_to(folder / "sub")
    os.mkfifo(folder / "pipe.md")
    # Sizes and times on each side of marshal's 32-bit ints, and before 1970.
    with open(folder / "big.md", "wb") as handle:
        handle.truncate(2**31 + 5)
    with open(folder / "huge.md", "wb") as handle:
        handle.truncate(2**40)
    set_times(folder / "a.md", 5)
    set_times(folder / "B.MD", -7)
    set_times(folder / "c.Md", 2**31 - 1)
    set_times(folder / "d.mD", -1_500_000_000_123_456_789)
    set_times(folder / "empty.md", 1_796_473_615_792_175_258)
    compiled = compiled_listing(folder)
    assert compiled is not None
    data, count, subfolders = compiled
    expected = python_listing(folder)
    assert (data, count) == expected[:2]
    assert subfolders == expected[2]  # in the order the folder lists them, as Python's
    assert sorted(subfolders) == sorted([b"sub", "子目录".encode()])
    names = [entry[0] for entry in marshal.loads(data)]
    assert b"link.md" not in names and b"pipe.md" not in names and b".hidden.md" not in names
    assert count == 9


@pytest.mark.parametrize("name", [b"bad\xff.md", b"\xed\xa0\x80.md", b"\xc0\xaf.md",
                                  b"\xf4\x90\x80\x80.md", b"cut\xe4\xb8.md"])
def test_a_name_that_is_not_utf8_is_left_to_the_python_listing(tmp_path: Path, name: bytes) -> None:
    """Not UTF-8 as Python's strict decoder reads it (a lone byte, a surrogate, an overlong
    form, past U+10FFFF, a sequence cut short): no memory's name (layout.classify). The C
    code does not decide which: it hands the folder to the Python listing, and the walk's
    answer is that listing's."""
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "good.md").write_text("x\n", encoding="utf-8")
    with open(os.path.join(os.fsencode(folder), name), "wb") as handle:
        handle.write(b"y\n")
    assert compiled_listing(folder) is None
    below: list[tuple[bytes, bytes]] = []
    data, count = filescan._listing(b"f/", os.fsencode(folder), below)
    assert (data, count) == python_listing(folder)[:2]
    assert [entry[0] for entry in marshal.loads(data)] == [b"good.md"]


def test_names_beyond_ascii_are_left_to_python_where_names_are_not_read_as_utf8(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "中文.md").write_text("x\n", encoding="utf-8")
    assert compiled_listing(folder, utf8_names=False) is None
    (folder / "中文.md").rename(folder / "ascii.md")
    assert compiled_listing(folder, utf8_names=False) == python_listing(folder)


def test_a_time_past_64_bits_of_nanoseconds_is_left_to_the_python_listing(tmp_path: Path) -> None:
    """Year 2286 in nanoseconds is past 2**63: Python's int holds it, 64 bits do not."""
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "later.md").write_text("x\n", encoding="utf-8")
    set_times(folder / "later.md", 10_000_000_000 * 10**9 + 1)
    if os.stat(folder / "later.md").st_mtime_ns < 9_000_000_000 * 10**9:
        pytest.skip("this file system does not keep a time that far ahead")
    assert compiled_listing(folder) is None
    data, count = filescan._listing(b"f/", os.fsencode(folder), [])
    assert (data, count) == python_listing(folder)[:2]
    assert marshal.loads(data)[0][1] == 10_000_000_000 * 10**9 + 1


def test_a_folder_that_cannot_be_opened_gives_what_the_python_listing_gives(tmp_path: Path) -> None:
    assert compiled_listing(tmp_path / "missing") is None
    (tmp_path / "file.md").write_text("x\n", encoding="utf-8")
    assert compiled_listing(tmp_path / "file.md") is None
    assert filescan._listing(b"f/", os.fsencode(tmp_path / "missing"), []) == \
        (marshal.dumps([], 2), 0)


_NAME = st.text(st.sampled_from("abcXYZ09-_.中文缓存部署🚀é"), min_size=1, max_size=12)
_SUFFIX = st.sampled_from([".md", ".MD", ".Md", ".txt", ""])
_FILE = st.tuples(_NAME, _SUFFIX, st.integers(0, 3000),
                  st.integers(-2_000_000_000 * 10**9, 12_000_000_000 * 10**9))


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_FILE, max_size=12), st.lists(_NAME, max_size=3))
def test_any_folder_is_listed_alike(tmp_path_factory: pytest.TempPathFactory,
                                    files: list[tuple[str, str, int, int]],
                                    folders: list[str]) -> None:
    folder = tmp_path_factory.mktemp("walk")
    for name in folders:
        if name not in (".", ".."):
            (folder / name).mkdir(exist_ok=True)
    for stem, suffix, size, nanoseconds in files:
        path = folder / (stem + suffix)
        if path.name in (".", "..") or path.is_dir():
            continue
        path.write_bytes(b"x" * size)
        try:
            set_times(path, nanoseconds)
        except (OSError, OverflowError):
            pass  # a time this file system does not keep: the file keeps its own
    expected = python_listing(folder)
    compiled = compiled_listing(folder)
    if compiled is None:  # a time past 64 bits of nanoseconds
        assert any(entry[1] >= 9_000_000_000 * 10**9 or entry[2] >= 9_000_000_000 * 10**9
                   for entry in marshal.loads(expected[0]))
    else:
        assert compiled == expected
    assert filescan._listing(b"f/", os.fsencode(folder), [])[0] == expected[0]


def test_the_walk_uses_the_compiled_listing_unless_told_not_to() -> None:
    code = "from memctl.disk import filescan; print(filescan._native_list is not None)"
    unset = {name: value for name, value in os.environ.items() if name != "MEMCTL_NATIVE_WALK"}
    for setting, expected in ((None, "True"), ("0", "False"), ("1", "True")):
        env = unset if setting is None else {**unset, "MEMCTL_NATIVE_WALK": setting}
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              env=env, check=True)
        assert done.stdout.strip() == expected, setting


def test_a_build_of_another_version_is_not_used(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """An editable install keeps the module it built: one built from another version of the
    source may list folders otherwise, and is left unused (the walk is then Python's)."""
    monkeypatch.delenv("MEMCTL_NATIVE_WALK", raising=False)
    sys.path.insert(0, str(REPOSITORY))
    try:
        import hatch_build
    finally:
        sys.path.remove(str(REPOSITORY))
    source = tmp_path / "_statwalk.c"
    text = (REPOSITORY / "memctl" / "disk" / "_statwalk.c").read_text(encoding="utf-8")
    assert "#define STATWALK_VERSION 1\n" in text
    source.write_text(text.replace("#define STATWALK_VERSION 1\n",
                                   "#define STATWALK_VERSION 999\n"), encoding="utf-8")
    target = tmp_path / hatch_build.MODULE_NAME
    problem = hatch_build.compile_module(source, target)
    if problem is not None:
        pytest.skip(f"cannot compile here: {problem}")
    spec = importlib.util.spec_from_file_location("memctl.disk._statwalk", target)
    assert spec is not None and spec.loader is not None
    other = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(other)
    assert other.VERSION == 999
    assert filescan._native_lister(other) is None
    assert filescan._native_lister(statwalk) is statwalk.list_folder


@pytest.mark.parametrize("native", ["1", "0"])
def test_a_search_finds_an_edit_in_place_with_either_listing(store_path: Path, native: str,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """An edit that keeps the file's size, in a folder of Chinese names: the installed memctl
    sees it, the walk listed in C or in Python."""
    monkeypatch.setenv("MEMCTL_NATIVE_WALK", native)
    note = write_memory_file(store_path, "demo/notes/fact/缓存-01jx0000000000aa.md",
                             "the cache is redis", type="fact", id="01jx0000000000aa")
    assert "01jx0000000000aa" in run_memctl("search", "redis", "--json", store=store_path).stdout
    before = os.stat(note)
    note.write_text(note.read_text(encoding="utf-8").replace("redis", "valky"), encoding="utf-8")
    os.utime(note, ns=(before.st_atime_ns, before.st_mtime_ns))  # the same mtime, a new ctime
    found = run_memctl("search", "valky", "--json", store=store_path)
    assert found.exit_code == 0 and "01jx0000000000aa" in found.stdout, found.stderr
