"""The root cause of a failure: the innermost exception under the wrappers that torch puts around it.

Dynamo, Inductor and opcheck re-raise a kernel's error inside their own ("RuntimeError when making fake tensor call",
"InductorError: RuntimeError: ...", "opcheck(op, ...): test_faketensor failed with ..."). Their first line stays the
same while the error underneath changes between versions, so the diff, the catalogue and the expectation rows
compare the cause. A child records it from the exception chain (`detail["cause"]`); for outcomes recorded before
that, it is read back from the wrapper's message.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Any

FRAGMENT_LIMIT = 160  # a first line longer than this is cut: the tail of such lines holds graph dumps and sizes

# A wrapper's own first line, which says nothing of what went wrong: never a stable fragment on its own.
WRAPPER_LINES = (r"RuntimeError when making fake tensor call",)

_DYNAMO_GOT = re.compile(r"\): got (\w[\w.]*)\((.*)\)\s*$", re.MULTILINE)  # Dynamo's "...(*args): got Error('msg')"
_OPCHECK = re.compile(
    r"^opcheck\(op, \.\.\.\): test_\w+ failed with (.*?)(?: \(scroll up for stack trace\))?$", re.DOTALL
)
_PREFIXED = re.compile(r"^((?:\w+\.)*\w*(?:Error|Exception)): (.+)", re.DOTALL)  # Inductor's "RuntimeError: msg"
_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")
# A file the run generated (its run directory, Inductor's cache): named anew each run, never part of the cause.
_GENERATED = re.compile(r"(?:/[\w.+-]+)*/(?:compat-run-|torchinductor_)[^\s,'\"]*")


@dataclass(frozen=True)
class Cause:
    error_type: str | None
    message: str

    @property
    def fragment(self) -> str:
        """The message's first line without memory addresses or generated files' paths, cut to a length that stays
        stable."""
        line = next((s for s in self.message.strip().splitlines() if s.strip()), "")
        return _GENERATED.sub("<generated file>", _ADDRESS.sub("0x…", " ".join(line.split())))[:FRAGMENT_LIMIT]

    def text(self) -> str:
        return f"{self.error_type}: {self.fragment}" if self.error_type else self.fragment


def of_exception(exc: BaseException) -> BaseException:
    """The innermost exception of a chain of explicit causes (`raise ... from`, Dynamo's `inner_exception`, the
    first of an exception group's: Hypothesis's FlakyFailure holds what the first call raised). An implicit
    `__context__` is not followed: library code that raises while handling a KeyError did not fail of it."""
    seen = {id(exc)}
    while True:
        members = getattr(exc, "exceptions", None)  # an exception group's (Python 3.11+)
        grouped = members[0] if isinstance(members, tuple) and members else None
        inner = getattr(exc, "inner_exception", None) or exc.__cause__ or grouped
        if inner is None or id(inner) in seen:
            return exc
        seen.add(id(inner))
        exc = inner


def _from_message(error_type: str | None, message: str) -> Cause:
    got = _DYNAMO_GOT.search(message)
    if got:
        try:
            inner = ast.literal_eval(got.group(2))
        except (ValueError, SyntaxError):
            inner = got.group(2)
        return _from_message(got.group(1), str(inner))
    lines = message.strip().splitlines()
    first = lines[0] if lines else ""
    opcheck = _OPCHECK.match(first)
    if opcheck:
        return _from_message(None, opcheck.group(1))
    prefixed = _PREFIXED.match(first)
    if prefixed:
        return _from_message(prefixed.group(1), "\n".join([prefixed.group(2), *lines[1:]]))
    return Cause(error_type, message)


def root_cause(outcome: dict[str, Any] | Any) -> Cause | None:
    """The cause of a failed outcome (an Outcome or its dict); None for the other kinds."""
    o = outcome if isinstance(outcome, dict) else outcome.to_dict()
    if o["kind"] != "failed":
        return None
    recorded = (o.get("detail") or {}).get("cause")
    if recorded:
        return Cause(recorded["error_type"], recorded["message"])
    return _from_message(o.get("error_type"), o.get("message") or "")


def signature(outcome: dict[str, Any] | Any) -> tuple:
    """What identifies an outcome across versions: its kind, the wrapper's type, and the cause's type and fragment
    (crashes: the signal or exit, which `error_type` holds)."""
    o = outcome if isinstance(outcome, dict) else outcome.to_dict()
    cause = root_cause(o)
    return (o["kind"], o.get("error_type")) + ((cause.error_type, cause.fragment) if cause else ())
