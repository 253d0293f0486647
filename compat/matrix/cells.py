"""A cell is one (kernel, style, stage, dtype, device); the matrix is the product of the registries."""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping

import torch

from ..errors import CompatError, RegistryError
from .contract import MISSING_FEATURE
from .kernels import KERNELS
from .stages import RUNS_LIBRARY_OF, STAGES
from .styles import STYLES


@dataclass(frozen=True)
class Device:
    name: str
    doc: str
    # Environment of every child process that runs this device's cells. Triton's interpreter must be switched on
    # before `@triton.jit` decorates anything, hence a process of its own.
    env: tuple[tuple[str, str], ...]
    # Kernels run in Triton's interpreter: nothing to package, since no one ships the interpreter in an AOTI package.
    interpreted: bool = False
    dtypes: tuple[str, ...] | None = None  # None: every dtype of the kernel
    # Elements of the largest generated input in the fuzz tests, and the top of an exported artifact's range.
    fuzz_elements: int = 2**20

    def unavailable_reason(self) -> str | None:
        if self.name == "cuda":
            if not torch.cuda.is_available():
                return "no CUDA device on this machine (torch.cuda.is_available() is False)"
        return None


DEVICES: dict[str, Device] = {
    d.name: d
    for d in (
        Device("cuda", "NVIDIA GPU through CUDA; Triton compiles the kernel for it.", env=()),
        Device(
            "cpu",
            "CPU tensors, Triton as installed: only styles with a CPU kernel run here (a Triton kernel "
            "has no CPU backend to launch on).",
            env=(),
        ),
        Device(
            "cpu_interpret",
            "CPU tensors with Triton's interpreter on (TRITON_INTERPRET=1): kernels run in numpy.",
            # float32 only: the interpreter computes in numpy, so float16 / bfloat16 there test numpy's emulation,
            # not the kernel's dtype handling, at three times a CPU run's cost.
            # 2**14 elements: the interpreter launches a program per block in numpy, about 3 s per 1e6 elements
            # for the plain kernel and over a minute for host TMA.
            env=(("TRITON_INTERPRET", "1"),),
            interpreted=True,
            dtypes=("float32",),
            fuzz_elements=2**14,
        ),
    )
}


ANY_DTYPE = "*"  # an expectations key's dtype that stands for every dtype of its cell


@dataclass(frozen=True, order=True)
class Cell:
    kernel: str
    style: str
    stage: str
    dtype: str
    device: str

    @property
    def id(self) -> str:
        return "-".join((self.kernel, self.style, self.stage, self.dtype, self.device))

    def unavailable_reason(self) -> str | None:
        """Why this machine cannot run the cell (a skip, never an expectation): no GPU, or no API the kernel needs."""
        return DEVICES[self.device].unavailable_reason() or KERNELS[self.kernel].requires(self.device)

    def axes(self) -> dict[str, str]:
        return {
            "kernel": self.kernel,
            "style": self.style,
            "stage": self.stage,
            "dtype": self.dtype,
            "device": self.device,
        }


def registries() -> dict[str, tuple[str, ...]]:
    """Valid names per axis, in declaration order."""
    return {axis: tuple(_registry(axis)) for axis in ("kernel", "style", "stage", "dtype", "device")}


def _registry(axis: str) -> Mapping[str, object]:
    """An axis's valid names, in declaration order, as the registry holds them (read for every id a run parses)."""
    if axis == "dtype":
        return dict.fromkeys(d for k in KERNELS.values() for d in k.dtypes)
    named: dict[str, Mapping[str, object]] = {"kernel": KERNELS, "style": STYLES, "stage": STAGES, "device": DEVICES}
    return named[axis]


SUITE_CASES = "compat.matrix.kernels"  # the module that declares the suite's own kernels


def gated_kernels(cases: Iterable[str]) -> list[str]:
    """The kernel axis a run takes unless told otherwise: the kernels and ops its cases modules declare. The suite's
    own kernels are always registered (they are the styles' examples) but are gated only where the cases name their
    module, as the suite's own repository does, or where no cases module is named at all: a user's first run is their
    ops, not 5,000 cells of ours."""
    cases = tuple(cases)
    return [
        name for name, kernel in KERNELS.items() if not cases or SUITE_CASES in cases or kernel.module != SUITE_CASES
    ]


def check_names(axis: str, names: Iterable[str], where: str) -> None:
    unknown = [n for n in names if not _known(axis, n)]
    if unknown:
        raise RegistryError(
            f"{where}: unknown {axis} name(s) {', '.join(map(repr, unknown))}; valid {axis} names: "
            f"{', '.join(_registry(axis))}"
        )


def _known(axis: str, name: str) -> bool:
    if axis == "dtype":  # the first kernel that declares it ends the look
        return any(name in k.dtypes for k in KERNELS.values())
    return name in _registry(axis)


# Each cell's answer, with the kernel entry it was given for (a test may put another entry under the name): a run
# asks it of every cell of the product and of every id its results and expectations hold, several times over.
_ANSWERED: dict[Cell, tuple[object, str | None]] = {}


def why_not_applicable(cell: Cell) -> str | None:
    """Why a combination of names is not in the matrix, or None when it is: declared beside each axis, never a
    skip."""
    kernel = KERNELS[cell.kernel]
    answered = _ANSWERED.get(cell)
    if answered is None or answered[0] is not kernel:
        answered = _ANSWERED[cell] = (kernel, _why_not_applicable(cell, kernel))
    return answered[1]


def _why_not_applicable(cell: Cell, kernel) -> str | None:
    style, stage, device = STYLES[cell.style], STAGES[cell.stage], DEVICES[cell.device]
    if cell.dtype not in kernel.dtypes:
        return f"the kernel declares the dtypes {', '.join(kernel.dtypes)}"
    if device.dtypes and cell.dtype not in device.dtypes:
        return f"{cell.device} runs {', '.join(device.dtypes)} only"
    if stage.dtypes and cell.dtype not in stage.dtypes:
        return f"the stage runs {', '.join(stage.dtypes)} only (compat.matrix.stages.ONE_DTYPE says why)"
    if stage.devices and cell.device not in stage.devices:
        return f"the stage applies to {', '.join(stage.devices)} only"
    if style.why_not(kernel):
        return style.why_not(kernel)
    if kernel.devices is not None and cell.device not in kernel.devices:
        return f"it declares the devices {', '.join(kernel.devices)}"
    if stage.custom_op_only and not style.custom_op:
        return "the stage checks a torch.library op, which the style does not register"
    if style.why_not_in(cell.stage, kernel):
        return style.why_not_in(cell.stage, kernel)
    if stage.needs - kernel.features():
        return "; ".join(MISSING_FEATURE[n] for n in sorted(stage.needs - kernel.features()))
    if cell.device == "cpu" and not style.cpu_kernel:
        return "the style has no CPU kernel (a Triton kernel has no CPU backend to launch on)"
    if stage.packaged and device.interpreted:
        return "no one ships Triton's interpreter in an AOTI package"
    return None


def applicable(cell: Cell) -> bool:
    """Whether the cell is in the matrix (see why_not_applicable)."""
    return why_not_applicable(cell) is None


def split_cell_id(key: str, where: str) -> Cell:
    """The five axes of a cell id (or of an expectations key whose dtype is ANY_DTYPE), not yet checked against the
    registries: the one place that knows how an id is spelled."""
    parts = key.split("-")
    if len(parts) != 5:
        raise RegistryError(f"{where}: {key!r} is not a cell id of the form kernel-style-stage-dtype-device")
    return Cell(*parts)


def any_dtype_key(cell_id: str) -> str:
    """The expectations key that stands for every dtype of the cell."""
    return dataclasses.replace(split_cell_id(cell_id, "any_dtype_key"), dtype=ANY_DTYPE).id


def dtypes_braced(ids: Iterable[str]) -> list[str]:
    """Ids that differ in the dtype only, spelled once: `silu-triton_op-eager-{bfloat16,float16}-cuda` (the order of
    first appearance kept), so a page lists a stage's cells without repeating what they share."""
    groups: dict[Cell, list[str]] = {}
    for cell in (split_cell_id(i, "dtypes_braced") for i in ids):
        groups.setdefault(dataclasses.replace(cell, dtype=""), []).append(cell.dtype)
    return [
        dataclasses.replace(key, dtype=dtypes[0] if len(dtypes) == 1 else "{" + ",".join(dtypes) + "}").id
        for key, dtypes in groups.items()
    ]


def parse_cell_id(cell_id: str, where: str) -> Cell:
    cell = split_cell_id(cell_id, where)
    for axis, name in cell.axes().items():
        check_names(axis, [name], f"{where}: cell {cell_id!r}")
    why = why_not_applicable(cell)
    if why:
        raise RegistryError(f"{where}: {cell_id!r} is not in the matrix: {why}")
    return cell


def in_matrix(cell_id: str) -> bool:
    """Whether an id from elsewhere (an older run's results) names a cell of the matrix as it is now."""
    try:
        parse_cell_id(cell_id, "")
    except RegistryError:
        return False
    return True


def matrix(select: dict[str, list[str]] | None = None) -> list[Cell]:
    """Every applicable cell, optionally restricted per axis (names already validated with `check_names`).

    Stage-major, AOTI stages first: xdist hands cells out in this order, so the long export + AOTI builds of
    different cells start on different workers at once instead of queueing behind one another's locks."""
    select = select or {}
    reg = registries()

    def pick(axis):
        return [n for n in reg[axis] if n in select.get(axis, reg[axis])]

    stages = sorted(pick("stage"), key=lambda st: not STAGES[st].packaged)
    cells = (
        Cell(k, s, st, dt, dev)
        for st in stages
        for k in pick("kernel")
        for s in pick("style")
        for dt in pick("dtype")
        for dev in pick("device")
    )
    return [c for c in cells if applicable(c)]


def why_none(select: dict[str, list[str]]) -> list[str]:
    """Why a selection holds no cell: each reason why_not_applicable gives its combinations, with how many it
    excludes, most first."""
    # An axis not selected ranges over the names the selected kernels have cells in, so each reason is the
    # selection's: the kernels' own dtypes and styles, not every name the registries hold.
    base = matrix({"kernel": select["kernel"]} if "kernel" in select else {})
    reasons: dict[str, int] = {}
    axes = ("kernel", "style", "stage", "dtype", "device")  # Cell's fields, in order
    names = {axis: select.get(axis) or list(dict.fromkeys(getattr(c, axis) for c in base)) for axis in axes}
    for combination in itertools.product(*(names[axis] for axis in axes)):
        why = why_not_applicable(Cell(*combination))
        if why:
            reasons[why] = reasons.get(why, 0) + 1
    return [f"{why} ({n})" for why, n in sorted(reasons.items(), key=lambda kv: -kv[1])]


def package_cell_of(cell_id: str) -> str | None:
    """The cell whose package this cell's stage runs elsewhere (aoti_cpp_strict runs aoti_strict's, from C++), or
    None: the two share their values, so the C++ cell has the package's fuzz evidence."""
    cell = split_cell_id(cell_id, "a cell id")
    stage = STAGES.get(cell.stage)
    if stage is None or stage.family not in RUNS_LIBRARY_OF:
        return None
    return dataclasses.replace(cell, stage=f"{RUNS_LIBRARY_OF[stage.family]}_{stage.export_mode}").id


def fuzz_family(cell: Cell) -> str:
    return STAGES[cell.stage].export_mode or "probe"


def lane(cell: Cell, section: str, split: frozenset[str] = frozenset()) -> str:
    """The lane of a cell's test: the group of tests that share one child (a probe, a build, a fuzz child), done
    serially by one worker; the scheduler's unit of work and the profile's (compat.report.profile). A lane named in
    `split` (one that took too long alone: compat.run.schedule.split_lanes) is a lane per stage, each its own child."""
    base = _lane(cell, section)
    return f"{base}-{cell.stage}" if base in split else base


def _lane(cell: Cell, section: str) -> str:
    stage = STAGES[cell.stage]
    middle: str | None
    if section == "fuzz":
        kind, middle = "fuzz", fuzz_family(cell)
    else:
        kind, middle = ("probe", None) if stage.probe else ("build", stage.export_mode)
    return "-".join(filter(None, (kind, cell.kernel, cell.style, middle, cell.dtype, cell.device)))


def read_cell_list(path: str | None, option: str = "--compat-cells") -> set[str] | None:
    """The cell ids a file lists, one per line (--compat-cells of a run, --cells of shard and cells)."""
    if path is None:
        return None
    try:
        lines = Path(path).read_text().split()
    except OSError as exc:
        raise CompatError(f"{option} {path}: cannot be read ({exc.strerror})") from None
    return {parse_cell_id(line, f"{option} {path}").id for line in lines}
