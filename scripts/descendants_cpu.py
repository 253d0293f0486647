"""Run a command and print its wall time and the CPU time of every process below it:
    python scripts/descendants_cpu.py LABEL COMMAND...
This process is a subreaper (Linux), so a process orphaned below it (a warm server whose starter exited first) is
reaped here and counted too; /usr/bin/time counts only what each parent waited for."""

import ctypes
import os
import resource
import subprocess
import sys
import time

PR_SET_CHILD_SUBREAPER = 36

ctypes.CDLL(None).prctl(PR_SET_CHILD_SUBREAPER, 1)
start = time.monotonic()
rc = subprocess.call(sys.argv[2:])
wall = time.monotonic() - start
while True:  # the orphans still running: they end with the run's owner
    try:
        os.wait()
    except ChildProcessError:
        break
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"{sys.argv[1]}: exit {rc}, wall {wall:.1f} s, CPU {usage.ru_utime + usage.ru_stime:.1f} s", file=sys.stderr)
