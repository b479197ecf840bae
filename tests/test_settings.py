"""memctl.toml: documented defaults, partial files, clear errors."""

from __future__ import annotations

import tomllib

import pytest
from conftest import REPO, Cli

from memctl.core.errors import MemctlError
from memctl.disk.settings import DEFAULTS, Settings, default_toml


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


def test_the_untouched_default_file_and_an_edited_one_both_read_right(store_path):
    """An untouched memctl.toml is read without the TOML parser: it must give the defaults,
    and any edit of it must be parsed."""
    settings = Settings.load(store_path)
    for section, values in DEFAULTS.items():
        for key, value in values.items():
            assert settings.get(f"{section}.{key}") == value
    edited = default_toml().replace("default_limit = 20", "default_limit = 7")
    assert edited != default_toml()
    (store_path / "memctl.toml").write_text(edited)
    assert Settings.load(store_path).get("search.default_limit") == 7


@pytest.mark.parametrize("text", ["", "# only a comment\n", "\n  # indented\n\n"])
def test_a_file_of_comments_gives_the_defaults(store_path, text):
    (store_path / "memctl.toml").write_text(text)
    assert Settings.load(store_path).get("search.default_limit") == \
        DEFAULTS["search"]["default_limit"]
