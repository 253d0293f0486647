"""The kernel contract: what you declare about a Triton kernel so that the matrix can wrap it in every style, push it
through every stage and check it against eager PyTorch on any valid input.

    from compat import Dim, Kernel, Scalar, Tensor, register_kernel

    register_kernel(Kernel(
        name="axpy", doc="out = alpha * x + y",
        jit=axpy_kernel, launch=launch_axpy, reference=axpy_reference,
        inputs=(Tensor("x", ("n",)), Tensor("y", ("n",)), Scalar("alpha", 2.0)),
        dims=(Dim("n", example=4099, checks=(1, 4099, 65536), max=65536),)))

Every name is checked when declared: a bad declaration raises RegistryError naming the module that declared it, the
kernel and the problem.
"""

import inspect
import re
import sys
from dataclasses import dataclass, field
from typing import Callable, Optional, Union

import torch

from .errors import RegistryError

# Why a style or stage that needs a kernel feature (Kernel.features) does not apply to a kernel without it.
MISSING_FEATURE = {"backward": "the kernel declares no backward kernel",
                   "tunable": "the kernel declares no tunable constexprs (Tunable)",
                   "unary": "the style passes a tensor subclass through a one-tensor-in, one-tensor-out op",
                   "flops": "the kernel declares no FLOP formula",
                   "dynamic": "the kernel declares no dynamic dimension",
                   "tunable_inplace": "the kernel is not tunable, or writes into no input whose pointer argument is "
                                      "named `<input>_ptr` (what autotune's restore_value / reset_to_zero name)"}
NAME = re.compile(r"[a-z][a-z0-9_]*\Z")  # names go into cell ids (kernel-style-stage-dtype-device) and op names
FLOAT_DTYPES = ("float32", "float16", "bfloat16")
EMBEDDINGS = ("op", "sandwich")


@dataclass(frozen=True)
class Dim:
    """A size the op's tensors share. `checks`: the sizes every stage checks at (the matrix's batch 1, 37, 1024 for
    the write-up's model); `example`: the size it is traced and exported with; a dimension with a `max` is dynamic
    (`torch.export.Dim(name, min=min, max=max)`, and a symbol under `torch.compile(dynamic=True)`), one without is
    static at its example."""
    name: str
    example: int
    checks: tuple[int, ...] = ()
    min: int = 1
    max: Optional[int] = None
    multiple_of: int = 1  # sizes drawn for it are multiples (a TMA row must be 16-byte aligned)

    @property
    def dynamic(self) -> bool:
        return self.max is not None

    def sizes(self) -> tuple[int, ...]:
        return self.checks or (self.example,)


@dataclass(frozen=True)
class Tensor:
    """A tensor argument. `dims`: its shape as dimension names (or fixed ints); None: any shape (an elementwise op,
    whose fuzz tests draw ranks 1 to 3). `dtype`: None for the cell's dtype, else fixed (say "int64" indices)."""
    name: str
    dims: Optional[tuple[Union[str, int], ...]] = None
    dtype: Optional[str] = None
    differentiable: bool = True


@dataclass(frozen=True)
class Scalar:
    """A scalar argument with its default (the value every stage passes). `type` is inferred from the default unless
    given; `optional` admits None (schema `float?`)."""
    name: str
    default: Union[int, float, bool, None]
    type: Optional[type] = None
    optional: bool = False

    @property
    def kind(self) -> type:
        return self.type or type(self.default)


@dataclass(frozen=True)
class Tunable:
    """The launch constexprs autotune and heuristics styles may choose. `choices`: per constexpr, its values from
    small to large (autotune tries their product); `key`: the launch arguments autotune keys on; the heuristic reads
    the first and picks each constexpr's smallest choice while it is at most `threshold`, else the largest."""
    choices: dict
    key: tuple[str, ...]
    threshold: int


@dataclass(frozen=True)
class Backward:
    """A gradient kernel: `launch(kernel, meta, *inputs, *grad_outputs)` returns a tuple, the gradients of the
    differentiable tensor inputs in order (checked against eager autograd of the reference, in compile_backward)."""
    jit: object
    launch: Callable


@dataclass(frozen=True)
class Shapes:
    """For an any-shape (elementwise) kernel: the shapes its fuzz tests draw."""
    ranks: tuple[int, ...] = (1, 2, 3)
    blocks: tuple[int, ...] = (1024,)  # sizes where the launch's tiling changes: examples go to size-1, size, size+1
    last_dim_bytes: int = 1  # the last dimension's byte size must be a multiple of this (TMA: 16)
    # The exported op-level artifact's input: None is a dynamic dimension (1 to the element budget), an int static.
    exported: tuple[Optional[int], ...] = (None,)


def _declared_in() -> str:
    """The module whose code declared the entry being built (the first frame outside this module)."""
    frame = sys._getframe(1)
    while frame and frame.f_globals.get("__name__") in (__name__, "dataclasses", "<string>"):
        frame = frame.f_back
    return frame.f_globals.get("__name__", "?") if frame else "?"


@dataclass(frozen=True)
class Kernel:
    """A Triton kernel and everything the matrix needs to wrap it.

    `launch(kernel, meta, *args)` calls `kernel[grid](...)` with the op's arguments in `inputs` order and returns its
    outputs (a tensor, a tuple, or None when it only writes into `mutates`); `kernel` is the jit function, an
    autotuned or heuristics-wrapped one, or wrap_triton(...) of one; `meta` holds the constexprs no decorator chooses.
    `reference`: eager PyTorch with the same signature and outputs; fake and CPU kernels run it too, so it may only
    allocate and compute with torch ops. `embedding`: "op" (the op alone is the model) or "sandwich" (the write-up's
    Linear(128->64) -> op -> Linear(64->128); the op's first input is the hidden activation).
    """
    name: str
    doc: str
    jit: object
    launch: Callable
    reference: Callable
    inputs: tuple = (Tensor("x"),)
    outputs: tuple[str, ...] = ("out",)
    mutates: tuple[str, ...] = ()
    dims: tuple[Dim, ...] = ()
    dtypes: tuple[str, ...] = FLOAT_DTYPES
    embedding: str = "op"
    meta: tuple[tuple[str, int], ...] = ()
    tunable: Optional[Tunable] = None
    flops: Optional[Callable[..., int]] = None  # FLOP formula: flops(*args, shapes for tensors) -> int
    # What each output element's error is measured against in the fuzz tests, when not |eager's value|:
    # error_scale(*args) -> one tensor per output (a dot product: the sum of its terms' magnitudes).
    error_scale: Optional[Callable[..., tuple]] = None
    backward: Optional[Backward] = None
    styles: Optional[tuple[str, ...]] = None  # None: every style whose needs the kernel meets
    styles_why: str = ""  # why the styles not listed in `styles` do not apply
    requires: Callable[[str], Optional[str]] = lambda device: None  # why it cannot run on a device (a skip)
    shapes: Shapes = field(default_factory=Shapes)
    module: str = field(default="", compare=False)  # where it was declared (filled in)

    def __post_init__(self):
        object.__setattr__(self, "module", self.module or _declared_in())
        problems = list(self._problems())
        if problems:
            raise RegistryError(f"{self.module}: kernel {self.name!r}: " + "; ".join(problems))

    def _problems(self):
        if not isinstance(self.name, str) or not NAME.match(self.name):
            yield "the name must be lower case letters, digits and underscores, starting with a letter"
        if not self.doc:
            yield "doc is empty: say in a line what the kernel computes"
        for what in ("launch", "reference"):
            if not callable(getattr(self, what)):
                yield f"{what} is not callable"
        names = [a.name for a in self.inputs]
        if not self.inputs or not all(isinstance(a, (Tensor, Scalar)) for a in self.inputs):
            yield "inputs must be Tensor(...) and Scalar(...) declarations, at least one"
        if len(set(names)) != len(names):
            yield f"input names repeat: {names}"
        bad = [n for n in [*names, *self.outputs] if not isinstance(n, str) or not n.isidentifier()]
        if bad:
            yield f"not Python identifiers: {bad}"
        tensors = [a.name for a in self.inputs if isinstance(a, Tensor)]
        if not tensors:
            yield "no Tensor input"
        if not set(self.mutates) <= set(tensors):
            yield f"mutates {sorted(set(self.mutates) - set(tensors))}, which are not tensor inputs ({tensors})"
        if not self.outputs and not self.mutates:
            yield "no outputs and nothing mutated: the op would compute nothing visible"
        dims = {d.name: d for d in self.dims}
        for a in self.inputs:
            if isinstance(a, Tensor) and a.dims is not None:
                unknown = [d for d in a.dims if isinstance(d, str) and d not in dims]
                if unknown:
                    yield f"input {a.name!r} names undeclared dims {unknown}; declared: {sorted(dims)}"
            if isinstance(a, Scalar) and a.kind not in (int, float, bool):
                yield f"scalar {a.name!r}: type {a.kind.__name__} is none of int, float, bool"
        for d in self.dims:
            top = d.max if d.dynamic else d.example
            if not (d.min <= d.example <= top) or any(not d.min <= s <= top for s in d.sizes()):
                yield f"dim {d.name!r}: example {d.example} and checks {d.checks} must lie in [{d.min}, {top}]"
        if self.embedding not in EMBEDDINGS:
            yield f"embedding {self.embedding!r} is none of {EMBEDDINGS}"
        elif self.embedding == "sandwich" and not (isinstance(self.inputs[0], Tensor) and self.inputs[0].dims is None):
            yield "the sandwich embeds an op whose first input is an any-shape tensor (the hidden activation)"
        try:
            params = list(inspect.signature(self.reference).parameters)
        except (TypeError, ValueError):
            params = names
        if params != names:
            yield f"the reference's parameters {params} are not the inputs {names}, in order"
        arg_names = getattr(self.jit, "arg_names", None)
        if arg_names is None:
            yield "jit is not a @triton.jit function"
        if self.tunable is not None and arg_names is not None:
            missing = [k for k in (*self.tunable.key, *self.tunable.choices) if k not in arg_names]
            if missing:
                yield f"tunable names {missing} are not arguments of {getattr(self.jit, '__name__', 'the kernel')}"
            if not self.tunable.key or not all(self.tunable.choices.values()):
                yield "tunable needs a key and at least one choice per constexpr"
        if self.backward is not None and not any(isinstance(a, Tensor) and a.differentiable for a in self.inputs):
            yield "a backward, but no differentiable tensor input"

    # ---- what the styles and stages build from the declaration ----

    @property
    def tensors(self) -> tuple[Tensor, ...]:
        return tuple(a for a in self.inputs if isinstance(a, Tensor))

    @property
    def any_shape(self) -> bool:
        """One any-shape tensor in, elementwise: the fuzz tests draw its shape freely (`shapes`)."""
        return all(t.dims is None for t in self.tensors)

    def signature(self) -> inspect.Signature:
        """The op's annotated signature, from which torch.library infers its schema."""
        params = []
        for a in self.inputs:
            if isinstance(a, Tensor):
                params.append(inspect.Parameter(a.name, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                                annotation=torch.Tensor))
            else:
                annotation = Optional[a.kind] if a.optional else a.kind
                params.append(inspect.Parameter(a.name, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                                annotation=annotation, default=a.default))
        returns = {0: None, 1: torch.Tensor}.get(len(self.outputs), tuple[(torch.Tensor,) * len(self.outputs)])
        return inspect.Signature(params, return_annotation=returns)

    def with_defaults(self, fn: Callable) -> Callable:
        """`fn` (a launcher, the reference) with the op's signature, its omitted scalars filled in: torch.library
        leaves out an argument that equals its default when it calls a kernel of the op."""
        signature = self.signature()

        def call(*args, **kwargs):
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            return fn(*bound.args)

        call.__signature__ = signature
        call.__name__ = call.__qualname__ = getattr(fn, "__name__", self.name)
        return call

    def call(self, fn: Callable, *args) -> tuple:
        """fn(*args) as a tuple of the op's outputs; an op that only writes into its inputs gives those inputs."""
        result = fn(*args)
        if not self.outputs:
            return tuple(arg for a, arg in zip(self.inputs, args) if a.name in self.mutates)
        return tuple(result) if isinstance(result, (tuple, list)) else (result,)

    def mutated_pointers(self) -> tuple[str, ...]:
        """The kernel's pointer arguments of the inputs the op writes into, by the convention `<input>_ptr`."""
        arg_names = getattr(self.jit, "arg_names", ())
        return tuple(f"{m}_ptr" for m in self.mutates if f"{m}_ptr" in arg_names)

    def features(self) -> frozenset:
        have = {"backward": self.backward is not None, "tunable": self.tunable is not None,
                "tunable_inplace": self.tunable is not None and bool(self.mutated_pointers()),
                "unary": len(self.inputs) == 1 and len(self.outputs) == 1 and not self.mutates,
                "dynamic": self.any_shape or any(d.dynamic for d in self.dims),
                "flops": self.flops is not None}
        return frozenset(k for k, v in have.items() if v)


def check_schema(kernel: Kernel) -> None:
    """torch.library reads the op's signature; a mistyped one fails here, at declaration, not in every cell."""
    from torch._library.infer_schema import infer_schema

    def prototype(*args, **kwargs):
        raise NotImplementedError

    prototype.__signature__ = kernel.signature()
    try:
        infer_schema(prototype, mutates_args=kernel.mutates)
    except Exception as exc:  # noqa: BLE001 - torch's own words name the problem
        raise RegistryError(f"{kernel.module}: kernel {kernel.name!r}: torch.library cannot take its signature "
                            f"{kernel.signature()}: {exc}") from None

