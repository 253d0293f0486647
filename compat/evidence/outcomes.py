"""How a cell ended: exactly one of the KINDS below, with the evidence for it."""

from __future__ import annotations

import re
import signal
from dataclasses import asdict, dataclass, field
from typing import Any

from .rootcause import of_exception, root_cause

KINDS = ("passed", "failed", "mismatch", "crashed", "timed_out", "skipped")
MESSAGE_LIMIT = 4000  # enough for any stable fragment; tracebacks stay in the logs
# A compiler's diagnostics (g++'s, nvcc's): what a C++ compile error is, often past a limit filled by its warnings.
_DIAGNOSTIC = re.compile(r"^.*\b(?:error|fatal error|internal compiler error)\b:.*$|^.*\bKilled signal\b.*$", re.M)
DIAGNOSTICS_LIMIT = 1500
_PAST_CUT = "\n[... cut; the compiler's error lines past the cut:]\n"


@dataclass
class Outcome:
    kind: str
    error_type: str | None = None
    message: str | None = None  # the exception's text (truncated), or why it crashed / was skipped
    numerics: list[dict[str, Any]] | None = None  # one comparison per checked input
    detail: dict[str, Any] = field(default_factory=dict)  # graph nodes, counters, signal, phase, remedy

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"outcome kind {self.kind!r} is not one of {KINDS}")

    @property
    def first_line(self) -> str | None:
        return self.message.strip().splitlines()[0] if self.message and self.message.strip() else None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Outcome":
        return cls(**d)

    @property
    def cause(self):
        """The root cause of a failure (compat.evidence.rootcause), None for the other kinds."""
        return root_cause(self.to_dict())

    @property
    def searchable(self) -> str:
        """The text a row's or a catalogue entry's `match` is searched in: the message, then its cause's message
        (which a wrapper's message may quote escaped, or not at all)."""
        cause = self.cause
        text = f"{self.message or ''}\n{cause.message}" if cause else self.message or ""
        return f"{text}\nraised at {self.detail['raised_at']}" if self.detail.get("raised_at") else text

    def summary(self) -> str:
        if self.kind in ("failed", "crashed", "timed_out", "skipped"):
            head = f"{self.kind} {self.error_type}" if self.error_type else self.kind
            text = f"{head}: {self.first_line}" if self.first_line else head
            cause = self.cause
            if cause and cause.fragment not in text:
                text += f" [cause: {cause.text()}]"
            return text
        if self.kind == "mismatch":
            worst = max(self.numerics or [], key=lambda c: c.get("max_rel_err", 0.0), default={})
            return f"mismatch: {worst.get('why', '')}".rstrip(": ")
        return self.kind


def exception_type_name(exc: BaseException) -> str:
    t = type(exc)
    return t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


# Wrappers whose own message names the backend object (with its memory address) rather than what went wrong.
UNWRAPPED = ("torch._dynamo.exc.BackendCompilerFailed",)


def from_exception(exc: BaseException) -> Outcome:
    detail: dict[str, Any] = {}
    name = exception_type_name(exc)
    wrapped = getattr(exc, "inner_exception", None)
    if name in UNWRAPPED and wrapped is not None:
        detail["wrapped_by"] = name
        exc = wrapped
    inner = of_exception(exc)
    if inner is not exc:
        detail["cause"] = {"error_type": exception_type_name(inner), "message": limited(str(inner))}
    where = raised_at(inner)
    if where:
        detail["raised_at"] = where
    return Outcome("failed", exception_type_name(exc), limited(str(exc)), detail=detail)


def limited(message: str) -> str:
    """The message within MESSAGE_LIMIT: its head, and a compiler's error lines from past the head (a C++ compile
    error's output can fill the limit with warnings before its first error)."""
    if len(message) <= MESSAGE_LIMIT:
        return message
    cut = MESSAGE_LIMIT - DIAGNOSTICS_LIMIT - len(_PAST_CUT)
    kept = "\n".join(m.group(0)[:300] for m in _DIAGNOSTIC.finditer(message, cut))[:DIAGNOSTICS_LIMIT]
    return message[:cut] + _PAST_CUT + kept if kept else message[:MESSAGE_LIMIT]


def raised_at(exc: BaseException) -> str | None:
    """Where the root cause was raised: its innermost frame, as a path under site-packages (or the file's own
    path), line and function. For an assert without a message, this is its stable fragment."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is None:
        return None
    code = tb.tb_frame.f_code
    return f"{code.co_filename.split('site-packages/')[-1]}:{tb.tb_lineno} in {code.co_name}"


def from_comparisons(comparisons: list[dict[str, Any]], detail: dict[str, Any] | None = None) -> Outcome:
    bad = [c for c in comparisons if not c["ok"]]
    return Outcome("mismatch" if bad else "passed", numerics=comparisons, detail=detail or {})


def from_exit(returncode: int, stderr_tail: str, phase: str) -> Outcome:
    """A child that died without reporting: killed by a signal, or exited."""
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        what = f"killed by {name} during {phase}"
        detail: dict[str, Any] = {"signal": name, "phase": phase}
    else:
        what = f"exited with code {returncode} during {phase} without reporting a result"
        detail = {"exit_code": returncode, "phase": phase}
    detail["stderr_tail"] = stderr_tail
    return Outcome("crashed", detail.get("signal", "exit"), what, detail=detail)


def timed_out(seconds: float, phase: str, stderr_tail: str) -> Outcome:
    return Outcome(
        "timed_out",
        None,
        f"no result after {seconds:.0f} s during {phase}; the process was killed",
        detail={"phase": phase, "timeout_s": seconds, "stderr_tail": stderr_tail},
    )


def skipped(reason: str) -> Outcome:
    return Outcome("skipped", None, reason)


def clip(text: str, chars: int) -> str:
    """At most `chars` characters, cut at a word with an ellipsis rather than mid-word (pages quote messages)."""
    return text if len(text) <= chars else text[:chars].rsplit(" ", 1)[0] + " …"
