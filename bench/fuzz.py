"""Fuzz memctl's readers of untrusted text (issue 8): the front-matter reader, the query
translator and the import validator, ≥ 100,000 generated cases each.

    .venv/bin/python bench/fuzz.py [--cases 100000] [--only parse,edit,query,names,bundle,zip]
                                   [--atheris RUNS] [--json bench/out/fuzz.json]

Each target is a check that returns None or the problem it found; a problem is recorded (the
first example of each kind) and the run goes on, so the case count is always what was asked.
The strategies and checks here are also what tests/test_reliability.py runs, a few thousand
cases at a time, in the normal suite.

What the checks demand:
- parse: `noteformat.parse_text` never raises; what it returns is plain data (no object made
  from a YAML tag, no implicit conversion), or `{}` with a problem and its line; the indexer
  (`indexdocs.docs_for_file`) never raises on the same bytes;
- edit: `noteformat.set_fields` (behind edit, archive, supersede) either refuses a file that
  does not parse, or changes that one field: the new value reads back exactly, the body and
  every other field are untouched, and the file still parses;
- query: `query.parse` raises nothing but `UsageError`, and the MATCH expression it builds
  runs on a real FTS5 table with memctl's tokenizer (no FTS5 syntax error for any input);
- names/bundle/zip: no entry the import validator accepts could be written outside the store
  or into .git/.memctl; only `MemctlError` (BundleError) escapes `validate`/`read_bundle`,
  whatever the names, bytes, link bits or corruption of the archive.

atheris (coverage-guided, optional): `pip install atheris` somewhere on PYTHONPATH, then
`--atheris 100000` runs each target under libFuzzer too. It is not a memctl dependency.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sqlite3
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

# --- generators ---------------------------------------------------------------------------------

YAML_PIECES = [
    "id: 01jdz4k2m8x7b3qv", "type: decision", "importance: 8", "tags: [a, b, 'c d']",
    "tags:\n  - x\n  - y", "created: 2026-11-30T09:12:44.120Z", "expires: 2027-03-01",
    "pinned: no", "status: active", "n: 0123", "t: 12:30", "k: on", "empty:", "~: null",
    "? complex key\n: value", "a: &anchor x", "b: *anchor", "<<: *anchor",
    "c: !!python/object:os.system x", "d: !!python/object/apply:os.system ['true']",
    "e: !custom tag", "f: !!binary aGVsbG8=", "g: !!set {a, b}", "h: !!int 42",
    "i: !!timestamp 2001-12-14", "j: {a: [1, {b: c}]}", "k: |\n  block\n  text", "l: >-\n  folded",
    "m: 'unterminated", 'n: "esc \\u0000 \\x41"', "o: [[[[[[[[]]]]]]]]", "p: \t tab",
    "- list item", "q: a: b", "%YAML 1.1", "--- !!map", "r: \ufeffbom", "s: \u2028sep",
    "checksum: 0123456789abcdef", "...", "---", "# comment",
]
BODY_PIECES = ["Body text.", "# Title", "---", "...", "数据库连接池", "\r\n", "\n", "- [ ] todo",
               "`code`", "<!-- c -->", "\x00", "\ufffd"]
QUERY_ATOMS = ['"', "(", ")", "*", "-", "AND", "OR", "NOT", "NEAR", "NEAR(a b, 2)", "tag:",
               "type:fact", "type:banana", "^", ":", "c++", "数据库", "缓存", "\x00", "'", "{",
               "col:title", "a*b", "\\", "--", "\t", "\u3000", "🙂", "OR OR", "-tag:x"]
PATH_ATOMS = ["..", ".", "", "/", "\\", "C:", "alpha", "notes", "x.md", ".git", ".memctl",
              ".tombstones", ".conflicts", "global", "\x00", "~", "a b.md", "MEMORY.md",
              "memctl.toml", ".templates", ".counters", "…", "%2e%2e", "memctl-manifest.json"]
FIELDS = ["status", "importance", "tags", "new_field", "updated", "checksum"]


def front_matter_texts() -> st.SearchStrategy[str]:
    """Texts shaped like notes (delimiters, YAML fragments, bodies) plus arbitrary text."""
    structured = st.builds(
        lambda bom, opener, lines, closer, body, newline: (
            ("\ufeff" if bom else "") + opener + newline + newline.join(lines) + newline
            + closer + newline + body),
        st.booleans(), st.sampled_from(["---", "--- ", "---\t", "----", ""]),
        st.lists(st.one_of(st.sampled_from(YAML_PIECES), st.text(max_size=30)), max_size=12),
        st.sampled_from(["---", "...", "--- x", ""]),
        st.lists(st.one_of(st.sampled_from(BODY_PIECES), st.text(max_size=40)),
                 max_size=6).map("\n".join),
        st.sampled_from(["\n", "\r\n", "\r"]))
    return st.one_of(structured, st.text(max_size=300))


def field_values() -> st.SearchStrategy[Any]:
    return st.one_of(st.text(max_size=40), st.integers(-5, 5000),
                     st.lists(st.text(max_size=10), max_size=4))


def queries() -> st.SearchStrategy[str]:
    atoms = st.lists(st.one_of(st.sampled_from(QUERY_ATOMS), st.text(max_size=12)), max_size=12)
    return st.one_of(atoms.map(" ".join), atoms.map("".join), st.text(max_size=200))


def entry_names() -> st.SearchStrategy[str]:
    parts = st.lists(st.one_of(st.sampled_from(PATH_ATOMS), st.text(max_size=8)), min_size=1,
                     max_size=6)
    return st.one_of(parts.map("/".join), st.text(max_size=40))


def bundle_dicts() -> st.SearchStrategy[dict[str, bytes]]:
    return st.dictionaries(entry_names(), st.one_of(front_matter_texts().map(
        lambda t: t.encode("utf-8", "surrogatepass")), st.binary(max_size=200)), max_size=6)


ZIP_MODES = [0, 0o100644, 0o120777, 0o040755, 0o010644, 0o020644]


def zip_specs() -> st.SearchStrategy[tuple[list[tuple[str, bytes, int, bool]], int, bytes]]:
    """Entries (name, data, unix mode, deflate), then bytes cut off the end, then garbage."""
    entries = st.lists(st.tuples(entry_names(), st.binary(max_size=300),
                                 st.sampled_from(ZIP_MODES), st.booleans()), max_size=5)
    return st.tuples(entries, st.integers(0, 2000), st.binary(max_size=16))


# --- checks: None, or what is wrong -------------------------------------------------------------


def plain_data(value: object, depth: int = 0) -> bool:
    """Only plain YAML data: no object built from a tag (`!!python/…`, `!!binary`, `!!set`)."""
    import datetime

    if depth > 200:
        return False
    if isinstance(value, (str, int, float, bool, type(None), datetime.date)):
        return True
    if isinstance(value, list):
        return all(plain_data(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return all(plain_data(k, depth + 1) and plain_data(v, depth + 1)
                   for k, v in value.items())
    return False


def check_front_matter(text: str) -> str | None:
    from memctl.core.noteformat import parse_text
    from memctl.index.docs import docs_for_file

    parsed = parse_text(text)
    if not isinstance(parsed.meta, dict):
        return "meta is not a dict"
    if parsed.problem is None:
        if not all(isinstance(k, str) for k in parsed.meta):
            return "a key that is not text"
        if not plain_data(parsed.meta):
            return f"an object made from a YAML tag: {parsed.meta!r:.200}"
    elif parsed.problem.line < 1 or parsed.meta:
        return "a problem without a line, or with fields"
    result = docs_for_file("p/notes/x.md", "note", "p", text.encode("utf-8", "surrogatepass"),
                           1_700_000_000_000_000_000, max_bytes=1 << 20)
    if not isinstance(result, tuple):
        for doc in result:
            json.dumps(doc.meta, default=str)
    return None


def check_field_edit(text: str, key: str, value: Any) -> str | None:
    from memctl.core.noteformat import parse_text, set_fields

    before = parse_text(text)
    try:
        after_text = set_fields(text, {key: value})
    except ValueError:
        return None if before.problem is not None else "refused a file that parses"
    after = parse_text(after_text)
    if after.problem is not None:
        return f"the edit made the file unreadable: {after.problem.message}"
    want = [str(v) for v in value] if isinstance(value, list) else str(value)
    if after.meta.get(key) != want:
        return "the value does not read back as written"
    if {k: v for k, v in after.meta.items() if k != key} != \
            {k: v for k, v in before.meta.items() if k != key}:
        return "another field changed"
    if after.body != before.body:
        return "the body changed"
    return None


def fts_connection() -> sqlite3.Connection:
    from memctl.core.tokenize import FTS_TOKENIZE, to_index

    conn = sqlite3.connect(":memory:")
    conn.execute(f"CREATE VIRTUAL TABLE fts USING fts5(title, tags, body, tokenize='{FTS_TOKENIZE}')")
    for text in ("PostgreSQL connection pool", "数据库连接池 超时", "c++ AND NEAR (x)", "a@x.io"):
        conn.execute("INSERT INTO fts VALUES (?, ?, ?)", (to_index(text), "", to_index(text)))
    return conn


def check_query(conn: sqlite3.Connection, raw: str) -> str | None:
    from memctl.core.errors import UsageError
    from memctl.core.query import parse

    try:
        query = parse(raw)
    except UsageError:
        return None
    for expression in (query.match, query.exclude):
        if expression is not None:
            try:
                conn.execute("SELECT rowid FROM fts WHERE fts MATCH ?", (expression,)).fetchall()
            except sqlite3.Error as exc:
                return f"FTS5 rejects the MATCH it was given: {exc}"
    return None


def inside_store(name: str) -> bool:
    resolved = os.path.normpath(os.path.join("/store", name))
    return resolved.startswith("/store/") and not os.path.isabs(name) \
        and resolved.split("/")[2] not in (".git", ".memctl")


def check_entry_name(name: str) -> str | None:
    from memctl.exchange.bundle import path_kind, path_problem

    if path_problem(name) is None and path_kind(name) is not None and not inside_store(name):
        return "an accepted name that escapes the store"
    return None


def check_validate(raw: dict[str, bytes]) -> str | None:
    from memctl.core.errors import MemctlError
    from memctl.core.noteformat import parse_text
    from memctl.exchange.bundle import unsafe_yaml_tags, validate

    try:
        bundle = validate("fuzz", dict(raw))
    except MemctlError:
        return None
    for path, item in bundle.files.items():
        if not inside_store(path):
            return "an accepted entry outside the store"
        if ".." in path.split("/"):
            return "an accepted entry name with a '..' component"
        text = item.data.decode("utf-8")
        parsed = parse_text(text)
        if parsed.has_front_matter and parsed.close_line is not None:
            lines = (text[1:] if parsed.bom else text).splitlines(keepends=True)
            if unsafe_yaml_tags("".join(lines[1:parsed.close_line])):
                return "an accepted entry with an unsafe YAML tag"
    return None


def make_zip(spec: tuple[list[tuple[str, bytes, int, bool]], int, bytes]) -> bytes:
    entries, cut, garbage = spec
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data, mode, deflate in entries:
            info = zipfile.ZipInfo(name or "x")
            info.external_attr = mode << 16
            info.compress_type = zipfile.ZIP_DEFLATED if deflate else zipfile.ZIP_STORED
            try:
                import warnings

                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # duplicate names are part of the test
                    archive.writestr(info, data)
            except (ValueError, UnicodeEncodeError):
                continue
    data = buffer.getvalue()
    return data[: max(0, len(data) - cut)] + garbage if cut else data


def check_zip(folder: Path, data: bytes) -> str | None:
    from memctl.core.errors import MemctlError
    from memctl.exchange.bundle import read_bundle

    target = folder / "fuzz.zip"
    target.write_bytes(data)
    try:
        bundle = read_bundle(target)
    except MemctlError:
        return None
    for path in bundle.files:
        if not inside_store(path):
            return "an accepted zip entry outside the store"
    return None


# --- running ------------------------------------------------------------------------------------


class Tally:
    """Cases run and the first example of each kind of problem."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.cases = 0
        self.problems: dict[str, str] = {}
        self.crashes: dict[str, str] = {}
        self.seconds = 0.0

    def record(self, check: Callable[..., str | None], *args: Any) -> None:
        self.cases += 1
        try:
            problem = check(*args)
        except Exception as exc:  # noqa: BLE001 - an escaping exception is the finding
            key = f"{type(exc).__name__} escaped: {str(exc)[:120]}"
            self.crashes.setdefault(key.split(":")[0] + ":" + key.split(":")[1][:60], repr(args)[:400])
            return
        if problem is not None:
            self.problems.setdefault(problem.split(":")[0], repr(args)[:400])

    def summary(self) -> dict[str, Any]:
        return {"target": self.name, "cases": self.cases, "seconds": round(self.seconds, 1),
                "problems": self.problems, "exceptions": self.crashes}


def targets(folder: Path) -> dict[str, tuple[st.SearchStrategy[Any], Callable[..., str | None]]]:
    conn = fts_connection()
    return {
        "parse": (front_matter_texts(), check_front_matter),
        "edit": (st.tuples(front_matter_texts(), st.sampled_from(FIELDS), field_values()),
                 lambda spec: check_field_edit(*spec)),
        "query": (queries(), lambda raw: check_query(conn, raw)),
        "names": (entry_names(), check_entry_name),
        "bundle": (bundle_dicts(), check_validate),
        "zip": (zip_specs(), lambda spec: check_zip(folder, make_zip(spec))),
    }


def run_hypothesis(name: str, strategy: st.SearchStrategy[Any],
                   check: Callable[..., str | None], cases: int) -> Tally:
    tally = Tally(name)
    started = time.perf_counter()

    @settings(max_examples=cases, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def run(value: Any) -> None:
        tally.record(check, value)

    run()
    tally.seconds = time.perf_counter() - started
    return tally


def run_atheris(name: str, runs: int, out: Path) -> None:
    """Coverage-guided: libFuzzer mutates bytes and each target turns them into its input.
    libFuzzer ends the process itself, so the tally is written to `out` as it goes."""
    import atheris

    with atheris.instrument_imports():
        import memctl.core.noteformat  # noqa: F401
        import memctl.core.query  # noqa: F401
        import memctl.exchange.bundle  # noqa: F401
        import memctl.index.docs  # noqa: F401
    folder = Path(tempfile.mkdtemp())
    check = targets(folder)[name][1]
    tally = Tally(f"{name} (atheris)")
    started = time.perf_counter()

    def one(data: bytes) -> None:
        provider = atheris.FuzzedDataProvider(data)
        if name == "zip":
            tally.record(check_zip, folder, data)
        elif name == "bundle":
            raw = {provider.ConsumeUnicodeNoSurrogates(20): provider.ConsumeBytes(200)
                   for _ in range(provider.ConsumeIntInRange(0, 4))}
            tally.record(check_validate, raw)
        elif name == "edit":
            key = FIELDS[provider.ConsumeIntInRange(0, len(FIELDS) - 1)]
            value = provider.ConsumeUnicodeNoSurrogates(30)
            tally.record(check_field_edit, provider.ConsumeUnicodeNoSurrogates(400), key, value)
        else:
            tally.record(check, provider.ConsumeUnicodeNoSurrogates(len(data)))
        if tally.cases % 1000 == 0 or tally.cases >= runs:
            tally.seconds = time.perf_counter() - started
            out.write_text(json.dumps(tally.summary(), ensure_ascii=False))

    atheris.Setup([sys.argv[0], f"-runs={runs}", "-print_final_stats=0"], one)
    atheris.Fuzz()


def _atheris_child(name: str, runs: int) -> dict[str, Any]:
    import subprocess

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "tally.json"
        done = subprocess.run([sys.executable, __file__, "--atheris-child", name, str(runs),
                               str(out)], capture_output=True, text=True)
        if out.exists():
            return json.loads(out.read_text())
    return {"target": f"{name} (atheris)", "error": (done.stderr or done.stdout)[-800:]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=100_000,
                        help="hypothesis cases per target (0: atheris only)")
    parser.add_argument("--only", default="parse,edit,query,names,bundle,zip")
    parser.add_argument("--atheris", type=int, default=0, metavar="RUNS",
                        help="also run each target under atheris for RUNS inputs")
    parser.add_argument("--json", type=Path, help="write the figures here too")
    parser.add_argument("--atheris-child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.atheris_child:
        name, runs, out = args.atheris_child
        run_atheris(name, int(runs), Path(out))
        return
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        chosen = targets(folder)
        for name in args.only.split(",") if args.cases > 0 else ():
            strategy, check = chosen[name]
            tally = run_hypothesis(name, strategy, check, args.cases)
            results.append(tally.summary())
            print(json.dumps(tally.summary(), ensure_ascii=False), flush=True)
        if args.atheris:
            try:
                import atheris  # noqa: F401
            except ImportError:
                print(json.dumps({"atheris": "not installed; skipped"}), flush=True)
            else:
                # libFuzzer's Fuzz() never returns to the caller between targets in one
                # process, so each target gets its own process.
                for name in args.only.split(","):
                    done = _atheris_child(name, args.atheris)
                    results.append(done)
                    print(json.dumps(done, ensure_ascii=False), flush=True)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2, ensure_ascii=False))
    if any(r.get("problems") or r.get("exceptions") for r in results):
        sys.exit(1)


if __name__ == "__main__":
    main()
