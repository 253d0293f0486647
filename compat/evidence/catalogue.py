"""Known failures: an observed error's stable fragment, why it happens, what to do instead, and where it is documented.

`--compat-accept` and `python -m compat accept` explain a new failure row from here when its error type and message
match an entry (a mismatch: when its cell does), and fill in rows still unexplained once an entry explains them; a
row no entry explains is recorded as unexplained, which a test forbids committing. Adding an entry is how a newly
observed failure gets its reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..matrix.styles import styles_where

INTERPRETER = ("cpu_interpret",)
INTERPRETER_LIMIT = (
    "Triton's interpreter runs kernels eagerly on CPU tensors only; torch cannot trace, compile or export an "
    "interpreted kernel, so the CPU measures eager and eager_backward alone: measure this stage on a GPU"
)
CPU = ("cpu", "cpu_interpret")


@dataclass(frozen=True)
class Known:
    error: str  # failed: a regex the exception type, or its root cause's type, must match in full
    # failed: a regex on a stable fragment of the root cause (searched in the message and the cause's); mismatch:
    # a regex on what the comparison found (its `why`), or "" for any
    match: str
    reason: str
    rewrite: str | None = None
    kind: str = "failed"  # or "mismatch", "crashed", "timed_out": then only the cell filters below apply
    kernels: tuple[str, ...] | None = None  # None: any kernel
    devices: tuple[str, ...] | None = None  # None: any device
    styles: tuple[str, ...] | None = None  # None: any style
    stages: tuple[str, ...] | None = None  # None: any stage (prefixes: "aoti_" covers both AOTI stages)
    dtypes: tuple[str, ...] | None = None  # None: any dtype
    source: str | None = None  # upstream issue / PR / file that documents it
    # "fuzz": a finding of the fuzz tests (a generated input), not of the matrix's cell; "both": a failure a fuzz
    # example meets as the cell's own input does on another version (torch 2.9's export guards, say)
    section: str = "cells"
    # the name an expectations row refers to it by (`known: <key>`) instead of copying its words; an entry without
    # one has its match, reason and rewrite copied into the rows it explains
    key: str | None = None
    # The failure is the device's, not the op's: why this device cannot measure the stage at all (the report shows
    # such a cell as not measurable here, never as failing; the gate still holds it to its row).
    unmeasurable: str | None = None

    def explains(self, outcome, cell, section: str = "cells") -> bool:
        if outcome.kind != self.kind or self.section not in (section, "both"):
            return False
        if self.kind == "failed":
            types = (outcome.error_type or "", outcome.cause.error_type or "")
            if not (any(re.fullmatch(self.error, t) for t in types) and re.search(self.match, outcome.searchable)):
                return False
        if (
            self.kind == "mismatch"
            and self.match
            and not any(re.search(self.match, n.get("why", "")) for n in outcome.numerics or [])
        ):
            return False
        return all(
            allowed is None or value in allowed
            for allowed, value in (
                (self.kernels, cell.kernel),
                (self.devices, cell.device),
                (self.styles, cell.style),
                (self.dtypes, cell.dtype),
            )
        ) and (self.stages is None or cell.stage.startswith(self.stages))


DATA_PTR = r"Cannot access data pointer of Tensor \(e\.g\. FakeTensor, FunctionalTensor\)"
TRITON_OP_REWRITE = (
    "wrap the kernel in torch.library.triton_op and launch it through torch.library.wrap_triton "
    "(exports strict and non-strict)"
)
DYNAMO_UNSUPPORTED = "torch._dynamo.exc.Unsupported"
SERIALIZE_ERROR = r"torch\._export\.serde\.serialize\.SerializeError"
INDUCTOR_ERROR = r"torch\._inductor\.exc\.InductorError"
OPCHECK_ERROR = r"torch\.testing\._internal\.optests\.generate_tests\.OpCheckError"
# A wrap_triton refusal surfaces as itself in eager, wrapped by Dynamo's fake-tensor run, or inside opcheck's report.
WRAP_TRITON_ERRORS = rf"RuntimeError|torch\._dynamo\.exc\.TorchRuntimeError|{OPCHECK_ERROR}"
WRAP_TRITON_REFUSES = r"wrap_triton only works on functions annotated with triton\.jit or triton\.autotune"
# Launching a compiled Triton kernel on CPU tensors: without a GPU driver, or with one but CPU pointers.
# Triton 3.9 says the second where earlier ones said the first (torch 2.15: TritonUnavailableError).
NO_GPU_LAUNCH = (
    r"0 active drivers|triton not built with the 'cpu' backend|"
    r"Pointer argument \(at \d+\) cannot be accessed from Triton \(cpu tensor\?\)"
)
HEURISTIC_GUARD = styles_where(lambda s: s.heuristics == "size")  # a guard on the size the heuristics read

TRITON_OP_STYLES = styles_where(lambda s: s.traced_op)  # a triton_op's launch, traced into the graph
# A fuzz mismatch that computed wrong values on a view (not one that returned nothing, nor one on a contiguous input).
WRONG_VALUES = r", (transposed|sliced|strided): .*?\d+ element\(s\)"  # wrong numbers, or NaN where eager has none
# What a view needs of a traced launch: a .contiguous() inside the traced code runs once, on the contiguous example,
# where it copies nothing, so the graph holds no copy (measured on the H100: examples/my_kernels' rms_norm triton_op
# and Liger-Kernel's ensure_contiguous read views wrongly from their packages).
VIEW_REWRITE = (
    "pass contiguous inputs (call .contiguous() before the exported program or package, outside the "
    "traced code); a .contiguous() inside the traced op copies nothing on the contiguous example and "
    "leaves no copy in the graph"
)
# Launched outside any op, so an exported graph holds the launch itself.
RAW_LAUNCH = styles_where(lambda s: s.raw_launch)
HEURISTICS_OUTERMOST = styles_where(lambda s: s.traced_op and s.heuristics_outermost)  # what wrap_triton refuses
EXPORTED = ("export_", "save_load_", "decompose_", "aoti_")  # the stages made from an exported program
PACKAGE_API = "torch._inductor.aoti_compile_and_package + aoti_load_package, as torch's deprecation notice says"
HEURISTIC_REWRITE = (
    "make heuristics depend on static sizes only, or export with a Dim range on one side of the "
    "threshold, or let autotune choose at run time"
)

KNOWN: list[Known] = [  # the first entry that explains an observation wins: narrow entries first
    # --- the package run from C++ (issue 17; measured on the H100, torch 2.11 / triton 3.6, and on the CPU with
    # torch 2.13, whose message adds the sentence about custom_op) ---
    Known(
        "c10::Error",
        r"Could not find schema for \w+::\w+",
        key="cpp_no_python_schema",
        stages=("aoti_cpp_",),
        reason="an opaque op (torch.library.custom_op, or a Library impl written in Python) stays a call in the "
        "package, made through AOTInductor's proxy executor, which looks the op's schema up in the "
        "dispatcher: in a process without Python nothing registered it. Raw (strict) and triton_op kernels "
        "are compiled into the package and run",
        rewrite="wrap the kernel in torch.library.triton_op (its Triton kernel is compiled into the package), or "
        "register the op from C++ (TORCH_LIBRARY) in the process that loads the package",
        source="torch/csrc/inductor/aoti_torch/oss_proxy_executor.cpp; torch >= 2.13 adds 'Custom operators "
        "created via torch.library.custom_op cannot be run via AOTI without Python environment'",
    ),
    # --- modes, APIs and autotune arguments of issue 16 (measured on the H100, torch 2.11 / triton 3.6; the entries
    # for the interpreter and the CPU on torch 2.13 / triton 3.7.1) ---
    Known(
        "RuntimeError",
        r"skipping cudagraphs due to mutated inputs",
        key="cudagraphs_mutated_input",
        stages=("compile_cudagraphs",),
        reason="the op writes into an input of the compiled graph (axpy_inplace's y); CUDA graph trees record no "
        "graph for a function that mutates an input it does not own, and say why: an error under "
        "triton.cudagraph_or_error, a silent run without a graph by default (mode='reduce-overhead' then "
        "gains nothing)",
        rewrite="write into a buffer the graph owns (a module buffer or parameter) or return a new tensor; or "
        "accept the fallback",
    ),
    Known(
        WRAP_TRITON_ERRORS,
        r"pre_hook and post_hook are not supported in triton\.Autotune or triton\.Config",
        key="autotune_pre_hook_refused",
        styles=("autotune_pre_hook_triton_op",),
        reason="torch's Triton capture (Dynamo, export, opcheck's traced tests) refuses an Autotuner whose configs "
        "carry a pre_hook: it cannot run a Python hook inside a graph. Eager runs the hook",
        rewrite="drop the hook: restore_value / reset_to_zero for what hooks usually reset, or do the work in the "
        "launcher before the launch",
        source="pytorch/pytorch#139658 (for #139059: hooks were ignored)",
    ),
    *(
        Known(
            "",
            "",
            key=f"{prefix}reset_to_zero_loses_y",
            kind="mismatch",
            section=section,
            kernels=("axpy_inplace",),
            styles=("autotune_reset_to_zero_triton_op",),
            reason="reset_to_zero zeroes y before every benchmark launch and once more after benchmarking, before the "
            "launch that counts (Triton 3.6 / 3.7's Autotuner.run); axpy adds into y, so on a call that "
            "autotunes (a new key) y's own value is lost and y comes back alpha * x, wherever the Autotuner "
            "runs at call time: eager, an exported module run in Python, the compiled graphs of aot_eager and "
            "of Inductor (float32; bfloat16 and float16 measured right there). The AOTI packages, decomposition "
            "and compile_dynamic measured right; their mechanism was not investigated",
            rewrite="restore_value=['y_ptr'] for a buffer the kernel reads and writes; reset_to_zero only for outputs "
            "that start from zero (atomic accumulators)",
            source="triton-lang/triton#7181 (older Triton skipped the reset after benchmarking)",
        )
        for section, prefix in (("cells", ""), ("fuzz", "fuzz_"))
    ),
    Known(
        "",
        "",
        key="warmup_specialised_size_1",
        kind="mismatch",
        styles=("warmup_launch",),
        stages=("eager", "flop_count"),
        reason="warmup() compiled the kernel at the first launch's arguments, whose size was 1 (axpy's n, matmul's "
        "M); Triton specialises an integer argument equal to 1 into the compiled code, so the kernel reused "
        "for later sizes computes one element (row): wrong values. A first launch whose sizes are not 1 "
        "passes here; other specialisations (divisibility by 16, pointer alignment) are baked in the same "
        "way",
        rewrite="launch kernel[grid](...) (Triton compiles per specialisation), or jit the kernel with "
        "do_not_specialize= its size arguments before warmup",
    ),
    Known(
        r"(torch\.)?AcceleratorError",
        r"misaligned address",
        key="fuzz_warmup_specialised_alignment",
        section="fuzz",
        styles=("warmup_launch",),
        stages=("eager", "flop_count"),
        reason="warmup() compiled the kernel at the first launch's arguments, whose pointers were 16-byte aligned; "
        "Triton bakes that alignment into the compiled code (vectorised loads), so a later launch on a view whose "
        "data starts off that alignment (a sliced input) fails with CUDA's misaligned address. Observed on the "
        "H200 (torch 2.11, triton 3.6) in the whole CUDA gate: eager, a sliced input after contiguous ones. The error is "
        "sticky: the process's CUDA context is lost, so the fuzz test checks nothing after it (and counts what it "
        "left)",
        rewrite="launch kernel[grid](...) (Triton compiles per specialisation), or make inputs contiguous before "
        "the warmed-up launch",
    ),
    Known(
        DYNAMO_UNSUPPORTED,
        r"Unsupported method call",
        key="warmup_dynamo_unsupported",
        styles=("warmup_launch",),
        reason="Dynamo recognises the JITFunction but not the warmup idiom around it: it cannot trace the kernel's "
        "attributes (here arg_names), warmup() or the CompiledKernel launch, and fullgraph=True and strict "
        "export refuse the graph break",
        rewrite=f"launch kernel[grid](...) directly; {TRITON_OP_REWRITE}",
    ),
    Known(
        "TypeError",
        r"Pointer argument must be either uint64 or have data_ptr method",
        key="warmup_pointer_argument",
        styles=("warmup_launch",),
        reason="non-strict export runs the launcher on FakeTensors; the warmed-up CompiledKernel's launcher takes "
        "their pointers and refuses them (with a dynamic batch it fails earlier, on a fake data_ptr())",
        rewrite=TRITON_OP_REWRITE,
    ),
    Known(
        "TypeError",
        r"'NoneType' object is not subscriptable",
        key="warmup_interpreter_none",
        styles=("warmup_launch",),
        devices=INTERPRETER,
        unmeasurable=INTERPRETER_LIMIT,
        reason="under TRITON_INTERPRET=1 warmup() compiles nothing and returns None, so launching the compiled "
        "kernel fails",
        rewrite="none under the interpreter: launch kernel[grid](...) there",
    ),
    Known(
        DYNAMO_UNSUPPORTED,
        r"Unresolved GetAttrVariable comparison|ConstantVariable\(str:",
        key="warmup_interpreter_getattr",
        styles=("warmup_launch",),
        devices=INTERPRETER,
        unmeasurable=INTERPRETER_LIMIT,
        reason="Dynamo traces into the interpreter's warmup() and stops on Python it cannot model",
        rewrite="none under the interpreter: compile on a GPU",
    ),
    Known(
        r"RuntimeError|std::runtime_error",
        r"run_func_\( container_handle_",
        key="aoti_legacy_opaque_op_fails",
        styles=("custom_op", "library_define"),
        stages=("aoti_legacy_",),
        reason="an opaque op (a custom_op or a Library impl, which AOTInductor calls back through its proxy "
        "executor) in a library made by torch._inductor.aot_compile and loaded by torch._export.aot_load: "
        "the model call fails. The package API (aoti_compile_and_package + aoti_load_package) runs the "
        "same op; the mechanism was not investigated",
        rewrite=PACKAGE_API,
    ),
    Known(
        "",
        "",
        key="aoti_legacy_opaque_op_wrong",
        kind="mismatch",
        styles=("custom_op", "library_define"),
        stages=("aoti_legacy_",),
        reason="an opaque op in a library made by torch._inductor.aot_compile and loaded by torch._export.aot_load "
        "returns None, or leaves its output unwritten, without an error; the package API runs the same op "
        "right. Mechanism not investigated",
        rewrite=PACKAGE_API,
    ),
    Known(
        r"torch\.fx\.experimental\.symbolic_shapes\.GuardOnDataDependentSymNode",
        r"data-dependent expression u\d+",
        key="subclass_export_data_dependent",
        styles=("triton_op_subclass",),
        stages=("export_static_strict", "export_strict"),
        reason="the strict export's module returns a tensor that holds no values: the subclass built inside "
        "forward leaks tracing through flat_apply. Reading the output as a user's code does (its size with a "
        "dynamic batch, its values with a static one: compat.child.checks.produced) meets an unbacked symbol "
        "(measured on the H100, torch 2.11)",
        rewrite="pass the subclass in as an input",
    ),
    Known(
        r"torch\.fx\.experimental\.symbolic_shapes\.PendingUnbackedSymbolNotFound",
        r"Pending unbacked symbols \{u\d+\} not in returned outputs",
        key="subclass_decompose_unbacked",
        styles=("triton_op_subclass",),
        stages=("decompose_strict",),
        reason="run_decompositions traces the strict export again, and the subclass built inside forward leaves "
        "an unbacked symbol (u0) that no output of the decomposed graph returns (measured on the H100, torch 2.11)",
        rewrite="pass the subclass in as an input",
    ),
    Known(
        "RuntimeError",
        r"CUDA driver error: invalid argument",
        key="tma_cpp_wrapper_driver_error",
        kernels=("silu_tma",),
        styles=("raw_jit",),
        stages=("compile_cpp_wrapper",),
        reason="Inductor's C++ wrapper launches the raw host-TMA kernel and the driver rejects the launch's "
        "arguments (the Python wrapper runs it); the descriptor's passing was not investigated",
        rewrite="keep host-TMA kernels out of cpp_wrapper and AOTI until upstream supports them",
    ),
    Known(
        "RuntimeError",
        r"aoti_torch_call_dispatcher\(",
        key="library_define_cpu_dispatcher",
        styles=("library_define",),
        devices=CPU,
        reason="the C++ wrapper calls the op through the dispatcher, which finds no CPU kernel: vLLM's idiom "
        "registers a CUDA impl only",
        rewrite='register an impl for CPU as well (lib.impl(name, fn, "CPU")), or for CompositeExplicitAutograd',
    ),
    # --- launch idioms of real projects that keep the raw launch out of torch's Triton capture, on any device ---
    # (measured on the H100, torch 2.11 / triton 3.6, and under the interpreter, torch 2.13 / triton 3.7.1)
    Known(
        WRAP_TRITON_ERRORS,
        DATA_PTR,
        key="allow_in_graph_data_ptr",
        styles=("allow_in_graph",),
        reason="allow_in_graph puts the launcher into the graph as one opaque call, which Dynamo, AOTAutograd and "
        "export run on FakeTensors to learn its outputs; the raw launch reads their data_ptr()",
        rewrite=TRITON_OP_REWRITE,
    ),
    Known(
        OPCHECK_ERROR,
        rf"{DATA_PTR}|CUDA error: an illegal memory access",
        key="no_wrap_opcheck_data_ptr",
        styles=("triton_op_no_wrap",),
        stages=("opcheck",),
        reason="opcheck's test_aot_dispatch_dynamic traces the triton_op's body, whose raw launch is not captured "
        "(no wrap_triton): it reads a FakeTensor's data_ptr(), or in some runs launches on an address that "
        "is not the data and the kernel faults (an illegal memory access; which comes first varies from run "
        "to run, and so does the type the fault surfaces as, RuntimeError or torch.AcceleratorError; the "
        "fault's mechanism not investigated)",
        rewrite="launch through torch.library.wrap_triton(kernel)[grid](...) inside the triton_op",
    ),
    Known(
        WRAP_TRITON_ERRORS,
        DATA_PTR,
        key="no_wrap_data_ptr",
        styles=("triton_op_no_wrap",),
        reason="tracing runs a triton_op's body, and only launches through wrap_triton are captured; the raw launch "
        "runs on FakeTensors and reads their data_ptr()",
        rewrite="launch through torch.library.wrap_triton(kernel)[grid](...) inside the triton_op",
    ),
    Known(
        WRAP_TRITON_ERRORS,
        DATA_PTR,
        key="compiler_disable_data_ptr",
        styles=("compiler_disable",),
        reason="torch.compiler.disable stops Dynamo only; AOTAutograd, opcheck and non-strict export still run the "
        "launcher on FakeTensors, and the raw launch reads their data_ptr()",
        rewrite=TRITON_OP_REWRITE,
    ),
    Known(
        DYNAMO_UNSUPPORTED,
        r"Unsupported context manager",
        key="wrapper_outside_context_manager",
        styles=("wrapper_outside",),
        reason="a wrap_triton wrapper made outside the traced function reaches Dynamo as a plain object: Dynamo "
        "traces its Python code instead of recognising the launch (only a wrap_triton(kernel) call inside "
        "the traced code is), and stops at the lock it enters",
        rewrite="call wrap_triton(kernel)[grid](...) inside the traced function at each launch, or use triton_op",
        source="pytorch/pytorch#154365",
    ),
    Known(
        DYNAMO_UNSUPPORTED,
        r"Skip calling `torch\.compiler\.disable\(\)`d function",
        key="compiler_disable_skipped",
        styles=("compiler_disable",),
        reason="torch.compiler.disable asks Dynamo for a graph break, which fullgraph=True and strict export refuse",
        rewrite="compile without fullgraph=True (the launcher then runs eagerly between graphs), or wrap the kernel in "
        "triton_op",
    ),
    Known(
        r"ValueError|torch\._dynamo\.exc\.InternalTorchDynamoError",
        r"Expected a cuda device, but got: cpu",
        key="device_context_cuda_expected",
        styles=("device_context",),
        reason="torch.cuda.device() takes a CUDA device; under the interpreter the input is a CPU tensor",
        rewrite="enter torch.cuda.device(x.device) only for CUDA tensors (contextlib.nullcontext() otherwise)",
    ),
    Known(
        rf"NotImplementedError|{OPCHECK_ERROR}",
        r"with arguments from the 'CPU' backend",
        key="library_define_no_cpu_kernel",
        styles=("library_define",),
        devices=CPU,
        reason="vLLM's idiom registers a CUDA impl only: a CPU tensor (the interpreter's) finds no kernel for the op",
        rewrite='register an impl for CPU as well (lib.impl(name, fn, "CPU")), or for CompositeExplicitAutograd',
    ),
    Known(
        WRAP_TRITON_ERRORS,
        WRAP_TRITON_REFUSES,
        key="wrap_triton_refuses_heuristics",
        styles=HEURISTICS_OUTERMOST,
        reason="wrap_triton accepts a JITFunction or an Autotuner; a @triton.heuristics object outermost is neither",
        rewrite="put @triton.heuristics under @triton.autotune (autotune outermost), or fold the heuristic into "
        "autotune configs",
    ),
    # --- tracing under the interpreter (CPU): torch's Triton capture only knows compiled JITFunctions ---
    Known(
        "RuntimeError",
        DATA_PTR,
        key="interpreter_data_ptr",
        devices=INTERPRETER,
        unmeasurable=INTERPRETER_LIMIT,
        reason="TRITON_INTERPRET=1 makes @triton.jit an InterpretedFunction, which torch's Triton tracing does not "
        "capture; tracing runs the interpreter on FakeTensors, which reads data_ptr()",
        rewrite="none under the interpreter: trace on a GPU, where the kernel is captured",
    ),
    Known(
        DYNAMO_UNSUPPORTED,
        r"Attempted to call function marked as skipped",
        key="interpreter_skipped_function",
        devices=INTERPRETER,
        unmeasurable=INTERPRETER_LIMIT,
        reason="Dynamo does not trace into Triton's interpreter (triton.runtime.interpreter is a skipped module)",
        rewrite="none under the interpreter: compile on a GPU",
    ),
    Known(
        "TypeError",
        r"unhashable type: non-nested SymInt",
        key="interpreter_unhashable_symint",
        devices=INTERPRETER,
        unmeasurable=INTERPRETER_LIMIT,
        reason="under the interpreter wrap_triton lets the Autotuner through untraced; non-strict export then runs "
        "it with a symbolic n_elements, and Autotuner hashes its key before launching",
        rewrite="none under the interpreter: export on a GPU",
    ),
    Known(
        DYNAMO_UNSUPPORTED,
        r"Unsupported hasattr call[\s\S]*Dynamo does not know how to trace the function",
        key="interpreter_hasattr",
        devices=INTERPRETER,
        unmeasurable=INTERPRETER_LIMIT,
        reason="Dynamo traces into the interpreted Autotuner, which inspects a symbolic size as if it were a tensor",
        rewrite="none under the interpreter: compile on a GPU",
    ),
    Known(
        DYNAMO_UNSUPPORTED,
        r"Observed exception",
        key="interpreter_tma_observed_exception",
        kernels=("silu_tma",),
        devices=INTERPRETER,
        unmeasurable=INTERPRETER_LIMIT,
        reason="Dynamo traces the interpreter's host-TMA launch, which raises inside the compiled region",
        rewrite="none under the interpreter: compile on a GPU",
    ),
    Known(
        DYNAMO_UNSUPPORTED,
        r"Dynamo does not know how to trace method `data_ptr`",
        key="interpreter_data_ptr_method",
        devices=INTERPRETER,
        unmeasurable=INTERPRETER_LIMIT,
        reason="Dynamo traces into Triton's interpreter, which reads data_ptr() of the traced tensors",
        rewrite="none under the interpreter: compile on a GPU",
    ),
    Known(
        DYNAMO_UNSUPPORTED,
        r"Dynamo doesn't have a rule to determine the type of argument "
        r"TMADescriptorStableVariable",
        key="interpreter_tma_descriptor_type",
        devices=INTERPRETER,
        unmeasurable=INTERPRETER_LIMIT,
        reason="Dynamo models a host TMA descriptor for a compiled kernel; the interpreter's launcher inspects it as "
        "a Python object, which Dynamo cannot type",
        rewrite="none under the interpreter: compile on a GPU",
    ),
    Known(
        rf"AttributeError|torch\._dynamo\.exc\.InternalTorchDynamoError|{OPCHECK_ERROR}",
        r"'function' object has no attribute 'fn'",
        key="interpreter_no_fn_attribute",
        devices=INTERPRETER,
        unmeasurable=INTERPRETER_LIMIT,
        reason="Dynamo's Autotuner support expects the decorated object to wrap a JITFunction (.fn); under the "
        "interpreter it does not",
        rewrite="none under the interpreter: compile on a GPU",
    ),
    Known(
        OPCHECK_ERROR,
        r"test_faketensor failed with .*storage of a tensor on device \"meta\"",
        key="interpreter_opcheck_meta_storage",
        devices=INTERPRETER,
        unmeasurable=INTERPRETER_LIMIT,
        reason="opcheck's fake-tensor test runs the triton_op's body on FakeTensors; an interpreted kernel is not "
        "captured by wrap_triton and touches their (meta) storage",
        rewrite="none under the interpreter: opcheck on a GPU",
    ),
    Known(
        WRAP_TRITON_ERRORS,
        WRAP_TRITON_REFUSES,
        key="interpreter_wrap_triton_refuses",
        section="both",
        devices=INTERPRETER,
        unmeasurable=INTERPRETER_LIMIT,
        reason="under TRITON_INTERPRET=1 the kernel is an InterpretedFunction, which this torch's wrap_triton rejects",
        rewrite="none under the interpreter: run on a GPU",
    ),
    # --- Triton without a GPU ---
    Known(
        f"RuntimeError|ValueError|{INDUCTOR_ERROR}|{OPCHECK_ERROR}",
        NO_GPU_LAUNCH,
        key="cpu_fallback_no_gpu_launch",
        devices=("cpu",),
        styles=("triton_op_cpu_fallback",),
        stages=(
            "compile_aot_eager",
            "compile_inductor",
            "compile_dynamic",
            "compile_backward",
            "decompose_",
            "aoti_",
            "opcheck",
        ),
        reason="functionalization (aot_eager, Inductor, decompose_custom_triton_ops, opcheck's AOT test) turns a "
        'triton_op into its Triton kernel even for CPU tensors, bypassing register_kernel("cpu"); '
        "the kernel then launches on CPU tensors, which fails (no GPU driver, or CPU pointers)",
        rewrite="keep the op out of those paths on CPU (an opaque custom_op with a CPU kernel), or compile on a GPU",
        source="torch/_library/triton.py",
    ),
    Known(
        f"RuntimeError|{INDUCTOR_ERROR}|{OPCHECK_ERROR}",
        r"0 active drivers",
        key="cpu_no_active_driver",
        devices=CPU,
        reason="launching (or autotuning, which benchmarks every config) a compiled Triton kernel needs a GPU "
        "driver; this machine has none",
        rewrite='run Triton kernels on a GPU, or give the op a CPU kernel (triton_op + register_kernel("cpu"))',
    ),
    Known(
        f"RuntimeError|{INDUCTOR_ERROR}",
        r"0 compatible backends for target \(cpu\)",
        key="cpu_no_backend",
        devices=CPU,
        reason="Inductor lowers a triton_op to its Triton kernel even for CPU tensors, bypassing "
        'register_kernel("cpu") (the decomposition under FunctionalTensorMode has no device check)',
        rewrite="keep the op out of Inductor on CPU (an opaque custom_op), or compile on a GPU",
        source="torch/_library/triton.py",
    ),
    Known(
        rf"torch\._inductor\.exc\.CppCompileError|{INDUCTOR_ERROR}",
        r"C\+\+ compile error",
        key="cpu_cpp_compile_error",
        devices=CPU,
        stages=("aoti_",),
        reason="AOTInductor for a CPU graph holding a user Triton kernel emits C++ that does not compile",
        rewrite="package Triton kernels for CUDA only; for CPU, keep them behind an opaque op with a CPU kernel",
    ),
    Known(
        "mismatch",
        "",
        key="cpu_fallback_inductor_wrong",
        kind="mismatch",
        devices=("cpu",),
        styles=("triton_op_cpu_fallback",),
        stages=("compile_inductor", "compile_dynamic", "aoti_"),
        reason="measured on torch 2.9 (CPU build of the CUDA wheel): Inductor's code for a triton_op with a CPU "
        "kernel gives wrong values on CPU tensors (bfloat16 max rel err 0.77), where later versions refuse "
        "to launch the Triton kernel; the cause was not investigated here",
        rewrite="on torch 2.9, keep the op out of Inductor on CPU (an opaque custom_op with a CPU kernel)",
    ),
    # --- versions: what one torch or triton version does differently ---
    Known(
        DYNAMO_UNSUPPORTED,
        r"Call to a time function",
        key="interpreter_time_function",
        devices=INTERPRETER,
        unmeasurable=INTERPRETER_LIMIT,
        reason="the Autotuner benchmarks its configs through time.time(), which torch 2.15's Dynamo graph-breaks "
        "on (before: 'Attempted to call function marked as skipped', the same builtin)",
        rewrite="none under the interpreter: compile on a GPU",
    ),
    Known(
        DYNAMO_UNSUPPORTED,
        r"Failed to trace builtin operator",
        key="interpreter_builtin_operator",
        devices=INTERPRETER,
        unmeasurable=INTERPRETER_LIMIT,
        reason="torch 2.9's Dynamo cannot trace builtin dir() on a module, which Triton's interpreter launch path "
        "calls (later versions get further and stop at UntypedStorage.data_ptr)",
        rewrite="none under the interpreter: compile on a GPU",
    ),
    Known(
        DYNAMO_UNSUPPORTED,
        r"Unexpected type in sourceless builder",
        key="sourceless_builder",
        reason="torch 2.9's Dynamo cannot wrap a plain Python object (the kernel's declaration) that "
        "autograd.Function.forward reaches without a source; later versions trace it",
        rewrite="on torch 2.9, pass only tensors and constants into autograd.Function.forward",
    ),
    Known(
        "NameError",
        r"name 'L' is not defined",
        key="name_L_not_defined",
        section="both",
        reason="torch 2.9's export adds a _guards_fn call whose generated code names Dynamo's local scope 'L', "
        "undefined when the exported module runs; seen for the ops that take a Python float (silu_mul, "
        "axpy_inplace)",
        rewrite="on torch 2.9, export with the float folded into the module (a constant), or upgrade",
    ),
    Known(
        r"triton\.runtime\.errors\.InterpreterError|TypeError|" + OPCHECK_ERROR,
        r"only 0-dimensional arrays can be converted to Python scalars",
        key="interpreter_matmul_0d_array",
        section="both",
        devices=INTERPRETER,
        unmeasurable=INTERPRETER_LIMIT,
        kernels=("matmul",),
        reason="the interpreter of triton 3.5 and 3.6 converts a one-element numpy array to a Python scalar in "
        "this kernel's tl.dot loop, which numpy refuses; triton 3.7's interpreter runs it",
        rewrite="none under the interpreter before triton 3.7: run on a GPU",
    ),
    # --- tracing on any device ---
    Known(
        "RuntimeError",
        DATA_PTR,
        key="raw_launch_data_ptr",
        reason="non-strict export traces the raw launch with FakeTensors and the launcher reads a fake data_ptr()",
        rewrite=f"{TRITON_OP_REWRITE}, or export with strict=True",
        source="pytorch/pytorch#146066",
    ),
    Known(
        "RuntimeError",
        r"Raw Triton kernel calls are not supported by non-strict torch\.export",
        key="raw_launch_nonstrict_export",
        reason="non-strict export refuses a raw Triton launch (torch >= 2.14 names the problem)",
        rewrite=f"{TRITON_OP_REWRITE}, or export with strict=True",
        source="pytorch/pytorch#185827",
    ),
    Known(
        "MissingGradient",
        r"no gradient reached",
        key="no_gradient",
        reason="the Triton kernel higher-order op is not differentiable: no error, the input simply gets no gradient",
        rewrite="torch.autograd.Function with a backward kernel, or triton_op + register_autograd",
    ),
    Known(
        "RuntimeError",
        r"no autograd formula was registered",
        key="no_autograd_formula",
        reason="backward through a custom op that registered no autograd formula",
        rewrite="register_autograd on the op",
    ),
    Known(
        "FlopsNotCounted",
        r"added 0 FLOPs",
        key="no_flops_counted",
        reason="FlopCounterMode counts only ops with a FLOP formula; this kernel's launch has none",
        rewrite="triton_op + torch.utils.flop_counter.register_flop_formula",
    ),
    Known(
        "torch._dynamo.exc.UserError",
        r"Constraints violated \(batch\)![\s\S]*satisfy the generated guard",
        key="heuristic_guard_batch",
        styles=HEURISTIC_GUARD,
        stages=EXPORTED,
        reason="the @triton.heuristics choice reads n_elements, so tracing guards the batch to one side of the "
        "heuristic's threshold (n_elements <= 4096, batch <= 64), which the declared Dim(1..1024) crosses",
        rewrite=HEURISTIC_REWRITE,
    ),
    Known(
        "torch._dynamo.exc.UserError",
        r"Constraints violated \(\w+\)!",
        key="heuristic_guard_constraints",
        styles=HEURISTIC_GUARD,
        stages=EXPORTED,
        reason="the @triton.heuristics choice reads a size (the kernel's first autotune key), so tracing guards the "
        "dynamic dim to one side of the heuristic's threshold, which the declared Dim range crosses",
        rewrite=HEURISTIC_REWRITE,
    ),
    Known(
        "AssertionError",
        r"Expected op to be '==', got <?=? for",
        key="heuristic_guard_assert",
        styles=HEURISTIC_GUARD,
        stages=EXPORTED,
        reason="the heuristic reads n_elements = rows x cols; with cols static its threshold guards rows by a "
        "rational bound (rows > 4096 / cols), which torch.export's constraint solver cannot state: it fails "
        "on an internal assertion, not with `Constraints violated`",
        rewrite=HEURISTIC_REWRITE,
    ),
    # The matrix's first call of a stage, and the fuzz tests' first call of each new shape: both tune (a new key).
    *(
        Known(
            "",
            "",
            key=f"{prefix}autotune_in_place_benchmark",
            kind="mismatch",
            section=section,
            kernels=("axpy_inplace",),
            styles=(
                "autotune_raw",
                "autotune_triton_op",
                "autotune_heuristics_triton_op",
                "heuristics_autotune_triton_op",
                "autotune_prune_triton_op",
                "autotune_pre_hook_triton_op",
            ),
            reason="@triton.autotune benchmarks each config by launching it on the real arguments; an in-place kernel "
            "(y += alpha * x) then adds into y once per benchmarked launch, and y comes back many times too "
            "large on every call that tunes (the first of each new key): nothing restores it between launches",
            rewrite="triton.autotune(..., restore_value=['y_ptr']) for every argument the kernel writes (or "
            "reset_to_zero for accumulators), or autotune on copies",
        )
        for section, prefix in (("cells", ""), ("fuzz", "fuzz_"))
    ),
    Known(
        "",
        r"shape \(1,\), sliced",
        key="fuzz_max_autotune_in_place_one_element",
        kind="mismatch",
        section="fuzz",
        kernels=("axpy_inplace",),
        stages=("compile_max_autotune",),
        reason="under mode='max-autotune' the in-place kernel's one-element sliced y comes back wrong, whatever "
        "wraps the kernel: measured on the H100 (torch 2.11, triton 3.6) for autotune_restore_value_triton_op, "
        "whose restore_value restores y around each benchmark launch, and on the H200 (the whole CUDA gate at "
        "6510b99) for heuristics_constant_raw and triton_op_cpu_fallback, which autotune nothing themselves, after "
        "6 calls at other shapes; the other stages of the same ops give eager's values. The mechanism was not "
        "investigated",
        rewrite="none known yet; compile without max-autotune for this op",
    ),
    Known(
        "",
        "",
        key="wrap_triton_flop_count_not_run",
        kind="mismatch",
        styles=("wrap_triton", "wrapper_outside", "autograd_wrap_triton"),
        stages=("flop_count",),
        reason="under FlopCounterMode a wrap_triton launch outside a triton_op is counted (0 FLOPs) and not run: the "
        "output keeps whatever its memory held. Where such a cell passes, or fails only FlopsNotCounted, the "
        "allocator handed back memory that held the right values from an earlier run of the same inputs",
        rewrite="triton_op + torch.utils.flop_counter.register_flop_formula",
        source="torch/_higher_order_ops/triton_kernel_wrap.py (FlopCounterMode counts the launch, not run)",
    ),
    Known(
        "Recompiled",
        r"recompiled",
        key="heuristic_guard_recompiled",
        styles=HEURISTIC_GUARD,
        reason="the @triton.heuristics choice reads n_elements, so the dynamic graph is guarded to one side of the "
        "threshold and a larger batch recompiles",
        rewrite="make heuristics depend on static sizes only",
    ),
    Known(
        "TypeError",
        r"unhashable type: non-nested SymInt",
        key="autotune_raw_nonstrict_symint",
        styles=("autotune_raw",),
        stages=(
            "export_nonstrict",
            "save_load_nonstrict",
            "decompose_nonstrict",
            "aoti_nonstrict",
            "aoti_cpp_nonstrict",
            "aoti_max_autotune_nonstrict",
            "aoti_legacy_nonstrict",
        ),
        reason="non-strict export with a dynamic batch runs the raw autotuned launch with a symbolic n_elements, and "
        "Autotuner hashes its key before launching (a static export, export_static_nonstrict, fails on the "
        "fake data_ptr() instead)",
        rewrite=TRITON_OP_REWRITE,
    ),
    Known(
        "RuntimeError",
        r"We found a fake tensor in the exported program constant's list",
        key="subclass_fake_constant",
        styles=("triton_op_subclass",),
        reason="non-strict export of a wrapper subclass built inside forward lifts it as a constant that is still a "
        "FakeTensor",
        rewrite="pass the subclass in as an input, or build it outside the exported module",
    ),
    Known(
        INDUCTOR_ERROR,
        DATA_PTR,
        key="subclass_aoti_data_ptr",
        styles=("triton_op_subclass",),
        stages=("aoti_",),
        reason="the strict export holds the subclass as a lifted FakeTensor constant (flat_apply), whose data "
        "AOTInductor then tries to read",
        rewrite="pass the subclass in as an input",
    ),
    Known(
        "",
        "",
        key="tma_triton_op_inductor_wrong",
        kind="mismatch",
        kernels=("silu_tma",),
        styles=("triton_op",),
        stages=(
            "compile_aot_eager",
            "compile_inductor",
            "compile_dynamic",
            "compile_backward",
            "compile_cudagraphs",
            "compile_max_autotune",
            "compile_cpp_wrapper",
            "aoti_",
        ),
        reason="host-TMA descriptors made inside a triton_op: once AOTAutograd functionalizes the op (aot_eager, "
        "Inductor, AOTI) the output comes back wrong, by the output's own scale; eager and backend=eager "
        "are right. Upstream reworks host TMA in triton_op / wrap_triton after 2.14.1",
        rewrite="launch host-TMA kernels outside torch.compile / AOTI, or use device-side descriptors "
        "(tl.make_tensor_descriptor)",
        source="pytorch/pytorch#193608",
    ),
    Known(
        r"RuntimeError|std::runtime_error",
        r"run_func_\( container_handle_",
        key="tma_raw_aoti_fails",
        kernels=("silu_tma",),
        styles=("raw_jit",),
        stages=("aoti_",),
        dtypes=("float32",),
        reason="the AOTI package of a raw host-TMA kernel fails at run time in float32 (bfloat16 and float16 run); "
        "the C++ runner reports only that the model call failed",
        rewrite="keep host-TMA kernels out of AOTI packages until upstream supports them",
        source="pytorch/pytorch#193608",
    ),
    Known(
        SERIALIZE_ERROR,
        r"Failed serializing node[\s\S]*wrap_with_set_grad_enabled",
        key="serialize_set_grad_enabled",
        reason="the strict export wraps the autograd.Function's forward, raw launch included, in a "
        "wrap_with_set_grad_enabled subgraph that torch.export.save cannot serialize",
        rewrite="triton_op + register_autograd",
    ),
    Known(
        SERIALIZE_ERROR,
        r"Failed serializing node triton_kernel_wrapper_mutation_proxy",
        key="serialize_mutation_proxy",
        reason="the strict export keeps the raw launch as a triton_kernel_wrapper_mutation node, which "
        "torch.export.save cannot serialize",
        rewrite=TRITON_OP_REWRITE,
    ),
    Known(
        SERIALIZE_ERROR,
        r"Failed serializing node flat_apply",
        key="serialize_flat_apply",
        styles=("triton_op_subclass",),
        reason="the strict export builds the wrapper subclass with a flat_apply node, which torch.export.save "
        "cannot serialize",
        rewrite="pass the subclass in as an input",
    ),
    Known(
        "MissingKernelNode",
        r"no graph node matches",
        key="tma_decompose_no_kernel_node",
        kernels=("silu_tma",),
        styles=("triton_op",),
        stages=("decompose_",),
        reason="decompose_custom_triton_ops=True on a host-TMA triton_op leaves no kernel launch in the graph: the "
        "output is allocated and never written, without an error",
        rewrite="keep host-TMA triton_ops undecomposed (the default)",
        source="pytorch/pytorch#193608",
    ),
    Known(
        SERIALIZE_ERROR,
        r"deserialize nyi for torch\._higher_order_ops\."
        r"triton_kernel_wrap\.triton_kernel_wrapper_functional",
        key="deserialize_triton_wrapper_nyi",
        reason="a raw kernel exports as triton_kernel_wrapper_functional, which torch.export can save but not load",
        source="torch/_export/serde/serialize.py (deserialize nyi)",
        rewrite=TRITON_OP_REWRITE,
    ),
    # The fuzz tests' findings (section "fuzz"): a cell that passes on the model gives wrong values on a generated
    # input. Observed on the H100 for silu, sigmoid_silu, silu_out, silu_mul and rms_norm; each launcher checks its
    # input layout (a contiguity assert, or rows contiguous) in Python, which tracing runs once, on the example.
    Known(
        "RuntimeError",
        r"aoti_torch_call_dispatcher\(",
        key="fuzz_cpp_wrapper_dispatcher",
        section="fuzz",
        stages=("compile_cpp_wrapper",),
        reason="Inductor's C++ wrapper calls an opaque op through aoti_torch_call_dispatcher; when the op raises (its "
        "launcher's contiguity assert on a strided view) the wrapper reports only that the dispatcher call "
        "failed: the op's own message is lost, so the refusal no longer says why (measured under the "
        "interpreter, torch 2.13, and on the H100, torch 2.11)",
        rewrite="check input layouts before calling the compiled function, or compile without cpp_wrapper while "
        "debugging",
    ),
    Known(
        "AssertionError",
        r"cudagraph_trees\.py:\d+ in dealloc_current_path_weakrefs",
        key="fuzz_cudagraphs_after_op_error",
        section="fuzz",
        stages=("compile_cudagraphs", "compile_max_autotune"),
        reason="Under CUDA graph trees (mode 'reduce-overhead', and 'max-autotune', which turns them on) an opaque op "
        "that raises inside the compiled function (its launcher's contiguity assert refusing a view, as eager "
        "does) leaves the tree's current path unfinished: the next call, on a valid contiguous input, fails "
        "with a bare AssertionError in cudagraph_trees.dealloc_current_path_weakrefs, whatever wraps the kernel. "
        "Observed on the H100 (torch 2.11) for custom_op and library_define: in each of these fuzz tests the "
        "failing call followed one refused view in the same process; on the H200 for raw_jit too (silu_tma, "
        "whose launcher refuses sizes TMA cannot take). pytorch/pytorch#175562 replaced that assert with a "
        "warning (torch 2.13's cudagraph_trees.py has it)",
        rewrite="make inputs contiguous before the compiled call (or inside the op), so nothing raises inside the "
        "CUDA graph",
        source="torch/_inductor/cudagraph_trees.py (dealloc_current_path_weakrefs)",
    ),
    Known(
        "IndexError",
        r"triton_heuristics\.py:\d+ in reset_to_zero_args",
        key="fuzz_reset_to_zero_args_index",
        section="fuzz",
        styles=("autotune_reset_to_zero_triton_op",),
        stages=(
            "compile_inductor",
            "compile_dynamic",
            "compile_cudagraphs",
            "compile_max_autotune",
            "compile_cpp_wrapper",
        ),
        reason="Inductor's autotuner for the op's kernel (its @triton.autotune(reset_to_zero=[...]) configs) zeroes "
        "the named arguments before each benchmarked config by indexing the kernel's argument names with each "
        "launch argument's position; at a launch that tunes after the calls before it (other shapes and views "
        "under compile_cudagraphs), the launch has more arguments than the kernel has names and it fails with "
        "IndexError: list index out of range. Observed on the H200 (torch 2.11): under compile_cudagraphs in float32, "
        "shown in a fresh process by the calls before it; under compile_inductor and compile_dynamic in bfloat16 "
        "(the whole CUDA gate at 6510b99); under compile_cpp_wrapper in float32, where the C++ wrapper runs the "
        "autotuning as a Python code block and reports it as InductorError: RuntimeError: Failed to run autotuning "
        "code block: list index out of range, after 26 calls of other shapes (the whole CUDA gate at f228959)",
        rewrite="zero the accumulator in the wrapper before the launch instead of reset_to_zero, or compile "
        "without CUDA graphs",
        source="torch/_inductor/runtime/triton_heuristics.py (CachingAutotuner.reset_to_zero_args)",
    ),
    Known(
        "",
        r"overflows where eager overflows",
        key="fuzz_overflow_as_eager",
        kind="mismatch",
        section="fuzz",
        reason="on an input holding the dtype's largest values (or values whose squares or products overflow it), the "
        "op gives NaN or inf where eager PyTorch overflows too and float64 is finite: an overflow of the dtype, "
        "as eager's and no worse, which the harness calls overflow only (compat.evidence.numerics). Measured "
        "for rms_norm's backward (a row holding float32's largest value: its sum of squares overflows, rstd is "
        "0, the gradient is inf times 0) on the CPU interpreter (torch 2.13, triton 3.7) and the H200 (torch "
        "2.11, triton 3.6)",
        rewrite="none needed for real activations; to match float64 there, compute the overflowing step in a wider "
        "type (float32 for half types) or rescale before squaring",
    ),
    Known(
        "",
        "got NoneType",
        key="fuzz_custom_op_aoti_none",
        kind="mismatch",
        section="fuzz",
        styles=("custom_op",),
        stages=("aoti_",),
        reason="The AOTI package of an opaque custom_op returns None for a non-contiguous input: no output and no "
        "error (the op runs through AOTInductor's proxy executor; eager raises the op's layout assert). "
        "Mechanism not investigated further.",
        rewrite="pass contiguous inputs to the package",
    ),
    Known(
        "",
        "got NoneType",
        key="fuzz_library_define_aoti_none",
        kind="mismatch",
        section="fuzz",
        styles=("library_define",),
        stages=("aoti_",),
        reason="The AOTI package of a Library-defined op with its own CUDA impl (opaque, like a custom_op) returns "
        "None for a non-contiguous input: no output and no error; mechanism not investigated further.",
        rewrite="pass contiguous inputs to the package",
    ),
    Known(
        "",
        WRONG_VALUES,
        key="fuzz_aoti_strided_wrong",
        kind="mismatch",
        section="fuzz",
        stages=("aoti_",),
        reason="An exported program holds the launch as export traced it on the contiguous example: its strides, "
        "and any layout check or .contiguous() on the way (run once there, copying nothing), are that example's. "
        "The AOTI package compiles that launch in and checks no input strides: it launches the kernel on the "
        "view's data pointer and the kernel reads the storage with the layout it assumes: silent wrong values.",
        rewrite=VIEW_REWRITE,
    ),
    Known(
        "",
        WRONG_VALUES,
        key="fuzz_triton_op_decompose_strided_wrong",
        kind="mismatch",
        section="fuzz",
        stages=("decompose_",),
        styles=TRITON_OP_STYLES,
        reason="The launcher's layout check ran once, at trace time, on the contiguous example; "
        "decompose_custom_triton_ops=True replaces the op by its traced launch, which launches the kernel "
        "on the view's data pointer, and the kernel reads the storage with the layout it assumes: silent "
        "wrong values.",
        rewrite=f"keep the op (the default decompose_custom_triton_ops=False), or {VIEW_REWRITE}",
    ),
    *(
        Known(
            "",
            WRONG_VALUES,
            key=f"fuzz_raw_launch_{stage.rstrip('_')}_strided_wrong",
            kind="mismatch",
            section="fuzz",
            stages=(stage,),
            styles=RAW_LAUNCH,
            reason=f"The launcher's contiguity assert ran once, at trace time, on the contiguous example; the {graph} "
            f"holds the raw launch{held}, which launches the kernel on the strided input's data pointer and the kernel "
            "reads the storage as if it were contiguous: silent wrong values (the NaN stored around the view "
            "comes out).",
            rewrite=rewrite,
        )
        for stage, graph, held, rewrite in (
            (
                "export_",
                "exported graph",
                " (triton_kernel_wrapper_mutation)",
                f"wrap the kernel in triton_op, whose exported graph keeps the op call and runs its check; or {VIEW_REWRITE}",
            ),
            ("decompose_", "decomposed graph", "", f"wrap the kernel in triton_op; or {VIEW_REWRITE}"),
        )
    ),
]


def register_known(*entries: Known) -> None:
    """Add failures you know (of your own kernels, say), ahead of the suite's: narrower entries first."""
    for entry in entries:
        if not isinstance(entry, Known):
            raise TypeError(f"register_known: expected compat.Known entries, got {type(entry).__name__}")
        taken = by_key(entry.key) if entry.key else None
        if taken is not None and taken != entry:  # the same entry registered again (a module imported twice) is fine
            raise ValueError(f"register_known: the key {entry.key!r} names another entry already; pick another key")
    KNOWN[:0] = [entry for entry in entries if entry not in KNOWN]


def explain(outcome, cell, section: str = "cells") -> Known | None:
    return next((k for k in KNOWN if k.explains(outcome, cell, section)), None)


def by_key(key: str) -> Known | None:
    return next((k for k in KNOWN if k.key == key), None)
