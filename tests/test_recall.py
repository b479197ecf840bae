"""`memctl recall`: the budgeted block an agent reads at the start of a session."""

from __future__ import annotations

import unicodedata
from datetime import UTC, datetime

from conftest import run_memctl
from hypothesis import given, settings
from hypothesis import strategies as st

from memctl.mcp_server import MCP_WORDING
from memctl.memory.recall import Budget, Candidate, assemble, cut_text, one_line, render

NOW = {"MEMCTL_NOW": "2026-11-30T12:00:00Z"}


def add(cli, text, *args):
    return cli.ok("add", text, "--json", *args).json()["id"]


def recall_json(cli, *args):
    return cli.ok("recall", "--json", *args).json()


def test_block_has_memory_scratchpad_and_notes_with_ids(cli):
    cli.ok("project", "add", "decisions", "PostgreSQL 16, no ORM")
    cli.ok("scratch", "focus", "Wire recall into the SessionStart hook")
    note = add(cli, "Deploys go through GitHub Actions, never by hand", "--type", "rule")
    block = cli.ok("recall").stdout
    assert "PostgreSQL 16, no ORM" in block
    assert "Wire recall into the SessionStart hook" in block
    # Each note says when it was written, so an agent can answer "when" and judge staleness.
    written = cli.ok("show", note, "--json").json()["updated"][:10]
    assert f"`{note}` (rule, {written}) Deploys go through GitHub Actions" in block
    assert "<!--" not in block  # template comments cost context and say nothing
    data = recall_json(cli)
    assert set(data) >= {"project", "memory_md", "scratchpad", "notes", "truncated"}
    assert data["project"] == "demo"
    assert "PostgreSQL 16, no ORM" in data["memory_md"]
    assert "Wire recall" in data["scratchpad"]
    assert data["notes"][0]["id"] == note and data["notes"][0]["type"] == "rule"


def test_nothing_yet_gives_nulls_and_a_hint(cli):
    data = recall_json(cli)
    assert data["memory_md"] is None and data["scratchpad"] is None and data["notes"] == []
    assert "memctl add" in cli.ok("recall").stdout


def test_a_budget_of_no_notes_says_the_notes_are_there(cli):
    """`--limit 0` (or a budget every note misses) said "none yet: `memctl add` records one",
    and an agent concluded its memory was empty."""
    add(cli, "Deploys go through GitHub Actions")
    add(cli, "The API allows 100 requests a minute")
    block = cli.ok("recall", "-n", "0").stdout
    assert "(none shown: 2 live notes did not fit the budget; --limit above 0 shows some)" in block
    assert "none yet" not in block


def test_count_and_per_note_budget(cli):
    for i in range(12):
        add(cli, f"Fact number {i} about the build: " + "lorem ipsum dolor sit amet " * 8)
    data = recall_json(cli)
    assert len(data["notes"]) == 8 and data["truncated"] is True and data["omitted"] == 4
    for note in data["notes"]:
        assert len(note["text"]) <= 100 and note["text"].endswith("…")
        assert note["text"][:-1].rstrip().split()[-1] in ("lorem", "ipsum", "dolor", "sit", "amet")
    data = recall_json(cli, "--limit", "3", "--note-chars", "40")
    assert len(data["notes"]) == 3
    assert all(len(n["text"]) <= 40 for n in data["notes"])


def test_settings_in_memctl_toml_set_the_defaults(cli, store_path):
    toml = store_path / "memctl.toml"
    toml.write_text(toml.read_text().replace("max_notes = 8", "max_notes = 2"))
    for i in range(4):
        add(cli, f"Setting fact {i}")
    assert len(recall_json(cli)["notes"]) == 2


def test_total_cap_cuts_the_block(cli, store_path):
    path = store_path / "demo" / "MEMORY.md"
    path.parent.mkdir(parents=True)
    path.write_text("# Demo\n\n## Progress\n" + "".join(f"- step {i} done\n" for i in range(300)))
    for i in range(8):
        add(cli, f"Cap fact {i}: the cache is warmed at start")
    block = cli.ok("recall", "--max-chars", "1500").stdout
    assert len(block) <= 1500
    assert "memctl project show" in block  # says where the rest is
    data = recall_json(cli, "--max-chars", "1500")
    assert data["truncated"] is True and data["memory_md_cut"] is True
    assert len(data["notes"]) >= 3  # notes are compact: kept ahead of the long file
    # Without the cap everything is there and nothing says it was cut.
    full = recall_json(cli, "--max-chars", "100000")
    assert full["memory_md"] == path.read_text() and full["memory_md_cut"] is False


def test_global_notes_in_other_projects_out(cli):
    mine = add(cli, "The demo service listens on port 8080")
    global_note = add(
        cli, "The user prefers answers in English", "--global", "--type", "preference"
    )
    other = add(cli, "The other service listens on port 9090", "--project", "other")
    ids = {n["id"] for n in recall_json(cli)["notes"]}
    assert {mine, global_note} <= ids and other not in ids
    assert other in {n["id"] for n in recall_json(cli, "--project", "other")["notes"]}


def test_stale_notes_are_never_recalled(cli, store_path):
    old = add(cli, "The API is served on port 8000", "--subject", "api", "--predicate", "port")
    new = add(cli, "The API is served on port 8443", "--subject", "api", "--predicate", "port")
    expired = cli.ok("add", "Freeze all deploys this week", "--expires", "2026-11-01", "--json",
                     env={"MEMCTL_NOW": "2026-10-01T00:00:00Z"}).json()["id"]  # written before it expired
    archived_file = store_path / "demo" / "archive" / "fact" / "old-news.md"
    archived_file.parent.mkdir(parents=True)
    archived_file.write_text(
        "---\nid: 01archivedxxxxxx\nstatus: archived\n---\nOld news about port 7000\n"
    )
    ids = {n["id"] for n in recall_json(cli)["notes"]}
    assert new in ids
    assert not ids & {old, expired, "01archivedxxxxxx"}
    ids = {n["id"] for n in recall_json(cli, "port")["notes"]}
    assert new in ids and not ids & {old, expired, "01archivedxxxxxx"}


def test_corrections_then_rules_first_and_the_query_steers(cli):
    facts = [
        add(cli, f"Unrelated fact {i} about the office", "--importance", "9") for i in range(6)
    ]
    redis = add(cli, "The cache layer is Redis 7 in cluster mode")
    rule = add(cli, "Never commit directly to main", "--type", "rule")
    correction = add(
        cli, "Correction: the staging host is stg-2, not stg-1", "--type", "correction"
    )
    notes = recall_json(cli, "--limit", "3")["notes"]
    assert [n["id"] for n in notes[:2]] == [correction, rule]
    assert redis not in {n["id"] for n in notes}
    steered = recall_json(cli, "redis cache", "--limit", "3")["notes"]
    assert redis in {n["id"] for n in steered}
    assert steered[0]["id"] == redis and steered[0]["reason"] == "query"
    assert set(facts) & {n["id"] for n in recall_json(cli)["notes"]}


def test_recall_counts_accesses(cli):
    note = add(cli, "The build uses Bazel 7")
    assert cli.ok("show", note, "--json").json()["access_count"] == 0
    cli.ok("recall", env=NOW)
    cli.ok("recall", "bazel", "--json", env=NOW)
    shown = cli.ok("show", note, "--json").json()
    assert shown["access_count"] == 2
    assert shown["last_accessed"].startswith(NOW["MEMCTL_NOW"][:10])


def test_big_memory_md_is_flagged(cli, store_path):
    path = store_path / "demo" / "MEMORY.md"
    path.parent.mkdir(parents=True)
    path.write_text("# Big\n\n## Lessons\n" + "- a lesson that goes on and on\n" * 400)
    result = cli.ok("recall")
    assert "warning:" in result.stderr and "distil" in result.stderr
    assert recall_json(cli)["warnings"]


def test_installed_command_prints_markdown(store_path):
    run_memctl("add", "Logs are shipped to Loki", store=store_path)
    result = run_memctl("recall", "loki", store=store_path)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("# Memory for project `demo`")
    assert "Logs are shipped to Loki" in result.stdout


def test_bad_budget_flags_are_usage_errors(cli):
    assert cli("recall", "--limit", "-1").exit_code == 2
    assert cli("recall", "--max-chars", "5").exit_code == 2


# --- pure: cutting and assembling -------------------------------------------------------------


def test_cut_on_word_and_character_boundaries():
    assert cut_text("short", 100) == ("short", False)
    text, cut = cut_text("alpha beta gamma delta", 15)
    assert cut and text == "alpha beta…"
    text, cut = cut_text("数据库连接池的大小设置为二十个连接以降低延迟", 10)
    assert cut and text == "数据库连接池的大小…"
    text, _ = cut_text("https://example.com/" + "a" * 200, 30)
    assert len(text) == 30  # one huge word is cut inside rather than dropped


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300), st.integers(min_value=2, max_value=120))
def test_cut_text_never_exceeds_the_limit_or_invents_text(text, limit):
    result, was_cut = cut_text(text, limit)
    assert len(result) <= limit
    if not was_cut:
        assert result == text
    else:
        assert result.endswith("…")
        assert text.startswith(result[:-1])
        kept = result[:-1]
        if kept and len(kept) < len(text):
            # Never separate a character from the combining mark that follows it.
            assert not unicodedata.combining(text[len(kept)]) or not kept


@settings(max_examples=100, deadline=None)
@given(
    st.text(max_size=3000),
    st.text(max_size=3000),
    st.lists(st.text(min_size=1, max_size=300), max_size=12),
    st.integers(min_value=200, max_value=4000),
)
def test_assembled_block_respects_every_budget(memory, scratch, texts, cap):
    moment = datetime(2026, 11, 30, tzinfo=UTC)
    chosen = [
        (Candidate(f"id{i}", "fact", "p", 5, moment, text), "important")
        for i, text in enumerate(texts)
    ]
    budget = Budget(max_notes=8, note_chars=100, total_chars=cap)
    result = assemble("p", memory or None, scratch or None, chosen[:8], budget)
    assert len(result.markdown) <= cap
    assert len(result.notes) <= 8
    assert all(len(note.text) <= 100 for note in result.notes)


def test_a_query_that_matches_nothing_says_so_and_brings_no_unrelated_notes(cli):
    """Nothing rather than noise: an unrelated note is not recalled for a question it does not
    answer; the notes that always come (rules, corrections, importance 8+) still are."""
    unrelated = add(cli, "The office plants are watered on Fridays")
    rule = add(cli, "Never commit directly to main", "--type", "rule")
    answer = add(cli, "上次部署失败是因为迁移脚本超时")
    asked = recall_json(cli, "上次部署失败的原因是什么")
    ids = [n["id"] for n in asked["notes"]]
    assert ids[0] == answer and not asked["no_match"]
    assert unrelated not in ids and rule in ids
    nothing = recall_json(cli, "what is the kubernetes ingress controller")
    assert nothing["no_match"] and [n["id"] for n in nothing["notes"]] == [rule]
    block = cli.ok("recall", "what is the kubernetes ingress controller").stdout
    assert "no note matches the query" in block and "office plants" not in block
    assert recall_json(cli)["notes"] and unrelated in {n["id"] for n in recall_json(cli)["notes"]}


def test_recalled_notes_carry_their_date(cli):
    note = cli.ok("add", "The build uses Bazel 7", "--json",
                  env={"MEMCTL_NOW": "2025-03-04T05:06:07Z"}).json()["id"]
    recalled = recall_json(cli, "bazel")["notes"]
    assert recalled[0]["id"] == note and recalled[0]["date"] == "2025-03-04"
    assert f"`{note}` (fact, 2025-03-04) The build uses Bazel 7" in cli.ok("recall", "bazel").stdout


def test_rules_known_to_contradict_each_other_are_marked(cli):
    always = add(cli, "Always deploy on Fridays", "--type", "rule")
    said = cli.ok("add", "Never deploy on Fridays", "--type", "rule")
    assert "may contradict" in said.stderr + said.stdout  # what `add` knows …
    never = next(n["id"] for n in cli.ok("list", "--json").json() if n["id"] != always)
    pairs = cli.ok("health", "--json").json()["contradictions"]  # … and `health`
    assert [{p["a"]["id"], p["b"]["id"]} for p in pairs] == [{always, never}]
    other = add(cli, "Builds run on GitHub Actions", "--type", "rule")
    notes = {n["id"]: n for n in recall_json(cli)["notes"]}
    assert notes[always]["contradicts"] == [never] and notes[never]["contradicts"] == [always]
    assert notes[other]["contradicts"] == []
    block = cli.ok("recall").stdout
    assert f"Always deploy on Fridays [⚠ contradicts `{never}`]" in block
    assert f"Never deploy on Fridays [⚠ contradicts `{always}`]" in block
    assert "Builds run on GitHub Actions\n" in block


def test_notes_that_look_like_secrets_are_left_out_and_counted(cli):
    kept = add(cli, "CI uploads artifacts to the releases bucket")
    secret = add(cli, "CI uploads with AKIAIOSFODNN7EXAMPLE", "--allow-secret")
    hidden = cli.ok("add", "CI deploy notes", "--json", "--allow-secret", "--subject",
                    "password=Sup3r$ecret9").json()["id"]  # a secret in the front matter
    flagged = {e["path"] for e in cli.ok("health", "--json").json()["secrets"]}
    assert len(flagged) == 2  # what `health` flags …
    data = recall_json(cli)
    ids = [n["id"] for n in data["notes"]]
    assert kept in ids and secret not in ids and hidden not in ids  # … recall leaves out
    assert data["secrets_left_out"] == 2
    block = cli.ok("recall").stdout
    assert "AKIA" not in block and "2 notes were left out" in block
    assert recall_json(cli, "uploads")["secrets_left_out"] == 1


def test_secrets_let_into_memory_md_or_the_scratchpad_are_masked_in_the_block(cli):
    """A key let into MEMORY.md or the scratchpad with --allow-secret stays in the file, and
    the block (an agent's context) shows it masked, saying so, as a note holding one is left
    out of it."""
    cli.ok("project", "add", "decisions", "Uploads sign with AKIAIOSFODNN7EXAMPLE",
           "--allow-secret")
    cli.ok("scratch", "note", "token ghp_aB3dE5gH7jK9mN1pQ3rS5tU7vW9xY1zA2bC4", "--allow-secret")
    block = cli.ok("recall")
    assert "AKIAIOSFODNN7EXAMPLE" not in block.stdout and "ghp_aB3dE5" not in block.stdout
    assert "AKIA" in block.stdout and "ghp_" in block.stdout  # masked, where they were
    assert "Uploads sign with" in block.stdout
    assert block.stderr.count("a likely secret is shown masked") == 2, block.stderr
    data = recall_json(cli)
    assert "AKIAIOSFODNN7EXAMPLE" not in data["memory_md"] and "ghp_aB3dE5" not in data["scratchpad"]
    assert "AKIAIOSFODNN7EXAMPLE" in cli.ok("project", "show").stdout  # the file keeps it


def test_conflict_markers_after_a_masked_key_of_several_lines_are_named_at_their_line(cli):
    """A private key of several lines in MEMORY.md is masked as one line in the block: the
    warning about git conflict markers after it named a line two or more too early."""
    cli.ok("add", "Deploys go out on Fridays")
    memory = cli.store / "demo" / "MEMORY.md"
    memory.write_text("# Demo\n\nDeploy key:\n-----BEGIN RSA PRIVATE KEY-----\n"
                      + "MIIEpAIBAAKCAQEA1234567890abcdefghij\n" * 3
                      + "-----END RSA PRIVATE KEY-----\n\n<<<<<<< HEAD\nFridays\n=======\n"
                      "Mondays\n>>>>>>> other\n")
    block = cli.ok("recall")
    assert "a likely secret is shown masked" in block.stderr
    assert "demo/MEMORY.md:10: git conflict markers" in block.stderr, block.stderr
    assert "MIIEpAIBAAKCAQEA" not in block.stdout


def test_a_small_budget_repeats_little_of_a_long_question(cli):
    """The heading repeated the query's first 200 characters: with a budget of 250, a long
    question left room for the heading alone, and the note it asked about was not shown."""
    cli.ok("add", "The deploy uses blue-green switching on the load balancer",
           "--type", "decision")
    question = ("why did the deploy fail last time on the load balancer with blue green "
                "switching when we rolled back")
    block = cli.ok("recall", question, "--max-chars", "250").stdout
    assert len(block) <= 250
    assert "blue-green switching" in block, block
    assert block.splitlines()[0].endswith("…)") and question not in block


def test_notes_longer_than_the_block_are_cut_to_the_room_left_not_all_left_out(cli):
    """`--note-chars` above `--max-chars`: every note was dropped, and the block said that
    `--limit` above 0 would show some (it was 50). The last note standing is cut to the room
    left instead (docs/agents.md, "The recall budget")."""
    for number in range(4):
        cli.ok("add", f"第{number}条：" + "缓存数据库部署" * 300, "--type", "rule", "--force")
    block = cli.ok("recall", "--limit", "50", "--note-chars", "5000", "--max-chars",
                   "1000").stdout
    assert len(block) <= 1000
    assert "none shown" not in block
    shown = [line for line in block.splitlines() if line.startswith("- `")]
    assert len(shown) == 1 and shown[0].endswith("…") and "缓存数据库部署" in shown[0]
    data = cli.ok("recall", "--limit", "50", "--note-chars", "5000", "--max-chars", "1000",
                  "--json").json()
    assert len(data["notes"]) == 1 and data["notes"][0]["cut"] and data["truncated"]


def test_notes_left_out_for_want_of_characters_name_the_budget_not_the_limit():
    block = render("p", None, None, [], memory_path="", scratchpad_path="", left_out=4,
                   over_budget=4, total_chars=380)
    assert "(none shown: 4 live notes did not fit the budget of 380 characters; a larger " \
           "--max-chars shows some)" in block, block
    assert "--limit" not in block
    told = render("p", None, None, [], memory_path="", scratchpad_path="", left_out=4,
                  over_budget=4, total_chars=380, wording=MCP_WORDING)
    assert "a larger setting recall.total_chars shows some" in told and "--" not in told
    # `--limit 0`: the limit, not the budget
    limited = render("p", None, None, [], memory_path="", scratchpad_path="", left_out=4)
    assert "--limit above 0 shows some" in limited


def test_memory_md_cut_inside_a_code_block_closes_it_before_the_notes(cli, store_path):
    """MEMORY.md cut to the budget inside a fenced code block left the fence open: the cut
    marker, the scratchpad and every note after it read as part of the code."""
    path = store_path / "demo" / "MEMORY.md"
    path.parent.mkdir(parents=True)
    steps = "".join(f"echo step {i} of the long deploy procedure\n" for i in range(60))
    path.write_text(f"# Demo\n\n## Decisions\n- Deploy script:\n\n```sh\n{steps}```\n\n"
                    "## Lessons\n- back up first\n")
    rule = add(cli, "Always use pnpm, never npm", "--type", "rule")
    block = cli.ok("recall", "--max-chars", "1200").stdout
    assert len(block) <= 1200 and "memctl project show" in block
    before_notes = block.split("## Relevant notes")[0]
    fences = [line for line in before_notes.splitlines() if line.startswith("```")]
    assert fences == ["```sh", "```"], block
    assert block.index("```\n[… cut to fit") < block.index(f"`{rule}`")
    data = recall_json(cli, "--max-chars", "1200")
    assert data["memory_md_cut"] and data["memory_md"].count("```") == 2


def test_a_short_scratchpad_is_not_swapped_for_a_longer_cut_marker(cli, store_path):
    """The scratchpad is shortened first when the block is over budget; one shorter than the
    cut marker was replaced by the marker: the focus was lost and the block got longer."""
    path = store_path / "demo" / "MEMORY.md"
    path.parent.mkdir(parents=True)
    path.write_text("# Demo\n\n## Progress\n" + "".join(f"- step {i} done\n" for i in range(200)))
    cli.ok("scratch", "focus", "Fix the pool timeout")
    block = cli.ok("recall", "--max-chars", "1200").stdout
    assert len(block) <= 1200
    assert "Fix the pool timeout" in block and "memctl scratch show` has it all" not in block
    data = recall_json(cli, "--max-chars", "1200")
    assert not data["scratchpad_cut"] and data["memory_md_cut"]


def test_a_code_comment_in_a_note_keeps_its_mark_in_the_recalled_line() -> None:
    """Heading marks are dropped from a note's one line, but a `#` in a fenced code block is
    a comment: dropped, `# close every connection first` read as an instruction."""
    body = ("# Pool reset\n\n```sh\n# close every connection first\npsql -c 'select 1'\n```\n"
            "## After\nrestart the app\n")
    assert one_line(body) == ("Pool reset ```sh # close every connection first psql -c "
                              "'select 1' ``` After restart the app")


def test_note_chars_follows_the_setting_and_its_help_says_so(cli, store_path) -> None:
    """Without --note-chars a note is cut to `recall.note_chars` (docs/agents.md, the table of
    the block's budget); the help said a fixed "default 100"."""
    cli.ok("add", "The comment counter is updated by a trigger on insert into comments, nightly")
    settings = store_path / "memctl.toml"
    settings.write_text(settings.read_text().replace("note_chars = 100", "note_chars = 30"))
    [note] = recall_json(cli)["notes"]
    assert note["cut"] and len(note["text"]) <= 31
    help_text = " ".join(cli.ok("recall", "--help", env={"COLUMNS": "200"}).stdout.split())
    assert "Cut each note to N characters (default: setting recall.note_chars, 100)." in help_text
