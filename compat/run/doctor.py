"""The environment doctor and its canary.

The canary is a plain model with no Triton kernel, exported, AOTI-compiled in one child and loaded and run in a
fresh one, exactly as the matrix does it (compat.child.canary). If the canary fails, AOTInductor is broken for every
model here: an AOTI cell that fails too is an environment failure, not a fault of its wrapping style. The doctor also
builds the aoti_cpp stages' C++ runner (naming what the toolchain lacks) and runs the canary's package with it.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from ..child.protocol import CPP_BUILD_TIMEOUT_S, CPP_RUNNER
from ..evidence.outcomes import Outcome
from .environment import crash_remedy, describe
from .launcher import Launcher

CANARY_TIMEOUT = 900.0
CANARY_PACKAGE = "canary.pt2"  # in run_canary's work directory


def canary_device(device: str) -> str:
    """The torch device a matrix device's canary runs on (cpu_interpret's plain model is a CPU model)."""
    return "cuda" if device == "cuda" else "cpu"


def run_canary(launcher: Launcher, workdir: Path, device: str, env: dict[str, str] | None = None) -> Outcome:
    """Build in one child, load and run in another; the outcome of the first phase that did not pass."""
    package = str(workdir / CANARY_PACKAGE)
    args, env = {"device": device, "package_path": package}, env or {}
    built = launcher.run("canary_build", args, workdir=workdir / "build", env=env, timeout=CANARY_TIMEOUT).outcome(
        "aoti_compile"
    )
    if built.kind != "passed":
        return built
    return launcher.run("canary_run", args, workdir=workdir / "run", env=env, timeout=CANARY_TIMEOUT).outcome(
        "aoti_run"
    )


def build_runner(launcher: Launcher, workdir: Path, env: dict[str, str] | None = None) -> Outcome:
    """The C++ runner built in a child (compat.child.cpp): passed with its path, or what is missing, or the
    compiler's message."""
    return launcher.run(
        "cpp_runner_build",
        {"output": str(workdir / CPP_RUNNER)},
        workdir=workdir,
        env=env or {},
        timeout=CPP_BUILD_TIMEOUT_S + 60,
    ).outcome("runner_build")


def run_cpp_canary(
    launcher: Launcher, workdir: Path, device: str, package: str, runner: str, env: dict[str, str] | None = None
) -> Outcome:
    """The canary's package (made by run_canary in `package`) loaded and run by the C++ runner."""
    return launcher.run(
        "canary_cpp",
        {"device": device, "package_path": package, "runner_path": runner},
        workdir=workdir,
        env=env or {},
        timeout=CANARY_TIMEOUT,
    ).outcome("aoti_cpp_run")


def _report(what: str, outcome: Outcome, ok: str) -> bool:
    if outcome.kind == "passed":
        print(f"{what}: OK: {ok}")
        return True
    print(f"{what}: FAILED in {outcome.detail.get('phase')}: {outcome.summary()}")
    remedy = crash_remedy(outcome)
    print(
        f"remedy: {remedy}"
        if remedy
        else "remedy: none known; the child's log tail follows\n" + outcome.detail.get("stderr_tail", "")[-2000:]
    )
    return False


def main(argv: list[str] | None = None) -> int:
    env = describe()
    gpus = ", ".join(f"{g['name']} (sm {g['capability']})" for g in env["gpus"]) or "none"
    print(
        f"torch     {env['torch']}\ntriton    {env['triton']}\nCUDA      {env['cuda']}\ndriver    {env['driver']}\n"
        f"GPUs      {gpus}\nPython    {env['python']}\nplatform  {env['platform']}\n"
        f"LD_PRELOAD {env['ld_preload'] or '(unset)'}"
    )
    device = "cuda" if env["gpus"] else "cpu"
    print(
        f"canary: a plain model with no Triton kernel, AOTI-compiled and loaded on {device} (about a minute) ...",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="compat-doctor-") as tmp:
        launcher, work = Launcher(Path(tmp)), Path(tmp)
        try:
            ok = _report(
                "canary",
                run_canary(launcher, work / "canary", device),
                "AOTInductor compiles, loads and matches eager here",
            )
            print("C++ toolchain: building the runner of the aoti_cpp stages against this torch ...", flush=True)
            runner = build_runner(launcher, work / "runner")
            if runner.kind != "passed":
                print(
                    f"C++ toolchain: FAILED: {runner.error_type}: {runner.message}\n"
                    f"remedy: the aoti_cpp stages need what is named above; every other stage runs without it"
                )
                return 1
            print(f"C++ toolchain: OK: runner built in {runner.detail['build_seconds']} s ({runner.detail['command']})")
            if ok:
                ok = _report(
                    "C++ canary",
                    run_cpp_canary(
                        launcher,
                        work / "canary-cpp",
                        device,
                        str(work / "canary" / CANARY_PACKAGE),
                        runner.detail["path"],
                    ),
                    "the canary's package loads and matches eager from C++ without Python",
                )
        finally:
            launcher.close()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
