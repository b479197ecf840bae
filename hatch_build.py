"""Build memctl's one C module, memctl/disk/_statwalk.c, where the machine has a C compiler.

The module lists a folder for the freshness walk that every command makes (memctl/disk/
filescan.py): a third less time for the walk (bench/README.md, "2026-12-06, the compiled
walk"). It is optional: where it cannot be built (no compiler, no Python headers, another
platform), the install goes on without it and the walk is made in Python, with the same
results.

A wheel gets the module as a file of the package (and the platform's tag); an editable
install (`pip install -e .`, `make venv`) gets it built next to its source, where the
package is imported from.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

try:
    from hatchling.builders.hooks.plugin.interface import BuildHookInterface
except ImportError:  # imported outside a build, for `compile_module` (tests/test_statwalk.py)
    BuildHookInterface = object  # type: ignore[assignment,misc]

SOURCE = Path("memctl") / "disk" / "_statwalk.c"
# The built module's file name, for this Python (`_statwalk.cpython-311-x86_64-linux-gnu.so`).
MODULE_NAME = "_statwalk" + (sysconfig.get_config_var("EXT_SUFFIX") or ".so")


def compile_module(source: Path, target: Path) -> str | None:
    """Compile `source` into the extension module `target`; None when it was built, else
    why not (one line)."""
    if os.name != "posix":
        return "not a POSIX system"
    compiler = (os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc").split()
    include = sysconfig.get_paths()["include"]
    if not (Path(include) / "Python.h").is_file():
        return f"no Python headers in {include}"
    flags = ["-O2", "-fPIC", "-shared", f"-I{include}"]
    if sys.platform == "darwin":
        flags += ["-undefined", "dynamic_lookup"]
    command = [*compiler, *flags, str(source), "-o", str(target)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{compiler[0]}: {exc}"
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["failed"])[-1]
        return f"{compiler[0]}: {last}"
    return None


class CustomBuildHook(BuildHookInterface):  # type: ignore[misc,valid-type]
    # The temporary folder a wheel's module is built in, removed once the wheel is written.
    _build_folder: Path | None = None

    def initialize(self, version: str, build_data: dict) -> None:
        if self.target_name != "wheel":
            return
        source = Path(self.root) / SOURCE
        if version == "editable":
            target = source.with_name(MODULE_NAME)
            problem = compile_module(source, target)
        else:
            self._build_folder = Path(tempfile.mkdtemp(prefix="memctl-build-"))
            target = self._build_folder / MODULE_NAME
            problem = compile_module(source, target)
            if problem is None:
                build_data["force_include"][str(target)] = f"memctl/disk/{MODULE_NAME}"
                build_data["pure_python"] = False
                build_data["infer_tag"] = True
        if problem is not None:
            self.app.display_warning(
                f"memctl: the compiled walk was not built ({problem}); the walk runs in Python")

    def finalize(self, version: str, build_data: dict, artifact_path: str) -> None:
        if self._build_folder is not None:
            shutil.rmtree(self._build_folder, ignore_errors=True)
            self._build_folder = None


if __name__ == "__main__":
    # `python hatch_build.py [FOLDER]`: build the module next to its source in FOLDER (a
    # checkout, or a build extracted with `git archive` for bench/bench_builds.py).
    root = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    source = root / SOURCE
    target = source.with_name(MODULE_NAME)
    problem = compile_module(source, target)
    print(problem or f"built {target}")
    sys.exit(1 if problem else 0)
