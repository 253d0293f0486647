"""Why Liger's fused linear cross entropy recompiles for minutes at its second token count, on a CPU: its chunking
alone (liger_kernel/ops/fused_linear_cross_entropy.py, 0.8.5: chunk_size = triton.next_power_of_2(triton.cdiv(BT,
inc_factor)), then a Python loop over cdiv(BT, chunk_size) chunks), with the matmul and a reduction per chunk, compiled
by torch.compile() as a user compiles it, at the gate's token counts (8, then 1, 37, 1024: the 37 compiles with a
symbolic token count, automatic dynamic shapes). `python chunking_compile.py next_power_of_2|plain`: plain is the same
chunking without the power of two. Each row: the tokens and the call's seconds (its compile included)."""

import sys
import time

import torch
import triton

mode = sys.argv[1]


def chunk_of(BT):
    if mode == "next_power_of_2":
        return triton.next_power_of_2(triton.cdiv(BT, 2))
    return triton.cdiv(BT, 2)  # the same chunking without the power of two


def f(x, w):
    BT = x.shape[0]
    c = min(chunk_of(BT), BT)
    out = []
    for i in range(triton.cdiv(BT, c)):
        part = x[i * c : min((i + 1) * c, BT)]
        out.append((part @ w.t()).logsumexp(-1).sum())
    return sum(out)


g = torch.compile(f)
w = torch.randn(500, 256)
for bt in (8, 1, 37, 1024):
    t = time.monotonic()
    g(torch.randn(bt, 256), w)
    print(mode, bt, round(time.monotonic() - t, 1), "s", flush=True)
