"""bench/bench_locomo.py on a small conversation in LoCoMo's two layouts: the store it
writes, the questions it asks, and what it reports (the real data is not in this repository)."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH))
import bench_locomo  # noqa: E402  (bench/ is not a package)

SESSIONS = {
    "speaker_a": "Caroline", "speaker_b": "Melanie",
    "session_1_date_time": "1:56 pm on 8 May, 2023",
    "session_1": [
        {"speaker": "Caroline", "dia_id": "D1:1", "text": "I went to a LGBTQ support group yesterday."},
        {"speaker": "Melanie", "dia_id": "D1:2", "text": "That sounds powerful! I painted a lake sunrise.",
         "blip_caption": "a painting of a sunrise over a lake"},
    ],
    "session_2_date_time": "7:55 pm on 9 June, 2023",
    "session_2": [
        {"speaker": "Melanie", "dia_id": "D2:1", "text": "I ran a charity race for mental health."},
        {"speaker": "Caroline", "dia_id": "D2:2", "text": "Researching adoption agencies this week."},
    ],
}
QA = [
    {"question": "What did Caroline research?", "answer": "Adoption agencies", "evidence": ["D2:2"], "category": 1},
    {"question": "When did Melanie run a charity race?", "answer": "June 2023", "evidence": ["D2:1"], "category": 2},
    {"question": "What did Melanie paint?", "evidence": ["D1:2"], "category": 5, "adversarial_answer": "x"},
    {"question": "A question whose evidence is no turn", "evidence": ["D9:9"], "category": 4},
]


def test_both_layouts_read_the_same(tmp_path: Path) -> None:
    listed = tmp_path / "locomo10.json"
    listed.write_text(json.dumps([{"sample_id": "conv-26", "conversation": SESSIONS, "qa": QA}]))
    single = tmp_path / "26.json"
    single.write_text(json.dumps({**SESSIONS, "qa": QA}))
    zipped = tmp_path / "locomo10.zip"
    with zipfile.ZipFile(zipped, "w") as archive:
        archive.write(single, "data/multimodal_dialog/locomo10_v2/26.json")
    [a], [b], [c] = (bench_locomo.load_conversations(p) for p in (listed, single, zipped))
    assert a["name"] == "conv26" and b["name"] == c["name"] == "26"
    turns = bench_locomo.turns_of(b["conversation"])
    assert [t[0] for t in turns] == ["D1:1", "D1:2", "D2:1", "D2:2"]
    assert turns[1][1] == ("Melanie: That sounds powerful! I painted a lake sunrise. "
                           "[shares a photo: a painting of a sunrise over a lake]")
    assert turns[0][2].isoformat() == "2023-05-08T13:56:00+00:00"
    notes = {bench_locomo.note_id("26", t[0]) for t in turns}
    questions = bench_locomo.questions_of([b], notes)
    assert [(q["category"], q["relevant"]) for q in questions] == [
        (1, ["locomo26-d2-2"]), (2, ["locomo26-d2-1"]), (5, ["locomo26-d1-2"])]


def test_the_run_asks_memctl_and_bm25_and_reports_both(tmp_path: Path) -> None:
    data = tmp_path / "26.json"
    data.write_text(json.dumps({**SESSIONS, "qa": QA}))
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, str(BENCH / "bench_locomo.py"), "--data", str(data),
                           "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "questions 1-4" in done.stdout and "2 temporal" in done.stdout
    report = json.loads((out / "results.json").read_text())
    ranks = {q["query"]: (q["memctl"]["rank"], q["bm25"]["rank"]) for q in report["queries"]}
    assert ranks["What did Caroline research?"] == (1, 1)
    assert ranks["When did Melanie run a charity race?"][0] == 1
    note = (out / "store" / "locomo-26" / "notes" / "fact" / "locomo26-d2-1.md").read_text()
    assert "created: 2023-06-09T19:55:00.000Z" in note and note.endswith("mental health.\n")
    # A second run replaces the store it made; a folder it did not make is never removed.
    assert subprocess.run([sys.executable, str(BENCH / "bench_locomo.py"), "--data", str(data),
                           "--out", str(out)], capture_output=True, timeout=300).returncode == 0
    (out / "locomo-store.txt").unlink()
    again = subprocess.run([sys.executable, str(BENCH / "bench_locomo.py"), "--data", str(data),
                            "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert again.returncode != 0 and "refusing to delete it" in again.stderr


@pytest.mark.parametrize("text", ["1:56 pm on 8 May, 2023", "10:04 am on 19 October, 2023"])
def test_session_dates_read(text: str) -> None:
    assert bench_locomo.session_date(text).year == 2023
