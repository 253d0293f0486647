"""The AOTI package run from C++ (the `aoti_cpp` stages): the runner `aoti_runner.cpp`, built once per run against the
installed torch, loads a package with `torch::inductor::AOTIModelPackageLoader` in a process without Python.

A cell's fresh child saves the model's inputs at every check point, runs the runner on the package its build made,
and compares what the runner wrote with eager PyTorch's outputs. The runner also times the first call (load to first
output) and the steady state; the child records those as the cell's latency.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch.jit._pickle import build_tensorlist, restore_type_tag
from torch.utils import cpp_extension

from ..evidence import outcomes
from ..evidence.outcomes import Outcome
from ..matrix import model as workload
from ..matrix.stages import FRESH_PHASES, STAGES
from . import latency
from .checks import check_points, compare_call, inputs, models
from .protocol import CPP_BUILD_TIMEOUT_S

if TYPE_CHECKING:
    from ..matrix.cells import Cell
    from .journal import Journal

SOURCE = Path(__file__).with_name("aoti_runner.cpp")
HEADER = "torch/csrc/inductor/aoti_package/model_package_loader.h"
# The runner's exit codes (aoti_runner.cpp): which phase failed.
EXIT_PHASES = {3: "load", 4: "run"}
USAGE_EXIT = 2


def toolchain() -> dict[str, Any]:
    """What building the runner needs, and which of it this machine lacks (`missing`, each naming its remedy)."""
    compiler = cpp_extension.get_cxx_compiler()  # $CXX, else c++: what torch's own extension builds use
    includes, libdirs = cpp_extension.include_paths(), cpp_extension.library_paths()
    missing = []
    if shutil.which(compiler) is None:
        missing.append(f"C++ compiler {compiler!r} not found: install one (apt install g++) or set CXX")
    if not any((Path(d) / HEADER).exists() for d in includes):
        missing.append(f"{HEADER} not under {includes[0]}: this torch ships without the AOTI C++ loader's headers")
    libs = ["torch", "torch_cpu", "c10"] + [
        lib for lib in ("torch_cuda", "c10_cuda") if any((Path(d) / f"lib{lib}.so").exists() for d in libdirs)
    ]
    for lib in libs:
        if not any((Path(d) / f"lib{lib}.so").exists() for d in libdirs):
            missing.append(f"lib{lib}.so not under {', '.join(libdirs)}")
    return {
        "compiler": compiler,
        "includes": includes,
        "libdirs": libdirs,
        "libs": libs,
        "missing": missing,
        "cxx11_abi": int(torch.compiled_with_cxx11_abi()),
    }


def build_command(tools: dict[str, Any], output: str) -> list[str]:
    # C++20: what torch >= 2.10's own extension builds use (its headers need it); --no-as-needed keeps libtorch_cuda,
    # whose static initialisers register the CUDA AOTI runner the loader looks up by the package's device.
    return [
        tools["compiler"],
        "-std=c++20",
        "-O2",
        f"-D_GLIBCXX_USE_CXX11_ABI={tools['cxx11_abi']}",
        str(SOURCE),
        "-o",
        output,
        *(f"-I{d}" for d in tools["includes"]),
        *(f"-L{d}" for d in tools["libdirs"]),
        *(f"-Wl,-rpath,{d}" for d in tools["libdirs"]),
        "-Wl,--no-as-needed",
        *(f"-l{lib}" for lib in tools["libs"]),
    ]


def build(journal: "Journal", output: str) -> None:
    """One phase, `runner_build`: passed with the binary's path, or failed with what is missing or the compiler's
    own message (an environment failure: no wrapping style is at fault)."""

    def make() -> Outcome:
        tools = toolchain()
        if tools["missing"]:
            return Outcome("failed", "CppToolchainMissing", "; ".join(tools["missing"]), detail={"toolchain": tools})
        command = build_command(tools, output)
        start = time.monotonic()
        done = subprocess.run(command, capture_output=True, text=True, timeout=CPP_BUILD_TIMEOUT_S)
        seconds = round(time.monotonic() - start, 1)
        if done.returncode != 0:
            return Outcome(
                "failed",
                "CppRunnerBuildFailed",
                (done.stderr or done.stdout)[-outcomes.MESSAGE_LIMIT :],
                detail={"command": " ".join(command), "build_seconds": seconds},
            )
        return Outcome("passed", detail={"path": output, "build_seconds": seconds, "command": " ".join(command)})

    journal.run("runner_build", make)


def run_package(
    runner: str, package: str, points: list[tuple], device: str, workdir: Path, timeout_s: float
) -> tuple[Outcome, list | None, dict]:
    """Run the runner on `package` with the flat inputs of each check point: (the load's outcome, the outputs per
    point or None, the runner's report). The steady state is timed only where latency is recorded (CUDA)."""
    files = {name: workdir / f"cpp_{name}" for name in ("inputs.pt", "outputs.pt", "report.json")}
    torch.save([[t.detach().cpu().contiguous() for t in point] for point in points], files["inputs.pt"])
    warmup, reps = (latency.WARMUP, latency.REPS) if device == "cuda" else (0, 0)
    command = [
        runner,
        package,
        *(str(files[n]) for n in ("inputs.pt", "outputs.pt", "report.json")),
        device,
        str(warmup),
        str(reps),
        latency.lock_path() or "",
    ]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired as exc:
        return outcomes.timed_out(timeout_s, "the C++ runner", str(exc.stderr or "")[-3000:]), None, {}
    report = json.loads(files["report.json"].read_text()) if files["report.json"].exists() else {}
    if done.returncode < 0 or (done.returncode and not report):
        return outcomes.from_exit(done.returncode, done.stderr[-3000:], "the C++ runner"), None, report
    if done.returncode == USAGE_EXIT:  # inputs it could not read: ours, not the cell's
        raise RuntimeError(f"the C++ runner could not read its inputs: {report.get('error')}")
    if done.returncode:
        return (
            Outcome(
                "failed",
                report.get("error_type"),
                report.get("error"),
                detail={"runner_phase": EXIT_PHASES.get(done.returncode, report.get("phase"))},
            ),
            None,
            report,
        )
    # torch::jit::pickle_save rebuilds typed lists with these two functions, which weights_only refuses unless told.

    with torch.serialization.safe_globals([build_tensorlist, restore_type_tag]):
        outputs = torch.load(files["outputs.pt"], weights_only=True)
    return Outcome("passed"), outputs, report


def run(journal: "Journal", cell: "Cell", package_path: str, runner_path: str, timeout_s: float) -> None:
    """The cell's fresh child: `aoti_cpp_load` (the runner loaded the package and ran it), then `aoti_cpp_run` (its
    outputs against eager at every check point, with its latency)."""
    load_phase, run_phase = FRESH_PHASES[STAGES[cell.stage].family]
    workdir = Path(journal.path).parent
    holder: dict[str, Any] = {}

    def load() -> Outcome:
        _, holder["reference"] = models(cell)
        holder["points"] = check_points(cell)
        outcome, holder["outputs"], holder["report"] = run_package(
            runner_path,
            package_path,
            [inputs(cell, p) for p in holder["points"]],
            workload.torch_device(cell.device),
            workdir,
            timeout_s,
        )
        return outcome

    def check() -> Outcome:
        comparisons = []
        with torch.no_grad():
            for point, got in zip(holder["points"], holder["outputs"], strict=False):
                got = tuple(t.to(workload.torch_device(cell.device)) for t in got)  # the runner wrote host copies
                comparisons += compare_call(got, holder["reference"], inputs(cell, point), workload.label(point), cell)
        result = outcomes.from_comparisons(comparisons)
        report = holder["report"]
        if result.kind == "passed" and latency.wanted(cell):
            result.detail["latency"] = latency.entry(
                report["first_call_ms"],
                dict(
                    zip(
                        map(workload.label, holder["points"]),
                        zip(report["steady_us"], report["steady_best_us"], strict=False),
                        strict=False,
                    )
                ),
                report["clock"],
            )
        return result

    if journal.run(load_phase, load).kind == "passed":
        journal.run(run_phase, check)
