"""How long Liger's fused linear cross entropy compiles, by how the weight reaches it (one variant a process)."""

import json
import sys
import time

import torch
import torch._dynamo.utils as du
from liger_kernel.transformers.fused_linear_cross_entropy import LigerFusedLinearCrossEntropyLoss

variant, out = sys.argv[1], sys.argv[2]
dev, H, V = "cuda", 256, 500
loss = LigerFusedLinearCrossEntropyLoss()


class AsParameter(torch.nn.Module):  # as a model holds its lm_head: the weight a Parameter
    def __init__(self, w):
        super().__init__()
        self.w = torch.nn.Parameter(w)
        self.loss = loss

    def forward(self, x, t):
        return self.loss(self.w, x, t)


class AsInput(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.loss = loss

    def forward(self, w, x, t):
        return self.loss(w, x, t)


dynamic = {"dyn": True, "static": None}[variant.split("-")[0]]
held = variant.split("-")[1]  # input | marked | param
w0 = torch.randn(V, H, device=dev) * 0.05
model = AsParameter(w0.clone()) if held == "param" else AsInput()
compiled = torch.compile(model, dynamic=dynamic, fullgraph=True)
rows = []
for bt in (8, 1, 37, 1024):
    x = torch.randn(bt, H, device=dev, requires_grad=True)
    t = torch.randint(0, V, (bt,), device=dev)
    w = w0.clone().requires_grad_(True)
    if held == "marked":
        torch._dynamo.mark_static(w)
    args = (x, t) if held == "param" else (w, x, t)
    start = time.monotonic()
    with torch.no_grad():
        got = compiled(*args)

    torch.cuda.synchronize()
    ref = torch.nn.functional.cross_entropy(x.double() @ w0.double().T, t)
    rows.append(
        {
            "tokens": bt,
            "seconds": round(time.monotonic() - start, 1),
            "graphs": du.counters["stats"].get("unique_graphs", 0),
            "err": float((got.double() - ref).abs()),
        }
    )
    with open(out, "w") as f:
        json.dump({"variant": variant, "rows": rows}, f)
    print(variant, rows[-1], flush=True)
