"""What changed between two results files (for example before and after a PyTorch or Triton upgrade).

Changes are grouped, regressions first. Failures are compared by their root cause (compat.evidence.rootcause), so a
wrapper whose first line stays the same while the error underneath changes is a change. Regressions (a cell that
passed and no longer does, or a failure that became a crash or a hang) make `regressed` true.

Two runs on different hosts (a GPU runner and a CPU machine, say) differ by host as well as by version: the diff
says so first, and files a change whose cause names the missing GPU under host effects. Cells skipped on either side
are counted in one line, not listed. The Markdown fits a pull-request comment (GitHub refuses more than 65,536
characters): past the limit each group says how many rows it left out, and the full listing goes to a linked file
(the Markdown is compat.report.upgrade's; this module holds what changed and whether it is a regression).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..matrix.cells import split_cell_id
from . import catalogue
from .outcomes import Outcome, clip
from .rootcause import signature

DRIFT_FACTOR = 2.0  # a passing cell whose worst relative error more than doubled (and is not tiny) is reported
DRIFT_FLOOR = 1e-3  # relative errors below this are rounding noise in every dtype the suite uses
WORSE = ("crashed", "timed_out")
COMMENT_LIMIT = 65_536  # GitHub's limit on a comment's body
# Causes that come from the host, not the version: launching Triton without a GPU, or without a CPU backend.
HOST_CAUSES = re.compile(
    r"0 active drivers|cannot be accessed from Triton \(cpu tensor\?\)|0 compatible backends for "
    r"target|not built with the 'cpu' backend|Found no NVIDIA driver|CUDA driver"
)

# (key, title, is a regression); the order a reviewer reads them in: regressions, then fixed, then changed.
GROUPS = (
    ("broken", "Newly broken: passed before, not now", True),
    ("worse", "Worse failure: failed before, now crashes or hangs", True),
    ("fixed", "Newly fixed: failed before, passes now", False),
    ("drift", "Numerics drift: still within tolerance, error grew", False),
    ("message", "Failure changed: another exception type or root cause", False),
    ("not_run", "Not run in one of the two (skipped)", False),
    ("added", "Added cells", False),
    ("removed", "Removed cells", False),
)
COUNTED = ("not_run", "added", "removed")  # counted in one line each, never listed: nothing to compare


@dataclass
class Change:
    cell: str
    before: str
    after: str
    host: bool = False  # the cause on either side comes from the host (see HOST_CAUSES)
    reason: str = ""  # why, and what to do instead: the after side's expectation row that says (else the before's)
    rewrite: str = ""
    kinds: tuple[str | None, str | None] = (None, None)  # the outcomes' kinds before and after (None: no cell)


def state(outcome: dict[str, Any] | None) -> str:
    """An outcome in a table cell: its kind, its type and, for a failure, its root cause's fragment."""
    if outcome is None:
        return "-"
    o = Outcome.from_dict(outcome)
    text = o.kind
    cause = o.cause
    if cause is not None:
        via = f"{o.error_type} ← " if cause.error_type != o.error_type else ""
        text += f": {via}{clip(cause.text(), 110)}"
    elif o.kind != "passed" and (o.error_type or o.first_line):
        text += f": {o.error_type or ''} {clip(o.first_line or '', 100)}".rstrip()
    return text


def _worst_rel(cell: dict[str, Any] | None) -> float:
    if cell is None:
        return 0.0
    return max((n.get("max_rel_err", 0.0) for n in cell["outcome"].get("numerics") or []), default=0.0)


def classify(old: dict[str, Any] | None, new: dict[str, Any] | None) -> str | None:
    if old is None:
        return "added"
    if new is None:
        return "removed"
    a, b = old["outcome"]["kind"], new["outcome"]["kind"]
    if "skipped" in (a, b):
        return None if a == b else "not_run"
    if a == "passed" and b != "passed":
        return "broken"
    if a != "passed" and b == "passed":
        return "fixed"
    if a == b == "passed":
        before, after = _worst_rel(old), _worst_rel(new)
        return "drift" if after > DRIFT_FLOOR and after > DRIFT_FACTOR * before else None
    if b in WORSE and a not in WORSE:
        return "worse"
    if signature(old["outcome"]) != signature(new["outcome"]):
        return "message"
    return None


def host_of(doc: dict[str, Any]) -> str:
    e = doc["environment"]
    return ", ".join(sorted({g["name"] for g in e["gpus"]})) or "no GPU"


def _host_caused(*outcomes: dict[str, Any] | None) -> bool:
    return any(o and HOST_CAUSES.search(Outcome.from_dict(o).searchable) for o in outcomes)


def compare(old_doc: dict[str, Any], new_doc: dict[str, Any]) -> dict[str, list[Change]]:
    old = {c["id"]: c for c in old_doc["cells"]}
    new = {c["id"]: c for c in new_doc["cells"]}
    cross_host = host_of(old_doc) != host_of(new_doc)
    same_versions = all(old_doc["environment"][k] == new_doc["environment"][k] for k in ("torch", "triton"))
    groups: dict[str, list[Change]] = {key: [] for key, _, _ in GROUPS}
    for cell_id in sorted(set(old) | set(new)):
        a, b = old.get(cell_id), new.get(cell_id)
        key = classify(a, b)
        if key:
            oa, ob = (c["outcome"] if c else None for c in (a, b))
            before, after = state(oa), state(ob)
            if key == "drift":
                before += f" (max rel err {_worst_rel(a):.3g})"
                after += f" (max rel err {_worst_rel(b):.3g})"
            row = next((c["expected"] for c in (b, a) if c and (c.get("expected") or {}).get("reason")), None) or {}
            reason, rewrite = str(row.get("reason") or ""), str(row.get("rewrite") or "")
            if not reason and key != "drift":  # a drift passes on both sides: its error grew, the columns say
                reason, rewrite = _catalogued(cell_id, oa if key == "fixed" else ob, key == "fixed")
            groups[key].append(
                Change(
                    cell_id,
                    before,
                    after,
                    host=cross_host and (same_versions or _host_caused(oa, ob)),
                    reason=reason,
                    rewrite=rewrite,
                    kinds=(oa and oa["kind"], ob and ob["kind"]),
                )
            )
    return groups


def _catalogued(cell_id: str, failing: dict[str, Any] | None, fixed: bool) -> tuple[str, str]:
    """Why a changed cell failed, where no expectation row of either run says (a version without rows): the
    catalogue's entry for the failing side's outcome (the before side of a fix), else that none explains it."""
    outcome = Outcome.from_dict(failing) if failing else None
    known = catalogue.explain(outcome, split_cell_id(cell_id, "a diff")) if outcome else None
    if known is None:
        return (
            "it failed before; no catalogue entry explains that failure"
            if fixed
            else "no catalogue entry explains it: a failure not seen before"
        ), ""
    said = f"`{known.key}`: {known.reason}" if known.key else known.reason
    return (f"it failed before, as {said}" if fixed else said), ("" if fixed else known.rewrite or "")


def regressed(groups: dict[str, list[Change]], host_effects: bool = True) -> bool:
    """Any regression; with `host_effects=False`, only those a version caused (a cross-host diff's other ones
    come from the machine)."""
    return any(c for key, _, bad in GROUPS if bad for c in groups[key] if host_effects or not c.host)
