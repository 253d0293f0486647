"""Fuzz tests, child side: generated inputs through each passing cell's artifact, against eager PyTorch.

The artifact is built from the op alone (`model.OpModule`), so an input reaches the kernel as it was generated
(shape, layout, NaN, inf, subnormals); the matrix's model puts a Linear in front of it. Each artifact is built once
per child and every example goes through it: the compiled function (with its own guards), the exported program, the
saved and loaded program, the decompositions, the loaded AOTI package (compat.child.artifacts, as the matrix makes
them).

The contract, per example: a freshly allocated contiguous input gives eager's values (against float64 at the
dtype's edges, compat.evidence.numerics); a view (transposed, sliced, strided: non-contiguous, or offset from its
storage) gives eager's values or a clear refusal (an error that says contiguous, stride, aligned or storage offset:
host TMA refuses a base that is not 16-byte aligned). Anything else is a difference: a finding the cell's row pins
is counted and the search goes on past it (compat.evidence.findings), any other is a falsifying example, printed as
the command that reproduces it. Which child fuzzes what is compat.run.session's.
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
from typing import TYPE_CHECKING, Any, Callable, cast

import torch
import torch._dynamo.config
import torch._dynamo.exc
from hypothesis import Phase, given, settings
from hypothesis import example as explicit
from hypothesis.errors import FlakyFailure
from hypothesis.internal.conjecture import engine as hypothesis_engine

from ..errors import HarnessError
from ..evidence import outcomes
from ..evidence.findings import CAUSES, Finding
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
from . import artifacts, compile_threads
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
from .journal import declaration_fault

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
LARGEST = ("max", "-max")  # the special values at the dtype's largest magnitude
MAX_NEW_FINDINGS = 4  # distinct new findings one fuzz test looks for: the first, then past it
MAX_CALLS = 400  # the calls a test keeps, for the sequence that shows a finding needing them


def reproducer(cell: "Cell", example) -> str:
    return f"python -m compat fuzz {cell.id} --example {shlex.quote(example.to_json())}"


@dataclass(frozen=True)
class Difference:
    """One output of an example that differs from eager's: what a finding records of it."""

    output: str  # as the comparison names it: "compiled grad of x"
    difference: str  # a key of compat.evidence.findings.DIFFERENCES
    max_rel_err: float | None = None  # wrong values: how far past eager's own error

    @classmethod
    def of(cls, result: dict[str, Any], output: str) -> "Difference":
        kind = result.get("difference", "wrong_values")
        return cls(output, kind, result.get("max_rel_err") if kind == "wrong_values" else None)


class Falsified(AssertionError):
    """An example whose outputs differ from eager's: the first comparison's words, every output that differed, and
    whether eager itself was not finite where float64 is (in any output of the example)."""

    observation = True  # raised by the comparison on purpose: what the op did (compat.child.journal.harness_frame)

    def __init__(self, why: str, differences: list[Difference], eager_overflowed: bool = False):
        super().__init__(why)
        self.differences, self.eager_overflowed = differences, eager_overflowed


OUTPUT_TAG = "_compat_output"  # set on an exception an artifact raised: which artifact (a finding's output)


@contextlib.contextmanager
def _raised_by(name: str):
    try:
        yield
    except (HarnessError, Falsified):
        raise
    except Exception as exc:  # noqa: BLE001 - raised again, tagged with the artifact that raised it
        with contextlib.suppress(AttributeError, TypeError):
            if not hasattr(exc, OUTPUT_TAG):
                setattr(exc, OUTPUT_TAG, name)
        raise


@dataclass
class Tally:
    """What the examples showed: how many ran, how many had something to compare, the worst errors, refusals."""

    examples: int = 0
    informative: int = 0  # examples with a finite, nonzero eager output to compare against
    max_abs_err: float = 0.0
    max_rel_err: float = 0.0
    refused: dict[str, int] = field(default_factory=dict)  # per layout
    refusals: dict[str, str] = field(default_factory=dict)  # per layout: the first refusal's first line
    explained: int = 0  # examples whose every difference a pinned finding explains
    past_compile_bound: int = 0  # examples not checked: they would compile the op past its fuzz_compiles
    after_context_lost: int = 0  # examples not checked: an earlier one's error left the GPU's context unusable
    last: Any = None  # the example being checked: after a failure, the one Hypothesis shrank to

    def refuse(self, name: str, example, exc: Exception) -> None:
        """A view refused with an error that says why is counted; anything else is raised again (it falsifies). The
        device's own error is never the op's refusal: CUDA's "misaligned address" says "align" too."""
        if example.layout == "contiguous" or not REFUSAL.search(str(exc)) or isinstance(exc, torch.AcceleratorError):
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
        for unchecked in ("past_compile_bound", "after_context_lost"):  # none: the records as they always were
            if not d[unchecked]:
                d.pop(unchecked)
        return d


def _check(made: list[tuple[str, Callable]], reference: torch.nn.Module, example, cell: "Cell", tally: Tally) -> None:
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
            with _raised_by(name):
                try:
                    got = fn(*inputs())
                except Exception as exc:  # noqa: BLE001 - raised again unless a view's clear refusal
                    tally.refuse(name, example, exc)
                    continue
                got = produced(got)
            outputs = kernel_outputs(want)
            labels = names if len(names) == len(outputs) else [f"output {i}" for i in range(len(outputs))]
            if len(got) != len(outputs):
                raise Falsified(f"{name}: {len(got)} outputs, eager has {len(outputs)}", [Difference(name, "outputs")])
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
                results.append((f"{name} {label}", result))
    _judged(results, tally)


def _check_gradients(
    made: list[tuple[str, Callable, torch.nn.Module]], reference: None, example, cell: "Cell", tally: Tally
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
        with _raised_by(name):
            try:
                got = backward_through(fn, kernel, inputs(), {}, dtype, embedded=False)
            except Exception as exc:  # noqa: BLE001 - raised again unless a view's clear refusal
                tally.refuse(name, example, exc)
                continue
        for input_name, g in got.items():
            output = f"{name} grad of {input_name}"
            if g is None:
                why = f"{output}: none reached it, shape {shape}, {example.layout}"
                raise Falsified(why, [Difference(output, "no_gradient")])
            result = compare_gradient(
                g,
                want[input_name],
                f"{output}, shape {shape}, {example.layout}",
                cell.dtype,
                want64.get(input_name),
                declared_tolerance(cell),
            )
            results.append((output, result))
    _judged(results, tally)


def _judged(results: list[tuple[str, dict]], tally: Tally) -> None:
    """An example's comparisons, all made: where any failed, every failing one is raised together (a gradient's NaN
    can sit in another output than eager's, and which output a finding names must not hang on their order), else
    the example counts as passed."""
    failed = [(output, r) for output, r in results if not r["ok"]]
    if failed:
        overflowed = any(r.get("eager_overflowed") for _, r in results)
        raise Falsified(failed[0][1]["why"], [Difference.of(r, output) for output, r in failed], overflowed)
    tally.add([r for _, r in results])


@dataclass
class Pin:
    """A finding the cell's row pins (or, in a later round of this test, one found here), and what it explained."""

    example: Example
    findings: list[Finding]  # empty: a row recorded before findings were pinned, until its example's replay
    found_here: bool = False  # a new finding of this test, pinned for its later rounds: it explains any error size
    sequence: bool = False  # it shows only after the calls it names: its sequence, not its example, shows it
    replayed: bool = False  # a row recorded before findings were pinned: its example's replay pins it
    reproduced: bool = False  # its own example showed what it pins
    count: int = 0
    seen: dict[tuple, Finding] = field(default_factory=dict)  # each signature it explained, at its worst error
    first: tuple[Exception, Example] | None = None  # the first observation it explained

    gpu: str | None = None  # a row recorded before findings were pinned: the one GPU it was measured on, if one

    @classmethod
    def of(cls, spec: dict[str, Any]) -> "Pin":
        example = Example.from_json(spec["example"])
        if "output" in spec:
            return cls(example, [Finding(**spec)], sequence=bool(spec.get("after")))
        return cls(example, [], replayed=True, gpu=spec.get("gpu"))

    def explains(self, seen: Finding) -> bool:
        if self.found_here:
            return any(seen.signature == f.signature for f in self.findings)
        if self.replayed:
            return any(f.explains_as_recorded_before(seen) for f in self.findings)
        return any(f.explains(seen) for f in self.findings)

    def take(self, seen: Finding, exc: Exception, example: Example) -> None:
        self.count += 1
        before = self.seen.get(seen.signature)
        worst = _worst(before.max_rel_err if before else None, seen.max_rel_err)
        self.seen[seen.signature] = dataclasses.replace(before or seen, max_rel_err=worst)
        self.first = self.first or (exc, example)

    def recorded(self) -> list[dict[str, Any]]:
        """What a row records of it: its finding at the worst error this run saw, never below what the row pinned; a
        row recorded before findings were pinned, each finding its replay explained."""
        if self.replayed:
            return [f.to_row() for f in self.seen.values()] or [f.to_row() for f in self.findings]
        rows = []
        for f in self.findings:
            seen = self.seen.get(f.signature)
            worst = _worst(f.max_rel_err, seen.max_rel_err if seen else None)
            rows.append(dataclasses.replace(f, max_rel_err=worst).to_row())
        return rows


def _worst(*errors: float | None) -> float | None:
    """The largest of the errors (None and 0 are none)."""
    return max((e for e in errors if e), default=None)


class Search:
    """One fuzz test's examples through the artifacts: each difference a pin explains is counted and the search goes
    on; any other raises, as Hypothesis expects of a falsifying example (compat.evidence.findings). It keeps the calls
    it made, in order: a compiled function's answer can hang on the shapes it met before (its guards, automatic
    dynamic shapes), and a finding that needs them is shown by them, as they stood when it first raised (Hypothesis
    calls on, shrinking and replaying, after that)."""

    def __init__(self, cell: "Cell", made: list, reference: Callable | None, check: Callable, pins: list[Pin]):
        self.cell, self.made, self.reference, self.check, self.pins = cell, made, reference, check, pins
        self.tally = Tally()
        self.calls: list[Example] = []
        self.raised_after: dict[Example, int] = {}  # an example that raised: the index of its first such call
        self.overflows: dict[tuple, Finding] = {}  # overflows where eager overflows too: no failure, noted
        self.lost: tuple[Example, Exception] | None = None  # the example whose error lost the GPU's context, and it

    def _run(self, example: Example, tally: Tally) -> None:
        if len(self.calls) < MAX_CALLS:
            self.calls.append(example)
        self.check(self.made, self.reference, example, self.cell, tally)

    def calls_up_to(self, example: Example) -> list[Example]:
        """The calls made until `example` first raised, it included (every call, where it never raised)."""
        made = self.raised_after.get(example)
        return self.calls if made is None else self.calls[: made + 1]

    def passes(self, example: Example) -> bool:
        """Whether `example` shows no difference (checked on a tally of its own)."""
        try:
            self._run(example, Tally())
        except HarnessError:
            raise
        except Exception:  # noqa: BLE001 - any difference: it does not pass
            return False
        return True

    def observed(self, exc: Exception, example: Example) -> list[Finding]:
        """The findings an exception shows at `example` (one per output that differed), their cause found by checking
        the example without its special values. A difference on an example where eager overflowed too (NaN or inf
        where float64 is finite) that goes away at ordinary magnitudes (scale 1, without the dtype's largest values)
        is overflow only, as bad as eager's and no worse."""
        # Where the context is lost nothing runs again: the finding is not put down to the special values.
        plain = (
            self.lost is not None or not example.specials or not self.passes(dataclasses.replace(example, specials=()))
        )
        cause = CAUSES[1] if plain else CAUSES[0]
        if not isinstance(exc, Falsified):
            output, error = getattr(exc, OUTPUT_TAG, "the artifact"), outcomes.exception_type_name(exc)
            return [Finding(output, example.layout, "error", cause, example.to_json(), error=error)]
        large = example.scale > 1.0 or any(kind in LARGEST for _, kind in example.specials)
        overflow = (  # eager overflows here too, and the example at ordinary magnitudes passes
            large
            and exc.eager_overflowed
            and self.lost is None
            and self.passes(
                dataclasses.replace(
                    example,
                    scale=min(example.scale, 1.0),
                    specials=tuple(s for s in example.specials if s[1] not in LARGEST),
                )
            )
        )
        found = []
        for d in exc.differences:
            kind = "overflow_only" if overflow and d.difference in ("nonfinite", "wrong_values") else d.difference
            err = d.max_rel_err if kind == "wrong_values" else None
            found.append(Finding(d.output, example.layout, kind, cause, example.to_json(), err))
        return found

    def unexplained(self, found: list[Finding]) -> list[Finding]:
        """What no pin explains, an overflow where eager overflows too aside: as accurate as eager, no failure."""
        return [f for f in found if f.family != "overflow" and not any(p.explains(f) for p in self.pins)]

    def __call__(self, example: Example) -> None:
        if self.lost is not None:  # nothing after it can be checked in this process: counted, not judged
            lost_at, error = self.lost
            if example != lost_at:
                self.tally.after_context_lost += 1
            elif self.unexplained(self.observed(error, example)):
                raise error  # Hypothesis's replay of its falsifying example: the error that example raised
            return
        try:
            self._run(example, self.tally)
        except HarnessError:
            raise
        except torch._dynamo.exc.FailOnRecompileLimitHit:
            if KERNELS[self.cell.kernel].fuzz_compiles is None:
                raise  # past RECOMPILE_LIMIT: a finding, as any error
            self.tally.past_compile_bound += 1  # past the op's own bound: not checked, and said so
        except Exception as exc:  # noqa: BLE001 - a difference: counted where pins explain it all, else raised
            made = len(self.calls) - 1  # before `observed` checks the example again
            if _context_lost(self.cell):
                self.lost = (example, exc)
            seen = self.observed(exc, example)
            for pin in self.pins:  # a row recorded before findings were pinned: its example's replay pins it
                if pin.replayed and not pin.findings and example == pin.example:
                    pin.findings = list(seen)
            if self.unexplained(seen):
                self.raised_after.setdefault(example, made)
                raise
            for f in seen:
                explaining = next((p for p in self.pins if p.explains(f)), None)
                if explaining is not None:
                    explaining.take(f, exc, example)
                else:  # an overflow no pin names: counted, the search goes on
                    worst = self.overflows.get(f.signature)
                    self.overflows[f.signature] = worst or f
            for pin in self.pins:  # its own example shows what it pins, whichever pin counted it
                pin.reproduced |= example == pin.example and any(pin.explains(f) for f in seen)
            self.tally.explained += 1


def _context_lost(cell: "Cell") -> bool:
    """Whether an error left the GPU's context unusable (a sticky CUDA error: misaligned address, illegal memory
    access), so that every later call in this process raises too, on any input. Measured on the H200: after
    `warmup_launch`'s misaligned address on a sliced input, the next example failed where its input was made, and
    Hypothesis shrank the finding onto a contiguous input that shows nothing in a fresh process."""
    if cell.device != "cuda":
        return False
    try:
        torch.cuda.synchronize()
        torch.ones(1, device="cuda").add_(1).item()
    except Exception:  # noqa: BLE001 - whatever the runtime raises now: the context is gone
        return True
    return False


OVERFLOW_ONLY = (
    " (overflow only: it overflows where eager overflows on this example, and at ordinary magnitudes, without the "
    "dtype's largest values, the example passes)"
)


def _outcome_of(exc: Exception, found: list[Finding]) -> Outcome:
    if isinstance(exc, Falsified):
        why = str(exc)
        derived = {d.output for d in exc.differences if d.difference != "overflow_only"}
        if any(f.difference == "overflow_only" and f.output in derived for f in found):
            why += OVERFLOW_ONLY
        return Outcome("mismatch", numerics=[{"ok": False, "why": why}])
    return outcomes.from_exception(exc)


def _first_call(exc: Exception) -> tuple[Exception, bool]:
    """What the falsifying example's first call raised, and whether Hypothesis's replay of it then passed or failed
    otherwise (its FlakyFailure: the calls before it decided it). The wrapper's type says nothing of the op, and a
    sequence replayed in a fresh process calls once: the first call's error is the finding both observe."""
    members = exc.exceptions if isinstance(exc, FlakyFailure) else ()
    if members and isinstance(members[0], Exception):
        return members[0], True
    return exc, False


def fuzz(
    cell: "Cell",
    made: list,
    reference: Callable | None,
    exported: bool,
    profile: str,
    example: str | None = None,
    known: dict[str, list] | None = None,
    check: Callable = _check,
) -> Outcome:
    """Hypothesis examples (or the one `example`, as JSON) through the artifacts; the cell's fuzz outcome.

    `known["pins"]`: the findings the cell's row pins (compat.evidence.findings.pins), their examples replayed first
    in every run; a difference one of them explains is counted, any other is a new finding. After a new finding the
    search runs again with it pinned, for up to MAX_NEW_FINDINGS distinct ones, so one accept records them all.
    `known["calls"]`: examples (JSON) run through the artifacts before anything else, their differences not judged:
    the calls of a sequence that a finding needs; with `known["calls_only"]` the test makes only those (a stage of
    the sequence before the finding's).
    `check`: what one example must show (`_check` the outputs, `_check_gradients` the gradients of a stage that
    trains). The outcome's detail keeps the calls made (`calls`: up to the call where the first new finding first
    raised). A falsifying example whose replay passed, or failed otherwise (Hypothesis's FlakyFailure), is judged by
    what its first call raised (`replay_differed`)."""
    kernel, budget = KERNELS[cell.kernel], DEVICES[cell.device].fuzz_elements
    known = known or {}
    pins = [Pin.of(spec) for spec in known.get("pins", ())]
    search = Search(cell, made, reference, check, pins)
    tally = search.tally
    for call in known.get("calls", ()):
        search.passes(Example.from_json(call))  # state only: what it shows is not this test's
    if known.get("calls_only"):
        return Outcome("passed", detail={"calls": [ex.to_json() for ex in search.calls]})

    def prop(ex):
        search(ex)

    def made_test(shrink: bool) -> Callable[[], None]:
        if example is not None:
            return functools.partial(prop, Example.from_json(example))
        test = given(ex=kernel_examples(kernel, cell.dtype, exported, budget))(prop)
        first = [p.example for p in pins if not p.sequence]
        for ex in [*_boundary(kernel, cell.dtype, exported, budget), *reversed(first)]:
            test = explicit(ex=ex)(test)  # explicit examples run in reverse order of decoration: known ones first
        chosen = profile_settings(profile)
        # A later round looks for another finding, not a smaller one: the first is shrunk, the others are not.
        return settings(chosen, phases=[p for p in chosen.phases if shrink or p != Phase.shrink])(test)

    test = made_test(shrink=True)
    start = time.monotonic()
    new, search_cut, calls, replay_differed = _rounds(test, made_test, search, pins, example is not None)
    detail: dict[str, Any] = {
        "tally": tally.to_dict(),
        "profile": profile if example is None else None,
        "fuzz_seconds": round(time.monotonic() - start, 1),
        **_findings(pins, new, list(search.overflows.values()), _gpu_name(cell)),
        **({"search_cut": search_cut} if search_cut else {}),
        **({"replay_differed": True} if replay_differed else {}),
        "calls": calls or [ex.to_json() for ex in search.calls],
    }
    return _outcome(cell, pins, new, detail, judged=example is None and not tally.informative)


def _rounds(
    test: Callable[[], None],
    made_test: Callable[[bool], Callable[[], None]],
    search: Search,
    pins: list[Pin],
    one_example: bool,
) -> tuple[list[tuple[list[Finding], Exception, Example]], str | None, list[str] | None, bool]:
    """The search, round by round: after a new finding it runs again with the finding pinned (unshrunk), up to
    MAX_NEW_FINDINGS. Per round its unexplained findings, error and example; why the search stopped early, if it
    did; the calls made up to the first new finding; whether a falsifying example's replay differed."""
    new: list[tuple[list[Finding], Exception, Example]] = []  # per round: its unexplained findings, error, example
    search_cut, calls, replay_differed = None, None, False
    while True:
        try:
            with _shrinking_bounded(SHRINK_SECONDS):
                test()
            break
        except HarnessError:
            raise  # the declaration's fault or the comparison's, not the example's: a harness error
        except Exception as raised:  # noqa: BLE001 - the falsifying example's error is the observation
            exc, flaky = _first_call(raised)
            fault = declaration_fault(exc)
            if fault is not None:
                raise fault from raised
            replay_differed |= flaky
            at = search.tally.last
            found = search.unexplained(search.observed(exc, at)) if at is not None else []
            new.append((found, exc, at))
            calls = calls or [ex.to_json() for ex in (search.calls_up_to(at) if at is not None else search.calls)]
            if not found or one_example:
                break
            if len(new) >= MAX_NEW_FINDINGS:
                search_cut = f"the search stopped after {len(new)} rounds of new findings: there may be more"
                break
            pins.append(Pin(at, found, found_here=True))  # the next round looks past them
            test = made_test(False)
    return new, search_cut, calls, replay_differed


def _boundary(kernel, dtype: str, exported: bool, budget: int) -> list[Example]:
    """The boundary examples, in order of decoration. An op with a compile bound spends its few compiles where they
    inform: each boundary size is sent first with ordinary values, then with the special ones (a reduction over a
    NaN tells nothing, and the sizes past the bound are never checked)."""
    boundary = boundary_examples(kernel, dtype, exported, budget)
    if kernel.fuzz_compiles is None:
        return boundary
    return [e for ex in boundary for e in (ex, dataclasses.replace(ex, specials=()))]  # run last to first


def _gpu_name(cell: "Cell") -> str | None:
    return torch.cuda.get_device_name() if cell.device == "cuda" else None


def _missed(pin: Pin, gpu: str | None) -> bool:
    """A pin whose example no longer shows what it pins, where it must: not a sequence's (its sequence shows it, or
    not), not an overflow's (no failure), not one recorded for another GPU than this one."""
    if pin.found_here or pin.reproduced or pin.sequence:
        return False
    if not pin.findings:
        return pin.gpu in (None, gpu)
    return any(f.family != "overflow" and (f.gpu or pin.gpu) in (None, gpu) for f in pin.findings)


def _findings(
    pins: list[Pin], new: list[tuple[list[Finding], Exception, Example]], overflows: list[Finding], gpu: str | None
) -> dict[str, Any]:
    """Every distinct finding, pinned or new, as a row records it (once per signature, at the worst error any
    showed: a pinned finding seen with a larger error is recorded with it), the overflows where eager overflows too
    among them; the new ones; the pins not shown where they must be (`_missed`)."""
    pinned_here = {id(p.findings) for p in pins if p.found_here}
    rows = (
        [
            {**row, "pinned": not p.found_here, "seen": p.count + p.found_here}
            for p in pins
            if p.count or p.found_here
            for row in p.recorded()
        ]
        + [
            {**f.to_row(), "pinned": False, "seen": 1}
            for found, _, _ in new
            if id(found) not in pinned_here
            for f in found
        ]
        + [{**f.to_row(), "pinned": True, "seen": 1} for f in overflows]
    )
    distinct: dict[tuple, dict[str, Any]] = {}
    for r in rows:
        first = distinct.setdefault(Finding(**{k: v for k, v in r.items() if k not in ("pinned", "seen")}).signature, r)
        errors = [e for e in (first.get("max_rel_err"), r.get("max_rel_err")) if e is not None]
        if errors:
            first["max_rel_err"] = max(errors)
    return {
        "findings": list(distinct.values()),
        "new": [f.text() for found, _, _ in new for f in found],
        "unreproduced": [
            "; ".join(f.text() for f in p.findings) or p.example.to_json() for p in pins if _missed(p, gpu)
        ],
    }


def _outcome(cell: "Cell", pins: list[Pin], new: list, detail: dict[str, Any], judged: bool) -> Outcome:
    """The fuzz test's outcome: its first new finding's, else the first pinned one it met, else a pass (or no
    evidence, where `judged` and no generated example had anything to compare against)."""
    if new:
        found, exc, at = new[0]
        outcome = _outcome_of(exc, found)
    elif any(p.first and any(f.family != "overflow" for f in p.seen.values()) for p in pins):
        pin = next(p for p in pins if p.first and any(f.family != "overflow" for f in p.seen.values()))
        exc, at = cast("tuple[Exception, Example]", pin.first)
        outcome = _outcome_of(exc, list(pin.seen.values()))
    elif judged and not detail["unreproduced"]:
        return Outcome(
            "failed", "NoEvidence", "no example had a finite, nonzero eager output to compare against", detail=detail
        )
    else:
        return Outcome("passed", detail=detail)
    outcome.detail.update(detail)
    if at is not None:
        outcome.detail.update(example=dataclasses.asdict(at), reproducer=reproducer(cell, at))
        if outcome.kind == "failed":
            outcome.message = f"{outcome.message}\n(falsifying example: {at.to_json()})"
    return outcome


@contextlib.contextmanager
def _shrinking_bounded(seconds: int):
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


def _no_eager_fallback(cell: "Cell") -> None:
    """Past the limit a compiled function fails, never runs eager: the op's own bound (`fuzz_compiles`), else
    RECOMPILE_LIMIT."""
    torch._dynamo.config.recompile_limit = KERNELS[cell.kernel].fuzz_compiles or RECOMPILE_LIMIT
    torch._dynamo.config.fail_on_recompile_limit_hit = True


def _fuzz_training(cell: "Cell", profile: str, example: str | None, known: dict[str, list] | None) -> Outcome:
    """A stage that trains: each variant's op alone (eager, or compiled as the stage compiles), with its reference."""
    kernel, made, counters = KERNELS[cell.kernel], [], []
    for variant in kernel.variants():
        module, reference = pair(
            kernel, build_op(cell.style, cell.kernel), cell.dtype, cell.device, embedded=False, variant=variant
        )
        fn = module.train()
        if STAGES[cell.stage].compiler is not None:
            _no_eager_fallback(cell)
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


def _fuzz_probe_stage(cell: "Cell", profile: str, example: str | None, known: dict[str, list] | None) -> Outcome:
    if STAGES[cell.stage].trains:
        return _fuzz_training(cell, profile, example, known)
    module, reference = _op_models(cell)
    if STAGES[cell.stage].compiler is None:
        return fuzz(cell, [("eager", module)], reference, False, profile, example, known)
    _no_eager_fallback(cell)
    compiled, counter = compiled_for(cell.stage, module)
    result = fuzz(cell, [("compiled", compiled)], reference, False, profile, example, known)
    return proof(cell, counter, result) if result.kind == "passed" else result


def probe_stages(
    journal: "Journal", cell: "Cell", stages: list[str], profile: str, example: str | None, known: dict[str, dict]
) -> None:
    for stage in stages:
        before_stage(dataclasses.replace(cell, stage=stage), journal)
        with compile_threads.of_stage(stage):
            journal.run(
                stage,
                functools.partial(
                    _fuzz_probe_stage, dataclasses.replace(cell, stage=stage), profile, example, known.get(stage)
                ),
            )


def export_stages(
    journal: "Journal",
    cell: "Cell",
    mode: str,
    stages: list[str],
    profile: str,
    example: str | None,
    known: dict[str, dict],
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
                known.get(stage),
            )
            result.detail["artifact_seconds"] = made_in
            return result

        journal.run(stage, fuzz_stage)
