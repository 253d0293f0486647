"""One verdict per cell for the documentation: the matrix's outcome on the model, joined with what the fuzz tests
found when the cell's artifact ran on generated inputs.

A cell that passes on the model but gives wrong values on some generated inputs is not a pass, and it is not an
exception either: it has a verdict of its own. A cell that refuses some layouts with a clear error stays a pass,
with the refusal noted. Everything a reader needs to act on a verdict is its `evidence`, in the order shown.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any

from ..matrix.cells import package_cell_of, split_cell_id
from ..matrix.stages import STAGES
from .expectations import measurements
from .findings import overflow_only
from .gate import unmeasurable
from .outcomes import Outcome, clip

# The verdicts, as a reader ranks them, best first (their marks and words: compat.report.legend).
KINDS = ("passes", "wrong_some", "errors_some", "wrong", "fails", "crashed", "timed_out", "unmeasurable", "skipped")
ON_THE_MODEL = {
    "passed": "passes",
    "failed": "fails",
    "mismatch": "wrong",
    "crashed": "crashed",
    "timed_out": "timed_out",
    "skipped": "skipped",
}
PACKAGE_FOUND = {
    "wrong_some": "gives wrong values on some generated inputs",
    "errors_some": "raises on some generated inputs",
}
ON_SOME_INPUTS = {
    "mismatch": "wrong_some",
    "failed": "errors_some",
    "crashed": "errors_some",
    "timed_out": "errors_some",
}


@dataclass(frozen=True)
class Verdict:
    id: str
    kind: str  # a key of VERDICTS
    unexpected: bool  # the cell or its fuzz test differs from its expectation: the gate failed there
    evidence: tuple[tuple[str, str], ...]  # (what, text): observed, why, instead, provenance; what cells share
    facts: tuple[tuple[str, str], ...] = ()  # this cell's own: its fuzz tally, falsifying example, reproducer
    refuses: tuple[str, ...] = ()  # layouts a passing cell refused clearly
    unfuzzed: bool = False  # a pass on the model's inputs only: its stage is fuzzed, but not in these results
    rewrite: str | None = None
    overflows: bool = False  # a pass whose fuzz test found only overflows where eager overflows too
    fuzzed: bool = False  # a fuzz test of its own ran, not skipped (a C++ cell's package is fuzzed from Python)
    bounded: int = 0  # examples its fuzz test left unchecked, past the op's compile bound (fuzz_compiles)

    @property
    def works(self) -> bool:
        return self.kind == "passes"

    @property
    def note(self) -> tuple:
        """What two cells share when one note explains both (the cell id aside)."""
        return (
            self.kind,
            self.unexpected,
            self.refuses,
            self.unfuzzed,
            self.overflows,
            self.fuzzed,
            self.bounded,
            self.evidence,
        )


def _provenance(row: dict[str, Any] | None) -> str:
    if not row:
        return "no expectation recorded"
    prov = row.get("provenance") or {}
    if "documented" in prov:
        return f"documented: {prov['documented']}"

    return "measured: " + "; ".join(
        f"torch {m['torch']}, triton {m['triton']}, {m['device']}, {m['date']}" for m in measurements(prov)
    )


def _observed(outcome: Outcome) -> str:
    if outcome.kind == "mismatch":
        return outcome.summary()
    text = " ".join(p for p in (outcome.error_type, outcome.first_line) if p) or outcome.kind
    cause = outcome.cause
    if cause and cause.fragment not in text:
        text += f" (root cause: {cause.text()})"
    return text


def _worst_rel(outcome: Outcome) -> float | None:
    errs = [n["max_rel_err"] for n in outcome.numerics or [] if "max_rel_err" in n]
    return max(errs) if errs else None


NOT_CHECKED = {  # a fuzz tally's count of examples it could not check: why
    "past_compile_bound": "past the op's compile bound (fuzz_compiles)",
    "after_context_lost": "after an earlier example's error left the GPU's context unusable",
}


def _fuzz_evidence(record: dict[str, Any]) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """What a fuzz test says: (evidence cells may share, this cell's own facts)."""
    outcome = Outcome.from_dict(record["outcome"])
    tally = outcome.detail.get("tally") or {}
    shared: list[tuple[str, str]] = []
    unchecked = [f"{tally[key]} more not checked, {why}" for key, why in NOT_CHECKED.items() if tally.get(key)]
    facts = [
        (
            "fuzz",
            f"{tally.get('examples', 0)} generated examples ({tally.get('informative', 0)} informative); max abs err "
            f"{tally.get('max_abs_err', 0):.3g}, max rel err {tally.get('max_rel_err', 0):.3g}"
            + "".join(f"; {u}" for u in unchecked),
        )
    ]
    if tally.get("refused"):
        shared.append(
            (
                "refuses",
                "; ".join(f"{layout}: {(tally.get('refusals') or {}).get(layout, '')}" for layout in tally["refused"]),
            )
        )
    if outcome.kind != "passed":
        row = record.get("expected") or {}
        shared.append(("why", row.get("reason") or "no expectation recorded"))
        if row.get("rewrite"):
            shared.append(("instead", row["rewrite"]))
        shared.append(("fuzz provenance", _provenance(row or None)))
        facts = [("on a generated input", clip(_observed(outcome), 400))]
        example, reproducer = outcome.detail.get("example"), outcome.detail.get("reproducer")
        if example:
            facts.append(("falsifying example", _json(example)))
        if reproducer:
            facts.append(("reproducer", reproducer))
        facts += [("not checked", u) for u in unchecked]
    return shared, facts


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":")) if not isinstance(value, str) else value


def of_cell(cell: dict[str, Any], fuzz: dict[str, Any] | None = None, fuzzed_here: bool = False) -> Verdict:
    """The verdict of one cell record; `fuzz` is its fuzz test's record, if one ran. `fuzzed_here`: this results
    file holds fuzz tests, so a passing cell without one says why it has none."""
    outcome, row = Outcome.from_dict(cell["outcome"]), cell.get("expected") or {}
    kind = ON_THE_MODEL[outcome.kind]
    evidence: list[tuple[str, str]] = []
    facts: list[tuple[str, str]] = []
    rewrite, refuses, unfuzzed, overflows, bounded = row.get("rewrite"), (), False, False, 0
    if outcome.kind == "passed":
        worst = _worst_rel(outcome)
        facts.append(("on the model", "eager's values" + (f" (max rel err {worst:.3g})" if worst else "")))
        if fuzz is not None:
            fuzz_outcome = Outcome.from_dict(fuzz["outcome"])
            overflows = overflow_only(fuzz_outcome)
            kind = kind if overflows else ON_SOME_INPUTS.get(fuzz_outcome.kind, kind)
            shared, own = _fuzz_evidence(fuzz)
            evidence += shared
            facts += own
            tally = fuzz_outcome.detail.get("tally") or {}
            refuses, bounded = tuple(tally.get("refused") or ()), tally.get("past_compile_bound", 0)
            if kind != "passes":
                rewrite = (fuzz.get("expected") or {}).get("rewrite")
        elif fuzzed_here:
            stage = STAGES.get(cell["axes"]["stage"])
            unfuzzed = bool(stage and stage.fuzzed)
            facts.append(
                (
                    "fuzz",
                    "not fuzzed in these results: passes on the model's inputs only"
                    if unfuzzed
                    else f"not fuzzed: {stage.not_fuzzed}"
                    if stage
                    else "not fuzzed",
                )
            )
    elif outcome.kind != "skipped":
        evidence.append(("observed", clip(_observed(outcome), 600)))
        evidence.append(("why", row.get("reason") or "no expectation recorded"))
        limit = unmeasurable(outcome, row, cell["id"])
        if limit:  # the device's failure, not the op's: no verdict on the op here
            kind = "unmeasurable"
            evidence.append(("not measurable here", limit))
        elif rewrite:
            evidence.append(("instead", rewrite))
    else:
        evidence.append(("not run", outcome.first_line or "skipped"))
    if outcome.kind not in ("skipped", "passed"):
        evidence.append(("provenance", _provenance(row or None)))
    detail = outcome.detail or {}
    if detail.get("environment_failure"):
        evidence.append(("environment failure", detail["environment_failure"]))
    if detail.get("remedy"):
        evidence.append(("remedy", detail["remedy"]))
    unexpected = bool(cell.get("verdict")) or bool(fuzz and fuzz.get("verdict"))
    if unexpected:
        evidence.append(
            (
                "gate",
                "differs from its expectation: "
                + "; ".join(v for v in (cell.get("verdict"), fuzz and fuzz.get("verdict")) if v),
            )
        )
    shown = (tuple(evidence), tuple(facts), refuses, unfuzzed, rewrite, overflows)
    ran = fuzz is not None and fuzz["outcome"]["kind"] != "skipped"
    return Verdict(cell["id"], kind, unexpected, *shown, fuzzed=ran, bounded=bounded)


def of_doc(doc: dict[str, Any]) -> dict[str, Verdict]:
    """Every cell's verdict, by cell id."""
    fuzz = {f["id"]: f for f in doc.get("fuzz") or []}
    verdicts = {c["id"]: of_cell(c, fuzz.get(c["id"]), bool(fuzz)) for c in doc["cells"]}
    for cell_id, v in verdicts.items():
        package = verdicts.get(package_cell_of(cell_id) or "")
        if v.works and package is not None and (package.kind in ON_SOME_INPUTS.values() or package.unfuzzed):
            verdicts[cell_id] = _inherited(v, package)
    return verdicts


def _inherited(verdict: Verdict, package: Verdict) -> Verdict:
    """A passing C++ cell runs a package the fuzz tests found wrong on some inputs, or did not fuzz here: the
    package's verdict is its too, since the same package gives the same values from C++."""
    stage = split_cell_id(package.id, "a verdict").stage
    if package.works:  # passes, not fuzzed in these results: neither is the C++ cell
        return dataclasses.replace(
            verdict,
            unfuzzed=True,
            facts=verdict.facts
            + (("fuzz", f"runs the {stage} package, whose fuzz test did not run in these results"),),
        )
    return dataclasses.replace(
        verdict,
        kind=package.kind,
        rewrite=package.rewrite,
        evidence=package.evidence,
        facts=verdict.facts + (("fuzz", f"runs the {stage} package, which {PACKAGE_FOUND[package.kind]}"),),
    )
