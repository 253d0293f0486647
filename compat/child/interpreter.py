"""Triton's interpreter (TRITON_INTERPRET=1) without the overflow checks it computes and then throws away.

For every integer add, sub and mul a kernel runs, the interpreter checks for overflow
(`TritonSemantic.binary_op_sanitize_overflow_impl`, triton 3.6 and 3.7: both sides cast to int64, the operation again,
two comparisons with the type's bounds, an `and`) and hands the result to `device_assert`, which returns before
looking at it unless the builder's options say `debug`, and the interpreter's never do (`InterpreterOptions`, made
once at import). numpy runs each step, over whole blocks: measured on this 2-core CPU, 52 of the 268 CPU-seconds of
examples/my_kernels' children (results/benchmark/interpreter-overflow-checks/). Where `debug` is off the check can
change nothing, so it is turned off there; where it is on, the check is kept. tests/test_interpreter.py holds the
premise: an overflowing kernel behaves the same with the check and without it.
"""

from __future__ import annotations

import dataclasses

import triton


def drop_discarded_overflow_checks() -> bool:
    """Turn the interpreter's overflow checks off where its `device_assert` discards them; whether it did."""
    if not triton.knobs.runtime.interpret:
        return False
    from triton.runtime import interpreter  # only where it runs: importing Triton does not load it

    options = interpreter.interpreter_builder.options
    if options.debug or not options.sanitize_overflow:
        return False
    interpreter.interpreter_builder.options = dataclasses.replace(options, sanitize_overflow=False)
    return True
