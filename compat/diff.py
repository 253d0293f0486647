"""What changed between two results files (for example before and after a PyTorch or Triton upgrade).

Changes are grouped and ordered by severity. Failures are compared by their root cause (compat.rootcause), so a
wrapper whose first line stays the same while the error underneath changes is a change. Regressions (a cell that
passed and no longer does, or a failure that became a crash or a hang) make `regressed` true.

Two runs on different hosts (a GPU runner and a CPU machine, say) differ by host as well as by version: the diff
says so first, and files a change whose cause names the missing GPU under host effects. Cells skipped on either side
are counted in one line, not listed. The Markdown fits a pull-request comment (GitHub refuses more than 65,536
characters): past the limit each group says how many rows it left out, and the full listing goes to a linked file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from . import timings
from .outcomes import Outcome
from .report import ICON
from .rootcause import signature

DRIFT_FACTOR = 2.0  # a passing cell whose worst relative error more than doubled (and is not tiny) is reported
DRIFT_FLOOR = 1e-3  # relative errors below this are rounding noise in every dtype the suite uses
WORSE = ("crashed", "timed_out")
COMMENT_LIMIT = 65_536  # GitHub's limit on a comment's body
# Causes that come from the host, not the version: launching Triton without a GPU, or without a CPU backend.
HOST_CAUSES = re.compile(r"0 active drivers|cannot be accessed from Triton \(cpu tensor\?\)|0 compatible backends for "
                         r"target|not built with the 'cpu' backend|Found no NVIDIA driver|CUDA driver")

# (key, title, is a regression); the order is the order of severity.
GROUPS = (
    ("broken", "Newly broken: passed before, not now", True),
    ("worse", "Worse failure: failed before, now crashes or hangs", True),
    ("drift", "Numerics drift: still within tolerance, error grew", False),
    ("message", "Failure changed: another exception type or root cause", False),
    ("fixed", "Newly fixed: failed before, passes now", False),
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


def state(outcome: dict[str, Any] | None) -> str:
    """An outcome in a table cell: its kind, its type and, for a failure, its root cause's fragment."""
    if outcome is None:
        return "-"
    o = Outcome.from_dict(outcome)
    text = f"{ICON[o.kind]} {o.kind}"
    cause = o.cause
    if cause is not None:
        via = f"{o.error_type} ← " if cause.error_type != o.error_type else ""
        text += f": {via}{cause.text()[:110]}"
    elif o.kind != "passed" and (o.error_type or o.first_line):
        text += f": {o.error_type or ''} {(o.first_line or '')[:100]}".rstrip()
    return text


def _worst_rel(cell: dict[str, Any]) -> float:
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
            groups[key].append(Change(cell_id, before, after,
                                      host=cross_host and (same_versions or _host_caused(oa, ob))))
    return groups


def regressed(groups: dict[str, list[Change]], host_effects: bool = True) -> bool:
    """Any regression; with `host_effects=False`, only those a version caused (a cross-host diff's other ones
    come from the machine)."""
    return any(c for key, _, bad in GROUPS if bad for c in groups[key] if host_effects or not c.host)


def _env(doc: dict[str, Any], name: str) -> str:
    e = doc["environment"]
    return f"`{name}`: torch {e['torch']}, triton {e['triton']}, {host_of(doc)}"


@dataclass
class _Budget:
    """What is left of a comment's characters, and the rows it had to leave out."""
    chars: int
    left_out: int = 0
    lines: list[str] = field(default_factory=list)

    def add(self, line: str) -> bool:
        size = len(line.encode()) + 1  # bytes, not characters: a limit counted either way holds
        if size > self.chars:
            return False
        self.lines.append(line)
        self.chars -= size
        return True


def _section(out: _Budget, changes: dict[str, list[Change]], level: str, full_link: str | None) -> None:
    for key, title, bad in GROUPS:
        rows = changes[key]
        if not rows or key in COUNTED:
            continue
        out.add("")
        out.add(f"{level} {'🔴 ' if bad else ''}{title} ({len(rows)})")
        out.add("")
        out.add("| cell | before | after |")
        out.add("|---|---|---|")
        reserve = 200  # room for this group's "more" line and the next group's heading
        for i, c in enumerate(rows):
            row = f"| `{c.cell}` | {c.before.replace('|', '/')} | {c.after.replace('|', '/')} |"
            if out.chars - len(row.encode()) < reserve or not out.add(row):
                more = len(rows) - i
                out.left_out += more
                out.add(f"| … {more} more | {'in [the full diff](' + full_link + ')' if full_link else ''} | |")
                break


def markdown(old_doc: dict[str, Any], new_doc: dict[str, Any], old_name: str, new_name: str,
             limit: int | None = None, full_link: str | None = None) -> tuple[str, int]:
    """The diff as Markdown, and how many rows it left out to stay within `limit` characters (None: no limit)."""
    groups = compare(old_doc, new_doc)
    cross_host = host_of(old_doc) != host_of(new_doc)
    same_versions = all(old_doc["environment"][k] == new_doc["environment"][k] for k in ("torch", "triton"))
    verdict = ("**Regressions found.**" if regressed(groups, host_effects=False) else
               "No regressions from the version; the host's are listed under host effects." if regressed(groups)
               else "No regressions.")
    counts = ", ".join(f"{len(groups[k])} {title.split(':')[0].lower()}" for k, title, _ in GROUPS
                       if groups[k] and k not in COUNTED)
    head = ["## Support matrix diff", ""]
    if cross_host:
        head += [f"> **Two hosts:** {host_of(old_doc)} before, {host_of(new_doc)} after. A change may come from the "
                 f"host rather than the version: changes whose cause names the missing GPU or backend are listed "
                 f"apart, under host effects.", ""]
    head += [f"- before: {_env(old_doc, old_name)}", f"- after: {_env(new_doc, new_name)}", "",
             f"{verdict} {counts or 'Nothing changed.'}"]
    counted = {"not_run": "cells ran on one side only (skipped on the other, for example CUDA cells on a machine "
                          "without a GPU)", "added": "cells only in the after run", "removed": "cells only in the "
                                                                                                "before run"}
    head += [line for k, text in counted.items() if groups[k] for line in ("", f"{len(groups[k])} {text}: not compared.")]
    out = _Budget(limit or 10**12)
    for line in head:
        out.add(line)
    if cross_host and same_versions:  # nothing but the host differs: every change is the host's
        out.add("")
        out.add("### Host effects (same torch and triton on both)")
        _section(out, groups, "####", full_link)
    elif cross_host:
        for title, host in (("Version effects", False), ("Host effects", True)):
            part = {k: [c for c in v if c.host == host] for k, v in groups.items()}
            if any(part[k] for k, _, _ in GROUPS if k not in COUNTED):
                out.add("")
                out.add(f"### {title}")
                _section(out, part, "####", full_link)
    else:
        _section(out, groups, "###", full_link)
    _latency_section(out, old_doc, new_doc)
    return "\n".join(out.lines).rstrip() + "\n", out.left_out


def _latency_section(out: _Budget, old_doc: dict[str, Any], new_doc: dict[str, Any]) -> None:
    """Latency that moved beyond the noise band: reported apart, never a regression (compat.timings)."""
    moved = timings.changes(old_doc, new_doc)
    if not any(timings.of(c) for c in old_doc["cells"]) or not any(timings.of(c) for c in new_doc["cells"]):
        return
    out.add("")
    out.add("### Latency (not a failure)")
    out.add("")
    out.add(f"Passing cells both runs timed on CUDA; {timings.band()}. " + (
        f"{len(moved)} moved:" if moved else "None moved beyond it."))
    for i, c in enumerate(moved):
        if not out.add(f"- `{c.id}` {c.what}: {c.old:,.1f} → {c.new:,.1f} {c.unit} ({c.ratio:.2f}x)"):
            out.left_out += len(moved) - i
            break
