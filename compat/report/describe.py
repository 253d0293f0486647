"""The declarations as a reader looks them up: `docs/AXES.md` (every kernel, style, stage, device and catalogue entry:
what it is, where it applies and why not elsewhere), generated from the registries as ExportDB generates its pages
from its cases; and one cell described (`python -m compat describe CELL_ID`): what it does, the expectation row it
meets, the catalogue entry that explains it, its latest evidence, and the command that reruns it.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import Any

from ..evidence.catalogue import KNOWN, Known, by_key
from ..evidence.expectations import Expectations, Run
from ..evidence.gate import unmeasurable
from ..evidence.outcomes import Outcome, clip
from ..matrix.cells import DEVICES, Cell, matrix, why_not_applicable
from ..matrix.contract import Entry
from ..matrix.kernels import KERNELS
from ..matrix.stages import STAGES, Stage
from ..matrix.styles import FAMILIES, STYLES

AXES_DOC = "AXES.md"
COMMAND = "python -m compat describe"


def _first_sentence(text: str) -> str:
    head, dot, _ = text.partition(". ")
    return head + (dot.strip() or "")


def _grouped(reasons: Iterable[tuple[str, str]]) -> str:
    """'a, b (why); c (why else)': names grouped by their reason, in first-seen order."""
    groups: dict[str, list[str]] = {}
    for name, why in reasons:
        groups.setdefault(why, []).append(f"`{name}`")
    return "; ".join(f"{', '.join(names)} ({why})" for why, names in groups.items())


def _stage_reach(kernel: str) -> list[tuple[str, str]]:
    """The stages no cell of `kernel` reaches, each with why (the distinct reasons of its cells in the styles that
    apply to it)."""
    entry = KERNELS[kernel]
    styles = [name for name, style in STYLES.items() if style.applies_to(entry)]
    devices = [d for d in DEVICES if entry.devices is None or d in entry.devices]
    out = []
    for stage in STAGES:
        reasons: dict[str, None] = {}
        for style, dtype, device in itertools.product(styles, entry.dtypes, devices):
            if (allowed := DEVICES[device].dtypes) and dtype not in allowed:
                continue  # the device's own limit, the same at every stage
            why = why_not_applicable(Cell(kernel, style, stage, dtype, device))
            if why is None:
                break
            reasons[why] = None
        else:
            out.append((stage, "; ".join(reasons) or "no style applies to it"))
    return out


def _kernel(name: str, kernel: Entry) -> list[str]:
    styles = [s for s in STYLES.values() if s.applies_to(kernel)]
    lines = [
        f"### `{name}`",
        "",
        kernel.doc,
        "",
        f"- A {kernel.what} declared in `{kernel.module}`; dtypes {', '.join(kernel.dtypes)}; features: "
        f"{', '.join(sorted(kernel.features())) or 'none'}.",
        f"- Styles: {', '.join(f'`{s.name}`' for s in styles) or 'none'}.",
    ]
    missing = [(s.name, s.why_not(kernel) or "") for s in STYLES.values() if not s.applies_to(kernel)]
    if missing:
        lines.append(f"- Not: {_grouped(missing)}.")
    unreached = _stage_reach(name)
    if unreached:
        lines.append(f"- Stages it never reaches: {_grouped(unreached)}.")
    return lines + [""]


def _stage_facts(stage: Stage) -> str:
    facts = [stage.family if stage.probe else f"{stage.family}, {stage.export_mode} export"]
    facts += [f"check `{stage.check}`"] if stage.check else []
    facts += (
        [f"`torch.compile(fullgraph=True, {', '.join(f'{k}={v!r}' for k, v in stage.compiler.items())})`"]
        if (stage.compiler)
        else []
    )
    facts += [f"{', '.join(stage.dtypes)} only"] if stage.dtypes else []
    facts += [f"{', '.join(stage.devices)} only"] if stage.devices else []
    facts += [f"kernels with {' and '.join(sorted(stage.needs))} only"] if stage.needs else []
    facts += ["custom-op styles only"] if stage.custom_op_only else []
    facts += ["trains"] if stage.trains else []
    facts += ["timed on CUDA"] if stage.timed else []
    facts += ["fuzzed" if stage.fuzzed else f"not fuzzed: {stage.not_fuzzed}"]
    return f"{'; '.join(facts)}; {stage.timeout_s:.0f} s budget"


def _known(index: int, entry: Known) -> str:
    where = [
        f"{axis} {', '.join(values)}"
        for axis, values in (
            ("kernels", entry.kernels),
            ("styles", entry.styles),
            ("stages", entry.stages and tuple(f"{s}*" for s in entry.stages)),
            ("dtypes", entry.dtypes),
            ("devices", entry.devices),
        )
        if values
    ]
    observed = f"`{entry.error}` matching `{entry.match}`" if entry.kind == "failed" else entry.kind
    if entry.kind == "mismatch" and entry.match:
        observed += f" where `{entry.match}`"
    name = f"`{entry.key}`" if entry.key else f"#{index}"
    return (
        f"- **{name}** ({entry.section}): {observed}; {'; '.join(where) or 'any cell'}. "
        f"{entry.reason[:1].upper()}{entry.reason[1:]}"
        + (f". Instead: {entry.rewrite}" if entry.rewrite else "")
        + (f". Source: {entry.source}" if entry.source else "")
        + "."
    )


def axes_markdown(kernels: Iterable[str]) -> str:
    """docs/AXES.md for the kernel axis `kernels` (a repository's: its own ops, or the suite's kernels)."""
    kernels = list(kernels)
    cells = matrix({"kernel": kernels})
    by_device = {d: sum(c.device == d for c in cells) for d in DEVICES}
    out = [
        "# The axes: every kernel, style, stage, device and catalogue entry",
        "",
        f"Generated by `{COMMAND}` from the registries (`compat/matrix`, `compat/evidence/catalogue.py`); a test holds "
        "it fresh, so edit the declarations, not this page. "
        f"`{COMMAND} CELL_ID` describes one cell: its expectation, catalogue entry, latest evidence and how to rerun it.",
        "",
        f"The matrix: {len(cells)} cells ({', '.join(f'{n} on {d}' for d, n in by_device.items())}) of "
        f"{len(kernels)} kernels, {len(STYLES)} styles and {len(STAGES)} stages; {len(KNOWN)} catalogue entries.",
        "",
        "## Kernels",
        "",
    ]
    for name in kernels:
        out += _kernel(name, KERNELS[name])
    out += ["## Styles, by family", ""]
    for family, about in FAMILIES.items():
        out += [f"### {family}", "", f"{about[0].upper()}{about[1:]}.", ""]
        for style in (s for s in STYLES.values() if s.family == family):
            applies = [k for k in kernels if style.applies_to(KERNELS[k])]
            canonical = f"a variant of `{style.variant_of}`" if style.variant_of else "canonical"
            if style.canonical is None:
                canonical = "your op, unchanged"
            out.append(
                f"- **`{style.name}`** ({canonical}): {style.doc} Applies to "
                + (", ".join(f"`{k}`" for k in applies) or "none of these kernels")
                + "."
            )
        out.append("")
    out += ["## Stages", ""]
    out += [f"- **`{s.name}`** ({_stage_facts(s)}): {s.doc}" for s in STAGES.values()]
    out += ["", "## Devices", ""]
    out += [
        f"- **`{d.name}`**: {d.doc}" + (f" Dtypes: {', '.join(d.dtypes)} only." if d.dtypes else "")
        for d in DEVICES.values()
    ]
    out += ["", "## Catalogue of known failures", "", "The first entry that explains an observation wins.", ""]
    out += [_known(i, k) for i, k in enumerate(KNOWN, 1)]
    return "\n".join(out) + "\n"


def reproduce(cell: Cell) -> str:
    return (
        f"python -m compat run --compat-kernels={cell.kernel} --compat-styles={cell.style} "
        f"--compat-stages={cell.stage} --compat-dtypes={cell.dtype} --compat-devices={cell.device}"
    )


def _newest(cell_id: str, docs: list[tuple[str, dict[str, Any]]]):
    """The newest record of the cell among the results files, by the date each ran: (path, results, record)."""
    found = [
        (doc["environment"].get("date", ""), path, doc, record)
        for path, doc in docs
        for record in doc["cells"]
        if record["id"] == cell_id and record["outcome"]["kind"] != "skipped"
    ]
    return max(found, key=lambda t: t[0])[1:] if found else None


def _evidence(path: str, doc: dict[str, Any], record: dict[str, Any]) -> list[str]:
    env, outcome = doc["environment"], record["outcome"]
    gpu = (env.get("gpus") or [{}])[0].get("name", "no GPU")
    said = outcome["kind"] + (
        f": {outcome.get('error_type')}: {clip(outcome.get('message') or '', 160)}" if outcome.get("error_type") else ""
    )
    limit = unmeasurable(Outcome.from_dict(outcome), {}, record["id"]) if outcome["kind"] != "passed" else None
    lines = [
        f"evidence: not measurable on this device ({said})" if limit else f"evidence: {said}",
        f"  in {path} (torch {env['torch']}, triton {env['triton']}, {gpu}, {env.get('date', '')[:10]})",
    ]
    if limit:  # the device's failure, as the grid, the summary and the pages say: no verdict on the op there
        lines.append(f"  not measurable here: {limit}")
    fuzz = next((f for f in doc.get("fuzz") or [] if f["id"] == record["id"]), None)
    if fuzz is not None:
        lines.append(f"  its fuzz test there: {fuzz['outcome']['kind']}")
    return lines


def _expectation(cell_id: str, expectations: Expectations, run: Run, label: str) -> list[str]:
    row = expectations.lookup(cell_id, run)
    if row is None:
        return [f"expectation {label}: none for torch {run.torch}, triton {run.triton}, host {run.host}"]
    full = row.full
    lines = [
        f"expectation {label}: {row.describe()}",
        f"  {row.where} of {expectations.path}: torch {full['torch']}, triton {full.get('triton') or 'any'}, "
        f"host {full.get('host', 'any')}",
    ]
    entry = by_key(row.row["known"]) if row.row.get("known") else None
    if entry is not None and entry.unmeasurable:  # the device's failure: no verdict on the op here
        lines[0] = f"expectation {label}: not measurable on this device ({row.describe()})"
        lines.append(f"  not measurable here: {entry.unmeasurable}")
    if entry is not None:
        lines.append(f"  catalogue: {entry.key}: {entry.reason}")
    elif full.get("reason"):
        lines.append(f"  reason: {full['reason']}")
    if full.get("rewrite"):
        lines.append(f"  instead: {full['rewrite']}")
    return lines


def cell_lines(
    cell: Cell, expectations: Expectations | None, here: Run | None, docs: list[tuple[str, dict[str, Any]]]
) -> list[str]:
    """What one cell does and what is known of it, for a reader at a terminal: the row of `expectations` it meets
    on this machine (`here`) and on the run of its newest record among `docs` (path, results), and that record."""
    kernel, style, stage = KERNELS[cell.kernel], STYLES[cell.style], STAGES[cell.stage]
    lines = [
        cell.id,
        f"  kernel  {cell.kernel}: {_first_sentence(kernel.doc)}",
        f"  style   {cell.style}"
        + (f" (a variant of {style.variant_of})" if style.variant_of else "")
        + f": {_first_sentence(style.doc)}",
        f"  stage   {cell.stage} ({_stage_facts(stage)}): {_first_sentence(stage.doc)}",
        f"  device  {cell.device}, dtype {cell.dtype}: {_first_sentence(DEVICES[cell.device].doc)}",
    ]
    why = why_not_applicable(cell)
    if why or here is None:
        return [*lines, f"not in the matrix: {why}"]
    newest = _newest(cell.id, docs)
    if expectations is not None:
        lines += _expectation(cell.id, expectations, here, "on this machine")
        there = Run.from_env(newest[1]["environment"]) if newest else here
        if there != here:
            lines += _expectation(cell.id, expectations, there, "where it last ran")
    lines += _evidence(*newest) if newest else ["evidence: none of the results files read holds a run of this cell"]
    lines.append(f"reproduce: {reproduce(cell)}")
    return lines
