"""Content-addressed AOTI libraries: one compile per distinct (exported program, family) in a run.

A strict and a non-strict export of one model are often the same graph, and a fuzz child's export of the op alone
can be the matrix build's: each compiled its own package (about 10 s of C++ build each, whatever the kernel). Here a
library is keyed by what AOTInductor reads, so the first child to need a key compiles it under a file lock in the
run's store and every later child with the same key links the stored file:

- the graph as Inductor sees it (targets, arguments, each value's dtype, shape, strides and device), with the names
  of its symbols renumbered in order of appearance and source comments dropped (a strict and a non-strict export
  name them differently);
- its range constraints, calling convention and example inputs' metadata (Inductor's size hints come from them);
- every Triton kernel a traced launch calls, by Triton's own cache key (source and dependencies) and its configs,
  with the constant arguments of the launch (the graph holds only indexes into a per-process table);
- the bytes of every parameter, buffer and constant; the family and its compile options.

A custom op in the graph is keyed by its name: within one run a name is one implementation. A compile that fails is
not stored: each child that needs it compiles, and fails, on its own.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from pathlib import Path
from typing import Any, Callable

import torch
import triton
from filelock import FileLock
from torch._higher_order_ops.triton_kernel_wrap import kernel_side_table

from ..atomic import write_atomic
from .protocol import PACKAGE_STORE_ENV

_SYMBOL = re.compile(r"\b([su])\d+\b")
_SIDE_TABLE_INDEX = re.compile(r"\b(kernel_idx|constant_args_idx) = \d+")
_COMMENT = re.compile(r"^\s*#.*$", re.MULTILINE)


def _canonical(text: str) -> str:
    """Symbols renumbered in order of first appearance (s6 and s33 both become s0); comments dropped."""
    names: dict[str, str] = {}

    def rename(m: re.Match) -> str:
        return names.setdefault(m.group(0), f"{m.group(1)}{sum(n[0] == m.group(1) for n in names.values())}")

    return _SYMBOL.sub(rename, _COMMENT.sub("", text))


def _kernel_identity(kernel: Any) -> str:
    """A launched kernel through its wrappers (autotuner, heuristics) to the JIT function: each layer's kind and
    configuration, the JIT function's cache key (its source and what it calls) and the Python function under it.
    A kernel with neither raises: two kernels told apart by nothing would share a library (the caller then
    compiles unshared)."""
    parts, identified = [], False
    while kernel is not None:
        parts.append(type(kernel).__name__)
        if isinstance(getattr(type(kernel), "cache_key", None), property):
            parts.append(str(kernel.cache_key))
            identified = True
        if hasattr(kernel, "__code__"):
            parts.append(_stable_repr(kernel))
            identified = True
        for attr in ("configs", "values", "key", "reset_to_zero", "restore_value", "do_not_specialize"):
            if hasattr(kernel, attr):
                parts.append(f"{attr}={_stable_repr(getattr(kernel, attr))}")
        kernel = getattr(kernel, "fn", None)
    if not identified:
        raise ValueError(f"a traced launch of a kernel without a cache key or function: {'/'.join(parts)}")
    return "/".join(parts)


def _stable_repr(value: Any) -> str:
    """A repr without addresses: a function is its qualified name, a hash of its bytecode and its constants."""
    if callable(value) and hasattr(value, "__code__"):
        code = value.__code__
        return f"{getattr(value, '__qualname__', '?')}:{hashlib.sha256(code.co_code).hexdigest()[:16]}{code.co_consts}"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_stable_repr(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(map(_stable_repr, value)) + "]"
    return re.sub(r" at 0x[0-9a-f]+", "", repr(value))


def _launches(ep) -> list[str]:
    """The kernels and constant arguments of every traced Triton launch in the program, in graph order."""
    found = []
    for gm in ep.graph_module.modules():
        if not isinstance(gm, torch.fx.GraphModule):
            continue
        for node in gm.graph.nodes:
            if "kernel_idx" in node.kwargs:
                kernel = kernel_side_table.get_kernel(node.kwargs["kernel_idx"])
                constants = kernel_side_table.get_constant_args(node.kwargs["constant_args_idx"])
                found.append(f"{_kernel_identity(kernel)} {_stable_repr(constants)}")
    return found


def _tensor_digest(value: Any) -> str:
    if not isinstance(value, torch.Tensor):
        return _stable_repr(value)
    data = value.detach().cpu().contiguous()
    raw = data.view(torch.uint8) if data.dtype != torch.bool and data.numel() else data.to(torch.uint8)
    return f"{data.dtype} {tuple(data.shape)} {hashlib.sha256(raw.numpy().tobytes()).hexdigest()}"


def _meta(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return [str(value.dtype), list(value.shape), list(value.stride()), str(value.device)]
    if isinstance(value, (list, tuple)):
        return [_meta(v) for v in value]
    if isinstance(value, dict):
        return {k: _meta(v) for k, v in sorted(value.items())}
    return repr(value)


def program_key(ep, family: str) -> str:
    """The store key of `family`'s library (its compile options are the family's) compiled from `ep`."""
    graph = ep.graph_module.print_readable(print_output=False, include_stride=True, include_device=True)
    graph = _SIDE_TABLE_INDEX.sub(r"\1 = ?", graph)
    described = _canonical("\n".join([graph, str(ep.range_constraints), str(ep.call_spec)]))
    tensors = {name: _tensor_digest(t) for name, t in sorted({**ep.state_dict, **ep.constants}.items())}
    parts = {
        "graph": described,
        "launches": _launches(ep),
        "tensors": tensors,
        "examples": _meta(ep.example_inputs),
        "family": family,
        "versions": [torch.__version__, triton.__version__],
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:32]


def compiled_once(key: str, path: str, compile_here: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """The library at `path`: linked from the run's store when a child compiled `key` already, else compiled here
    (`compile_here` writes `path` and returns what it says of the compile) and stored. Outside a run (no store),
    compiled here. The detail says which: `package_key`, and `reused_from` where it was not compiled here."""
    store = os.environ.get(PACKAGE_STORE_ENV)
    if not store:
        return compile_here()
    entry = Path(store) / key
    stored, record = entry / "library", entry / "record.json"
    entry.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(entry) + ".lock"):
        if record.exists():
            _link(stored, Path(path))
            said = json.loads(record.read_text())
            return {**said["detail"], "package_key": key, "reused_from": said["compiled_at"]}
        detail = compile_here()
        entry.mkdir(exist_ok=True)
        _link(Path(path), stored)
        write_atomic(record, json.dumps({"detail": detail, "compiled_at": str(path)}))
        return {**detail, "package_key": key}


def _link(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    target.unlink(missing_ok=True)
    try:
        os.link(source, target)
    except OSError:  # another file system
        shutil.copy2(source, target)
