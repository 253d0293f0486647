"""The upgrade gate's account of a run compared with a baseline (compat.evidence.baseline): the terminal's lines,
and the Markdown of the pull-request comment the run writes beside its results (`NAME.changes.md`)."""

from __future__ import annotations

from typing import Any

from ..evidence.baseline import SEVERITY, changed_by_kind, compared
from ..evidence.diff import COMMENT_LIMIT, GROUPS, state
from ..evidence.gate import TITLES
from ..evidence.outcomes import Outcome


def summary_lines(doc: dict[str, Any], limit: int = 40) -> list[str]:
    """The terminal's account of a baseline run: what it was compared with, how many matched, what changed."""
    name, records = compared(doc)
    if not name or not records:
        return []
    groups = changed_by_kind(doc)
    changed = sum(map(len, groups.values()))
    lines = [
        f"baseline: {name}: {len(records) - changed} cells without rows of their own matched it, "
        f"{changed} changed"
        + (
            ""
            if not changed
            else ": " + ", ".join(f"{len(v)} {TITLES[k].split(':')[0].lower()}" for k, v in groups.items() if v)
        )
    ]
    shown = 0
    for key in SEVERITY:
        for record in groups[key]:
            if shown == limit:
                return lines + [f"  ... {changed - shown} more in the changes Markdown"]
            fuzz = "fuzz " if record["section"] == "fuzz" else ""
            lines.append(
                f"  {TITLES[key].split(':')[0].lower()}: {fuzz}{record['id']}: "
                f"{Outcome.from_dict(record['outcome']).summary()[:140]}"
            )
            shown += 1
    return lines


def markdown(doc: dict[str, Any]) -> str | None:
    """The changes against the baseline, by severity, within a pull-request comment's limit; None without one."""
    name, records = compared(doc)
    if not name or not records:
        return None
    env = doc["environment"]
    groups = changed_by_kind(doc)
    changed = sum(map(len, groups.values()))
    out = [
        f"## Upgrade gate: torch {env['torch']}, triton {env['triton']}",
        "",
        f"Baseline: {name}.",
        "",
        f"{len(records) - changed} cells without rows for this version matched the baseline; **{changed} changed**"
        f"{' (the gate fails on these)' if changed else ''}.",
        "",
    ]
    size = sum(len(line) + 1 for line in out)
    for key, title, bad in GROUPS:
        if not groups[key]:
            continue
        block = [
            "",
            f"### {'🔴 ' if bad else ''}{title} ({len(groups[key])})",
            "",
            "| cell | baseline | now |",
            "|---|---|---|",
        ]
        for i, record in enumerate(groups[key]):
            ref = record["against_baseline"]["reference"].replace("|", "/")
            row = (
                f"| `{record['id']}`{' (fuzz)' if record['section'] == 'fuzz' else ''} | {ref[:160]} | "
                f"{state(record['outcome']).replace('|', '/')} |"
            )
            if size + sum(len(b) + 1 for b in block) + len(row) > COMMENT_LIMIT - 300:
                block.append(f"| … {len(groups[key]) - i} more | see the results file | |")
                break
            block.append(row)
        size += sum(len(b) + 1 for b in block)
        out += block
    return "\n".join(out).rstrip() + "\n"
