"""The environment doctor and its canary.

The canary is a plain model with no Triton kernel, exported, AOTI-compiled in one child process and loaded and run
in a fresh one, exactly as the matrix does it. If the canary fails, AOTInductor is broken for every model here: an
AOTI cell that fails too is an environment failure, not a fault of its wrapping style.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from . import numerics
from .environment import crash_remedy, describe
from .isolation import run_child
from .outcomes import Outcome

if TYPE_CHECKING:
    from .isolation import Journal

CANARY_TIMEOUT = 900.0


def _plain_model(device: str):
    import torch

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 8))
    x = torch.randn(4, 16, generator=torch.Generator().manual_seed(1))
    return model.to(device).eval(), x.to(device)


def child_canary_build(journal: "Journal", device: str, package_path: str) -> None:
    import torch

    model, x = _plain_model(device)
    holder = {}

    def export() -> Outcome:
        holder["ep"] = torch.export.export(model, (x,), strict=False)
        return Outcome("passed")

    if journal.run("export", export).kind == "passed":
        journal.run("aoti_compile", lambda: Outcome(
            "passed", detail={"package": torch._inductor.aoti_compile_and_package(holder["ep"],
                                                                                package_path=package_path)}))


def child_canary_run(journal: "Journal", device: str, package_path: str) -> None:
    import torch

    model, x = _plain_model(device)
    holder = {}

    def load() -> Outcome:
        holder["runner"] = torch._inductor.aoti_load_package(package_path)
        return Outcome("passed")

    def run() -> Outcome:
        with torch.no_grad():
            c = numerics.compare(holder["runner"](x), model(x), "canary")
        return Outcome("passed" if c["ok"] else "mismatch", numerics=[c])

    if journal.run("aoti_load", load).kind == "passed":
        journal.run("aoti_run", run)


def canary_device(device: str) -> str:
    """The torch device a matrix device's canary runs on (cpu_interpret's plain model is a CPU model)."""
    return "cuda" if device == "cuda" else "cpu"


def run_canary(workdir: Path, device: str) -> Outcome:
    """Build in one child, load and run in another; the outcome of the first phase that did not pass."""
    package = str(workdir / "canary.pt2")
    build = run_child("compat.doctor.child_canary_build", {"device": device, "package_path": package},
                      workdir=workdir / "build", env={}, timeout=CANARY_TIMEOUT)
    built = build.outcome("aoti_compile")
    if built.kind != "passed":
        return built
    return run_child("compat.doctor.child_canary_run", {"device": device, "package_path": package},
                     workdir=workdir / "run", env={}, timeout=CANARY_TIMEOUT).outcome("aoti_run")


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
        outcome = run_canary(Path(tmp), device)
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
