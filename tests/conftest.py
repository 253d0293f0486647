"""This repository's own test policy (not the plugin's, which users load): the config-leak check (tests/hygiene.py),
the tiers (tests/tiers.py: `slow` on every test that starts a process) and pytester with a user's project
(tests/projects.py) for the plugin's end-to-end tests; Hypothesis's settings for this repository's own @given tests.
The plugin marks its tests: `matrix` on the matrix and fuzz tests (the harness tests alone: `-m "not matrix"`),
`fuzz` on the fuzz tests (whose Hypothesis profiles are compat.matrix.strategies', run in the cells' children)."""

import os

# One OpenMP thread per test process, as each cell's child has (compat.run.session.base_env), set before torch loads
# OpenMP. With one per core, a process's idle OpenMP threads spin while -n auto's other workers and their children
# hold the cores: an in-process fuzz test took 70 s beside two busy cores, 14.6 s with one thread (2-core CPU).
os.environ.setdefault("OMP_NUM_THREADS", "1")

from hypothesis import settings  # noqa: E402 - after the thread count, which must precede torch's import

pytest_plugins = ("pytester", "tests.hygiene", "tests.tiers", "tests.projects")

# No deadline: an example's time says nothing here, and on a loaded 2-core machine one overran the default 200 ms
# (312 ms). The examples stay Hypothesis's own (random, its database); a failure prints the example.
settings.register_profile("repository", deadline=None)
settings.load_profile("repository")
