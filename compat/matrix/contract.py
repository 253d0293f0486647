"""The contract: what you declare about a Triton kernel, or about an op exactly as you ship it, so that the matrix can
push it through every stage and check it against eager PyTorch on any valid input.

    from compat import Dim, Kernel, Op, Scalar, Tensor, register_kernel, register_op

    # a bare kernel, which the suite wraps in each of its styles
    register_kernel(Kernel(
        name="axpy", doc="out = alpha * x + y",
        jit=axpy_kernel, launch=launch_axpy, reference=axpy_reference,
        inputs=(Tensor("x", ("n",)), Tensor("y", ("n",)), Scalar("alpha", 2.0)),
        dims=(Dim("n", example=4099, checks=(1, 4099, 65536), max=65536),)))

    # your op as your users call it, run unchanged (style `as_shipped`)
    register_op(Op(
        name="my_rms_norm", doc="my_kernels' RMSNorm op", shipped=torch.ops.my_kernels.rms_norm,
        reference=rms_norm_reference, inputs=(...), dims=(...), differentiable=True))

Every name is checked when declared: a bad declaration raises RegistryError naming the module that declared it,
the entry and the problem.
"""

import builtins
import inspect
import itertools
import re
import sys
from dataclasses import dataclass, field
from types import FrameType
from typing import Any, Callable, Optional, Union

import torch
import triton
from torch._library.infer_schema import infer_schema

from ..errors import DeclarationError, RegistryError

# Why a style or stage that needs a feature of the entry (`features()`) does not apply to an entry without it.
MISSING_FEATURE = {
    "backward": "the kernel declares no backward kernel",
    "tunable": "the kernel declares no tunable constexprs (Tunable)",
    "unary": "the style passes a tensor subclass through a one-tensor-in, one-tensor-out op",
    "flops": "it declares no FLOP formula",
    "dynamic": "it declares no dynamic dimension",
    "tunable_inplace": "the kernel is not tunable, or writes into no input whose pointer argument is "
    "named `<input>_ptr` (what autotune's restore_value / reset_to_zero name)",
    "triton": "it is an op as shipped (compat.Op): it runs unchanged, in the as_shipped style only",
    "shipped": "it is a bare Triton kernel (compat.Kernel), which the suite's styles wrap; as_shipped "
    "runs an op declared as shipped (compat.Op)",
    "schema": "an argument is a union (OneOf), which no torch.library schema can declare",
    "library_op": "the op as shipped is not a torch.library op, which opcheck checks",
    "differentiable": "it declares no gradients (a Kernel without a backward, an Op with differentiable=False)",
}
NAME = re.compile(r"[a-z][a-z0-9_]*\Z")  # names go into cell ids (kernel-style-stage-dtype-device) and op names
FLOAT_DTYPES = ("float32", "float16", "bfloat16")
EMBEDDINGS = ("op", "sandwich")
SCALAR_KINDS = (int, float, bool, str)
MAX_VARIANTS = 16  # every variant is a call in every model, export and package: a few, not a product of many
DYNAMIC_POINTS = 3  # the dynamic stages' check points: a first size, then two through one graph


class _Given:
    """The choice of a tensor argument that is passed (the other choice of an optional one is None)."""

    def __repr__(self) -> str:
        return "tensor"


GIVEN = _Given()


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
    whose fuzz tests draw ranks 1 to 3). `dtype`: None for the cell's dtype, else fixed (say "int64" indices).
    `values`: an integer tensor's range [low, high), each bound an int or a dim's name (targets of a vocabulary).
    `optional`: the argument admits None (schema `Tensor?`); every stage runs it both passed and None.
    `passed=False`: every stage passes None only (an optional input your users leave out).
    `domain`: where a float tensor's values must lie, for the matrix's inputs and the fuzz tests' alike:
    "positive", "negative", "unit_interval" (0, 1), or (low, high); such a tensor gets no special values.
    `keyword`: passed by keyword (`f(q, k, v, initial_state=s)`), as users call it."""

    name: str
    dims: Optional[tuple[Union[str, int], ...]] = None
    dtype: Optional[str] = None
    differentiable: bool = True
    optional: bool = False
    values: Optional[tuple[Union[int, str], Union[int, str]]] = None
    passed: bool = True
    domain: Union[str, tuple[float, float], None] = None
    keyword: bool = False

    def choices(self) -> tuple:
        if not self.passed:
            return (None,)
        return (GIVEN, None) if self.optional else (GIVEN,)

    def domain_problem(self) -> Optional[str]:
        if self.domain is None:
            return None
        if self.dtype is not None and not getattr(torch, self.dtype).is_floating_point:
            return f"input {self.name!r}: a domain is for float tensors; an integer one declares values=(low, high)"
        if (
            isinstance(self.domain, tuple)
            and len(self.domain) == 2
            and all(isinstance(b, (int, float)) for b in self.domain)
            and self.domain[0] < self.domain[1]
        ):
            return None
        if self.domain in DOMAINS:
            return None
        return f"input {self.name!r}: domain {self.domain!r} is none of {', '.join(DOMAINS)}, nor a (low, high) pair"


# Where a float input's values lie, from a standard normal draw v: the matrix's inputs and the fuzz tests' alike.
DOMAINS = ("positive", "negative", "unit_interval")


@dataclass(frozen=True)
class Scalar:
    """A scalar argument: int, float, bool or str (a string constexpr, say the matmul tutorial's ACTIVATION).
    `default`: the value every stage passes unless `choices` names others: then every stage runs each of them (a
    kernel's other branches), the default first. `type` is inferred from the default unless given; `optional` admits
    None (schema `float?`). Give what follows the default by keyword: Scalar("g", 1.0, choices=(0.5,))."""

    name: str
    default: Union[int, float, bool, str, None]
    type: Optional[type] = None
    optional: bool = False
    choices: tuple = ()
    keyword: bool = False  # passed by keyword, as users call it (`output_final_state=True`)

    def __post_init__(self):
        if self.type is not None and not isinstance(self.type, type):
            raise DeclarationError(
                f"Scalar({self.name!r}, ...) declared in {_declared_in()}: type={self.type!r} "
                f"is not a type (int, float, bool or str); choices go by keyword: "
                f"Scalar({self.name!r}, {self.default!r}, choices=(...))"
            )
        if not isinstance(self.choices, tuple):
            raise DeclarationError(
                f"Scalar({self.name!r}, ...) declared in {_declared_in()}: choices="
                f"{self.choices!r} must be a tuple of values"
            )

    @property
    def kind(self) -> builtins.type:  # the field `type` shadows the builtin here
        return self.type or type(self.default)

    def values(self) -> tuple:
        return (self.default, *(c for c in self.choices if c != self.default))


class OneOf:
    """An argument that takes one of several kinds, as `Union[int, Tensor]` (flash-attention's `seqlen_offsets`):
    each alternative a Scalar or a Tensor named as the argument. Every stage runs each alternative; no torch.library
    schema declares a union, so the suite's styles that register an op do not apply to a kernel with one.
    `keyword`: passed by keyword, as users call it."""

    def __init__(self, name: str, *alternatives, keyword: bool = False):
        self.name, self.alternatives, self.keyword = name, alternatives, keyword

    def __repr__(self) -> str:
        return f"OneOf({self.name!r}, {', '.join(map(repr, self.alternatives))})"

    def __eq__(self, other) -> bool:
        return isinstance(other, OneOf) and (self.name, self.alternatives, self.keyword) == (
            other.name,
            other.alternatives,
            other.keyword,
        )

    def __hash__(self) -> int:
        return hash((self.name, self.alternatives, self.keyword))

    @property
    def tensor(self) -> Optional[Tensor]:
        return next((a for a in self.alternatives if isinstance(a, Tensor)), None)

    def choices(self) -> tuple:
        return tuple(v for a in self.alternatives for v in (a.choices() if isinstance(a, Tensor) else a.values()))


@dataclass(frozen=True)
class Tunable:
    """The launch constexprs autotune and heuristics styles may choose: either `choices`, per constexpr its values
    from small to large (autotune tries their product), or `configs`, an explicit list of `triton.Config`s with their
    own warps and stages, smallest first. `key`: the launch arguments autotune keys on; the heuristic reads the first
    and picks the smallest config's values while it is at most `threshold`, else the largest's."""

    choices: dict = field(default_factory=dict)
    key: tuple[str, ...] = ()
    threshold: int = 0
    configs: tuple = ()

    @property
    def names(self) -> tuple[str, ...]:
        """The constexprs it chooses."""
        if self.configs:
            return tuple(dict.fromkeys(k for c in self.configs for k in c.kwargs))
        return tuple(self.choices)

    def smallest(self) -> dict:
        return dict(self.configs[0].kwargs) if self.configs else {k: min(v) for k, v in self.choices.items()}

    def largest(self) -> dict:
        return dict(self.configs[-1].kwargs) if self.configs else {k: max(v) for k, v in self.choices.items()}

    def triton_configs(self, pre_hook=None) -> list:
        """The configs autotune tries, each with `pre_hook` where given."""
        if self.configs:
            return [
                triton.Config(
                    dict(c.kwargs),
                    num_warps=c.num_warps,
                    num_stages=c.num_stages,
                    num_ctas=c.num_ctas,
                    pre_hook=pre_hook or c.pre_hook,
                )
                for c in self.configs
            ]
        names = list(self.choices)
        return [
            triton.Config(dict(zip(names, values, strict=False)), pre_hook=pre_hook)
            for values in itertools.product(*self.choices.values())
        ]


@dataclass(frozen=True)
class Backward:
    """A gradient kernel: `launch(kernel, meta, *inputs, *saved, *grad_outputs)` returns a tuple, the gradients of
    the differentiable tensor inputs in order (checked against eager autograd of the reference, in compile_backward).
    `saved` are the tensors the forward returned beside its outputs (`Kernel.saved`: layer norm's mean and rstd);
    `mutates`: the backward's arguments it writes into (Liger's SwiGLU backward overwrites its saved inputs), which
    register_autograd's backward op declares as `mutates_args`."""

    jit: Any  # a triton.JITFunction
    launch: Callable
    mutates: tuple[str, ...] = ()


@dataclass(frozen=True)
class Shapes:
    """For an any-shape (elementwise) kernel: the shapes its fuzz tests draw."""

    ranks: tuple[int, ...] = (1, 2, 3)
    blocks: tuple[int, ...] = (1024,)  # sizes where the launch's tiling changes: examples go to size-1, size, size+1
    last_dim_bytes: int = 1  # the last dimension's byte size must be a multiple of this (TMA: 16)
    # The exported op-level artifact's input: None is a dynamic dimension (1 to the element budget), an int static.
    exported: tuple[Optional[int], ...] = (None,)


class Module:
    """An `nn.Module` class as shipped, with its constructor's arguments: `Module(LigerRMSNorm, 256, eps=1e-6)`. Its
    parameters are part of the model: made with the seed, then each floating-point parameter drawn uniform in
    [-1, 1] (as the write-up's Linears) unless `init(module)` says otherwise, in the cell's dtype, on its device."""

    def __init__(self, cls: type, *args, init: Optional[Callable] = None, **kwargs):
        self.cls, self.args, self.kwargs, self.init = cls, args, kwargs, init

    def __repr__(self) -> str:
        shown = [*map(repr, self.args), *(f"{k}={v!r}" for k, v in self.kwargs.items())]
        return f"Module({self.cls.__qualname__}, {', '.join(shown)})"


def signed(fn: Callable, signature: inspect.Signature) -> Callable:
    """`fn`, which inspect (and torch.library with it) now reads as having `signature`."""
    fn.__signature__ = signature  # type: ignore[attr-defined]  # the attribute inspect.signature reads first
    return fn


def tensors_tuple(count: int) -> Any:
    """`tuple[Tensor, ...]` of `count` tensors, as an annotation torch.library reads (built at run time)."""
    return tuple.__class_getitem__((torch.Tensor,) * count)


def _declared_in() -> str:
    """The module whose code declared the entry being built (the first frame outside this module)."""
    frame: FrameType | None = sys._getframe(1)
    while frame and frame.f_globals.get("__name__") in (__name__, "dataclasses", "<string>"):
        frame = frame.f_back
    return frame.f_globals.get("__name__", "?") if frame else "?"


@dataclass(frozen=True, kw_only=True)
class Contract:
    """What every entry of the matrix declares: its arguments and what it returns, the sizes it is checked at, and
    the eager PyTorch that computes the same (the reference). A `Kernel` adds the bare Triton kernel the suite's styles
    wrap; an `Op` the callable you ship, run unchanged."""

    name: str
    doc: str
    reference: Callable
    inputs: tuple = (Tensor("x"),)
    outputs: tuple[str, ...] = ("out",)
    mutates: tuple[str, ...] = ()
    dims: tuple[Dim, ...] = ()
    dtypes: tuple[str, ...] = FLOAT_DTYPES
    flops: Optional[Callable[..., int]] = None  # FLOP formula: flops(*args, shapes for tensors) -> int
    # What each output element's error is measured against in the fuzz tests, when not |eager's value|:
    # error_scale with the reference's parameters -> one tensor per output (a dot product: its terms' magnitudes).
    error_scale: Optional[Callable[..., tuple]] = None
    # The op's own precision, as OpInfo's toleranceOverride: a relative tolerance per dtype that replaces the dtype's
    # (compat.evidence.numerics.TOL), say {"bfloat16": 0.08} for a kernel that accumulates in its input's dtype;
    # `tf32`: float32 matmul-like kernels that run in TF32 on a GPU are held to TF32's precision (10 bits).
    tolerances: tuple[tuple[str, float], ...] = ()
    tf32: bool = False
    requires: Callable[[str], Optional[str]] = lambda device: None  # why it cannot run on a device (a skip)
    # At most this many compiles of it in one fuzz test, for an op whose every compile costs minutes: an example
    # that would compile it once more is counted as past the bound, not checked (None: as many as the examples need).
    fuzz_compiles: Optional[int] = None
    shapes: Shapes = field(default_factory=Shapes)
    module: str = field(default="", compare=False)  # where it was declared (filled in)

    def __post_init__(self):
        object.__setattr__(self, "module", self.module or _declared_in())
        if isinstance(self.tolerances, dict):  # declared as a dict, kept hashable
            object.__setattr__(self, "tolerances", tuple(self.tolerances.items()))
        problems = list(self._problems())
        if problems:
            raise RegistryError(f"{self.module}: {self.what} {self.name!r}: " + "; ".join(problems))

    what = "entry"

    def _problems(self):
        if not isinstance(self.name, str) or not NAME.match(self.name):
            yield "the name must be lower case letters, digits and underscores, starting with a letter"
        if not self.doc:
            yield "doc is empty: say in a line what it computes"
        if not callable(self.reference):
            yield "reference is not callable"
        names = [a.name for a in self.inputs]
        if not self.inputs or not all(isinstance(a, (Tensor, Scalar, OneOf)) for a in self.inputs):
            yield "inputs must be Tensor(...), Scalar(...) and OneOf(...) declarations, at least one"
        if len(set(names)) != len(names):
            yield f"input names repeat: {names}"
        bad = [n for n in [*names, *self.outputs] if not isinstance(n, str) or not n.isidentifier()]
        if bad:
            yield f"not Python identifiers: {bad}"
        if not self.tensors:
            yield "no Tensor input"
        if not set(self.mutates) <= {t.name for t in self.tensors}:
            yield f"mutates {sorted(set(self.mutates) - {t.name for t in self.tensors})}, which are not tensor inputs"
        if not self.outputs and not self.mutates:
            yield "no outputs and nothing mutated: the op would compute nothing visible"
        tolerances = dict(self.tolerances) if isinstance(self.tolerances, (dict, tuple, list)) else None
        if tolerances is None or not all(
            d in FLOAT_DTYPES and isinstance(t, float) and 0 < t < 1 for d, t in tolerances.items()
        ):
            yield (
                f"tolerances {self.tolerances!r} must map dtypes among {', '.join(FLOAT_DTYPES)} to relative "
                f"tolerances, floats in (0, 1)"
            )
        yield from self._argument_problems()
        if self.fuzz_compiles is not None and not (isinstance(self.fuzz_compiles, int) and self.fuzz_compiles >= 1):
            yield f"fuzz_compiles is {self.fuzz_compiles!r}: a whole number of compiles, at least 1, or None"
        for d in self.dims:
            top = d.max if d.dynamic else d.example
            if not (d.min <= d.example <= top) or any(not d.min <= s <= top for s in d.sizes()):
                yield f"dim {d.name!r}: example {d.example} and checks {d.checks} must lie in [{d.min}, {top}]"
        points = max([len(d.sizes()) for d in self.dims] + [1])
        dynamic = [d for d in self.dims if d.dynamic]
        if dynamic and points < DYNAMIC_POINTS and not self.checked_at_batches:
            yield (
                f"dim {dynamic[0].name!r} is dynamic (it has a max) and is checked at {points} size(s): the dynamic "
                f"stages compile at the second check and run the third through the same graph, so declare at least "
                f"{DYNAMIC_POINTS} checks, say checks=({dynamic[0].min}, {(dynamic[0].min + dynamic[0].max) // 2 + 1}, "
                f"{dynamic[0].max}) (1 first where it may be: it specialises)"
            )
        try:
            params = list(inspect.signature(self.reference).parameters)
        except (TypeError, ValueError):
            params = self.reference_parameters
        if params != self.reference_parameters:
            yield f"the reference's parameters {params} are not {self.reference_described}, in order"
        if len(self.variants()) > MAX_VARIANTS:
            yield (
                f"{len(self.variants())} combinations of choices (optional tensors, Scalar choices, OneOf): every "
                f"one is a call in every model; declare at most {MAX_VARIANTS}"
            )

    def _argument_problems(self):
        dims = {d.name: d for d in self.dims}
        for a in self.inputs:
            for spec in a.alternatives if isinstance(a, OneOf) else (a,):
                if spec.name != a.name:
                    yield f"OneOf {a.name!r}: its alternative {spec.name!r} must carry the argument's name"
                if isinstance(spec, Tensor) and spec.dims is not None:
                    unknown = [d for d in spec.dims if isinstance(d, str) and d not in dims]
                    unknown += [v for v in spec.values or () if isinstance(v, str) and v not in dims]
                    if unknown:
                        yield f"input {spec.name!r} names undeclared dims {unknown}; declared: {sorted(dims)}"
                if isinstance(spec, Tensor) and spec.domain_problem():
                    yield spec.domain_problem()
                if isinstance(spec, Scalar):
                    if spec.kind not in SCALAR_KINDS:
                        yield f"scalar {spec.name!r}: type {spec.kind.__name__} is none of int, float, bool, str"
                    elif spec.default is not None and not isinstance(spec.default, spec.kind):
                        yield f"scalar {spec.name!r}: its default {spec.default!r} is not {spec.kind.__name__}"
                    elif any(not isinstance(c, spec.kind) for c in spec.choices if c is not None):
                        yield f"scalar {spec.name!r}: its choices {spec.choices} are not all {spec.kind.__name__}"

    @property
    def reference_parameters(self) -> list[str]:
        return [a.name for a in self.inputs]

    @property
    def reference_described(self) -> str:
        return f"the inputs {self.reference_parameters}"

    # ---- what the styles and stages build from the declaration ----

    @property
    def tensors(self) -> tuple[Tensor, ...]:
        """Every tensor the model takes: the tensor inputs, and the tensor alternative of each OneOf."""
        return tuple(
            t
            for a in self.inputs
            for t in ([a.tensor] if isinstance(a, OneOf) else [a])
            if isinstance(t, Tensor) and t.passed
        )

    @property
    def checked_at_batches(self) -> bool:
        """Checked at the matrix's batches (compat.matrix.model.CHECK_BATCHES), not at its dims' checks: a sandwich
        kernel, and an any-shape op (as a hidden activation)."""
        return getattr(self, "embedding", "op") == "sandwich" or self.any_shape

    @property
    def any_shape(self) -> bool:
        """Tensors of any shape in, elementwise: the fuzz tests draw its shape freely (`shapes`)."""
        return all(t.dims is None for t in self.tensors)

    def variants(self) -> list[dict[str, Any]]:
        """Every combination of the arguments' choices (an optional tensor passed or None, a Scalar's choices, a
        OneOf's alternatives), the defaults first: each is a call in every model, so every stage runs them all."""
        names = [a.name for a in self.inputs]
        choices = [a.choices() if isinstance(a, (Tensor, OneOf)) else a.values() for a in self.inputs]
        return [dict(zip(names, combination, strict=False)) for combination in itertools.product(*choices)]

    def variant_label(self, variant: dict[str, Any]) -> str:
        """What sets a variant apart from the first (the defaults), for comparison labels."""
        first = self.variants()[0]
        return ", ".join(f"{k}={'a tensor' if v is GIVEN else repr(v)}" for k, v in variant.items() if v != first[k])

    def signature(self) -> inspect.Signature:
        """The op's annotated signature, from which torch.library infers its schema."""
        params = []
        for a in self.inputs:
            kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
            if isinstance(a, OneOf):
                kinds = tuple(torch.Tensor if isinstance(x, Tensor) else x.kind for x in a.alternatives)
                params.append(inspect.Parameter(a.name, kind, annotation=Union[kinds]))  # no schema takes it
            elif isinstance(a, Tensor):
                annotation = Optional[torch.Tensor] if a.optional else torch.Tensor
                params.append(inspect.Parameter(a.name, kind, annotation=annotation))
            else:
                annotation = Optional[a.kind] if a.optional else a.kind
                params.append(inspect.Parameter(a.name, kind, annotation=annotation, default=a.default))
        returned = len(self.outputs) + len(getattr(self, "saved", ()))
        returns = {0: None, 1: torch.Tensor}.get(returned, tensors_tuple(returned))
        return inspect.Signature(params, return_annotation=returns)

    def with_defaults(self, fn: Callable) -> Callable:
        """`fn` (a launcher, the reference) with the op's signature, its omitted scalars filled in: torch.library
        leaves out an argument that equals its default when it calls a kernel of the op."""
        signature = self.signature()

        def call(*args, **kwargs):
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            return fn(*bound.args)

        call.__name__ = call.__qualname__ = getattr(fn, "__name__", self.name)
        return signed(call, signature)

    def by_keyword(self, args) -> tuple[list, dict[str, Any]]:
        """Arguments in declaration order as a call passes them: positional, then those declared `keyword`."""
        pairs = list(zip(self.inputs, args, strict=False))
        return [arg for a, arg in pairs if not a.keyword], {a.name: arg for a, arg in pairs if a.keyword}

    def call(self, fn: Callable, *args) -> tuple:
        """fn(*args) as a tuple of the op's declared outputs (a kernel's launch returns the tensors it saves for
        backward after them); an op that only writes into its inputs gives those inputs."""
        positional, keywords = self.by_keyword(args)
        result = fn(*positional, **keywords)
        if not self.outputs:
            return tuple(arg for a, arg in zip(self.inputs, args, strict=False) if a.name in self.mutates)
        result = tuple(result) if isinstance(result, (tuple, list)) else (result,)
        return result[: len(self.outputs)] if getattr(self, "saved", ()) else result

    def features(self) -> frozenset:
        """What the entry declares that a stage may need (MISSING_FEATURE), worked out once: an entry is frozen, and a
        run asks it of every cell it parses."""
        known = self.__dict__.get("_features")
        if known is None:
            known = self._declared_features()
            object.__setattr__(self, "_features", known)
        return known

    def _declared_features(self) -> frozenset:
        have = {
            "unary": len(self.inputs) == 1 and len(self.outputs) == 1 and not self.mutates,
            "dynamic": self.any_shape or any(d.dynamic for d in self.dims),
            "flops": self.flops is not None,
            "schema": not any(isinstance(a, OneOf) for a in self.inputs),
        }
        return frozenset(k for k, v in have.items() if v)


@dataclass(frozen=True, kw_only=True)
class Kernel(Contract):
    """A Triton kernel and everything the matrix needs to wrap it.

    `launch(kernel, meta, *args)` calls `kernel[grid](...)` with the op's arguments in `inputs` order and returns its
    outputs (a tensor, a tuple, or None when it only writes into `mutates`), then the tensors it saves for backward
    (`saved`); `kernel` is the jit function, an autotuned or heuristics-wrapped one, or wrap_triton(...) of one;
    `meta` holds the constexprs no decorator chooses. `reference`: eager PyTorch with the same signature and outputs;
    fake and CPU kernels run it too, so it may only allocate and compute with torch ops. `embedding`: "op" (the op
    alone is the model) or "sandwich" (the write-up's Linear(128->64) -> op -> Linear(64->128); the op's first input
    is the hidden activation).
    """

    jit: Any  # a triton.JITFunction (Triton ships no types)
    launch: Callable
    embedding: str = "op"
    meta: tuple[tuple[str, Any], ...] = ()
    tunable: Optional[Tunable] = None
    backward: Optional[Backward] = None
    saved: tuple[str, ...] = ()  # tensors the launch returns after the outputs, for the backward (mean, rstd)
    # None: every style whose needs the kernel meets; else the style names, or a test of a Style's attributes (a
    # style added later joins by its attributes), which then needs `styles_why`
    styles: Optional[tuple[str, ...] | Callable[[Any], bool]] = None
    styles_why: str = ""  # why the styles not listed in `styles` do not apply
    devices: Optional[tuple[str, ...]] = None  # None: every device a style can run it on

    what = "kernel"

    @property
    def tuning(self) -> Tunable:
        """The tunable constexprs, for a style that needs them: it applies only where they are declared."""
        if self.tunable is None:
            raise RegistryError(f"kernel {self.name!r} declares no tunable constexprs, which its style needs")
        return self.tunable

    @property
    def gradient(self) -> Backward:
        """The backward kernel, for a style that needs one: it applies only where one is declared."""
        if self.backward is None:
            raise RegistryError(f"kernel {self.name!r} declares no backward kernel, which its style needs")
        return self.backward

    def _problems(self):
        yield from super()._problems()
        if not callable(self.launch):
            yield "launch is not callable"
        if callable(self.styles) and not self.styles_why:
            yield "styles is a test of a style's attributes: say in styles_why why the others do not apply"
        if self.embedding not in EMBEDDINGS:
            yield f"embedding {self.embedding!r} is none of {EMBEDDINGS}"
        elif self.embedding == "sandwich" and not (isinstance(self.inputs[0], Tensor) and self.inputs[0].dims is None):
            yield "the sandwich embeds an op whose first input is an any-shape tensor (the hidden activation)"
        arg_names = getattr(self.jit, "arg_names", None)
        if arg_names is None:
            yield "jit is not a @triton.jit function"
        if self.tunable is not None and arg_names is not None:
            missing = [k for k in (*self.tunable.key, *self.tunable.names) if k not in arg_names]
            if missing:
                yield f"tunable names {missing} are not arguments of {getattr(self.jit, '__name__', 'the kernel')}"
            if not self.tunable.key or not (
                self.tunable.configs or (self.tunable.choices and all(self.tunable.choices.values()))
            ):
                yield "tunable needs a key and at least one choice per constexpr, or a list of configs"
        if self.backward is not None and not any(t.differentiable for t in self.tensors):
            yield "a backward, but no differentiable tensor input"
        if self.saved and self.backward is None:
            yield f"saves {list(self.saved)} for a backward it does not declare"
        if self.backward is not None:
            arguments = [*(a.name for a in self.inputs), *self.saved, *(f"grad_{o}" for o in self.outputs)]
            if not set(self.backward.mutates) <= set(arguments):
                yield (
                    f"the backward mutates {sorted(set(self.backward.mutates) - set(arguments))}, which are not "
                    f"among its arguments {arguments}"
                )

    def mutated_pointers(self) -> tuple[str, ...]:
        """The kernel's pointer arguments of the inputs the op writes into, by the convention `<input>_ptr`."""
        arg_names = getattr(self.jit, "arg_names", ())
        return tuple(f"{m}_ptr" for m in self.mutates if f"{m}_ptr" in arg_names)

    def _declared_features(self) -> frozenset:
        have = {
            "triton": True,
            "backward": self.backward is not None,
            "differentiable": self.backward is not None,
            "tunable": self.tunable is not None,
            "tunable_inplace": self.tunable is not None and bool(self.mutated_pointers()),
        }
        return super()._declared_features() | frozenset(k for k, v in have.items() if v)


SHIPPED_DEVICES = ("cuda", "cpu_interpret")


@dataclass(frozen=True, kw_only=True)
class Op(Contract):
    """An op exactly as you ship it, run unchanged by the `as_shipped` style: no kernel of yours is re-wrapped.

    `shipped` is what your users call: a torch.library op (`torch.ops.ns.name`, or what `triton_op`, `custom_op` or
    a `Library.define` fragment made), an `autograd.Function`'s `apply`, a plain Python function that launches
    kernels, or `Module(cls, *args, **kwargs)` for an `nn.Module` class whose parameters are part of the model. It
    is called with the declared inputs, in order. `reference`: eager PyTorch computing the same, with the inputs'
    parameters (a Module's reference takes the module first: `reference(module, *inputs)`, reading its
    parameters). `differentiable`: gradients are part of what you ship (compile_backward checks them against the
    reference's, for the tensors declared differentiable and the module's parameters). `devices`: where it runs
    (`cpu_interpret` runs its Triton kernels in Triton's interpreter on CPU tensors; `cpu` needs a CPU kernel)."""

    shipped: Any
    differentiable: bool = False
    devices: tuple[str, ...] = SHIPPED_DEVICES
    # torch.library ops this op calls that its users never call themselves (register_autograd's backward op): the
    # op's gradient stages gate them, and they count as declared (compat_require_declared)
    helpers: tuple = ()

    what = "op"

    def _problems(self):
        yield from super()._problems()
        if not (isinstance(self.shipped, Module) or callable(self.shipped)):
            yield "shipped is neither callable nor a Module(cls, ...)"
        yield from self._schema_problems()
        for helper in self.helpers:
            if _library_op(helper) is None:
                yield f"helpers: {helper!r} is not a torch.library op (torch.ops.ns.name, or what triton_op made)"
        if isinstance(self.shipped, Module) and not (
            isinstance(self.shipped.cls, type) and issubclass(self.shipped.cls, torch.nn.Module)
        ):
            yield f"Module({self.shipped.cls!r}): not an nn.Module class"
        if (
            self.differentiable
            and not any(t.differentiable for t in self.tensors)
            and not isinstance(self.shipped, Module)
        ):
            yield "differentiable, but no tensor input is declared differentiable"

    def _schema_problems(self):
        """A torch.library op declares its arguments' types: each declared input must be one it takes, in its place
        (by name where passed by keyword), and every value a Scalar passes of a type it accepts. Otherwise every cell
        would fail on the declaration, as the op's own outcome (`Scalar("scale", "1.5")` for a float)."""
        op = self.library_op
        if op is None:
            return
        arguments = list(op._schema.arguments)
        by_name = {a.name: a for a in arguments}
        positional = iter(a for a in arguments if not a.kwarg_only)
        for spec in self.inputs:
            arg = by_name.get(spec.name) if spec.keyword else next(positional, None)
            if arg is None:
                yield f"input {spec.name!r}: {op._schema.name} takes no such argument ({op._schema})"
                continue
            for alternative in spec.alternatives if isinstance(spec, OneOf) else (spec,):
                problem = _schema_mismatch(alternative, arg)
                if problem:
                    yield f"input {spec.name!r}: {problem} ({op._schema})"

    @property
    def embedding(self) -> str:
        return "module" if isinstance(self.shipped, Module) else "op"

    @property
    def reference_parameters(self) -> list[str]:
        names = super().reference_parameters
        if isinstance(self.shipped, Module):
            params = list(inspect.signature(self.reference).parameters)
            return params[:1] + names
        return names

    @property
    def reference_described(self) -> str:
        if isinstance(self.shipped, Module):
            return f"the module, then the inputs {super().reference_parameters}"
        return super().reference_described

    @property
    def library_op(self) -> Optional[torch._ops.OpOverload]:
        """The torch.library op it is, or None (a function, an autograd.Function, a module)."""
        return _library_op(self.shipped)

    @property
    def helper_ops(self) -> tuple[torch._ops.OpOverload, ...]:
        return tuple(op for op in map(_library_op, self.helpers) if op is not None)

    def _declared_features(self) -> frozenset:
        have = {"shipped": True, "library_op": self.library_op is not None, "differentiable": self.differentiable}
        return super()._declared_features() | frozenset(k for k, v in have.items() if v)


def _library_op(fn: Any) -> Optional[torch._ops.OpOverload]:
    if isinstance(fn, torch._ops.OpOverloadPacket):
        return fn.default
    if isinstance(fn, torch._ops.OpOverload):
        return fn
    opoverload = getattr(fn, "_opoverload", None)  # what triton_op and custom_op return (CustomOpDef)
    return opoverload if isinstance(opoverload, torch._ops.OpOverload) else None


# The Python values torch.library lets through for a schema type (its own coercions: an int for a float, a bool for
# an int); types not listed (lists, devices, dtypes) are not checked here.
SCHEMA_ACCEPTS = {
    "FloatType": (int, float),
    "IntType": (int,),
    "SymIntType": (int,),
    "BoolType": (int,),
    "StringType": (str,),
    "NumberType": (int, float),
}


def _schema_mismatch(spec: Any, arg: Any) -> Optional[str]:
    """Why a declared input cannot be the schema argument `arg`, or None."""
    kind, optional = arg.type.kind(), False
    if kind == "OptionalType":
        kind, optional = arg.type.getElementType().kind(), True
    where = f"the op's argument {arg.name!r} is {arg.type}"
    if isinstance(spec, Tensor):
        if kind != "TensorType":
            return f"declared a Tensor, but {where}"
        return f"declared optional, but {where}" if spec.optional and not optional else None
    if kind == "TensorType":
        return f"declared a Scalar, but {where}"
    accepts = SCHEMA_ACCEPTS.get(kind)
    if accepts is None:
        return None
    for value in spec.values():
        if value is None and not optional:
            return f"passes None, but {where}"
        if value is not None and not isinstance(value, accepts):
            return f"passes {value!r} ({type(value).__name__}), but {where}"
    return None


# An entry of the kernel axis: a bare kernel the styles wrap, or an op as shipped.
Entry = Union[Kernel, Op]


def check_schema(kernel: Kernel) -> None:
    """torch.library reads the op's signature; a mistyped one fails here, at declaration, not in every cell."""
    if "schema" not in kernel.features():
        return  # a union: the styles that register an op do not apply (MISSING_FEATURE["schema"])

    def prototype(*args, **kwargs):
        raise NotImplementedError

    signed(prototype, kernel.signature())
    try:
        infer_schema(prototype, mutates_args=kernel.mutates)
    except Exception as exc:  # noqa: BLE001 - torch's own words name the problem
        raise RegistryError(
            f"{kernel.module}: kernel {kernel.name!r}: torch.library cannot take its signature "
            f"{kernel.signature()}: {exc}"
        ) from None
