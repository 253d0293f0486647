"""Children forked from the warm server's preloaded heap, frozen (gc.freeze) or not: each child's gc time, CPU and
page faults for one Inductor compile at three sizes and one export, each child with a fresh Inductor cache:
    OMP_NUM_THREADS=1 TORCHINDUCTOR_COMPILE_THREADS=1 python child_gc.py plain|freeze"""

import gc
import importlib
import os
import resource
import sys
import tempfile
import time

from compat.child.server import PRELOAD


def child() -> None:
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp()
    import torch

    spent = {"s": 0.0, "start": 0.0}
    collections = [0, 0, 0]

    def timed(phase, info):
        if phase == "start":
            spent["start"] = time.perf_counter()
        else:
            spent["s"] += time.perf_counter() - spent["start"]
            collections[info["generation"]] += 1

    gc.callbacks.append(timed)
    cpu = time.process_time()
    compiled = torch.compile(lambda x, y: (torch.sin(x) * y).sum(dim=1) + torch.cos(y).mean())
    for rows in (8, 37, 1024):
        compiled(torch.randn(rows, 64), torch.randn(rows, 64))

    class Module(torch.nn.Module):
        def forward(self, x):
            return torch.nn.functional.gelu(x) @ x.T

    torch.export.export(Module(), (torch.randn(16, 16),))
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print(
        f"{sys.argv[1]} user {usage.ru_utime:.2f} sys {usage.ru_stime:.2f} minflt {usage.ru_minflt} "
        f"cpu {time.process_time() - cpu:.2f} gc {spent['s']:.2f} collections by generation {collections}",
        flush=True,
    )
    os._exit(0)


for module in PRELOAD:
    importlib.import_module(module)
if sys.argv[1] == "freeze":
    gc.freeze()
for _ in range(3):
    pid = os.fork()
    if pid == 0:
        child()
    os.waitpid(pid, 0)
