"""Stage axis: what a wrapped kernel is pushed through, declared as data.

A stage belongs to a family, which says where its work happens and which phases of that work are its own:
- `probe`: a check on the model (`Stage.check`, the name of one in compat.child.checks). The probe stages of one (kernel, style,
  dtype, device) run as phases of one child.
- `export`, `save_load`, `decompose`, and the AOTI families (`PACKAGED`): made from one exported program per (kernel,
  style, export mode, dtype, device). One build child exports and makes every artifact (`BUILD_PHASES`); the
  families that must also load their artifact in a fresh process name those phases (`FRESH_PHASES`).
The work itself is child-side code (compat.child); which child runs what is compat.run.session's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import RegistryError

# The phases of the shared build each export-based family owns, after the export itself.
BUILD_PHASES: dict[str, tuple[str, ...]] = {
    "export": ("module_run",),
    "save_load": ("save_load",),
    "decompose": ("decompose", "decompose_triton_ops"),
    "aoti": ("aoti_compile",),
    "aoti_max_autotune": ("aoti_max_autotune_compile",),
    "aoti_legacy": ("aoti_legacy_compile",),
    "aoti_cpp": ("aoti_compile",),  # the aoti family's package, which it runs from C++
}
# The families whose artifact is an AOTInductor library: compiled only when one of their cells asks.
PACKAGED = ("aoti", "aoti_max_autotune", "aoti_legacy")
# Families that run another family's library elsewhere: the C++ runner (compat.child.cpp) loads the aoti package,
# so it needs that family's compile and never compiles one of its own.
RUNS_LIBRARY_OF = {"aoti_cpp": "aoti"}
# The phases of a family's fresh child: its artifact loaded and run in a process that did not build it.
FRESH_PHASES: dict[str, tuple[str, ...]] = {
    "save_load": ("load_fresh", "run_fresh"),
    **{family: (f"{family}_load", f"{family}_run") for family in (*PACKAGED, *RUNS_LIBRARY_OF)},
}
EXPORT_MODES = ("strict", "nonstrict")
# The groups the documentation folds stages into (compat.report.report), in the order a reader meets them.
DOC_GROUPS: dict[str, tuple[str, ...]] = {
    "eager & compile": ("probe",),
    "export": ("export", "decompose"),
    "serialization": ("save_load",),
    "AOTI": (*PACKAGED, *RUNS_LIBRARY_OF),
}
# Why the costliest stages run on one dtype: what they ask (does the wrapping survive this mode or API) does not
# depend on it, and each of their cells is a whole Inductor or AOTI compile (with max-autotune, a benchmark too).
# The C++ stages too: whether a package runs without Python is the op's registration, not its dtype, and the
# package's numerics at every dtype are the aoti stages' (the same package, from Python).
ONE_DTYPE = ("float32",)
# Inductor compiles its kernels in C++ on these devices (declared in compat.matrix.cells; a test holds the two alike).
CPU_DEVICES = ("cpu", "cpu_interpret")


@dataclass(frozen=True)
class Stage:
    name: str
    doc: str
    family: str  # "probe", or an export-based family of BUILD_PHASES
    # The budget of the stage's own child (a probe run alone, a fresh load): a hang past it is `timed_out`.
    timeout_s: float
    export_mode: str | None = None  # "strict" / "nonstrict": the exported program an export-based stage uses
    custom_op_only: bool = False  # applies only to styles that register a torch.library op
    check: str | None = None  # probe stages: the name of the check the probe child runs (compat.child.checks.CHECKS)
    # A compiling probe: torch.compile's arguments (besides fullgraph=True), for its check and for its fuzz tests,
    # which compile the op the same way; None: the probe runs the model as it is (eagerly).
    compiler: dict[str, Any] | None = field(default=None, compare=False)
    not_fuzzed: str | None = None  # why the fuzz tests do not drive this stage's artifact; None: they do
    needs: frozenset = frozenset()  # Kernel.features() the stage needs (compat.matrix.cells says why, where missing)
    dtypes: tuple[str, ...] | None = None  # None: every dtype; else the only ones it runs (ONE_DTYPE says why)
    devices: tuple[str, ...] | None = None  # None: every device; else the only ones it applies to
    doc_group: str | None = None  # its DOC_GROUPS group, where not its family's (a probe that exports)
    timed: bool = False  # a passing cell's latency is recorded, on CUDA (compat.child.latency)
    # The devices on which Inductor compiles C++ at this stage besides a package (its C++ wrapper; its kernels on a
    # CPU): C++ needs the machine's CPU ISAs, detected once per run (compat.child.toolchain), not once per child.
    cpp_on: tuple[str, ...] = ()
    trains: bool = False  # forward and backward, gradients compared: the fuzz tests drive it with gradients too
    # Runs every dtype in the quick tier too (compat.matrix.tiers): its numerics are what it asks. A stage that trains
    # does anyway.
    quick_every_dtype: bool = False

    def __post_init__(self):
        if (self.family == "probe") != (self.check is not None):
            raise RegistryError(f"stage {self.name!r}: a probe stage has a check, and only a probe stage does")
        if self.compiler is not None and not self.probe:
            raise RegistryError(f"stage {self.name!r}: only a probe stage compiles the model")
        if self.family != "probe" and (self.family not in BUILD_PHASES or self.export_mode not in EXPORT_MODES):
            raise RegistryError(
                f"stage {self.name!r}: family {self.family!r} with export mode {self.export_mode!r}; "
                f"export-based families: {', '.join(BUILD_PHASES)}, modes: {', '.join(EXPORT_MODES)}"
            )

    @property
    def probe(self) -> bool:
        return self.family == "probe"

    @property
    def fuzzed(self) -> bool:
        return self.not_fuzzed is None

    @property
    def every_dtype_in_quick_tier(self) -> bool:
        return self.quick_every_dtype or self.trains

    @property
    def group(self) -> str:
        return self.doc_group or next(g for g, families in DOC_GROUPS.items() if self.family in families)

    @property
    def packaged(self) -> bool:
        """Needs an AOTI library of its exported program (the build compiles one only when such a cell asks)."""
        return self.family in PACKAGED or self.family in RUNS_LIBRARY_OF

    @property
    def compiles(self) -> bool:
        """Inductor compiles here: torch.compile, or an AOTI library (its own, or the one it runs)."""
        return self.compiler is not None or self.packaged

    @property
    def autotunes(self) -> bool:
        """Inductor's max-autotune benchmarks its own kernel choices here (compat.child.compile_threads)."""
        return (self.compiler or {}).get("mode") == "max-autotune" or self.family == "aoti_max_autotune"

    def compiles_cpp(self, device: str) -> bool:
        return self.packaged or device in self.cpp_on

    @property
    def library(self) -> str | None:
        """The AOTI family whose library this stage runs: its own, or the one it runs elsewhere."""
        return RUNS_LIBRARY_OF.get(self.family, self.family) if self.packaged else None

    @property
    def phases(self) -> tuple[str, ...]:
        """Every phase whose outcome is this stage's, in order: the probe check, or the export, the build phases
        the family owns, and its fresh phases."""
        if self.probe:
            return (self.name,)
        return ("export", *BUILD_PHASES[self.family], *FRESH_PHASES.get(self.family, ()))


NOT_VALUES = "the stage checks FLOPs or schemas, not values"


def _export_stages(mode: str, flag: str) -> tuple[Stage, ...]:
    return (
        Stage(
            f"export_{mode}",
            f"`torch.export.export(strict={flag})`, dynamic batch, then `.module()` run.",
            "export",
            300.0,
            export_mode=mode,
        ),
        Stage(
            f"save_load_{mode}",
            f"The {mode} export through `torch.export.save` + `load`, run in the same process, "
            f"then loaded and run in a fresh one.",
            "save_load",
            300.0,
            export_mode=mode,
        ),
        Stage(
            f"decompose_{mode}",
            f"`run_decompositions()` of the {mode} export, then again with "
            f"`decompose_custom_triton_ops=True`; each run.",
            "decompose",
            300.0,
            export_mode=mode,
        ),
        Stage(
            f"aoti_{mode}",
            f"`aoti_compile_and_package` of the {mode} export, loaded and run in a fresh process.",
            "aoti",
            300.0,
            export_mode=mode,
            timed=True,
        ),
        Stage(
            f"aoti_cpp_{mode}",
            f"The aoti_{mode} package loaded and run from C++ without Python "
            f"(`torch::inductor::AOTIModelPackageLoader`, in a runner built once per run "
            f"against this torch); its outputs compared with eager's.",
            "aoti_cpp",
            300.0,
            export_mode=mode,
            timed=True,
            dtypes=ONE_DTYPE,
            not_fuzzed=f"it runs the aoti_{mode} package, which the aoti_{mode} fuzz test drives",
        ),
        Stage(
            f"export_static_{mode}",
            f"`torch.export.export(strict={flag})` with no dynamic dimension, run at the "
            f"example's shapes: told apart from export_{mode}, a failure that needs the "
            f"dynamic batch.",
            "probe",
            300.0,
            check="export_static",
            not_fuzzed="a static export takes the example's shapes only",
            doc_group="export",
        ),
    )


# Budgets: eager and a load-and-run are seconds of work, compile is tens; the shared export + AOTI compile build
# is bounded by compat.run.session.BUILD_TIMEOUT.
STAGES: dict[str, Stage] = {
    s.name: s
    for s in (
        Stage(
            "eager",
            "The wrapped op inside the model, run eagerly (forward, under `torch.no_grad()`).",
            "probe",
            300.0,
            check="eager",
            timed=True,
            quick_every_dtype=True,
        ),
        Stage(
            "eager_backward",
            "The model's forward and backward run eagerly: every differentiable input's and "
            "parameter's gradient against the reference's (and its float64 run); each variant "
            "of a declaration's choices on inputs of its own; a missing gradient fails.",
            "probe",
            300.0,
            check="eager_backward",
            needs=frozenset({"differentiable"}),
            trains=True,
        ),
        Stage(
            "flop_count",
            "The model under `FlopCounterMode`: the op must still compute and its FLOPs be counted.",
            "probe",
            300.0,
            check="flop_count",
            not_fuzzed=NOT_VALUES,
        ),
        Stage(
            "opcheck",
            "`torch.library.opcheck` on the style's op (custom-op styles only).",
            "probe",
            600.0,
            check="opcheck",
            custom_op_only=True,
            not_fuzzed=NOT_VALUES,
        ),
        *(
            Stage(
                f"compile_{backend}",
                f"`torch.compile(backend={backend!r}, fullgraph=True)`; counts frames and checks "
                f"the graph holds the kernel.",
                "probe",
                600.0,
                check="compile_model",
                compiler={"backend": backend},
                timed=True,
                cpp_on=CPU_DEVICES if backend == "inductor" else (),
                quick_every_dtype=backend == "inductor",
            )
            for backend in ("eager", "aot_eager", "inductor")
        ),
        Stage(
            "compile_dynamic",
            "`torch.compile(dynamic=True, fullgraph=True)` with inductor: a symbolic batch, and "
            "a second batch size runs without recompiling.",
            "probe",
            600.0,
            check="compile_dynamic",
            compiler={"backend": "inductor", "dynamic": True},
            needs=frozenset({"dynamic"}),
            timed=True,
            cpp_on=CPU_DEVICES,
        ),
        Stage(
            "compile_backward",
            "Inductor-compiled forward and backward: input and parameter gradients against "
            "eager PyTorch's (and its float64 run); a missing gradient fails.",
            "probe",
            600.0,
            check="compile_backward",
            compiler={"backend": "inductor"},
            cpp_on=CPU_DEVICES,
            trains=True,
        ),
        Stage(
            "compile_dynamic_backward",
            "`torch.compile(dynamic=True, fullgraph=True)` with inductor, training: "
            "gradients at two sizes through one graph with symbolic sizes, without "
            "recompiling.",
            "probe",
            600.0,
            check="compile_dynamic_backward",
            compiler={"backend": "inductor", "dynamic": True},
            needs=frozenset({"dynamic", "differentiable"}),
            cpp_on=CPU_DEVICES,
            trains=True,
        ),
        Stage(
            "compile_cudagraphs",
            '`torch.compile(mode="reduce-overhead", fullgraph=True)`: each check batch three '
            "times (warm-up, record, replay), with `triton.cudagraph_or_error`; a CUDA graph "
            "must be recorded and replayed.",
            "probe",
            600.0,
            check="compile_cudagraphs",
            compiler={"backend": "inductor", "mode": "reduce-overhead"},
            devices=("cuda",),
            timed=True,
        ),
        Stage(
            "compile_max_autotune",
            '`torch.compile(mode="max-autotune", fullgraph=True)`: Inductor benchmarks its '
            "own kernel choices, with CUDA graphs on a GPU.",
            "probe",
            600.0,
            check="compile_model",
            compiler={"backend": "inductor", "mode": "max-autotune"},
            dtypes=ONE_DTYPE,
            timed=True,
            cpp_on=CPU_DEVICES,
        ),
        Stage(
            "compile_cpp_wrapper",
            "`torch.compile(fullgraph=True, options={'cpp_wrapper': True})`: Inductor's "
            "wrapper generated as C++, as AOTI's is.",
            "probe",
            600.0,
            check="compile_model",
            compiler={"backend": "inductor", "options": {"cpp_wrapper": True}},
            dtypes=ONE_DTYPE,
            timed=True,
            cpp_on=("cuda", *CPU_DEVICES),
        ),
        *_export_stages("strict", "True"),
        *_export_stages("nonstrict", "False"),
        # One export mode for each: non-strict, torch.export's default since 2.8.
        Stage(
            "aoti_max_autotune_nonstrict",
            "`aoti_compile_and_package` of the non-strict export with "
            "`inductor_configs={'max_autotune': True}`, loaded and run in a fresh "
            "process.",
            "aoti_max_autotune",
            600.0,
            export_mode="nonstrict",
            dtypes=ONE_DTYPE,
            timed=True,
        ),
        Stage(
            "aoti_legacy_nonstrict",
            "The older pair `torch._inductor.aot_compile(ep.module(), ...)` + "
            "`torch._export.aot_load` on the non-strict export (write-up 002), loaded and "
            "run in a fresh process; a deprecation warning is recorded.",
            "aoti_legacy",
            300.0,
            export_mode="nonstrict",
            dtypes=ONE_DTYPE,
            timed=True,
        ),
    )
}
