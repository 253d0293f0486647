"""This repository's own test policy (not the plugin's, which users load): the config-leak check (tests/hygiene.py),
the tiers (tests/tiers.py: `slow` on every test that starts a process) and pytester with a user's project
(tests/projects.py) for the plugin's end-to-end tests. The plugin marks its
tests: `matrix` on the matrix and fuzz tests (the harness tests alone: `-m "not matrix"`), `fuzz` on the fuzz
tests."""

pytest_plugins = ("pytester", "tests.hygiene", "tests.tiers", "tests.projects")
