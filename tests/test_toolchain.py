"""The CPU ISAs are detected once per run and applied in each compiling child: Inductor then picks the detected ISA
without building and loading its test libraries again (40-70 s per process on torch 2.11)."""

import json
import platform
import subprocess
import sys

import pytest

APPLY = """
import json, sys
from torch._inductor import cpu_vec_isa
from compat.child import toolchain

def no_check(self, code):
    raise AssertionError("Inductor ran an ISA check the detection had already run")

cpu_vec_isa.VecISA.check_build = no_check
applied = toolchain.apply(sys.argv[1], wait_s=5)
picked = cpu_vec_isa.pick_vec_isa()
print(json.dumps({"applied": applied, "picked": str(picked), "valid": [str(i) for i in cpu_vec_isa.valid_vec_isa_list()],
                  "truthy": all(bool(i) for i in cpu_vec_isa.valid_vec_isa_list())}))
"""


# Every ISA check a stand-in of half a second that records when it ran, on a CPU that claims all four x86 ISAs.
TIMED_CHECKS = """
import json, sys, threading, time
from torch._inductor import cpu_vec_isa
from compat.child import toolchain

spans, lock = [], threading.Lock()

def timed_check(self, code):
    start = time.monotonic()
    time.sleep(0.5)
    with lock:
        spans.append((start, time.monotonic()))
    return True

cpu_vec_isa.VecISA.check_build = timed_check
cpu_vec_isa.x86_isa_checker = lambda: ["avx2", "avx512", "avx512_vnni", "amx_tile"]
if sys.argv[1] == "inductor":
    print(json.dumps({"names": [str(i) for i in cpu_vec_isa.valid_vec_isa_list()], "spans": spans}))
else:
    toolchain.detect(sys.argv[1])
    names = [entry["name"] for entry in json.load(open(sys.argv[1]))["isas"]]
    print(json.dumps({"names": names, "spans": spans}))
"""


def _most_at_once(spans) -> int:
    return max(sum(s <= start < e for s, e in spans) for start, _ in spans)


def _python(*args):
    out = subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


@pytest.mark.slow
def test_a_child_uses_the_runs_detection_and_runs_no_check_of_its_own(tmp_path):
    isa = tmp_path / "isa.json"
    _python("-m", "compat.child.toolchain", str(isa))
    found = json.loads(isa.read_text())
    assert "error" not in found, found
    result = json.loads(_python("-c", APPLY, str(isa)))
    names = [entry["name"] for entry in found["isas"]]
    assert result["applied"] == {"applied": True, "isas": names}
    assert result["valid"] == names and result["truthy"]
    if names:
        assert result["picked"] == names[0]


@pytest.mark.slow
def test_a_detection_from_another_torch_or_a_failed_one_is_not_applied(tmp_path):
    for content, why in (
        ({"torch": "0.0.1", "isas": []}, "detected under torch 0.0.1"),
        ({"error": "RuntimeError: no compiler"}, "RuntimeError: no compiler"),
    ):
        path = tmp_path / "isa.json"
        path.write_text(json.dumps(content))
        script = "import sys, json; from compat.child import toolchain; print(json.dumps(toolchain.apply(sys.argv[1])))"
        assert json.loads(_python("-c", script, str(path))) == {"applied": False, "why": why}


def test_fresh_children_get_the_runs_one_detection_as_forked_ones_do(tmp_path):
    # Fresh children detected again in every child that compiles C++ (40-70 s each on the H100).
    from compat.child.protocol import ISA_FILE_ENV
    from compat.run.launcher import Launcher

    for mode in ("fresh", "forked"):
        launcher = Launcher(tmp_path, mode, isa_file=str(tmp_path / "isa.json"))
        assert launcher._env({"CUDA_VISIBLE_DEVICES": ""})[ISA_FILE_ENV] == str(tmp_path / "isa.json")


@pytest.mark.slow
@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="the side-by-side checks are x86's")
def test_the_detection_runs_the_isa_checks_side_by_side_and_finds_what_inductor_finds_in_turn(tmp_path):
    # On torch 2.11 the checks took 54 s one after the other, and every C++ lane of a run waited for them (one H100).
    in_turn = json.loads(_python("-c", TIMED_CHECKS, "inductor"))
    side_by_side = json.loads(_python("-c", TIMED_CHECKS, str(tmp_path / "isa.json")))
    assert side_by_side["names"] == in_turn["names"] and in_turn["names"]  # AMX's also needs the kernel to allow it
    assert _most_at_once(in_turn["spans"]) == 1
    assert _most_at_once(side_by_side["spans"]) == 4  # each ISA's first check at once; its further ones follow it


# A stage that compiles C++ and one that does not, in one child, while the run's detection is still running.
WAITS = """
import json, os, sys, threading, time
from pathlib import Path

import torch
import compat.matrix.kernels  # noqa: F401 - the suite's kernels, which the cell ids name
from compat.child import checks
from compat.child.journal import Journal
from compat.child.protocol import ISA_FILE_ENV
from compat.matrix.cells import parse_cell_id
from compat.run.launcher import read_journal

isa, journal = Path(sys.argv[1]), Journal(sys.argv[2])
os.environ[ISA_FILE_ENV] = str(isa)

def detect_late():
    time.sleep(0.5)
    isa.with_suffix(".tmp").write_text(json.dumps({"torch": torch.__version__, "isas": []}))
    isa.with_suffix(".tmp").replace(isa)

threading.Thread(target=detect_late).start()
for stage in ("compile_inductor", "eager", "compile_inductor"):
    checks.before_stage(parse_cell_id(f"silu-triton_op-{stage}-float32-cpu_interpret", "test"), journal)
print(json.dumps(read_journal(Path(sys.argv[2])).seconds))
"""


@pytest.mark.slow
def test_a_child_that_waited_for_the_detection_says_how_long_once(tmp_path):
    # On the H100 each C++ lane of Liger's gate waited 54 s for it, which its profile showed only as time outside
    # every phase; the profile now names it as it names each phase (compat.report.profile).
    seconds = json.loads(_python("-c", WAITS, str(tmp_path / "isa.json"), str(tmp_path / "journal.jsonl")))
    assert list(seconds) == ["waiting for the ISA detection"]  # the second compiling stage found it done
    assert 0.4 <= seconds["waiting for the ISA detection"] < 10
