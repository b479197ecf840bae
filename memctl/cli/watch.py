"""`memctl watch`: keep the index in step with the files while it runs (docs/watch.md)."""

from __future__ import annotations

import os
import sys
from datetime import UTC, datetime
from typing import Any

import typer

from memctl.cli.base import JSON_OPTION, app, examples, get_store
from memctl.cli.codechange import PROBE_ENV, CodeChange, start_again
from memctl.cli.output import emit_json
from memctl.cli.searchserver import SearchServer
from memctl.core.clock import format_time
from memctl.services import stores
from memctl.services.serving import kept_open
from memctl.services.watching import (
    FAILING,
    BatchReport,
    Watcher,
    clear_own_heartbeat,
    import_all,
    no_room,
    read_status,
)


def _line(data: dict[str, Any]) -> None:
    import json

    sys.stdout.write(json.dumps(data, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def _say(message: str) -> None:
    sys.stderr.write(message + "\n")
    sys.stderr.flush()


@app.command("watch", epilog=examples("memctl watch", "memctl watch --commit --quiet",
                                      "memctl watch --status"))
def watch(
    status: bool = typer.Option(False, "--status", help="Say whether a watcher runs for the store, and exit."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No line per batch (warnings and errors still show)."),
    json_out: bool = JSON_OPTION,
    commit: bool = typer.Option(False, "--commit", help="Commit hand edits to git, at most one commit every few seconds."),
) -> None:
    """Keep the index in step with the files: hand edits, editor saves, git checkouts, unzips.

    Runs in the foreground until Ctrl-C or SIGTERM. Prints a line on stderr when ready, then
    `+added ~updated -removed in N ms` per batch. With --json: one JSON line per event on stdout
    ({"event": "ready"}, then {"event": "batch", ...})."""
    store = get_store()
    if status:
        _status(store, json_out)
        return
    if os.environ.get(PROBE_ENV) == "1":
        # The check a watcher makes of new code before it starts again on it
        # (memctl.cli.codechange): the store is there and everything a watcher imports loads.
        import_all()
        return
    import signal

    def on_batch(report: BatchReport) -> None:
        if json_out:
            _line(report.as_json())
        elif not quiet and (report.changed or report.errors):
            # People get no line for a batch that changed nothing (docs/watch.md): saves of
            # identical files, a pass after the index was made anew.
            problems = f" ({len(report.errors)} not parsed)" if report.errors else ""
            _say(f"+{report.added} ~{report.updated} -{report.removed} "
                 f"in {report.elapsed_ms:.0f} ms{problems}")
        for error in report.errors:
            _say(f"warning: {error}")

    def on_message(text: str) -> None:
        if json_out:
            _line({"event": "message", "message": text})
        if not quiet or text.startswith("warning:"):
            _say(f"memctl watch: {text}")

    def on_commit(sha: str, files: int) -> None:
        if json_out:
            _line({"event": "commit", "commit": sha, "files": files})
        elif not quiet:
            _say(f"committed {files} file{'s' if files != 1 else ''} ({sha[:10]})")

    def on_ready() -> None:
        _say(f"memctl watch: watching {store.root} (Ctrl-C to stop)")
        if json_out:
            _line({"event": "ready"})

    def announce(text: str) -> None:
        """What the watcher says of a change of memctl's code: shown even with --quiet (a
        service's log must say why the watcher started again)."""
        if json_out:
            _line({"event": "message", "message": text})
        _say(f"memctl watch: {text}")

    # Stop requests once the watcher stops to start again on new code: kept here, and then
    # it ends instead of starting again (a signal must not cut the hand-over short). Before
    # that (a watcher that let the store go hands over only once it watches it again), a
    # stop request stops it.
    stop_asked: list[int] = []

    def terminate(signum: int, frame: object) -> None:
        if watcher.handing_over and not stop_asked:
            stop_asked.append(signum)
            return
        raise KeyboardInterrupt  # (a second request while starting again: at once)

    # Searches answered by a process kept ready while the watcher is live (docs/watch.md,
    # "Searches answered by the watcher").
    server = SearchServer(store.root)
    watcher = Watcher(store.root, commit=commit, on_batch=on_batch, on_message=on_message,
                      on_commit=on_commit, on_live=server.live)
    # SIGTERM stops the watcher the way Ctrl-C does: at once, even in the middle of a pass
    # (the index is derived; an interrupted transaction rolls back).
    signal.signal(signal.SIGTERM, terminate)
    signal.signal(signal.SIGINT, terminate)
    if hasattr(signal, "SIGHUP"):  # not on Windows, where the watcher then says it cannot run
        signal.signal(signal.SIGHUP, terminate)

    def start_over() -> None:
        watcher.stop(hand_over=True)

    # After an upgrade it stops and starts again on the new code (memctl.cli.codechange).
    # What it would otherwise load only at its first changed file is loaded now, from the
    # code it started with: not from the new files an upgrade may have written meanwhile.
    import_all()
    code_change = CodeChange(start_over, announce, can_check=lambda: not watcher.away)
    code_change.start()
    try:
        # The access counters held open while it runs: a search's own connection is then never
        # the last to close, whose close checkpoints the WAL with an fsync (10k notes: ~10-20 ms
        # of each search; tests/test_watch.py).
        with kept_open(store):
            watcher.run(on_ready=on_ready)
    except KeyboardInterrupt:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second signal must not cut close() short
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        if watcher.handed_lock is not None:  # stopped while it was to start again
            watcher.handed_lock.release()
            clear_own_heartbeat(store)
        if not quiet:
            _say("memctl watch: stopped")
        return
    finally:
        code_change.stop()
        server.stop()
    lock = watcher.handed_lock  # the loop ends only when stopped to start again on new code
    if lock is None:
        return
    extra = lock.hand_over()
    # From here a stop request ends the process at once (the default action); one that came
    # while the watcher stopped is honoured instead of starting again.
    for number in (signal.SIGTERM, signal.SIGINT, getattr(signal, "SIGHUP", None)):
        if number is not None:
            signal.signal(number, signal.SIG_DFL)
    try:
        if not stop_asked:
            start_again(extra)
    finally:  # not started again after all
        lock.release()
        clear_own_heartbeat(store)
    if not quiet:
        _say("memctl watch: stopped")


def _status(store: stores.Store, json_out: bool) -> None:
    found = read_status(store)
    # The heartbeat keeps epoch seconds (memctl.disk.watchstate); shown in UTC, as every
    # time memctl writes: ISO 8601 in the JSON, said to be UTC in the text.
    started = datetime.fromtimestamp(found.started, UTC) if found else None
    # A watcher that runs but cannot write (docs/watch.md, "Errors"): its heartbeat says why
    # its passes fail; on a disk with no room at all it cannot write that either (nor beat),
    # so the disk is looked at here.
    failing = None
    if found is not None and found.running:
        failing = "no space left on device" if no_room(store) else found.extra.get(FAILING)
    if json_out:
        emit_json({
            "store": str(store.root),
            "running": found is not None and found.running,
            "live": found is not None and found.live and not failing,
            "pid": found.pid if found else None,
            "state": found.state if found else None,
            "failing": failing,
            "heartbeat_age_s": round(found.age, 1) if found else None,
            "started": format_time(started) if started else None,
        })
        return
    if found is None:
        typer.echo(f"no watcher runs for {store.root}")
    elif failing:
        typer.echo(f"a watcher runs for {store.root} (pid {found.pid}, since "
                   f"{started:%Y-%m-%d %H:%M:%S} UTC) but cannot write: {failing}; it keeps "
                   f"nothing fresh, and commands check the files themselves until it can "
                   f"(last heartbeat {found.age:.0f} s ago)")
    elif found.live:
        typer.echo(f"a watcher runs for {store.root}: pid {found.pid}, "
                   f"since {started:%Y-%m-%d %H:%M:%S} UTC, "
                   f"last heartbeat {found.age:.0f} s ago")
    elif found.running and found.state == "paused":
        typer.echo(f"a watcher runs for {store.root} (pid {found.pid}) but writes nothing to "
                   f"the index, which a newer memctl made; commands check the files "
                   f"themselves")
    elif found.running and found.state == "starting":
        typer.echo(f"a watcher is starting for {store.root} (pid {found.pid}); it does its "
                   f"first full pass")
    else:
        typer.echo(f"no live watcher for {store.root}: the last one (pid {found.pid}) has not "
                   f"beaten for {found.age:.0f} s (stopped, hung or gone); commands check the "
                   f"files themselves")
