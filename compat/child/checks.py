"""The probe stages' checks, and what every check of a model shares: the model around the style's op and around
the kernel's eager reference, the comparison at the checked batches, and the proof that a traced graph holds the
kernel."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import model as workload
from .. import numerics, outcomes
from ..outcomes import Outcome

if TYPE_CHECKING:
    from ..cells import Cell


def models(cell: "Cell"):
    """The model around the style's op, and the same model around the kernel's eager reference."""
    from ..kernels import KERNELS
    from ..styles import build_op

    kernel = KERNELS[cell.kernel]
    op = build_op(cell.style, cell.kernel)
    return (workload.build(lambda h: kernel.use(op, h), cell.dtype, cell.device),
            workload.build(lambda h: kernel.use(kernel.reference, h), cell.dtype, cell.device))


def check_batches(fn, reference, cell: "Cell", batches=workload.CHECK_BATCHES, detail: dict | None = None) -> Outcome:
    import torch

    comparisons = []
    with torch.no_grad():
        for batch in batches:
            x = workload.make_input(batch, cell.dtype, cell.device)
            comparisons.append(numerics.compare(fn(x), reference(x), f"batch {batch}"))
    return outcomes.from_comparisons(comparisons, detail)


def graph_targets(graph_modules) -> list[str]:
    """Call targets of FX graph modules and their nested subgraphs (autograd.Function, control flow), by name
    (builtins without their memory address, so results diff cleanly)."""
    import torch
    import torch.fx

    names = []
    for gm in graph_modules:
        for module in gm.modules():
            if not isinstance(module, torch.fx.GraphModule):
                continue
            for node in module.graph.nodes:
                if node.op == "call_function":
                    name = str(node.target)
                    names.append(getattr(node.target, "__name__", name) if name.startswith("<built-in") else name)
                    # A mutating op appears as an argument of the HOP that functionalizes it (auto_functionalized).
                    names.extend(str(a) for a in node.args[:1] if isinstance(a, torch._ops.OpOverload))
    return names


def missing_node(cell: "Cell", targets: list[str], also: tuple[str, ...] = ()) -> Outcome | None:
    from ..kernels import KERNELS
    from ..styles import STYLES

    markers = (STYLES[cell.style].graph_marker(KERNELS[cell.kernel]), *also)
    if any(m in t for t in targets for m in markers):
        return None
    return Outcome("failed", "MissingKernelNode", f"no graph node matches {' or '.join(map(repr, markers))}; "
                                                   f"the kernel was not traced", detail={"graph": sorted(set(targets))})


def eager(c: "Cell") -> Outcome:
    model, reference = models(c)
    return check_batches(model, reference, c)


def flop_count(c: "Cell") -> Outcome:
    """Under FlopCounterMode the op must still compute, and its FLOPs must be counted (exactly the registered
    formula's, for a style that registers one)."""
    from torch.utils.flop_counter import FlopCounterMode

    from ..kernels import KERNELS
    from ..styles import STYLES

    model, reference = models(c)
    batch = workload.CHECK_BATCHES[1]
    flops = {}
    for name, m in (("model", model), ("reference", reference)):
        with FlopCounterMode(display=False) as counter:
            result = check_batches(m, reference, c, batches=(batch,))
        flops[name] = counter.get_total_flops()
    kernel_flops = flops["model"] - flops["reference"]  # the reference's Linears are the only other FLOPs
    result.detail.update(kernel_flops=kernel_flops, linear_flops=flops["reference"])
    if result.kind != "passed":
        return result
    if STYLES[c.style].flop_formula:
        want = KERNELS[c.kernel].flops_per_element * batch * workload.HIDDEN
        if kernel_flops != want:
            return Outcome("failed", "FlopCountWrong", f"the kernel added {kernel_flops} FLOPs; its registered "
                                                       f"formula says {want}", detail=result.detail)
    elif kernel_flops <= 0:
        return Outcome("failed", "FlopsNotCounted", f"the kernel added {kernel_flops} FLOPs to the count (the "
                                                    f"Linears alone: {flops['reference']})", detail=result.detail)
    return result


def opcheck(c: "Cell") -> Outcome:
    import torch

    from ..kernels import KERNELS
    from ..styles import OP_NAMESPACE, STYLES, build_op, op_name

    kernel, style = KERNELS[c.kernel], STYLES[c.style]
    build_op(c.style, c.kernel)
    op = getattr(getattr(torch.ops, OP_NAMESPACE), op_name(kernel, c.style)).default
    x = workload.make_input(workload.CHECK_BATCHES[1], c.dtype, c.device)[:, :workload.HIDDEN].contiguous()
    # A style with a backward gets an input that requires grad, so opcheck tests its autograd registration too.
    x.requires_grad_("backward" in style.needs)
    args = (x, torch.empty_like(x)) if kernel.mutates else (x,)
    return Outcome("passed", detail={"opcheck": {k: str(v) for k, v in torch.library.opcheck(op, args).items()}})


def _compiled(model, backend: str, **kwargs):
    import torch
    from torch._dynamo.testing import CompileCounterWithBackend

    torch._dynamo.reset()
    counter = CompileCounterWithBackend(backend)
    return torch.compile(model, backend=counter, fullgraph=True, **kwargs), counter


def proof(c: "Cell", counter, result: Outcome) -> Outcome:
    """Proof that it compiled rather than ran eager: the backend saw frames, and their graphs hold the kernel."""
    targets = graph_targets(counter.graphs)
    result.detail.update(frames=counter.frame_count, graph=sorted(set(targets)))
    if counter.frame_count == 0:
        return Outcome("failed", "NotCompiled", "torch.compile handed no frame to the backend", detail=result.detail)
    return missing_node(c, targets) or result


# How each compile stage calls torch.compile: (backend, options). The fuzz tests compile the op the same way.
COMPILERS = {"compile_eager": ("eager", {}), "compile_aot_eager": ("aot_eager", {}),
             "compile_inductor": ("inductor", {}), "compile_dynamic": ("inductor", {"dynamic": True})}


def compiled_for(stage: str, model):
    backend, options = COMPILERS[stage]
    return _compiled(model, backend, **options)


def compile_model(c: "Cell") -> Outcome:
    model, reference = models(c)
    compiled, counter = compiled_for(c.stage, model)
    return proof(c, counter, check_batches(compiled, reference, c))


def compile_dynamic(c: "Cell") -> Outcome:
    """`dynamic=True`: one graph with a symbolic batch serves a second batch size without recompiling."""
    import torch

    model, reference = models(c)
    compiled, counter = compiled_for(c.stage, model)
    first, second = workload.CHECK_BATCHES[1:]
    with torch.no_grad():
        compiled(workload.make_input(first, c.dtype, c.device))
    frames_after_first = counter.frame_count
    symbolic = [str(v.shape) for g in counter.graphs for n in g.graph.nodes if n.op == "placeholder"
                for v in [n.meta.get("example_value")]
                if isinstance(v, torch.Tensor) and any(isinstance(d, torch.SymInt) for d in v.shape)]
    result = proof(c, counter, check_batches(compiled, reference, c, batches=(first, second)))
    result.detail.update(frames_after_first=frames_after_first, symbolic_inputs=symbolic)
    if result.kind != "passed":
        return result
    if not symbolic:
        return Outcome("failed", "NotDynamic", "no graph input has a symbolic size: dynamic=True specialised",
                       detail=result.detail)
    if counter.frame_count != frames_after_first:
        return Outcome("failed", "Recompiled", f"batch {second} recompiled: {counter.frame_count} frames after "
                                               f"{frames_after_first}", detail=result.detail)
    return result


def compile_backward(c: "Cell") -> Outcome:
    """Gradients of the input and of every parameter through the compiled model, against eager PyTorch's."""
    import torch

    model, reference = models(c)
    batch = workload.CHECK_BATCHES[1]

    def grads(m, fn) -> dict:
        m.zero_grad(set_to_none=True)
        x = workload.make_input(batch, c.dtype, c.device).requires_grad_(True)
        out = fn(x)
        cotangent = torch.randn(out.shape, generator=torch.Generator().manual_seed(workload.SEED)).to(out)
        out.backward(cotangent)
        return {"x": x.grad, **{name: p.grad for name, p in m.named_parameters()}}

    compiled, counter = _compiled(model.train(), "inductor")
    got, want = grads(model, compiled), grads(reference.train(), reference)
    missing = [name for name, g in got.items() if g is None]
    if missing:
        return Outcome("failed", "MissingGradient", f"no gradient reached {', '.join(missing)}: the wrapped "
                                                    f"kernel is not differentiable in this style",
                       detail={"frames": counter.frame_count})
    comparisons = [numerics.compare(got[name], want[name], f"grad of {name}") for name in want]
    return proof(c, counter, outcomes.from_comparisons(comparisons))
