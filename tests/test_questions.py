"""Questions as agents ask them (docs/search.md, "Best match"): function and question words
are not required, unspaced Chinese is split into pairs of characters, notes are ranked by how
much of the query they cover, a misspelt word is matched by its closest words, exact facts
come first, and MEMORY.md sections compete on relevance."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from conftest import Cli, run_memctl, write_memory_file
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memctl.core.query import parse, without_scope_words
from memctl.core.stopwords import split_chinese
from memctl.core.tokenize import FTS_TOKENIZE

NOW = {"MEMCTL_NOW": "2026-11-30T12:00:00Z"}


def add(cli: Cli, text: str, *args: str, env: dict[str, str] | None = None) -> str:
    return cli.ok("add", text, "--json", "--force", *args, env=env or NOW).json()["id"]


def ids(cli: Cli, query: str, *args: str) -> list[str]:
    return [hit["id"] for hit in cli.ok("search", "--json", *args, "--", query, env=NOW).json()]


# --- the query: units --------------------------------------------------------------------


def test_function_and_question_words_are_not_units() -> None:
    units = [u.label for u in parse("When did we move the nightly backup job to the new cluster?").units]
    assert units == ["move", "nightly", "backup", "job", "new", "cluster?"]
    assert [u.label for u in parse("postgres pool").units] == ["postgres", "pool"]
    # Typed alone, function words are searched like any word.
    assert [u.label for u in parse("what is it").units] == ["what", "is", "it"]


def test_unspaced_chinese_becomes_pairs_and_runs_without_function_words() -> None:
    assert split_chinese("博客后端的缓存是什么时候换成的") == ["博客后端", "缓存", "换成"]
    assert split_chinese("上次部署失败的原因是什么") == ["部署失败", "原因"]
    units = [u.label for u in parse("API服务上次部署失败的原因是什么").units]
    assert units == ["API", "服务", "部署", "署失", "失败", "部署失败", "原因"]


def test_what_an_agent_says_around_its_question_is_not_units() -> None:
    # The request around a question (bench/gen_qa.py's `agent` class): neither the asking nor
    # "right now" is something a note must contain.
    units = [u.label for u in parse("Quick question: which port does staging redis use currently?").units]
    assert units == ["port", "staging", "redis", "use"]
    assert split_chinese("支付服务这边目前是怎样的") == ["支付服务"]
    assert split_chinese("问一下我在写值班交接") == ["在写值班交接"]
    assert split_chinese("为啥挂了") == ["挂"]


def test_explicit_syntax_keeps_its_meaning() -> None:
    query = parse('"real-time queue" kysely OR 缓存 -mysql migr* tag:db')
    labels = [(u.label, u.required) for u in query.units]
    assert labels == [("real-time queue", True), ("kysely OR 缓存", False), ("migr*", False)]
    assert query.any_match is not None and 'NOT ("mysql")' in query.any_match
    assert query.tags == ("db",)
    facts = parse("subject:blog-backend predicate:Database what is it")
    assert facts.subjects == ("blog-backend",) and facts.predicates == ("database",)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=80))
def test_any_text_gives_a_valid_best_match(text: str) -> None:
    """The best-match MATCH is as safe as the strict one: never an FTS5 syntax error."""
    conn = sqlite3.connect(":memory:")
    conn.execute(f"CREATE VIRTUAL TABLE f USING fts5(body, tokenize='{FTS_TOKENIZE}')")
    conn.execute("INSERT INTO f(body) VALUES ('anything at all 数据 库')")
    try:
        query = parse(text)
    except Exception:  # an empty or bad-filter query is bad usage, tested in test_query.py
        return
    for expression in (query.any_match, query.match, *(u.match for u in query.units)):
        if expression is not None:
            conn.execute("SELECT rowid FROM f WHERE f MATCH ?", (expression,)).fetchall()


# --- ranking ---------------------------------------------------------------------------------


def test_a_question_finds_the_note_that_answers_it(cli: Cli) -> None:
    answer = add(cli, "The nightly backup job moved to cluster b2 on 2026-03-14")
    add(cli, "The nightly report job runs at 02:00")
    add(cli, "We moved the docs to the new wiki")
    assert ids(cli, "When did we move the nightly backup job to the new cluster?")[0] == answer


def test_an_unspaced_chinese_question_finds_the_note(cli: Cli) -> None:
    answer = add(cli, "博客后端的缓存在 3 月换成了 Redis 7")
    add(cli, "博客前端的部署流程见 docs/deploy.md")
    add(cli, "缓存预热任务每晚 04:45 开始")
    assert ids(cli, "博客后端的缓存是什么时候换成的？")[0] == answer
    failed = add(cli, "上次部署失败是因为迁移脚本超时")
    assert ids(cli, "上次部署失败的原因是什么")[0] == failed


@pytest.mark.parametrize(("texts", "query"), [
    (["Redis timeout is 5 seconds for every client in the cluster.",
      "Redis timeout alerts page on-call.",
      "Payment API timeout: Redis lock held too long, timeout raised.",
      "Redis stores sessions.", "Timeout for HTTP calls is 30 s.", "Redis runs version 7.",
      "The worker timeout is 60 s."], "redis timeout"),
    (["接口超时统一设为 30 秒，超过就重试。", "日志接口超时会触发告警。",
      "微信支付统一下单接口超时设为 10 秒。", "订单接口返回 JSON。", "超时重试最多三次。"],
     "接口超时"),
], ids=["english", "chinese"])
def test_the_first_hits_are_the_same_whatever_the_limit(cli: Cli, texts: list[str],
                                                        query: str) -> None:
    """`--limit N` is the first N hits of one order: a small limit took the keyword way
    (BM25 over every word) with fewer exact hits than the default needs, and so gave
    another first hit than `search` without it."""
    for text in texts:
        add(cli, text)
    whole = ids(cli, query)
    assert len(whole) >= 3
    for limit in range(1, len(whole) + 1):
        assert ids(cli, query, "--limit", str(limit)) == whole[:limit], limit


@pytest.mark.parametrize(("query", "answer"), [
    ("Error at src/db/pool.ts:42:13", "pool"),
    ("what is in pool.ts:42?", "pool"),
    ("ECONNREFUSED 127.0.0.1:5432", "postgres"),
    ("localhost:5432", "postgres"),
    ("AWS_PROFILE=staging", "deploy"),
    ("postgres://app@db-stg-03.internal:5432/app", "host"),
])
def test_a_pasted_path_address_or_assignment_finds_the_note_of_its_part(
        cli: Cli, query: str, answer: str) -> None:
    """A word of several parts that no note has whole (a stack trace's location, an
    address, `KEY=value`) matched nothing, and neither the misspelling nor the fallback
    search recovered it: now its longest runs of parts that notes have match, as close ones."""
    notes = {
        "pool": add(cli, "The pool config lives in src/db/pool.ts."),
        "postgres": add(cli, "Local Postgres runs on port 5432; start it with docker compose up db."),
        "deploy": add(cli, "The deploy script is scripts/deploy.sh and needs AWS_PROFILE=prod."),
        "host": add(cli, "The staging DB host is db-stg-03.internal behind bastion-2."),
    }
    add(cli, "Redis caches sessions for the web app.")
    found = cli.ok("search", "--json", "--", query, env=NOW).json()
    assert found and found[0]["id"] == notes[answer], [hit["title"] for hit in found]
    assert found[0]["fuzzy"] is True and found[0]["exact"] is False
    said = cli.ok("search", "--", query, env=NOW)
    assert "no exact matches; showing close ones" in said.stderr


def test_a_pasted_word_none_of_whose_parts_a_note_has_finds_nothing(cli: Cli) -> None:
    add(cli, "The pool config lives in src/db/pool.ts.")
    assert ids(cli, "qqq.zzz:9999") == []
    # A function word alone is no part worth a match (`is` of `what.is:xyzzy`).
    add(cli, "What it is: a note about nothing in particular.")
    assert ids(cli, "xyzzy.is:plugh") == []


def test_a_word_said_twice_in_other_forms_counts_once(cli: Cli) -> None:
    """`connect: connection refused` says one thing twice: counted twice, it lifted the notes
    about connections above the one with the error line's port (bench/bench_retrieval.py,
    the `pasted` class)."""
    port = add(cli, "The object storage listens on port 9009 in every environment.")
    add(cli, "The connection pool holds twenty per worker.")
    add(cli, "Connections to the cache go through the sidecar.")
    add(cli, "Redis caches sessions for the web app.")
    add(cli, "Backups run nightly at two.")
    query = "dial tcp 10.3.175.210:9009: connect: connection refused"
    assert ids(cli, query)[0] == port
    explained = cli.ok("search", "--json", "--explain", "--", query, env=NOW).json()
    assert all("connection" not in hit["explain"]["matched"] for hit in explained)


def test_a_pasted_name_of_several_parts_outweighs_a_common_word(cli: Cli) -> None:
    """The host of `ubuntu@s3-prod-03.internal: Permission denied` is four parts in a row: it
    weighed as much as one word, and a note about permissions ranked above the host's."""
    host = add(cli, "Production object storage is s3-prod-03.internal, reached through "
                    "the bastion.")
    add(cli, "We chose Casbin for object-level permissions.", "--importance", "9")
    add(cli, "Redis caches sessions for the web app.")
    assert ids(cli, "ubuntu@s3-prod-03.internal: Permission denied (publickey).")[0] == host


def test_a_small_number_alone_is_no_part_of_a_pasted_address(cli: Cli) -> None:
    """`10` of `10.3.175.210:9009` is in any note that counts something: only the port, or
    numbers of three digits or more, stand for the address."""
    port = add(cli, "The object storage listens on port 9009 in every environment.")
    add(cli, "Dial timeouts: the pool keeps 10 per worker.", "--importance", "9")
    add(cli, "Redis caches sessions for the web app.")
    add(cli, "Dial-up modems are gone from the office.")
    query = "dial tcp 10.3.175.210:9009"
    assert ids(cli, query)[0] == port
    labels = [label for hit in cli.ok("search", "--json", "--explain", "--", query,
                                      env=NOW).json() for label in hit["explain"]["matched"]]
    assert "10.3.175.210:9009→10" not in labels


def test_a_word_in_capitals_is_a_code_matched_only_when_nearly_the_same(cli: Cli) -> None:
    """`ECONNREFUSED` is not a misspelt `ECONNRESET` (edit ratio 81.8): a code's neighbours are
    other codes. A letter left out or doubled still finds it (`ECONREFUSED`, `POSTGRESS`)."""
    reset = add(cli, "ECONNRESET from the database pool after idle periods.")
    refused = add(cli, "The Redis client throws ECONNREFUSED until the sidecar is up.")
    pool = add(cli, "Postgres connection pool max is 20 per pod.")
    assert ids(cli, "ECONNRESETS") == [reset]
    assert ids(cli, "ECONREFUSED") == [refused]
    assert ids(cli, "POSTGRESS") == [pool]
    cli.ok("forget", refused, env=NOW)
    assert ids(cli, "ECONNREFUSED") == []
    assert ids(cli, "econnrefused") == [reset]  # in small letters, a misspelling as before


def test_a_link_prefix_many_notes_share_does_not_outweigh_the_answer(cli: Cli) -> None:
    """A run of parts several notes have (the `https://github.com/acme/api/pull` of a pull
    request's link) counts little more than a word: counted as six words, its notes ranked
    above the one about the checkout tests."""
    def note(number: int, text: str) -> None:
        write_memory_file(cli.store, f"demo/notes/fact/n{number:02d}.md", text,
                          id=f"n{number:02d}", type="fact", project="demo",
                          updated="2026-11-29T00:00:00.000Z")

    for number in range(6):
        note(number, f"Notes on https://github.com/acme/api/pull/{101 + number} topic{number}")
    note(6, "The checkout integration tests fail when the payment sandbox is down.")
    for number in range(7, 47):  # the link's six notes are a few of many
        note(number, f"The worker{number} reads queue jobs{number} and writes bucket out{number}")
    assert ids(cli, "checkout tests flaky since https://github.com/acme/api/pull/4711")[0] \
        == "n06"


def test_of_a_word_said_twice_the_one_matching_what_it_begins_stays(cli: Cli) -> None:
    """`configs config` dropped `config`, and with it `config…`, which finds `configuration`:
    the order of the words changed the hits."""
    nginx = add(cli, "The nginx configuration lives in /etc/nginx/sites-enabled on the edges.")
    staging = add(cli, "Staging configs are loaded from the staging bucket at boot.")
    for query in ("config configs", "configs config"):
        assert sorted(ids(cli, query)) == sorted([nginx, staging]), query


def test_more_of_the_query_and_rarer_words_beat_the_commonest(cli: Cli) -> None:
    for number in range(12):
        add(cli, f"deploy note {number}: the service config lives in the repo")
    rare = add(cli, "pgbouncer pooling mode is transaction for the payments service")
    common = add(cli, "service deploy config checklist")
    found = ids(cli, "pgbouncer pooling transaction service deploy")
    assert found[0] == rare and (common not in found or found.index(common) > 0)


def test_the_name_of_the_project_searched_ranks_nothing(cli: Cli) -> None:
    # An agent says where it works: `In chat-bot, …`. Every note searched is in chat-bot, so
    # the name must not lift the one note that happens to mention it above the answer.
    project = ("--project", "chat-bot")
    answer = add(cli, "The message queue runs in region eu-west-1", *project)
    mentions = add(cli, "Vault path kv/chat-bot/queue holds the message credentials", *project)
    for number in range(6):
        add(cli, f"region note {number}: the CDN edge is in region ap-south-{number}", *project)
    question = "In chat-bot, which region hosts the message queue?"
    assert ids(cli, question, "--project", "chat-bot")[0] == answer
    explained = cli.ok("search", "--json", "--explain", "--project", "chat-bot", "--", question, env=NOW).json()
    assert explained[0]["explain"]["scope_words"] == ["chat-bot"]
    assert "chat-bot" not in explained[0]["explain"]["matched"]
    # Spelt as words (`data pipeline`) it is the same; searched across projects, or alone,
    # the name is a word like any other.
    assert ids(cli, "working on chat bot: which region hosts the message queue",
               "--project", "chat-bot")[0] == answer
    assert ids(cli, "chat-bot", "--project", "chat-bot") == [mentions]
    assert ids(cli, question, "--all-projects")[0] == mentions


def test_the_project_named_with_its_word_project_ranks_nothing(cli: Cli) -> None:
    # `iot-hub项目：…`, `For the iot-hub project: …`: the word for "project" next to the
    # name is part of naming it. A global note that happens to say 项目 (or project) must not
    # win on it over the note that has the rarer word asked about.
    project = ("--project", "iot-hub")
    answer = add(cli, "预发环境的 SendGrid 密钥在 Vault kv/iot-hub/staging/sendgrid", *project,
                 env={"MEMCTL_NOW": "2025-06-01T12:00:00Z"})  # written long ago
    add(cli, "Python 项目用 uv 管理环境，用 ruff 做 lint", "--project", "global",
        "--importance", "9")
    add(cli, "Every project pins its Python version", "--project", "global", "--importance", "9")
    for number in range(3):
        add(cli, f"The Twilio API key {number} lives in Vault", *project)
    for number in range(8):  # the Chinese ones: the pairs of characters' rarity as in a store
        add(cli, f"MQTT broker note {number}: retained messages expire after a day", *project)
        add(cli, f"MQTT 代理 {number} 号：保留消息一天后过期", *project)
    for question in ("iot-hub项目：SendGrid的key放哪，目前是怎样的？",
                     "For the iot-hub project: where is the SendGrid key?"):
        assert ids(cli, question, *project)[0] == answer, question
    for query, left in (("For the iot-hub project: where is the SendGrid key?", "project"),
                        ("iot-hub项目：SendGrid的key放哪", "项目"),
                        ("iot-hub项目组的SendGrid key", "项目组")):
        narrowed, words = without_scope_words(parse(query), "iot-hub")
        assert words == ["iot-hub", left], query
        assert "SendGrid" in " ".join(unit.text for unit in narrowed.units)
    # In 项目经理 ("project manager") or 项目部署 only 项目 names the project: the rest is
    # content and stays.
    for query, kept in (("iot-hub项目经理的邮箱", "经理"), ("iot-hub项目部署用的什么工具", "部署")):
        narrowed, words = without_scope_words(parse(query), "iot-hub")
        assert words == ["iot-hub", "项目"] and kept in [u.text for u in narrowed.units], query
    explained = cli.ok("search", "--json", "--explain", *project, "--",
                       "在iot-hub项目里，SendGrid的key放哪", env=NOW).json()
    assert explained[0]["explain"]["scope_words"] == ["iot-hub", "项目里"]
    # Not next to the name, `project` and 项目 are words like any other.
    assert ids(cli, "项目 uv", *project)[0] != answer


def test_where_the_asker_works_in_chinese_weighs_little() -> None:
    """`X这边，…` ("over on X's side"): a run that is one piece and 这边/那边 says where the
    asker works; its units weigh SIDE_SHARE of what they would. A piece that goes on past
    这边 (`数据库这边的连接池`) is content as it was."""
    from memctl.core.query import LONG_PIECE_SHARE, SIDE_SHARE

    shares = {unit.label: unit.share for unit in parse("商城接口这边，性能压测用的什么工具").units}
    assert shares["商城接口"] == shares["商城"] == LONG_PIECE_SHARE * SIDE_SHARE
    assert shares["工具"] == 1.0 and shares["压测"] == LONG_PIECE_SHARE
    assert {unit.share for unit in parse("缓存那边，key放哪").units if unit.pair} == {SIDE_SHARE}
    for query in ("数据库这边的连接池", "商城接口这边界"):
        assert all(unit.share == LONG_PIECE_SHARE for unit in parse(query).units if unit.pair)


def test_a_question_said_from_a_side_finds_the_answer_over_the_notes_naming_it(cli: Cli) -> None:
    # A note names the project in Chinese; the answer has only the word asked about. At full
    # weight the name's four characters covered so much more that the answer fell below the
    # relative floor and was not shown at all.
    project = ("--project", "shop-api")
    answer = add(cli, "跑压测的命令是 k6 run load/checkout.js", *project)
    add(cli, "商城接口的监控服务在 6 月换成了 Prometheus 2.54", *project)
    for number in range(8):
        add(cli, f"队列消费者 {number} 号的重试次数是 3", *project)
    assert ids(cli, "商城接口这边，性能压测用的什么工具，目前是怎样的？", *project)[0] == answer


def test_what_follows_the_question_mark_weighs_less() -> None:
    """What the asker adds after the question's mark (`I need it for the runbook`, `要写进
    事故报告`) weighs AFTER_SHARE; the question itself as it was; a mark at the end, or inside
    a word, changes nothing."""
    from memctl.core.query import AFTER_SHARE, LONG_PIECE_SHARE, SINGLE_CHAR_SHARE

    def shares(query: str) -> dict[str, float]:
        return {unit.label: unit.share for unit in parse(query).units}

    english = shares("How do I run just the integration tests? I need it for the weekly update.")
    assert english["integration"] == english["tests?"] == 1.0
    assert english["weekly"] == english["update."] == AFTER_SHARE
    chinese = shares("周五下午能发版吗？要写进事故报告")
    assert chinese["发版"] == LONG_PIECE_SHARE
    assert chinese["事故"] == chinese["要写进事故报告"] == LONG_PIECE_SHARE * AFTER_SHARE
    assert set(shares("which port does the staging cache listen on?").values()) == {1.0}
    assert set(shares("(which port?) staging").values()) == {1.0, AFTER_SHARE}
    # However the mark is typed: alone, with other punctuation, in Latin inside Chinese.
    for query in ("which port ? staging", "which port?! staging", "which port?. staging",
                  "哪个端口?staging"):
        assert shares(query)["staging" if "?s" not in query else "?staging"] == AFTER_SHARE, query
    # An OR group or a phrase keeps its weight, and a mark at its end ends the question.
    typed = shares('postgres OR mysql? updating')
    assert typed["postgres OR mysql?"] == 1.0 and typed["updating"] == AFTER_SHARE
    assert shares('"is it down?" updating')["updating"] == AFTER_SHARE
    # Single characters too; a mark between two letters is part of a token.
    assert shares("能发版吗？钱 写")["钱"] == SINGLE_CHAR_SHARE * AFTER_SHARE
    assert set(shares("a?b staging").values()) == set(shares("a?b中文 staging").values()) == {1.0}


def test_what_the_asker_adds_after_the_question_does_not_outrank_the_answer(cli: Cli) -> None:
    # The notes that share the words the asker adds (`updating`, `handover`) covered more of
    # the query than the one rare word asked about, at full weight.
    answer = add(cli, "Keep urllib3 at 1.26: botocore in our image still needs 1.x")
    add(cli, "Bump the rota when updating the handover page")
    for number in range(8):
        add(cli, f"Release note {number}: bump the latest build")
    question = "can I bump urllib3 to the latest release currently? I'm updating the on-call handover."
    assert ids(cli, question)[0] == answer
    # Misspelt after the mark, the close words found for them weigh as little.
    misspelt = "can I bump urllib3 to the latest release currently? I'm updatng the handovr."
    assert ids(cli, misspelt)[0] == answer


def test_partial_words_match_part_of_the_query(cli: Cli) -> None:
    note = add(cli, "Ingress is handled by Traefik 3 on every cluster")
    assert ids(cli, "ingress controller")[0] == note
    zh = add(cli, "代码和代码注释用英文", "--tags", "language")
    assert ids(cli, "代码注释 语言")[0] == zh


def test_every_word_as_typed_ranks_first_and_is_marked_exact(cli: Cli) -> None:
    both = add(cli, "postgres pool size is 20")
    one = add(cli, "postgres backups run nightly; postgres replicas lag under load; postgres")
    hits = cli.ok("search", "postgres pool", "--json", env=NOW).json()
    assert hits[0]["id"] == both and hits[0]["exact"] and hits[0]["coverage"] == 1.0
    assert one not in [h["id"] for h in hits if h["exact"]]


def test_a_misspelt_word_in_a_question_is_matched_by_its_closest_word(cli: Cli) -> None:
    kube = add(cli, "Kubernetes ingress runs Traefik; deploy with helm")
    add(cli, "Deploy checklist: tag, build, push")
    hits = cli.ok("search", "how do we deploy on kubrenetes", "--json", env=NOW).json()
    assert hits[0]["id"] == kube and hits[0]["fuzzy"]


def test_a_misspelling_finds_the_notes_not_a_memory_md_section_named_like_it(cli: Cli, store_path: Path) -> None:
    """`postgress` is `postgres` (94 % close), not the MEMORY.md section `Progress` (82 %)."""
    write_memory_file(store_path, "demo/MEMORY.md",
                      "# demo\n\n## Progress\n- [11-02] comments migrated\n- [11-20] search done\n")
    notes = [add(cli, "PostgreSQL connection pool: max 10 per machine"),
             add(cli, "Find slow queries on Fly Postgres with pg_stat_statements")]
    hits = cli.ok("search", "postgress", "--json", env=NOW).json()
    assert {h["id"] for h in hits[:2]} == set(notes)
    assert all(h["kind"] != "memory" for h in hits[:2])


def test_nothing_rather_than_noise_and_never_nothing_when_a_word_matches(cli: Cli) -> None:
    answer = add(cli, "alpha7 cluster runs the ledger")
    for number in range(6):
        add(cli, f"note {number} mentions the cluster")
    found = ids(cli, "alpha7 cluster")
    assert found == [answer]  # the others cover far less of the query than the best
    assert ids(cli, "which cluster does the zzz run on")  # one word matches: not empty


def test_stale_notes_stay_out_of_best_match(cli: Cli) -> None:
    old = add(cli, "The staging database listens on port 5432", "--subject", "staging-db",
              "--predicate", "port")
    new = add(cli, "The staging database listens on port 6543", "--subject", "staging-db",
              "--predicate", "port")
    expired = add(cli, "The staging database port is 7777 during the move", "--expires", "2026-11-01",
                  env={"MEMCTL_NOW": "2026-10-01T00:00:00Z"})  # written before it expired
    found = ids(cli, "what port does the staging database listen on")
    assert found[0] == new and old not in found and expired not in found
    assert old in ids(cli, "what port does the staging database listen on", "--include-stale")


def test_a_year_old_exact_answer_beats_a_fresh_loose_match(cli: Cli) -> None:
    old = add(cli, "The invoice run moved to cluster c3", env={"MEMCTL_NOW": "2025-11-01T00:00:00Z"})
    add(cli, "The cluster dashboard shows the invoice totals")
    assert ids(cli, "when did the invoice run move to a new cluster")[0] == old


# --- exact facts -----------------------------------------------------------------------------


def test_get_returns_the_active_note_for_a_subject_and_predicate(cli: Cli) -> None:
    add(cli, "blog-backend uses MySQL 8", "--subject", "blog-backend", "--predicate", "database")
    new = add(cli, "blog-backend uses PostgreSQL 16", "--subject", "blog-backend",
              "--predicate", "database")
    add(cli, "blog-backend is deployed on Fly", "--subject", "blog-backend", "--predicate", "host")
    got = cli.ok("get", "blog-backend", "database", "--json", env=NOW).json()
    assert [note["id"] for note in got] == [new]
    assert "PostgreSQL 16" in cli.ok("get", "blog-backend", "database", env=NOW).stdout
    assert len(cli.ok("get", "Blog-Backend", "--json", env=NOW).json()) == 2
    missing = cli("get", "nosuch", env=NOW)
    assert missing.exit_code == 1 and "no active note about 'nosuch'" in missing.stderr


NFD_RESUME = "Re\u0301sume\u0301"  # `Résumé` with each accent a character of its own


@pytest.mark.parametrize("written, again, asked", [
    ("Über", "ÜBER", "über"),  # case beyond ASCII (SQLite's NOCASE folds A-Z alone)
    ("Straße", "STRASSE", "strasse"),  # a letter whose capital is two
    (NFD_RESUME, "Résumé", "RÉSUMÉ"),  # one name in two Unicode forms
])
def test_one_fact_whatever_the_case_or_unicode_form_of_its_subject(
        cli: Cli, written: str, again: str, asked: str) -> None:
    """`add` supersedes, `get` finds and `subject:` filters by one rule, case of any script
    and Unicode form ignored (memctl.core.vocab.fact_key): `get über port` missed the
    `ÜBER / port` note that had superseded `Über / port`, and two spellings of `Résumé` stayed
    two active facts."""
    first = add(cli, f"{written} service listens on 8080", "--subject", written,
                "--predicate", "Port")
    second = add(cli, f"{again} service listens on 9090", "--subject", again,
                 "--predicate", "PORT")
    assert cli.ok("show", first, "--json", env=NOW).json()["status"] == "superseded"
    got = cli.ok("get", asked, "port", "--json", env=NOW).json()
    assert [note["id"] for note in got] == [second]
    assert ids(cli, f"subject:{asked} listens") == [second]


def test_a_correction_of_the_same_fact_in_another_case_ranks_ahead_of_it(cli: Cli) -> None:
    """A `global` correction about `ÜBER` / `PORT` (a project's `Über` / `port` note stays
    active: a global note supersedes none of a project's) ranks ahead of the note it is about,
    however the two scored, as one with `corrects` does: the search compared the two subjects
    as written."""
    fact = add(cli, "Über port: the Über service listens on port 8080, über port über port",
               "--subject", "Über", "--predicate", "port", "--importance", "10")
    fix = add(cli, "über port is 9090 now", "--global", "--type", "correction",
              "--subject", "ÜBER", "--predicate", "PORT", "--importance", "1", "--force")
    assert ids(cli, "über port")[:2] == [fix, fact]


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=12))
def test_fact_key_ignores_case_and_unicode_form_and_is_its_own_key(text: str) -> None:
    import unicodedata

    from memctl.core.vocab import fact_key

    key = fact_key(text)
    assert fact_key(key) == key
    for form in ("NFC", "NFD"):
        assert fact_key(unicodedata.normalize(form, text)) == key
    assert fact_key(text.casefold()) == key
    assert fact_key(f"  {text}\t") == key


def test_get_says_a_fact_was_corrected(cli: Cli) -> None:
    """A correction leaves the note it corrects active, so `get` still finds that note: it
    must say it was corrected and by which note, as recall does (docs/lifecycle.md)."""
    fact = add(cli, "staging db host is stg-db-1", "--subject", "staging", "--predicate", "db-host")
    plain = cli.ok("get", "staging", "db-host", "--json", env=NOW).json()
    assert plain[0]["corrected_by"] == []
    fix = add(cli, "staging db host is stg-db-2, not stg-db-1", "--type", "correction",
              "--corrects", fact)
    got = cli.ok("get", "staging", "db-host", "--json", env=NOW).json()
    assert [(note["id"], note["corrected_by"]) for note in got] == [(fact, [fix])]
    shown = cli.ok("get", "staging", "db-host", env=NOW)
    assert f"[corrected by {fix}]" in shown.stderr
    # `show` by id says it too, in JSON and for people (the installed command: its fast path).
    assert run_memctl("show", fact, "--json", store=cli.store, env=NOW).json()["corrected_by"] == [fix]
    assert f"corrected by {fix}" in run_memctl("show", fact, store=cli.store, env=NOW).stdout
    assert cli.ok("show", fix, "--json", env=NOW).json()["corrected_by"] == []


def test_the_query_language_filters_by_subject_and_ranks_a_named_fact_first(cli: Cli) -> None:
    fact = add(cli, "We use PostgreSQL 16 with Kysely", "--subject", "blog-backend",
               "--predicate", "database")
    add(cli, "The blog-backend database migrations run on deploy; the database is big")
    assert ids(cli, "subject:blog-backend postgresql") == [fact]
    assert ids(cli, "what database does blog-backend use")[0] == fact


def test_get_through_mcp_matches_the_cli(store_path: Path) -> None:
    pytest.importorskip("mcp.server.mcpserver")
    from test_mcp import run_session

    run_memctl("add", "We deploy on Fly", "--subject", "blog-backend", "--predicate", "host",
               store=store_path, env=NOW)

    async def script(session):
        found = await session.call_tool("get", {"subject": "blog-backend", "predicate": "host"})
        missing = await session.call_tool("get", {"subject": "nosuch"})
        return found, missing

    found, missing = run_session(store_path, script)
    assert [n["predicate"] for n in found.structured_content["notes"]] == ["host"]
    assert missing.is_error and "the `search` tool" in missing.content[0].text


# --- dates, question phrases, possessives and the forms of a verb ----------------------------


def test_a_date_the_question_names_finds_the_note_written_then(cli: Cli) -> None:
    march = add(cli, "Decided to move the blog cache to Redis",
                env={"MEMCTL_NOW": "2026-03-04T10:00:00Z"})
    june = add(cli, "Decided to keep the blog cache small for now",
               env={"MEMCTL_NOW": "2026-06-10T10:00:00Z"})
    # The June note is newer: without the date it ranks first (recency).
    assert ids(cli, "what did we decide about the blog cache?")[0] == june
    for asked in ("what did we decide about the blog cache in March?",
                  "what did we decide about the blog cache on March 4, 2026?",
                  "what did we decide about the blog cache on 2026-03-04?",
                  "我们2026年3月对博客的cache做了什么决定？",
                  "我们２０２６年３月对博客的cache做了什么决定？"):  # full-width digits
        assert ids(cli, asked)[0] == march, asked
    explained = cli.ok("search", "--json", "--explain", "blog cache in March", env=NOW).json()
    assert "date:2026-03-01..2026-03-31" in explained[0]["explain"]["matched"]
    # A letter that a case-blind pattern folds to `s` (`ſ`) made a traceback of this.
    assert ids(cli, "what did we decide about the blog cache in Auguſt?")[0] == june


def test_the_numbers_and_marks_that_write_a_date_match_no_note_by_themselves(cli: Cli) -> None:
    """`2026年3月` asked with ASCII digits ranked first the notes with a `2026` and a `3`
    anywhere (`Python 3.11`): the day and month numbers and 年 月 日 were words of their own,
    and outweighed the date. They now only write the date; the year stays a word."""
    topics = ["把博客的缓存换成 Redis", "博客的图片放到 R2", "评论区改用 Giscus", "部署改到 Fly",
              "日志接入 Loki", "数据库备份每天一次"]
    march = [add(cli, topic, env={"MEMCTL_NOW": f"2026-03-{day:02d}T10:00:00Z"})
             for day, topic in enumerate(topics, start=4)]
    for month in ("06", "08"):
        add(cli, f"2026 年度计划第 {month} 版：升级到 Python 3.11，3 个月内完成",
            env={"MEMCTL_NOW": f"2026-{month}-02T10:00:00Z"})
    for asked in ("2026年3月", "２０２６年３月", "3月", "March 2026"):
        assert set(ids(cli, asked)[:len(march)]) == set(march), asked
    assert ids(cli, "2026年3月4日")[0] == march[0]
    found = cli.ok("search", "--json", "--explain", "2026年3月4日", env=NOW).json()
    assert found[0]["explain"]["matched"] == ["date:2026-03-04"]
    # A number that is no date's part is still a word: `3.11` finds the plans.
    assert len(ids(cli, "Python 3.11")) == 2


def test_the_notes_of_a_named_day_are_ranked_beside_notes_with_the_words(cli: Cli) -> None:
    day = {"MEMCTL_NOW": "2026-03-04T10:00:00Z"}
    that_day = {add(cli, "Rotated the TLS certificates on the proxy", env=day),
                add(cli, "Switched DNS provider to Route53", env=day)}
    roadmap = add(cli, "Roadmap for 2026: ARM runners", env={"MEMCTL_NOW": "2026-01-10T10:00:00Z"})
    budgets = {add(cli, f"Budget review of 2026 number {month}",
                   env={"MEMCTL_NOW": f"2026-{month}-02T10:00:00Z"}) for month in ("05", "07", "09")}
    # The notes of March: never left out because BM25 is computed over words they lack. The
    # roadmap and the budget reviews have only the date's year, which writes the date and is
    # no word of its own (docs/search.md, "Dates in a query"); a word of the question is.
    found = ids(cli, "what changed in March 2026?")
    assert set(found) == that_day and roadmap not in found and not budgets & set(found)
    assert roadmap in ids(cli, "what changed on the ARM runners in March 2026?")
    explained = cli.ok("search", "--explain", "what changed in March 2026?", env=NOW).stdout
    assert "³ (matched: date:2026-03-01..2026-03-31)" in explained


def test_filters_quotes_and_excluded_words_name_no_date(cli: Cli) -> None:
    march = add(cli, "Decided to move the blog cache to Redis", "--tags", "2026-03",
                env={"MEMCTL_NOW": "2026-03-04T10:00:00Z"})
    june = add(cli, "Decided to keep the blog cache small", "--tags", "2026-03",
               env={"MEMCTL_NOW": "2026-06-10T10:00:00Z"})
    for query in ("blog cache NOT 2026-03-04", "blog cache -2026-03", "blog cache tag:2026-03",
                  'blog cache "March 4"'):
        hits = cli.ok("search", "--json", "--explain", "--", query, env=NOW).json()
        assert all(not label.startswith("date:") for hit in hits
                   for label in hit["explain"]["matched"]), query
    assert set(ids(cli, "what about the blog cache? tag:2026-03")) == {march, june}


def test_memory_sections_and_scratchpads_are_not_dated_by_their_file(cli: Cli) -> None:
    day = {"MEMCTL_NOW": "2026-03-04T10:00:00Z"}
    cli.ok("project", "add", "decisions", "Kysely for every new query", env=day)
    cli.ok("scratch", "note", "Looking into the proxy timeouts", env=day)
    note = add(cli, "Rotated the TLS certificates", env=day)
    hits = cli.ok("search", "--json", "--explain", "what happened in March?", env=NOW).json()
    assert [hit["id"] for hit in hits] == [note]  # the files are of March 4 too
    # The scratchpad's item says `[2026-03-04 10:00]`: found by those words, not as dated.
    hits = cli.ok("search", "--json", "--explain", "what happened on 2026-03-04?", env=NOW).json()
    dated = {hit["kind"] for hit in hits
             if any(label.startswith("date:") for label in hit["explain"]["matched"])}
    assert dated == {"note"} and note in [hit["id"] for hit in hits]


def test_a_period_too_common_to_tell_notes_apart_is_not_read(cli: Cli, monkeypatch) -> None:
    from memctl.index import bestmatch

    for day in (2, 3, 4):
        add(cli, f"Routine change number {day}", env={"MEMCTL_NOW": f"2026-03-0{day}T10:00:00Z"})

    def dated(hits: list) -> bool:
        return any(label.startswith("date:") for hit in hits for label in hit["explain"]["matched"])

    query = ("search", "--json", "--explain", "routine change in March")
    assert dated(cli.ok(*query, env=NOW).json())
    monkeypatch.setattr(bestmatch, "MAX_DATED", 2)  # three notes in March: more than that
    hits = cli.ok(*query, env=NOW).json()
    assert len(hits) == 3 and not dated(hits)


def test_a_question_that_names_only_a_date_lists_the_notes_of_that_day(cli: Cli) -> None:
    that_day = [add(cli, f"Routine change number {n} to the proxy settings",
                    env={"MEMCTL_NOW": f"2026-03-04T1{n}:00:00Z"}) for n in range(3)]
    add(cli, "Routine change to the load balancer", env={"MEMCTL_NOW": "2026-03-05T10:00:00Z"})
    assert sorted(ids(cli, "what happened on 2026-03-04?")) == sorted(that_day)


def test_a_month_typed_alone_lists_the_notes_written_then_beside_the_one_that_says_it(
        cli: Cli) -> None:
    """`2026-10` alone gave only the one note that says `2026-10` (it covered the word and the
    month, and the month, common among the notes of the store, fell under COMMON_FLOOR);
    `Oct 2026` gave the notes written then. Both give both (docs/search.md)."""
    october = [add(cli, f"Routine change number {n} to the proxy settings",
                   env={"MEMCTL_NOW": f"2026-10-0{n + 1}T10:00:00Z"}) for n in range(6)]
    says_it = add(cli, "The quota review happens in 2026-10 with finance",
                  env={"MEMCTL_NOW": "2026-09-20T10:00:00Z"})
    for n in range(3):
        add(cli, f"Routine change number {n} to the cache settings",
            env={"MEMCTL_NOW": f"2026-11-0{n + 1}T10:00:00Z"})
    for asked in ("2026-10", "Oct 2026", "2026年10月"):
        found = ids(cli, asked)
        assert set(october) <= set(found), (asked, found)
        assert len(found) <= len(october) + 1, (asked, found)
    assert says_it in ids(cli, "2026-10")


def test_the_words_of_a_date_are_never_read_as_misspellings(cli: Cli) -> None:
    octo = add(cli, "Release packages are pushed with the octo CLI",
               env={"MEMCTL_NOW": "2025-02-01T00:00:00Z"})
    # `October` is close to `octo` (a misspelling of it, for the typo fallback)...
    assert ids(cli, "Octobr") == [octo]
    # ...but said as a month it is a date: no note was written in October 2026.
    assert ids(cli, "what changed in October?") == []
    assert ids(cli, "what changed in October 2025?") == []


def test_a_date_that_matches_nothing_gives_nothing_not_the_misspelling_search(cli: Cli) -> None:
    octobr = add(cli, "Octobr release checklist lives in docs",
                 env={"MEMCTL_NOW": "2025-02-01T00:00:00Z"})
    assert ids(cli, "October") == [octobr]  # the word alone: a misspelling's search finds it
    # Named as a month, nothing was written then: no result, not the search for misspellings.
    assert ids(cli, "what changed in October 2025?") == []


@pytest.mark.parametrize("date", [
    "in March", "on 2026-03-04", "in March 2026", "in 2025", "on Oct. 13th", "2026-03",
    "13 October 2023", "在3月4日", "2025年8月",
])
def test_every_date_form_that_matches_nothing_gives_nothing(cli: Cli, date: str) -> None:
    """Whatever form the date takes, a query naming it that nothing matches has no result:
    its other words are not read as misspellings (`decide` is close to `decisions`)."""
    decisions = add(cli, "Decisions: Kysely for every new query")  # written on 30 November
    assert ids(cli, "what did we decide?") == [decisions]  # without a date: a close word
    assert ids(cli, f"what did we decide {date}?") == []


def test_how_many_and_what_kind_of_are_question_words_there_only() -> None:
    assert [u.label for u in parse("How many turtles does Nate have?").units] == ["turtles", "Nate"]
    assert [u.label for u in parse("What kind of books does Caroline read?").units] == ["books", "Caroline", "read?"]
    assert [u.label for u in parse("which type of index is it").units] == ["index"]
    assert [u.label for u in parse("long polling timeout").units] == ["long", "polling", "timeout"]
    assert [u.label for u in parse("type hints for many-to-many").units] == ["type", "hints", "many-to-many"]
    assert [u.label for u in parse("how long").units] == ["how", "long"]  # typed alone: searched


def test_a_possessive_matches_the_name_it_belongs_to(cli: Cli) -> None:
    assert [u.label for u in parse("What is Jon's favorite dance?").units] == ["Jon", "favorite", "dance?"]
    assert [u.label for u in parse("blog-backend’s port").units] == ["blog-backend", "port"]
    # A function word with its `'s` is still one, whichever the apostrophe.
    for asked in ("what’s the staging port?", "what's the staging port?", "where’s the staging port?",
                  "he's on the staging port?"):
        assert [u.label for u in parse(asked).units] == ["staging", "port?"], asked
    jon = add(cli, "Jon prefers contemporary dance")
    add(cli, "Gina teaches dance to the kids on Fridays")
    found = cli.ok("search", "--json", "--explain", "--", "What is Jon's dance?", env=NOW).json()
    assert found[0]["id"] == jon and "Jon" in found[0]["explain"]["matched"]


def test_an_irregular_verb_matches_its_other_forms(cli: Cli) -> None:
    bought = add(cli, "We bought the blog domain from Namecheap")
    add(cli, "Buy more disk space for the staging runners")
    add(cli, "The docs domain is managed by the web team")
    found = cli.ok("search", "--json", "when did we buy the blog domain?", env=NOW).json()
    assert found[0]["id"] == bought and found[0]["coverage"] == 1.0
    wrote = add(cli, "Maria wrote the on-call runbook")
    assert ids(cli, "who will write the on-call runbook?")[0] == wrote


def test_keywords_are_matched_as_typed_not_widened_to_other_forms(cli: Cli) -> None:
    golang = add(cli, "Services are written in Go 1.22 with chi")
    add(cli, "The old staging cluster is gone")
    add(cli, "The build server went offline after the upgrade")
    add(cli, "The deploy won't start when the build cache is cold")
    win = add(cli, "Release build for win64 uses MSVC")
    assert ids(cli, "go") == [golang]
    assert win in ids(cli, "win build")
    assert [u.match for u in parse("buy domain").units] == ['"buy"', '"domain"']


def test_a_form_that_is_a_word_of_its_own_stays_itself() -> None:
    from memctl.core.wordforms import verb_forms

    assert verb_forms("bought") == ("bought", "buy")
    assert verb_forms("Went") == ("went", "gone")  # `go` the language is no form
    assert verb_forms("find") == ()  # `found` is left out, and nothing else is left
    for word in ("found", "left", "saw", "lay", "read", "deploy", "go", "win", "won", "done", "did",
                 "had", "got", "driven", "lit"):
        assert verb_forms(word) == (), word


def test_a_contraction_with_a_curly_apostrophe_is_a_function_word(cli: Cli) -> None:
    mysql = add(cli, "We use Postgres, not MySQL, for the blog database")
    add(cli, "Don't deploy on Fridays; don’t either on holidays")
    for asked in ("why don't we use mysql?", "why don’t we use mysql?"):
        explained = cli.ok("search", "--json", "--explain", "--", asked, env=NOW).json()
        assert [hit["id"] for hit in explained] == [mysql], asked
        assert explained[0]["coverage"] == 1.0, asked


def test_the_fallback_project_default_is_no_scope_word(store_path: Path, tmp_path: Path) -> None:
    """Outside any project, memctl searches its fallback project `default`: `default` is then
    a word asked about (`the default port`), not the name of the project searched."""
    env = {**NOW, "MEMCTL_STORE": str(store_path)}
    for text in ("The default port of the admin API is 8081",
                 "The metrics port is 9100", "Port 5432 is the database port"):
        done = run_memctl("add", text, "--force", store=store_path, project=None, env=env)
        assert done.exit_code == 0, done.stderr
    found = run_memctl("search", "what is the default port?", "--json", "--explain",
                       store=store_path, project=None, env=env)
    hits = found.json()
    assert hits[0]["title"].startswith("The default port")
    assert "scope_words" not in hits[0]["explain"]


def test_a_correction_brought_in_for_its_note_says_it_matched_nothing(cli: Cli) -> None:
    backup = add(cli, "The nightly backup runs at 02:00 on db-1")
    fixed = cli.ok("add", "It moved to 03:30 when the replica was added", "--json", "--force",
                   "-t", "correction", "--corrects", backup, env=NOW).json()["id"]
    hits = cli.ok("search", "--json", "--explain", "nightly backup", env=NOW).json()
    assert [hit["id"] for hit in hits] == [fixed, backup]
    assert hits[0]["coverage"] == 0.0 and hits[0]["exact"] is False
    assert hits[0]["explain"]["brought_in_for"] == backup
    assert hits[0]["explain"]["score"] == round(hits[0]["score"], 6)
    printed = cli.ok("search", "--explain", "nightly backup", env=NOW).stdout
    assert f"brought in for {backup}, which it corrects" in printed


@pytest.mark.parametrize("change", ["deleted", "archived by hand", "moved by hand"])
def test_show_never_names_a_correction_deleted_or_retired_by_hand(cli: Cli, change: str) -> None:
    """`show` answers from the note's own file without walking the store; the corrections it
    names are made sure of too, so one deleted or archived by hand since is not named, and one
    moved to another folder still is."""
    fact = add(cli, "staging db host is stg-db-1", "--subject", "staging", "--predicate", "db-host")
    fix = add(cli, "staging db host is stg-db-2, not stg-db-1", "--type", "correction",
              "--corrects", fact)
    assert run_memctl("show", fact, "--json", store=cli.store, env=NOW).json()["corrected_by"] == [fix]
    path = cli.store / cli.ok("show", fix, "--json", env=NOW).json()["path"]
    still_named: list[str] = []
    if change == "deleted":
        path.unlink()
    elif change == "archived by hand":
        path.write_text(path.read_text().replace("status: active", "status: archived"))
    else:
        other = cli.store / "demo" / "notes" / "elsewhere"
        other.mkdir(parents=True)
        path.rename(other / path.name)
        still_named = [fix]
    shown = run_memctl("show", fact, "--json", store=cli.store, env=NOW)
    assert shown.exit_code == 0, shown.stderr
    assert shown.json()["corrected_by"] == still_named
    assert (f"corrected by {fix}" in run_memctl("show", fact, store=cli.store, env=NOW).stdout) \
        == bool(still_named)


def test_a_single_character_left_between_function_words_does_not_outweigh_the_word_asked(
        cli: Cli) -> None:
    # `回滚怎么做`: 回滚 and 做. 做 ("do") is in one note, 回滚 in two: at full weight the rarer
    # character outranked the rollback note, which then covered less than half the query and
    # was left out of recall's block, the off-topic note given as the query's match.
    rollback = add(cli, "回滚步骤：kubectl rollout undo deployment/shop-api，然后确认 readiness probe 通过",
                   "--type", "experience")
    add(cli, "回滚脚本要在 staging 演练过", "--type", "error")
    callback = add(cli, "支付回调接口必须幂等：用订单号做唯一键，重复回调直接返回 200", "--type", "fact")
    for text in ("缓存用 Redis 7，默认 TTL 10 分钟", "日志统一输出 JSON 格式", "API 限流每分钟 120 次",
                 "CI 用 GitHub Actions", "数据库选 PostgreSQL 16"):
        add(cli, text)
    found = ids(cli, "回滚怎么做")
    assert found.index(rollback) < found.index(callback)
    block = cli.ok("recall", "--json", "回滚怎么做", env=NOW).json()
    matched = [note["id"] for note in block["notes"] if note["reason"] == "query"]
    assert rollback in matched and callback not in matched


def test_a_question_in_traditional_characters_leaves_its_function_words_out(cli: Cli) -> None:
    # 什麼, 我們, 時候, 怎麼 are 什么, 我们, 时候, 怎么 as Taiwan and Hong Kong type them: they were
    # units, and a note that happens to say 什麼 and 們 was shown for a question about backups.
    assert split_chinese("我們的資料庫備份是什麼時候跑") == ["資料庫備份", "跑"]
    assert split_chinese("回滾怎麼做") == ["回滾", "做"]
    assert split_chinese("為什麼不用ORM嗎") == ["不用ORM"]
    assert split_chinese("甚麼時候部署") == ["部署"]  # 甚麼: 什麼 as many in Taiwan write it
    backup = add(cli, "資料庫備份每天凌晨 3 點跑，保留 14 天")
    add(cli, "我們團隊的 code review 規則：不管什麼改動都要兩個人審核才能合併", "--type", "rule")
    assert ids(cli, "我們的資料庫備份是什麼時候跑") == [backup]
    side = {unit.label: unit.share for unit in parse("訂單服務這邊，連線池設多少").units}
    assert side["訂單"] < side["連線"]
