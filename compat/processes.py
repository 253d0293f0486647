"""Stopping processes, in one place: a child's process group, everything a run started below it, and the death
signal that takes a process with its parent. Shared by the run (the controller, the launcher) and the child side (the
warm server). Linux: the process tree is read from /proc, the death signal set with prctl."""

from __future__ import annotations

import ctypes
import faulthandler
import os
import signal
import sys
import threading
import time
from pathlib import Path

PR_SET_PDEATHSIG = 1
# A child asked for its stacks (faulthandler, registered on this signal in compat.child.tasks) before it is killed for
# its time; the time it is given to write them.
STACKS_SIGNAL = signal.SIGUSR1
STACKS_WAIT_S = 2.0


def kill_for_time(pid: int) -> None:
    """Kill a child that ran out of time, after asking it for its stacks (where it was): the parent has decided the
    outcome already, so a child that dies while writing them is still one that timed out."""
    try:
        os.kill(pid, STACKS_SIGNAL)
        time.sleep(STACKS_WAIT_S)
    except ProcessLookupError:
        pass
    kill_group(pid)


def kill_group(pid: int) -> None:
    """SIGKILL the process group `pid` leads, or the process itself if it has not made its group yet."""
    for kill in (os.killpg, os.kill):
        try:
            kill(pid, signal.SIGKILL)
            return
        except (ProcessLookupError, PermissionError):
            continue


def parent_death_signal(sig: int) -> None:
    """Ask Linux to send `sig` to this process when its parent dies (so nothing the run started outlives it)."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(sig))


def stop_descendants(below_children: bool) -> None:
    """SIGKILL every process below this one, or below each of its children when `below_children` (an xdist
    controller leaves its workers to xdist and stops what they started: warm servers, children, their compilers)."""
    if not sys.platform.startswith("linux"):
        return
    for _ in range(3):  # a server may fork once more before it dies
        children: dict[int, list[int]] = {}
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
        roots = children.get(os.getpid(), []) if below_children else [os.getpid()]
        doomed, stack = [], [c for root in roots for c in children.get(root, [])]
        while stack:
            pid = stack.pop()
            doomed.append(pid)
            stack.extend(children.get(pid, []))
        if not doomed:
            return
        for pid in doomed:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.1)


def exit_within(seconds: float) -> None:
    """Make sure an interrupted run ends: if it still runs after `seconds` (its results are written by then), dump
    every thread's stack (the evidence of what held it), stop every process it started, workers too, and exit 130."""
    faulthandler.dump_traceback_later(seconds - 1, exit=False)

    def end():
        time.sleep(seconds)
        print(
            f"triton-export-compat: the interrupted run did not end within {seconds:.0f} s; stopping its workers",
            file=sys.stderr,
            flush=True,
        )
        stop_descendants(below_children=False)
        os._exit(130)

    threading.Thread(target=end, name="compat-exit-within", daemon=True).start()
