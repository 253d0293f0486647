"""compat.child.interpreter: Triton's interpreter loses its overflow checks only where they can change nothing."""

import dataclasses

import pytest
import torch
import triton
import triton.language as tl
from triton.runtime import interpreter

from compat.child.interpreter import drop_discarded_overflow_checks

VALUES = [2**30, -(2**30), 7, 2**31 - 1]  # int32: times 4 overflows all but one


@pytest.fixture
def builder(monkeypatch):
    """The interpreter's one builder, on, its options restored after the test."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    built = interpreter.interpreter_builder
    monkeypatch.setattr(built, "options", built.options)
    return built


def _times_four():
    @triton.jit
    def times_four(x_ptr, out_ptr, n, factor, BLOCK: tl.constexpr):
        offsets = tl.arange(0, BLOCK)
        mask = offsets < n
        x = tl.load(x_ptr + offsets, mask=mask)
        tl.store(out_ptr + offsets, x * factor + x, mask=mask)

    return times_four


def _run(kernel) -> torch.Tensor:
    x = torch.tensor(VALUES, dtype=torch.int32)
    out = torch.empty_like(x)
    kernel[(1,)](x, out, x.numel(), 3, BLOCK=4)
    return out


def test_an_overflowing_kernel_computes_the_same_with_the_interpreters_checks_and_without(builder):
    kernel = _times_four()
    assert builder.options.sanitize_overflow and not builder.options.debug  # the interpreter as Triton makes it
    checked = _run(kernel)  # the premise: without `debug` the check raises nothing, whatever it finds
    wrapped = ((torch.tensor(VALUES, dtype=torch.int64) * 4 + 2**31) % 2**32 - 2**31).to(torch.int32)
    assert torch.equal(checked, wrapped)  # two's complement, as a GPU computes it
    assert drop_discarded_overflow_checks()
    assert not builder.options.sanitize_overflow
    assert torch.equal(_run(kernel), checked)


def test_the_checks_stay_where_debug_reads_them_and_where_the_interpreter_is_off(builder, monkeypatch):
    kernel = _times_four()
    builder.options = dataclasses.replace(builder.options, debug=True)
    assert not drop_discarded_overflow_checks()
    assert builder.options.sanitize_overflow
    with pytest.raises(Exception, match="int32 overflow detected for operation mul"):
        _run(kernel)  # what the check is for, where it is read
    builder.options = dataclasses.replace(builder.options, debug=False)
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    assert not drop_discarded_overflow_checks()
    assert builder.options.sanitize_overflow
