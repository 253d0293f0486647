"""Where Liger's fused linear cross entropy spends its compile under each Inductor mode the gate has (one mode a
process): `python flce_compile_modes.py MODE OUT.json`, MODE one of inductor, cpp_wrapper, cpp_wrapper_separate
(TORCHINDUCTOR_CPP_WRAPPER_BUILD_SEPARATE=1 set by the caller), max_autotune. The op as the gate declares it (its
head's weight a Parameter, hidden 256, vocabulary 500), under torch.no_grad(), at the gate's token counts in its
order (the example, then the checks); each row: the call's seconds (compiles included), Dynamo's unique graphs so
far, |loss - float64|; at the end Dynamo's and Inductor's own compile-time breakdown."""

import json
import sys
import time
from pathlib import Path

import torch
import torch._dynamo.utils as du
from liger_kernel.transformers.fused_linear_cross_entropy import LigerFusedLinearCrossEntropyLoss

mode, out = sys.argv[1], sys.argv[2]
dev, H, V = "cuda", 256, 500
OPTIONS = {
    "inductor": {},
    "cpp_wrapper": {"options": {"cpp_wrapper": True}},
    "cpp_wrapper_separate": {"options": {"cpp_wrapper": True}},
    "max_autotune": {"mode": "max-autotune-no-cudagraphs"},
}


class CausalLMHeadLoss(torch.nn.Module):  # as a model holds its lm_head: the weight a Parameter
    def __init__(self, w):
        super().__init__()
        self.w = torch.nn.Parameter(w)
        self.loss = LigerFusedLinearCrossEntropyLoss()

    def forward(self, x, t):
        return self.loss(self.w, x, t)


w0 = torch.randn(V, H, device=dev) * 0.05
compiled = torch.compile(CausalLMHeadLoss(w0.clone()), **OPTIONS[mode])


def timed_call(tokens: int) -> dict:
    """One call at `tokens` under no_grad: its seconds (a compile included), the graphs so far, its error."""
    x, t = torch.randn(tokens, H, device=dev), torch.randint(0, V, (tokens,), device=dev)
    start = time.monotonic()
    with torch.no_grad():
        got = compiled(x, t)
    torch.cuda.synchronize()
    seconds = time.monotonic() - start
    err = float((got.double() - torch.nn.functional.cross_entropy(x.double() @ w0.double().T, t)).abs())
    return {
        "tokens": tokens,
        "seconds": round(seconds, 1),
        "graphs": du.counters["stats"].get("unique_graphs", 0),
        "err": err,
    }


rows: list[dict] = []
for tokens in (8, 1, 37, 1024):  # the gate's example, then its checks
    rows.append(timed_call(tokens))
    print(mode, rows[-1], flush=True)
    Path(out).write_text(json.dumps({"mode": mode, "rows": rows}))  # what a cut process measured so far
Path(out).write_text(json.dumps({"mode": mode, "rows": rows, "compile_times": du.compile_times(repr="str")}))
