"""The warm server: one per run and device environment, shared by the run's workers (the session starts it as the
run begins: compat.run.controller), that forks the children.

It pays once what every child would otherwise pay: importing torch, triton, Dynamo, torch.export, Inductor (where a
selected stage compiles), the suite's modules and the user's (measured on the H100 runner: 15 s per interpreter,
several hundred interpreters a run; one server per worker still cost 16 workers 223 CPU-s of imports on one H100).
It never initialises CUDA: torch's availability checks go through NVML (PYTORCH_NVML_BASED_CUDA_CHECK=1, set by the
launcher: PyTorch's fork-safe check), so a forked child can still use CUDA. Each task runs in a fork of that clean
state, so a cell never sees another cell's Python state, and a crash or hang stays the child's.

Protocol, one JSON object per line. On its stdout the server first answers its starter {"ready": pid} (or {"error":
text} when an import failed), then listens on a Unix socket (ADDRESS). On each connection a client writes {"task":
PATH, "journal": PATH, "log": PATH}; the server answers {"pid": N} once the child runs and {"pid": N, "status":
WAITSTATUS, "cpu_s": SECONDS} when it ended (the CPU time of the child and of every process it waited for: its
compilers). A connection runs one task at a time; connections run theirs side by side. A connection that closes
takes its running child's process group with it; SIGTERM, or the end of the run's owner (the process that owns the
run's servers, OWNER), ends the server and every child it runs.
"""

from __future__ import annotations

import faulthandler
import gc
import importlib
import json
import os
import resource
import selectors
import signal
import socket
import sys
import time
import traceback

from ..processes import kill_group, parent_death_signal
from .protocol import COMPILES_ENV, IMPORTS_ENV, NVML_CHECK, USER_NVML_CHECK, unix_address

# Modules every child uses, imported once here (none of them initialises CUDA).
PRELOAD = (
    "torch",
    "triton",
    "torch._dynamo",
    "torch.export",
    "torch._higher_order_ops.triton_kernel_wrap",
    "torch.utils.flop_counter",
    "hypothesis",
    "compat.matrix.cells",
    "compat.evidence.expectations",
    "compat.child.tasks",
    "compat.child.checks",
    "compat.child.builds",
    "compat.child.fuzz",
    "compat.child.canary",
)
# Where a selected stage compiles (COMPILES_ENV): Inductor, 0.7 CPU-s an import on a 2-core CPU that a run of eager
# and export stages never uses. Its source hashes (torch_key, triton_key: 0.46 CPU-s there, torch caches them per
# process), which every compile in a child asks for first, are computed here once.
COMPILER_PRELOAD = ("torch._inductor.compile_fx", "torch._inductor.codecache")
SOURCE_KEYS = ("torch_key", "triton_key")
OWNER_POLL_S = 1.0  # how often the server checks that the run's owner still lives

_running: dict[int, socket.socket] = {}  # each running child, by pid: the connection that asked for it


def _stop(signum=None, frame=None) -> None:
    for pid in list(_running):
        kill_group(pid)
    os._exit(0)


def _restore_user_env() -> None:
    user = os.environ.pop(USER_NVML_CHECK, None)
    if user is None:
        os.environ.pop(NVML_CHECK, None)
    else:
        os.environ[NVML_CHECK] = user


def _child(request: dict, inherited: list[int]) -> None:
    """In the forked child: none of the server's descriptors (`inherited`), a process group of its own, the log as
    stdout and stderr, then the task. Never returns."""
    code = 1
    try:
        for fd in inherited:
            os.close(fd)
        signal.set_wakeup_fd(-1)
        os.setpgid(0, 0)
        parent_death_signal(signal.SIGKILL)
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGCHLD):
            signal.signal(sig, signal.SIG_DFL)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a crashing CUDA process can dump gigabytes of core
        _restore_user_env()
        log = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        faulthandler.enable(file=sys.stderr)
        from .tasks import run  # imported by PRELOAD in the server already: this only names it

        run(request["task"], request["journal"])
        code = 0
    except BaseException:  # noqa: BLE001 - the journal holds what the parent needs; the trace goes to the log
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _send(conn: socket.socket, message: dict) -> None:
    try:
        conn.sendall((json.dumps(message) + "\n").encode())
    except OSError:  # the client is gone: its connection's end kills what it asked for
        pass


class _Serving:
    """The server's loop: connections, their requests, and the children's ends (SIGCHLD, through a wakeup pipe)."""

    def __init__(self, listener: socket.socket, owner: int):
        self.listener, self.owner = listener, owner
        self.select = selectors.DefaultSelector()
        self.select.register(listener, selectors.EVENT_READ, "accept")
        wake_read, wake_write = os.pipe()
        for fd in (wake_read, wake_write):
            os.set_blocking(fd, False)
        signal.signal(signal.SIGCHLD, lambda signum, frame: None)  # a Python handler, so the wakeup fd is written
        signal.set_wakeup_fd(wake_write, warn_on_full_buffer=False)
        self.select.register(wake_read, selectors.EVENT_READ, "children")
        self.pipe = (wake_read, wake_write)
        self.owner_fd = _pidfd(owner)
        if self.owner_fd is not None:
            self.select.register(self.owner_fd, selectors.EVENT_READ, "owner")
        self.buffers: dict[socket.socket, bytes] = {}

    def descriptors(self) -> list[int]:
        """What a forked child must close: every descriptor of the server's."""
        owner = [self.owner_fd] if self.owner_fd is not None else []
        return [self.listener.fileno(), *self.pipe, *owner, *(c.fileno() for c in self.buffers)]

    def forever(self) -> None:
        while True:
            for key, _ in self.select.select(timeout=OWNER_POLL_S):
                if key.data == "accept":
                    conn, _ = self.listener.accept()
                    self.buffers[conn] = b""
                    self.select.register(conn, selectors.EVENT_READ, "client")
                elif key.data == "children":
                    while os.read(self.pipe[0], 512) == 512:
                        pass
                elif key.data == "owner":
                    _stop()
                else:
                    self.read(key.fileobj)  # type: ignore[arg-type]
            self.reap()
            if self.owner_fd is None and not _alive(self.owner):
                _stop()

    def read(self, conn: socket.socket) -> None:
        try:
            data = conn.recv(1 << 16)
        except ConnectionError:
            data = b""
        if not data:  # the client is gone: so is what it asked for
            self.select.unregister(conn)
            del self.buffers[conn]
            for pid, asked in list(_running.items()):
                if asked is conn:
                    kill_group(pid)
            conn.close()
            return
        *lines, self.buffers[conn] = (self.buffers[conn] + data).split(b"\n")
        for line in lines:
            self.start(conn, json.loads(line))

    def start(self, conn: socket.socket, request: dict) -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _child(request, self.descriptors())
        try:
            os.setpgid(pid, pid)  # also here: the client may kill the group before the child set it
        except (PermissionError, ProcessLookupError):
            pass
        _running[pid] = conn
        _send(conn, {"pid": pid})

    def reap(self) -> None:
        while _running:
            pid, status, usage = os.wait4(-1, os.WNOHANG)
            if pid == 0:
                return
            conn = _running.pop(pid, None)
            if conn is not None and conn in self.buffers:
                _send(conn, {"pid": pid, "status": status, "cpu_s": usage.ru_utime + usage.ru_stime})


def _pidfd(pid: int) -> int | None:
    """A descriptor that becomes readable when `pid` ends (Linux 5.3), or None where there is none."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def listen(address: str) -> socket.socket:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(unix_address(address))
    listener.listen(128)
    return listener


def _hash_sources() -> None:
    """Inductor's hashes of torch's and Triton's sources, cached in this process for every child it forks. Hashing
    touches no device; a torch without one of them is left to compute what it has."""
    codecache = sys.modules["torch._inductor.codecache"]
    for name in SOURCE_KEYS:
        key = getattr(codecache, name, None)
        if callable(key):
            key()


def _freeze_heap() -> None:
    """What each child did first on the heap it inherits, done once here, then that heap frozen (gc.freeze): a
    child's collections no longer walk it nor write to its pages (each a copy-on-write copy), and Hypothesis's first
    use no longer collects and searches it (its global Random made and registered here, as its first use does)."""
    # Imported by PRELOAD already, inside main's try: a failed import is reported to the starter, never raised here.
    from hypothesis.internal.entropy import deterministic_PRNG

    from .checks import before_freeze  # as above

    with deterministic_PRNG():
        pass
    before_freeze()
    gc.freeze()


def main(address: str, owner: int) -> None:
    protocol = os.fdopen(os.dup(1), "w", buffering=1)  # stdout answers the starter; prints go to the log (stderr)
    os.dup2(2, 1)
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the run decides; a terminal's ^C reaches it, not us
    start = time.monotonic()
    try:
        compiles = os.environ.get(COMPILES_ENV) == "1"
        for module in PRELOAD + (COMPILER_PRELOAD if compiles else ()):
            importlib.import_module(module)
        if compiles:
            _hash_sources()
        # Inside the try, after PRELOAD: an import that fails is reported to the starter through the protocol.
        from ..matrix.cases import import_cases

        # The user's modules: refused if one initialises CUDA, which no child forked from here could then use.
        import_cases(filter(None, os.environ.get(IMPORTS_ENV, "").split(",")), "the warm server")
        _freeze_heap()
        listener = listen(address)
    except BaseException as exc:  # noqa: BLE001 - the starter raises it as a harness error
        traceback.print_exc()
        protocol.write(json.dumps({"error": f"{type(exc).__name__}: {exc}"}) + "\n")
        return
    serving = _Serving(listener, owner)
    protocol.write(json.dumps({"ready": os.getpid(), "seconds": round(time.monotonic() - start, 1)}) + "\n")
    protocol.close()
    serving.forever()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
