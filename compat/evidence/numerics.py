"""Comparison against eager PyTorch, with tolerances that follow the dtype.

Model outputs (`compare`): an element passes when |out - ref| <= tol * max(|ref|): the error is measured against the output's scale, so
cancellation near zero (Linear outputs cross zero) does not demand more precision than the dtype has. The tolerances
allow a few units in the last place of each dtype (bfloat16 has 8 significant bits, float16 11, float32 24), enough
for a compiler that orders a matmul's sums differently, far from the error of a wrong kernel.

Generated inputs (`compare_elementwise`, the fuzz tests): the op's output against eager's, element by element. NaN and
+-inf must sit exactly where eager puts them; a finite element passes when |out - ref| <= tol * |ref| + tiny,
tiny being the dtype's smallest normal number, so a subnormal result flushed to zero passes and nothing larger does.

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


def _specials_differ(
    o: torch.Tensor, r: torch.Tensor, label: str, overflow: torch.Tensor | None = None, dtype: torch.dtype | None = None
) -> str | None:
    """Where NaN or an infinity is in one and not the other: what the comparison says, or None. `overflow`: the
    elements whose magnitude (the exact value's, or its terms' where an error scale is declared) overflows the
    dtype and where eager is not finite: there eager's inf or NaN is its summation order's, so the output must be
    non-finite too, any of NaN and +-inf."""
    judged = torch.ones_like(o, dtype=torch.bool)
    if overflow is not None:
        finite_there = overflow & torch.isfinite(o)
        if finite_there.any():
            where = finite_there.nonzero()[0].tolist()
            return (
                f"{label}: finite where the exact value overflows {str(dtype).removeprefix('torch.')}: "
                f"{int(finite_there.sum())} element(s), first at {where}"
            )
        judged = ~overflow
    for what, o_mask, r_mask in (
        ("NaN", o.isnan(), r.isnan()),
        ("+inf", o == math.inf, r == math.inf),
        ("-inf", o == -math.inf, r == -math.inf),
    ):
        differ = (o_mask != r_mask) & judged
        if differ.any():
            where = differ.nonzero()[0].tolist()
            return (
                f"{label}: {what} where eager has none, or missing where eager has it: "
                f"{int(differ.sum())} element(s), first at {where}"
            )
    return None


def _overflowing(magnitude: torch.Tensor | None, r: torch.Tensor, dtype: torch.dtype) -> torch.Tensor | None:
    """Where `magnitude` exceeds the dtype's range (an error scale computed in float32 may itself be inf) and eager
    is not finite, or None without one."""
    if magnitude is None:
        return None
    info = torch.finfo(dtype)
    # Beyond the largest finite value by half its ulp: below that, correct rounding gives the finite max, not inf.
    return (magnitude.abs() >= info.max + info.eps * 2.0 ** (math.frexp(info.max)[1] - 2)) & ~torch.isfinite(r)


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
    """`scale`: what each element's error is measured against, when not |ref| (a dot product errs relative to the
    sum of its terms' magnitudes, however much they cancel). `ref64`: the reference in float64; an element then
    passes within tol x its scale of the float64 value plus EAGER_MULTIPLE x eager's own error there."""
    tol, result, comparable = _start(out, ref, label, computed_in, tol)
    if not comparable:
        return result
    o, r = out.detach().double(), ref.detach().double()  # on the output's device: examples reach 1e6 elements
    exact = _usable64(ref, ref64)
    t = exact.detach().to(r.device) if exact is not None else r
    # What overflows: the exact value, or the terms an error scale measures (a reference that computes in float32
    # overflows in float64 too, and so shows no exact value there).
    magnitude = scale.to(r) if scale is not None else (t if t is not r else None)
    differ = _specials_differ(o, r, label, _overflowing(magnitude, r, ref.dtype), ref.dtype)
    if differ:
        return {**result, "ok": False, "why": differ}
    finite = torch.isfinite(r)
    tiny = torch.finfo(ref.dtype).tiny
    finite &= torch.isfinite(t)  # where float64 overflows too, eager's mask above already held the output to it
    err = (o - t).abs()[finite]
    eager_err = (r - t).abs()[finite]
    scale = (t.abs() if scale is None else scale.to(r).abs())[finite]
    bad = err > tol * scale + EAGER_MULTIPLE * eager_err + tiny
    result.update(
        max_abs_err=err.max().item() if err.numel() else 0.0,
        max_rel_err=(err / scale.clamp_min(tiny)).max().item() if err.numel() else 0.0,
        informative=bool((scale > 0).any()),
        ok=not bool(bad.any()),
        against="float64" if t is not r else "eager",
    )
    if bad.any():
        first = finite.nonzero()[bad.nonzero()[0, 0]].tolist()
        truth = (
            f"float64 {t[tuple(first)].item():.6g}, eager {r[tuple(first)].item():.6g}"
            if t is not r
            else f"eager {r[tuple(first)].item():.6g}"
        )
        bound = f"{tol} x |float64| + {EAGER_MULTIPLE:g} x eager's own error" if t is not r else f"{tol} x |eager|"
        result["why"] = (
            f"{label}: {int(bad.sum())} element(s) beyond {bound} + {tiny:.3g}; first at "
            f"{first}: got {o[tuple(first)].item():.6g}, {truth}"
        )
    return result


@_ours
def compare_gradient(
    out: torch.Tensor,
    ref: torch.Tensor,
    label: str,
    computed_in: str | None = None,
    ref64: torch.Tensor | None = None,
    tol: float | None = None,
) -> dict[str, Any]:
    """A gradient on generated inputs: NaN and +-inf where eager has them (as compare_elementwise), the finite
    elements held together to the gradient's scale (as compare): a gradient sums over what it reaches, so an
    element's error follows its terms' magnitudes, not its own value, which cancellation may bring near zero."""
    _, result, comparable = _start(out, ref, label, computed_in, tol)
    if not comparable:
        return result
    o, r = out.detach().double(), ref.detach().double()
    usable = _usable64(ref, ref64)
    exact = usable.detach().to(r.device) if usable is not None else None
    differ = _specials_differ(o, r, label, _overflowing(exact, r, ref.dtype), ref.dtype)
    if differ:
        return {**result, "ok": False, "why": differ}
    finite = torch.isfinite(r)
    if not bool(finite.any()) or r[finite].abs().max().item() == 0.0:  # nothing to measure against: must be zero
        ok = bool((o[finite] == 0).all())  # (true of no element at all: every one NaN or inf where eager's is)
        return {
            **result,
            "ok": ok,
            "informative": False,
            "max_abs_err": 0.0,
            "max_rel_err": 0.0,
            **({} if ok else {"why": f"{label}: nonzero where eager's gradient is zero"}),
        }
    return {
        **compare(
            out.detach()[finite],
            ref.detach()[finite],
            label,
            computed_in,
            None if exact is None else exact[finite],
            tol,
        ),
        "informative": True,
    }
