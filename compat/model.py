"""The write-up's model around a kernel: Linear(128->64) -> op -> Linear(64->128), with seeded weights and inputs.

Every process that rebuilds a cell's model (a child, a loader of an AOTI package) gets the same weights and inputs
from the same seed, so an output computed in one process can be compared with eager computed in another.
"""

from __future__ import annotations

import torch

IN_FEATURES, HIDDEN = 128, 64
EXAMPLE_BATCH = 8  # the batch export traces with
CHECK_BATCHES = (1, 37, 1024)  # batch 1 (0/1 specialisation), an odd middle batch, the dynamic maximum
BATCH_RANGE = (1, 1024)
SEED = 0


class KernelSandwich(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.linear1 = torch.nn.Linear(IN_FEATURES, HIDDEN)
        self.linear2 = torch.nn.Linear(HIDDEN, IN_FEATURES)
        self.fn = fn  # hidden activation -> tensor of the same shape: the wrapped kernel, or its eager reference

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear2(self.fn(self.linear1(x)))


class OpModule(torch.nn.Module):
    """The op alone, for the fuzz tests: a generated input reaches the kernel as generated (shape, layout, NaN)."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x: torch.Tensor):
        return self.fn(x)  # the op's output, or the tuple of its outputs


def torch_device(device: str) -> str:
    """The torch device behind a device axis name (cpu_interpret is CPU tensors)."""
    return "cpu" if device.startswith("cpu") else device


def build(fn, dtype: str, device: str) -> KernelSandwich:
    torch.manual_seed(SEED)
    model = KernelSandwich(fn)
    with torch.no_grad():
        for p in model.parameters():
            p.uniform_(-1.0, 1.0)
    return model.to(device=torch_device(device), dtype=getattr(torch, dtype)).eval()


def make_input(batch: int, dtype: str, device: str) -> torch.Tensor:
    gen = torch.Generator().manual_seed(SEED + batch)
    return torch.randn(batch, IN_FEATURES, generator=gen).to(device=torch_device(device), dtype=getattr(torch, dtype))


def dynamic_shapes():
    return {"x": {0: torch.export.Dim("batch", min=BATCH_RANGE[0], max=BATCH_RANGE[1])}}
