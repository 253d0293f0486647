"""Which cells a run holds, decided once from pytest's configuration: each axis's `--compat-...s` option, else the
ini's `compat_...s` key; the `--compat-cells` list; the tier. A name that is not in the matrix, a device this machine
cannot run, and a selection that together names no cell stop the run before any cell (pytest.UsageError)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from ..matrix import tiers
from ..matrix.cells import (
    DEVICES,
    SUITE_CASES,
    Cell,
    check_names,
    gated_kernels,
    matrix,
    read_cell_list,
    why_none,
)
from .options import AXES


@dataclass(frozen=True)
class Selection:
    axes: dict[str, list[str]]  # the names each selected axis runs
    only: set[str] | None  # the cell ids of a --compat-cells list
    tier: str
    narrowed: dict[str, list[str]]  # what the command line narrowed the repository's selection to (in a results name)
    require_declared: list[str]  # namespaces whose every op must be declared
    cells: list[Cell]


def _names(config, axis: str) -> tuple[list[str], bool]:
    """An axis's names, and whether the command line gave them (else the ini did, or neither)."""
    given = config.getoption(f"compat_{axis}s")
    names = given or config.getini(f"compat_{axis}s")
    return ([n.strip() for n in names.split(",") if n.strip()] if names else []), bool(given)


def _check_devices(devices: list[str]) -> None:
    """A device the command line asks for that this machine cannot run stops the run (the ini's list is a
    repository's default, for laptops too: its devices skip as ever)."""
    for device in devices:
        reason = DEVICES[device].unavailable_reason()
        if reason:
            raise pytest.UsageError(
                f"--compat-devices names {device}, which this machine cannot run: {reason}; no cell was run"
            )


def _narrowed(config, axes: dict[str, list[str]], given: set[str]) -> dict[str, list[str]]:
    narrowed = {f"{axis}s": names for axis, names in axes.items() if axis in given}
    if config.getoption("compat_cells"):
        narrowed["cells"] = [Path(config.getoption("compat_cells")).stem]
    if config.getoption("compat_tier") != "full":
        narrowed["tier"] = [config.getoption("compat_tier")]
    return narrowed


def _default_kernels(cases: tuple[str, ...]) -> list[str]:
    kernels = gated_kernels(cases)
    if not kernels:
        raise pytest.UsageError(
            f"compat_cases ({', '.join(cases)}) declare no kernel or op: declare yours with register_kernel / "
            f"register_op (the suite's own kernels are gated where compat_cases names {SUITE_CASES}, or with "
            f"--compat-kernels); no cell was run"
        )
    return kernels


def selection(config, cases: tuple[str, ...]) -> Selection:
    """The run's selection; `cases` already imported (they add kernels to the registries the names are checked
    against)."""
    axes, given = {}, set()
    for axis in AXES:
        names, from_options = _names(config, axis)
        if names:
            axes[axis] = names
            where = f"--compat-{axis}s" if from_options else f"compat_{axis}s in {config.inipath}"
            check_names(axis, names, where)
        if from_options:
            given.add(axis)
    _check_devices(axes.get("device", []) if "device" in given else [])
    only = read_cell_list(config.getoption("compat_cells"))
    narrowed = _narrowed(config, axes, given)
    if "kernel" not in axes and only is None:  # a cell list names its kernels itself
        axes["kernel"] = _default_kernels(cases)
    named = config.getoption("compat_require_declared")
    require = [n.strip() for n in named.split(",") if n.strip()] if named else config.getini("compat_require_declared")
    tier = config.getoption("compat_tier")
    cells = tiers.select([c for c in matrix(axes) if only is None or c.id in only], tier)
    if axes and not cells:
        # Each name is valid, but together they name nothing the matrix holds (say, a CUDA-only stage on a CPU
        # device): a usage error, not a green run of nothing.
        raise pytest.UsageError(
            "the selection matches no cell of the matrix: " + "; ".join(why_none(axes)[:6]) + "; no cell was run"
        )
    return Selection(axes, only, tier, narrowed, require, cells)
