"""How a best match chooses its candidates (docs/search.md, "How candidates are chosen" and
"Nothing rather than noise"): the entries covering the most of the query, whatever their
BM25, so a note with the rarest words is found among many that have only the common ones;
the common units left out of the ranking are only those no candidate needs; `--explain`
names the units BM25 was computed over."""

from __future__ import annotations

from pathlib import Path

from conftest import Cli
from conftest import write_memory_file as write

from memctl.index import bestmatch

FILLER = 200  # notes without any word of the queries: the common words stay under half


def note(root: Path, note_id: str, body: str, **meta: object) -> None:
    meta.setdefault("type", "fact")
    meta.setdefault("updated", "2026-11-29T00:00:00.000Z")
    write(root, f"demo/notes/{meta['type']}/{note_id}.md", body, id=note_id, project="demo", **meta)


def filler(root: Path) -> None:
    for number in range(FILLER):
        note(root, f"fl{number:014d}", f"Weather station {number} reports wind and rain hourly.")


def search(cli: Cli, query: str) -> list[dict]:
    return cli.ok("search", query, "--json", "--explain", "--limit", "20").json()


def test_a_note_with_the_rarest_words_is_found_among_many_with_the_common_ones(
        cli: Cli, store_path: Path) -> None:
    """80 short, important, fresh notes have the two common words in their title: by BM25 and
    the factors each ranks far above the one note that has the three rare words in a long
    body (more than CANDIDATES of them: ranked by BM25 first, it was never a candidate). It
    covers most of the query, so it is the answer; they cover too little to be shown."""
    filler(store_path)
    for number in range(80):
        note(store_path, f"cm{number:014d}", f"Deploy cache checklist {number}", importance=10)
    assert 80 > bestmatch.CANDIDATES
    padding = " ".join(f"paragraph{n} of the incident timeline" for n in range(600))
    note(store_path, "rare000000000001",
         f"Postmortem\n\n{padding} The zebrafish quokka narwhal trio broke the build. {padding}",
         importance=1, updated="2025-06-01T00:00:00.000Z")
    hits = search(cli, "zebrafish quokka narwhal deploy cache")
    assert [hit["id"] for hit in hits] == ["rare000000000001"]
    explain = hits[0]["explain"]
    assert {"zebrafish", "quokka", "narwhal"} <= set(explain["matched"])
    # The common words count in coverage, not in BM25: no candidate needs them to be found.
    assert {unit.rstrip("…") for unit in explain["bm25_units"]} <= {"zebrafish", "quokka", "narwhal"}
    assert "**zebrafish**" in hits[0]["snippet"]


def test_notes_with_only_the_common_words_are_found_when_they_cover_enough(
        cli: Cli, store_path: Path) -> None:
    """The common units are left out of the ranking only when no note having nothing else
    could be shown: here the notes with both common words cover more than RELATIVE_FLOOR of
    what the best note covers, so they are candidates and are shown after it; a note with one
    common word covers too little."""
    filler(store_path)
    note(store_path, "best000000000001", "The zebrafish deploy cache is warmed at 04:00.")
    both = [f"both{number:012d}" for number in range(4)]
    for number, note_id in enumerate(both):
        note(store_path, note_id, f"Deploy cache size for shard {number} is 2 GB.")
    for number in range(4):
        note(store_path, f"one{number:013d}", f"The cache of shard {number} is cold.")
    hits = search(cli, "zebrafish deploy cache")
    found = [hit["id"] for hit in hits]
    assert found[0] == "best000000000001"
    assert set(found[1:]) == set(both)
    floor = bestmatch.RELATIVE_FLOOR * hits[0]["coverage"]
    assert all(hit["coverage"] >= floor for hit in hits)
    assert all(hit["explain"]["bm25"] > 0 for hit in hits)


def test_a_third_of_the_best_is_shown_when_a_rarer_word_is_in_it_and_never_with_only_common_ones(
        cli: Cli, store_path: Path) -> None:
    """RELATIVE_FLOOR and COMMON_FLOOR: the note with one rare word of the question covers a
    third of what the best note (three rare words) covers, and is shown below it; the 60
    notes with the question's four common words cover about as much (38 %), but those words
    together weigh less than COMMON_FLOOR of the best, so they are not shown. With one floor
    of 40 % the rare word's note was left out too."""
    filler(store_path)
    for number in range(60):
        note(store_path, f"cm{number:014d}", f"Deploy cache build release checklist {number}")
    best, rarer = "best000000000001", "rare000000000001"
    note(store_path, best, "The zebrafish quokka narwhal trio broke the nightly job.")
    note(store_path, rarer, "An axolotl is the mascot of the second team.")
    hits = search(cli, "zebrafish quokka narwhal axolotl deploy cache build release")
    assert [hit["id"] for hit in hits] == [best, rarer]
    share = hits[1]["coverage"] / hits[0]["coverage"]
    assert bestmatch.RELATIVE_FLOOR <= share < bestmatch.COMMON_FLOOR
    assert {unit.rstrip("…") for unit in hits[1]["explain"]["matched"]} == {"axolotl"}
    assert not {"deploy", "cache", "build", "release"} & {
        unit.rstrip("…") for unit in hits[0]["explain"]["bm25_units"]}


def test_a_chinese_question_ranks_by_its_rarer_pairs_and_counts_the_common_one(
        cli: Cli, store_path: Path) -> None:
    """An unspaced question: the pair in every note (部署) counts in coverage only, not in
    BM25; the note with the rarer pair (失败) and the run (部署失败) is the answer, and its
    snippet highlights every unit, the common one too."""
    for number in range(30):
        note(store_path, f"dp{number:014d}", f"部署流程第 {number} 步：先备份再发布。")
    failed = "fa00000000000001"
    note(store_path, failed, "上次部署失败是因为迁移脚本超时。")
    hits = search(cli, "上次部署失败的原因是什么")
    assert [hit["id"] for hit in hits] == [failed]  # the others cover too little
    explain = hits[0]["explain"]
    assert {"部署", "失败", "部署失败"} <= set(explain["matched"])
    assert explain["bm25_units"] and "部署" not in explain["bm25_units"]
    assert hits[0]["snippet"] == "上次**部署失败**是因为迁移脚本超时。"  # every unit highlighted


def test_a_long_chinese_name_weighs_as_its_words_not_its_characters(
        cli: Cli, store_path: Path) -> None:
    """A question names its project in Chinese (数据管道, four characters) and asks about one
    rare word (Celery). The name's units (three pairs and the run) weigh half each
    (query.LONG_PIECE_SHARE), about two words: the note that has only Celery covers more than
    RELATIVE_FLOOR of what the note having only the name covers, so it is shown. At full weight
    the name outweighed Celery four to one and the answer was left out."""
    filler(store_path)
    named = "nm00000000000001"
    note(store_path, named, "数据管道的监控服务在 3 月换成了 VictoriaMetrics 1.103。")
    answer = "ce00000000000001"
    note(store_path, answer, "Celery 锁定在 5.3，因为 5.4 改了重试语义。")
    # (Not `数据管道这边，…`: a piece said as a side weighs a tenth, SIDE_SHARE.)
    hits = search(cli, "数据管道的Celery能升到最新版吗？")
    found = [hit["id"] for hit in hits]
    assert answer in found and named in found
    by_id = {hit["id"]: hit for hit in hits}
    assert by_id[answer]["explain"]["matched"] == ["Celery"]
    assert by_id[answer]["coverage"] >= bestmatch.RELATIVE_FLOOR * by_id[named]["coverage"]


def test_entries_the_filters_leave_out_never_fill_the_pool(cli: Cli, store_path: Path) -> None:
    """210 archived notes cover more of the query than the one live note: they once filled
    the pool (POOL, 200) and the live note, the only one to show, was never a candidate."""
    for number in range(210):
        write(store_path, f"demo/archive/ar{number:014d}.md", f"quokka marimba gadget {number}",
              id=f"ar{number:014d}", project="demo", type="fact")
        note(store_path, f"fa{number:014d}", f"alpha zylophone beta {number}")
    live = "live000000000001"
    note(store_path, live, "The quokka lives here.")
    decision = "dec0000000000001"
    note(store_path, decision, "We chose the zylophone", type="decision")
    assert [hit["id"] for hit in search(cli, "quokka marimba")] == [live]
    assert [hit["id"] for hit in search(cli, "zylophone beta type:decision")] == [decision]


def test_a_quoted_phrase_tells_the_candidates_apart_as_a_word_does(
        cli: Cli, store_path: Path) -> None:
    """The note with the phrase and a common word once fell to the second floor: a phrase
    (required) was not counted among the words that tell a candidate apart."""
    filler(store_path)
    for number in range(60):
        note(store_path, f"fl{number:014d}x"[:16], f"Fly the drone over field {number}.")
    for number in range(3):
        note(store_path, f"tt{number:014d}", f"The cache ttl of shard {number} is 60 s.")
    checklist = "ck00000000000001"
    note(store_path, checklist, "Deploy checklist (Anna): fly the canary first.")
    assert [hit["id"] for hit in search(cli, '"deploy checklist" fly ttl')] == [checklist]


def test_a_date_alone_finds_the_notes_written_then_beside_those_saying_it(
        cli: Cli, store_path: Path) -> None:
    """Six notes say `2026-03-04`: enough exact matches once ended the search there, and the
    note written that day (which does not say it) was left out."""
    for number in range(6):
        note(store_path, f"say{number:013d}", f"Deploy log of 2026-03-04, part {number}.")
    written = "wrt0000000000001"
    note(store_path, written, "The gateway certificate was renewed.",
         created="2026-03-04T09:00:00.000Z", updated="2026-03-04T09:00:00.000Z")
    hits = search(cli, "2026-03-04")
    assert written in [hit["id"] for hit in hits]
    assert all(hit["coverage"] < 1.0 for hit in hits)  # none has both the words and the day
    assert "date:2026-03-04" in next(h for h in hits if h["id"] == written)["explain"]["matched"]


def test_notes_having_only_a_common_date_are_left_out_like_common_words(
        cli: Cli, store_path: Path) -> None:
    """COMMON_FLOOR holds for a date too: five of forty notes were written in March, so the
    date weighs less than 40 % of what the answer covers (38 %), and the four March notes
    having nothing else are not shown, as notes with only the commonest words are not."""
    march = {"created": "2026-03-10T09:00:00.000Z", "updated": "2026-03-10T09:00:00.000Z"}
    june = {"created": "2026-06-10T09:00:00.000Z", "updated": "2026-06-10T09:00:00.000Z"}
    for number in range(35):
        note(store_path, f"jn{number:014d}", f"Weekly report {number}.", **june)
    for number in range(4):
        note(store_path, f"mr{number:014d}", f"Marimba tuning {number}.", **march)
    answer = "qk00000000000001"
    note(store_path, answer, "The quokka marimba broke.", **march)
    hits = search(cli, "quokka in March")
    assert [hit["id"] for hit in hits] == [answer]
