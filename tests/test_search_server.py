"""Searches answered by the watcher's search server (memctl/cli/served.py, the asking side;
memctl/cli/searchserver.py, the server; docs/watch.md, "Searches answered by the watcher").

A real `memctl watch` and its real server process, a real Unix socket: every served search
prints the bytes the same search prints when it runs on its own, finds a note written by hand
just before it, and when the socket is dead, answers nothing or the server is stopped, the
search runs on its own with the same result."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import HARNESS, frozen_code, memctl_executable, write_memory_file

from memctl.cli import searchserver, served
from memctl.core.errors import UsageError
from memctl.disk import layout, watchstate


class Ran:
    def __init__(self, completed: subprocess.CompletedProcess[bytes], how: str) -> None:
        self.code = completed.returncode
        self.stdout = completed.stdout
        self.stderr = completed.stderr
        self.how = how

    def same_as(self, other: Ran) -> bool:
        return (self.code, self.stdout, self.stderr) == (other.code, other.stdout, other.stderr)

    def __repr__(self) -> str:
        return f"Ran({self.how}, {self.code}, {self.stdout[:300]!r}, {self.stderr[:300]!r})"


def harness(tmp_path: Path, args: list[str], env: dict[str, str], cwd: Path | None = None,
            merged: bool = False, timeout: float = 60) -> Ran:
    """`memctl ARGS` through HARNESS: served or not, and what it printed."""
    mark = tmp_path / f"mark-{time.monotonic_ns()}"
    completed = subprocess.run([sys.executable, "-c", HARNESS, str(mark), *args], env=env,
                               cwd=cwd, stdin=subprocess.DEVNULL, capture_output=not merged,
                               stdout=subprocess.PIPE if merged else None,
                               stderr=subprocess.STDOUT if merged else None, timeout=timeout)
    return Ran(completed, mark.read_text())


def local(args: list[str], env: dict[str, str], cwd: Path | None = None,
          merged: bool = False, **extra: str) -> Ran:
    """The installed `memctl ARGS` searching on its own."""
    completed = subprocess.run([memctl_executable(), *args], env={**env, **extra}, cwd=cwd,
                               stdin=subprocess.DEVNULL, capture_output=not merged,
                               stdout=subprocess.PIPE if merged else None,
                               stderr=subprocess.STDOUT if merged else None, timeout=60)
    return Ran(completed, "local")


def socket_of(store: Path) -> Path:
    return store / ".memctl" / "search.sock"


def connectable(path: Path) -> bool:
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(str(path))
        return True
    except OSError:
        return False
    finally:
        probe.close()


def wait_until(check, what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


class Watching:
    """A real `memctl watch` on the store, once its search server listens."""

    def __init__(self, store: Path, env: dict[str, str]) -> None:
        self.store = store
        self.proc = subprocess.Popen([memctl_executable(), "watch", "--quiet"], env=env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        wait_until(lambda: watchstate.watcher_is_live(store) and connectable(socket_of(store)),
                   "the watcher's search server")

    def server_pid(self) -> int:
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(str(socket_of(self.store)))
            return served.peer_credentials(probe)[0]  # type: ignore[arg-type]
        finally:
            probe.close()

    def stop(self) -> bytes:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        _out, err = self.proc.communicate(timeout=20)
        return err


@pytest.fixture
def watched(sample_store: Path, tmp_path: Path):
    env = {**os.environ, "MEMCTL_STORE": str(sample_store), "MEMCTL_PROJECT": "blog-backend",
           **frozen_code(tmp_path)}
    env.pop("MEMCTL_ALWAYS_WALK", None)
    watching = Watching(sample_store, env)
    try:
        yield sample_store, env, watching
    finally:
        watching.stop()


SEARCHES = [
    ["search", "postgres"],  # hits laid out for a pipe
    ["search", "postgres", "--json"],
    ["search", "postgres", "--explain"],
    ["search", "postgres", "--all-projects", "--json", "--limit", "2"],
    ["search", "数据库"],
    ["search", "连接池", "--json", "-a"],
    ["search", "zqxwvy"],  # nothing: "no matches" on stderr
    ["search", "postgress", "--all-projects"],  # a misspelling: "no exact matches" first
    ["search", "-mysql", "--json"],
    ["search", "redis", "--since", "last tuesday"],  # a bad value: one `error:` line, exit 2
    ["search", ""],  # an empty query: bad usage
    ["search", "x", "--project", "Not A Name!"],  # for typer to word: declined, run here
    ["search", "x", "--type", "bogus"],
    ["search", "--help"],
]
# Command lines the fast path hands to the typer app: the server declines them.
DECLINED = ({"--project", "Not A Name!"}, {"--type", "bogus"}, {"--help"})


def test_served_searches_print_the_bytes_of_a_local_search(watched, tmp_path: Path) -> None:
    store, env, _watching = watched
    for args in SEARCHES:
        answered = harness(tmp_path, args, env)
        expected = "local" if any(words <= set(args) for words in DECLINED) else "served"
        assert answered.how == expected, args
        alone = local(args, env, MEMCTL_NO_SEARCH_SERVER="1")
        walked = local(args, env, MEMCTL_ALWAYS_WALK="1")
        assert answered.same_as(alone), (args, answered, alone)
        assert answered.same_as(walked), (args, answered, walked)
    # The search was counted (each served search records its hits, as a local one does).
    shown = local(["search", "postgres", "--json"], env, MEMCTL_NO_SEARCH_SERVER="1")
    assert json.loads(shown.stdout), shown


def test_the_width_and_colours_of_the_asking_process_are_used(watched, tmp_path: Path) -> None:
    """The environment decides the layout of hits in a pipe: COLUMNS, and FORCE_COLOR (then
    rich lays them out, in colour, in the served search as in a local one)."""
    _store, env, _watching = watched
    plain = {key: value for key, value in env.items() if key not in ("NO_COLOR", "COLUMNS")}
    for extra in ({"COLUMNS": "50"}, {"COLUMNS": "200"}, {"FORCE_COLOR": "1"},
                  {"FORCE_COLOR": "1", "COLUMNS": "61"}):
        for args in (["search", "postgres"], ["search", "数据库", "--explain", "-a"]):
            answered = harness(tmp_path, args, {**plain, **extra})
            alone = local(args, {**plain, **extra}, MEMCTL_NO_SEARCH_SERVER="1")
            assert answered.how == "served", (extra, args)
            assert answered.same_as(alone), (extra, args, answered, alone)
        assert ("\x1b[" in answered.stdout.decode()) == ("FORCE_COLOR" in extra)


def test_served_output_keeps_the_order_of_stdout_and_stderr(watched, tmp_path: Path) -> None:
    """stdout and stderr into one pipe (`2>&1`): the served writes come in the order the
    search made them, as a local search's do."""
    _store, env, _watching = watched
    for args in (["search", "postgress", "--all-projects"], ["search", "zqxwvy"],
                 ["search", "redis", "--since", "last tuesday"]):
        answered = harness(tmp_path, args, env, merged=True)
        assert answered.how == "served"
        assert answered.same_as(local(args, env, merged=True, MEMCTL_NO_SEARCH_SERVER="1"))


def test_the_project_of_the_folder_one_stands_in_is_searched(watched, tmp_path: Path) -> None:
    """No MEMCTL_PROJECT: the served search stands in the asking process's folder, and so
    searches its project (inside the store: the project folder one stands in)."""
    store, env, _watching = watched
    env = {key: value for key, value in env.items() if key != "MEMCTL_PROJECT"}
    for folder, project in ((store / "data-pipeline" / "notes", "data-pipeline"),
                            (store / "blog-backend", "blog-backend")):
        args = ["search", "postgresql", "--json"]
        answered = harness(tmp_path, args, env, cwd=folder)
        assert answered.how == "served"
        assert answered.same_as(local(args, env, cwd=folder, MEMCTL_NO_SEARCH_SERVER="1"))
        projects = {hit["project"] for hit in json.loads(answered.stdout)}
        assert projects and projects <= {project, "global"}, projects


def test_a_note_written_by_hand_just_before_is_found(watched, tmp_path: Path) -> None:
    store, env, _watching = watched
    for number in range(5):
        word = f"quokkaserved{number}"
        write_memory_file(store, f"blog-backend/notes/fact/hand-{number}.md",
                          f"The {word} cache holds the sessions.",
                          id=f"01handnote{number:06d}", type="fact")
        answered = harness(tmp_path, ["search", word, "--json"], env)
        assert answered.how == "served"
        assert [hit["id"] for hit in json.loads(answered.stdout)] == [f"01handnote{number:06d}"]


def test_a_dead_socket_or_a_server_that_does_not_answer_is_searched_around(
        watched, tmp_path: Path) -> None:
    store, env, watching = watched
    args = ["search", "postgres", "--json"]
    expected = local(args, env, MEMCTL_NO_SEARCH_SERVER="1")
    # A stopped server (SIGSTOP to its process group: the server, its spare worker): the
    # search gives up on it and runs on its own.
    group = watching.server_pid()  # the server leads a process group of its own
    os.killpg(group, signal.SIGSTOP)
    try:
        answered = harness(tmp_path, args, env)
    finally:
        os.killpg(group, signal.SIGCONT)
    assert answered.how == "local" and answered.same_as(expected)
    assert harness(tmp_path, args, env).how == "served"
    # A dead one: its socket file stays, nobody listens.
    os.killpg(group, signal.SIGKILL)
    wait_until(lambda: not connectable(socket_of(store)), "the server to die")
    assert socket_of(store).exists()
    answered = harness(tmp_path, args, env)
    assert answered.how == "local" and answered.same_as(expected)
    # Something else listening there: it hangs up, or answers garbage or half an answer.
    socket_of(store).unlink()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(socket_of(store)))
    listener.listen(8)
    replies = [b"", b"nonsense", served.encode_answer(0, [(1, b"[]\n")])[:-1]]

    def answer_badly() -> None:
        for reply in replies:
            conn, _ = listener.accept()
            with conn:
                conn.recv(1 << 20)
                conn.sendall(reply)

    thread = threading.Thread(target=answer_badly, daemon=True)
    thread.start()
    try:
        for _reply in replies:
            answered = harness(tmp_path, args, env)
            assert answered.how == "local" and answered.same_as(expected)
    finally:
        thread.join(10)
        listener.close()


def test_askers_that_send_a_byte_at_a_time_hold_no_search_up(watched, tmp_path: Path) -> None:
    """Processes of the same user that connect and send their question a byte every second
    took all the server's workers for as long as they went on (the wait was per read), and
    every search then waited a minute before it ran on its own. Now a worker drops a
    question not all sent within REQUEST_WAIT, and a search no worker takes within TAKEN_WAIT
    runs on its own: it prints what it prints on its own, long before the minute."""
    store, env, _watching = watched
    args = ["search", "postgres", "--json"]
    expected = local(args, env, MEMCTL_NO_SEARCH_SERVER="1")
    stop = threading.Event()
    slow = []
    for _ in range(searchserver.MAX_WORKERS + 1):
        client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        client.connect(str(socket_of(store)))
        slow.append(client)

    def dribble() -> None:
        while not stop.wait(1.0):
            for client in slow:
                try:
                    client.send(b"x")
                except OSError:
                    pass  # dropped by the server

    thread = threading.Thread(target=dribble, daemon=True)
    thread.start()
    try:
        time.sleep(1.5)  # every worker is reading one of them
        # Far under the minute it took; a bound against a hang, not a timing.
        answered = harness(tmp_path, args, env, timeout=40)
        assert answered.same_as(expected), answered
    finally:
        stop.set()
        thread.join(10)
        for client in slow:
            client.close()


def test_a_question_sent_a_byte_at_a_time_is_dropped_after_the_wait_in_all(monkeypatch) -> None:
    """The server's read of one question: its wait is for the whole of it, not each read."""
    monkeypatch.setattr(searchserver, "REQUEST_WAIT", 0.5)
    server_end, client_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    stop = threading.Event()

    def dribble() -> None:
        for _ in range(30):  # 3 s of a byte every 0.1 s, each well within one read's wait
            if stop.wait(0.1):
                return
            try:
                client_end.send(b"x")
            except OSError:
                return
        client_end.shutdown(socket.SHUT_WR)

    thread = threading.Thread(target=dribble, daemon=True)
    thread.start()
    try:
        with pytest.raises(TimeoutError):
            searchserver._read_request(server_end)
    finally:
        stop.set()
        thread.join(10)
        server_end.close()
        client_end.close()


def test_the_socket_is_the_users_alone_and_goes_with_the_watcher(sample_store: Path,
                                                                 tmp_path: Path) -> None:
    env = {**os.environ, "MEMCTL_STORE": str(sample_store), **frozen_code(tmp_path)}
    watching = Watching(sample_store, env)
    server = watching.server_pid()
    try:
        assert (socket_of(sample_store).stat().st_mode & 0o777) == 0o600
    finally:
        watching.stop()
    assert not socket_of(sample_store).exists()
    wait_until(lambda: not Path(f"/proc/{server}").exists(), "the server to end")


def test_only_a_peer_of_the_same_user_is_spoken_to() -> None:
    """The check both ends make (the server of a connection, the asker of the server); the
    credentials are the kernel's (SO_PEERCRED)."""
    one, other = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with one, other:
        pid, uid, gid = served.peer_credentials(one)  # type: ignore[arg-type]
    assert (pid, uid, gid) == (os.getpid(), os.getuid(), os.getgid())
    assert served.peer_allowed(uid, os.getuid())
    assert not served.peer_allowed(uid + 1, uid)
    assert not served.peer_allowed(0, 1000)  # not even root's process is spoken to
    assert not served.peer_allowed(1000, 0)


def test_an_incomplete_answer_is_no_answer() -> None:
    whole = served.encode_answer(2, [(2, b"error: x\n"), (1, b"")])
    assert served.decode_answer(whole) == (2, [(2, b"error: x\n"), (1, b"")])
    for cut in range(len(whole)):
        assert served.decode_answer(whole[:cut]) is None
    assert served.decode_answer(whole + b"x") is None
    assert served.decode_answer(searchserver.DECLINE) is None


def test_a_server_whose_code_changed_declines(tmp_path: Path) -> None:
    source = tmp_path / "module.py"
    source.write_text("x = 1\n")
    files = {str(source): searchserver.code_stamp(str(source))}
    assert searchserver.code_unchanged(files)
    source.write_text("x = 22\n")
    assert not searchserver.code_unchanged(files)
    source.unlink()
    assert not searchserver.code_unchanged(files)
    assert searchserver.answer([served.MAGIC], [], files) == searchserver.DECLINE


def test_a_server_whose_code_was_replaced_keeping_size_and_mtime_declines(tmp_path: Path) -> None:
    """An upgrade that writes a file of the same size with the same mtime (`cp -p`, a wheel's
    fixed times) still changes its ctime (docs/watch.md, "What a pass compares")."""
    source, newer = tmp_path / "module.py", tmp_path / "newer.py"
    source.write_text("x = 1\n")
    newer.write_text("x = 2\n")
    stamp = source.stat().st_mtime_ns
    os.utime(newer, ns=(stamp, stamp))
    files = {str(source): searchserver.code_stamp(str(source))}
    assert searchserver.code_unchanged(files)
    os.replace(newer, source)
    assert (source.stat().st_mtime_ns, source.stat().st_size) == (stamp, 6)
    assert not searchserver.code_unchanged(files)


def test_the_asking_side_finds_the_store_and_heartbeat_as_memctl_does(tmp_path: Path,
                                                                      monkeypatch) -> None:
    assert (served.STATE_DIR, served.HEARTBEAT_FILE, served.STALE_AFTER) == \
        (layout.STATE_DIR, watchstate.HEARTBEAT_FILE, watchstate.STALE_AFTER)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for option, store_env, xdg in ((None, None, None), (None, None, str(tmp_path / "xdg")),
                                   ("~/mem", None, None), ("rel/store", "ignored", None),
                                   (None, "env/store", None), (None, str(tmp_path / "a"), None)):
        for name, value in (("MEMCTL_STORE", store_env), ("XDG_DATA_HOME", xdg)):
            if value is None:
                monkeypatch.delenv(name, raising=False)
            else:
                monkeypatch.setenv(name, value)
        assert Path(served.store_root(option)) == layout.resolve_store_path(option)[0]
    # An empty --store or MEMCTL_STORE is bad usage there, and no store's socket here.
    for option, store_env in (("", None), (None, ""), ("", "env/store")):
        if store_env is None:
            monkeypatch.delenv("MEMCTL_STORE", raising=False)
        else:
            monkeypatch.setenv("MEMCTL_STORE", store_env)
        with pytest.raises(ValueError):
            served.store_root(option)
        with pytest.raises(UsageError):
            layout.resolve_store_path(option)
    assert served.search_store_option(["--store", "a", "search", "x"]) == (2, "a")
    assert served.search_store_option(["--store=b", "search"]) == (1, "b")
    assert served.search_store_option(["--store", "search", "search"]) == (2, "search")
    assert served.search_store_option(["show", "search"]) == (None, None)
    assert served.search_store_option(["add", "search"]) == (None, None)
    assert served.search_store_option(["--store", "a"]) == (None, "a")
