"""Max-autotune's stages compile their template choices on the run's threads; every other stage on the child's one."""

import os

import pytest

from compat.child import compile_threads
from compat.child.protocol import AUTOTUNE_THREADS_ENV
from compat.matrix.stages import STAGES
from compat.run.session import AUTOTUNE_THREADS, base_env

VARIABLE = compile_threads.VARIABLE


def test_the_autotuning_stages_are_max_autotunes_compile_and_its_package():
    assert {s for s in STAGES if STAGES[s].autotunes} == {"compile_max_autotune", "aoti_max_autotune_nonstrict"}


@pytest.mark.parametrize("own", ["1", None])
def test_an_autotuning_stage_compiles_on_the_runs_threads_and_gives_the_childs_own_back(monkeypatch, own):
    monkeypatch.setenv(AUTOTUNE_THREADS_ENV, "4")
    if own is None:
        monkeypatch.delenv(VARIABLE, raising=False)
    else:
        monkeypatch.setenv(VARIABLE, own)
    with compile_threads.of_stage("compile_max_autotune"):
        assert os.environ[VARIABLE] == "4"
    assert os.environ.get(VARIABLE) == own
    with compile_threads.of_stage("compile_inductor"):
        assert os.environ.get(VARIABLE) == own


def test_without_the_runs_threads_nothing_changes(monkeypatch):
    monkeypatch.delenv(AUTOTUNE_THREADS_ENV, raising=False)
    monkeypatch.setenv(VARIABLE, "1")
    with compile_threads.autotuning():
        assert os.environ[VARIABLE] == "1"


def test_a_child_compiles_on_one_thread_and_autotunes_on_four_unless_the_user_says(monkeypatch):
    monkeypatch.delenv(VARIABLE, raising=False)
    env = base_env()
    assert env[VARIABLE] == "1" and env[AUTOTUNE_THREADS_ENV] == str(AUTOTUNE_THREADS) == "4"
    monkeypatch.setenv(VARIABLE, "2")
    assert base_env()[VARIABLE] == base_env()[AUTOTUNE_THREADS_ENV] == "2"
