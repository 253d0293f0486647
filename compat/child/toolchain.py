"""The machine's CPU vector ISAs as Inductor detects them, found once per run and handed to every child.

Inductor's `valid_vec_isa_list()` builds and loads a test library per ISA the CPU claims, one after the other; on
torch 2.11 each check starts a Python that imports torch, 40-70 s per process, and every AOTI compile needs the answer.
It depends only on the machine, the compiler and torch, so one throwaway process finds it (`python -m
compat.child.toolchain OUT.json`, started by the parent at the start of a run) and each child that compiles applies it
before Inductor would detect again. That process runs Inductor's own checks side by side (`_check_side_by_side`):
every C++ lane of a run waits for it (54 s each on one H100 at 9306f33, the fused linear cross entropy's among them).
The detection is not done in the warm server itself: it imports torch.utils.cpp_extension, whose CUDA check would
make every later fork unable to use CUDA.
"""

from __future__ import annotations

import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .protocol import ISA_FILE_ENV

WAIT_S = 600.0


def detect(path: str) -> None:
    """Run Inductor's own detection and write what it found (or why it could not)."""
    start = time.monotonic()
    try:  # torch here, not at the top: the parent imports this module for its names (compat.run.launcher)
        import torch
        from torch._inductor import cpu_vec_isa

        _check_side_by_side(cpu_vec_isa)
        isas = [
            {
                "name": str(isa),
                "class": type(isa).__name__,
                "attrs": {k: v for k, v in vars(isa).items() if isinstance(v, (bool, int, float, str))},
            }
            for isa in cpu_vec_isa.valid_vec_isa_list()
        ]
        found = {"torch": torch.__version__, "isas": isas, "seconds": round(time.monotonic() - start, 1)}
    except Exception as exc:  # noqa: BLE001 - the children then detect on their own
        found = {"error": f"{type(exc).__name__}: {exc}"}
    tmp = Path(f"{path}.tmp")
    tmp.write_text(json.dumps(found))
    tmp.replace(path)


def _check_side_by_side(cpu_vec_isa) -> None:
    """Run the check of each ISA this x86 CPU claims at once, each in a thread (each check is a compile and a load in
    subprocesses). Inductor caches each ISA's answer on the ISA itself, so `valid_vec_isa_list()` then answers from
    the same checks without running them again. Elsewhere (another architecture, a torch without the x86 checker) the
    checks run in turn, as Inductor runs them."""
    claimed: list[str] = getattr(cpu_vec_isa, "x86_isa_checker", list)()
    candidates = [
        isa for isa in cpu_vec_isa.supported_vec_isa_list if claimed and all(f in claimed for f in str(isa).split())
    ]
    if len(candidates) > 1:
        with ThreadPoolExecutor(len(candidates)) as pool:
            list(pool.map(bool, candidates))


def apply(path: str | None = None, wait_s: float = WAIT_S) -> dict:
    """Make Inductor in this process use the run's detected ISAs, waiting for the detection if it is still running.
    Returns what was applied, or why not (then Inductor detects for itself, slower but the same answer)."""
    path = path or os.environ.get(ISA_FILE_ENV)
    if not path:
        return {"applied": False, "why": f"{ISA_FILE_ENV} is not set"}
    deadline = time.monotonic() + wait_s
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            return {"applied": False, "why": f"no detection after {wait_s:.0f} s"}
        time.sleep(0.2)
    found = json.loads(Path(path).read_text())
    import torch  # as in detect
    from torch._inductor import cpu_vec_isa

    if "error" in found or found["torch"] != torch.__version__:
        return {"applied": False, "why": found.get("error") or f"detected under torch {found['torch']}"}
    known = {(type(isa).__name__, str(isa)): isa for isa in cpu_vec_isa.supported_vec_isa_list}
    isas = [known.get((entry["class"], entry["name"])) for entry in found["isas"]]
    if None in isas:
        return {"applied": False, "why": "this torch declares other ISAs than the detection found"}
    for isa, entry in zip(isas, found["isas"], strict=False):
        for key, value in entry["attrs"].items():  # what the checks set (avx512_bf16, amx_fp16 support)
            setattr(isa, key, value)
        type(isa).__bool__ = lambda self: True  # type: ignore[method-assign,union-attr]  # the check it passed
    cpu_vec_isa.valid_vec_isa_list = lambda: isas  # type: ignore[assignment]  # pick_vec_isa() reads it here
    return {"applied": True, "isas": [entry["name"] for entry in found["isas"]]}


if __name__ == "__main__":
    detect(sys.argv[1])
