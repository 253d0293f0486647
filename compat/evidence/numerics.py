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
"""

from __future__ import annotations

import math
from typing import Any

import torch

from ..errors import DeclarationError

TOL = {"float32": 1e-4, "float16": 5e-3, "bfloat16": 4e-2}


def _start(out, ref: torch.Tensor, label: str, computed_in: str | None) -> tuple[float, dict[str, Any], bool]:
    """The tolerance, the result's common fields, and whether out has ref's shape and dtype (if not, the result says
    so)."""
    dtype = str(ref.dtype).removeprefix("torch.")
    tol = max(TOL[dtype], TOL.get(computed_in, 0.0))
    result: dict[str, Any] = {"input": label, "dtype": dtype, "tol": tol}
    if isinstance(out, torch.Tensor) and out.shape == ref.shape and out.dtype == ref.dtype:
        return tol, result, True
    got = (tuple(out.shape), str(out.dtype)) if isinstance(out, torch.Tensor) else type(out).__name__
    expected = (tuple(ref.shape), str(ref.dtype))
    return tol, {**result, "ok": False, "why": f"{label}: got {got}, expected {expected}"}, False


def compare(out: torch.Tensor, ref: torch.Tensor, label: str, computed_in: str | None = None) -> dict[str, Any]:
    tol, result, comparable = _start(out, ref, label, computed_in)
    if not comparable:
        return result
    out64, ref64 = out.detach().double().cpu(), ref.detach().double().cpu()
    if not torch.isfinite(ref64).all():
        raise DeclarationError(f"{label}: the eager reference is not finite; the comparison would prove nothing "
                               f"(the declared inputs or reference are at fault)")
    scale = ref64.abs().max().item()
    if scale == 0.0:
        raise DeclarationError(f"{label}: the eager reference is all zeros; the comparison would prove nothing "
                               f"(the declared inputs or reference are at fault)")
    err = (out64 - ref64).abs()
    nonfinite = int((~torch.isfinite(out64)).sum())  # NaN never passes
    max_abs = float("inf") if nonfinite else err.max().item()
    result.update(max_abs_err=max_abs, max_rel_err=max_abs / scale, ref_scale=scale, nonfinite=nonfinite)
    result["ok"] = nonfinite == 0 and max_abs <= tol * scale
    if not result["ok"]:
        result["why"] = (f"{label}: {nonfinite} non-finite outputs" if nonfinite else
                         f"{label}: max abs err {max_abs:.3g} > {tol} x scale {scale:.3g}")
    return result


def compare_elementwise(out: torch.Tensor, ref: torch.Tensor, label: str, scale: torch.Tensor | None = None,
                        computed_in: str | None = None) -> dict[str, Any]:
    """`scale`: what each element's error is measured against, when not |ref| (a dot product errs relative to the
    sum of its terms' magnitudes, however much they cancel)."""
    tol, result, comparable = _start(out, ref, label, computed_in)
    if not comparable:
        return result
    o, r = out.detach().double(), ref.detach().double()  # on the output's device: examples reach 1e6 elements
    for what, o_mask, r_mask in (("NaN", o.isnan(), r.isnan()), ("+inf", o == math.inf, r == math.inf),
                                 ("-inf", o == -math.inf, r == -math.inf)):
        if not torch.equal(o_mask, r_mask):
            where = (o_mask != r_mask).nonzero()[0].tolist()
            return {**result, "ok": False, "why": f"{label}: {what} where eager has none, or missing where eager has "
                                                  f"it: {int((o_mask != r_mask).sum())} element(s), first at {where}"}
    finite = torch.isfinite(r)
    tiny = torch.finfo(ref.dtype).tiny
    err = (o - r).abs()[finite]
    scale = (r.abs() if scale is None else scale.to(r).abs())[finite]
    bad = err > tol * scale + tiny
    result.update(max_abs_err=err.max().item() if err.numel() else 0.0,
                  max_rel_err=(err / scale.clamp_min(tiny)).max().item() if err.numel() else 0.0,
                  informative=bool((scale > 0).any()), ok=not bool(bad.any()))
    if bad.any():
        first = finite.nonzero()[bad.nonzero()[0, 0]].tolist()
        result["why"] = (f"{label}: {int(bad.sum())} element(s) beyond {tol} x |eager| + {tiny:.3g}; first at "
                         f"{first}: got {o[tuple(first)].item():.6g}, eager {r[tuple(first)].item():.6g}")
    return result
