"""triton-export-compat: a pytest matrix of Triton kernel wrapping styles x PyTorch stages, with evidence."""

__version__ = "0.1.0"
