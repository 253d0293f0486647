"""compat.child.interpreter: Triton's interpreter loses only work whose results nothing reads."""

import dataclasses

import pytest
import torch
import triton
import triton.language as tl
from triton.runtime import interpreter

from compat.child import interpreter as lightened

VALUES = [2**30, -(2**30), 7, 2**31 - 1]  # int32: times 4 overflows all but one


@pytest.fixture
def builder(monkeypatch):
    """The interpreter on, its builder's options and its language patcher restored after the test."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    built = interpreter.interpreter_builder
    monkeypatch.setattr(built, "options", built.options)
    monkeypatch.setattr(interpreter, "_patch_lang", interpreter._patch_lang)
    return built


def _plus_one(x):
    return x + 1


plus_one = None  # `_plus_one` as a jit helper: the interpreter runs a kernel with its module's globals, no closure


def _kernels():
    """Defined once the interpreter is on: `triton.jit` reads TRITON_INTERPRET when it decorates."""
    global plus_one
    plus_one = triton.jit(_plus_one)

    @triton.jit
    def times_four(x_ptr, out_ptr, n, factor, BLOCK: tl.constexpr):
        offsets = tl.arange(0, BLOCK)
        mask = offsets < n
        x = tl.load(x_ptr + offsets, mask=mask)
        tl.store(out_ptr + offsets, x * factor + x, mask=mask)

    @triton.jit
    def plus_two(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        x = tl.load(x_ptr + offsets, mask=mask)
        tl.store(out_ptr + offsets, plus_one(plus_one(x)), mask=mask)

    return times_four, plus_two


def _times_four(kernel) -> torch.Tensor:
    x = torch.tensor(VALUES, dtype=torch.int32)
    out = torch.empty_like(x)
    kernel[(1,)](x, out, x.numel(), 3, BLOCK=4)
    return out


def _plus_two(kernel) -> torch.Tensor:
    x = torch.arange(10, dtype=torch.float32)
    out = torch.empty_like(x)
    kernel[(3,)](x, out, x.numel(), BLOCK=4)
    return out


def test_an_overflowing_kernel_computes_the_same_with_the_interpreters_checks_and_without(builder):
    times_four, _ = _kernels()
    assert builder.options.sanitize_overflow and not builder.options.debug  # the interpreter as Triton makes it
    checked = _times_four(times_four)  # the premise: without `debug` the check raises nothing, whatever it finds
    wrapped = ((torch.tensor(VALUES, dtype=torch.int64) * 4 + 2**31) % 2**32 - 2**31).to(torch.int32)
    assert torch.equal(checked, wrapped)  # two's complement, as a GPU computes it
    assert "overflow checks" in lightened.lighten()
    assert not builder.options.sanitize_overflow
    assert torch.equal(_times_four(times_four), checked)


def test_the_checks_stay_where_debug_reads_them_and_where_the_interpreter_is_off(builder, monkeypatch):
    times_four, _ = _kernels()
    builder.options = dataclasses.replace(builder.options, debug=True)
    assert "overflow checks" not in lightened.lighten()
    assert builder.options.sanitize_overflow
    with pytest.raises(Exception, match="int32 overflow detected for operation mul"):
        _times_four(times_four)  # what the check is for, where it is read
    builder.options = dataclasses.replace(builder.options, debug=False)
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    assert lightened.lighten() == []
    assert builder.options.sanitize_overflow


def test_a_launch_patches_the_language_once_for_its_helpers_and_restores_it(builder, monkeypatch):
    _, plus_two = _kernels()
    before = _plus_two(plus_two)
    assert torch.equal(before, torch.arange(10, dtype=torch.float32) + 2)
    assert "repatching" in lightened.lighten()
    assert "repatching" not in lightened.lighten()  # once a process
    once, patched = interpreter._patch_lang, []

    def counted(fn):
        scope = once(fn)
        patched.append((fn.__name__, len(scope._changes)))
        return scope

    monkeypatch.setattr(interpreter, "_patch_lang", counted)
    assert torch.equal(_plus_two(plus_two), before)
    launches = [changes for name, changes in patched if name == "plus_two"]
    helpers = [changes for name, changes in patched if name == "_plus_one"]
    assert len(launches) == 1 and launches[0] > 0  # the launch patched the language
    assert len(helpers) == 3 * 2 and not any(helpers)  # 3 programs x 2 helper calls: nothing patched again
    assert tl.core.is_builtin(tl.load) and tl.core.is_builtin(tl.core.load)  # and the launch restored it


class _Function:
    """What `_patch_lang` reads of a jit function: its name and its module's globals."""

    def __init__(self, name: str, module_globals: dict):
        self.__name__, self.__globals__ = name, module_globals


def test_a_helper_whose_module_holds_what_the_launch_did_not_patch_patches_it_as_triton_does(builder):
    assert "repatching" in lightened.lighten()
    launch = interpreter._patch_lang(_Function("kernel", {"tl": tl}))  # the launch's: `tl` only
    assert not tl.core.is_builtin(tl.load) and tl.core.is_builtin(tl.core.load)
    assert not interpreter._patch_lang(_Function("helper", {"tl": tl}))._changes  # patched already: skipped
    helper = interpreter._patch_lang(_Function("helper", {"core": tl.core}))
    assert helper._changes and not tl.core.is_builtin(tl.core.load)  # `tl.core` was not: patched, as before
    helper.restore()
    launch.restore()
    assert tl.core.is_builtin(tl.load) and tl.core.is_builtin(tl.core.load)


def test_an_interpreter_without_the_option_or_the_scope_is_left_as_it_is(builder, monkeypatch):
    monkeypatch.setattr(builder, "options", type("Options", (), {"debug": False})())  # no sanitize_overflow
    monkeypatch.delattr(interpreter, "_LangPatchScope")
    patch = interpreter._patch_lang
    assert lightened.lighten() == []
    assert interpreter._patch_lang is patch
