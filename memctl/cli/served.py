"""`memctl search` answered by the search server of a live watcher (docs/watch.md, "Searches
answered by the watcher").

A Python process that does a search itself pays ~30 ms before its first query on this kind
of machine: the interpreter, then `re`, `pathlib`, `json`, `sqlite3` and `datetime`, then
memctl's own modules. `memctl watch` keeps a process with all of that loaded
(memctl.cli.searchserver); for each search a copy of it (forked ahead) runs the very code a
local search runs, `memctl.cli.fast.run_fast`, with this process's command line,
environment, working folder, terminals and stream settings, and sends back what it wrote and
its exit code. This module is the asking side, run on every command line before anything else
of memctl is imported: it uses only what the interpreter has loaded already (`os`, `sys`,
`time`) and, once a search is to be asked, `_socket` (the C half of `socket`, without the
`enum` that `socket` imports).

Nothing here can change an answer. The served search is the local one run in another
process of the same user, with the same code (its folder, version and interpreter are
compared) and the same context; it makes its own freshness check (the watcher's cookies,
memctl.index.db.fresh_during), as a local search does. Whenever anything is not as expected
(no live heartbeat, no socket, a peer of another user, the server declines, an incomplete
answer), `answer` returns None and the search runs here.
"""

from __future__ import annotations

import os
import sys
import time

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (start-up)
if TYPE_CHECKING:
    from _socket import socket

# memctl.disk.layout.STATE_DIR, memctl.disk.watchstate.HEARTBEAT_FILE and STALE_AFTER: this
# module may import neither (pathlib, json); tests/test_search_server.py holds them equal.
STATE_DIR = ".memctl"
HEARTBEAT_FILE = "watch.json"
STALE_AFTER = 10.0
SOCKET_FILE = "search.sock"

# The first bytes of every request and answer: a server of another protocol is never asked.
MAGIC = b"memctl-search/2"
# The byte a worker sends as soon as it has taken a connection. The server answers a few
# searches at once (searchserver.MAX_WORKERS); when all its workers are held (searches that
# walk a big store, or stuck askers), a search not taken within TAKEN_WAIT runs here instead
# of waiting up to ANSWER_WAIT for a worker to be free.
TAKEN = b"T"
TAKEN_WAIT = 2.0
DECLINED = b"D"
ANSWERED = b"A"
END = b"E"
# Connecting and sending the question: the server takes a connection at once.
SEND_WAIT = 2.0
# The answer is awaited in slices: after each, a server whose process is gone or stopped
# (SIGSTOP) is given up on; a running one may take as long as a local search would (a walk
# of the store when the watcher does not answer its cookies), up to ANSWER_WAIT.
ANSWER_SLICE = 0.5
ANSWER_WAIT = 60.0


def socket_path(root: str) -> str:
    """Where the search server of the store at `root` listens."""
    return os.path.join(root, STATE_DIR, SOCKET_FILE)


def search_store_option(argv: list[str]) -> tuple[int | None, str | None]:
    """(where `search` is in `argv` when it is `[--store PATH]... search ...`, else None; the
    last --store given): the words before `search`, as every search reads them
    (`memctl.cli.fast.parse_search` too)."""
    store: str | None = None
    position = 0
    while position < len(argv) and argv[position] != "search":
        token = argv[position]
        if token == "--store" and position + 1 < len(argv) \
                and not argv[position + 1].startswith("-"):
            store = argv[position + 1]
            position += 2
        elif token.startswith("--store="):
            store = token[len("--store="):]
            position += 1
        else:
            return None, None
    return (position if position < len(argv) else None), store


def store_root(option: str | None) -> str:
    """The store's folder as `memctl.disk.layout.resolve_store_path` chooses it (--store,
    else MEMCTL_STORE, else the per-user default), with os.path in place of pathlib: only
    to find the socket (the served search chooses its store itself, from the same words)."""
    chosen = option if option is not None else os.environ.get("MEMCTL_STORE")
    if chosen is not None and not chosen.strip():
        # Bad usage (`resolve_store_path` says so): never the default store's socket.
        raise ValueError("an empty --store or MEMCTL_STORE")
    if chosen:
        return os.path.join(os.getcwd(), os.path.expanduser(chosen))
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local",
                                                            "share")
    return os.path.join(base, "memctl")


def peer_allowed(peer_uid: int, own_uid: int) -> bool:
    """Whether the process at the other end of the socket may be spoken to: only one of this
    very user. The question carries the environment, the command line, the working folder
    and the terminals, and the answer is printed as the search's own (docs/security.md)."""
    return peer_uid == own_uid


def peer_credentials(sock: socket) -> tuple[int, int, int]:
    """(pid, uid, gid) of the process at the other end of a connected Unix socket, as the
    kernel recorded them (SO_PEERCRED: `struct ucred`, three C ints)."""
    import _socket

    raw = sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, 12)
    order = sys.byteorder
    return (int.from_bytes(raw[0:4], order, signed=True), int.from_bytes(raw[4:8], order),
            int.from_bytes(raw[8:12], order))


def identity() -> list[bytes]:
    """What must be the same in the asking process and the server for the served search to
    be the local one: memctl's folder and version, the interpreter and its flags (bar
    `-P`, which the server is started with), the encodings it reads and writes files with."""
    import _locale

    package = sys.modules["memctl"]
    flags = repr(sys.flags).replace(f"safe_path={sys.flags.safe_path}", "")
    return [os.fsencode(text) for text in (
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
        getattr(package, "__version__", ""), sys.executable, sys.version, flags,
        repr(sys.warnoptions), repr(sorted(sys._xoptions.items())),
        sys.getfilesystemencoding(), sys.getfilesystemencodeerrors(),
        _locale.nl_langinfo(_locale.CODESET))]


def same_mode_environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    """This process's environment, with `extra`, for a memctl process it starts (the search
    server, the watcher started again after an upgrade). Python started in the C locale turns
    UTF-8 mode on and sets LC_CTYPE=C.UTF-8 in its own environment, where its child would
    start without UTF-8 mode: its flags, and so the searches it may answer (`identity`),
    would differ. PYTHONUTF8 keeps the mode."""
    environment = dict(os.environ)
    if sys.flags.utf8_mode:
        environment.setdefault("PYTHONUTF8", "1")
    environment.update(extra or {})
    return environment


def _stream_settings(stream: object, fd: int) -> list[bytes]:
    """How this process's `sys.stdout` (or `sys.stderr`) writes: the served search writes
    through a stream made the same way, so the bytes and where each write ends are the same."""
    return [str(value).encode() for value in (
        stream.encoding, stream.errors, int(stream.line_buffering),  # type: ignore[attr-defined]
        int(stream.write_through), os.fstat(fd).st_blksize)]  # type: ignore[attr-defined]


def encode_request(argv: list[str], terminals: list[int]) -> bytes:
    """The question: the identity, the streams' settings, the umask, which of the standard
    streams are terminals, the command line, `sys.path` and the whole environment,
    NUL-separated (none of them can hold a NUL). The working folder and the standard streams
    that are `terminals` go beside it, as file descriptors."""
    mask = os.umask(0)
    os.umask(mask)
    fields = [MAGIC, *identity(), *_stream_settings(sys.stdout, 1),
              *_stream_settings(sys.stderr, 2), str(mask).encode(),
              "".join("1" if fd in terminals else "0" for fd in (0, 1, 2)).encode(),
              os.fsencode(sys.argv[0] if sys.argv else ""), str(len(argv)).encode(),
              *(os.fsencode(word) for word in argv), str(len(sys.path)).encode(),
              *(os.fsencode(entry) for entry in sys.path),
              *(key + b"=" + value for key, value in os.environb.items())]
    return b"\0".join(fields)


def encode_answer(code: int, chunks: list[tuple[int, bytes]]) -> bytes:
    """The answer: the exit code, then each write to stdout (1) or stderr (2) in the order the
    search made them, then END."""
    parts = [MAGIC, b"\0", ANSWERED, code.to_bytes(4, "big", signed=True)]
    for fd, data in chunks:
        parts += [str(fd).encode(), len(data).to_bytes(8, "big"), data]
    parts.append(END)
    return b"".join(parts)


def decode_answer(reply: bytes) -> tuple[int, list[tuple[int, bytes]]] | None:
    """(exit code, writes) of a complete answer; None for a refusal, or anything else."""
    head = MAGIC + b"\0" + ANSWERED
    if not reply.startswith(head) or len(reply) < len(head) + 5:
        return None
    position = len(head) + 4
    code = int.from_bytes(reply[len(head):position], "big", signed=True)
    chunks: list[tuple[int, bytes]] = []
    while position < len(reply):
        tag = reply[position:position + 1]
        if tag == END:
            return (code, chunks) if position == len(reply) - 1 else None
        if tag not in (b"1", b"2") or position + 9 > len(reply):
            return None
        size = int.from_bytes(reply[position + 1:position + 9], "big")
        position += 9
        if position + size > len(reply):
            return None
        chunks.append((int(tag), reply[position:position + size]))
        position += size
    return None


def _gone_or_stopped(pid: int) -> bool:
    """Whether the server's process no longer runs: gone, a zombie, or stopped."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        return True
    return stat[stat.rfind(b")") + 2:][:1] in (b"T", b"t", b"Z", b"X")


def _ask(path: str, argv: list[str]) -> tuple[int, list[tuple[int, bytes]]] | None:
    import _socket

    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM | _socket.SOCK_CLOEXEC)
    here = -1
    try:
        sock.settimeout(SEND_WAIT)
        sock.connect(path)
        pid, uid, _gid = peer_credentials(sock)
        if not peer_allowed(uid, os.getuid()):
            return None
        # The standard streams that are terminals (stdin, stderr: never stdout here), for
        # the search to read their width as it would here; never a pipe or a file, whose
        # reader would wait for the server to let go of it before it saw its end. And the
        # working folder: the served search stands in the very folder this one does.
        terminals = [fd for fd in (0, 2) if os.isatty(fd)]
        request = encode_request(argv, terminals)
        here = os.open(".", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        descriptors = b"".join(fd.to_bytes(4, sys.byteorder) for fd in (*terminals, here))
        sent = sock.sendmsg([request], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, descriptors)])
        sock.sendall(request[sent:])
        sock.shutdown(_socket.SHUT_WR)
        sock.settimeout(TAKEN_WAIT)
        if sock.recv(1) != TAKEN:  # a timeout (OSError) or another answer: searched here
            return None
        pieces: list[bytes] = []
        sock.settimeout(ANSWER_SLICE)
        deadline = time.monotonic() + ANSWER_WAIT
        while True:
            try:
                piece = sock.recv(1 << 16)
            except TimeoutError:
                if _gone_or_stopped(pid) or time.monotonic() > deadline:
                    return None
                continue
            if not piece:
                break
            pieces.append(piece)
        return decode_answer(b"".join(pieces))
    finally:
        sock.close()
        if here >= 0:
            os.close(here)


def _write(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view):]
        except BlockingIOError:  # a non-blocking pipe, full: wait until it drains
            import select

            select.select([], [fd], [])


def finish(code: int) -> None:
    """End this process with `code` once a search was answered: its exit functions run and
    its streams are flushed, as at any exit, but the interpreter is not torn down (module by
    module, ~1.5 ms of this small process: bench/bench_scale.py), since nothing of it is
    needed any more."""
    import atexit

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code & 0xFF)


def answer(argv: list[str]) -> int | None:
    """The exit code of `memctl ARGV` answered by the watcher's search server, its output
    written; None when the command line is no search, or no live watcher answers it (the
    caller then runs it itself)."""
    if "search" not in argv or os.environ.get("MEMCTL_NO_FAST_PATH") == "1" \
            or os.environ.get("MEMCTL_NO_SEARCH_SERVER") == "1" \
            or os.environ.get("MEMCTL_ALWAYS_WALK") == "1":
        return None
    command, option = search_store_option(argv)
    if command is None:
        return None
    try:
        if os.isatty(1):
            return None  # a terminal: rich lays the hits out and colours them here
        root = store_root(option)
        if not heartbeat_is_fresh(root):
            return None
        answered = _ask(socket_path(root), argv)
    except (OSError, ValueError, AttributeError):
        return None  # no server, a dead socket, a platform without SO_PEERCRED or O_PATH
    except KeyboardInterrupt:
        return _interrupted()
    if answered is None:
        return None
    code, chunks = answered
    try:
        for fd, data in chunks:
            _write(fd, data)
    except BrokenPipeError:
        return 0  # as memctl.cli.context.run_command: a closed pipe ends quietly
    except KeyboardInterrupt:
        return _interrupted()
    return code


def heartbeat_is_fresh(root: str) -> bool:
    """Whether the store at `root` has a watcher's heartbeat younger than STALE_AFTER. A
    watcher that runs rewrites it every 2 s: a stale one means no watcher (or a hung one),
    a missing one none at all (watchstate.watcher_is_live)."""
    try:
        beat = os.stat(os.path.join(root, STATE_DIR, HEARTBEAT_FILE)).st_mtime
    except FileNotFoundError:
        return False
    return abs(time.time() - beat) <= STALE_AFTER


def walk_root(argv: list[str]) -> str | None:
    """The store's folder when `memctl ARGV` is a search that will walk the store itself: no
    live watcher keeps its index fresh (a stale or missing heartbeat, as in `answer`), or
    MEMCTL_ALWAYS_WALK=1. The walk then starts at once, in helper processes, while this
    process imports the rest of the search (memctl.disk.filescan.walk_ahead, docs/search.md);
    None for any other command line, or when the heartbeat says a watcher answers."""
    if "search" not in argv:
        return None
    command, option = search_store_option(argv)
    if command is None:
        return None
    try:
        root = store_root(option)
        if os.environ.get("MEMCTL_ALWAYS_WALK") != "1" and heartbeat_is_fresh(root):
            return None  # a live watcher: its cookies spare the walk (docs/watch.md)
        return root
    except (OSError, ValueError):
        return None  # no working folder, a path the system refuses: the search says so


def _interrupted() -> int:
    """Ctrl-C while the answer is awaited or written: what run_command says of it."""
    try:
        os.write(2, b"error: interrupted\n")
    except OSError:
        pass
    return 130
