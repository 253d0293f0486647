"""Comparison against eager PyTorch, with tolerances that follow the dtype.

An element passes when |out - ref| <= TOL[dtype] * max(|ref|): the error is measured against the output's scale, so
cancellation near zero (Linear outputs cross zero) does not demand more precision than the dtype has. The tolerances
allow a few units in the last place of each dtype (bfloat16 has 8 significant bits, float16 11, float32 24), enough
for a compiler that orders a matmul's sums differently, far from the error of a wrong kernel.
"""

from __future__ import annotations

from typing import Any

import torch

TOL = {"float32": 1e-4, "float16": 5e-3, "bfloat16": 4e-2}


def compare(out: torch.Tensor, ref: torch.Tensor, label: str) -> dict[str, Any]:
    dtype = str(ref.dtype).removeprefix("torch.")
    result: dict[str, Any] = {"input": label, "dtype": dtype, "tol": TOL[dtype]}
    if not isinstance(out, torch.Tensor) or out.shape != ref.shape or out.dtype != ref.dtype:
        got = (tuple(out.shape), str(out.dtype)) if isinstance(out, torch.Tensor) else type(out).__name__
        return {**result, "ok": False, "why": f"{label}: got {got}, expected {(tuple(ref.shape), str(ref.dtype))}"}
    out64, ref64 = out.detach().double().cpu(), ref.detach().double().cpu()
    if not torch.isfinite(ref64).all():
        raise ValueError(f"{label}: the eager reference is not finite; the comparison would prove nothing")
    scale = ref64.abs().max().item()
    if scale == 0.0:
        raise ValueError(f"{label}: the eager reference is all zeros; the comparison would prove nothing")
    err = (out64 - ref64).abs()
    nonfinite = int((~torch.isfinite(out64)).sum())  # NaN never passes
    max_abs = float("inf") if nonfinite else err.max().item()
    result.update(max_abs_err=max_abs, max_rel_err=max_abs / scale, ref_scale=scale, nonfinite=nonfinite)
    result["ok"] = nonfinite == 0 and max_abs <= TOL[dtype] * scale
    if not result["ok"]:
        result["why"] = (f"{label}: {nonfinite} non-finite outputs" if nonfinite else
                         f"{label}: max abs err {max_abs:.3g} > {TOL[dtype]} x scale {scale:.3g}")
    return result
