"""The watcher with watchdog's observer, as it runs where there is no inotify (macOS, Windows,
BSD) and with MEMCTL_WATCH_BACKEND=watchdog: the tests of tests/test_watch.py that carry the
watcher's promises (saves of every kind, moves between folders, a checkout in one pass, a
search right after a hand write, a note moved into a folder made just now, cookies that never
become notes) run again here on that observer (docs/watch.md, "How it works")."""

from __future__ import annotations

import sys

import pytest
from test_watch import (  # noqa: F401 - fixtures and tests collected again in this module
    notes_store,
    test_a_branch_checkout_is_one_pass_and_an_unzip_of_the_same_files_reindexes_nothing,
    test_a_note_moved_into_a_folder_made_just_now_is_in_one_place_for_the_next_reader,
    test_a_search_right_after_a_hand_write_finds_it_while_the_watcher_runs,
    test_delete_and_move_between_folders,
    test_folders_made_while_the_store_was_away_are_watched_once_it_is_back,
    test_real_vim_save,
    test_saves_of_every_kind_reach_the_index,
    test_the_watcher_answers_a_readers_cookies_which_never_become_notes_nor_commits,
    watcher,
)

from memctl.disk.watchstate import read_status

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="elsewhere watchdog's observer is the only one")


@pytest.fixture(autouse=True)
def _watchdogs_observer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMCTL_WATCH_BACKEND", "watchdog")


def test_the_watcher_here_runs_on_watchdogs_observer(watcher, notes_store) -> None:  # noqa: F811
    status = read_status(notes_store)
    assert status is not None and status.live and "events" not in status.extra
