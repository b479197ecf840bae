"""`memctl mcp` answers `initialize` without importing what only some tools use: the command
has its own CLI module, and the services of the write-time checks, health, sync and recall are
imported at their first use (docs/architecture.md, "Lazy imports"; the figures in
bench/README.md, "The MCP server")."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import memctl_executable
from test_mcp import subprocess_env

pytest.importorskip("mcp.server.mcpserver")

DEFERRED = ["memctl.services.notes", "memctl.services.upkeep", "memctl.services.recall",
            "memctl.cli.agent", "watchdog"]

SCRIPT = """
import json, sys
from memctl.cli.commands import MODULE_OF, _load
_load(MODULE_OF["mcp"])
from memctl import mcp_server
from memctl.services.stores import open_store
server = mcp_server.build_server(open_store(sys.argv[1]), "demo")
deferred = json.loads(sys.argv[2])
built = [name for name in deferred if name in sys.modules]
mcp_server._warm_up()
warmed = [name for name in deferred if name in sys.modules]
print(json.dumps({"built": built, "warmed": warmed}))
"""


def test_the_server_is_built_without_the_services_only_some_tools_use(tmp_path: Path) -> None:
    store = tmp_path / "store"
    subprocess.run([memctl_executable(), "init", str(store)], env=subprocess_env(store),
                   check=True, capture_output=True)
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(store), json.dumps(DEFERRED)],
                          env=subprocess_env(store), capture_output=True, text=True, check=True)
    loaded = json.loads(done.stdout)
    assert loaded["built"] == []
    # Imported once the client is answered (or at a tool's first use).
    assert loaded["warmed"] == ["memctl.services.notes", "memctl.services.upkeep",
                                "memctl.services.recall"]
