"""The search server of a running watcher (docs/watch.md, "Searches answered by the watcher").

`memctl watch` starts this module as a process of its own (`SearchServer`): a Python that has
imported what a search needs (memctl.cli.fast and everything under it) and does nothing else.
While the watcher is live it listens on `.memctl/search.sock` (mode 0600; a peer of another
user is refused: `served.peer_allowed`). Each connection is taken by a worker forked ahead of
it, which takes on the asking process's context (its working folder and its terminals,
passed as file descriptors; its environment, umask, `sys.path`, command line, and
stdout/stderr made as that process made them), runs `memctl.cli.fast.run_fast` on the command line, the very function a
search run on its own calls, and answers with each write to stdout and stderr, in order, and
the exit code (`memctl.cli.served` is the asking side, and the wire format).

Why a process of its own, forked per search: a worker starts from a copy of a process that
has run nothing (no cache filled, no SQLite connection open, a single thread), so what it
prints is what a fresh `memctl search` prints, and what it changes of its process (the
environment, the folder it stands in, `sys.stdout`) goes with it. The watcher's own process
runs watchdog's threads and holds the index open: forking it could copy a lock held by another
thread, or SQLite's record of locks its own connections hold.

The worker makes its own freshness check, as any search does (memctl.index.db.fresh_during):
its cookies are answered by the watcher once every change made before them is in the index,
so a note written by hand just before the search is found; when the watcher does not answer,
the worker walks the store. A request it cannot answer as the local search would (another
memctl or interpreter, memctl's files changed since the server started, a command line that
is no search) is declined, and the asking process searches itself.
"""

from __future__ import annotations

import atexit
import gc
import io
import os
import select
import signal
import socket
import stat
import subprocess
import sys
import time

from memctl.cli import served
from memctl.cli.fast import parse_add, parse_search, parse_show, run_fast
from memctl.core.stamp import Stamp, file_stamp
from memctl.core.tokenize import warm_patterns
from memctl.services.retrieval import open_ahead_of_search

# Messages from the watcher on the server's stdin.
LISTEN = b"L"
UNLISTEN = b"U"
# Searches answered at once; more wait in the socket's queue.
MAX_WORKERS = 4
# A connected client sends its question at once; one that has not sent all of it by then is
# dropped.
REQUEST_WAIT = 5.0
MAX_REQUEST = 1 << 22
# How long `SearchServer.stop` waits for the process to end after closing its stdin.
STOP_WAIT = 2.0
DECLINE = served.MAGIC + b"\0" + served.DECLINED


class SearchServer:
    """The server process of one watcher, seen from the watcher: started when the watcher is
    first live, listening while it is (`live`), ended by `stop` (or by the watcher's death:
    the server ends when its stdin closes)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.path = served.socket_path(os.fspath(root))
        self.process: subprocess.Popen[bytes] | None = None
        self._failed = False

    def live(self, is_live: bool) -> None:
        """The watcher is live (its first pass done) or stops being so (it stops, or starts
        over on a replaced store folder): listen, or stop listening."""
        if is_live and self.process is None and not self._failed:
            if not hasattr(socket, "SO_PEERCRED") or not hasattr(os, "O_PATH"):
                self._failed = True  # no way to know who asks (not Linux): none is answered
                return
            self._start()
        self._send(LISTEN if is_live else UNLISTEN)

    def _start(self) -> None:
        package_parent = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
        # -P and `/`: nothing of the folder the watcher was started in is imported; the
        # same memctl as the watcher's, wherever that was imported from. A session of its
        # own: Ctrl-C or Ctrl-Z at the watcher's terminal reach the watcher alone.
        command = [sys.executable, "-P", "-c",
                   "import sys; sys.path.insert(0, sys.argv.pop(1)); "
                   "from memctl.cli.searchserver import main; main()",
                   package_parent, self.path]
        environment = served.same_mode_environment()
        try:
            self.process = subprocess.Popen(command, stdin=subprocess.PIPE,
                                            stdout=subprocess.DEVNULL, cwd="/",
                                            env=environment, start_new_session=True)
        except OSError:
            self._failed = True  # searches run on their own, as without a watcher

    def _send(self, message: bytes) -> None:
        process = self.process
        if process is None or process.stdin is None:
            return
        try:
            process.stdin.write(message)
            process.stdin.flush()
        except (OSError, ValueError):
            pass  # the server ended: searches run on their own

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None:
            return
        try:
            if process.stdin is not None:
                process.stdin.close()
        except OSError:
            pass
        try:
            process.wait(STOP_WAIT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


# --- the server process ---------------------------------------------------------------------

def code_files() -> dict[str, Stamp]:
    """The stamp of each of memctl's source files: a server whose files changed since it
    imported them (an upgrade, an edit) would answer with the old code. (Its ctime too: an
    upgrade may write a file of the same size with the same mtime, as a wheel's fixed times
    can.)"""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    files: dict[str, Stamp] = {}
    for folder, folders, names in os.walk(package):
        folders[:] = [name for name in folders if name != "__pycache__"]
        for name in names:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                files[path] = code_stamp(path)
    return files


def code_stamp(path: str) -> Stamp:
    return file_stamp(os.stat(path))


def code_unchanged(files: dict[str, Stamp]) -> bool:
    try:
        return all(code_stamp(path) == seen for path, seen in files.items())
    except OSError:
        return False


class _Recorder(io.RawIOBase):
    """The descriptor end of the served search's stdout or stderr: each write kept, in
    order, tagged with its stream. It answers `isatty` and `fileno` for the asking process's
    own stream (passed as that descriptor), so the search sees the streams it would see."""

    def __init__(self, fd: int, writes: list[tuple[int, bytes]]) -> None:
        super().__init__()
        self.fd = fd
        self.writes = writes

    def writable(self) -> bool:
        return True

    def write(self, data: bytes) -> int:  # type: ignore[override]
        self.writes.append((self.fd, bytes(data)))
        return len(data)

    def isatty(self) -> bool:
        return os.isatty(self.fd)

    def fileno(self) -> int:
        return self.fd


def stream(fd: int, settings: list[str], writes: list[tuple[int, bytes]]) -> io.TextIOWrapper:
    """A `sys.stdout` (fd 1) or `sys.stderr` (fd 2) made as Python made the asking process's
    (`served._stream_settings`: encoding, errors, line buffering, write-through, the buffer's
    size from the descriptor's block size), writing to `writes`."""
    encoding, errors, line_buffering, write_through, block = settings
    raw = _Recorder(fd, writes)
    size = int(block) if int(block) > 1 else io.DEFAULT_BUFFER_SIZE
    buffer: io.RawIOBase | io.BufferedWriter = raw if write_through == "1" \
        else io.BufferedWriter(raw, size)
    return io.TextIOWrapper(buffer, encoding=encoding, errors=errors, newline="\n",  # type: ignore[arg-type]
                            line_buffering=line_buffering == "1",
                            write_through=write_through == "1")


def _read_request(conn: socket.socket) -> tuple[list[bytes], list[int]]:
    """The request's fields and the descriptors sent with it, read within REQUEST_WAIT in
    all: an asker sending a byte now and then never holds a worker for longer (a wait per
    read did, for ever: four such askers took every worker)."""
    deadline = time.monotonic() + REQUEST_WAIT

    def time_left() -> float:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the request took too long")
        return left

    conn.settimeout(time_left())
    first, fds, _flags, _address = socket.recv_fds(conn, 1 << 16, 8)
    pieces, size = [first], len(first)
    while first:
        conn.settimeout(time_left())
        piece = conn.recv(1 << 16)
        if not piece:
            break
        size += len(piece)
        if size > MAX_REQUEST:
            raise ValueError("request too long")
        pieces.append(piece)
    return b"".join(pieces).split(b"\0"), fds


def _fields(fields: list[bytes], position: int, count: int) -> tuple[list[bytes], int]:
    taken = fields[position:position + count]
    if len(taken) != count:
        raise ValueError("request cut short")
    return taken, position + count


def answer(fields: list[bytes], fds: list[int], files: dict[str, tuple[int, int]],
           ident: list[bytes] | None = None) -> bytes:
    """Run the search of a request in this (worker) process, which takes on the asking
    process's context; the answer, or DECLINE. `ident`: this process's `served.identity()`,
    made once by the server."""
    ident = served.identity() if ident is None else ident
    if fields[:1] != [served.MAGIC] or fields[1:1 + len(ident)] != ident \
            or not code_unchanged(files):
        return DECLINE
    position = 1 + len(ident)
    out, position = _fields(fields, position, 5)
    err, position = _fields(fields, position, 5)
    (mask, terminals, argv0, count), position = _fields(fields, position, 4)
    if terminals not in (b"000", b"001", b"100", b"101") \
            or len(fds) != terminals.count(b"1") + 1:
        return DECLINE  # stdout is never a terminal here: rich colours it, locally
    argv, position = _fields(fields, position, int(count))
    (count,), position = _fields(fields, position, 1)
    path, position = _fields(fields, position, int(count))
    environment = [entry.partition(b"=") for entry in fields[position:]]
    words = [os.fsdecode(word) for word in argv]
    if parse_search(words) is None or parse_show(words) is not None \
            or parse_add(words) is not None:
        return DECLINE  # only a search; help and bad options go to the typer app, locally
    # Stand where the asking process stands: its terminals (the others: no terminal, as
    # its pipes and files are not), its folder.
    received = iter(fds)
    nothing = os.open(os.devnull, os.O_RDWR)
    for target, is_terminal in enumerate(terminals):
        os.dup2(next(received) if is_terminal == ord("1") else nothing, target)
    os.fchdir(fds[-1])
    os.environb.clear()
    os.environb.update({key: value for key, _equals, value in environment})
    time.tzset()
    os.umask(int(mask))
    sys.path[:] = [os.fsdecode(entry) for entry in path]
    sys.argv = [os.fsdecode(argv0), *words]
    writes: list[tuple[int, bytes]] = []
    sys.stdout = stream(1, [value.decode() for value in out], writes)
    sys.stderr = stream(2, [value.decode() for value in err], writes)
    code = run_fast(words)
    # What the asking process would do next: sys.exit(code), its exit functions (a
    # read-only store's private index copy is removed by one), stdout then stderr flushed.
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    if code is None:
        return DECLINE
    return served.encode_answer(code, writes)


def _work(conn: socket.socket, files: dict[str, tuple[int, int]], ident: list[bytes]) -> None:
    """The worker: answer the one request on `conn`, then end (without the server's exit
    functions, and without flushing its streams, which are the server's)."""
    reply = DECLINE
    fds: list[int] = []
    try:
        conn.settimeout(REQUEST_WAIT)
        conn.sendall(served.TAKEN)  # the asker waits for an answer now (served.TAKEN_WAIT)
        fields, fds = _read_request(conn)
        reply = answer(fields, fds, files, ident)
    except BaseException:  # noqa: BLE001 - whatever happened, the asker searches itself
        reply = DECLINE
    try:
        conn.settimeout(REQUEST_WAIT)
        conn.sendall(reply)
        conn.close()  # the asker sees the end now, not once this process is torn down
    except OSError:
        pass
    os._exit(0)


class Server:
    """The server's loop: messages from the watcher on `control`; while told to listen, the
    socket, and a spare worker forked ahead of the next search, waiting for it (the fork
    and the worker's start, ~1.5 ms, are then not on its way: bench/bench_scale.py)."""

    def __init__(self, path: str, control: int) -> None:
        self.path = path
        self.control = control
        self.listener: socket.socket | None = None
        self.bound: tuple[int, int] | None = None
        self.children: set[int] = set()  # the spare and the workers
        self.spare: int | None = None
        self.files = code_files()
        self.identity = served.identity()
        # A spare that takes a connection says so (its pid) on `taken`; spares and workers
        # end when `alive` closes, that is when this process ends, however it ends.
        self.taken_read, self.taken_write = os.pipe()
        os.set_blocking(self.taken_read, False)
        self.alive_read, self.alive_write = os.pipe()
        self._spares_lost = 0
        self._said = False

    def run(self) -> None:
        try:
            while True:
                self._keep_a_spare()
                waiting = [self.control, self.taken_read]
                # While the workers are all busy, look often whether one has ended.
                timeout = None if not self.children else 0.02 if self.spare is None else 0.5
                readable, _, _ = select.select(waiting, [], [], timeout)
                self._reap()
                if self.control in readable:
                    messages = os.read(self.control, 64)
                    if not messages:
                        return  # the watcher ended
                    for message in messages:
                        if message == LISTEN[0]:
                            self._listen()
                        elif message == UNLISTEN[0]:
                            self._unlisten()
        finally:
            self._unlisten()

    def _listen(self) -> None:
        if self.listener is not None:
            return
        try:
            try:
                if not stat.S_ISSOCK(os.lstat(self.path).st_mode):
                    return  # not a socket: nothing memctl made, so never removed
                os.unlink(self.path)  # left by a watcher that was killed
            except FileNotFoundError:
                pass
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            mask = os.umask(0o177)  # the socket file is made 0600 (this process's own umask)
            try:
                listener.bind(self.path)
            finally:
                os.umask(mask)
            listener.listen(64)
            listener.setblocking(False)
            info = os.lstat(self.path)
        except OSError as exc:
            self._say(exc.strerror or str(exc))
            return
        self.listener, self.bound = listener, (info.st_dev, info.st_ino)

    def _unlisten(self) -> None:
        spare, self.spare = self.spare, None
        if spare is not None:
            try:
                os.kill(spare, signal.SIGKILL)  # it waits for a connection: nothing to lose
            except ProcessLookupError:
                pass
        listener, self.listener = self.listener, None
        if listener is None:
            return
        listener.close()
        try:
            info = os.lstat(self.path)
            if (info.st_dev, info.st_ino) == self.bound:
                os.unlink(self.path)
        except OSError:
            pass

    def _say(self, why: str) -> None:
        if not self._said:
            self._said = True
            sys.stderr.write(f"memctl watch: searches are not answered by the watcher ({why}); "
                             f"each runs on its own\n")
            sys.stderr.flush()

    def _keep_a_spare(self) -> None:
        if self.listener is None or self.spare is not None \
                or len(self.children) >= MAX_WORKERS:
            return
        if self._spares_lost >= 3:  # spares that end before any search: something is wrong
            self._say("its workers fail to start")
            self._unlisten()
            return
        pid = os.fork()
        if pid == 0:
            self._be_the_spare()
        self.children.add(pid)
        self.spare = pid

    def _be_the_spare(self) -> None:
        """In the forked spare: wait for a connection of this user, say it is taken, answer
        it (`_work`), end. Never returns."""
        try:
            listener = self.listener
            assert listener is not None
            for fd in (self.control, self.taken_read, self.alive_write):
                os.close(fd)
            # The index and the counters opened while no search waits: ~5 ms less for the
            # one this answers.
            open_ahead_of_search(os.path.dirname(os.path.dirname(self.path)))
            while True:
                readable, _, _ = select.select([listener, self.alive_read], [], [])
                if self.alive_read in readable:
                    os._exit(0)  # the server ended
                try:
                    conn, _address = listener.accept()
                except OSError:
                    continue  # another process took it, or it hung up already
                try:
                    _pid, uid, _gid = served.peer_credentials(conn)  # type: ignore[arg-type]
                    allowed = served.peer_allowed(uid, os.getuid())
                except OSError:
                    allowed = False
                if not allowed:
                    conn.close()  # another user: not a word
                    continue
                os.write(self.taken_write, os.getpid().to_bytes(4, "big"))
                listener.close()
                for fd in (self.taken_write, self.alive_read):
                    os.close(fd)
                conn.setblocking(True)
                _work(conn, self.files, self.identity)
        except BaseException:  # noqa: BLE001 - a spare never returns into the server's loop
            os._exit(1)

    def _read_taken(self) -> None:
        try:
            said = os.read(self.taken_read, 4096)
        except BlockingIOError:
            return
        taken = {int.from_bytes(said[at:at + 4], "big") for at in range(0, len(said), 4)}
        if self.spare in taken:
            self.spare, self._spares_lost = None, 0

    def _reap(self) -> None:
        # First what the spare said: one that took a search and has already ended wrote it
        # before it ended, and is no lost spare.
        self._read_taken()
        for pid in list(self.children):
            try:
                done, _status = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done = pid
            if done:
                self.children.discard(pid)
                if pid == self.spare:
                    self.spare = None
                    self._spares_lost += 1


def _preload() -> None:
    """What a search may import or compile later, done once here rather than in each worker:
    the fuzzy matcher of a misspelt word (index/fuzzy.py imports it at its first use), the
    patterns of CJK text (compiled at their first use)."""
    warm_patterns()
    try:
        from rapidfuzz import fuzz, process  # noqa: F401
        from rapidfuzz.distance import JaroWinkler  # noqa: F401
    except ImportError:
        pass


def main() -> None:
    """`SearchServer`'s process: `python -c … PACKAGE_PARENT SOCKET_PATH`, its stdin the
    watcher's messages."""
    path = sys.argv[1]
    control = os.dup(0)  # the watcher's pipe, away from stdin, which workers replace
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    _preload()
    # Objects made so far are never collected again: a worker's collections then leave the
    # pages it shares with this process unwritten (no copy-on-write of every page it touches).
    gc.freeze()
    Server(path, control).run()
