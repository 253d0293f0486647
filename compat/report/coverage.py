"""Coverage of a namespace: the torch.library ops a package registers under it (once its modules are imported), and
which of them an op declared as shipped (`compat.Op`) gates. `python -m compat coverage NAMESPACE` lists them; a run
told `--compat-require-declared NAMESPACE` (ini `compat_require_declared`) fails on any op without a declaration."""

from __future__ import annotations

import torch

from ..matrix.contract import Op
from ..matrix.kernels import KERNELS


def registered(namespace: str) -> list[str]:
    """The ops registered under the namespace, as `ns::name` (overloads folded), sorted."""
    names = torch._C._dispatch_get_all_op_names()
    return sorted({n.split(".")[0] for n in names if n.startswith(f"{namespace}::")})


def declarations(namespace: str) -> dict[str, list[str]]:
    """Per registered op of the namespace, the declared entries that ship it (none: undeclared)."""
    declared: dict[str, list[str]] = {op: [] for op in registered(namespace)}
    for entry in KERNELS.values():
        if not isinstance(entry, Op):
            continue
        for op, how in ((entry.library_op, entry.name), *((h, f"{entry.name}'s helper") for h in entry.helper_ops)):
            if op is not None and op._schema.name in declared:
                declared[op._schema.name].append(how)
    return declared


def undeclared(namespace: str) -> list[str]:
    return [op for op, entries in declarations(namespace).items() if not entries]


def lines(namespaces: list[str]) -> list[str]:
    out = []
    for namespace in namespaces:
        declared = declarations(namespace)
        for op, entries in declared.items():
            out.append(f"{op}  " + (f"declared: {', '.join(entries)}" if entries else "UNDECLARED"))
        missing = sum(not e for e in declared.values())
        out.append(f"{namespace}: {len(declared) - missing} of {len(declared)} ops declared")
    return out
