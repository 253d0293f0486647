"""Known failures: an observed error's stable fragment, why it happens, what to do instead, and where it is documented.

`--compat-accept` and `python -m compat accept` explain a new failure row from here when its error type and message
match an entry (on the entry's devices); a failure no entry explains is recorded as unexplained, which a test forbids
committing. Adding an entry is how a newly observed failure gets its reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

INTERPRETER = ("cpu_interpret",)
CPU = ("cpu", "cpu_interpret")


@dataclass(frozen=True)
class Known:
    error: str  # a regex the exception type (as outcomes record it) must match in full
    match: str  # a regex on a stable fragment of the message
    reason: str
    rewrite: str | None = None
    devices: tuple[str, ...] | None = None  # None: any device
    styles: tuple[str, ...] | None = None  # None: any style
    stages: tuple[str, ...] | None = None  # None: any stage (prefixes: "aoti_" covers both AOTI stages)
    source: str | None = None  # upstream issue / PR / file that documents it

    def explains(self, error: str | None, message: str | None, cell) -> bool:
        return (re.fullmatch(self.error, error or "") is not None and re.search(self.match, message or "") is not None
                and (self.devices is None or cell.device in self.devices)
                and (self.styles is None or cell.style in self.styles)
                and (self.stages is None or cell.stage.startswith(self.stages)))


DATA_PTR = r"Cannot access data pointer of Tensor \(e\.g\. FakeTensor, FunctionalTensor\)"
TRITON_OP_REWRITE = ("wrap the kernel in torch.library.triton_op and launch it through torch.library.wrap_triton "
                     "(exports strict and non-strict)")
DYNAMO_UNSUPPORTED = "torch._dynamo.exc.Unsupported"
INDUCTOR_ERROR = r"torch\._inductor\.exc\.InductorError"
OPCHECK_ERROR = r"torch\.testing\._internal\.optests\.generate_tests\.OpCheckError"

HEURISTICS_OUTERMOST = ("heuristics_triton_op", "heuristics_autotune_triton_op")

KNOWN: tuple[Known, ...] = (  # the first entry that explains an observation wins: narrow entries first
    Known("RuntimeError", r"wrap_triton only works on functions annotated with triton\.jit or triton\.autotune",
          styles=HEURISTICS_OUTERMOST,
          reason="wrap_triton accepts a JITFunction or an Autotuner; a @triton.heuristics object outermost is "
                 "neither",
          rewrite="put @triton.heuristics under @triton.autotune (autotune outermost), or fold the heuristic into "
                  "autotune configs"),
    # --- tracing under the interpreter (CPU): torch's Triton capture only knows compiled JITFunctions ---
    Known("RuntimeError", DATA_PTR, devices=INTERPRETER,
          reason="TRITON_INTERPRET=1 makes @triton.jit an InterpretedFunction, which torch's Triton tracing does not "
                 "capture; tracing runs the interpreter on FakeTensors, which reads data_ptr()",
          rewrite="none under the interpreter: trace on a GPU, where the kernel is captured"),
    Known(DYNAMO_UNSUPPORTED, r"Attempted to call function marked as skipped", devices=INTERPRETER,
          reason="Dynamo does not trace into Triton's interpreter (triton.runtime.interpreter is a skipped module)",
          rewrite="none under the interpreter: compile on a GPU"),
    Known("torch._dynamo.exc.TorchRuntimeError", r"RuntimeError when making fake tensor call", devices=INTERPRETER,
          reason="wrap_triton passes an interpreted kernel through untraced; running it on FakeTensors reads "
                 "data_ptr()", rewrite="none under the interpreter: trace on a GPU"),
    Known(OPCHECK_ERROR, r"test_faketensor failed with .*storage of a tensor on device \"meta\"", devices=INTERPRETER,
          reason="opcheck's fake-tensor test runs the triton_op's body on FakeTensors; an interpreted kernel is not "
                 "captured by wrap_triton and touches their (meta) storage",
          rewrite="none under the interpreter: opcheck on a GPU"),
    Known("RuntimeError", r"wrap_triton only works on functions annotated with triton\.jit or triton\.autotune",
          devices=INTERPRETER,
          reason="under TRITON_INTERPRET=1 the kernel is an InterpretedFunction, which this torch's wrap_triton "
                 "rejects", rewrite="none under the interpreter: run on a GPU"),
    # --- Triton without a GPU ---
    Known(f"RuntimeError|{INDUCTOR_ERROR}|{OPCHECK_ERROR}", r"0 active drivers", devices=("cpu",),
          styles=("triton_op_cpu_fallback",),
          stages=("compile_aot_eager", "compile_inductor", "compile_dynamic", "compile_backward", "decompose_",
                  "aoti_", "opcheck"),
          reason="functionalization (aot_eager, Inductor, decompose_custom_triton_ops, opcheck's AOT test) turns a "
                 "triton_op into its Triton kernel even for CPU tensors, bypassing register_kernel(\"cpu\"); "
                 "launching it needs a GPU driver",
          rewrite="keep the op out of those paths on CPU (an opaque custom_op with a CPU kernel), or compile on a GPU",
          source="torch/_library/triton.py"),
    Known(f"RuntimeError|{INDUCTOR_ERROR}", r"0 active drivers", devices=CPU,
          reason="launching (or autotuning, which benchmarks every config) a compiled Triton kernel needs a GPU "
                 "driver; this machine has none",
          rewrite='run Triton kernels on a GPU, or give the op a CPU kernel (triton_op + register_kernel("cpu"))'),
    Known("ValueError", r"Pointer argument \(at \d+\) cannot be accessed from Triton \(cpu tensor\?\)", devices=CPU,
          reason="a compiled Triton kernel was launched on CPU tensors; Triton has no CPU backend",
          rewrite='give the op a CPU kernel (triton_op + register_kernel("cpu"))'),
    Known(f"RuntimeError|{INDUCTOR_ERROR}", r"0 compatible backends for target \(cpu\)", devices=CPU,
          reason="Inductor lowers a triton_op to its Triton kernel even for CPU tensors, bypassing "
                 'register_kernel("cpu") (the decomposition under FunctionalTensorMode has no device check)',
          rewrite="keep the op out of Inductor on CPU (an opaque custom_op), or compile on a GPU",
          source="torch/_library/triton.py"),
    Known("torch._inductor.exc.CppCompileError", r"C\+\+ compile error", devices=CPU, stages=("aoti_",),
          reason="AOTInductor for a CPU graph holding a user Triton kernel emits C++ that does not compile",
          rewrite="package Triton kernels for CUDA only; for CPU, keep them behind an opaque op with a CPU kernel"),
    # --- tracing on any device ---
    Known("RuntimeError", DATA_PTR,
          reason="non-strict export traces the raw launch with FakeTensors and the launcher reads a fake data_ptr()",
          rewrite=f"{TRITON_OP_REWRITE}, or export with strict=True", source="pytorch/pytorch#146066"),
    Known("RuntimeError", r"Raw Triton kernel calls are not supported by non-strict torch\.export",
          reason="non-strict export refuses a raw Triton launch (torch >= 2.14 names the problem)",
          rewrite=f"{TRITON_OP_REWRITE}, or export with strict=True", source="pytorch/pytorch#185827"),
    Known("MissingGradient", r"no gradient reached",
          reason="the Triton kernel higher-order op is not differentiable: no error, the input simply gets no "
                 "gradient",
          rewrite="torch.autograd.Function with a backward kernel, or triton_op + register_autograd"),
    Known("RuntimeError", r"no autograd formula was registered",
          reason="backward through a custom op that registered no autograd formula",
          rewrite="register_autograd on the op"),
    Known("FlopsNotCounted", r"added 0 FLOPs",
          reason="FlopCounterMode counts only ops with a FLOP formula; this kernel's launch has none",
          rewrite="triton_op + torch.utils.flop_counter.register_flop_formula"),
    Known("torch._export.serde.serialize.SerializeError", r"deserialize nyi for torch\._higher_order_ops\."
          r"triton_kernel_wrap\.triton_kernel_wrapper_functional",
          reason="a raw kernel exports as triton_kernel_wrapper_functional, which torch.export can save but not load",
          rewrite=TRITON_OP_REWRITE),
)


def explain(error: str | None, message: str | None, cell) -> Known | None:
    return next((k for k in KNOWN if k.explains(error, message, cell)), None)
