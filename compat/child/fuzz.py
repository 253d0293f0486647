"""Fuzz tests, child side: generated inputs through each passing cell's artifact, against eager PyTorch.

The artifact is built from the op alone (`model.OpModule`), so an input reaches the kernel as it was generated
(shape, layout, NaN, inf, subnormals); the matrix's model puts a Linear in front of it. Each artifact is built once
per child and every example goes through it: the compiled function (with its own guards), the exported program, the
saved and loaded program, the decompositions, the loaded AOTI package (compat.child.artifacts, as the matrix makes
them).

The contract, per example: a freshly allocated contiguous input gives eager's values; a view (transposed, sliced,
strided: non-contiguous, or offset from its storage) gives eager's values or a clear refusal (an error that says
contiguous, stride, aligned or storage offset: host TMA refuses a base that is not 16-byte aligned). Anything else is a falsifying
example, printed as the command that reproduces it. Which child fuzzes what is compat.run.session's.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import re
import shlex
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import torch
import torch._dynamo.config
from hypothesis import example as explicit
from hypothesis import given
from hypothesis.internal.conjecture import engine as hypothesis_engine

from ..errors import HarnessError
from ..evidence import outcomes
from ..evidence.numerics import compare_elementwise, compare_gradient
from ..evidence.outcomes import Outcome
from ..matrix.cells import DEVICES
from ..matrix.kernels import KERNELS
from ..matrix.model import (
    dynamic_shapes,
    error_scales,
    in_float64,
    op_dynamic_shapes,
    output_names,
    pair,
    torch_device,
)
from ..matrix.stages import STAGES
from ..matrix.strategies import (
    Example,
    boundary_examples,
    dim_tops,
    dynamic_max,
    kernel_examples,
    materialize_inputs,
    profile_settings,
)
from ..matrix.styles import build_op
from . import artifacts
from .checks import (
    backward_through,
    before_stage,
    compiled_for,
    declared_tolerance,
    graph_targets,
    kernel_outputs,
    missing_node,
    produced,
    proof,
    reference_gradients64,
)

if TYPE_CHECKING:
    from ..matrix.cells import Cell
    from .journal import Journal

# A refusal of a view counts only if it says why (its layout: contiguity, strides, alignment, the storage offset).
REFUSAL = re.compile(r"contiguous|stride|align|storage.offset", re.IGNORECASE)
EXPORT_HINT = 4099  # the dynamic dimension's size in the example export traces with: no block multiple, not 0 or 1
RECOMPILE_LIMIT = 64  # compiled functions meet many ranks and sizes; past the limit they fail, never run eager
# Shrinking a new finding stops after this many seconds (Hypothesis's own bound is 300; a finding took 36 s on
# average inside the gate). A recorded finding is replayed as an explicit example, which is never shrunk.
SHRINK_SECONDS = 30


def reproducer(cell: "Cell", example) -> str:
    return f"python -m compat fuzz {cell.id} --example {shlex.quote(example.to_json())}"


class Falsified(AssertionError):
    """An example whose output differs from eager's."""


@dataclass
class Tally:
    """What the examples showed: how many ran, how many had something to compare, the worst errors, refusals."""

    examples: int = 0
    informative: int = 0  # examples with a finite, nonzero eager output to compare against
    max_abs_err: float = 0.0
    max_rel_err: float = 0.0
    refused: dict[str, int] = field(default_factory=dict)  # per layout
    refusals: dict[str, str] = field(default_factory=dict)  # per layout: the first refusal's first line
    last: Any = None  # the example being checked: after a failure, the one Hypothesis shrank to

    def refuse(self, name: str, example, exc: Exception) -> None:
        """A view refused with an error that says why is counted; anything else is raised again (it falsifies)."""
        if example.layout == "contiguous" or not REFUSAL.search(str(exc)):
            raise exc
        self.refused[example.layout] = self.refused.get(example.layout, 0) + 1
        self.refusals.setdefault(
            example.layout, f"{name}: {type(exc).__name__}: {str(exc).strip().splitlines()[0][:200]}"
        )

    def add(self, results: list[dict]) -> None:
        """An example whose every comparison passed."""
        self.examples += 1
        self.informative += any(r["informative"] for r in results)
        self.max_abs_err = max([self.max_abs_err, *(r["max_abs_err"] for r in results)])
        self.max_rel_err = max([self.max_rel_err, *(r["max_rel_err"] for r in results)])

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d.pop("last")
        return d


def _check(made: list[tuple[str, Callable]], reference: Callable, example, cell: "Cell", tally: Tally) -> None:
    kernel = KERNELS[cell.kernel]
    tally.last = example
    names = output_names(kernel)

    def inputs():  # anew for every call: an op may write into its inputs
        return materialize_inputs(kernel, example, cell.dtype, cell.device)

    with torch.no_grad():
        want = reference(*inputs())
        want64 = in_float64(reference, inputs()) or (None,) * len(kernel_outputs(want))
        shape = tuple(inputs()[0].shape)
        # The declared error_scale takes the op's arguments (every argument, scalars too), as the reference does.
        scales = (
            error_scales(kernel, reference, inputs()) if kernel.error_scale else (None,) * len(kernel_outputs(want))
        )
        results = []
        for name, fn in made:
            try:
                got = fn(*inputs())
            except Exception as exc:  # noqa: BLE001 - raised again unless a view's clear refusal
                tally.refuse(name, example, exc)
                continue
            got, outputs = produced(got), kernel_outputs(want)
            labels = names if len(names) == len(outputs) else [f"output {i}" for i in range(len(outputs))]
            if len(got) != len(outputs):
                raise Falsified(f"{name}: {len(got)} outputs, eager has {len(outputs)}")
            for label, g, w, scale, w64 in zip(labels, got, outputs, scales, want64, strict=True):
                result = compare_elementwise(
                    g,
                    w,
                    f"{name} {label}, shape {shape}, {example.layout}",
                    scale,
                    cell.dtype,
                    w64,
                    declared_tolerance(cell),
                )
                if not result["ok"]:
                    raise Falsified(result["why"])
                results.append(result)
    tally.add(results)


def _check_gradients(
    made: list[tuple[str, Callable, Callable]], reference: None, example, cell: "Cell", tally: Tally
) -> None:
    """Forward and backward of each variant's artifact (its own reference beside it), on leaves of the example's
    layout: every wanted input's and parameter's gradient against the reference's, in float64 too."""
    kernel, dtype = KERNELS[cell.kernel], getattr(torch, cell.dtype)
    tally.last = example
    results = []
    for name, fn, ref in made:

        def inputs():  # anew for every run: a backward may write into what it saved
            return materialize_inputs(kernel, example, cell.dtype, cell.device)

        shape = tuple(inputs()[0].shape)
        ref.zero_grad(set_to_none=True)
        want = backward_through(ref, kernel, inputs(), dict(ref.named_parameters()), dtype, embedded=False)
        want64 = reference_gradients64(kernel, ref, inputs(), dtype, embedded=False) or {}
        try:
            got = backward_through(fn, kernel, inputs(), {}, dtype, embedded=False)
        except Exception as exc:  # noqa: BLE001 - raised again unless a view's clear refusal
            tally.refuse(name, example, exc)
            continue
        for input_name, g in got.items():
            if g is None:
                raise Falsified(f"{name}: no gradient reached {input_name}, shape {shape}, {example.layout}")
            result = compare_gradient(
                g,
                want[input_name],
                f"{name} grad of {input_name}, shape {shape}, {example.layout}",
                cell.dtype,
                want64.get(input_name),
                declared_tolerance(cell),
            )
            if not result["ok"]:
                raise Falsified(result["why"])
            results.append(result)
    tally.add(results)


def fuzz(
    cell: "Cell",
    made: list,
    reference: Callable | None,
    exported: bool,
    profile: str,
    example: str | None = None,
    known: list[str] = (),
    check: Callable = _check,
) -> Outcome:
    """Hypothesis examples (or the one `example`, as JSON) through the artifacts; the cell's fuzz outcome.

    `known`: the falsifying examples recorded for the cell (expectations' fuzz rows), replayed first in every run so
    a recorded finding is found every time, whatever the profile draws. `check`: what one example must show
    (`_check` the outputs, `_check_gradients` the gradients of a stage that trains)."""
    kernel, tally, budget = KERNELS[cell.kernel], Tally(), DEVICES[cell.device].fuzz_elements

    def prop(ex):
        check(made, reference, ex, cell, tally)

    if example is not None:
        test = functools.partial(prop, Example.from_json(example))
    else:
        test = given(ex=kernel_examples(kernel, cell.dtype, exported, budget))(prop)
        for ex in [*boundary_examples(kernel, cell.dtype, exported, budget), *map(Example.from_json, known)]:
            test = explicit(ex=ex)(test)  # explicit examples run in reverse order of decoration: known ones first
        test = profile_settings(profile)(test)
    start = time.monotonic()
    try:
        with _shrinking_bounded(SHRINK_SECONDS):
            test()
    except HarnessError:
        raise  # the declaration's fault or the comparison's, not the example's: a harness error
    except Exception as exc:  # noqa: BLE001 - the falsifying example's error is the observation
        outcome = (
            Outcome("mismatch", numerics=[{"ok": False, "why": str(exc)}])
            if isinstance(exc, Falsified)
            else outcomes.from_exception(exc)
        )
        if tally.last is not None:
            outcome.detail.update(example=dataclasses.asdict(tally.last), reproducer=reproducer(cell, tally.last))
            if outcome.kind == "failed":
                outcome.message = f"{outcome.message}\n(falsifying example: {tally.last.to_json()})"
        outcome.detail["tally"] = tally.to_dict()
        return outcome
    detail = {
        "tally": tally.to_dict(),
        "profile": profile if example is None else None,
        "fuzz_seconds": round(time.monotonic() - start, 1),
    }
    if example is None and not tally.informative:
        return Outcome(
            "failed", "NoEvidence", "no example had a finite, nonzero eager output to compare against", detail=detail
        )
    return Outcome("passed", detail=detail)


@contextlib.contextmanager
def _shrinking_bounded(seconds: float):
    """Hypothesis has no setting for it: its engine reads this module constant when shrinking starts."""
    before = hypothesis_engine.MAX_SHRINKING_SECONDS
    hypothesis_engine.MAX_SHRINKING_SECONDS = seconds
    try:
        yield
    finally:
        hypothesis_engine.MAX_SHRINKING_SECONDS = before


# ---- tasks ------------------------------------------------------------------------------------------------------


def _op_models(cell: "Cell"):
    """The op alone, and its reference, each returning the tuple of the op's outputs (compared one by one: a model's
    use of them, a sum, can cancel). Called from a function, as the matrix's model calls it: Dynamo cannot trace
    `autograd.Function.apply` held as a module attribute ("GetAttrVariable(AutogradFunctionVariable(),
    setup_context) has no type", torch 2.11)."""
    return pair(KERNELS[cell.kernel], build_op(cell.style, cell.kernel), cell.dtype, cell.device, embedded=False)


def _no_eager_fallback() -> None:
    torch._dynamo.config.recompile_limit = RECOMPILE_LIMIT
    torch._dynamo.config.fail_on_recompile_limit_hit = True


def _fuzz_training(cell: "Cell", profile: str, example: str | None, known: list[str]) -> Outcome:
    """A stage that trains: each variant's op alone (eager, or compiled as the stage compiles), with its reference."""
    kernel, made, counters = KERNELS[cell.kernel], [], []
    for variant in kernel.variants():
        module, reference = pair(
            kernel, build_op(cell.style, cell.kernel), cell.dtype, cell.device, embedded=False, variant=variant
        )
        fn = module.train()
        if STAGES[cell.stage].compiler is not None:
            _no_eager_fallback()
            fn, counter = compiled_for(cell.stage, fn)
            counters.append(counter)
        made.append(
            (
                " ".join(filter(None, ("compiled" if counters else "eager", kernel.variant_label(variant)))),
                fn,
                reference.train(),
            )
        )
    result = fuzz(cell, made, None, False, profile, example, known, check=_check_gradients)
    for counter in counters:
        if result.kind == "passed":
            result = proof(cell, counter, result)
    return result


def _fuzz_probe_stage(cell: "Cell", profile: str, example: str | None, known: list[str]) -> Outcome:
    if STAGES[cell.stage].trains:
        return _fuzz_training(cell, profile, example, known)
    module, reference = _op_models(cell)
    if STAGES[cell.stage].compiler is None:
        return fuzz(cell, [("eager", module)], reference, False, profile, example, known)
    _no_eager_fallback()
    compiled, counter = compiled_for(cell.stage, module)
    result = fuzz(cell, [("compiled", compiled)], reference, False, profile, example, known)
    return proof(cell, counter, result) if result.kind == "passed" else result


def probe_stages(
    journal: "Journal", cell: "Cell", stages: list[str], profile: str, example: str | None, known: dict[str, list[str]]
) -> None:
    for stage in stages:
        before_stage(dataclasses.replace(cell, stage=stage))
        journal.run(
            stage,
            functools.partial(
                _fuzz_probe_stage, dataclasses.replace(cell, stage=stage), profile, example, known.get(stage, [])
            ),
        )


def export_stages(
    journal: "Journal",
    cell: "Cell",
    mode: str,
    stages: list[str],
    profile: str,
    example: str | None,
    known: dict[str, list[str]],
) -> None:
    """Export the op once (dynamic as its kernel declares), then fuzz each stage's artifact made from it."""
    kernel = KERNELS[cell.kernel]
    workdir = Path(journal.path).parent
    holder = {}

    def export() -> Outcome:
        module, holder["reference"] = _op_models(cell)
        budget = DEVICES[cell.device].fuzz_elements
        if kernel.any_shape:
            spec, top = kernel.shapes.exported, dynamic_max(kernel, budget)
            example = Example(
                tuple(min(EXPORT_HINT, top) if d is None else d for d in spec), "contiguous", 0, 1.0, "mixed"
            )
            shapes = op_dynamic_shapes(
                [{i: torch.export.Dim(f"d{i}", min=1, max=top) for i, d in enumerate(spec) if d is None}]
            )
        else:
            tops = dim_tops(kernel, budget)
            sizes = {d.name: min(d.example, tops.get(d.name, d.example)) for d in kernel.dims}
            example = Example((), "contiguous", 0, 1.0, "mixed", (), tuple(sizes.items()))
            shapes = dynamic_shapes(kernel, tops)
        args = materialize_inputs(kernel, example, cell.dtype, cell.device)
        holder["ep"] = torch.export.export(module, args, dynamic_shapes=shapes, strict=mode == "strict")
        targets = graph_targets([holder["ep"].graph_module])
        return missing_node(cell, [holder["ep"].graph_module]) or Outcome(
            "passed", detail={"graph": sorted(set(targets))}
        )

    if journal.run("export", export).kind != "passed":
        return
    for stage in stages:

        def fuzz_stage(stage=stage) -> Outcome:
            start = time.monotonic()
            made = artifacts.maker(STAGES[stage].family, torch_device(cell.device))(holder["ep"], workdir)
            made_in = round(time.monotonic() - start, 1)
            result = fuzz(
                dataclasses.replace(cell, stage=stage),
                made,
                holder["reference"],
                True,
                profile,
                example,
                known.get(stage, []),
            )
            result.detail["artifact_seconds"] = made_in
            return result

        journal.run(stage, fuzz_stage)
