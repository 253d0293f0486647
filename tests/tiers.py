"""This repository's test tiers, a pytest plugin of its own (loaded by tests/conftest.py). `slow` marks a test that
starts a process (a child of the harness, as every matrix and fuzz test does; the CLI in a subprocess; an inner
pytest run in one; a compiler), or one that runs for tens of seconds in-process. `pytest -m "not slow"` is the fast
tier, under two minutes on 2 cores; `.ci/run` runs it first, then the rest.

A fast test that starts a process fails, naming the mark it needs (its fixtures' setup included, whatever their
scope): the tier holds itself, with no list to keep."""

import contextlib
import os
import subprocess

import pytest


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "slow: starts a process, or runs for tens of seconds (the fast tier is -m 'not slow')"
    )


def pytest_collection_modifyitems(items):
    for item in items:
        if item.get_closest_marker("matrix"):  # a cell runs in a child process
            item.add_marker(pytest.mark.slow)


@contextlib.contextmanager
def _no_process(item):
    if item.get_closest_marker("slow"):
        yield
        return

    def refuse(*args, **kwargs):
        raise AssertionError(f"{item.nodeid} starts a process: mark it @pytest.mark.slow (tests/tiers.py)")

    # Every subprocess call goes through _execute_child; multiprocessing and the harness's forks through os.fork.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(subprocess.Popen, "_execute_child", refuse)
        patch.setattr(os, "fork", refuse)
        yield


# Around setup too: a fixture of a wider scope is set up inside the first test that asks for it.
@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    with _no_process(item):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    with _no_process(item):
        return (yield)
