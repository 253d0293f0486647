"""The environment doctor and its canary.

The canary is a plain model with no Triton kernel, exported, AOTI-compiled in one child and loaded and run in a
fresh one, exactly as the matrix does it (compat.child.canary). If the canary fails, AOTInductor is broken for every
model here: an AOTI cell that fails too is an environment failure, not a fault of its wrapping style.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from .environment import crash_remedy, describe
from .launcher import Launcher
from .outcomes import Outcome

CANARY_TIMEOUT = 900.0


def canary_device(device: str) -> str:
    """The torch device a matrix device's canary runs on (cpu_interpret's plain model is a CPU model)."""
    return "cuda" if device == "cuda" else "cpu"


def run_canary(launcher: Launcher, workdir: Path, device: str, env: dict[str, str] | None = None) -> Outcome:
    """Build in one child, load and run in another; the outcome of the first phase that did not pass."""
    package = str(workdir / "canary.pt2")
    args, env = {"device": device, "package_path": package}, env or {}
    built = launcher.run("canary_build", args, workdir=workdir / "build", env=env,
                         timeout=CANARY_TIMEOUT).outcome("aoti_compile")
    if built.kind != "passed":
        return built
    return launcher.run("canary_run", args, workdir=workdir / "run", env=env, timeout=CANARY_TIMEOUT).outcome("aoti_run")


def main(argv: list[str] | None = None) -> int:
    env = describe()
    gpus = ", ".join(f"{g['name']} (sm {g['capability']})" for g in env["gpus"]) or "none"
    print(f"torch     {env['torch']}\ntriton    {env['triton']}\nCUDA      {env['cuda']}\ndriver    {env['driver']}\n"
          f"GPUs      {gpus}\nPython    {env['python']}\nplatform  {env['platform']}\n"
          f"LD_PRELOAD {env['ld_preload'] or '(unset)'}")
    device = "cuda" if env["gpus"] else "cpu"
    print(f"canary: a plain model with no Triton kernel, AOTI-compiled and loaded on {device} (about a minute) ...",
          flush=True)
    with tempfile.TemporaryDirectory(prefix="compat-doctor-") as tmp:
        launcher = Launcher(Path(tmp))
        try:
            outcome = run_canary(launcher, Path(tmp), device)
        finally:
            launcher.close()
    if outcome.kind == "passed":
        print("canary: OK: AOTInductor compiles, loads and matches eager here")
        return 0
    print(f"canary: FAILED in {outcome.detail.get('phase')}: {outcome.summary()}")
    remedy = crash_remedy(outcome)
    print(f"remedy: {remedy}" if remedy else "remedy: none known; the child's log tail follows\n"
          + outcome.detail.get("stderr_tail", "")[-2000:])
    return 1


if __name__ == "__main__":
    sys.exit(main())
