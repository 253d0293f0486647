"""The CPU ISAs are detected once per run and applied in each compiling child: Inductor then picks the detected ISA
without building and loading its test libraries again (40-70 s per process on torch 2.11)."""

import json
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
