"""memctl is distributed as `memctl-md` (the name `memctl` on the package index is another
project): every install line people or the program show installs this project, and a wheel
built from this tree installs a working `memctl` whose distribution is `memctl-md`.

The wheel test builds and installs in a fresh virtual environment, with the dependencies from
the package index: `.venv/bin/python -m pytest -m slow tests/test_packaging.py` (bench/README.md).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import tomllib
import venv
import zipfile
from pathlib import Path

import pytest
from conftest import REPO

import memctl
from memctl import mcp_server

DISTRIBUTION = "memctl-md"

# Where an install line can reach a person: the README, the docs, the benchmarks' notes, the
# Makefile and every message in the code.
INSTALL_SOURCES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), REPO / "bench" / "README.md",
                   REPO / "Makefile", *sorted((REPO / "memctl").rglob("*.py")), *sorted((REPO / "bench").glob("*.py"))]
_INSTALL = re.compile(r"\bpipx? install\b([^`\n\"#]*)")
_NAME = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)")


def install_lines() -> list[tuple[str, str]]:
    """(where, what follows `pip install` / `pipx install`) for every install command."""
    found = []
    for path in INSTALL_SOURCES:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for match in _INSTALL.finditer(line):
                found.append((f"{path.relative_to(REPO)}:{number}", match.group(1)))
    return found


def requirement_names(arguments: str) -> list[str]:
    """The distributions an install command names: its words that are not options, paths or
    option values (`-e .`, `-r file`), each cut to its name (`memctl-md[mcp]` → memctl-md)."""
    try:
        words = shlex.split(arguments)
    except ValueError:
        words = arguments.split()
    names, skip_next = [], False
    for word in words:
        if skip_next:
            skip_next = False
            continue
        if word in ("-r", "--requirement", "-c", "--constraint", "--find-links", "-f", "--index-url", "-i"):
            skip_next = True
            continue
        if word.startswith("-") or word.startswith((".", "/", "~")) or "://" in word:
            continue
        match = _NAME.match(word)
        if match:
            names.append(match.group(1))
    return names


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_the_install_line_reader_sees_what_a_person_would_type() -> None:
    assert [rest for _, rest in install_lines() if "memctl-md" in rest][0].strip().startswith("'memctl-md[mcp]'")
    assert requirement_names(" 'memctl-md[mcp]'   ") == ["memctl-md"]
    assert requirement_names(" -e '.[mcp]'") == []
    assert requirement_names(" --quiet -r requirements.txt atheris") == ["atheris"]
    assert requirement_names(" 'memctl[mcp]'") == ["memctl"]
    assert requirement_names(" memctl_MD") == ["memctl_MD"]


def test_every_install_line_installs_this_project() -> None:
    """`memctl` (any extras, any spelling) is someone else's project: no install line may name it."""
    lines = install_lines()
    wrong = [f"{where}: pip install{rest}" for where, rest in lines
             if normalized("memctl") in map(normalized, requirement_names(rest))]
    assert wrong == []
    # Not vacuous: the README, the MCP recipe and the message `memctl mcp` prints without the
    # SDK all install memctl-md.
    naming_ours = {where.split(":")[0] for where, rest in lines if DISTRIBUTION in map(normalized, requirement_names(rest))}
    assert {"README.md", "docs/agents.md", "memctl/mcp_server.py"} <= naming_ours
    assert mcp_server.INSTALL_HINT == f"pip install '{DISTRIBUTION}[mcp]'"


def test_the_project_metadata_names_the_distribution_and_its_platforms() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["name"] == DISTRIBUTION
    assert project["scripts"] == {"memctl": "memctl.cli:main"}
    assert "version" in project.get("dynamic", [])  # from memctl/__init__.py, as --version prints it
    classifiers = project["classifiers"]
    assert "Operating System :: POSIX :: Linux" in classifiers
    assert not any("Windows" in classifier for classifier in classifiers)
    minimum = project["requires-python"].removeprefix(">=")
    versions = [c.rsplit(":: ", 1)[1] for c in classifiers if re.match(r"Programming Language :: Python :: 3\.\d+$", c)]
    assert versions and min(versions, key=lambda v: tuple(map(int, v.split(".")))) == minimum
    assert not any(url for url in project.get("urls", {}).values() if "example" in url or "<" in url)


@pytest.mark.slow
def test_a_wheel_installs_memctl_md_with_a_working_memctl(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", str(REPO), "-w", str(wheels)],
                           capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    [wheel] = wheels.glob("*.whl")
    assert wheel.name.startswith("memctl_md-")
    environment = tmp_path / "env"
    venv.create(environment, with_pip=True)
    python = environment / "bin" / "python"
    installed = subprocess.run([str(python), "-m", "pip", "install", "--quiet", str(wheel)],
                               capture_output=True, text=True)
    assert installed.returncode == 0, installed.stderr
    version = subprocess.run([str(environment / "bin" / "memctl"), "--version"], capture_output=True, text=True,
                             cwd=tmp_path)
    assert version.returncode == 0, version.stderr
    assert version.stdout.strip() == f"memctl {memctl.__version__}"
    probe = ("import importlib.metadata as m, memctl; d = m.distribution('memctl-md'); "
             "print(d.metadata['Name'], d.version, memctl.__version__, memctl.__file__)")
    metadata = subprocess.run([str(python), "-c", probe], capture_output=True, text=True, cwd=tmp_path)
    assert metadata.returncode == 0, metadata.stderr
    name, dist_version, package_version, location = metadata.stdout.split()
    assert (name, dist_version, package_version) == (DISTRIBUTION, memctl.__version__, memctl.__version__)
    assert Path(location).is_relative_to(environment)  # the installed copy, not this tree
    unrelated = subprocess.run([str(python), "-m", "pip", "show", "memctl"], capture_output=True, text=True)
    assert unrelated.returncode != 0  # nothing called `memctl` was installed
    # The compiled walk (hatch_build.py): in the wheel, tagged for this platform, and used by
    # the installed copy, wherever the build found a compiler; else neither.
    with zipfile.ZipFile(wheel) as archive:
        compiled = [name for name in archive.namelist() if name.startswith("memctl/disk/_statwalk.")
                    and not name.endswith(".c")]
    assert wheel.name.endswith("-py3-none-any.whl") != bool(compiled), (wheel.name, compiled)
    probe = "from memctl.disk import filescan; print(filescan._native_list is not None)"
    walk = subprocess.run([str(python), "-c", probe], capture_output=True, text=True, cwd=tmp_path)
    assert walk.stdout.strip() == str(bool(compiled)), walk.stderr


@pytest.mark.slow
def test_building_a_wheel_leaves_no_temporary_folder_behind(tmp_path: Path) -> None:
    """hatch_build.py compiles the wheel's module in a temporary folder: it is gone once the
    wheel is written (each build used to leave a memctl-build-* folder in the temp dir)."""
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", str(REPO),
                            "-w", str(tmp_path / "wheels")],
                           capture_output=True, text=True, env={**os.environ, "TMPDIR": str(temporary)})
    assert built.returncode == 0, built.stderr
    assert list(temporary.glob("memctl-build-*")) == []
