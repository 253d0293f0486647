"""The run's warm servers (compat.child.server), parent side: one per device environment for the whole run, started by
the session as the run begins (or by the first process that needs one it did not foresee) and shared by every worker
over a Unix socket.

One per worker cost every worker a second interpreter's imports (on one H100, 16 workers' servers took 223 CPU-s,
all of it importing torch and the suite, at the run's start when every worker starts at once). The record of each
server (its address and pid, or why it could not start) is a file in the run directory, written under a lock, so
the workers that ask at once start it once. The run's owner (the session's process) stops them at its end; a server
also ends when its owner does, however the owner ends.
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

from filelock import FileLock

from ..child.protocol import unix_address
from ..errors import HarnessError
from ..processes import kill_for_time, kill_group

SERVER_START_S = 900.0  # importing torch and the suite, on a machine busy with a whole run
STOP_WAIT_S = 10.0
# Set per process or per test in the parent's environment: not the server's, whose children all workers share, and
# not in the controller, which starts the servers first: xdist sets its PYTEST_XDIST_* in each worker, and the
# workers had COLUMNS=80 and LINES=24 where the controller had neither (measured on this CPU; likely a terminal
# library's import there).
VOLATILE = ("PYTEST_CURRENT_TEST", "COLUMNS", "LINES")
VOLATILE_PREFIX = "PYTEST_XDIST_"


def tail(path: Path, chars: int = 3000) -> str:
    try:
        return path.read_text(errors="replace")[-chars:]
    except OSError:
        return ""


def server_env(env: dict[str, str]) -> dict[str, str]:
    return {var: value for var, value in env.items() if var not in VOLATILE and not var.startswith(VOLATILE_PREFIX)}


def _digest(text: str, length: int) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:length]


def _address(run_dir: Path, key: str) -> str:
    name = f"compat-{_digest(f'{run_dir.resolve()}:{key}', 24)}"
    return f"@{name}" if sys.platform.startswith("linux") else str(Path(tempfile.gettempdir()) / f"{name}.sock")


class Connection:
    """One process's connection to a warm server: one task at a time."""

    def __init__(self, record: dict):
        self.log = Path(record["log"])
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self.sock.connect(unix_address(record["address"]))
        except OSError as exc:
            self.sock.close()
            raise self._died(f"before this process connected ({exc})") from None
        self.buffer = b""

    def _read(self, timeout: float) -> dict | None:
        """The server's next line, or None when it did not come in time; EOFError when the server is gone."""
        deadline = time.monotonic() + max(timeout, 0)
        while b"\n" not in self.buffer:
            ready, _, _ = select.select([self.sock], [], [], max(deadline - time.monotonic(), 0))
            if not ready:
                return None
            data = self.sock.recv(1 << 16)
            if not data:
                raise EOFError
            self.buffer += data
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)

    def _died(self, when: str) -> HarnessError:
        return HarnessError(f"the warm server died {when}; its log ({self.log}) ends: {tail(self.log, 800).strip()}")

    def run(self, task: Path, journal: Path, log: Path, timeout: float) -> tuple[int | None, bool, float]:
        """(exit code, negative for a signal, or None; whether it timed out; its CPU seconds)."""
        try:
            self.sock.sendall(
                (json.dumps({"task": str(task), "journal": str(journal), "log": str(log)}) + "\n").encode()
            )
            started = self._read(SERVER_START_S)
        except (EOFError, OSError):
            started = None
        if started is None:
            raise self._died("before starting the task")
        pid = started["pid"]
        try:
            ended = self._read(timeout)
            timed_out = ended is None
            if timed_out:
                kill_for_time(pid)
                ended = self._read(60)
        except EOFError:
            raise self._died("while its child ran") from None
        except BaseException:  # an interrupt while waiting: the child's group goes with it
            kill_group(pid)
            raise
        if ended is None:
            raise self._died("after its child was killed")
        return (None if timed_out else os.waitstatus_to_exitcode(ended["status"])), timed_out, ended["cpu_s"]

    def close(self) -> None:
        self.sock.close()  # the server kills a child this connection still waits for


def _start(
    env: dict[str, str], address: str, log: Path, owner: int, spawned: Callable[[subprocess.Popen], None]
) -> tuple[dict, subprocess.Popen | None]:
    """Start a server and wait for its imports: its record, and its process (None where it could not start)."""
    with open(log, "w") as logf:
        proc = subprocess.Popen(
            [sys.executable, "-X", "faulthandler", "-m", "compat.child.server", address, str(owner)],
            stdout=subprocess.PIPE,
            stderr=logf,
            env=env,
            start_new_session=True,
            preexec_fn=_no_core,
        )
    spawned(proc)
    assert proc.stdout is not None  # piped above
    with proc.stdout:
        ready, _, _ = select.select([proc.stdout], [], [], SERVER_START_S)
        line = proc.stdout.readline() if ready else b""
    reply = (
        json.loads(line)
        if line
        else {"error": f"no answer within {SERVER_START_S:.0f} s" if not ready else "it exited"}
    )
    if "ready" not in reply:
        kill_group(proc.pid)
        proc.wait()
        error = f"the warm server could not start: {reply['error']}; its log ({log}) ends: {tail(log, 800).strip()}"
        return {"error": error}, None
    return {"address": address, "pid": proc.pid, "log": str(log), "seconds": reply.get("seconds")}, proc


def _no_core() -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a crashing CUDA process can dump gigabytes of core


def connect(
    run_dir: Path, env: dict[str, str], owner: int, spawned: Callable[[subprocess.Popen], None] = lambda proc: None
) -> tuple[Connection, subprocess.Popen | None]:
    """A connection to the run's server for `env`, started here if no process of the run has (its process is then
    returned, this process's to reap; `spawned` is told of it as soon as it runs, before its imports)."""
    env = server_env(env)
    key = _digest(json.dumps(sorted(env.items())), 16)
    directory = run_dir / "servers"
    directory.mkdir(parents=True, exist_ok=True)
    path, proc = directory / f"{key}.json", None
    with FileLock(str(directory / f"{key}.lock")):
        record = json.loads(path.read_text()) if path.exists() else None
        if record is None:
            record, proc = _start(env, _address(run_dir, key), directory / f"{key}.log", owner, spawned)
            path.write_text(json.dumps(record))
    if "error" in record:
        raise HarnessError(record["error"])
    return Connection(record), proc


def stop(run_dir: Path) -> None:
    """Stop every server of the run (the owner's, at its end): each ends its running children too."""
    pids = []
    for path in sorted((run_dir / "servers").glob("*.json")):
        pid = json.loads(path.read_text()).get("pid")
        if pid:
            pids.append(pid)
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    deadline = time.monotonic() + STOP_WAIT_S
    for pid in pids:
        while _running(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if _running(pid):
            kill_group(pid)


def _running(pid: int) -> bool:
    """Alive and not a zombie (a server whose starter has not reaped it yet has ended)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    except OSError:
        return True
    return state != "Z"
