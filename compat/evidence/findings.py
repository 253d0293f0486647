"""A fuzz finding: what a generated input showed, pinned so that a later run tells it apart from a new difference.

A finding is a difference's signature and the example that shows it:
- `output`: what differed, as the comparison names it ("compiled grad of x", "eager out"), or the artifact that
  raised;
- `layout`: the example's layout (contiguous, transposed, sliced, strided);
- `difference`: a key of DIFFERENCES (numerics' element classes, and the op's error);
- `cause`: "special values" where the example without its NaN, inf, subnormal, zero and largest values shows
  nothing, else "ordinary values";
- `max_rel_err`: for wrong values, the worst relative error seen; `error`: for an error, its exception type;
- `after`: for a finding that shows only after other calls (a compiled function called at other shapes first, as a
  training loop calls it), those calls: a sequence (JSON, `[[stage, example], ...]`) run in a fresh process before
  the example. Such a pin is checked by running its sequence (compat.run.session), not by replaying its example;
  the calls are its cause, so it explains its output's wrong values (or errors) on any layout, from any values;
- `gpu`: the GPU it showed on. A pin must show again only on that GPU (an autotuner's pick, and so a
  config-specific difference, is the GPU's); elsewhere it explains what it pins, if met, and is not missed.

A row of the expectations' fuzz section pins its findings. The fuzz test replays each pinned example first and
then searches on: a difference a pin explains (the same signature: output, layout, family of difference and cause;
and an error at most ERROR_MARGIN times the pinned one) is counted, not raised, so the search goes on past it; any
other difference is a new finding and fails the gate, whatever the row says (another output, another layout,
another kind of difference, ordinary values where the pin needs special ones, a larger error, except for a finding
that needs earlier calls, whose error follows them). A pinned example that no longer shows its difference fails the
gate too: the fix is recorded by accepting it.

A row recorded before findings were pinned lists only its example: its replay in each run pins what it shows then,
on any layout as contiguous (or not) as the example's (the row recorded one layout of the several it may have
failed on); the next accept records each finding it explained.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, fields
from typing import Any

from ..errors import ExpectationsError
from ..matrix.strategies import LAYOUTS, Example
from .numerics import DIFFERENCES as VALUE_DIFFERENCES

DIFFERENCES = {
    **VALUE_DIFFERENCES,
    "outputs": "another number, shape or dtype of outputs than eager's",
    "no_gradient": "no gradient reached an input that eager differentiates",
    "error": "an error on an input it should take (a view refused without saying why, or any other)",
}
CAUSES = ("special values", "ordinary values")
ERROR_MARGIN = 2.0  # a pinned wrong-values finding explains errors up to this multiple of the worst it saw


@dataclass(frozen=True)
class Finding:
    output: str
    layout: str
    difference: str
    cause: str
    example: str  # the example's JSON (compat.matrix.strategies.Example)
    max_rel_err: float | None = None
    error: str | None = None
    after: str | None = None  # the calls before the example that it needs (a sequence's JSON, see `sequence`)
    gpu: str | None = None  # the GPU it showed on (None: any device); only there is it missed when it does not show

    @property
    def family(self) -> str:
        """Differences of one family explain one another: wrong values, NaN or inf where the truth is finite and a
        special value lost all come of one wrong computation (a kernel reading a view as contiguous shows each, by
        what the example holds); overflowing as eager does, an error, the outputs' number or a missing gradient are
        each a family of their own."""
        return {"overflow_only": "overflow", "error": "error", "outputs": "outputs", "no_gradient": "no_gradient"}.get(
            self.difference, "values"
        )

    @property
    def view(self) -> str:
        return _view_or_not(self.layout)

    @property
    def signature(self) -> tuple:
        """What a pin and a later observation must share. An overflow where eager overflows too is the dtype's, in any
        output (a gradient's NaN lands in grad of x on one example and grad of w on another), on any layout, from
        large ordinary values as from the largest special ones."""
        if self.family == "overflow":
            return (self.family,)
        return (self.output, self.layout, self.family, self.cause, self.error)

    def _compared(self, f: "Finding") -> tuple:
        """What of `f` this pin holds it to: its signature, a view's layout as a view (an op that reads a view as
        contiguous goes wrong on each kind of view the fuzz tests happen to draw); for a finding that needs earlier
        calls, what those calls decide (the output, the kind of difference, the error), not the layout or values it
        happened to show on."""
        if self.family == "overflow":
            return f.signature
        if self.after:
            return (f.output, f.family, f.error)
        return (f.output, _view_or_not(f.layout), f.family, f.cause, f.error)

    def explains(self, seen: "Finding") -> bool:
        """The same signature, and for wrong values an error at most ERROR_MARGIN times the pin's; for a finding that
        needs earlier calls, on any layout and at any error, which follow the calls (measured on the H100: RMSNorm's
        1-token gradient was off by 0.19 after one sequence, by 1.8 after another, and NaN on a sliced input)."""
        if self._compared(seen) != self._compared(self):
            return False
        if self.max_rel_err is None or seen.max_rel_err is None or self.after:
            return True
        return seen.max_rel_err <= ERROR_MARGIN * self.max_rel_err

    def explains_as_recorded_before(self, seen: "Finding") -> bool:
        """What the replay of a row recorded before findings were pinned explains: it recorded one example, the first
        Hypothesis shrank to, so one layout of several: the same output, family, cause and error, on an input as
        contiguous (or not) as its example."""
        return (seen.output, seen.family, seen.cause, seen.error, seen.layout == "contiguous") == (
            self.output,
            self.family,
            self.cause,
            self.error,
            self.layout == "contiguous",
        ) or self.family == seen.family == "overflow"

    def unlike(self, seen: "Finding") -> str:
        """What sets `seen` apart from this pin, in words."""
        parts = []
        for name, what in (
            ("output", "another output"),
            ("view", "another layout"),
            ("family", "another kind of difference"),
            ("cause", "another cause"),
            ("error", "another error"),
        ):
            compared = self.family != "overflow" or name == "family"
            if self.after:
                compared = name in ("output", "family", "error")
            if compared and getattr(seen, name) != getattr(self, name):
                shown = "layout" if name == "view" else name
                parts.append(f"{what} ({getattr(seen, shown)}; pinned: {getattr(self, shown)})")
        if not parts and not self.explains(seen):
            parts.append(
                f"a larger error (max rel err {seen.max_rel_err:.3g} > {ERROR_MARGIN:g} x the pinned "
                f"{self.max_rel_err:.3g})"
            )
        return ", ".join(parts)

    def text(self) -> str:
        what = f"{self.error}" if self.difference == "error" else self.difference
        err = f", max rel err {self.max_rel_err:.3g}" if self.max_rel_err is not None else ""
        after = f", after {len(sequence(self.after))} earlier calls" if self.after else ""
        return f"{self.output}, {self.layout}: {what}{err}, from {self.cause}{after}"

    def to_row(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None}

    @classmethod
    def from_row(cls, row: Any, where: str) -> "Finding":
        if not isinstance(row, dict):
            raise ExpectationsError(f"{where}: a finding must be a mapping")
        names = {f.name for f in fields(cls)}
        unknown, missing = set(row) - names, {"output", "layout", "difference", "cause", "example"} - set(row)
        if unknown or missing:
            raise ExpectationsError(
                f"{where}: a finding has the keys {sorted(names)}"
                + (f"; unknown: {sorted(unknown)}" if unknown else "")
                + (f"; missing: {sorted(missing)}" if missing else "")
            )
        for key, allowed in (("layout", LAYOUTS), ("difference", tuple(DIFFERENCES)), ("cause", CAUSES)):
            if row[key] not in allowed:
                raise ExpectationsError(f"{where}: {key} {row[key]!r} is none of {', '.join(allowed)}")
        err = row.get("max_rel_err")
        if err is not None and not (isinstance(err, (int, float)) and math.isfinite(err) and err >= 0):
            raise ExpectationsError(f"{where}: max_rel_err {err!r} is not a finite number >= 0")
        if (row["difference"] == "error") != (row.get("error") is not None):
            raise ExpectationsError(f"{where}: 'error' names the exception type of an error finding, and only there")
        example_json(row["example"], where)
        if row.get("after") is not None:
            try:
                sequence(row["after"])
            except (ValueError, KeyError, TypeError) as exc:
                raise ExpectationsError(
                    f"{where}: after is not a sequence of calls ({exc}); copy it from the failing test's reproducer"
                ) from None
        return cls(**row)


def _view_or_not(layout: str) -> str:
    return "contiguous" if layout == "contiguous" else "a view"


def sequence(text: str) -> list[tuple[str, Example]]:
    """A finding's `after`: the calls, each a stage and an example, in the order they ran."""
    calls = json.loads(text)
    if not isinstance(calls, list):
        raise TypeError("not a list of [stage, example] pairs")
    return [(str(stage), Example.from_json(json.dumps(example))) for stage, example in calls]


def sequence_json(calls: list[tuple[str, Example]]) -> str:
    return json.dumps([[stage, json.loads(ex.to_json())] for stage, ex in calls], separators=(",", ":"))


def example_json(text: Any, where: str) -> Example:
    try:
        return Example.from_json(text)
    except (ValueError, KeyError, TypeError) as exc:
        raise ExpectationsError(
            f"{where}: example is not a fuzz example's JSON ({exc}); copy it from the failing test's reproducer"
        ) from None


def pins(row: dict[str, Any]) -> list[dict[str, Any]]:
    """What a fuzz row pins, as the fuzz test takes it: its findings, or (a row recorded before findings were pinned)
    its example alone, which the run's replay pins, with the GPU it was recorded on where the row was measured on
    one GPU alone."""
    if row.get("findings"):
        return [dict(f) for f in row["findings"]]
    if not row.get("example"):
        return []
    measured = (row.get("provenance") or {}).get("measured")
    devices = {m["device"] for m in ([measured] if isinstance(measured, dict) else measured or [])}
    gpu = next(iter(devices)) if row.get("host") == "gpu" and len(devices) == 1 else None
    return [{"example": row["example"], **({"gpu": gpu} if gpu else {})}]


def recorded(outcome, gpu: str | None = None) -> dict[str, Any]:
    """What a fuzz row records of a fuzz outcome: its findings (without this run's counts; an overflow where eager
    overflows too is no failure, so no pin; a new one with the `gpu` it showed on); an outcome from before findings
    were pinned, its example."""
    detail = outcome.detail
    found = [
        {k: v for k, v in f.items() if k not in ("pinned", "seen")} | ({"gpu": gpu} if gpu and "gpu" not in f else {})
        for f in detail.get("findings") or []
        if not is_overflow(f)
    ]
    if found:
        return {"findings": found}
    if detail.get("example"):
        return {"example": json.dumps(detail["example"], separators=(",", ":"))}
    return {}


def overflow_only(outcome) -> bool:
    """A fuzz outcome whose every finding is an overflow where eager overflows too (float64 finite there): as
    accurate as eager at the dtype's edge, so the cell is a pass, the overflow noted. Today's fuzz test counts such
    an example and searches on (an outcome `passed` with its overflow findings); a run from before recorded it as a
    mismatch."""
    found = outcome.detail.get("findings") or []
    return outcome.kind in ("passed", "mismatch") and bool(found) and all(is_overflow(f) for f in found)


def is_overflow(row: dict[str, Any]) -> bool:
    return row.get("difference") == "overflow_only"


def disagreement(row: dict[str, Any], outcome) -> list[str]:
    """Lines saying how a fuzz outcome leaves its row's findings: each new finding and how it differs from the
    nearest pin, each pin whose example no longer shows it."""
    pinned = [Finding(**f) for f in row.get("findings") or []]
    lines = []
    for f in outcome.detail.get("findings") or []:
        if f.get("pinned"):
            continue
        seen = Finding(**{k: v for k, v in f.items() if k not in ("pinned", "seen")})
        near = [p for p in pinned if p.output == seen.output] or pinned
        unlike = min((p.unlike(seen) for p in near), key=len, default="")
        lines.append(f"{'new finding' if pinned else 'finding'}: {seen.text()}" + (f" [{unlike}]" if unlike else ""))
    lines += [f"pinned finding no longer shows: {text}" for text in outcome.detail.get("unreproduced") or []]
    if outcome.detail.get("search_cut"):
        lines.append(outcome.detail["search_cut"])
    return lines
