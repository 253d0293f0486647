"""Importing the modules that declare a user's kernels and ops (`compat_cases`), in the run's process, its warm
servers and its children alike: a module that cannot be imported is named with the error, before any cell runs.

A module that initialises CUDA as it is imported (torch's `_lazy_init`, or Triton's driver, which a cases module
reaches by reading the device's properties at import, as Triton's tutorials and real libraries that pick kernels by
GPU model do) is found where the run imports it first, and imported by each child after its fork, never by the warm
servers: a process that initialised CUDA cannot hand it to a forked child, whose every CUDA call would then fail.
"""

from __future__ import annotations

import contextlib
import importlib
import traceback
from importlib.metadata import entry_points
from typing import Iterable, Iterator

from ..errors import CompatError

CASES_GROUP = "triton_export_compat.cases"  # entry points of installed packages that declare kernels
FIX = (
    "name the module in compat_cases (a run imports those in each child, after its fork, where their import "
    "touches CUDA); or read the device when a launch first needs it (inside a function, cached with "
    "functools.cache), not at import; or start children fresh (a new interpreter per task: slower): "
    "--compat-children=fresh, or compat_children = fresh in the pytest ini"
)


def installed_case_modules() -> list[str]:
    """The modules installed packages declare kernels in (their CASES_GROUP entry points)."""
    return [ep.value.split(":")[0] for ep in entry_points(group=CASES_GROUP)]


@contextlib.contextmanager
def cuda_initialisations() -> Iterator[list[str]]:
    """Record, while inside, what initialises CUDA, or tries to where there is none: each call of torch's lazy
    initialisation and of Triton's driver factory (where it was called from, outside torch, triton and this
    package), and a Triton driver found made afterwards (older Triton binds its factory where it cannot be watched);
    the calls still happen."""
    calls: list[str] = []
    driver = importlib.import_module("triton.runtime.driver")
    import torch.cuda  # here, not at the top: a fresh child's journal starts before torch loads (seconds)

    watched = [
        (torch.cuda, "_lazy_init", "torch.cuda's initialisation"),
        (driver, "_create_driver", "Triton's GPU driver made (as reading the device's properties does)"),
    ]
    originals = [getattr(owner, name, None) for owner, name, _ in watched]

    def watch(original, what):
        def call(*args, **kwargs):
            calls.append(f"{what}, called at {_caller()}")
            return original(*args, **kwargs)

        return call

    made_before = _triton_driver_made()
    for (owner, name, what), original in zip(watched, originals, strict=False):
        if original is not None:
            setattr(owner, name, watch(original, what))
    try:
        yield calls
    finally:
        for (owner, name, _), original in zip(watched, originals, strict=False):
            if original is not None:
                setattr(owner, name, original)
        if not made_before and _triton_driver_made() and not calls:
            calls.append("Triton's GPU driver, made by triton.runtime.driver.active")


def _triton_driver_made() -> bool:
    """Whether Triton made its active driver (which initialises the GPU's): read from the driver config's own state,
    without touching the property that would make it (Triton 3.4+ keeps `_default`/`_active`, older a lazy proxy)."""
    config = importlib.import_module("triton.runtime.driver").driver
    return any(value is not None and getattr(value, "_obj", value) is not None for value in vars(config).values())


def _caller() -> str:
    for frame in reversed(traceback.extract_stack()[:-2]):
        if not any(part in frame.filename for part in ("/torch/", "/triton/", "/compat/", "importlib")):
            return f"{frame.filename}:{frame.lineno}"
    return "an import"


def import_cases(modules: Iterable[str], where: str = "compat_cases", forks: bool = True) -> list[str]:
    """Import each module, refusing one that cannot be imported or, where this process forks children (`forks`: a
    warm server), one that initialises CUDA as it is imported (CompatError, naming the module, the call and the
    fix). Returns the modules whose import initialised CUDA, or probed for it: a run's warm servers leave those to
    their children. A module imported before is not imported again, nor checked."""
    touched = []
    for module in modules:
        with cuda_initialisations() as calls:
            try:
                importlib.import_module(module)
            except Exception as exc:  # noqa: BLE001 - any failure to import is the user's to see, named
                if not (calls and forks):
                    raise CompatError(f"{where}: cannot import {module!r}: {type(exc).__name__}: {exc}") from None
        if calls and forks:
            import torch.cuda  # loaded by now (the watch imported it); here, as cuda_initialisations does

            did = (
                "initialises CUDA"
                if torch.cuda.is_available()
                else "probes for a GPU (none here: on a GPU runner the same call initialises CUDA)"
            )
            raise CompatError(
                f"{where}: importing {module!r} {did}: {calls[0]}. This process forks a child per "
                f"task, and a forked child cannot use a CUDA the parent initialised, so every cell "
                f"would fail at its first CUDA call. Fix: {FIX}"
            )
        if calls:
            touched.append(module)
    return touched
