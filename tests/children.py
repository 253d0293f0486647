"""Child tasks for the launcher's tests: each misbehaves in one way, inside a journal phase."""

import ctypes
import os
import time

from compat.child.tasks import task
from compat.evidence.outcomes import Outcome


@task("test_passes")
def passes(journal):
    journal.run("work", lambda: Outcome("passed"))


@task("test_raises")
def raises(journal):
    def boom():
        raise KeyError("no such thing")

    journal.run("work", boom)
    journal.run("never", lambda: Outcome("passed"))


@task("test_segfaults")
def segfaults(journal):
    journal.run("first", lambda: Outcome("passed"))
    journal.begin("aoti_load")
    ctypes.string_at(0)  # reads address 0: SIGSEGV


@task("test_hangs")
def hangs(journal, marker: str = ""):
    journal.begin("work")
    if marker:
        open(marker, "w").write(str(os.getpid()))
    time.sleep(3600)


@task("test_exits")
def exits(journal):
    journal.begin("work")
    os._exit(3)


@task("test_escapes")
def escapes(journal):
    raise LookupError("a bug of the harness, outside every phase")


@task("test_spawns_and_hangs")
def spawns_and_hangs(journal, marker: str):
    """A child with a child of its own (as a compiler is), both hanging."""
    import subprocess
    import sys

    journal.begin("work")
    grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
    open(marker, "w").write(f"{os.getpid()} {grandchild.pid}")
    time.sleep(3600)


@task("test_crashes_when_asked_for_stacks")
def crashes_when_asked_for_stacks(journal):
    """A hang whose stack dump itself crashes (as faulthandler's once did, walking a busy thread's frames)."""
    import signal

    from compat.processes import STACKS_SIGNAL

    journal.begin("work")
    signal.signal(STACKS_SIGNAL, lambda *_: os.kill(os.getpid(), signal.SIGSEGV))
    time.sleep(3600)


@task("test_globals")
def globals_seen(journal, value: str):
    """Leaves a mark in this process's state and reports what the previous task left: a fork must show none."""
    import compat

    seen = getattr(compat, "_left_by_a_previous_task", None)
    compat._left_by_a_previous_task = value
    journal.run("work", lambda: Outcome("passed", detail={"seen": seen}))


@task("test_reports_compiler")
def reports_compiler(journal):
    """What the warm server left this child of Inductor: imported or not, and its source hashes cached or not (the
    functions that compute them are replaced first, so a hash computed here fails)."""
    import sys

    def seen():
        imported = "torch._inductor.compile_fx" in sys.modules
        if not imported:
            return Outcome("passed", detail={"imported": False, "hashed": None})
        from torch._inductor import codecache
        from torch._inductor.runtime import triton_compat

        def refuse(*args, **kwargs):
            raise AssertionError("a source hash computed in the child")

        codecache.build_code_hash = triton_compat.triton_key = refuse
        hashed = bool(codecache.torch_key()) and bool(codecache.triton_key())
        return Outcome("passed", detail={"imported": True, "hashed": hashed})

    journal.run("work", seen)
