"""What each export-based family makes from one exported program: the one table the matrix's build and the fuzz
tests share. Each maker returns (name, callable) pairs: the artifacts a stage of that family runs.

The AOTI family is two steps, compile and load, because the matrix loads its package in a fresh process.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable

from ..errors import RegistryError
from ..stages import BUILD_PHASES

Artifacts = list[tuple[str, Callable]]
PROGRAM, PACKAGE = "program.pt2", "package.pt2"  # file names in the work directory of the child that makes them


def module(ep, workdir: Path) -> Artifacts:
    return [("module", ep.module())]


def saved(ep, workdir: Path) -> Artifacts:
    """`torch.export.save` and `load` in this process."""
    import torch

    path = workdir / PROGRAM
    torch.export.save(ep, path)
    return [("loaded", torch.export.load(path).module())]


def decompositions(ep) -> list[tuple[str, Callable[[], Any]]]:
    """The two decompositions, the default and with decompose_custom_triton_ops, each made when called (either may
    raise): (phase name, maker of the decomposed program)."""
    return [("decompose", lambda: ep.run_decompositions()),
            ("decompose_triton_ops", lambda: ep.run_decompositions(decompose_custom_triton_ops=True))]


def decomposed(ep, workdir: Path) -> Artifacts:
    return [(name, make().module()) for name, make in decompositions(ep)]


def compile_package(ep, package_path: str) -> dict[str, Any]:
    """`aoti_compile_and_package`, with the run's detected CPU ISAs; returns how long it took."""
    import torch

    from . import toolchain

    start = time.monotonic()
    isa = toolchain.apply()
    waited = round(time.monotonic() - start, 1)
    start = time.monotonic()
    torch._inductor.aoti_compile_and_package(ep, package_path=package_path)
    return {"compile_seconds": round(time.monotonic() - start, 1), "isa": isa, "isa_wait_seconds": waited}


def load_package(package_path: str):
    """`aoti_load_package`, with the run's detected CPU ISAs: loading checks the package's recorded CPU ISA against
    this machine's, which would run Inductor's whole detection again (56 s per load on the H100 runner)."""
    import torch

    from . import toolchain

    toolchain.apply()
    return torch._inductor.aoti_load_package(package_path)


def packaged(ep, workdir: Path) -> Artifacts:
    """Compiled and loaded in this process (the fuzz tests'; the matrix loads in a fresh one)."""
    path = str(workdir / PACKAGE)
    compile_package(ep, path)
    return [("package", load_package(path))]


MAKERS: dict[str, Callable[[Any, Path], Artifacts]] = {
    "export": module,
    "save_load": saved,
    "decompose": decomposed,
    "aoti": packaged,
}
if set(MAKERS) != set(BUILD_PHASES):  # a new export-based family must say what it makes, never fall into another
    raise RegistryError(f"export-based families without a maker: {sorted(set(BUILD_PHASES) ^ set(MAKERS))}")
