"""Project names: letters and digits of any script (`数据平台`), in NFC, never a path that
leaves the store; a git repository's folder name made into one is said (docs/format.md)."""

from __future__ import annotations

import shutil
import subprocess
import unicodedata
from pathlib import Path

import pytest
from conftest import Cli, git, run_memctl, tree_snapshot
from hypothesis import given, settings
from hypothesis import strategies as st

from memctl.core.arguments import project_name
from memctl.core.errors import ArgumentError
from memctl.core.vocab import project_from_folder, valid_project_name
from memctl.disk.layout import classify
from memctl.disk.storefiles import StoreFiles


def test_a_chinese_project_name_works_end_to_end(cli: Cli, store_path: Path) -> None:
    added = cli.ok("add", "数据平台的调度器是 Airflow", "--project", "数据平台", "--json").json()
    assert added["path"].startswith("数据平台/notes/fact/")
    listed = cli.ok("list", "--project", "数据平台", "--json").json()
    assert [note["id"] for note in listed] == [added["id"]]
    hits = cli.ok("search", "Airflow", "--project", "数据平台", "--json").json()
    assert [hit["id"] for hit in hits] == [added["id"]]
    assert cli.ok("search", "Airflow", "--json").json() == []  # another project's note
    cli.ok("scratch", "focus", "迁移调度器", "--project", "数据平台")
    episode = cli.ok("episode", "add", "--goal", "迁移", "--outcome", "completed",
                     "--project", "数据平台", "--json").json()
    assert episode["path"].startswith("数据平台/episodes/")
    assert (store_path / "数据平台" / "SCRATCHPAD.md").is_file()
    assert git(store_path, "status", "--porcelain") == ""
    # MEMCTL_PROJECT takes the same names.
    assert cli.ok("list", "--json", env={"MEMCTL_PROJECT": "数据平台"}).json()[0]["id"] == added["id"]


def test_a_name_in_either_unicode_form_is_one_project(cli: Cli, store_path: Path) -> None:
    composed, decomposed = "café", "cafe\u0301"
    assert unicodedata.normalize("NFC", decomposed) == composed != decomposed
    added = cli.ok("add", "The café menu service runs on Go", "--project", decomposed,
                   "--json").json()
    assert added["path"].startswith(f"{composed}/")
    assert [p.name for p in store_path.iterdir() if p.name.startswith("caf")] == [composed]
    listed = cli.ok("list", "--project", composed, "--json").json()
    assert [note["id"] for note in listed] == [added["id"]]


@pytest.mark.parametrize("name", ["../x", "a/b", "a\\b", "..", ".", ".hidden", "-x", "x y",
                                  "x\u202ey", "x\x01", "x²", "数" * 40, "", " "])
def test_names_that_are_no_folder_of_the_store_are_refused(cli: Cli, store_path: Path,
                                                          name: str) -> None:
    before = tree_snapshot(store_path)
    result = cli("add", "x", "--project", name)
    assert result.exit_code == 2, result.stderr
    assert result.stderr.startswith("error:") and "Traceback" not in result.stderr
    assert tree_snapshot(store_path) == before
    with pytest.raises(ArgumentError):
        project_name(name)
    if name:
        from_env = cli("list", env={"MEMCTL_PROJECT": name})
        assert from_env.exit_code == 2 and "MEMCTL_PROJECT" in from_env.stderr


def test_a_project_differing_only_in_case_from_one_there_is_refused(cli: Cli,
                                                                     store_path: Path) -> None:
    """`Demo` beside `demo` is one folder on a disk that ignores case (macOS, Windows): every
    command that would make the second folder is refused, naming the first, nothing written."""
    cli.ok("add", "The deploy freeze starts on Friday", "--project", "demo")
    before = tree_snapshot(store_path)
    for command in (["add", "The release train leaves on Monday", "--project", "Demo"],
                    ["scratch", "focus", "the freeze"],
                    ["episode", "add", "--goal", "freeze", "--outcome", "completed"],
                    ["project", "add", "lessons", "freeze early"]):
        result = cli(*command, env={"MEMCTL_PROJECT": "DEMO"})  # --project goes first
        named = "Demo" if "--project" in command else "DEMO"
        assert result.exit_code == 1, (command, result.stderr)
        assert result.stderr.startswith(f"error: project {named!r} differs from the existing "
                                        f"project 'demo' only in case"), result.stderr
        assert result.stderr.count("\n") == 1 and "--project demo" in result.stderr
        assert tree_snapshot(store_path) == before
    # One made by hand (or brought by a sync) is listed by health, and its notes still read.
    (store_path / "Demo" / "notes").mkdir(parents=True)
    (store_path / "Demo" / "notes" / "by-hand.md").write_text("The train leaves on Monday\n")
    report = cli.ok("health", "--json").json()
    assert [e["projects"] for e in report["case_twins"]] == [["Demo", "demo"]]
    assert any(p["kind"] == "case_twins" for p in report["problems"])
    assert [n["path"] for n in cli.ok("list", "--project", "Demo", "--json").json()] == [
        "Demo/notes/by-hand.md"]
    strict = cli("health", "--strict")
    assert strict.exit_code == 1 and "differ only in case" in strict.stdout + strict.stderr


def test_names_differing_only_in_case_are_told_letter_by_letter() -> None:
    """As a disk that ignores case compares them: each letter's capital, where that is one
    letter (Greek final sigma included), never Unicode's folding (`ß` is not `ss`)."""
    from memctl.disk.storefiles import twin_among
    from memctl.memory.health import case_twins

    assert twin_among("Demo", {"demo", "other"}) == "demo"
    assert twin_among("ΟΔΟΣ", {"οδος"}) == "οδος" and twin_among("ΟΔΟΣ", {"οδοσ"}) == "οδοσ"
    assert twin_among("STRASSE", {"straße"}) is None and twin_among("demo", {"demo"}) is None
    assert [e["projects"] for e in case_twins(["ΟΔΟΣ", "οδοσ", "straße", "STRASSE"])] == [
        ["ΟΔΟΣ", "οδοσ"]]


def test_an_import_that_would_make_a_case_twin_is_refused(cli: Cli, store_path: Path,
                                                           tmp_path: Path) -> None:
    """The same rule for `memctl import`, which writes through a transaction of its own: a
    file of another tool imported into `--project Demo`, or a memctl bundle holding `Demo`
    (or both `Demo` and `demo`), beside `demo`."""
    from memctl.store import Store

    cli.ok("add", "The deploy freeze starts on Friday", "--project", "demo")
    before = tree_snapshot(store_path)
    foreign = tmp_path / "notes-of-another-tool"
    foreign.mkdir()
    (foreign / "ops.md").write_text("# Ops\n\nThe pager rotates on Mondays.\n")
    other = tmp_path / "other-store"
    Store.init(other)
    elsewhere = Cli(other)
    elsewhere.ok("add", "The release train leaves on Monday", "--project", "Demo")
    both = tmp_path / "both-store"
    Store.init(both)
    Cli(both).ok("add", "The Ops pager rotates weekly", "--project", "Ops")
    (both / "ops" / "notes").mkdir(parents=True)  # (by hand: memctl makes no twin)
    (both / "ops" / "notes" / "pager.md").write_text("The ops pager rotates daily\n")
    git(both, "add", "-A")
    git(both, "commit", "-qm", "a twin by hand")
    for command, said in (
            (["import", str(foreign), "--from", "markdown", "--project", "Demo"],
             "project 'Demo' differs from the existing project 'demo'"),
            (["import", str(other)], "project 'Demo' differs from the existing project 'demo'"),
            (["import", str(both)], "project 'ops' differs from the project 'Ops'")):
        result = cli(*command)
        assert result.exit_code == 1, (command, result.stderr)
        assert result.stderr.startswith(f"error: cannot import: {said} only in case"), \
            result.stderr
        assert result.stderr.count("\n") == 1 and "rename one of the two folders" in \
            result.stderr
        assert tree_snapshot(store_path) == before
    assert cli.ok("import", str(foreign), "--from", "markdown", "--project", "demo")
    # Twins there already (by hand, or a sync): an import into both makes no new folder.
    (store_path / "Demo" / "notes").mkdir(parents=True)
    (store_path / "Demo" / "notes" / "by-hand.md").write_text("The Demo pager rotates daily\n")
    git(store_path, "add", "-A")
    git(store_path, "commit", "-qm", "a twin by hand")
    both_there = tmp_path / "both-there"
    shutil.copytree(store_path, both_there)
    for project in ("demo", "Demo"):
        (both_there / project / "notes" / f"more-{project}.md").write_text(f"More of {project}\n")
    git(both_there, "add", "-A")
    git(both_there, "commit", "-qm", "more notes in both")
    assert len(cli.ok("import", str(both_there), "--json").json()["added"]) == 2


def test_hand_made_folders_are_projects_by_the_same_rule(cli: Cli, store_path: Path) -> None:
    (store_path / "数据平台" / "notes").mkdir(parents=True)
    (store_path / "数据平台" / "notes" / "by-hand.md").write_text("调度器每天凌晨两点运行\n")
    (store_path / "x y").mkdir()
    (store_path / "x y" / "stray.md").write_text("not a project\n")
    listed = cli.ok("list", "--all-projects", "--json").json()
    assert [(note["project"], note["path"]) for note in listed] == \
        [("数据平台", "数据平台/notes/by-hand.md")]
    assert classify("数据平台/notes/by-hand.md") == ("note", "数据平台")
    assert classify("x y/stray.md") is None
    assert "x y/" in cli.ok("health", "--json").json()["ignored"]


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_a_valid_name_is_always_a_plain_folder_of_the_store(tmp_path_factory, text: str) -> None:
    """Whatever a folder is called, the project made of it is valid or empty; a valid name is
    one folder that `StoreFiles.resolve` accepts and `classify` reads back."""
    made = project_from_folder(text)
    assert made == "" or valid_project_name(made)
    for name in (made, text):
        if not valid_project_name(name):
            continue
        assert "/" not in name and "\\" not in name and name not in (".", "..")
        assert not name.startswith((".", "-")) and unicodedata.normalize("NFC", name) == name
        assert all(unicodedata.category(char)[0] not in "CZ" for char in name)
        root = tmp_path_factory.getbasetemp()
        assert StoreFiles(root).resolve(f"{name}/MEMORY.md") == root / name / "MEMORY.md"
        assert classify(f"{name}/MEMORY.md") == ("memory", name)


def test_a_repository_folder_whose_name_changes_is_said(tmp_path: Path, store_path: Path,
                                                        monkeypatch) -> None:
    repo = tmp_path / "my app (old)"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    monkeypatch.chdir(repo)
    added = run_memctl("add", "The old app still serves /v1", "--json", store=store_path,
                       project=None)
    assert added.exit_code == 0, added.stderr
    assert added.json()["path"].startswith("my-app-old/")  # stdout stays one JSON document
    notes = [line for line in added.stderr.splitlines() if line.startswith("note:")]
    assert len(notes) == 1
    assert "'my-app-old'" in notes[0] and "'my app (old)'" in notes[0] and "--project" in notes[0]

    chinese = tmp_path / "数据平台"
    chinese.mkdir()
    subprocess.run(["git", "init", "-q", str(chinese)], check=True)
    monkeypatch.chdir(chinese)
    kept = run_memctl("add", "调度器是 Airflow", "--json", store=store_path, project=None)
    assert kept.exit_code == 0, kept.stderr
    assert kept.json()["path"].startswith("数据平台/") and "note:" not in kept.stderr


# ("\u212a" is the Kelvin sign, the letter K in Unicode's composed form.)
_PART = st.sampled_from(["a", "A", "b", "B", "ab", "Ab", "aB", "\u00e9", "e\u0301", "\u00c9",
                         "k", "\u212a"])


@settings(max_examples=300, deadline=None)
@given(on_disk=st.lists(st.lists(_PART, min_size=2, max_size=4), max_size=6),
       written=st.lists(st.lists(_PART, min_size=2, max_size=4), max_size=6),
       removed=st.lists(st.integers(min_value=0, max_value=5), max_size=3))
def test_new_case_twin_finds_a_made_name_beside_its_twin_exactly_when_there_is_one(
        tmp_path_factory, on_disk: list[list[str]], written: list[list[str]],
        removed: list[int]) -> None:
    """`new_case_twin` (the import's check, tests/test_exchange.py) against its rule read
    plainly: some name the writes make (a file, or a folder on the way to one, below the
    top level) is new, and another name in its folder, on disk and not removed by the same
    import, or made by the writes too, differs from it only in case or Unicode form."""
    from memctl.disk.storefiles import new_case_twin, same_name_key

    root = tmp_path_factory.mktemp("twins")
    files = []
    for parts in on_disk:  # each as a file where nothing stands in the way, as on a real disk
        path = root.joinpath(*parts)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            if not path.exists():
                path.write_text("x")
                files.append("/".join(parts))
        except (FileExistsError, NotADirectoryError):
            continue
    removes = {files[number] for number in removed if number < len(files)}
    disk = {str(p.relative_to(root)) for p in root.rglob("*")} - removes
    writes = ["/".join(parts) for parts in written]
    made = {"/".join(parts[:depth]) for parts in written for depth in range(2, len(parts) + 1)}
    new = made - disk
    beside = disk | made

    def parent(path: str) -> str:
        return path.rpartition("/")[0]

    expected = any(other != name and parent(other) == parent(name)
                   and same_name_key(other) == same_name_key(name)
                   for name in new for other in beside)
    found = new_case_twin(root, writes, sorted(removes))
    assert (found is not None) == expected, (writes, sorted(disk), sorted(removes), found)
    if found is not None:
        name, other, existing = found
        assert name in new and other != name and same_name_key(other) == same_name_key(name)
        assert existing == (other in disk)


@settings(max_examples=300, deadline=None)
@given(before=st.lists(st.lists(_PART, min_size=2, max_size=4), max_size=6),
       after=st.lists(st.lists(_PART, min_size=2, max_size=4), max_size=6))
def test_new_twin_in_tree_finds_a_pair_exactly_when_the_tree_makes_one(
        before: list[list[str]], after: list[list[str]]) -> None:
    """`new_twin_in_tree` (sync's check, tests/test_sync.py) against its rule read plainly:
    two names of the new tree (files, or folders on the way to them, project folders at the
    top too) in one folder differ only in case or Unicode form, and the old tree did not
    have both."""
    from memctl.disk.storefiles import new_twin_in_tree, same_name_key

    def names(paths: list[list[str]]) -> set[str]:
        return {"/".join(parts[:depth]) for parts in paths for depth in range(1, len(parts) + 1)}

    old, new = names(before), names(after)

    def parent(path: str) -> str:
        return path.rpartition("/")[0]

    def a_pair(one: str, other: str) -> bool:
        return (one != other and parent(one) == parent(other)
                and same_name_key(one.rpartition("/")[2]) == same_name_key(other.rpartition("/")[2])
                and not (one in old and other in old))

    expected = any(a_pair(one, other) for one in new for other in new)
    found = new_twin_in_tree(["/".join(parts) for parts in before],
                             ["/".join(parts) for parts in after])
    assert (found is not None) == expected, (before, after, found)
    if found is not None:
        assert found[0] in new and found[1] in new and a_pair(*found)
        assert found[0] not in old


def test_names_in_either_unicode_form_or_case_are_one_name_to_the_import() -> None:
    from memctl.disk.storefiles import same_name_key

    assert same_name_key("caf\u00e9.md") == same_name_key("cafe\u0301.md") \
        == same_name_key("CAF\u00c9.MD")
    assert same_name_key("stra\u00dfe") != same_name_key("strasse")


def test_twins_that_differ_in_unicode_form_alone_are_shown_escaped() -> None:
    """A terminal shows `café` composed and decomposed as one name: an error naming such a
    pair shows both escaped; a pair that differs in case is shown as it is."""
    from memctl.disk.storefiles import twin_names_shown

    assert twin_names_shown("d/caf\u00e9.md", "d/cafe\u0301.md") == ("d/caf\\xe9.md",
                                                                   "d/cafe\\u0301.md")
    assert twin_names_shown("d/Caf\u00e9.md", "d/caf\u00e9.md") == ("d/Caf\u00e9.md",
                                                                  "d/caf\u00e9.md")


@settings(max_examples=500, deadline=None)
@given(st.text(max_size=12))
def test_case_key_is_each_letter_in_capitals_where_that_is_one_letter(name: str) -> None:
    """`case_key` takes the whole name's capitals when no letter became two (one call, where a
    push checks every name of a 10,000-note tree): the same as the rule read letter by
    letter."""
    from memctl.disk.storefiles import case_key

    plain = "".join(char.upper() if len(char.upper()) == 1 else char for char in name)
    assert case_key(name) == plain
