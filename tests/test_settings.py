"""memctl.toml: documented defaults, partial files, clear errors."""

from __future__ import annotations

import tomllib

import pytest
from conftest import REPO, Cli

from memctl.errors import MemctlError
from memctl.settings import DEFAULTS, Settings, default_toml


def test_init_writes_every_default_and_the_docs_show_the_same_text(store_path):
    written = (store_path / "memctl.toml").read_text()
    assert written == default_toml()
    assert tomllib.loads(written) == DEFAULTS
    assert default_toml() in (REPO / "docs" / "settings.md").read_text()


def test_a_partial_file_falls_back_to_defaults_and_changes_count(store_path):
    (store_path / "memctl.toml").write_text("[recall]\nmax_notes = 3\n")
    settings = Settings.load(store_path)
    assert settings.get("recall.max_notes") == 3
    assert settings.get("search.default_limit") == DEFAULTS["search"]["default_limit"]


def test_wrong_values_and_broken_files_are_named(store_path):
    (store_path / "memctl.toml").write_text('[recall]\nmax_notes = "many"\n')
    with pytest.raises(MemctlError, match="recall.max_notes"):
        Settings.load(store_path).get("recall.max_notes")
    (store_path / "memctl.toml").write_text("[recall\n")
    result = Cli(store_path)("add", "a note that needs the settings")
    assert result.exit_code == 1 and "memctl.toml does not parse" in result.stderr
