"""Which style to use: for the capabilities a reader needs, the styles whose every measured cell works there.

A capability is a set of stages that must work. Save/load, decompositions and AOTI follow the export mode the reader
picked (both modes when both are picked); with no mode picked, a style may reach them through either mode, the same
one for all. "Strided inputs" asks more of the fuzz tests: every fuzzed cell of the needed stages took every
non-contiguous layout and gave eager's values, without refusing one.

A style works at a stage when every cell it ran there (every kernel it applies to, every dtype) has the verdict
`passes` (compat.evidence.verdicts): a cell the fuzz tests proved wrong on some inputs does not work. The page's script
(compat.report.report) evaluates a reader's choice with the same rules from the same data (`table`); the browser test
checks that the two agree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..evidence.verdicts import Verdict
from ..matrix.cells import package_cell_of
from ..matrix.stages import EXPORT_MODES


@dataclass(frozen=True)
class Capability:
    key: str
    label: str
    stages: tuple[str, ...] = ()  # stages that must work, whatever the export mode
    families: tuple[str, ...] = ()  # export-based families that must work in the chosen export mode(s)
    layouts: bool = False  # non-contiguous inputs must work, not be refused (fuzz evidence)


CAPABILITIES = (
    Capability("compile", "torch.compile (eager, aot_eager and inductor backends, fullgraph)",
               stages=("compile_eager", "compile_aot_eager", "compile_inductor")),
    Capability("dynamic", "dynamic shapes under torch.compile (no recompile on a new batch)",
               stages=("compile_dynamic",)),
    Capability("gradients", "gradients under torch.compile", stages=("compile_backward",)),
    Capability("flops", "FLOP counting (FlopCounterMode)", stages=("flop_count",)),
    Capability("opcheck", "torch.library.opcheck passes", stages=("opcheck",)),
    Capability("export_strict", "torch.export, strict=True", stages=("export_strict",)),
    Capability("export_nonstrict", "torch.export, non-strict", stages=("export_nonstrict",)),
    Capability("save_load", "torch.export.save and load", families=("save_load",)),
    Capability("decompose", "run_decompositions of the exported program", families=("decompose",)),
    Capability("aoti", "an AOTInductor package, loaded from Python", families=("aoti",)),
    Capability("aoti_cpp", "an AOTInductor package run from C++, without Python", families=("aoti_cpp",)),
    Capability("strided", "non-contiguous inputs give eager's values (not refused)", layouts=True),
)
BY_KEY = {c.key: c for c in CAPABILITIES}

# Goals the Markdown answers in a table: (question, capabilities).
GOALS = (
    ("inference under torch.compile", ("compile",)),
    ("torch.compile with dynamic shapes and gradients", ("compile", "dynamic", "gradients")),
    ("non-strict export, packaged with AOTInductor", ("export_nonstrict", "aoti")),
    ("non-strict export, AOTInductor and gradients under compile", ("export_nonstrict", "aoti", "gradients")),
    ("export (either mode), save/load and AOTInductor", ("save_load", "aoti")),
    ("non-strict export, save/load, AOTInductor, gradients and FLOP counting",
     ("export_nonstrict", "save_load", "aoti", "gradients", "flops")),
    ("AOTInductor on strided inputs", ("aoti", "strided")),
    ("an AOTInductor package run from C++, without Python", ("aoti_cpp",)),
    ("AOTInductor from C++ with gradients under torch.compile", ("aoti_cpp", "gradients")),
)


@dataclass
class StageRecord:
    """One style at one stage, over every kernel and dtype it ran: how many cells ran and work, and what to do about
    the others."""
    ran: int = 0
    works: int = 0
    contiguous: int = 0  # cells that work, or whose fuzz tests failed only on a non-contiguous input
    unfuzzed: int = 0  # cells that work on the model's inputs in a fuzzed stage whose fuzz test has not run
    fuzzed: int = 0  # cells with fuzz evidence
    layouts_ok: int = 0  # of those, cells that work and took every layout without refusing one
    rewrites: dict[str, int] = field(default_factory=dict)  # rewrite -> cells that name it
    failing: set = field(default_factory=set)  # kernels with a cell that does not work
    # Of those, kernels with a cell that fails with an error (or on a contiguous generated input), and kernels with
    # one that gives wrong values without an error: the others are wrong on non-contiguous inputs only.
    errors: set = field(default_factory=set)
    silent: set = field(default_factory=set)

    def to_dict(self) -> dict[str, Any]:
        rewrite = max(self.rewrites, key=self.rewrites.get) if self.rewrites else ""
        return {"ran": self.ran, "works": self.works, "contiguous": self.contiguous, "unfuzzed": self.unfuzzed,
                "fuzzed": self.fuzzed,
                "layouts_ok": self.layouts_ok, "rewrite": rewrite, "failing": sorted(self.failing),
                "silent": sorted(self.silent), "errors": sorted(self.errors)}


def device_of(doc: dict[str, Any]) -> str | None:
    """The device the recommendation speaks for: CUDA where its cells ran, else the device with the most cells run."""
    ran = [c["axes"]["device"] for c in doc["cells"] if c["outcome"]["kind"] != "skipped"]
    if not ran:
        return None
    return "cuda" if "cuda" in ran else max(set(ran), key=ran.count)


def _views_only(verdict: Verdict, fuzz: dict[str, Any] | None) -> bool:
    """The fuzz tests failed the cell only on a non-contiguous input (its shrunk falsifying example is a view)."""
    if fuzz is None or verdict.kind not in ("wrong_some", "errors_some"):
        return False
    example = fuzz["outcome"]["detail"].get("example") or {}
    return example.get("layout", "contiguous") != "contiguous"


def table(doc: dict[str, Any], verdicts: dict[str, Verdict]) -> dict[str, Any]:
    """The data a recommendation is made from: per style, per stage, a StageRecord."""
    device = device_of(doc)
    fuzz = {f["id"]: f for f in doc.get("fuzz") or []}
    styles: dict[str, dict[str, StageRecord]] = {}
    kernels: dict[str, set] = {}
    for c in doc["cells"]:
        a, v = c["axes"], verdicts[c["id"]]
        if a["device"] != device or v.kind == "skipped":
            continue
        rec = styles.setdefault(a["style"], {}).setdefault(a["stage"], StageRecord())
        kernels.setdefault(a["style"], set()).add(a["kernel"])
        rec.ran += 1
        rec.works += v.works
        rec.unfuzzed += v.unfuzzed
        fuzzed_as = package_cell_of(c["id"]) or c["id"]  # a C++ cell: its package's fuzz tests
        rec.contiguous += v.works or _views_only(v, fuzz.get(fuzzed_as))
        if fuzzed_as in fuzz:
            rec.fuzzed += 1
            rec.layouts_ok += v.works and not v.refuses
        if not v.works:
            rec.failing.add(a["kernel"])
            if not _views_only(v, fuzz.get(fuzzed_as)):
                (rec.silent if v.kind in ("wrong", "wrong_some") else rec.errors).add(a["kernel"])
            if v.rewrite:
                rec.rewrites[v.rewrite] = rec.rewrites.get(v.rewrite, 0) + 1
    return {"device": device,
            "capabilities": [{"key": c.key, "label": c.label, "stages": list(c.stages), "families": list(c.families),
                              "layouts": c.layouts} for c in CAPABILITIES],
            "modes": list(EXPORT_MODES),
            "styles": [{"style": s, "kernels": sorted(kernels[s]),
                        "stages": {st: r.to_dict() for st, r in stages.items()}} for s, stages in styles.items()]}


def _needs(selection: list[str]) -> list[tuple[str | None, dict[str, str]]]:
    """The ways to meet a selection: (the export mode or None, {stage that must work: the capability needing it})."""
    fixed = {s: k for k in selection for s in BY_KEY[k].stages}
    families = [(f, k) for k in selection for f in BY_KEY[k].families]
    modes = [m for m in EXPORT_MODES if f"export_{m}" in selection]
    if any(BY_KEY[k].layouts for k in selection) and not fixed and not families:
        fixed = {"eager": next(k for k in selection if BY_KEY[k].layouts)}
    if not families:
        return [(None, fixed)]
    if modes:  # the reader named the mode: the answer need not
        return [(None, {**fixed, **{f"{f}_{m}": k for m in modes for f, k in families}})]
    return [(m, {**fixed, f"export_{m}": families[0][1], **{f"{f}_{m}": k for f, k in families}})
            for m in EXPORT_MODES]


# How far an answer is from the selection, best first, evidence before its absence: meets it (fuzz tests included
# where the stage has them); meets it for contiguous inputs only (the fuzz tests found views wrong); meets it on the
# model's inputs, some of its cells not fuzzed yet; misses some of it.
MEETS, CONTIGUOUS_ONLY, UNFUZZED, MISSES = 0, 1, 2, 3


@dataclass
class Answer:
    style: str
    level: int  # MEETS, UNFUZZED, CONTIGUOUS_ONLY or MISSES
    mode: str | None  # the export mode the answer goes through
    missing: list[dict[str, Any]]  # per stage that does not work: stage, capability, ran, works, rewrite, failing
    breadth: int  # stages where the style works in every cell: the tie-break, broader first
    kernels: list[str]
    stages: list[str]  # the stages it was judged on


def _state(rec: dict[str, Any] | None, layouts: bool) -> int:
    if not rec or not rec["ran"]:
        return MISSES
    if layouts:
        return MEETS if rec["works"] == rec["ran"] and rec["fuzzed"] and rec["layouts_ok"] == rec["fuzzed"] \
            and not rec["unfuzzed"] else MISSES
    if rec["works"] == rec["ran"]:
        return UNFUZZED if rec["unfuzzed"] else MEETS
    return CONTIGUOUS_ONLY if rec["contiguous"] == rec["ran"] else MISSES


def evaluate(data: dict[str, Any], selection: list[str]) -> list[Answer]:
    """Every style for a selection of capability keys, best first: by level (MEETS, UNFUZZED, CONTIGUOUS_ONLY),
    broadest first within one; then the others by how little they miss."""
    unknown = [k for k in selection if k not in BY_KEY]
    if unknown:
        raise ValueError(f"unknown capabilities {unknown}; known: {', '.join(BY_KEY)}")
    layouts = any(BY_KEY[k].layouts for k in selection)
    ranked = []
    for order, entry in enumerate(data["styles"]):
        stages = entry["stages"]
        best = None
        for mode, needed in _needs(selection):
            states = {stage: _state(stages.get(stage), layouts) for stage in needed}
            missing = []
            for stage, capability in needed.items():
                rec = stages.get(stage)
                if states[stage] == MISSES:
                    views = layouts and _state(rec, False) != MISSES  # the stage works: only the layouts fail
                    missing.append({"stage": stage, "capability": "strided" if views else capability,
                                    "ran": rec["ran"] if rec else 0, "works": rec["works"] if rec else 0,
                                    "rewrite": rec["rewrite"] if rec and not views else "",
                                    "failing": rec["failing"] if rec and not views else [], "views": views,
                                    "silent": rec.get("silent", []) if rec and not views else [],
                                    "errors": rec.get("errors", []) if rec and not views else []})
            # A stage proven wrong on views makes the answer contiguous-only, whatever the others' evidence.
            level = MISSES if missing else CONTIGUOUS_ONLY if CONTIGUOUS_ONLY in states.values() \
                else max(states.values(), default=MEETS)
            key = (level, len(missing))
            if best is None or key < best[0]:
                best = (key, mode, missing, list(needed))
        breadth = sum(1 for rec in stages.values() if _state(rec, False) in (MEETS, UNFUZZED))
        (level, _), mode, missing, judged = best
        ranked.append(((level, len(missing), -breadth, order),
                       Answer(entry["style"], level, mode, missing, breadth, entry["kernels"], judged)))
    return [a for _, a in sorted(ranked, key=lambda t: t[0])]


def describe_missing(answer: Answer) -> str:
    parts = []
    for m in answer.missing:
        how = ("refuses non-contiguous inputs, or was not fuzzed" if m["views"] else
               "not measured" if not m["ran"] else
               f"works in {m['works']} of {m['ran']} cells (not for {', '.join(m['failing'])})")
        parts.append(f"`{m['stage']}` {how}" + (f"; instead: {m['rewrite']}" if m["rewrite"] else ""))
    return "; ".join(parts)


def _names(answers: list[Answer]) -> str:
    return ", ".join(f"`{a.style}`" + (f" ({a.mode} export)" if a.mode else "") for a in answers)


def goals(data: dict[str, Any]) -> list[tuple[str, list[Answer], list[Answer], list[Answer], list[Answer]]]:
    """The common goals, each answered: (question, styles that do all of it best first, those that do it for
    contiguous inputs only, those that do it on the model's inputs but are not fuzzed yet, and the two closest of
    the others)."""
    out = []
    for question, selection in GOALS:
        answers = evaluate(data, list(selection))
        levels = [[a for a in answers if a.level == level] for level in (MEETS, CONTIGUOUS_ONLY, UNFUZZED)]
        out.append((question, *levels, [a for a in answers if a.level == MISSES][:2]))
    return out


INTRO = ("the styles whose every measured cell works in the stages it needs (every kernel the style applies to, every "
         "dtype). A cell the fuzz tests proved wrong on some inputs does not work; where they found it wrong only on "
         "non-contiguous inputs, the style is listed as working for contiguous inputs only; a style some of whose "
         "cells pass on the model's inputs but have not been fuzzed is listed apart.")


# The styles most kernels are wrapped in: each goal's answer says how each of them fares, best or not.
MAIN_STYLES = ("triton_op", "custom_op", "raw_jit", "autograd_function")
LEVEL_WORDS = {MEETS: "does it, fuzz-verified", CONTIGUOUS_ONLY: "does it for contiguous inputs only",
               UNFUZZED: "does it on the model's inputs, not all fuzzed", MISSES: "does not"}
CONTIGUOUS_CAVEAT = ("call .contiguous() on the inputs before the exported program or package: a .contiguous() inside "
                     "the traced op copies nothing on the example")
PYTHON_CAVEAT = "its package needs the op registered in Python where it is loaded (not from C++)"


def _failing(answer: Answer) -> str:
    """For a style that misses: the kernels it misses on, each in its own words (wrong on views only; silently
    wrong; fails with an error), so one exotic kernel does not hide a style that works for the others."""
    kernels = sorted({k for m in answer.missing for k in m["failing"]})
    if answer.level != MISSES or not kernels:
        return ""
    # The worst word a kernel earned at any missing stage: an error, then wrong values, then views only.
    errors = {k for m in answer.missing for k in m.get("errors", [])}
    silent = {k for m in answer.missing for k in m.get("silent", [])} - errors
    views = set(kernels) - errors - silent
    if errors >= set(answer.kernels):
        return " (fails for every kernel it ran)"
    said = [f"{words} for {', '.join(sorted(group))}" for words, group in (
        ("fails", errors), ("silently wrong", silent), ("wrong on non-contiguous inputs only", views)) if group]
    rest = "" if set(kernels) >= set(answer.kernels) else "; works for the others"
    return f" ({'; '.join(said)}{rest})"


def _measured_on(data: dict[str, Any], answer: Answer) -> str:
    """What an answer stands on: the kernels its style ran, and its cells at the judged stages that passed on the
    model's inputs without a fuzz test."""
    stages = next(e["stages"] for e in data["styles"] if e["style"] == answer.style)
    unfuzzed = sum(stages[s]["unfuzzed"] for s in answer.stages if s in stages)
    return f"measured on {len(answer.kernels)} kernels, {unfuzzed} cells not fuzzed"


def answers(data: dict[str, Any]) -> list[str]:
    """One line per common goal, answer first: the style to use, its evidence, its caveat; then the main styles."""
    out = []
    for question, selection in GOALS:
        ranked = evaluate(data, list(selection))
        best = ranked[0] if ranked and ranked[0].level != MISSES else None
        if best is None:
            line = f"**{question}**: no style does all of it here; closest `{ranked[0].style}`, which misses " \
                   f"{describe_missing(ranked[0])}" if ranked else f"**{question}**: nothing measured"
        else:
            line = f"**{question}**: use `{best.style}`" + (f" ({best.mode} export)" if best.mode else "") \
                   + f", {LEVEL_WORDS[best.level]} ({_measured_on(data, best)})"
            if best.level == CONTIGUOUS_ONLY:
                line += f"; {CONTIGUOUS_CAVEAT}"
            if best.style == "custom_op" and "aoti" in selection:
                line += f"; {PYTHON_CAVEAT}"
        status = {a.style: a for a in ranked}
        main = [f"`{s}` {LEVEL_WORDS[status[s].level]}{_failing(status[s])}" for s in MAIN_STYLES
                if s in status and status[s] is not best]
        out.append(line + (f". Of the main styles: {', '.join(main)}." if main else "."))
    return out


def markdown(data: dict[str, Any]) -> list[str]:
    out = ["## Which style should I use?", "", *(f"- {line}" for line in answers(data)), "",
           f"For each goal, on {data['device']}: {INTRO} The HTML page answers any combination.", ""]
    # A list, not a table: five columns of style names do not fit GitHub's column (1,279 px of 948).
    for question, full, contiguous, unfuzzed, close in goals(data):
        near = "; ".join(f"`{a.style}`: {describe_missing(a)}" for a in close)
        out += [f"- **{question}**", f"  - does all of it (fuzz-verified): {_names(full) or '**none**'}",
                f"  - for contiguous inputs only: {_names(contiguous) or '—'}",
                f"  - on the model's inputs, not fuzzed yet: {_names(unfuzzed) or '—'}",
                f"  - closest of the others, and what it misses: {near or '—'}"]
    return out + [""]
