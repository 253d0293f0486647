"""The plugin end to end, in a separate pytest process: a real cell through the gate, accept mode, bad input."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
import yaml

from compat.evidence.expectations import cell_view
from compat.run.matrix_run import ISA_FILE
from tests.projects import PROVENANCE, expect, write_results

CELL = "silu-raw_jit-eager-float32-cpu_interpret"  # runs on any machine; measured to pass on CPU and GPU hosts
ONE_CELL = [
    "--compat-kernels=silu",
    "--compat-dtypes=float32",
    "--compat-devices=cpu_interpret",
    "--compat-styles=raw_jit",
    "--compat-stages=eager",
]


MINE_CASES = """
from compat import Kernel, register_kernel
from compat.matrix.kernels import launch_silu, silu_kernel, silu_reference

register_kernel(Kernel(name="mine", doc="a user's kernel: the suite's expectations have no rows for it",
                       jit=silu_kernel, launch=launch_silu, reference=silu_reference, dtypes=("float32",),
                       meta=(("BLOCK_SIZE", 1024),)))
"""
MINE = "mine-raw_jit-eager-float32-cpu_interpret"
MINE_ONLY = [
    "--compat-kernels=mine",
    "--compat-dtypes=float32",
    "--compat-devices=cpu_interpret",
    "--compat-styles=raw_jit",
    "--compat-stages=eager",
]


@pytest.fixture
def mine(project):
    """The project declares a kernel of its own, in a module named by its ini, as a user's repository does."""
    project.makepyfile(mine_cases=MINE_CASES)
    project.makeini("[pytest]\ncompat_cases = mine_cases\n")
    return project


def collected_kernels(project, *args) -> set[str]:
    result = project.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "--collect-only",
        "-q",
        "--compat-dtypes=float32",
        "--compat-devices=cpu_interpret",
        "--compat-styles=raw_jit",
        "--compat-stages=eager",
        "test_matrix.py",
        *args,
    )
    return {line.split("[", 1)[1].split("-", 1)[0] for line in result.stdout.lines if "test_cell[" in line}


@pytest.mark.slow
def test_a_repository_gates_its_own_kernels_unless_it_names_the_suites(mine):
    assert collected_kernels(mine) == {"mine"}  # not the suite's 5,000 cells on a user's first run
    assert collected_kernels(mine, "--compat-kernels=silu") == {"silu"}  # named, any registered kernel runs
    mine.makeini("[pytest]\ncompat_cases = mine_cases compat.matrix.kernels\n")
    assert {"mine", "silu", "matmul"} <= collected_kernels(mine)


@pytest.mark.slow
def test_cases_that_declare_nothing_are_a_usage_error(project):
    project.makepyfile(empty_cases="")
    project.makeini("[pytest]\ncompat_cases = empty_cases\n")
    result = project.runpytest_subprocess("-p", "no:cacheprovider", "test_matrix.py")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*compat_cases (empty_cases) declare no kernel or op: declare yours with "
            "register_kernel / register_op*no cell was run*"
        ]
    )


@pytest.mark.slow
@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_a_run_whose_every_cell_was_skipped_fails_saying_it_checked_nothing(project):
    # A GPU runner that lost its GPU: the CUDA cells it is given all skip. Green would hide that the gate ran nothing.
    cells = project.path / "cells.txt"
    cells.write_text("silu-raw_jit-eager-float32-cuda\n")
    result = project.runpytest_subprocess("-p", "no:cacheprovider", "test_matrix.py", f"--compat-cells={cells}")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["NOTHING RAN: every selected cell was skipped here (no CUDA device on this machine*"])
    # One cell that runs beside it is a run that checked something: the skip is reported, not failed.
    cells.write_text(f"silu-raw_jit-eager-float32-cuda\n{CELL}\n")
    expect(project, {CELL: [{"torch": ">=2.0", "outcome": "passed", "provenance": PROVENANCE}]})
    result = project.runpytest_subprocess("-p", "no:cacheprovider", "test_matrix.py", f"--compat-cells={cells}")
    assert result.ret == pytest.ExitCode.OK and "NOTHING RAN" not in result.stdout.str()


@pytest.mark.slow
@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_a_device_this_run_names_but_cannot_use_is_a_usage_error(project):
    result = project.runpytest_subprocess(
        "-p", "no:cacheprovider", "test_matrix.py", "--compat-devices=cuda", "--compat-kernels=silu"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--compat-devices names cuda, which this machine cannot run: no CUDA device*"])


def run(pytester, *args, tests=("test_matrix.py",)):
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", *ONE_CELL, *tests, *args)


@pytest.mark.slow
def test_expected_outcome_passes_and_the_results_file_holds_the_cell(project):
    expect(project, {CELL: [{"torch": ">=2.0", "outcome": "passed", "provenance": PROVENANCE}]})
    result = run(project, "--compat-results=out/r.json")
    result.assert_outcomes(passed=1)
    doc = json.loads((project.path / "out" / "r.json").read_text())
    (cell,) = doc["cells"]
    assert cell["id"] == CELL and cell["outcome"]["kind"] == "passed" and cell["verdict"] is None
    assert [n["input"] for n in cell["outcome"]["numerics"]] == ["batch 1", "batch 37", "batch 1024"]
    assert doc["environment"]["torch"] and doc["summary"]["cells"] == 1
    result.stdout.fnmatch_lines(["*triton-export-compat matrix*", "silu on cpu_interpret e", "  raw_jit f32 * ok"])
    assert not Path(doc["options"]["run_dir"]).exists()  # a green run leaves no packages or caches behind


@pytest.mark.slow
def test_workers_judge_by_the_rows_the_session_read_when_it_started(project):
    """The expectations are read once, by the session's process (compat.run.matrix_run.READ_ONCE): a file changed
    once the run has started (here, broken by each xdist worker as it starts) changes nothing in that run."""
    expect(project, {CELL: [{"torch": ">=2.0", "outcome": "passed", "provenance": PROVENANCE}]})
    project.makeconftest(
        "import pytest\n"
        'pytest_plugins = ("compat.plugin",)\n\n\n'
        "@pytest.hookimpl(tryfirst=True)  # before the plugin's own\n"
        "def pytest_configure(config):\n"
        "    if hasattr(config, 'workerinput'):\n"
        "        (config.rootpath / 'expectations.yaml').write_text('cells: [not: valid')\n"
    )
    result = run(project, "-n", "2", "--compat-results=r.json")
    result.assert_outcomes(passed=1)
    assert "not: valid" in (project.path / "expectations.yaml").read_text()  # the workers did break it
    (cell,) = json.loads((project.path / "r.json").read_text())["cells"]
    assert cell["expected_at"] and cell["verdict"] is None


@pytest.mark.slow
def test_changed_outcome_fails_the_gate_and_says_how_to_record_it(project):
    expect(
        project,
        {
            CELL: [
                {
                    "torch": ">=2.0",
                    "outcome": "failed",
                    "error": "RuntimeError",
                    "match": "boom",
                    "reason": "it used to fail",
                    "provenance": PROVENANCE,
                }
            ]
        },
    )
    result = run(project, f"--compat-run-dir={project.path / 'run'}")  # a failed run keeps its directory
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*expected failure now passes (strict)*",
            "*observed: passed*",
            "*rerun with --compat-accept*",
            "run directory (child logs, artifacts): *",
        ]
    )
    kept = next(line for line in result.stdout.lines if line.startswith("run directory"))
    assert Path(kept.split(": ", 1)[1]).is_dir()  # a failed run keeps its logs


@pytest.mark.slow
def test_a_cell_with_no_expectation_fails_then_accept_records_it(mine):
    def run_mine(*args):
        return mine.runpytest_subprocess("-p", "no:cacheprovider", *MINE_ONLY, "test_matrix.py", *args)

    run_mine(f"--compat-run-dir={mine.path / 'run'}").assert_outcomes(failed=1)  # no expectations file at all
    accepted = run_mine("--compat-accept")
    accepted.assert_outcomes(passed=1)
    accepted.stdout.fnmatch_lines([f"accepted: {MINE}: no expectation -> passed*"])
    # cpu_interpret runs one dtype, so the row lands under the cell's any-dtype key; accept made the file.
    rows = cell_view(yaml.safe_load((mine.path / "expectations.yaml").read_text()), "test")["cells"][
        MINE.replace("float32", "*")
    ]
    assert rows[0]["outcome"] == "passed" and "measured" in rows[0]["provenance"]
    run_mine().assert_outcomes(passed=1)


@pytest.mark.slow
def test_the_suites_own_kernels_are_gated_on_the_suites_rows_behind_the_projects_own(mine):
    # The project's file has rows only for its own kernel; the suite's cell finds the suite's rows.
    expect(mine, {MINE: [{"torch": ">=2.0", "outcome": "passed", "provenance": PROVENANCE}]})
    both = [
        "--compat-kernels=mine,silu",
        "--compat-dtypes=float32",
        "--compat-devices=cpu_interpret",
        "--compat-styles=raw_jit",
        "--compat-stages=eager",
    ]
    result = mine.runpytest_subprocess("-p", "no:cacheprovider", *both, "test_matrix.py", "--compat-results=r.json")
    result.assert_outcomes(passed=2)
    doc = json.loads((mine.path / "r.json").read_text())
    assert {c["id"]: c["expected_at"] for c in doc["cells"]} == {
        MINE: f"cells.{MINE}[0]",
        CELL: f"cells.{CELL.replace('float32', '*')}[0]",
    }


@pytest.mark.slow
def test_malformed_expectations_fail_before_collection_naming_file_and_entry(project):
    expect(
        project, {"silu-bogus-eager-bfloat16-cpu": [{"torch": ">=2.0", "outcome": "passed", "provenance": PROVENANCE}]}
    )
    result = run(project, "--compat-results=r.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*expectations.yaml: cell 'silu-bogus-eager-bfloat16-cpu': unknown style name(s) "
            "'bogus'; valid style names: raw_jit, wrap_triton, triton_op*"
        ]
    )
    assert not (project.path / "r.json").exists()


@pytest.mark.slow
def test_unknown_name_on_the_command_line_lists_valid_names(project):
    expect(project, {})
    result = project.runpytest_subprocess("--compat-stages=export")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*--compat-stages: unknown stage name(s) 'export'; valid stage names: eager, "
            "eager_backward, flop_count, opcheck, compile_eager*"
        ]
    )


@pytest.mark.slow
def test_valid_names_that_select_no_cell_are_a_usage_error(project):
    expect(project, {})
    result = project.runpytest_subprocess(
        "--compat-stages=compile_cudagraphs", "--compat-devices=cpu_interpret", "--compat-results=r.json"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*the selection matches no cell of the matrix*no cell was run*"])
    assert not (project.path / "r.json").exists()


@pytest.mark.slow
def test_unwritable_results_path_fails_before_any_cell_runs(project):
    expect(project, {})
    (project.path / "blocker").write_text("a file, not a folder")
    result = run(project, "--compat-results=blocker/r.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--compat-results blocker/r.json: cannot be written*no cell was run*"])
    assert "passed" not in result.stdout.str() and "failed" not in result.stdout.str()


@pytest.mark.slow
def test_hygiene_fails_a_test_that_leaks_compiler_config(project):
    project.makeconftest('pytest_plugins = ("compat.plugin", "tests.hygiene")')
    project.makepyfile(
        test_leak="""
import torch._inductor.config

def test_leaks():
    torch._inductor.config.max_autotune = not torch._inductor.config.max_autotune

def test_restores():
    with torch._inductor.config.patch(max_autotune=not torch._inductor.config.max_autotune):
        pass
"""
    )
    expect(project, {})
    result = project.runpytest_subprocess(
        "-p", "no:cacheprovider", "test_leak.py", f"--compat-run-dir={project.path / 'run'}"
    )
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_leaks*",
            "*leaked config changes into the next: torch._inductor.config.max_autotune*",
        ]
    )


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["kernels", "child"])
def test_triton_kernels_are_shared_by_the_run_and_inductor_caches_are_each_childs_own(project, mode):
    expect(project, {CELL: [{"torch": ">=2.0", "outcome": "passed", "provenance": PROVENANCE}]})
    result = run(
        project,
        "-n",
        "2",
        "--dist",
        "each",
        "--compat-results=r.json",
        f"--compat-compile-cache={mode}",
        f"--compat-run-dir={project.path / 'run'}",
    )
    result.assert_outcomes(passed=2)  # --dist each: both workers run the cell
    doc = json.loads((project.path / "r.json").read_text())
    run_dir = doc["options"]["run_dir"]
    assert doc["options"]["compile_cache"] == mode
    caches = {c["worker"]: c["outcome"]["detail"]["child"] for c in doc["cells"]}
    assert sorted(caches) == ["gw0", "gw1"]
    for worker, child in caches.items():  # what each worker's child process saw
        own = f"{run_dir}/artifacts/probe-silu-raw_jit-float32-cpu_interpret-{worker}/cache"  # the child's workdir
        assert child["TORCHINDUCTOR_CACHE_DIR"] == f"{own}/inductor"
        assert child["TRITON_CACHE_DIR"] == (f"{own}/triton" if mode == "child" else f"{run_dir}/cache/triton")
        assert not Path(own).exists()  # a child's own caches go when it ends
    cell = doc["cells"][0]
    assert cell["cpu_s"] > 0 and cell["outcome"]["detail"]["cpu_seconds"]["eager"] > 0
    assert doc["summary"]["stage_families"]["probe"]["cells"] == 2


@pytest.mark.slow
def test_the_session_starts_the_warm_server_while_its_workers_start_and_they_share_it(project):
    expect(project, {CELL: [{"torch": ">=2.0", "outcome": "passed", "provenance": PROVENANCE}]})
    run_dir = project.path / "run"
    result = run(project, "-n", "2", "--dist", "each", "--compat-results=r.json", f"--compat-run-dir={run_dir}")
    result.assert_outcomes(passed=2)  # --dist each: both workers run the cell, each through a child
    assert len(list((run_dir / "servers").glob("*.json"))) == 1  # one device environment: one server
    # The session started it (it runs no cell itself under xdist), and no worker started one of its own.
    assert sorted(p.name for p in (run_dir / "launchers").glob("*.json")) == ["main.json"]


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_warm_server_no_test_needed_is_stopped_with_the_run_and_a_filtered_run_starts_none(project):
    run_dir = project.path / "run"
    result = run(project, f"--deselect=test_matrix.py::test_cell[{CELL}]", f"--compat-run-dir={run_dir}")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    assert list((run_dir / "servers").glob("*.log"))  # started as the session began, before its cell was deselected
    assert [pid for pid in _processes_with(str(run_dir)) if not _zombie(pid)] == []
    # A -k or -m run waits for its collection to know its cells (the fast tier's -m "not slow" leaves none).
    result = run(project, "-k", "no_such_test", f"--compat-run-dir={project.path / 'filtered'}")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    assert not (project.path / "filtered" / "servers").exists()


@pytest.mark.slow
def test_recorded_durations_order_the_run_longest_shared_child_first(project):
    expect(project, {})
    cells = [f"silu-{style}-eager-float32-cpu_interpret" for style in ("raw_jit", "triton_op", "custom_op")]
    # Two files, as the ini names one a device: the run reads both; a lane both hold weighs the longer.
    write_results(project.path / "durations.json", {cells[1]: 30.0})
    write_results(project.path / "more.json", {c: s for c, s in zip(cells, (1.0, 2.0, 5.0), strict=True)})
    (project.path / "sub").mkdir()  # the ini's paths resolve against the ini file's folder (pytest's `paths` type)
    project.makeini("[pytest]\ncompat_durations = durations.json\n    sub/../more.json\n")
    wide = [
        "--compat-kernels=silu",
        "--compat-dtypes=float32",
        "--compat-devices=cpu_interpret",
        "--compat-styles=raw_jit,triton_op,custom_op,wrap_triton",
        "--compat-stages=eager",
    ]
    result = project.runpytest_subprocess(
        "-p", "no:cacheprovider", "test_matrix.py", *wide, "--collect-only", "-q", "--compat-run-dir=run"
    )
    assert sorted(p.name for p in (project.path / "run").iterdir()) == ["read-once.pickle"]  # no server, no ISA probe
    order = [line.split("[")[1].rstrip("]") for line in result.outlines if "test_cell[" in line]
    # wrap_triton's group is not recorded: it weighs the median of the recorded probes (5 s), after the 30 s one.
    assert (
        order[0] == cells[1]
        and order[-1] == cells[0]
        and set(order[1:3]) == {cells[2], cells[1].replace("triton_op", "wrap_triton")}
    )
    result = project.runpytest_subprocess(
        "-p", "no:cacheprovider", "test_matrix.py", *wide, "--compat-durations=missing.json"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--compat-durations: *missing.json*no cell was run*"])
    (project.path / "more.json").unlink()  # a copy of the repository without a file its ini names: the ini's fault
    result = project.runpytest_subprocess("-p", "no:cacheprovider", "test_matrix.py", *wide)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*compat_durations (*tox.ini): *more.json*no cell was run*"])


@pytest.mark.slow
def test_a_run_of_a_test_named_by_its_id_starts_only_what_that_test_needs(mine):
    # The selection holds a stage that compiles C++; the test named runs eager: no ISA detection, one warm server.
    selected = [*MINE_ONLY[:-1], "--compat-stages=eager,compile_inductor", "--compat-accept", "--compat-run-dir=run"]
    result = mine.runpytest_subprocess("-p", "no:cacheprovider", *selected, f"test_matrix.py::test_cell[{MINE}]")
    result.assert_outcomes(passed=1)
    run = mine.path / "run"
    assert not (run / ISA_FILE).with_suffix(".log").exists()
    assert len(list((run / "servers").glob("*.json"))) == 1


@pytest.mark.slow
def test_cells_file_runs_only_the_listed_cells(project):
    expect(project, {CELL: [{"torch": ">=2.0", "outcome": "passed", "provenance": PROVENANCE}]})
    (project.path / "cells.txt").write_text(f"{CELL}\n")
    wide = ["--compat-styles=raw_jit,triton_op", "--compat-stages=eager"]
    project.runpytest_subprocess(
        "-p", "no:cacheprovider", "test_matrix.py", *wide, "--compat-cells=cells.txt"
    ).assert_outcomes(passed=1)
    (project.path / "cells.txt").write_text("silu-raw_jit-eager-float32-cpu\n")  # raw_jit has no CPU kernel
    result = project.runpytest_subprocess("--compat-cells=cells.txt")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--compat-cells cells.txt: 'silu-raw_jit-eager-float32-cpu' is not in the matrix*"])


@pytest.mark.slow
def test_a_passing_cell_is_fuzzed_and_its_example_count_lands_in_the_results(project):
    expect(project, {CELL: [{"torch": ">=2.0", "outcome": "passed", "provenance": PROVENANCE}]})
    result = run(project, "--compat-results=r.json", tests=("test_matrix.py", "test_fuzz.py"))
    result.assert_outcomes(passed=2)  # the matrix cell and its fuzz test
    doc = json.loads((project.path / "r.json").read_text())
    (fuzz,) = doc["fuzz"]
    tally = fuzz["outcome"]["detail"]["tally"]
    assert fuzz["id"] == CELL and fuzz["outcome"]["kind"] == "passed" and fuzz["verdict"] is None
    assert tally["examples"] >= 25 and tally["informative"] > 0 and tally["max_rel_err"] < 1e-4
    assert tally["refused"]  # raw_jit's launcher asserts contiguity: non-contiguous inputs are refused, clearly
    assert doc["summary"]["fuzz"]["examples"] == tally["examples"] and doc["options"]["fuzz_profile"] == "ci"
    result.stdout.fnmatch_lines(["*fuzz (ci profile): 1 cells, * generated examples; 1 passes; 0 unexpected*"])


@pytest.mark.slow
def test_only_cells_expected_to_pass_here_are_fuzzed_and_a_run_that_fuzzed_nothing_says_so(project):
    expect(
        project,
        {
            CELL: [
                {
                    "torch": ">=2.0",
                    "outcome": "failed",
                    "error": "RuntimeError",
                    "match": "x",
                    "reason": "a stand-in failure",
                    "provenance": PROVENANCE,
                }
            ]
        },
    )
    result = run(project, "-rs", "--compat-results=r.json", tests=("test_fuzz.py",))
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["fuzz: nothing fuzzed: no cell is expected to pass on this run (torch *"])
    result.stdout.fnmatch_lines(["*got empty parameter set*"])
    doc = json.loads((project.path / "r.json").read_text())
    assert doc["fuzz"] == [] and doc["summary"]["fuzz"]["collected"]


@pytest.mark.slow
def test_a_version_without_rows_runs_every_cell_under_xdist_and_reports_no_expectation(mine, monkeypatch):
    # Rows for another torch only, as after an upgrade: no cell is expected to pass, so the fuzz tests' parameter
    # set is empty. Under xdist that placeholder (NOTSET) once crashed the scheduler before any cell ran.
    monkeypatch.setenv("TMPDIR", str(mine.path / "tmp"))
    (mine.path / "tmp").mkdir()
    expect(mine, {MINE: [{"torch": "==1.0.*", "outcome": "passed", "provenance": PROVENANCE}]})
    two = [*MINE_ONLY[:-2], "--compat-styles=raw_jit,triton_op", "--compat-stages=eager"]
    result = mine.runpytest_subprocess(
        "-p", "no:cacheprovider", *two, "test_matrix.py", "test_fuzz.py", "-n", "2", "--compat-results=r.json"
    )
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    result.assert_outcomes(failed=2, skipped=1)
    result.stdout.fnmatch_lines(
        [
            f"*{MINE}: no expectation for torch *",
            "*2 cells ran here: 0 as expected*2 differ from their expectations*",
            "*?P*",
            "fuzz: nothing fuzzed*",
        ]
    )
    doc = json.loads((mine.path / "r.json").read_text())
    assert sorted(c["id"] for c in doc["cells"]) == [MINE, MINE.replace("raw_jit", "triton_op")]
    assert all(c["expected"] is None and "no expectation" in c["verdict"] for c in doc["cells"])
    kept = [p for p in (mine.path / "tmp").iterdir() if p.name.startswith("compat-run-")]
    assert all(any(p.iterdir()) for p in kept)  # a failed run keeps its logs; never an empty run directory


USER_KERNEL = """
from compat import Kernel, register_kernel
from compat.matrix.kernels import launch_silu, silu_kernel, silu_reference

register_kernel(Kernel(name="my_silu", doc="a user's kernel, declared where the children cannot see it",
                       jit=silu_kernel, launch=launch_silu, reference=silu_reference, dtypes=("float32",)))
"""


@pytest.mark.slow
def test_a_cell_the_child_cannot_resolve_is_a_harness_error_never_an_outcome_or_accepted(project):
    project.makeconftest('pytest_plugins = ("compat.plugin",)\n' + USER_KERNEL)
    expect(project, {})
    before = (project.path / "expectations.yaml").read_text()
    mine = [
        "--compat-kernels=my_silu",
        "--compat-styles=raw_jit",
        "--compat-stages=eager",
        "--compat-devices=cpu_interpret",
        "--compat-results=r.json",
    ]
    result = project.runpytest_subprocess(
        "-p", "no:cacheprovider", "test_matrix.py", "-n", "2", "--compat-accept", *mine
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*HARNESS ERROR in my_silu-raw_jit-eager-float32-cpu_interpret (not the cell's "
            "outcome; nothing recorded or accepted)*unknown kernel name(s) 'my_silu'*"
        ]
    )
    assert (project.path / "expectations.yaml").read_text() == before  # nothing accepted
    doc = json.loads((project.path / "r.json").read_text())
    assert doc["cells"] == [] and [e["id"] for e in doc["harness_errors"]] == [
        "my_silu-raw_jit-eager-float32-cpu_interpret"
    ]


@pytest.mark.slow
def test_an_unknown_fuzz_profile_is_a_usage_error(project, monkeypatch):
    expect(project, {})
    monkeypatch.setenv("COMPAT_HYPOTHESIS_PROFILE", "fast")
    result = run(project)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unknown Hypothesis profile 'fast' for the fuzz tests; profiles: ci, thorough*"])


@pytest.mark.parametrize("suffix", ["", "@probe-anything"])  # pytest 8 + xdist 3.8 append the xdist_group name
def test_the_scheduler_keeps_each_shared_child_on_one_worker(suffix):
    from compat.run.loadgroup import shared_child_group

    probe = "tests/test_matrix.py::test_cell[silu-triton_op-compile_inductor-float16-cuda]"
    assert shared_child_group(probe + suffix) == "probe-silu-triton_op-float16-cuda"
    build = "tests/test_matrix.py::test_cell[silu-triton_op-{}-float16-cuda]"
    assert (
        shared_child_group(build.format("aoti_strict"))
        == shared_child_group(build.format("export_strict"))
        == "build-silu-triton_op-strict-float16-cuda"
    )  # one build, one worker: no one waits on its lock
    fuzz = "tests/test_fuzz.py::test_fuzz[silu-triton_op-{}-float16-cuda]"
    assert (
        shared_child_group(fuzz.format("save_load_strict") + suffix)
        == shared_child_group(fuzz.format("aoti_strict"))
        == "fuzz-silu-triton_op-strict-float16-cuda"
    )
    assert shared_child_group(fuzz.format("eager")) == "fuzz-silu-triton_op-probe-float16-cuda"
    assert shared_child_group("tests/test_report.py::test_docs_are_in_sync") is None
    assert shared_child_group("tests/test_fuzz.py::test_fuzz[NOTSET]") is None  # an empty parameter set


SLEEPY_CASES = """
import os, subprocess, sys, time
from compat import Kernel, register_kernel
from compat.matrix.kernels import launch_silu, silu_kernel, silu_reference


def launch_sleepy(kernel, meta, x):
    # Hangs as a long compile would, with a process of its own (as a compiler is).
    compiler = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    with open(os.environ["SLEEPY_MARKER"], "w") as f:
        f.write(f"{os.getpid()} {compiler.pid}")
    time.sleep(600)
    return launch_silu(kernel, meta, x)


register_kernel(Kernel(name="sleepy", doc="a kernel whose launch never ends", jit=silu_kernel,
                       launch=launch_sleepy, reference=silu_reference, dtypes=("float32",), styles=("raw_jit",)))
"""


def _processes_with(text: str) -> list[int]:
    """Processes whose environment mentions `text` (every process a run starts carries its run directory)."""
    found = []
    for environ in Path("/proc").glob("[0-9]*/environ"):
        try:
            if text.encode() in environ.read_bytes():
                found.append(int(environ.parent.name))
        except OSError:
            continue
    return found


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_run_stops_every_child_writes_what_it_measured_and_leaves_nothing_running(project, signum):
    project.makepyfile(sleepy_cases=SLEEPY_CASES)
    project.makeini("[pytest]\ncompat_cases = sleepy_cases\n")
    expect(project, {CELL: [{"torch": ">=2.0", "outcome": "passed", "provenance": PROVENANCE}]})
    run_dir, marker, results = project.path / "run", project.path / "sleepy.pids", project.path / "r.json"
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "test_matrix.py",
        "-n",
        "2",
        "--compat-kernels=silu,sleepy",
        "--compat-styles=raw_jit",
        "--compat-stages=eager",
        "--compat-devices=cpu_interpret",
        f"--compat-run-dir={run_dir}",
        f"--compat-results={results}",
    ]
    # The run keeps a SIGINT its shell ignores (a background job's), so the test gives it the default whatever
    # started this pytest.
    proc = subprocess.Popen(
        cmd,
        cwd=project.path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**os.environ, "SLEEPY_MARKER": str(marker)},
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        deadline = time.monotonic() + 240
        while not (marker.exists() and list(run_dir.glob("artifacts/probe-silu-*/record.json"))):
            assert time.monotonic() < deadline and proc.poll() is None, "the run never got going"
            time.sleep(0.2)
        time.sleep(2)  # the finished cell's report reaches the controller
        assert _processes_with(str(run_dir))
        proc.send_signal(signum)
        proc.send_signal(signum)  # twice, as `timeout` does (the run, then its process group)
        sent = time.monotonic()
        while not results.exists():
            assert time.monotonic() - sent < 10, "no results file within 10 s of the signal"
            time.sleep(0.1)
        output = proc.communicate(timeout=120)[0].decode()
    finally:
        proc.kill()
    doc = json.loads(results.read_text())
    assert doc["options"]["interrupted"] and [c["id"] for c in doc["cells"]] == [CELL]
    assert "INTERRUPTED:" in output and "INTERNALERROR" not in output
    for pid in map(int, marker.read_text().split()):  # the hanging child and its compiler
        assert not Path(f"/proc/{pid}").exists() or _zombie(pid), f"process {pid} outlived the run"
    assert [pid for pid in _processes_with(str(run_dir)) if not _zombie(pid)] == []


def test_a_second_signal_while_the_first_is_handled_raises_nothing():
    """`timeout` signals the run and then its whole process group: the controller's handler sees two signals.
    Raising again inside the first one's handling broke pytest's ending with an INTERNALERROR (on the H100); the
    second is recorded by the first and otherwise ignored."""
    from types import SimpleNamespace

    from compat.run.controller import Controller

    run = SimpleNamespace(interrupted=None)
    with pytest.raises(KeyboardInterrupt, match="SIGINT"):
        Controller._signalled(run, signal.SIGINT, None)
    assert run.interrupted == "interrupted by SIGINT"
    try:
        Controller._signalled(run, signal.SIGINT, None)
        Controller._signalled(run, signal.SIGTERM, None)
    except KeyboardInterrupt:  # caught: escaping, it would end this test session too
        pytest.fail("a second signal raised again while the first was being handled")
    assert "SIGINT" in run.interrupted


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


@pytest.mark.slow
def test_the_installed_plugin_is_inert_where_no_one_asks_for_it(pytester, monkeypatch):
    # A repository with the package installed but no compat_cases and no --compat option: the plugin (loaded through
    # its pytest11 entry point) writes nothing, starts nothing, and leaves -n auto to xdist.
    monkeypatch.setenv("TMPDIR", str(pytester.path / "tmp"))
    (pytester.path / "tmp").mkdir()
    pytester.makepyfile(test_plain="def test_plain():\n    assert True\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2")
    result.assert_outcomes(passed=1)
    assert "triton-export-compat matrix" not in result.stdout.str()  # (the plugins line names it: it is loaded)
    assert not (pytester.path / "compat-results.json").exists() and not any((pytester.path / "tmp").iterdir())
    pytester.makepyfile(test_cells="from compat.testing import test_cell  # noqa: F401\n")
    asked = pytester.runpytest_subprocess("-p", "no:cacheprovider", "test_cells.py")
    assert asked.ret == pytest.ExitCode.INTERRUPTED  # a collection error: the matrix's tests cannot be made here
    asked.stdout.fnmatch_lines(["*the triton-export-compat plugin is off in this repository: name the modules*"])


@pytest.mark.slow
def test_shards_balanced_by_recorded_seconds_merge_into_the_results_of_one_run(project):
    """`shard` splits the matrix by a run's durations; the shards run apart and `merge` gives that run's results."""
    cells = [f"silu-{style}-eager-float32-cpu_interpret" for style in ("raw_jit", "triton_op")]
    expect(project, {c: [{"torch": ">=2.0", "outcome": "passed", "provenance": PROVENANCE}] for c in cells})
    select = [
        "--compat-kernels=silu",
        "--compat-styles=raw_jit,triton_op",
        "--compat-stages=eager",
        "--compat-dtypes=float32",
        "--compat-devices=cpu_interpret",
    ]
    tests = ("test_matrix.py", "test_fuzz.py")
    project.runpytest_subprocess(
        "-p", "no:cacheprovider", *tests, *select, "--compat-results=whole.json"
    ).assert_outcomes(passed=4)

    def cli(*args):
        return subprocess.run(
            [sys.executable, "-m", "compat", *args], cwd=project.path, capture_output=True, text=True, check=True
        ).stdout

    out = cli(
        "shard",
        "--count",
        "2",
        "--durations",
        "whole.json",
        "--out-dir",
        "shards",
        *(a.replace("--compat-", "--") for a in select),
    )
    lists = [project.path / "shards" / f"shard-{i}-of-2.txt" for i in (1, 2)]
    assert sorted(line for path in lists for line in path.read_text().split()) == cells and "about" in out
    for i, path in enumerate(lists):
        project.runpytest_subprocess(
            "-p", "no:cacheprovider", *tests, f"--compat-cells={path}", f"--compat-results=s{i}.json"
        ).assert_outcomes(passed=2)
    cli("merge", "merged.json", "s0.json", "s1.json")

    def outcomes(name):
        doc = json.loads((project.path / name).read_text())
        return {
            section: {
                r["id"]: (r["outcome"]["kind"], r["outcome"]["error_type"], r["verdict"], r["expected"])
                for r in doc[section]
            }
            for section in ("cells", "fuzz")
        }

    assert outcomes("merged.json") == outcomes("whole.json")
    assert len(outcomes("whole.json")["fuzz"]) == 2


@pytest.mark.slow
def test_an_accept_that_cannot_write_its_file_at_the_end_keeps_the_run_and_exits_3(mine):
    # Writable when the run began (checked), not at the end: the results come first and the error names the file.
    mine.makeconftest(
        'pytest_plugins = ("compat.plugin",)\nimport compat.run.controller as c\n\n'
        'def _refused(*args, **kwargs):\n    raise PermissionError(1, "Operation not permitted")\n\n'
        "assert callable(c.accept_run)  # the name the controller calls\nc.accept_run = _refused\n"
    )
    result = mine.runpytest_subprocess(
        "-p", "no:cacheprovider", *MINE_ONLY, "test_matrix.py", "--compat-accept", "--compat-results=r.json"
    )
    assert result.ret == 3
    result.stdout.fnmatch_lines(
        ["ERROR --compat-accept: cannot write *expectations.yaml (*Operation not permitted)*the results are in r.json*"]
    )
    assert json.loads((mine.path / "r.json").read_text())["cells"][0]["id"] == MINE


@pytest.mark.slow
def test_a_read_only_expectations_file_stops_an_accept_before_any_cell_unless_allowed(mine):
    exp = mine.path / "expectations.yaml"
    exp.write_text("schema: 1\ncells: {}\n")
    exp.chmod(0o444)
    result = mine.runpytest_subprocess("-p", "no:cacheprovider", *MINE_ONLY, "test_matrix.py", "--compat-accept")
    assert result.ret == 4 and "read-only" in result.stderr.str() and "no cell was run" in result.stderr.str()
    allowed = mine.runpytest_subprocess(
        "-p", "no:cacheprovider", *MINE_ONLY, "test_matrix.py", "--compat-accept", "--compat-overwrite-read-only"
    )
    allowed.assert_outcomes(passed=1)
    assert MINE.replace("float32", "*") in exp.read_text() and exp.stat().st_mode & 0o777 == 0o444  # its mode kept


@pytest.mark.slow
def test_a_runs_records_say_where_their_time_went_and_the_profile_reads_them(mine):
    mine.runpytest_subprocess("-p", "no:cacheprovider", *MINE_ONLY, "test_matrix.py", "--compat-results=r.json")
    doc = json.loads((mine.path / "r.json").read_text())
    head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=Path(__file__).parent)
    # The harness's commit (this checkout's, "+changes" where its tracked files differ); the project is no checkout.
    assert doc["environment"]["commits"]["compat"].startswith(head.stdout.strip()) and head.returncode == 0
    assert doc["environment"]["commits"]["repository"] is None
    (record,) = doc["cells"]
    assert record["lane"] == "probe-mine-raw_jit-float32-cpu_interpret" and record["started_at"] > 0
    seconds = record["outcome"]["detail"]["seconds"]
    assert {"launch", "startup", "eager", "exit"} <= set(seconds) and all(s >= 0 for s in seconds.values()), seconds
    out = subprocess.run(
        [sys.executable, "-m", "compat", "profile", "r.json"], cwd=mine.path, capture_output=True, text=True
    )
    assert out.returncode == 0 and "critical path: probe-mine-raw_jit-float32-cpu_interpret" in out.stdout, out


@pytest.mark.slow
def test_a_lane_split_by_its_recorded_seconds_gives_the_same_outcomes_in_a_child_per_stage(project):
    expect(project, {})
    stages = ("eager", "compile_eager", "compile_aot_eager")
    narrow = [
        "--compat-kernels=silu",
        "--compat-dtypes=float32",
        "--compat-devices=cpu_interpret",
        "--compat-styles=triton_op",
        f"--compat-stages={','.join(stages)}",
    ]
    whole = project.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "test_matrix.py",
        "test_fuzz.py",
        *narrow,
        "--compat-accept",
        "--compat-results=a.json",
    )
    assert whole.ret == 0
    cells = [f"silu-triton_op-{s}-float32-cpu_interpret" for s in stages]
    write_results(project.path / "durations.json", dict.fromkeys(cells, 40.0))  # 120 s, all of it: split
    split = project.runpytest_subprocess(
        "-p", "no:cacheprovider", "test_matrix.py", *narrow, "-n", "2", "--compat-durations=durations.json",
        "--compat-results=b.json",
    )  # fmt: skip
    assert split.ret == 0  # gated on the rows the whole run accepted: nothing differs

    def outcomes(name):
        doc = json.loads((project.path / name).read_text())
        return {c["id"]: (c["outcome"]["kind"], c["lane"]) for c in doc["cells"]}

    a, b = outcomes("a.json"), outcomes("b.json")
    assert {i: kind for i, (kind, _) in a.items()} == {i: kind for i, (kind, _) in b.items()}
    assert {lane for _, lane in a.values()} == {"probe-silu-triton_op-float32-cpu_interpret"}
    assert {lane for _, lane in b.values()} == {f"probe-silu-triton_op-float32-cpu_interpret-{s}" for s in stages}
