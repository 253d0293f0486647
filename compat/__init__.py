"""triton-export-compat: a pytest matrix of Triton kernel wrapping styles x PyTorch stages, with evidence.

What you declare about your own kernels (see compat.matrix.contract, and the README's "Gate your own ops, as you ship them"):

    from compat import Dim, Kernel, Scalar, Tensor, Tunable, Backward, register_kernel
    from compat import Op, Module, OneOf, register_op     # your ops exactly as you ship them
    from compat import Known, register_known   # a failure you know, with its reason
"""

import importlib

__version__ = "0.1.0"

# Imported on first use: `import compat` (the CLI's --version, its help) does not import torch.
_API = {
    "Backward": "matrix.contract",
    "Dim": "matrix.contract",
    "Kernel": "matrix.contract",
    "Scalar": "matrix.contract",
    "Shapes": "matrix.contract",
    "Tensor": "matrix.contract",
    "Tunable": "matrix.contract",
    "Op": "matrix.contract",
    "Module": "matrix.contract",
    "OneOf": "matrix.contract",
    "register_kernel": "matrix.kernels",
    "register_op": "matrix.kernels",
    "Known": "evidence.catalogue",
    "register_known": "evidence.catalogue",
}
__all__ = ["__version__", *_API]


def __getattr__(name):
    if name in _API:
        return getattr(importlib.import_module(f"{__name__}.{_API[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
