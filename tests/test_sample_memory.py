"""The bundled demo store `sample_memory/`: what the README demo and many tests rely on.

The store is copied to a temp folder and made a git store with the installed `memctl`, as the
demo does; the assertions are what a person running the demo would see.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memctl.core.note import NOTE_TYPES
from memctl.core.noteformat import compute_checksum, parse_text

SAMPLE = Path(__file__).resolve().parent.parent / "sample_memory"
NOW = "2026-11-30T12:00:00Z"

# Ids other tests and the README demo use.
MYSQL_DECISION = "01m8p0axb1ypbnbf"  # superseded by POSTGRES_DECISION (subject/predicate)
POSTGRES_DECISION = "01m8p0b4rc7ecc6q"
WRONG_MIGRATE_FACT = "01m8p0b7hx2q135x"  # corrected (and so superseded) by CORRECTION
CORRECTION = "01m8p0bd561kg476"
EXPIRED_FACT = "01m8p0bgnct0jd1m"  # expires 2026-09-30
HAND_NOTE_PATH = "blog-backend/notes/deploy-checklist.md"
PROJECTS = {"blog-backend", "data-pipeline", "global"}


def _memctl() -> str:
    beside = Path(sys.executable).with_name("memctl")
    found = str(beside) if beside.exists() else shutil.which("memctl")
    if not found:
        pytest.skip("the memctl console script is not installed")
    return found


def _run(store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMCTL_")}
    env.update(MEMCTL_NOW=NOW, NO_COLOR="1")
    return subprocess.run([_memctl(), "--store", str(store), *args], capture_output=True,
                          text=True, encoding="utf-8", env=env, timeout=120)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("demo") / "store"
    shutil.copytree(SAMPLE, root)
    result = _run(root, "init", str(root))
    assert result.returncode == 0, result.stderr
    return root


@pytest.fixture(scope="module")
def listed(store: Path) -> list[dict]:
    result = _run(store, "list", "--all-projects", "--status", "any", "--json")
    assert result.returncode == 0, result.stderr
    assert "error:" not in result.stderr
    return json.loads(result.stdout)


def _note_files(root: Path) -> set[str]:
    """Every file that is a note by the layout rules (docs/architecture.md)."""
    found = set()
    for project in PROJECTS:
        for path in (root / project).rglob("*.md"):
            rel = path.relative_to(root).as_posix()
            parts = rel.split("/")
            if len(parts) == 2 and parts[1] in ("MEMORY.md", "SCRATCHPAD.md"):
                continue
            if parts[1] in ("episodes", "archive"):
                continue
            found.add(rel)
    return found


def test_sample_is_plain_files_not_a_git_repository() -> None:
    assert (SAMPLE / "memctl.toml").is_file()
    assert (SAMPLE / ".tombstones" / ".gitkeep").is_file()
    assert (SAMPLE / ".templates").is_dir()
    assert not (SAMPLE / ".git").exists()
    assert not (SAMPLE / ".memctl").exists()


def test_every_note_file_is_listed(store: Path, listed: list[dict]) -> None:
    paths = [note["path"] for note in listed]
    assert len(paths) == len(set(paths))
    assert set(paths) == _note_files(store)
    assert len(listed) >= 40
    assert len({note["id"] for note in listed}) == len(listed)


def test_every_note_file_parses() -> None:
    for rel in sorted(_note_files(SAMPLE)):
        parsed = parse_text((SAMPLE / rel).read_text(encoding="utf-8"))
        assert parsed.problem is None, f"{rel}: {parsed.problem}"


def test_types_projects_and_languages(listed: list[dict]) -> None:
    assert {note["type"] for note in listed} == set(NOTE_TYPES)
    assert {note["project"] for note in listed} == PROJECTS
    chinese = [n for n in listed if any("\u4e00" <= ch <= "\u9fff" for ch in n["title"])]
    assert {n["project"] for n in chinese} >= {"data-pipeline", "global"}
    assert len({note["importance"] for note in listed}) >= 5


def test_superseded_pair(listed: list[dict]) -> None:
    by_id = {note["id"]: note for note in listed}
    old, new = by_id[MYSQL_DECISION], by_id[POSTGRES_DECISION]
    assert old["status"] == "superseded"
    assert old["superseded_by"] == POSTGRES_DECISION
    assert new["status"] == "active" and new["superseded_by"] is None
    for note in (old, new):
        assert (note["subject"], note["predicate"]) == ("blog-backend", "database")
    assert "MySQL" in old["title"] and "PostgreSQL" in new["title"]


def test_correction_names_what_it_corrects(listed: list[dict]) -> None:
    by_id = {note["id"]: note for note in listed}
    correction = by_id[CORRECTION]
    assert correction["type"] == "correction"
    assert correction["corrects"] == WRONG_MIGRATE_FACT
    assert by_id[WRONG_MIGRATE_FACT]["superseded_by"] == CORRECTION


def test_hand_dropped_note_without_front_matter(listed: list[dict]) -> None:
    text = (SAMPLE / HAND_NOTE_PATH).read_text(encoding="utf-8")
    assert not parse_text(text).has_front_matter
    (note,) = [n for n in listed if n["path"] == HAND_NOTE_PATH]
    assert (note["type"], note["importance"], note["project"]) == ("fact", 5, "blog-backend")
    assert note["title"] == "Deploy checklist (Anna)"


def test_history_gives_the_archive_demo_work(listed: list[dict]) -> None:
    now = datetime(2026, 11, 30, tzinfo=UTC)

    def updated(note: dict) -> datetime:
        return datetime.fromisoformat(note["updated"].replace("Z", "+00:00"))

    old = [n for n in listed if n["status"] == "active" and updated(n) < now - timedelta(days=200)]
    assert len(old) >= 4
    expired = {n["id"]: n for n in listed if n["expires"]}
    assert expired[EXPIRED_FACT]["expires"] == "2026-09-30"
    months = {updated(n).strftime("%Y-%m") for n in listed if n["path"] != HAND_NOTE_PATH}
    assert len(months) >= 8


def test_memory_files_have_the_agreed_sections() -> None:
    for project, headings in {
        "blog-backend": ["Constraints", "Decisions", "Progress", "Lessons"],
        "data-pipeline": ["技术约束", "关键决策", "当前进度", "教训"],
    }.items():
        lines = (SAMPLE / project / "MEMORY.md").read_text(encoding="utf-8").splitlines()
        assert lines[0] == f"# {project}"
        assert [line[3:] for line in lines if line.startswith("## ")] == headings
        items = [line for line in lines if line.startswith("- ")]
        assert items and all(line[2] == "[" and line[8] == "]" for line in items)


def test_scratchpad_has_the_agreed_sections() -> None:
    lines = (SAMPLE / "blog-backend" / "SCRATCHPAD.md").read_text(encoding="utf-8").splitlines()
    assert lines[0] == "# Scratchpad: blog-backend"
    assert [line[3:] for line in lines if line.startswith("## ")] == [
        "Focus", "Open questions", "Next steps", "Done", "Notes"]


def test_episode_format_and_checksum(listed: list[dict]) -> None:
    (path,) = (SAMPLE / "blog-backend" / "episodes").rglob("*.md")
    text = path.read_text(encoding="utf-8")
    parsed = parse_text(text)
    meta = parsed.meta
    assert meta["type"] == "episode" and meta["outcome"] == "completed"
    assert meta["checksum"] == compute_checksum(text)
    assert path.name.startswith(meta["created"][:10]) and path.stem.endswith(meta["id"])
    assert path.parent.name == meta["created"][:7]
    ids = {note["id"] for note in listed}
    assert meta["links"] and set(meta["links"]) <= ids
    assert parsed.body.startswith(f"# {meta['goal']}\n")


@pytest.mark.skipif(shutil.which("make") is None
                    or not (SAMPLE.parent / ".venv" / "bin" / "memctl").exists(),
                    reason="the README's `make demo` needs make and the project's .venv")
def test_the_readme_demo_runs_on_one_copy_of_the_sample_store(tmp_path: Path) -> None:
    """`make demo` as the README gives it: every step on the same fresh copy, with notes,
    hits in English and Chinese, a fuzzy match and a health report to show; the copy is
    removed at the end (tests/test_rough_edges.py: also when a step fails)."""
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("MEMCTL_", "MAKE", "MFLAGS"))}
    temp = tmp_path / "tmp"
    temp.mkdir()
    done = subprocess.run(["make", "--no-print-directory", "demo"], cwd=SAMPLE.parent,
                          env=dict(env, TMPDIR=str(temp), COLUMNS="250"), capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    copied = ("\n" + done.stderr).split("\ncreated ", 1)[1].split("\n", 1)[0].strip()  # `init` says it
    assert Path(copied).parent.parent == temp, "the sample is copied to a temporary folder"
    assert f"memctl health  {copied}" in out, "every step works on the store the sample was copied to"
    assert "\n0 notes" not in out and "PostgreSQL" in out
    assert "no matches" not in out
    # A question in each language is answered, and the exact fact is looked up.
    assert "01m8p0b4rc7ecc6q" in out and "01m8p0b8jff8e4qm" in out
    assert "blog-backend uses PostgreSQL 16" in out
    assert list(temp.iterdir()) == [], "the demo left its temporary store behind"
