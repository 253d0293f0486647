"""The AOTI canary's children: a plain model with no Triton kernel, exported and AOTI-compiled in one child, loaded and
run in a fresh one, exactly as the matrix's AOTI stages do it. If it fails, AOTInductor is broken here for every model
(compat.run.doctor, compat.run.session)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from ..evidence import numerics
from ..evidence.outcomes import Outcome
from . import artifacts, cpp
from .protocol import CPP_RUN_TIMEOUT_S

if TYPE_CHECKING:
    from .journal import Journal


def _plain_model(device: str):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 8))
    x = torch.randn(4, 16, generator=torch.Generator().manual_seed(1))
    return model.to(device).eval(), x.to(device)


def build(journal: "Journal", device: str, package_path: str) -> None:
    model, x = _plain_model(device)
    holder = {}

    def export() -> Outcome:
        holder["ep"] = torch.export.export(model, (x,), strict=False)
        return Outcome("passed")

    if journal.run("export", export).kind == "passed":
        journal.run(
            "aoti_compile", lambda: Outcome("passed", detail=artifacts.compile_package(holder["ep"], package_path))
        )


def run(journal: "Journal", device: str, package_path: str) -> None:
    model, x = _plain_model(device)
    holder = {}

    def load() -> Outcome:
        holder["runner"] = artifacts.load_package(package_path)
        return Outcome("passed")

    def check() -> Outcome:
        with torch.no_grad():
            c = numerics.compare(holder["runner"](x), model(x), "canary")
        return Outcome("passed" if c["ok"] else "mismatch", numerics=[c])

    if journal.run("aoti_load", load).kind == "passed":
        journal.run("aoti_run", check)


def run_cpp(journal: "Journal", device: str, package_path: str, runner_path: str) -> None:
    """The canary's package run by the C++ runner: if a plain model fails there, the C++ loader is broken here."""
    model, x = _plain_model(device)
    holder: dict[str, Any] = {}

    def load() -> Outcome:
        outcome, holder["outputs"], _ = cpp.run_package(
            runner_path, package_path, [(x,)], device, Path(journal.path).parent, CPP_RUN_TIMEOUT_S
        )
        return outcome

    def check() -> Outcome:
        with torch.no_grad():
            c = numerics.compare(holder["outputs"][0][0], model(x).cpu(), "canary")
        return Outcome("passed" if c["ok"] else "mismatch", numerics=[c])

    if journal.run("aoti_cpp_load", load).kind == "passed":
        journal.run("aoti_cpp_run", check)
