"""The warm server: one per xdist worker and device environment, started by compat.run.launcher, that forks the children.

It pays once what every child would otherwise pay: importing torch, triton, Dynamo, torch.export, Inductor, the
suite's modules and the user's (measured on the H100 runner: 15 s per interpreter, several hundred interpreters a
run). It never initialises CUDA: torch's availability checks go through NVML (PYTORCH_NVML_BASED_CUDA_CHECK=1, set by
the launcher: PyTorch's fork-safe check), so a forked child can still use CUDA. Each task runs in a fork of that clean
state, so a cell never sees another cell's Python state, and a crash or hang stays the child's.

Protocol, one JSON object per line. The server first answers {"ready": pid} (or {"error": text} when an import
failed). Then the parent writes {"task": PATH, "journal": PATH, "log": PATH}; the server answers {"pid": N} once the
child runs and {"pid": N, "status": WAITSTATUS, "cpu_s": SECONDS} when it ended (the CPU time of the child and of every
process it waited for: its compilers). EOF on stdin, SIGTERM, or its parent's death (Linux's
parent-death signal) end the server, and with it the running child's process group.
"""

from __future__ import annotations

import faulthandler
import importlib
import json
import os
import resource
import signal
import sys
import time
import traceback

from ..processes import kill_group, parent_death_signal
from .protocol import IMPORTS_ENV, NVML_CHECK, USER_NVML_CHECK

# Modules every child uses, imported once here (none of them initialises CUDA).
PRELOAD = (
    "torch",
    "triton",
    "torch._dynamo",
    "torch.export",
    "torch._inductor.compile_fx",
    "torch._inductor.codecache",
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

_running: int | None = None  # the child being waited for


def _stop(signum, frame) -> None:
    if _running is not None:
        kill_group(_running)
    os._exit(0)


def _restore_user_env() -> None:
    user = os.environ.pop(USER_NVML_CHECK, None)
    if user is None:
        os.environ.pop(NVML_CHECK, None)
    else:
        os.environ[NVML_CHECK] = user


def _child(request: dict) -> None:
    """In the forked child: a process group of its own, the log as stdout and stderr, then the task. Never returns."""
    code = 1
    try:
        os.setpgid(0, 0)
        parent_death_signal(signal.SIGKILL)
        for sig in (signal.SIGTERM, signal.SIGINT):
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


def main() -> None:
    global _running
    protocol = os.fdopen(os.dup(1), "w", buffering=1)  # stdout is the protocol; prints go to the log (stderr)
    os.dup2(2, 1)
    parent_death_signal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides; a terminal's ^C reaches it, not us
    start = time.monotonic()
    try:
        for module in PRELOAD:
            importlib.import_module(module)
        # Inside the try, after PRELOAD: an import that fails is reported to the parent through the protocol.
        from ..matrix.cases import import_cases

        # The user's modules: refused if one initialises CUDA, which no child forked from here could then use.
        import_cases(filter(None, os.environ.get(IMPORTS_ENV, "").split(",")), "the warm server")
    except BaseException as exc:  # noqa: BLE001 - the parent raises it as a harness error
        traceback.print_exc()
        protocol.write(json.dumps({"error": f"{type(exc).__name__}: {exc}"}) + "\n")
        return
    protocol.write(json.dumps({"ready": os.getpid(), "seconds": round(time.monotonic() - start, 1)}) + "\n")
    for line in sys.stdin:
        request = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            protocol.close()
            _child(request)
        try:
            os.setpgid(pid, pid)  # also here: the parent may kill the group before the child set it
        except (PermissionError, ProcessLookupError):
            pass
        _running = pid
        protocol.write(json.dumps({"pid": pid}) + "\n")
        _, status, usage = os.wait4(pid, 0)
        _running = None
        protocol.write(json.dumps({"pid": pid, "status": status, "cpu_s": usage.ru_utime + usage.ru_stime}) + "\n")
    _stop(None, None)


if __name__ == "__main__":
    main()
