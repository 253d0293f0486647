"""The run's xdist scheduling policy: loadgroup, its groups read from the cell ids, so that the tests of one shared
child (a probe, a build, a fuzz child: compat.run.session) go to one worker, which runs the child once. The order the
groups come in is compat.run.schedule's."""

from __future__ import annotations

import re

from xdist.scheduler import LoadGroupScheduling

from ..matrix.cells import in_matrix, lane, parse_cell_id

TEST_GROUPS = re.compile(r"::(?P<test>test_cell|test_fuzz)\[(?P<cell>[^\]]+)\]")


class SharedChildScheduling(LoadGroupScheduling):
    """xdist's loadgroup, its groups read from the cell ids: the tests of one shared child go to one worker."""

    def __init__(self, config, log=None, split: frozenset[str] = frozenset()):
        super().__init__(config, log)
        self.split = split

    def _split_scope(self, nodeid: str) -> str:
        return shared_child_group(nodeid, self.split) or super()._split_scope(nodeid)


def cell_of(nodeid: str):
    """(cell, section) of a matrix or fuzz test's node id, or None for any other test (and for an empty parameter
    set's NOTSET placeholder, which is no cell)."""
    m = TEST_GROUPS.search(nodeid)
    if m is None or not in_matrix(m["cell"]):
        return None
    return parse_cell_id(m["cell"], "xdist scheduler"), "fuzz" if m["test"] == "test_fuzz" else "cells"


def shared_child_group(nodeid: str, split: frozenset[str] = frozenset()) -> str | None:
    """The lane whose tests share one child process: a probe, a build, a fuzz child (compat.run.session)."""
    found = cell_of(nodeid)
    return lane(found[0], found[1], split) if found else None
