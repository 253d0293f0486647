"""A child that crashes, hangs or exits becomes that phase's outcome, whichever way it was started (forked from the warm
server, or a fresh interpreter); what fails outside every phase is a harness error; the parent carries on."""

import concurrent.futures
import dataclasses
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from compat.errors import HarnessError
from compat.run.environment import LIBSTDCXX, crash_remedy
from compat.run.launcher import MODES, ChildResult, Launcher


@pytest.fixture(params=MODES)
def launcher(request, tmp_path):
    launcher = Launcher(tmp_path, request.param, imports=("tests.children",))
    yield launcher
    launcher.close()


def _run(launcher, tmp_path, name, timeout=120.0, **args):
    return launcher.run(f"test_{name}", args, workdir=tmp_path / name, env={}, timeout=timeout)


@pytest.mark.slow
def test_phase_outcomes_in_order(launcher, tmp_path):
    result = _run(launcher, tmp_path, "passes")
    assert list(result.phases) == ["work"]
    assert result.outcome("work").kind == "passed"


@pytest.mark.slow
def test_exception_is_the_phase_failure_with_its_type(launcher, tmp_path):
    outcome = _run(launcher, tmp_path, "raises").outcome("never")
    assert (outcome.kind, outcome.error_type, outcome.detail["phase"]) == ("failed", "KeyError", "work")
    assert "no such thing" in outcome.message


@pytest.mark.slow
def test_segfault_is_crashed_in_the_phase_it_began(launcher, tmp_path):
    result = _run(launcher, tmp_path, "segfaults")
    assert result.phases["first"].kind == "passed"
    crashed = result.outcome("aoti_load")
    assert (crashed.kind, crashed.error_type, crashed.detail["phase"]) == ("crashed", "SIGSEGV", "aoti_load")
    assert "Fatal Python error: Segmentation fault" in crashed.detail["stderr_tail"]  # faulthandler's stack


@pytest.mark.slow
def test_hang_is_timed_out_and_killed_with_its_own_children(launcher, tmp_path):
    marker = tmp_path / "pids"
    start = time.monotonic()
    # 15 s: a fresh interpreter has reached the task by then, so its stacks show where the task hangs.
    outcome = _run(launcher, tmp_path, "spawns_and_hangs", timeout=15, marker=str(marker)).outcome("work")
    assert outcome.kind == "timed_out" and outcome.detail["phase"] == "work"
    assert "in spawns_and_hangs" in outcome.detail["stderr_tail"]  # where it hung: its stacks, before the kill
    assert time.monotonic() - start < 60
    for pid in map(int, marker.read_text().split()):  # the child and the compiler it started
        assert _gone(pid), f"process {pid} outlived its timeout"


@pytest.mark.slow
def test_a_child_that_crashes_while_writing_its_stacks_still_timed_out(launcher, tmp_path):
    outcome = _run(launcher, tmp_path, "crashes_when_asked_for_stacks", timeout=3).outcome("work")
    assert (outcome.kind, outcome.detail["phase"]) == ("timed_out", "work")


def _gone(pid: int, within: float = 10.0) -> bool:
    """Whether the process ends (or is a zombie, dead and waiting for a parent to reap it) within `within` s."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return True
        if state == "Z":
            return True
        time.sleep(0.1)
    return False


@pytest.mark.slow
def test_exit_without_result_is_crashed_with_exit_code(launcher, tmp_path):
    outcome = _run(launcher, tmp_path, "exits").outcome("work")
    assert (outcome.kind, outcome.detail["exit_code"]) == ("crashed", 3)


@pytest.mark.slow
def test_an_exception_outside_every_phase_is_a_harness_error_with_its_cause(launcher, tmp_path):
    with pytest.raises(HarnessError, match="LookupError: a bug of the harness, outside every phase"):
        _run(launcher, tmp_path, "escapes").outcome("work")
    with pytest.raises(HarnessError, match="unknown child task 'test_nosuch'"):
        _run(launcher, tmp_path, "nosuch").outcome("work")


@pytest.mark.slow
def test_each_task_starts_from_a_clean_process(launcher, tmp_path):
    first = _run(launcher, tmp_path / "a", "globals", value="first").outcome("work")
    second = _run(launcher, tmp_path / "b", "globals", value="second").outcome("work")
    assert first.detail["seen"] is None and second.detail["seen"] is None  # no task sees another's Python state


@pytest.mark.slow
def test_the_warm_server_is_started_once_and_fresh_children_once_each(tmp_path):
    forked = Launcher(tmp_path / "f", "forked", imports=("tests.children",))
    fresh = Launcher(tmp_path / "s", "fresh", imports=("tests.children",))
    try:
        for i in range(3):
            for launcher in (forked, fresh):
                _run(launcher, tmp_path / launcher.mode / str(i), "passes")
        assert (forked.started, fresh.started) == (1, 3)
    finally:
        forked.close()
        fresh.close()


@pytest.mark.slow
@pytest.mark.parametrize("compiles", [False, True])
def test_the_warm_server_imports_inductor_and_hashes_its_sources_only_for_a_run_that_compiles(tmp_path, compiles):
    launcher = Launcher(tmp_path, "forked", imports=("tests.children",), compiles=compiles)
    try:
        seen = _run(launcher, tmp_path, "reports_compiler").outcome("work")
    finally:
        launcher.close()
    assert seen.kind == "passed", seen.message
    reported = {key: seen.detail.get(key) for key in ("imported", "hashed")}
    assert reported == ({"imported": True, "hashed": True} if compiles else {"imported": False, "hashed": None})


def _wait_for(path: Path, within: float = 120.0) -> str:
    deadline = time.monotonic() + within
    while not (path.exists() and path.read_text()):
        assert time.monotonic() < deadline, f"{path} was never written"
        time.sleep(0.1)
    return path.read_text()


@pytest.mark.slow
def test_the_workers_of_a_run_share_one_warm_server_and_run_their_children_side_by_side(tmp_path):
    owner = Launcher(tmp_path, "forked", imports=("tests.children",))
    worker = Launcher(tmp_path, "forked", imports=("tests.children",), owner=os.getpid())
    marker = tmp_path / "hanging"
    hung = concurrent.futures.ThreadPoolExecutor(1).submit(
        _run, owner, tmp_path / "owner", "hangs", timeout=20, marker=str(marker)
    )
    try:
        _wait_for(marker)  # the owner's child runs: the worker's runs beside it, from the same server
        assert _run(worker, tmp_path / "worker", "passes").outcome("work").kind == "passed"
        assert not hung.done()
        assert hung.result().outcome("work").kind == "timed_out"
        assert (owner.started, worker.started) == (1, 0)
        assert len(list((tmp_path / "servers").glob("*.json"))) == 1
    finally:
        worker.close()
        owner.close()


_WORKER = """
import sys
from pathlib import Path
from compat.run.launcher import Launcher
launcher = Launcher(Path(sys.argv[1]), "forked", imports=("tests.children",), owner=int(sys.argv[2]))
launcher.run("test_spawns_and_hangs", {"marker": sys.argv[3]}, workdir=Path(sys.argv[1]) / "w", env={}, timeout=600)
"""


def _process(tmp_path: Path, *args: str) -> subprocess.Popen:
    root = Path(__file__).resolve().parents[1]
    return subprocess.Popen([sys.executable, "-c", _WORKER, str(tmp_path), *args], cwd=root)


@pytest.mark.slow
def test_a_worker_that_dies_takes_its_child_and_leaves_the_server_to_the_others(tmp_path):
    owner = Launcher(tmp_path, "forked", imports=("tests.children",))
    try:
        assert _run(owner, tmp_path / "first", "passes").outcome("work").kind == "passed"
        marker = tmp_path / "pids"
        worker = _process(tmp_path, str(os.getpid()), str(marker))
        pids = list(map(int, _wait_for(marker).split()))
        worker.kill()  # an xdist worker that crashed: its connection closes
        worker.wait()
        for pid in pids:  # its child and the compiler it started
            assert _gone(pid), f"process {pid} outlived the worker that asked for it"
        assert _run(owner, tmp_path / "after", "passes").outcome("work").kind == "passed"
        assert owner.started == 1
    finally:
        owner.close()


@pytest.mark.slow
def test_the_run_s_warm_server_and_its_children_end_with_the_run_s_owner(tmp_path):
    owner = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])  # the run's owner
    marker = tmp_path / "pids"
    worker = _process(tmp_path, str(owner.pid), str(marker))
    try:
        pids = list(map(int, _wait_for(marker).split()))
        (record,) = [json.loads(p.read_text()) for p in (tmp_path / "servers").glob("*.json")]
        owner.kill()  # killed, so it stopped nothing itself
        owner.wait()
        for pid in (record["pid"], *pids):
            assert _gone(pid), f"process {pid} outlived the run's owner"
    finally:
        worker.kill()
        worker.wait()
        owner.kill()
        owner.wait()


@pytest.mark.slow
def test_libstdcxx_crash_on_aoti_load_gets_the_remedy(tmp_path, monkeypatch):
    monkeypatch.delenv("LD_PRELOAD", raising=False)
    launcher = Launcher(tmp_path, imports=("tests.children",))
    try:
        crashed = _run(launcher, tmp_path, "segfaults").outcome("aoti_load")
    finally:
        launcher.close()
    remedy = crash_remedy(crashed)
    assert remedy and f"LD_PRELOAD={LIBSTDCXX}" in remedy
    monkeypatch.setenv("LD_PRELOAD", LIBSTDCXX)
    assert crash_remedy(crashed) is None  # already applied: then it is some other crash
    monkeypatch.delenv("LD_PRELOAD")
    for phase in ("export", "aoti_compile"):
        crashed.detail["phase"] = phase
        assert crash_remedy(crashed) is None  # a remedy only for crashes on load


def _shared(**phases):
    from compat.evidence.outcomes import Outcome

    cuda = "CUDA error: an illegal memory access was encountered"  # "cuda_failed": a failure on a CUDA error
    return ChildResult(
        {
            name: Outcome("failed", "torch.AcceleratorError", cuda) if kind == "cuda_failed" else Outcome(kind)
            for name, kind in phases.items()
        },
        env={"pid": 1},
        ready=True,
    )


def test_a_shared_childs_phase_is_judged_by_its_own_phases_and_any_crash():
    # Phases of other cells that failed do not count; a crash that ended the child before this cell's phase does.
    result = _shared(export="passed", save_load="failed", decompose="passed")
    assert result.outcome("decompose", among=("export", "decompose")).kind == "passed"
    assert result.outcome("save_load", among=("export", "save_load")).kind == "failed"
    died = _shared(export="passed", save_load="crashed")
    outcome = died.outcome("decompose", among=("export", "decompose"))
    assert (outcome.kind, outcome.detail["phase"]) == ("crashed", "save_load")


@pytest.mark.parametrize(
    "probe, reran",
    [
        (dict(eager="passed", compile_inductor="failed"), []),
        (dict(eager="passed", compile_inductor="crashed"), ["compile_inductor"]),  # perhaps an earlier phase's doing
        (dict(eager="timed_out"), ["compile_inductor"]),  # never reached
        (dict(eager="passed", compile_inductor="cuda_failed"), ["compile_inductor"]),  # the context may be lost before
    ],
)
def test_a_probe_phase_that_crashed_or_was_not_reached_runs_again_alone(tmp_path, monkeypatch, probe, reran):
    from compat.matrix.cells import Cell
    from compat.run.session import RunSession

    cell = Cell("silu", "triton_op", "compile_inductor", "float32", "cuda")
    session = RunSession(tmp_path, [dataclasses.replace(cell, stage="eager"), cell])
    alone = []
    monkeypatch.setattr(session, "probe", lambda c: _shared(**probe))
    monkeypatch.setattr(
        session,
        "child",
        lambda c, task, args, timeout, name=None: alone.append(args["stages"]) or _shared(**{c.stage: "passed"}),
    )
    outcome = session.outcome(cell)
    assert alone == ([reran] if reran else [])
    assert outcome.kind == ("passed" if reran else probe["compile_inductor"])


@pytest.mark.parametrize("kind", ["timed_out", "crashed"])
def test_a_probe_child_that_ran_one_stage_gives_that_stages_own_outcome_without_running_it_again(
    tmp_path, monkeypatch, kind
):
    from compat.matrix.cells import Cell
    from compat.run.session import RunSession

    cell = Cell("silu", "triton_op", "compile_dynamic", "float32", "cuda")
    session = RunSession(tmp_path, [cell])
    monkeypatch.setattr(session, "probe", lambda c: _shared(compile_dynamic=kind))
    monkeypatch.setattr(session, "child", lambda *a, **k: pytest.fail("a stage that hung alone was run again"))
    assert session.outcome(cell).kind == kind


EXAMPLE = '{"shape":[1,512],"layout":"contiguous","seed":0,"scale":1.0,"sign":"negative","specials":[]}'
CALL_8, CALL_37 = (EXAMPLE.replace("[1,512]", f"[{n},512]") for n in (8, 37))
FOUND = {"output": "compiled grad of x", "layout": "contiguous", "difference": "wrong_values"}
FOUND = {**FOUND, "cause": "ordinary values", "example": EXAMPLE, "max_rel_err": 1.66}


def _finding(kind: str, calls=(), pinned=False):
    from compat.evidence.outcomes import Outcome

    if kind == "passed":
        return Outcome(kind, detail={"findings": [], "new": [], "calls": list(calls)})
    return Outcome(
        kind,
        detail={
            "example": json.loads(EXAMPLE),
            "findings": [{**FOUND, "pinned": pinned, "seen": 1}],
            "new": [] if pinned else ["the finding"],
            "calls": list(calls),
        },
    )


def _sequence_session(tmp_path, monkeypatch, shows, eager_differs=False, stage="compile_backward"):
    """A fuzz test whose `stage` child found FOUND after calls at 8 and 37 tokens (eager_backward ran first there, at
    8, unless it is the stage): its fresh children show it where `shows(calls)` says (calls: each stage's examples,
    in order)."""
    from compat.matrix.cells import Cell
    from compat.run.session import RunSession

    cell = Cell("silu", "autograd_function", stage, "float32", "cuda")
    earlier = [] if stage == "eager_backward" else [dataclasses.replace(cell, stage="eager_backward")]
    session = RunSession(tmp_path, [], fuzz_cells=[*earlier, cell])
    shared = {
        "eager_backward": _finding("passed", [CALL_8]),
        stage: _finding("mismatch", [CALL_8, CALL_37, EXAMPLE]),
    }
    monkeypatch.setattr(session, "_shared", lambda *a: ChildResult(shared, env={"pid": 1}, ready=True))
    ran = []

    def child(c, task, args, timeout, name=None):
        known = args["known"]
        calls = [(st, known[st]["calls"]) for st in args["stages"] if known[st]["calls"]]
        ran.append((c.stage, calls))
        assert args["example"] == EXAMPLE and args["stages"][-1] == c.stage  # the finding's example, last
        differs = eager_differs if c.stage == "eager_backward" != stage else shows(calls)
        return ChildResult({c.stage: _finding("mismatch" if differs else "passed")}, env={"pid": 2}, ready=True)

    monkeypatch.setattr(session, "child", child)
    return session, cell, ran


def test_a_fuzz_finding_its_example_shows_alone_keeps_its_reproducer(tmp_path, monkeypatch):
    session, cell, ran = _sequence_session(tmp_path, monkeypatch, shows=lambda calls: True)
    outcome = session.fuzz_outcome(cell)
    assert outcome.kind == "mismatch" and "--after" not in outcome.detail.get("reproducer", "")
    assert ran == [("compile_backward", [])] and "calls" not in outcome.detail


@pytest.mark.parametrize("needs_earlier_stage", [False, True])
def test_a_fuzz_finding_that_needs_earlier_calls_is_recorded_with_them(tmp_path, monkeypatch, needs_earlier_stage):
    # Measured on the H100: Liger's SiLUMul gradient was wrong at 1 token only after other token counts.
    from compat.evidence.findings import sequence

    def shows(calls):
        return len(calls) == (2 if needs_earlier_stage else 1)

    session, cell, ran = _sequence_session(tmp_path, monkeypatch, shows)
    outcome = session.fuzz_outcome(cell)
    own = ("compile_backward", [CALL_8, CALL_37])
    tried = [("compile_backward", []), ("compile_backward", [own])]
    if needs_earlier_stage:
        tried.append(("compile_backward", [("eager_backward", [CALL_8]), own]))
    flat = [*([CALL_8] if needs_earlier_stage else []), CALL_8, CALL_37]
    assert ran == [*tried, ("eager_backward", [("eager_backward", flat)])]  # then the same calls through eager
    (found,) = outcome.detail["findings"]
    after = [(st, ex.to_json()) for st, ex in sequence(found["after"])]
    assert after == [*([("eager_backward", CALL_8)] if needs_earlier_stage else []), *[(own[0], c) for c in own[1]]]
    assert outcome.detail["reproducer"].startswith(f"python -m compat fuzz {cell.id} --example ")
    assert "--after '" in outcome.detail["reproducer"] and outcome.detail["new"]


def test_a_sequence_finding_is_the_harness_s_fault_where_eager_differs_too_or_nothing_shows_it(tmp_path, monkeypatch):
    session, cell, _ = _sequence_session(tmp_path, monkeypatch, lambda calls: len(calls) == 1, eager_differs=True)
    with pytest.raises(HarnessError, match="the same calls through eager differ too"):
        session.fuzz_outcome(cell)
    session, cell, ran = _sequence_session(tmp_path / "2", monkeypatch, lambda calls: False)
    with pytest.raises(HarnessError, match="did not show in a fresh process, alone or after the calls"):
        session.fuzz_outcome(cell)
    assert len(ran) == 3  # alone, its own calls, the earlier stage's too (every call: the same, no shape repeats)


def test_an_eager_stages_sequence_finding_is_the_ops_with_no_eager_replay(tmp_path, monkeypatch):
    """Measured on the H200: warmup_launch's eager stage gave `misaligned address` after 4 earlier calls; replayed
    through eager (itself) it gave it again, and the harness called that its own fault."""
    session, cell, ran = _sequence_session(
        tmp_path, monkeypatch, lambda calls: len(calls) == 1, eager_differs=True, stage="eager_backward"
    )
    outcome = session.fuzz_outcome(cell)
    assert ran == [("eager_backward", []), ("eager_backward", [("eager_backward", [CALL_8, CALL_37])])]
    assert outcome.kind == "mismatch" and "--after '" in outcome.detail["reproducer"]


def test_a_sequence_tries_the_first_call_at_each_shape_before_every_call(tmp_path, monkeypatch):
    from compat.run.session import _first_at_each_shape

    assert _first_at_each_shape([CALL_8, CALL_37, CALL_8.replace('"seed":0', '"seed":5'), CALL_8]) == [CALL_8, CALL_37]


@pytest.mark.parametrize("shown", [True, False])
def test_a_pinned_sequence_finding_the_run_did_not_meet_runs_its_sequence(tmp_path, monkeypatch, shown):
    from compat.evidence.findings import sequence_json
    from compat.matrix.cells import Cell
    from compat.matrix.strategies import Example
    from compat.run.session import RunSession

    cell = Cell("silu", "autograd_function", "compile_backward", "float32", "cuda")
    after = sequence_json([("compile_backward", Example.from_json(c)) for c in (CALL_8, CALL_37)])
    pin = {**FOUND, "after": after}
    session = RunSession(tmp_path, [], fuzz_cells=[cell], pinned={cell.id: [pin]})
    monkeypatch.setattr(
        session,
        "_shared",
        lambda *a: ChildResult({"compile_backward": _finding("passed", [CALL_37])}, env={"pid": 1}, ready=True),
    )
    ran = []

    def child(c, task, args, timeout, name=None):
        ran.append((args["known"][c.stage]["calls"], args["known"][c.stage]["pins"], args["example"]))
        kind = "mismatch" if shown else "passed"
        return ChildResult({c.stage: _finding(kind, pinned=True)}, env={"pid": 2}, ready=True)

    monkeypatch.setattr(session, "child", child)
    outcome = session.fuzz_outcome(cell)
    assert ran == [([CALL_8, CALL_37], [pin], EXAMPLE)]
    if shown:
        assert outcome.kind == "mismatch" and outcome.detail["findings"][0]["pinned"]
        assert not outcome.detail.get("unreproduced")
    else:
        assert outcome.kind == "passed" and "after 2 earlier calls" in outcome.detail["unreproduced"][0]


def test_an_interrupted_run_keeps_the_phases_its_cut_children_finished(tmp_path):
    # Measured on 2x H200: a run cut at its limit after 390 s recorded 0 cells, every probe child still pinning.
    from compat.child.journal import Journal
    from compat.evidence.outcomes import Outcome
    from compat.run.session import cut_short

    child = tmp_path / "artifacts" / "probe-silu-triton_op-float32-cuda-gw3"
    child.mkdir(parents=True)
    (child / "task.json").write_text(
        json.dumps(
            {
                "task": "probe",
                "args": {
                    "cell": "silu-triton_op-eager-float32-cuda",
                    "stages": ["eager", "flop_count", "opcheck", "compile_eager"],
                },
            }
        )
    )
    journal = Journal(str(child / "journal.jsonl"))
    journal.start()
    journal.ready()
    journal.run("eager", lambda: Outcome("passed"))
    journal.run("flop_count", lambda: Outcome("failed", "RuntimeError", "boom"))
    journal.run("opcheck", lambda: Outcome("crashed", message="signal 11"))  # would run again alone: left out
    journal.begin("compile_eager")  # the interrupt came here
    found = cut_short(tmp_path)
    assert {k: v.kind for k, v in found.items()} == {
        "silu-triton_op-eager-float32-cuda": "passed",
        "silu-triton_op-flop_count-float32-cuda": "failed",
    }
    assert "cut its child" in found["silu-triton_op-eager-float32-cuda"].detail["cut_short"]


def test_an_error_the_harness_raises_is_a_harness_error_naming_its_frame_never_an_outcome(tmp_path):
    """Planted: a check that unpacks more points than it has, in the suite's own code (compat.matrix.model), as
    compile_dynamic once did with a Dim of two checks. The op's errors stay its outcomes, a CUDA error surfacing at
    the harness's next sync included."""
    from compat.child.journal import Journal
    from compat.matrix.kernels import silu_reference
    from compat.matrix.model import check_points

    journal = Journal(str(tmp_path / "journal"))
    with pytest.raises(HarnessError, match=r"the harness raised AttributeError: .* at compat/matrix/model\.py:\d+"):
        journal.run("compile_dynamic", lambda: check_points(None))
    assert journal.run("eager", lambda: silu_reference("not a tensor")).kind == "failed"  # torch's, the op's
    surfaced = journal.run("eager", lambda: check_points(_RaisesCuda()))
    assert surfaced.kind == "failed" and surfaced.error_type == "RuntimeError"


class _RaisesCuda:
    @property
    def dims(self):
        raise RuntimeError("CUDA error: misaligned address")
