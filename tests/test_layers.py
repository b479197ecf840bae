"""The architecture, enforced (docs/architecture.md): memctl's packages form layers that import
only downwards, no module imports another in a circle (imports inside functions count), imports
of memctl's own modules sit at the top of a file except on the documented lazy paths, and
`memctl search` loads only the modules it needs."""

from __future__ import annotations

import ast
import importlib.util
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO, memctl_executable

PACKAGE = REPO / "memctl"

# Lowest first. A module may import its own layer and any layer below it, never above.
# `memory`, `exchange` and `watch` are siblings: one layer, but they never import each other.
LAYERS: list[tuple[str, ...]] = [
    ("memctl.core",),
    ("memctl.disk",),
    ("memctl.index",),
    ("memctl.store",),
    ("memctl.memory", "memctl.exchange", "memctl.watch"),
    ("memctl.services",),
    ("memctl.cli", "memctl.mcp_server"),
]
# The one import between front ends: `memctl mcp` starts the MCP server.
ALLOWED_SIBLING_IMPORTS = {("memctl.cli", "memctl.mcp_server")}

# Where an import of memctl's own modules may stay inside a function, and why: each keeps
# something `memctl search` does not need out of its start-up (measured in docs/architecture.md).
LAZY_IMPORTS = {
    "memctl.cli": {"memctl.cli.app", "memctl.cli.commands",  # typer, and every command module
                   # what a search answered by the watcher's server never needs
                   # (memctl/cli/served.py, tests/test_search_server.py)
                   "memctl.cli.fast",
                   # the walk of a search without a watcher, started before the search's
                   # imports (docs/search.md, tests/test_walkahead.py)
                   "memctl.services.walkahead"},
    # One command module per command line: `memctl show` on 10k notes ~60 ms less of imports
    # and typer's set-up of every command (bench/bench_write.py, docs/architecture.md).
    "memctl.cli.notes": {"memctl.services.creation"},  # all of sync: `init` alone
    # `show` and `add` answered without typer, each loading only its own command
    # (bench/bench_write.py; `memctl show` pinned below).
    "memctl.cli.fast": {"memctl.cli.showing", "memctl.cli.adding"},
    # The episode rules (sections, templates, the secret scanner): only for an episode's id
    # (`show`) or a note naming its episode (`add --source-episode`).
    "memctl.services.showing": {"memctl.memory.episodes"},
    "memctl.services.notes": {"memctl.memory.episodes"},
    "memctl.cli.commands": {"memctl.cli.app", "memctl.cli.notes", "memctl.cli.search",
                            "memctl.cli.lifecycle", "memctl.cli.agent", "memctl.cli.sync",
                            "memctl.cli.watch", "memctl.cli.mcp"},
    # The services only some tools use, imported at their first use or once the client is
    # answered: `memctl mcp` answers `initialize` without them (bench/bench_mcp.py
    # --startup-only; the figures in bench/README.md, "The MCP server").
    "memctl.mcp_server": {"memctl.services.notes", "memctl.services.upkeep",
                          "memctl.services.recall"},
    # The secret scanner (~10 ms) only for a project name that may hold a key: a search
    # naming its project does not load it (memctl/core/arguments.py, SHORTEST_NAME_SECRET).
    "memctl.core.arguments": {"memctl.core.secrets"},
    # The same scanner masks a failing command's error line: a search that succeeds never
    # loads it (memctl.cli.context.print_error).
    "memctl.cli.context": {"memctl.core.secrets"},
    "memctl.disk.storefiles": {"memctl.core.note", "memctl.core.noteformat",  # YAML, the model
                               "memctl.disk.atomic", "memctl.disk.journal",  # tempfile, git
                               "memctl.disk.locking",
                               "memctl.core.textfile"},  # only a file read whole needs it
    "memctl.store": {"memctl.disk.gitops", "memctl.disk.atomic",  # subprocess, tempfile
                     "memctl.disk.locking"},  # init: refused first where a store cannot be locked
    "memctl.index.db": {"memctl.index.docs", "memctl.index.workers"},  # the parser
    # What a watcher loads only when it runs, imported by the check of new code before it
    # starts again on it (memctl.cli.codechange): `memctl mcp` imports the watcher at start.
    "memctl.watch.watcher": {"memctl.index.docs", "memctl.index.nearwords",
                             "memctl.index.workers"},
    # The key count before tomllib, both only for a settings file that is not the simple one
    # (a search reads the default file without either: tests/test_settings.py).
    "memctl.disk.settings": {"memctl.core.tomlkeys"},
    # `re` (~10 ms, through the project-name rule) after a search's walk has started in
    # its helper processes, not before (tests/test_walkahead.py).
    "memctl.disk.filescan": {"memctl.core.vocab"},
    # git and the atomic writer only for a working tree the store has not met yet: a command
    # run in a known repository calls no git (tests/test_repositories.py).
    "memctl.disk.repositories": {"memctl.disk.gitops", "memctl.disk.atomic"},
}

# What `memctl search` loads of memctl: the fast path, the store, the index and its query.
SEARCH_MODULES = {
    "memctl", "memctl.cli", "memctl.cli.context", "memctl.cli.fast", "memctl.cli.output",
    "memctl.cli.plaintext", "memctl.cli.searching", "memctl.cli.served", "memctl.core",
    "memctl.core.arguments",
    "memctl.core.clock",
    "memctl.core.dates", "memctl.core.lazyre",  # a date named in a query (docs/search.md)
    "memctl.core.wordforms",  # the forms of irregular verbs (docs/search.md)
    "memctl.core.errors", "memctl.core.stopwords", "memctl.index.bestmatch",
    "memctl.core.textfile",  # no imports: the walk's check of names that are not UTF-8
    "memctl.core.stamp",  # no imports: a file's stamp, which the walk compares
    "memctl.core.query", "memctl.core.tokenize", "memctl.core.vocab", "memctl.disk",
    "memctl.disk.counters", "memctl.disk.filescan", "memctl.disk.forking", "memctl.disk.layout",
    "memctl.disk.repositories",
    "memctl.disk.settings",
    "memctl.disk.storefiles", "memctl.disk.templates", "memctl.disk.watchstate", "memctl.index",
    "memctl.index.db", "memctl.index.fuzzy", "memctl.index.scope", "memctl.index.search",
    "memctl.services", "memctl.services.retrieval", "memctl.services.stores", "memctl.store",
}
# The walk's listing of a folder in C, where the install built it (tests/test_statwalk.py).
if importlib.util.find_spec("memctl.disk._statwalk") is not None:
    SEARCH_MODULES.add("memctl.disk._statwalk")
# What a search with no live watcher loads besides: the walk of the store it starts in helper
# processes before its other imports (memctl.cli.main, docs/search.md).
WALK_AHEAD_MODULES = {"memctl.services.walkahead"}
# What a search answered by a live watcher's search server loads: the asking side alone, and
# none of the standard library the search itself needs (docs/watch.md).
SERVED_MODULES = {"memctl", "memctl.cli", "memctl.cli.served"}
SERVED_NEVER_LOADS = ("re", "pathlib", "json", "sqlite3", "enum", "datetime", "socket")
# What `memctl show ID` (a note's) loads of memctl besides what a search loads: the note
# model and its reader (with their checksum and data classes: `hashing`, `records`, lighter
# than hashlib and dataclasses, and `textfile`, which tells a file that is no text), nothing
# of the write-time checks (similarity, the secret scanner, templates, drafts) nor of episodes.
SHOW_MODULES = {"memctl.cli.showing", "memctl.core.hashing", "memctl.core.ids",
                "memctl.core.note", "memctl.core.noteformat", "memctl.core.records",
                "memctl.core.textfile", "memctl.services.showing"}
# The front ends reach memory through the services alone (and the pure core: errors, the
# validators, the vocabulary), so both get the same checks and messages.
FRONT_ENDS = ("memctl.cli", "memctl.mcp_server")
FRONT_ENDS_MAY_IMPORT = ("memctl.services", "memctl.core", *FRONT_ENDS)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def resolve(name: str) -> str | None:
    """The memctl module an import names (a `from pkg import name` may name a module or an
    attribute of the package)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def imports_of(module: str) -> list[tuple[str, bool]]:
    """(imported memctl module, whether the import is at the top of the file), for every
    import in the file, inside functions and `if TYPE_CHECKING:` blocks included."""
    return [(target, top) for target, top, _line, _type_only in import_sites(module)]


def import_sites(module: str) -> list[tuple[str, bool, int, bool]]:
    """(imported memctl module, at the top of the file, line, only for type checking) for
    every import in the file; relative imports resolved."""
    path = MODULES[module]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    type_only = set()
    optional = set()  # `try: import ...` at the top of the file: a module that may not be built
    for node in tree.body:  # imports under `if TYPE_CHECKING:` are for annotations only
        if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING":
            type_only.update(id(sub) for sub in ast.walk(node))
        if isinstance(node, ast.Try):
            optional.update(id(sub) for sub in node.body
                            if isinstance(sub, (ast.Import, ast.ImportFrom)))
    found: list[tuple[str, bool, int, bool]] = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            names = [f"{base}.{alias.name}" for alias in node.names]
            if not all(name in MODULES for name in names):
                names.append(base)  # `from pkg import attribute` runs the package itself
        for name in names:
            target = resolve(name) if name.split(".")[0] == "memctl" else None
            if target and target != module:
                found.append((target, node.col_offset == 0 or id(node) in optional, node.lineno,
                              id(node) in type_only))
    return found


def layer_of(module: str) -> tuple[int, str] | None:
    for number, members in enumerate(LAYERS):
        for member in members:
            if module == member or module.startswith(member + "."):
                return number, member
    return None


def test_every_module_belongs_to_a_layer() -> None:
    homeless = [m for m in MODULES if layer_of(m) is None and m not in ("memctl", "memctl.__main__")]
    assert homeless == [], f"modules outside every layer (add them to LAYERS): {homeless}"


def test_no_import_goes_up_a_layer_or_across_siblings() -> None:
    wrong = []
    for module in MODULES:
        here = layer_of(module)
        if here is None:
            continue
        for target, _top in imports_of(module):
            there = layer_of(target)
            if there is None:
                continue  # the package root (`memctl.__version__`)
            if there[0] > here[0]:
                wrong.append(f"{module} imports {target} (a higher layer)")
            elif there[0] == here[0] and there[1] != here[1] \
                    and (here[1], there[1]) not in ALLOWED_SIBLING_IMPORTS:
                wrong.append(f"{module} imports {target} (a sibling layer)")
    assert wrong == []


def test_the_front_ends_reach_memory_only_through_the_services() -> None:
    wrong = []
    for module in MODULES:
        if not any(module == front or module.startswith(front + ".") for front in FRONT_ENDS):
            continue
        for target, _top in imports_of(module):
            if target != "memctl" and not any(target == allowed or target.startswith(allowed + ".")
                                               for allowed in FRONT_ENDS_MAY_IMPORT):
                wrong.append(f"{module} imports {target}")
    assert wrong == []


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    counter = 0
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))
    return cycles


def test_a_package_importing_its_own_submodule_lazily_is_a_circle_when_it_imports_back(
        tmp_path: Path) -> None:
    """The knot the importers had: the package's __init__ imports a reader, which imports a
    helper back from the package's __init__."""
    (tmp_path / "init.py").write_text("def run():\n    from memctl.exchange.probe import reader\n")
    (tmp_path / "reader.py").write_text("from memctl.exchange.probe import helper\n")
    MODULES.update({"memctl.exchange.probe": tmp_path / "init.py",
                    "memctl.exchange.probe.reader": tmp_path / "reader.py"})
    try:
        graph = {m: {t for t, _ in imports_of(m)} for m in ("memctl.exchange.probe",
                                                           "memctl.exchange.probe.reader")}
        assert find_cycles(graph) == [["memctl.exchange.probe", "memctl.exchange.probe.reader"]]
    finally:
        del MODULES["memctl.exchange.probe"], MODULES["memctl.exchange.probe.reader"]


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert find_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert find_cycles({"a": {"b"}, "b": set()}) == []


def test_no_module_imports_another_in_a_circle() -> None:
    graph = {module: {target for target, _top in imports_of(module) if target != "memctl"}
             for module in MODULES}
    assert find_cycles(graph) == []


def test_imports_of_memctl_modules_are_at_the_top_except_the_lazy_paths() -> None:
    wrong = [f"{module}:{line} imports {target} inside a function"
             for module in MODULES for target, top, line, type_only in import_sites(module)
             if not top and not type_only and target not in LAZY_IMPORTS.get(module, set())]
    assert wrong == []


def test_the_checks_see_relative_and_function_local_imports(tmp_path: Path) -> None:
    source = "def f():\n    from ..core import ids\n    from . import layout\n"
    MODULES["memctl.disk.probe"] = tmp_path / "probe.py"
    try:
        (tmp_path / "probe.py").write_text(source)
        assert [(t, top) for t, top, *_ in import_sites("memctl.disk.probe")] == [
            ("memctl.core.ids", False), ("memctl.disk.layout", False)]
    finally:
        del MODULES["memctl.disk.probe"]


def test_no_module_is_imported_by_name_at_run_time() -> None:
    """`importlib.import_module` and `__import__` would hide an import from every check here."""
    wrong = []
    for module, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                name = getattr(node.func, "attr", None) or getattr(node.func, "id", None)
                if name in ("import_module", "__import__"):
                    wrong.append(f"{module}:{node.lineno}")
    assert wrong == []


def test_the_package_root_imports_nothing_of_memctl() -> None:
    """Every layer may import `memctl` itself (for `__version__`), so it must stay a leaf."""
    assert [target for target, *_ in import_sites("memctl")] == []


# Modules `memctl search` must not load, whether it prints hits (without rich, to a pipe:
# memctl.cli.plaintext) or JSON, and whether it walks the store or a live watcher answers:
# each cost milliseconds of every search (docs/architecture.md, "Lazy imports, and why").
SEARCH_NEVER_LOADS = ("typer", "yaml", "rapidfuzz", "watchdog", "mcp", "rich", "dataclasses",
                      "inspect", "typing", "socket", "subprocess", "threading", "tempfile",
                      "hashlib")
_LOADED_BY_SEARCH = """
import atexit, sys
never = set(sys.argv[1].split(","))
def report():
    loaded = {"memctl": sorted(m for m in sys.modules if m == "memctl" or m.startswith("memctl.")),
              "never": sorted(m for m in sys.modules if m.split(".")[0] in never)}
    import json  # only now: json loads re and enum, which a served search never does
    print(json.dumps(loaded), file=sys.stderr)
atexit.register(report)
sys.argv = ["memctl", "search", *sys.argv[2:]]
from memctl.cli import main
main()
"""


def loaded_by_search(env: dict[str, str], *args: str,
                     never: tuple[str, ...] = SEARCH_NEVER_LOADS) -> dict:
    completed = subprocess.run([sys.executable, "-c", _LOADED_BY_SEARCH, ",".join(never),
                                *args], env=env, capture_output=True, text=True)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip(), "hits were printed"
    return json.loads(completed.stderr.strip().splitlines()[-1])


def watcher_live(env: dict[str, str]) -> bool:
    status = subprocess.run([memctl_executable(), "watch", "--status", "--json"], env=env,
                            capture_output=True, text=True)
    return status.returncode == 0 and json.loads(status.stdout)["live"]


def live_watcher(env: dict[str, str]) -> subprocess.Popen:
    """A real `memctl watch`, once `memctl watch --status` calls it live."""
    watcher = subprocess.Popen([memctl_executable(), "watch"], env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    server = Path(env["MEMCTL_STORE"]) / ".memctl" / "search.sock"  # its search server's
    while time.monotonic() < deadline and watcher.poll() is None:
        if watcher_live(env) and server.exists():
            return watcher
        time.sleep(0.1)
    watcher.terminate()
    raise AssertionError("memctl watch did not become live")


def test_memctl_search_loads_only_what_it_needs(sample_store: Path) -> None:
    """The pinned memctl modules, and none of the heavy ones, with and without a live
    watcher, printing hits or JSON; with a live watcher, once searching on its own
    (MEMCTL_NO_SEARCH_SERVER=1) and once answered by the watcher's search server."""
    env = {"MEMCTL_STORE": str(sample_store), "MEMCTL_PROJECT": "blog-backend", "PATH": "/usr/bin:/bin",
           "COLUMNS": "100"}
    subprocess.run([memctl_executable(), "search", "postgres"], env=env, capture_output=True, check=True)
    for watching in (False, True):
        watcher = live_watcher(env) if watching else None
        try:
            for output in (["--json"], []):
                alone = dict(env, MEMCTL_NO_SEARCH_SERVER="1") if watching else env
                loaded = loaded_by_search(alone, "postgres", *output)
                assert set(loaded["memctl"]) == SEARCH_MODULES | (
                    set() if watching else WALK_AHEAD_MODULES), output
                assert loaded["never"] == [], output
                if watching:
                    served = loaded_by_search(env, "postgres", *output,
                                              never=SEARCH_NEVER_LOADS + SERVED_NEVER_LOADS)
                    assert set(served["memctl"]) == SERVED_MODULES, output
                    assert served["never"] == [], output
            # The searches read a live heartbeat (the watcher path: its cookies, the host check).
            assert watcher_live(env) == watching
        finally:
            if watcher is not None:
                watcher.terminate()
                watcher.wait(60)  # a safety net, not a measure: no test times a shutdown


_LOADED_BY_SHOW = """
import atexit, json, sys
atexit.register(lambda: print(json.dumps(sorted(
    m for m in sys.modules if m == "memctl" or m.startswith("memctl.")
    or m.split(".")[0] in ("typer", "rapidfuzz", "secrets", "watchdog", "mcp"))), file=sys.stderr))
sys.argv = ["memctl", "show", *sys.argv[1:]]
from memctl.cli import main
main()
"""


def test_memctl_show_loads_only_what_it_needs(sample_store: Path) -> None:
    """`memctl show ID` of a note: what a search loads and the note's reader (SHOW_MODULES),
    without typer, the write-time checks or the episode rules; an episode's id loads those
    rules (lazily) and still no typer."""
    env = {"MEMCTL_STORE": str(sample_store), "MEMCTL_PROJECT": "blog-backend", "PATH": "/usr/bin:/bin"}
    listed = subprocess.run([memctl_executable(), "list", "--json", "--all-projects"], env=env,
                            capture_output=True, text=True, check=True)
    note_id = json.loads(listed.stdout)[0]["id"]
    episodes = subprocess.run([memctl_executable(), "episode", "list", "--json"], env=env,
                              capture_output=True, text=True, check=True)
    episode_id = json.loads(episodes.stdout)[0]["id"]
    for args, expected in (([note_id, "--json"], SEARCH_MODULES | SHOW_MODULES),
                           ([note_id], SEARCH_MODULES | SHOW_MODULES)):
        completed = subprocess.run([sys.executable, "-c", _LOADED_BY_SHOW, *args], env=env,
                                   capture_output=True, text=True)
        assert completed.returncode == 0, completed.stderr
        assert note_id in completed.stdout
        assert set(json.loads(completed.stderr.strip().splitlines()[-1])) == expected, args
    completed = subprocess.run([sys.executable, "-c", _LOADED_BY_SHOW, episode_id], env=env,
                               capture_output=True, text=True)
    assert completed.returncode == 0, completed.stderr
    loaded = set(json.loads(completed.stderr.strip().splitlines()[-1]))
    assert "memctl.memory.episodes" in loaded and "typer" not in loaded


@pytest.mark.parametrize("module", sorted(MODULES))
def test_every_module_imports_on_its_own(module: str) -> None:
    """No module relies on another having been imported first (a sign of a hidden circle)."""
    completed = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True)
    assert completed.returncode == 0, completed.stderr


def test_git_runs_only_through_the_git_module() -> None:
    """memctl.disk.gitops holds git's safety settings (no prompt, no walking up into an
    enclosing repository, no optional locks): every other module goes through it."""
    wrong = []
    for module, path in MODULES.items():
        if module == "memctl.disk.gitops":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.List, ast.Tuple)) and node.elts \
                    and isinstance(node.elts[0], ast.Constant) and node.elts[0].value == "git":
                wrong.append(f"{module}:{node.lineno}")
    assert wrong == []


def test_the_repository_cites_only_what_it_has() -> None:
    """Comments and docs point at docs/, bench/ or a test, never at a document kept elsewhere."""
    outside = ("RESEARCH" + ".md", "SPEC" + ".md", "SPEC" + " §")
    files = [*PACKAGE.rglob("*.py"), *(REPO / "docs").glob("*.md"), *(REPO / "bench").glob("*.py"),
             *(REPO / "tests").glob("*.py"), REPO / "README.md", REPO / "bench" / "README.md"]
    wrong = [f"{path.relative_to(REPO)}: {needle}" for path in files
             for needle in outside if needle in path.read_text(encoding="utf-8")]
    assert wrong == []
