"""Triton's interpreter (TRITON_INTERPRET=1) without two pieces of work whose results nothing reads.

- **Overflow checks it throws away.** For every integer add, sub and mul a kernel runs, the interpreter checks for
  overflow (`TritonSemantic.binary_op_sanitize_overflow_impl`, triton 3.6 and 3.7: both sides cast to int64, the
  operation again, two comparisons with the type's bounds, an `and`) and hands the result to `device_assert`, which
  returns before looking at it unless the builder's options say `debug`, and the interpreter's never do
  (`InterpreterOptions`, made once at import). Where `debug` is off the check is turned off; where it is on, kept.
- **Patching `triton.language` again at every helper call.** A launch patches the `tl` and `tl.core` its kernel's
  module holds (`_patch_lang`) and restores them when it ends; each call of a `@triton.jit` helper inside it patches
  its own module's again, through `inspect.getmembers` of each, and drops that scope. Where every one of them is
  patched already the second pass only sets what is set; it is skipped there, and runs as before anywhere else.

Measured on a 2-core CPU, `examples/my_kernels`' children spent 52 (the checks) and 22.6 (the patching) of their
268 CPU-seconds on these (results/benchmark/interpreter-discarded-work/). tests/test_interpreter.py holds the premises
on Triton's own interpreter: the same values with and without each, and what is patched after a launch. A Triton
whose interpreter has neither (no `sanitize_overflow` option, no `_LangPatchScope`) is left as it is.
"""

from __future__ import annotations

import dataclasses

import triton

SENTINEL = "load"  # a builtin of `tl` and `tl.core` alike: a launch's patch replaces it, its restore puts it back


def lighten() -> list[str]:
    """Where the environment asks for the interpreter, take out what it computes for nothing; what was taken out."""
    if not triton.knobs.runtime.interpret:
        return []
    from triton.runtime import interpreter  # only where it runs: importing Triton does not load it

    taken = []
    if _drop_overflow_checks(interpreter):
        taken.append("overflow checks")
    if _patch_once(interpreter):
        taken.append("repatching")
    return taken


def _drop_overflow_checks(interpreter) -> bool:
    options = interpreter.interpreter_builder.options
    if options.debug or not getattr(options, "sanitize_overflow", False):
        return False
    interpreter.interpreter_builder.options = dataclasses.replace(options, sanitize_overflow=False)
    return True


def _patch_once(interpreter) -> bool:
    patch, scope = getattr(interpreter, "_patch_lang", None), getattr(interpreter, "_LangPatchScope", None)
    if patch is None or scope is None or getattr(patch, "patched_once", False):
        return False
    language = triton.language

    def patch_once(fn):
        langs = [value for value in fn.__globals__.values() if value is language or value is language.core]
        if langs and not any(language.core.is_builtin(getattr(lang, SENTINEL)) for lang in langs):
            return scope()  # all patched by the running launch, which restores them
        return patch(fn)

    patch_once.patched_once = True  # type: ignore[attr-defined]
    interpreter._patch_lang = patch_once
    return True
