"""Child functions for the isolation tests: each misbehaves in one way, inside a journal phase."""

import ctypes
import os
import time

from compat.outcomes import Outcome


def passes(journal):
    journal.run("work", lambda: Outcome("passed"))


def raises(journal):
    def boom():
        raise KeyError("no such thing")

    journal.run("work", boom)
    journal.run("never", lambda: Outcome("passed"))


def segfaults(journal):
    journal.run("first", lambda: Outcome("passed"))
    journal.begin("aoti_load")
    ctypes.string_at(0)  # reads address 0: SIGSEGV


def hangs(journal):
    journal.begin("work")
    time.sleep(3600)


def exits(journal):
    journal.begin("work")
    os._exit(3)
