"""Wrapping-style axis: the ways people hand a Triton kernel to PyTorch, and `as_shipped`, a user's op run as it is.

A style turns a `Kernel` into an op with the kernel's declared signature (`build`) and names the graph node that
proves a traced graph holds the kernel (`graph_marker`). What it needs of a kernel (`needs`) decides where it
applies; where it does not, `why_not` says why (never a skip). Adding a style means adding one `Style(...)` below.
`as_shipped` wraps nothing: it hands on an `Op`'s own callable, and its graph proof is what the op launched in eager
(compat.child.launches).
"""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass
from typing import Callable

import torch
import triton
from torch.library import triton_op, wrap_triton
from torch.testing._internal.two_tensor import TwoTensor
from torch.utils.flop_counter import register_flop_formula

from ..errors import RegistryError
from .contract import MISSING_FEATURE, Entry, Kernel, Op, Tensor, signed, tensors_tuple
from .kernels import KERNELS

OP_NAMESPACE = "compat"
RAW_MARKER = "triton_kernel_wrapper"  # the higher-order op Dynamo puts a traced raw launch into


# The documentation groups styles by what they vary, in this order.
FAMILIES = {
    "registration": "how the op is registered with torch.library (or not at all)",
    "launch idiom": "how a plain Python function launches the kernel",
    "autotune & heuristics": "Triton's decorators that choose launch parameters, and what they are told",
    "autograd": "how the kernel's gradient is attached",
    "as shipped": "your op exactly as you ship it, run unchanged",
}


# The four ways the tutorials wrap a kernel; every other style is a variant of one of them (`variant_of`).
CANONICAL_STYLES = ("raw_jit", "triton_op", "custom_op", "autograd_function")


@dataclass(frozen=True)
class Style:
    name: str
    doc: str
    build: Callable[..., Callable]  # the kernel (an Op, for as_shipped) -> the op
    # A substring of the traced node's target; None: the op's own launches prove it (as_shipped).
    graph_marker: Callable[[Kernel], str] | None
    needs: frozenset[str] = frozenset()  # features() the style uses (a bare kernel's "triton" is added below)
    custom_op: bool = False  # registers a torch.library op, so torch.library.opcheck applies
    cpu_kernel: bool = False  # has a CPU path, so it runs on the plain `cpu` device
    flop_formula: bool = False  # registers a FLOP formula, which flop_count then holds the count to
    family: str = "registration"  # its FAMILIES group in the documentation
    # Per stage, the feature an entry needs for the stage to apply in this style (as_shipped invents no FLOP
    # formula, gradient or library op of its own).
    stage_needs: tuple[tuple[str, str], ...] = ()
    # What the catalogue and the kernels select styles by (styles_where):
    traced_op: bool = False  # a triton_op launching through wrap_triton: its launch can be traced into the graph
    heuristics: str | None = None  # "size": @triton.heuristics reading a size (a guard on it); "constant": reading none
    heuristics_outermost: bool = False  # @triton.heuristics is the outermost decorator of what the op launches
    basic: bool = False  # the plain style of its way of launching (raw, triton_op, custom_op)
    # The canonical style this one varies (an answer names it first); None: it is one of them, or as_shipped.
    variant_of: str | None = None

    def __post_init__(self):
        if self.family not in FAMILIES:
            raise RegistryError(f"style {self.name!r}: family {self.family!r} is none of {', '.join(FAMILIES)}")
        if self.variant_of is not None and self.variant_of not in CANONICAL_STYLES:
            raise RegistryError(
                f"style {self.name!r}: variant_of {self.variant_of!r} is none of the canonical styles "
                f"{', '.join(CANONICAL_STYLES)}"
            )
        # A style wraps a bare kernel unless it runs an op as shipped; one that registers an op needs a schema.
        implied = {"triton"} if "shipped" not in self.needs else set()
        implied |= {"schema"} if self.custom_op and "shipped" not in self.needs else set()
        object.__setattr__(self, "needs", frozenset(self.needs | implied))

    @property
    def canonical(self) -> str | None:
        """The canonical style this one is or varies; None for as_shipped, which wraps nothing."""
        return self.variant_of or (self.name if self.name in CANONICAL_STYLES else None)

    @property
    def raw_launch(self) -> bool:
        """Launched outside any op: a traced graph holds the launch itself (the kernel-wrapper node)."""
        return self.graph_marker is _raw

    def why_not(self, kernel: Entry) -> str | None:
        """Why the style does not apply to the kernel, or None when it does."""
        allowed = getattr(kernel, "styles", None)
        if allowed is not None and not (allowed(self) if callable(allowed) else self.name in allowed):
            return getattr(kernel, "styles_why", "") or f"the kernel runs only the styles {', '.join(allowed)}"
        missing = sorted(self.needs - kernel.features())
        return "; ".join(MISSING_FEATURE[m] for m in missing) or None

    def applies_to(self, kernel: Entry) -> bool:
        return self.why_not(kernel) is None

    def why_not_in(self, stage: str, kernel: Entry) -> str | None:
        """Why a stage does not apply to the kernel in this style (a feature the style needs there), or None."""
        need = dict(self.stage_needs).get(stage)
        return MISSING_FEATURE[need] if need and need not in kernel.features() else None


def op_name(kernel: Kernel, style: str) -> str:
    return f"{kernel.name}_{style}"


def _launcher(kernel: Kernel, launched, meta=None, wrap: bool = False):
    """A function with the kernel's declared signature that launches `launched` (torch.library reads the signature).
    `wrap`: call `wrap_triton(launched)` at each launch, inside the traced code, as users write it (Dynamo handles
    the call to wrap_triton, not a wrapper object made beforehand)."""
    meta = dict(kernel.meta if meta is None else meta)

    def launch(*args):  # a def, not a lambda: torch >= 2.13's triton_op reads its source to find the kernels
        return kernel.launch(wrap_triton(launched) if wrap else launched, meta, *args)

    return kernel.with_defaults(launch)


def _library_op(kernel: Kernel, style: str, impl):
    return triton_op(f"{OP_NAMESPACE}::{op_name(kernel, style)}", mutates_args=kernel.mutates)(impl)


# ---- the decorated kernels autotune / heuristics styles launch ----


def _untuned_meta(kernel: Kernel) -> dict:
    """The launch constexprs no autotune config or heuristic chooses."""
    return {k: v for k, v in kernel.meta if k not in kernel.tuning.names}


def _autotuned(jit, kernel: Kernel, over_tunables: bool = True, pre_hook=None, **autotune):
    """`@triton.autotune` over the tunables' configs (each with `pre_hook`, if given), keyed on the declared sizes;
    `autotune`: its other arguments (prune_configs_by, restore_value, reset_to_zero)."""
    tunable = kernel.tuning
    if over_tunables:
        configs = tunable.triton_configs(pre_hook)
    else:  # the tunables are someone else's to choose (a heuristic): autotune the warps
        configs = [triton.Config({}, num_warps=w) for w in (2, 4)]
    return triton.autotune(configs=configs, key=list(tunable.key), **autotune)(jit)


def _heuristic(jit, kernel: Kernel):
    """Each tunable constexpr: the smallest config's value while the first key argument is at most the threshold,
    else the largest's (a heuristic that reads a size, as real ones do)."""
    tunable = kernel.tuning
    size = tunable.key[0]
    small, large = tunable.smallest(), tunable.largest()
    return triton.heuristics(
        {
            name: (lambda lo, hi: lambda args: lo if args[size] <= tunable.threshold else hi)(small[name], large[name])
            for name in tunable.names
        }
    )(jit)


def _constant_heuristic(jit, kernel: Kernel):
    """Each tunable constexpr: the kernel's own launch value (the largest config's where it declares none),
    whatever the arguments: a heuristic that reads no size."""
    own, large = dict(kernel.meta), kernel.tuning.largest()
    return triton.heuristics(
        {name: (lambda value: lambda args: value)(own.get(name, large[name])) for name in kernel.tuning.names}
    )(jit)


def _keep_smaller_half(configs, named_args, **kwargs):
    """An `early_config_prune`: the first half of the configs (the smaller blocks), as pruners drop configs that
    do not fit."""
    return configs[: max(1, len(configs) // 2)]


def _no_op_pre_hook(nargs) -> None:
    """A config `pre_hook` that changes nothing: torch refuses the hook itself, not what it does."""


# ---- builders ----


def _raw_jit(kernel: Kernel):
    return _launcher(kernel, kernel.jit)


def _wrap_triton(kernel: Kernel):
    return _launcher(kernel, kernel.jit, wrap=True)


def _triton_op(kernel: Kernel, style: str = "triton_op"):
    return _library_op(kernel, style, _launcher(kernel, kernel.jit, wrap=True))


def _custom_op(kernel: Kernel):
    op = torch.library.custom_op(f"{OP_NAMESPACE}::{op_name(kernel, 'custom_op')}", mutates_args=kernel.mutates)(
        _launcher(kernel, kernel.jit)
    )
    op.register_fake(kernel.with_defaults(kernel.reference))  # it only allocates and computes with torch ops
    return op


def _triton_op_cpu_fallback(kernel: Kernel):
    op = _triton_op(kernel, "triton_op_cpu_fallback")
    op.register_kernel("cpu")(kernel.with_defaults(kernel.reference))
    return op


def _triton_op_flops(kernel: Kernel):
    op = _triton_op(kernel, "triton_op_flops")

    if kernel.flops is None:
        raise RegistryError(f"kernel {kernel.name!r} declares no FLOP formula, which triton_op_flops needs")
    flops = kernel.with_defaults(kernel.flops)

    @register_flop_formula(getattr(torch.ops, OP_NAMESPACE).__getattr__(op_name(kernel, "triton_op_flops")))
    def _(*args, out_shape=None, **kwargs) -> int:
        # Tensors arrive as their shapes, an argument equal to its default not at all, and the output's shape too.
        return flops(*args, **kwargs)

    return op


def _triton_op_subclass(kernel: Kernel):
    op = _triton_op(kernel, "triton_op_subclass")

    # The op receives a wrapper subclass holding two tensors; its __torch_dispatch__ runs the op on each. Both halves
    # hold x, so averaging them is exact and a half computed wrongly shows as a mismatch.
    def through_subclass(x):
        y = op(TwoTensor(x, x.clone()))
        return y.a * 0.5 + y.b * 0.5

    return through_subclass


def _autotune_raw(kernel: Kernel):
    return _launcher(kernel, _autotuned(kernel.jit, kernel), meta=_untuned_meta(kernel))


def _autotune_triton_op(kernel: Kernel):
    return _library_op(
        kernel,
        "autotune_triton_op",
        _launcher(kernel, _autotuned(kernel.jit, kernel), meta=_untuned_meta(kernel), wrap=True),
    )


def _heuristics_raw(kernel: Kernel):
    return _launcher(kernel, _heuristic(kernel.jit, kernel), meta=_untuned_meta(kernel))


def _heuristics_triton_op(kernel: Kernel):
    return _library_op(
        kernel,
        "heuristics_triton_op",
        _launcher(kernel, _heuristic(kernel.jit, kernel), meta=_untuned_meta(kernel), wrap=True),
    )


def _autotune_heuristics_triton_op(kernel: Kernel):
    # @triton.autotune over @triton.heuristics: the heuristic picks the blocks, autotune the warps.
    fn = _autotuned(_heuristic(kernel.jit, kernel), kernel, over_tunables=False)
    return _library_op(
        kernel, "autotune_heuristics_triton_op", _launcher(kernel, fn, meta=_untuned_meta(kernel), wrap=True)
    )


def _heuristics_autotune_triton_op(kernel: Kernel):
    # @triton.heuristics over @triton.autotune: the decorator order torch's tracing does not look through.
    fn = _heuristic(_autotuned(kernel.jit, kernel, over_tunables=False), kernel)
    return _library_op(
        kernel, "heuristics_autotune_triton_op", _launcher(kernel, fn, meta=_untuned_meta(kernel), wrap=True)
    )


def _autotune_variant(style: str, options: Callable[[Kernel], dict]):
    """A triton_op launching the kernel autotuned with `options(kernel)`, `_autotuned`'s extra arguments (they may
    name the kernel's pointers)."""

    def build(kernel: Kernel):
        return _library_op(
            kernel,
            style,
            _launcher(kernel, _autotuned(kernel.jit, kernel, **options(kernel)), meta=_untuned_meta(kernel), wrap=True),
        )

    return build


def _heuristics_constant_raw(kernel: Kernel):
    return _launcher(kernel, _constant_heuristic(kernel.jit, kernel), meta=_untuned_meta(kernel))


def _heuristics_constant_triton_op(kernel: Kernel):
    return _library_op(
        kernel,
        "heuristics_constant_triton_op",
        _launcher(kernel, _constant_heuristic(kernel.jit, kernel), meta=_untuned_meta(kernel), wrap=True),
    )


def _do_not_specialize_triton_op(kernel: Kernel):
    # The kernel jitted anew with its size arguments (the autotune key) left unspecialised: no ==1 or %16 variant.
    jit = triton.jit(kernel.jit.fn, do_not_specialize=list(kernel.tuning.key))
    return _library_op(kernel, "do_not_specialize_triton_op", _launcher(kernel, jit, wrap=True))


class _Warmed:
    """An older version of Triton's fused-softmax tutorial, its cache of compiled kernels (the current tutorial warms
    up on every call, which this does not model): `kernel.warmup(...)` compiles the kernel once, at the first
    launch's arguments, and the compiled kernel it returns is launched on a grid the caller computes, every argument
    (the constexprs too) positional. Later launches reuse that one compiled kernel, its specialisations (sizes equal
    to 1 or divisible by 16, pointer alignment) those of the first launch's arguments."""

    def __init__(self, jit):
        self.jit, self.compiled = jit, None

    def __getitem__(self, grid):
        def launch(*args, **meta):
            fixed = tuple(grid(meta) if callable(grid) else grid)
            fixed += (1,) * (3 - len(fixed))
            if self.compiled is None:
                self.compiled = self.jit.warmup(*args, grid=fixed, **meta)
            self.compiled[fixed](*args, *(meta[name] for name in self.jit.arg_names[len(args) :]))

        return launch


def _warmup_launch(kernel: Kernel):
    return _launcher(kernel, _Warmed(kernel.jit))


def _split(kernel: Kernel, args: tuple) -> tuple[list, list]:
    """(the tensor arguments, to save for backward; the others, to keep as they are)."""
    return (
        [a for spec, a in zip(kernel.inputs, args, strict=False) if isinstance(spec, Tensor)],
        [a for spec, a in zip(kernel.inputs, args, strict=False) if not isinstance(spec, Tensor)],
    )


def _merge(kernel: Kernel, tensors: list, others: list) -> list:
    t, o = iter(tensors), iter(others)
    return [next(t) if isinstance(spec, Tensor) else next(o) for spec in kernel.inputs]


def _outputs_and_saved(kernel: Kernel, result) -> tuple:
    """A launch's result split into the op's outputs (as the op returns them) and the tensors saved for backward."""
    if not kernel.saved:
        return result, ()
    result, n = tuple(result), len(kernel.outputs)
    return (result[0] if n == 1 else result[:n]), result[n:]


def _input_grads(kernel: Kernel, grads) -> tuple:
    """The backward kernel's gradients (one per differentiable tensor input) as autograd wants them: one per input,
    None for scalars and non-differentiable tensors."""
    grads = iter(grads if isinstance(grads, (tuple, list)) else (grads,))
    return tuple(next(grads) if isinstance(spec, Tensor) and spec.differentiable else None for spec in kernel.inputs)


def _named_parameters(kernel: Kernel, body: Callable) -> Callable:
    """`body(ctx, args)` as a function of `(ctx, <each input by its declared name>)`."""
    names = ", ".join(a.name for a in kernel.inputs)
    namespace = {"body": body}
    exec(f"def forward(ctx, {names}):\n    return body(ctx, ({names},))\n", namespace)  # noqa: S102 - names are identifiers
    return namespace["forward"]


def _autograd_function(kernel: Kernel, wrap: bool = False):
    bwd = kernel.gradient
    meta = dict(kernel.meta)
    launched = (lambda jit: wrap_triton(jit)) if wrap else (lambda jit: jit)

    def forward_body(ctx, args):
        tensors, ctx.others = _split(kernel, args)
        outputs, saved = _outputs_and_saved(kernel, kernel.launch(launched(kernel.jit), meta, *args))
        ctx.save_for_backward(*tensors, *saved)
        ctx.inputs = len(tensors)
        return outputs

    class KernelFunction(torch.autograd.Function):
        # forward(ctx, <each input by name>), as users write it: Dynamo binds a `*args` forward wrongly (torch 2.13
        # passes one of two tensor arguments), which no user's Function meets.
        forward = staticmethod(_named_parameters(kernel, forward_body))

        @staticmethod
        def backward(ctx, *grads):
            tensors = list(ctx.saved_tensors)
            args = _merge(kernel, tensors[: ctx.inputs], ctx.others)
            return _input_grads(kernel, bwd.launch(launched(bwd.jit), meta, *args, *tensors[ctx.inputs :], *grads))

    def apply(*args):
        return KernelFunction.apply(*args)

    return signed(apply, kernel.signature())


def _register_autograd(kernel: Kernel):
    bwd = kernel.gradient
    meta = dict(kernel.meta)
    op = _triton_op(kernel, "register_autograd")
    forward = kernel.signature()
    differentiable = [a for a in kernel.tensors if a.differentiable]
    tensor_params = [
        inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=torch.Tensor)
        for name in (*kernel.saved, *(f"grad_{o}" for o in kernel.outputs))
    ]
    returns = torch.Tensor if len(differentiable) == 1 else tensors_tuple(len(differentiable))

    def backward_impl(*args):
        grads = tuple(bwd.launch(wrap_triton(bwd.jit), meta, *args))
        # An op returns no alias of its input: a gradient the kernel wrote into an argument (mutates) is copied out.
        grads = tuple(g.clone() if any(g is a for a in args) else g for g in grads)
        return grads[0] if len(grads) == 1 else grads

    signed(
        backward_impl,
        inspect.Signature(
            [p.replace(default=inspect.Parameter.empty) for p in forward.parameters.values()] + tensor_params,
            return_annotation=returns,
        ),
    )
    backward_op = triton_op(
        f"{OP_NAMESPACE}::{op_name(kernel, 'register_autograd')}_backward", mutates_args=bwd.mutates
    )(backward_impl)

    def setup_context(ctx, inputs, output):
        tensors, ctx.others = _split(kernel, inputs)
        ctx.save_for_backward(*tensors, *_outputs_and_saved(kernel, output)[1])
        ctx.inputs = len(tensors)

    def backward(ctx, *grads):
        tensors = list(ctx.saved_tensors)
        args = _merge(kernel, tensors[: ctx.inputs], ctx.others)
        return _input_grads(kernel, backward_op(*args, *tensors[ctx.inputs :], *grads[: len(kernel.outputs)]))

    op.register_autograd(backward, setup_context=setup_context)
    return op


# ---- registration and launch idioms of real projects ----

_LIBRARIES: list = []  # a torch.library.Library removes its registrations when collected: kept for the process


def _library_define(kernel: Kernel):
    """vLLM's and SGLang's idiom: a FRAGMENT library, `define` with a schema, a CUDA `impl` launching the raw kernel,
    and a fake."""
    name = op_name(kernel, "library_define")
    impl = _launcher(kernel, kernel.jit)
    lib = torch.library.Library(OP_NAMESPACE, "FRAGMENT")
    lib.define(name + torch.library.infer_schema(impl, mutates_args=kernel.mutates))
    lib.impl(name, impl, "CUDA")
    torch.library.register_fake(f"{OP_NAMESPACE}::{name}", kernel.with_defaults(kernel.reference), lib=lib)
    _LIBRARIES.append(lib)
    return getattr(getattr(torch.ops, OP_NAMESPACE), name).default


def _named(kernel: Kernel, style: str, fn):
    """`fn` under a name of its own, which a graph that calls it as a whole shows (allow_in_graph)."""
    fn.__name__ = fn.__qualname__ = op_name(kernel, style)
    return fn


def _allow_in_graph(kernel: Kernel):
    # unsloth's idiom: Dynamo puts the call in the graph without tracing into it.
    return torch.compiler.allow_in_graph(_named(kernel, "allow_in_graph", _launcher(kernel, kernel.jit)))


def _compiler_disable(kernel: Kernel):
    # unsloth's other idiom: Dynamo runs the launcher eagerly, a graph break (an error under fullgraph=True).
    return torch.compiler.disable(_launcher(kernel, kernel.jit))


def _device_context(kernel: Kernel):
    """flash-attention's and Liger-Kernel's idiom: the raw launch inside `with torch.cuda.device(x.device)`, so it
    lands on the input's GPU (pytorch/pytorch#122768)."""
    meta = dict(kernel.meta)
    first = [i for i, spec in enumerate(kernel.inputs) if isinstance(spec, Tensor)][0]

    def launch(*args):
        with torch.cuda.device(args[first].device):
            return kernel.launch(kernel.jit, meta, *args)

    return kernel.with_defaults(launch)


def _wrapper_outside(kernel: Kernel):
    # The wrap_triton wrapper made once, when the op is built, and launched from inside (pytorch/pytorch#154365).
    return _launcher(kernel, wrap_triton(kernel.jit))


def _triton_op_no_wrap(kernel: Kernel):
    # A triton_op whose body launches the raw kernel, without wrap_triton: tracing runs the body itself.
    return _library_op(kernel, "triton_op_no_wrap", _launcher(kernel, kernel.jit))


def _as_shipped(op: Op):
    """The op exactly as shipped (a Module(cls, ...) is made into the model by compat.matrix.model)."""
    return op.shipped


def _op_marker(style: str) -> Callable[[Kernel], str]:
    return lambda kernel: f"{OP_NAMESPACE}.{op_name(kernel, style)}"


def _raw(kernel: Kernel) -> str:
    return RAW_MARKER


STYLES: dict[str, Style] = {
    s.name: s
    for s in (
        Style(
            "raw_jit",
            "`kernel[grid](...)` launched from a plain Python function.",
            _raw_jit,
            _raw,
            family="launch idiom",
            basic=True,
        ),
        Style(
            "wrap_triton",
            "`torch.library.wrap_triton(kernel)[grid](...)` from a plain Python function, outside any op.",
            _wrap_triton,
            _raw,
            family="launch idiom",
            variant_of="raw_jit",
        ),
        Style(
            "triton_op",
            "`@torch.library.triton_op(...)` calling `torch.library.wrap_triton(kernel)[grid](...)`.",
            _triton_op,
            _op_marker("triton_op"),
            custom_op=True,
            traced_op=True,
            basic=True,
        ),
        Style(
            "custom_op",
            "An opaque `@torch.library.custom_op` launching the raw kernel, with `register_fake` "
            "computing the eager reference.",
            _custom_op,
            _op_marker("custom_op"),
            custom_op=True,
            basic=True,
        ),
        Style(
            "triton_op_cpu_fallback",
            '`triton_op` plus `register_kernel("cpu")` computing the eager reference.',
            _triton_op_cpu_fallback,
            _op_marker("triton_op_cpu_fallback"),
            custom_op=True,
            cpu_kernel=True,
            traced_op=True,
            variant_of="triton_op",
        ),
        Style(
            "triton_op_flops",
            "`triton_op` plus `torch.utils.flop_counter.register_flop_formula`.",
            _triton_op_flops,
            _op_marker("triton_op_flops"),
            needs=frozenset({"flops"}),
            custom_op=True,
            flop_formula=True,
            traced_op=True,
            variant_of="triton_op",
        ),
        Style(
            "triton_op_subclass",
            "`triton_op` called on a wrapper tensor subclass holding two tensors "
            "(`TwoTensor`), built inside the model.",
            _triton_op_subclass,
            _op_marker("triton_op_subclass"),
            needs=frozenset({"unary"}),
            custom_op=True,
            traced_op=True,
            variant_of="triton_op",
        ),
        Style(
            "autotune_raw",
            "`@triton.autotune` over the kernel's tunable constexprs, keyed on its declared sizes, launched raw.",
            _autotune_raw,
            _raw,
            needs=frozenset({"tunable"}),
            family="autotune & heuristics",
            variant_of="raw_jit",
        ),
        Style(
            "autotune_triton_op",
            "The autotuned kernel through `triton_op` + `wrap_triton`.",
            _autotune_triton_op,
            _op_marker("autotune_triton_op"),
            needs=frozenset({"tunable"}),
            custom_op=True,
            family="autotune & heuristics",
            traced_op=True,
            variant_of="triton_op",
        ),
        Style(
            "autotune_prune_triton_op",
            "`autotune_triton_op` with `prune_configs_by={'early_config_prune': ...}` "
            "keeping the smaller half of the configs.",
            _autotune_variant(
                "autotune_prune_triton_op", lambda k: {"prune_configs_by": {"early_config_prune": _keep_smaller_half}}
            ),
            _op_marker("autotune_prune_triton_op"),
            needs=frozenset({"tunable"}),
            custom_op=True,
            family="autotune & heuristics",
            traced_op=True,
            variant_of="triton_op",
        ),
        Style(
            "autotune_restore_value_triton_op",
            "`autotune_triton_op` with `restore_value=` the pointers the kernel "
            "writes into, so benchmarking leaves them as they were.",
            _autotune_variant(
                "autotune_restore_value_triton_op", lambda k: {"restore_value": list(k.mutated_pointers())}
            ),
            _op_marker("autotune_restore_value_triton_op"),
            needs=frozenset({"tunable_inplace"}),
            custom_op=True,
            family="autotune & heuristics",
            traced_op=True,
            variant_of="triton_op",
        ),
        Style(
            "autotune_reset_to_zero_triton_op",
            "`autotune_triton_op` with `reset_to_zero=` the pointers the kernel "
            "writes into: zeroed before every benchmark run and before the "
            "launch that counts.",
            _autotune_variant(
                "autotune_reset_to_zero_triton_op", lambda k: {"reset_to_zero": list(k.mutated_pointers())}
            ),
            _op_marker("autotune_reset_to_zero_triton_op"),
            needs=frozenset({"tunable_inplace"}),
            custom_op=True,
            family="autotune & heuristics",
            traced_op=True,
            variant_of="triton_op",
        ),
        Style(
            "autotune_pre_hook_triton_op",
            "`autotune_triton_op` whose `triton.Config`s carry a `pre_hook` (one that changes nothing).",
            _autotune_variant("autotune_pre_hook_triton_op", lambda k: {"pre_hook": _no_op_pre_hook}),
            _op_marker("autotune_pre_hook_triton_op"),
            needs=frozenset({"tunable"}),
            custom_op=True,
            family="autotune & heuristics",
            traced_op=True,
            variant_of="triton_op",
        ),
        Style(
            "do_not_specialize_triton_op",
            "The kernel jitted with `do_not_specialize=` its size arguments (the "
            "autotune key), through `triton_op` + `wrap_triton`.",
            _do_not_specialize_triton_op,
            _op_marker("do_not_specialize_triton_op"),
            needs=frozenset({"tunable"}),
            custom_op=True,
            family="autotune & heuristics",
            traced_op=True,
            variant_of="triton_op",
        ),
        Style(
            "heuristics_raw",
            "`@triton.heuristics` whose functions read a size (its first autotune key, against "
            "a threshold) to choose the tunable constexprs, launched raw.",
            _heuristics_raw,
            _raw,
            needs=frozenset({"tunable"}),
            family="autotune & heuristics",
            heuristics="size",
            variant_of="raw_jit",
        ),
        Style(
            "heuristics_triton_op",
            "The size-reading heuristics kernel of `heuristics_raw` through `triton_op` + `wrap_triton`.",
            _heuristics_triton_op,
            _op_marker("heuristics_triton_op"),
            needs=frozenset({"tunable"}),
            custom_op=True,
            family="autotune & heuristics",
            traced_op=True,
            heuristics="size",
            heuristics_outermost=True,
            variant_of="triton_op",
        ),
        Style(
            "heuristics_constant_raw",
            "`@triton.heuristics` whose functions return a constant (the kernel's own "
            "launch value), reading no argument, launched raw.",
            _heuristics_constant_raw,
            _raw,
            needs=frozenset({"tunable"}),
            family="autotune & heuristics",
            heuristics="constant",
            variant_of="raw_jit",
        ),
        Style(
            "heuristics_constant_triton_op",
            "The constant heuristics kernel of `heuristics_constant_raw` through `triton_op` + `wrap_triton`.",
            _heuristics_constant_triton_op,
            _op_marker("heuristics_constant_triton_op"),
            needs=frozenset({"tunable"}),
            custom_op=True,
            family="autotune & heuristics",
            traced_op=True,
            heuristics="constant",
            heuristics_outermost=True,
            variant_of="triton_op",
        ),
        Style(
            "autotune_heuristics_triton_op",
            "`@triton.autotune` (num_warps) over `@triton.heuristics` (the tunables), through `triton_op`.",
            _autotune_heuristics_triton_op,
            _op_marker("autotune_heuristics_triton_op"),
            needs=frozenset({"tunable"}),
            custom_op=True,
            family="autotune & heuristics",
            traced_op=True,
            heuristics="size",
            variant_of="triton_op",
        ),
        Style(
            "heuristics_autotune_triton_op",
            "`@triton.heuristics` (the tunables) over `@triton.autotune` (num_warps), through `triton_op`.",
            _heuristics_autotune_triton_op,
            _op_marker("heuristics_autotune_triton_op"),
            needs=frozenset({"tunable"}),
            custom_op=True,
            family="autotune & heuristics",
            traced_op=True,
            heuristics="size",
            heuristics_outermost=True,
            variant_of="triton_op",
        ),
        Style(
            "autograd_function",
            "`torch.autograd.Function` whose forward and backward launch raw kernels.",
            _autograd_function,
            _raw,
            needs=frozenset({"backward"}),
            family="autograd",
        ),
        Style(
            "register_autograd",
            "`triton_op` + `register_autograd` whose backward is itself a `triton_op`.",
            _register_autograd,
            _op_marker("register_autograd"),
            needs=frozenset({"backward"}),
            custom_op=True,
            family="autograd",
            traced_op=True,
            variant_of="triton_op",
        ),
        Style(
            "library_define",
            '`torch.library.Library(ns, "FRAGMENT")` with `define`, a CUDA `impl` launching the '
            "raw kernel, and `register_fake` (vLLM's idiom).",
            _library_define,
            _op_marker("library_define"),
            custom_op=True,
            variant_of="custom_op",
        ),
        Style(
            "allow_in_graph",
            "The raw launcher wrapped in `torch.compiler.allow_in_graph` (unsloth's idiom).",
            _allow_in_graph,
            lambda kernel: op_name(kernel, "allow_in_graph"),
            family="launch idiom",
            variant_of="raw_jit",
        ),
        Style(
            "compiler_disable",
            "The raw launcher wrapped in `torch.compiler.disable`: Dynamo runs it eagerly, a graph break.",
            _compiler_disable,
            _raw,
            family="launch idiom",
            variant_of="raw_jit",
        ),
        Style(
            "device_context",
            "The raw launch inside `with torch.cuda.device(x.device):` (flash-attention, Liger-Kernel).",
            _device_context,
            _raw,
            family="launch idiom",
            variant_of="raw_jit",
        ),
        Style(
            "autograd_wrap_triton",
            "`torch.autograd.Function` whose forward and backward launch through "
            "`wrap_triton` (flash-attention's newer code).",
            functools.partial(_autograd_function, wrap=True),
            _raw,
            needs=frozenset({"backward"}),
            family="autograd",
            variant_of="autograd_function",
        ),
        Style(
            "wrapper_outside",
            "A `wrap_triton(kernel)` wrapper made once, outside the traced function, launched inside it.",
            _wrapper_outside,
            _raw,
            family="launch idiom",
            variant_of="raw_jit",
        ),
        Style(
            "triton_op_no_wrap",
            "`@triton_op` whose body launches the raw kernel, without `wrap_triton`.",
            _triton_op_no_wrap,
            _op_marker("triton_op_no_wrap"),
            custom_op=True,
            variant_of="triton_op",
        ),
        Style(
            "warmup_launch",
            "The kernel compiled once by `.warmup(...)` at the first launch's arguments, and the "
            "compiled kernel launched on a computed grid, for every later size (an older fused-softmax "
            "tutorial's cache; the current one warms up on every call).",
            _warmup_launch,
            _raw,
            family="launch idiom",
            variant_of="raw_jit",
        ),
        Style(
            "as_shipped",
            "Your op exactly as you ship it (compat.Op): a torch.library op, an autograd.Function's "
            "apply, an nn.Module, or a function that launches kernels, called unchanged; a traced "
            "graph must hold what it launched in eager.",
            _as_shipped,
            None,
            needs=frozenset({"shipped"}),
            custom_op=True,
            cpu_kernel=True,
            flop_formula=True,
            family="as shipped",
            stage_needs=(("opcheck", "library_op"), ("flop_count", "flops"), ("compile_backward", "differentiable")),
        ),
    )
}


@functools.cache
def build_op(style_name: str, kernel_name: str):
    """The style's op for a kernel; cached because a custom op is registered once per process."""
    return STYLES[style_name].build(KERNELS[kernel_name])


def styles_where(test: Callable[[Style], bool]) -> tuple[str, ...]:
    """The names of the styles that pass `test`, in STYLES' order: a list a new style joins by its attributes."""
    return tuple(name for name, style in STYLES.items() if test(style))
