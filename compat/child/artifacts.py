"""What each export-based family makes from one exported program: the one table the matrix's build and the fuzz
tests share. Each maker returns (name, callable) pairs: the artifacts a stage of that family runs.

Each AOTI family (`LIBRARIES`) is two steps, compile and load, because the matrix loads its library in a fresh
process.
"""

from __future__ import annotations

import contextlib
import logging
import time
import warnings
from pathlib import Path
from typing import Any, Callable

import torch

from ..errors import RegistryError
from ..matrix.stages import BUILD_PHASES, PACKAGED, RUNS_LIBRARY_OF
from . import compile_threads, packages, toolchain
from .protocol import LIBRARY_FILES, PROGRAM

Artifacts = list[tuple[str, Callable]]


def module(ep, workdir: Path) -> Artifacts:
    return [("module", ep.module())]


def saved(ep, workdir: Path) -> Artifacts:
    """`torch.export.save` and `load` in this process."""
    path = workdir / PROGRAM
    torch.export.save(ep, path)
    return [("loaded", torch.export.load(path).module())]


def decompositions(ep) -> list[tuple[str, Callable[[], Any]]]:
    """The two decompositions, the default and with decompose_custom_triton_ops, each made when called (either may
    raise): (phase name, maker of the decomposed program)."""
    return [
        ("decompose", lambda: ep.run_decompositions()),
        ("decompose_triton_ops", lambda: ep.run_decompositions(decompose_custom_triton_ops=True)),
    ]


def decomposed(ep, workdir: Path) -> Artifacts:
    return [(name, make().module()) for name, make in decompositions(ep)]


def compile_package(ep, package_path: str, inductor_configs: dict | None = None) -> dict[str, Any]:
    """`aoti_compile_and_package`, with the run's detected CPU ISAs; returns how long it took."""

    def make():
        torch._inductor.aoti_compile_and_package(ep, package_path=package_path, inductor_configs=inductor_configs)

    return _compile(make)


def compile_legacy(ep, library_path: str) -> dict[str, Any]:
    """The older API, as write-up 002 calls it: `torch._inductor.aot_compile` of the exported program's module, at
    its example inputs, to a shared library; records any deprecation it announces."""

    def make():
        with deprecations() as said:
            torch._inductor.aot_compile(
                ep.module(), ep.example_inputs[0], options={"aot_inductor.output_path": library_path}
            )
        return {"deprecation": said} if said else {}

    return _compile(make)


def _compile(make: Callable[[], dict | None]) -> dict[str, Any]:
    start = time.monotonic()
    isa = toolchain.apply()
    waited = round(time.monotonic() - start, 1)
    start = time.monotonic()
    said = make() or {}
    return {"compile_seconds": round(time.monotonic() - start, 1), "isa": isa, "isa_wait_seconds": waited, **said}


def load_package(package_path: str):
    """`aoti_load_package`, with the run's detected CPU ISAs: loading checks the package's recorded CPU ISA against
    this machine's, which would run Inductor's whole detection again (56 s per load on the H100 runner)."""
    toolchain.apply()
    return torch._inductor.aoti_load_package(package_path)


def load_legacy(library_path: str, device: str):
    """`torch._export.aot_load`: (the runner, any deprecation it announced)."""
    with deprecations() as said:
        runner = torch._export.aot_load(library_path, device)
    return runner, said


@contextlib.contextmanager
def deprecations():
    """The AOTI API's deprecation notices said while inside, as warnings or as torch's log lines (torch._export logs
    its own)."""
    said: list[str] = []

    class Listen(logging.Handler):
        def emit(self, record):
            if "deprecat" in record.getMessage().lower() and "aot_" in record.getMessage():
                said.append(record.getMessage())

    handler, logger = Listen(), logging.getLogger("torch")
    logger.addHandler(handler)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            yield said
    finally:
        logger.removeHandler(handler)
    # The API's own notices only (they name it), not other deprecations met on the way (pytree's, say).
    said += [
        f"{w.category.__name__}: {w.message}"
        for w in caught
        if "aot_" in str(w.message)
        and (issubclass(w.category, (DeprecationWarning, FutureWarning)) or "deprecat" in str(w.message).lower())
    ]


def _autotuned(ep, path: str) -> dict[str, Any]:
    with compile_threads.autotuning():
        return compile_package(ep, path, {"max_autotune": True})


# The AOTI families' libraries: (file name in the build's work directory, how it is compiled, how it is loaded).
LIBRARIES: dict[str, tuple[str, Callable, Callable]] = {
    "aoti": (LIBRARY_FILES["aoti"], compile_package, lambda path, device: (load_package(path), [])),
    "aoti_max_autotune": (
        LIBRARY_FILES["aoti_max_autotune"],
        _autotuned,
        lambda path, device: (load_package(path), []),
    ),
    "aoti_legacy": (LIBRARY_FILES["aoti_legacy"], compile_legacy, load_legacy),
}
if list(LIBRARIES) != list(LIBRARY_FILES) or set(LIBRARIES) != set(PACKAGED):
    raise RegistryError(f"AOTI families without a library: {sorted(set(LIBRARIES) ^ set(PACKAGED))}")


def compile_library(family: str, ep, path: str) -> dict[str, Any]:
    """`family`'s library of `ep` at `path`: compiled once per distinct program in a run (compat.child.packages).
    A program the key cannot read is compiled here, unshared: keying is the harness's saving, never a cell's
    outcome (a tensor subclass's constant stopped it with its own error on the H100)."""

    def compile_here() -> dict[str, Any]:
        return LIBRARIES[family][1](ep, path)

    try:
        key = packages.program_key(ep, family)
    except Exception as exc:  # noqa: BLE001 - whatever stops the key, the compile is the cell's observation
        return {**compile_here(), "package_key": None, "unkeyed": f"{type(exc).__name__}: {exc}"[:300]}
    return packages.compiled_once(key, path, compile_here)


def library(family: str, device: str) -> Callable[[Any, Path], Artifacts]:
    """Compiled and loaded in this process (the fuzz tests'; the matrix loads in a fresh one)."""
    filename, _, load = LIBRARIES[family]

    def made(ep, workdir: Path) -> Artifacts:
        path = str(workdir / filename)
        compile_library(family, ep, path)
        return [(Path(filename).stem, load(path, device)[0])]

    return made


MAKERS: dict[str, Callable[[Any, Path], Artifacts]] = {
    "export": module,
    "save_load": saved,
    "decompose": decomposed,
}


def maker(family: str, device: str) -> Callable[[Any, Path], Artifacts]:
    """What a family makes from an exported program, on a torch device (an AOTI library loads for one)."""
    return library(family, device) if family in PACKAGED else MAKERS[family]


MADE = set(MAKERS) | set(PACKAGED) | set(RUNS_LIBRARY_OF)
if MADE != set(BUILD_PHASES):  # a new family must say what it makes, never fall into another
    raise RegistryError(f"export-based families without a maker: {sorted(set(BUILD_PHASES) ^ MADE)}")
