"""Seconds of cpp_wrapper compiles on this machine, each process in fresh Inductor and Triton caches: the first
graph (its precompiled header built, or found in Inductor's header dir, which follows TMPDIR), a second graph, and
each header's build (its .gch's mtime less its .h's). `python pch_cost.py [cuda|cpu]`, one JSON line."""

import glob
import json
import os
import sys
import tempfile
import time


def main(device: str) -> dict:
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp()
    os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp()
    start = time.monotonic()
    import torch
    import torch._inductor.codecache as codecache

    rows: dict = {"import": round(time.monotonic() - start, 1), "header_dir": codecache._HEADER_DIR}
    for name, fn in (("first", lambda x: x * 2 + 1), ("second", lambda x: torch.sin(x) * x)):
        compiled, x = torch.compile(fn, options={"cpp_wrapper": True}), torch.randn(64, device=device)
        start = time.monotonic()
        compiled(x)
        torch.accelerator.synchronize() if device != "cpu" else None
        rows[name] = round(time.monotonic() - start, 1)
    rows["headers"] = []
    for header in sorted(glob.glob(os.path.join(codecache._HEADER_DIR, "*.h"))):
        built = header + ".gch"
        took = round(os.path.getmtime(built) - os.path.getmtime(header), 1) if os.path.exists(built) else None
        rows["headers"].append([open(header).read().strip(), took])
    return rows


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1] if len(sys.argv) > 1 else "cuda")))
