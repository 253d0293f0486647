"""This repository's test tiers, a pytest plugin of its own (loaded by tests/conftest.py). `slow` marks a test that
starts a process: a child of the harness (every matrix and fuzz test), the CLI in a subprocess, an inner pytest
run in one. `pytest -m "not slow"` is the fast tier, minutes on 2 cores; `.ci/run` runs it first, then the rest.

A fast test that starts a process fails, naming the mark it needs: the tier holds itself, no list to keep."""

import os
import subprocess

import pytest


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: starts a process (the fast tier is -m 'not slow')")


def pytest_collection_modifyitems(items):
    for item in items:
        if item.get_closest_marker("matrix"):  # a cell runs in a child process
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True)
def _the_fast_tier_starts_no_process(request, monkeypatch):
    if request.node.get_closest_marker("slow"):
        return

    def refuse(*args, **kwargs):
        raise AssertionError(f"{request.node.nodeid} starts a process: mark it @pytest.mark.slow (tests/tiers.py)")

    # Every subprocess call goes through _execute_child; multiprocessing and the harness's forks through os.fork.
    monkeypatch.setattr(subprocess.Popen, "_execute_child", refuse)
    monkeypatch.setattr(os, "fork", refuse)
