"""What changed between two results files (for example before and after a PyTorch or Triton upgrade).

Changes are grouped and ordered by severity; the Markdown fits a pull-request comment. Regressions (a cell that
passed and no longer does, or a failure that became a crash or a hang) make `regressed` true.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .report import ICON, first_line

DRIFT_FACTOR = 2.0  # a passing cell whose worst relative error more than doubled (and is not tiny) is reported
DRIFT_FLOOR = 1e-3  # relative errors below this are rounding noise in every dtype the suite uses
WORSE = ("crashed", "timed_out")

# (key, title, is a regression); the order is the order of severity.
GROUPS = (
    ("broken", "Newly broken: passed before, not now", True),
    ("worse", "Worse failure: failed before, now crashes or hangs", True),
    ("drift", "Numerics drift: still within tolerance, error grew", False),
    ("message", "Failure changed: another exception type or message", False),
    ("fixed", "Newly fixed: failed before, passes now", False),
    ("not_run", "Not run in one of the two (skipped)", False),
    ("added", "Added cells", False),
    ("removed", "Removed cells", False),
)


@dataclass
class Change:
    cell: str
    before: str
    after: str


def _state(cell: dict[str, Any] | None) -> str:
    if cell is None:
        return "-"
    o, first = cell["outcome"], first_line(cell)
    text = f"{ICON[o['kind']]} {o['kind']}"
    if o["kind"] != "passed" and (o.get("error_type") or first):
        text += f": {o.get('error_type') or ''} {(first or '')[:100]}".rstrip()
    return text


def _worst_rel(cell: dict[str, Any]) -> float:
    return max((n.get("max_rel_err", 0.0) for n in cell["outcome"].get("numerics") or []), default=0.0)


def _signature(cell: dict[str, Any]) -> tuple:
    return cell["outcome"].get("error_type"), first_line(cell)


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
    if a != b or _signature(old) != _signature(new):
        return "message"
    return None


def compare(old_doc: dict[str, Any], new_doc: dict[str, Any]) -> dict[str, list[Change]]:
    old = {c["id"]: c for c in old_doc["cells"]}
    new = {c["id"]: c for c in new_doc["cells"]}
    groups: dict[str, list[Change]] = {key: [] for key, _, _ in GROUPS}
    for cell_id in sorted(set(old) | set(new)):
        key = classify(old.get(cell_id), new.get(cell_id))
        if key:
            before, after = _state(old.get(cell_id)), _state(new.get(cell_id))
            if key == "drift":
                before += f" (max rel err {_worst_rel(old[cell_id]):.3g})"
                after += f" (max rel err {_worst_rel(new[cell_id]):.3g})"
            groups[key].append(Change(cell_id, before, after))
    return groups


def regressed(groups: dict[str, list[Change]]) -> bool:
    return any(groups[key] for key, _, bad in GROUPS if bad)


def _env(doc: dict[str, Any], name: str) -> str:
    e = doc["environment"]
    gpu = e["gpus"][0]["name"] if e["gpus"] else "no GPU"
    return f"`{name}`: torch {e['torch']}, triton {e['triton']}, {gpu}"


def markdown(old_doc: dict[str, Any], new_doc: dict[str, Any], old_name: str, new_name: str) -> str:
    groups = compare(old_doc, new_doc)
    verdict = "**Regressions found.**" if regressed(groups) else "No regressions."
    counts = ", ".join(f"{len(groups[k])} {title.split(':')[0].lower()}" for k, title, _ in GROUPS if groups[k])
    out = ["## Support matrix diff", "", f"- before: {_env(old_doc, old_name)}", f"- after: {_env(new_doc, new_name)}",
           "", f"{verdict} {counts or 'Nothing changed.'}", ""]
    for key, title, bad in GROUPS:
        if not groups[key]:
            continue
        out += [f"### {'🔴 ' if bad else ''}{title} ({len(groups[key])})", "", "| cell | before | after |",
                "|---|---|---|"]
        out += [f"| `{c.cell}` | {c.before.replace('|', '/')} | {c.after.replace('|', '/')} |" for c in groups[key]]
        out.append("")
    return "\n".join(out).rstrip() + "\n"
