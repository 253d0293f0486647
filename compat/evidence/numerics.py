"""Comparison against eager PyTorch, with tolerances that follow the dtype.

Model outputs (`compare`): an element passes when |out - ref| <= tol * max(|ref|): the error is measured against the output's scale, so
cancellation near zero (Linear outputs cross zero) does not demand more precision than the dtype has. The tolerances
allow a few units in the last place of each dtype (bfloat16 has 8 significant bits, float16 11, float32 24), enough
for a compiler that orders a matmul's sums differently, far from the error of a wrong kernel.

Generated inputs (`compare_elementwise`, `compare_gradient`: the fuzz tests): element by element, against float64
at the dtype's edges too (`_judge`): a NaN or inf of the inputs must come out as eager or float64 has it; where the
exact value overflows the dtype and eager is not finite, any NaN or inf passes; where eager overflows on the way and
float64 is finite, the op is held to float64 alone (a kernel exact at the dtype's largest value passes; its NaN there
is an `overflow_only` difference, as bad as eager and no worse); elsewhere a finite element passes when
|out - truth| <= tol * |truth| + EAGER_MULTIPLE * |eager - truth| + tiny, tiny being the dtype's smallest normal
number, so a subnormal result flushed to zero passes and nothing larger does. A failure names its `difference`
(DIFFERENCES) and each side's value at its first element. Their `max_rel_err` is what the tolerance bounds: the
error beyond eager's own (EAGER_MULTIPLE x) over the scale, 0 for an op as accurate as eager or more.

Both hold an output to the coarser of its own dtype's tolerance and the cell's (`computed_in`): an op run in bfloat16
that returns a float32 result (Liger's fused linear cross entropy returns its loss in float32 from bfloat16 logits)
computed it with bfloat16's precision, and float32's tolerance would call its rounding a wrong value.

Where the reference is PyTorch code it is also run in float64 (`ref64`, the same inputs upcast), as OpInfo's reference
tests and `torch.testing` judge precision: the output is measured against the float64 result, and passes within the
dtype's tolerance of it plus EAGER_MULTIPLE times eager's own error there. A kernel more accurate than eager (a
tanh-GELU computed as z * sigmoid(2u), where eager's float32 `1 + tanh(u)` cancels) is never failed, and a kernel
exactly as accurate as eager passes as before; a wrong kernel's error is the output's own scale, far beyond both.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import torch

from ..errors import DeclarationError, HarnessError

TOL = {"float32": 1e-4, "float16": 5e-3, "bfloat16": 4e-2}
EAGER_MULTIPLE = 2.0  # how much of eager's own error (against float64) an output may add to the dtype's tolerance


def _ours(fn):
    """A comparison that breaks is the harness's fault, never the cell's outcome (a fuzz test's exception is
    otherwise its finding): raised as a HarnessError naming the comparison."""

    @functools.wraps(fn)
    def judged(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except HarnessError:
            raise
        except Exception as exc:  # noqa: BLE001 - named as the comparison's fault
            raise HarnessError(
                f"compat.evidence.numerics.{fn.__name__} raised {type(exc).__name__}: {exc} (a fault "
                f"of the comparison, not the cell's outcome)"
            ) from exc

    return judged


def _usable64(ref: torch.Tensor, ref64) -> torch.Tensor | None:
    """`ref64` where a float64 result can stand beside `ref` (a floating tensor of its shape), else None."""
    usable = (
        isinstance(ref64, torch.Tensor)
        and ref.is_floating_point()
        and ref64.shape == ref.shape
        and ref64.dtype == torch.float64
    )
    return ref64 if usable else None


TF32 = 5e-3  # float32 run in TF32 (10 significant bits, as float16's 11): the `tf32` allowance of a declaration


def declared_tolerance(kernel, dtype: str) -> float | None:
    """The tolerance a declaration sets for its dtype (`tolerances`, else TF32's for float32 where `tf32`), or None:
    the dtype's own."""
    own = dict(getattr(kernel, "tolerances", ()) or ())
    if dtype in own:
        return own[dtype]
    return TF32 if getattr(kernel, "tf32", False) and dtype == "float32" else None


def _start(
    out, ref: torch.Tensor, label: str, computed_in: str | None, tol: float | None = None
) -> tuple[float, dict[str, Any], bool]:
    """The tolerance (`tol`, a declaration's, replaces the dtypes'), the result's common fields, and whether out has
    ref's shape and dtype (if not, the result says so)."""
    dtype = str(ref.dtype).removeprefix("torch.")
    tol = tol if tol is not None else max(TOL[dtype], TOL.get(computed_in or "", 0.0))
    result: dict[str, Any] = {"input": label, "dtype": dtype, "tol": tol}
    if isinstance(out, torch.Tensor) and out.shape == ref.shape and out.dtype == ref.dtype:
        return tol, result, True
    got = (tuple(out.shape), str(out.dtype)) if isinstance(out, torch.Tensor) else type(out).__name__
    expected = (tuple(ref.shape), str(ref.dtype))
    return tol, {**result, "ok": False, "why": f"{label}: got {got}, expected {expected}"}, False


@_ours
def compare(
    out: torch.Tensor,
    ref: torch.Tensor,
    label: str,
    computed_in: str | None = None,
    ref64: torch.Tensor | None = None,
    tol: float | None = None,
) -> dict[str, Any]:
    """`ref64`: the reference run in float64 (see the module's docstring); without it, eager's result is the truth.
    `tol`: the declaration's tolerance (declared_tolerance), replacing the dtype's."""
    tol, result, comparable = _start(out, ref, label, computed_in, tol)
    if not comparable:
        return result
    out64, eager = out.detach().double().cpu(), ref.detach().double().cpu()
    exact = _usable64(ref, ref64)
    truth = exact.detach().cpu() if exact is not None and torch.isfinite(exact).all() else eager
    if not torch.isfinite(eager).all():
        raise DeclarationError(
            f"{label}: the eager reference is not finite; the comparison would prove nothing "
            f"(the declared inputs or reference are at fault)"
        )
    scale = truth.abs().max().item()
    if scale == 0.0:
        raise DeclarationError(
            f"{label}: the eager reference is all zeros; the comparison would prove nothing "
            f"(the declared inputs or reference are at fault)"
        )
    err = (out64 - truth).abs()
    eager_err = (eager - truth).abs().max().item()
    nonfinite = int((~torch.isfinite(out64)).sum())  # NaN never passes
    max_abs = float("inf") if nonfinite else err.max().item()
    bound = tol * scale + EAGER_MULTIPLE * eager_err
    result.update(
        max_abs_err=max_abs,
        max_rel_err=max_abs / scale,
        ref_scale=scale,
        nonfinite=nonfinite,
        against="float64" if truth is not eager else "eager",
        eager_err=eager_err,
    )
    result["ok"] = nonfinite == 0 and max_abs <= bound
    if not result["ok"]:
        result["why"] = (
            f"{label}: {nonfinite} non-finite outputs"
            if nonfinite
            else f"{label}: max abs err {max_abs:.3g} > {tol} x scale {scale:.3g}"
            + (
                f" + {EAGER_MULTIPLE:g} x eager's own error {eager_err:.3g} (both against float64)"
                if truth is not eager
                else ""
            )
        )
    return result


# What a generated input can show, worst first: the names a fuzz finding records (compat.evidence.findings).
DIFFERENCES = {
    "finite_where_nonfinite": "finite where eager and float64 are NaN or inf (a special value lost)",
    "wrong_nonfinite": "NaN where eager and float64 have inf, or inf of another sign",
    "finite_where_overflow": "finite where the exact value overflows the dtype and eager is not finite",
    "nonfinite": "NaN or inf where float64 is finite and eager too",
    "wrong_values": "finite values beyond the tolerance",
    "overflow_only": "NaN or inf only where eager overflows too (float64 is finite there)",
}


def _shown(x: float) -> str:
    return "NaN" if math.isnan(x) else f"{x:.6g}"


def _bounds(
    err: torch.Tensor,
    own: torch.Tensor,
    truth: torch.Tensor,
    compared: torch.Tensor,
    magnitude: torch.Tensor | None,
    tol: float,
    info: torch.finfo,
    whole: bool,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Each element's bound on its error, the scale it is measured against, and the largest scale: the tensor's
    (`whole`) or each element's own."""
    if whole:
        scale = truth[compared].abs().max() if compared.any() else torch.zeros((), dtype=err.dtype, device=err.device)
        allowance = own[compared].max() if compared.any() else scale
        return tol * scale + EAGER_MULTIPLE * allowance + info.tiny, scale.clamp_min(info.tiny).expand_as(err), scale
    per = truth.abs() if magnitude is None else magnitude.abs().to(err)
    per = torch.where(per.isnan(), truth.abs(), per)  # a declared scale that is NaN there (a NaN term) says nothing
    scale = per[compared].max() if compared.any() else torch.zeros((), dtype=err.dtype, device=err.device)
    return tol * per + EAGER_MULTIPLE * own + info.tiny, per, scale


def _judge(
    o: torch.Tensor,
    r: torch.Tensor,
    t: torch.Tensor | None,
    magnitude: torch.Tensor | None,
    dtype: torch.dtype,
    tol: float,
    label: str,
    whole: bool,
) -> dict[str, Any]:
    """Element by element against float64 `t` (eager `r` where there is none), in float64 on the output's device.

    Each element falls in one class:
    - eager and float64 not finite (NaN and inf inputs propagate): the op must be non-finite too, as eager or as
      float64 is;
    - the exact value overflows the dtype (float64 beyond its largest value, or the declared error scale `magnitude`
      where float64 shows none) and eager is not finite: the op must be non-finite too, any of NaN and +-inf;
    - float64 finite in the dtype's range and eager not (eager overflowed on the way): the op is held to float64
      alone, and its NaN or inf there is an `overflow_only` difference (it overflows where eager does);
    - otherwise: within tol x scale of the truth plus EAGER_MULTIPLE x eager's own error there (an infinity of the
      exact value's sign passes where the exact value overflows the dtype).
    `whole`: the scale and eager's error are the tensor's (a gradient sums over what it reaches), else each
    element's own (`magnitude`, or |truth|)."""
    info = torch.finfo(dtype)
    # Beyond the largest finite value by half its ulp: below that, correct rounding gives the finite max, not inf.
    top = info.max + info.eps * 2.0 ** (math.frexp(info.max)[1] - 2)
    exact = t is not None
    t = t if t is not None else r
    eager_ok, exact_ok, out_ok = torch.isfinite(r), torch.isfinite(t), torch.isfinite(o)
    representable = exact_ok & (t.abs() < top)
    big = (magnitude.abs() >= top) if magnitude is not None else torch.zeros_like(eager_ok)
    eager_overflowed = ~eager_ok & representable if exact else torch.zeros_like(eager_ok)
    # Both eager and the exact value (or its terms) overflow; a NaN or inf of the inputs, carried through; the rest,
    # held to a finite truth: float64 where it has a value, else eager (a reference that overflows in float64).
    overflows = ~eager_ok & ~representable & (big | exact_ok)
    propagated = ~eager_ok & ~exact_ok & ~overflows
    measured = ~overflows & ~propagated
    truth = torch.where(exact_ok, t, r)

    def same_special(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return (a.isnan() & b.isnan()) | (~torch.isfinite(a) & (a == b))

    saturated = eager_ok & exact_ok & ~representable & (o == torch.sign(t) * math.inf)  # the exact value overflows
    found: dict[str, torch.Tensor] = {
        "finite_where_nonfinite": propagated & out_ok,
        "wrong_nonfinite": propagated & ~out_ok & ~same_special(o, r) & ~same_special(o, t),
        "finite_where_overflow": overflows & out_ok,
        "nonfinite": measured & ~eager_overflowed & ~out_ok & ~saturated,
        "overflow_only": eager_overflowed & ~out_ok,
    }
    compared = measured & out_ok & ~saturated
    err = (o - truth).abs()
    own = (r - truth).abs()
    own = torch.where(eager_ok & compared, own, torch.zeros_like(own))  # eager's error, where eager has a value
    bound, per, scale = _bounds(err, own, truth, compared, magnitude, tol, info, whole)
    found["wrong_values"] = compared & (err > bound)
    kept = err[compared]
    # The relative error the tolerance bounds: beyond eager's own (EAGER_MULTIPLE x) and the dtype's tiny, over the
    # scale; an op exactly as accurate as eager, or more, has 0.
    excess = ((err - (bound - tol * per)).clamp_min(0) / per.clamp_min(info.tiny))[compared]
    result: dict[str, Any] = {
        "max_abs_err": kept.max().item() if kept.numel() else 0.0,
        "max_rel_err": excess.max().item() if kept.numel() else 0.0,
        "informative": bool((per[compared] > 0).any()) if not whole else bool(scale.item() > 0),
        "against": "float64" if exact else "eager",
        "eager_overflowed": int(eager_overflowed.sum()),
        "ok": True,
    }
    for difference in DIFFERENCES:
        mask = found[difference]
        if mask.any():
            where = tuple(mask.nonzero()[0].tolist())
            result.update(
                ok=False,
                difference=difference,
                elements=int(mask.sum()),
                why=f"{label}: {_described(difference, where, o, r, t if exact else None, int(mask.sum()), dtype, tol)}",
            )
            break
    return result


def _described(
    difference: str, where: tuple, o: torch.Tensor, r: torch.Tensor, t, n: int, dtype: torch.dtype, tol: float
) -> str:
    """One sentence that names each side at the first element: the op's value, eager's and float64's."""
    got, eager = _shown(o[where].item()), _shown(r[where].item())
    sides = f"eager {eager}" + (f", float64 {_shown(t[where].item())}" if t is not None else "")
    name = str(dtype).removeprefix("torch.")
    lead = f"{n} element(s), first at {list(where)}: your op gives {got}"
    return {
        "finite_where_nonfinite": f"{lead} where eager and float64 are not finite ({sides}): a NaN or inf lost",
        "wrong_nonfinite": f"{lead}, another non-finite value than eager's and float64's ({sides})",
        "finite_where_overflow": f"{lead}, finite where the exact value overflows {name} ({sides})",
        "nonfinite": f"{lead} where float64 and eager are finite ({sides})",
        "wrong_values": f"{lead} ({sides}): beyond {tol} x the scale"
        + (f" + {EAGER_MULTIPLE:g} x eager's own error" if t is not None else ""),
        "overflow_only": f"{lead} where eager is {eager} too but float64 is finite ({sides}): it overflows where "
        f"eager overflows ({name}); an op that computes those steps in a wider type passes",
    }[difference]


@_ours
def compare_elementwise(
    out: torch.Tensor,
    ref: torch.Tensor,
    label: str,
    scale: torch.Tensor | None = None,
    computed_in: str | None = None,
    ref64: torch.Tensor | None = None,
    tol: float | None = None,
) -> dict[str, Any]:
    """Each element held to its own magnitude (`scale`, where declared: a dot product errs relative to the sum of
    its terms' magnitudes, however much they cancel), against float64 where `ref64` is given (see _judge)."""
    tol, result, comparable = _start(out, ref, label, computed_in, tol)
    if not comparable:
        return {**result, "difference": "outputs"}
    o, r = out.detach().double(), ref.detach().double()  # on the output's device: examples reach 1e6 elements
    exact = _usable64(ref, ref64)
    t = exact.detach().to(r.device) if exact is not None else None
    # What overflows: the terms an error scale measures, else the exact value (a reference that computes in float32
    # overflows in float64 too, and so shows no exact value there).
    magnitude = scale.to(r) if scale is not None else None
    return {**result, **_judge(o, r, t, magnitude, ref.dtype, tol, label, whole=False)}


@_ours
def compare_gradient(
    out: torch.Tensor,
    ref: torch.Tensor,
    label: str,
    computed_in: str | None = None,
    ref64: torch.Tensor | None = None,
    tol: float | None = None,
) -> dict[str, Any]:
    """A gradient on generated inputs: its special values as compare_elementwise judges them, its finite elements
    held together to the gradient's scale (as compare): a gradient sums over what it reaches, so an element's error
    follows its terms' magnitudes, not its own value, which cancellation may bring near zero. Where there is nothing
    to measure against (every truth zero), the gradient must be zero."""
    tol, result, comparable = _start(out, ref, label, computed_in, tol)
    if not comparable:
        return {**result, "difference": "outputs"}
    o, r = out.detach().double(), ref.detach().double()
    usable = _usable64(ref, ref64)
    t = usable.detach().to(r.device) if usable is not None else None
    return {**result, **_judge(o, r, t, None, ref.dtype, tol, label, whole=True)}
