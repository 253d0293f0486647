"""Which style to use: for the capabilities a reader needs, the styles whose every measured cell works there.

A capability is a set of stages that must work. Save/load, decompositions and AOTI follow the export mode the reader
picked (both modes when both are picked); with no mode picked, a style may reach them through either mode, the same
one for all. "Strided inputs" asks more of the fuzz tests: every fuzzed cell of the needed stages took every
non-contiguous layout and gave eager's values, without refusing one.

A style works at a stage when every cell it ran there (every kernel it applies to, every dtype) has the verdict
`passes` (compat.evidence.verdicts): a cell the fuzz tests proved wrong on some inputs does not work. The page's script
(compat.report.report) evaluates a reader's choice with the same rules from the same data (`table`); the browser test
checks that the two agree.

The written answers compare the styles on the kernels every main style ran (a style measured on fewer kernels does not
win by missing the hard ones); of those that tie there, the one shown to do it on the most kernels of its own first.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ..evidence.verdicts import Verdict
from ..matrix.cells import package_cell_of
from ..matrix.stages import EXPORT_MODES, RUNS_LIBRARY_OF, STAGES
from ..matrix.styles import CANONICAL_STYLES, STYLES


@dataclass(frozen=True)
class Capability:
    key: str
    label: str
    stages: tuple[str, ...] = ()  # stages that must work, whatever the export mode
    families: tuple[str, ...] = ()  # export-based families that must work in the chosen export mode(s)
    layouts: bool = False  # non-contiguous inputs must work, not be refused (fuzz evidence)


CAPABILITIES = (
    Capability(
        "compile",
        "torch.compile (eager, aot_eager and inductor backends, fullgraph)",
        stages=("compile_eager", "compile_aot_eager", "compile_inductor"),
    ),
    Capability(
        "dynamic", "dynamic shapes under torch.compile (no recompile on a new batch)", stages=("compile_dynamic",)
    ),
    Capability("gradients", "gradients under torch.compile", stages=("compile_backward",)),
    Capability(
        "dynamic_gradients",
        "gradients under torch.compile with dynamic shapes (both at once: compile_dynamic_backward)",
        stages=("compile_dynamic_backward",),
    ),
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
    ("torch.compile, dynamic shapes and gradients", ("compile", "dynamic", "gradients", "dynamic_gradients")),
    ("non-strict export, packaged with AOTInductor", ("export_nonstrict", "aoti")),
    ("non-strict export, AOTI and compiled gradients", ("export_nonstrict", "aoti", "gradients")),
    ("export, save/load and AOTInductor", ("save_load", "aoti")),
    (
        "non-strict export, save/load, AOTI, gradients and FLOPs",
        ("export_nonstrict", "save_load", "aoti", "gradients", "flops"),
    ),
    ("AOTInductor on strided inputs", ("aoti", "strided")),
    ("an AOTInductor package run from C++", ("aoti_cpp",)),
    ("AOTI from C++ and compiled gradients", ("aoti_cpp", "gradients")),
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
    failing: set = field(default_factory=set)  # kernels with a cell that does not work
    # Per failing kernel, the rewrites its cells name and how often: its own "instead", not the style's commonest.
    rewrites: dict[str, Counter] = field(default_factory=dict)
    # Of those, kernels with a cell that fails with an error (or on a contiguous generated input), and kernels with
    # one that gives wrong values without an error: the others are wrong on non-contiguous inputs only.
    errors: set = field(default_factory=set)
    silent: set = field(default_factory=set)

    def add(self, other: "StageRecord") -> None:
        for name in ("ran", "works", "contiguous", "unfuzzed", "fuzzed", "layouts_ok"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.failing |= other.failing
        self.errors |= other.errors
        self.silent |= other.silent
        for kernel, counts in other.rewrites.items():
            self.rewrites.setdefault(kernel, Counter()).update(counts)

    def to_dict(self) -> dict[str, Any]:
        instead = {k: self.rewrites[k].most_common(1)[0][0] for k in sorted(self.rewrites)}
        return {
            "ran": self.ran,
            "works": self.works,
            "contiguous": self.contiguous,
            "unfuzzed": self.unfuzzed,
            "fuzzed": self.fuzzed,
            "layouts_ok": self.layouts_ok,
            "instead": instead,
            "failing": sorted(self.failing),
            "silent": sorted(self.silent),
            "errors": sorted(self.errors),
        }


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


def _variant(style: str) -> str | None:
    """The canonical style `style` varies; None when it is one (or a style this checkout does not declare)."""
    known = STYLES.get(style)
    return known.variant_of if known else None


def table(doc: dict[str, Any], verdicts: dict[str, Verdict]) -> dict[str, Any]:
    """The data a recommendation is made from: per style, per stage, a StageRecord; and the same over the kernels
    every main style ran (`common`), where styles are compared on equal evidence."""
    device = device_of(doc)
    fuzz = {f["id"]: f for f in doc.get("fuzz") or []}
    # style -> stage -> kernel -> its cells' record
    per_kernel: dict[str, dict[str, dict[str, StageRecord]]] = {}
    for c in doc["cells"]:
        a, v = c["axes"], verdicts[c["id"]]
        if a["device"] != device or v.kind == "skipped":
            continue
        rec = per_kernel.setdefault(a["style"], {}).setdefault(a["stage"], {}).setdefault(a["kernel"], StageRecord())
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
                rec.rewrites.setdefault(a["kernel"], Counter())[v.rewrite] += 1
    kernels = {style: {k for by_kernel in stages.values() for k in by_kernel} for style, stages in per_kernel.items()}
    main = [kernels[s] for s in CANONICAL_STYLES if s in kernels]
    common = set.intersection(*main) if main else set()
    return {
        **_styles_table(device, per_kernel, kernels),
        # Styles compared on the kernels every main style ran: a style measured on fewer kernels does not win by
        # having missed the hard ones. Only the styles that ran all of them take part.
        "common": {
            "kernels": sorted(common),
            **_styles_table(
                device,
                {s: stages for s, stages in per_kernel.items() if kernels[s] >= common},
                {s: common for s in kernels if kernels[s] >= common},
                only=common,
            ),
        }
        if common and any(k > common for k in main)
        else None,  # every main style ran the same kernels: their own evidence is already equal
    }


def _styles_table(
    device: str | None,
    per_kernel: dict[str, dict[str, dict[str, StageRecord]]],
    kernels: dict[str, set],
    only: set | None = None,
) -> dict[str, Any]:
    """The recommendation's data over the kernels each style ran (or those in `only`)."""
    styles: dict[str, dict[str, StageRecord]] = {}
    for style, stages in per_kernel.items():
        for stage, by_kernel in stages.items():
            for kernel, rec in by_kernel.items():
                if only is None or kernel in only:
                    styles.setdefault(style, {}).setdefault(stage, StageRecord()).add(rec)
    return {
        "device": device,
        "capabilities": [
            {
                "key": c.key,
                "label": c.label,
                "stages": list(c.stages),
                "families": list(c.families),
                "layouts": c.layouts,
            }
            for c in CAPABILITIES
        ],
        "modes": list(EXPORT_MODES),
        "styles": [
            {
                "style": s,
                "kernels": sorted(kernels[s]),
                "variant": _variant(s),
                "stages": {st: r.to_dict() for st, r in stages.items()},
            }
            for s, stages in styles.items()
        ],
    }


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
    return [(m, {**fixed, f"export_{m}": families[0][1], **{f"{f}_{m}": k for f, k in families}}) for m in EXPORT_MODES]


# How far an answer is from the selection, best first, evidence before its absence: meets it (fuzz tests included
# where the stage has them); meets it for contiguous inputs only (the fuzz tests found views wrong); meets it on the
# model's inputs, some of its cells not fuzzed yet; misses some of it.
MEETS, CONTIGUOUS_ONLY, UNFUZZED, MISSES = 0, 1, 2, 3


@dataclass
class Answer:
    style: str
    level: int  # MEETS, CONTIGUOUS_ONLY, UNFUZZED or MISSES
    mode: str | None  # the export mode the answer goes through
    missing: list[dict[str, Any]]  # per stage that does not work: stage, capability, ran, works, rewrite, failing
    breadth: int  # stages where the style works in every cell: the tie-break, broader first
    kernels: list[str]
    stages: list[str]  # the stages it was judged on
    variant_of: str | None = None  # the canonical style it varies, if it is a variant


def _state(rec: dict[str, Any] | None, layouts: bool) -> int:
    if not rec or not rec["ran"]:
        return MISSES
    if layouts:
        return (
            MEETS
            if rec["works"] == rec["ran"]
            and rec["fuzzed"]
            and rec["layouts_ok"] == rec["fuzzed"]
            and not rec["unfuzzed"]
            else MISSES
        )
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
        best: tuple[tuple[int, int], str | None, list[dict[str, Any]], list[str]] | None = None
        for mode, needed in _needs(selection):
            states = {stage: _state(stages.get(stage), layouts) for stage in needed}
            missing = []
            for stage, capability in needed.items():
                rec = stages.get(stage)
                if states[stage] == MISSES:
                    views = layouts and _state(rec, False) != MISSES  # the stage works: only the layouts fail
                    missing.append(
                        {
                            "stage": stage,
                            "capability": "strided" if views else capability,
                            "ran": rec["ran"] if rec else 0,
                            "works": rec["works"] if rec else 0,
                            "instead": rec["instead"] if rec and not views else {},
                            "failing": rec["failing"] if rec and not views else [],
                            "views": views,
                            "silent": rec.get("silent", []) if rec and not views else [],
                            "errors": rec.get("errors", []) if rec and not views else [],
                        }
                    )
            # A stage proven wrong on views makes the answer contiguous-only, whatever the others' evidence.
            level = (
                MISSES
                if missing
                else CONTIGUOUS_ONLY
                if CONTIGUOUS_ONLY in states.values()
                else max(states.values(), default=MEETS)
            )
            key = (level, len(missing))
            if best is None or key < best[0]:
                best = (key, mode, missing, list(needed))
        breadth = sum(1 for rec in stages.values() if _state(rec, False) in (MEETS, UNFUZZED))
        assert best is not None  # _needs gives at least one way to meet the selection
        (level, _), mode, missing, judged = best
        # Evidence first, then the simpler style: a canonical one before its variants, then the broader.
        variant = entry.get("variant")
        ranked.append(
            (
                (level, len(missing), variant is not None, -breadth, order),
                Answer(entry["style"], level, mode, missing, breadth, entry["kernels"], judged, variant),
            )
        )
    return [a for _, a in sorted(ranked, key=lambda t: t[0])]


def instead_for(kernels, instead: dict[str, str]) -> str:
    """The kernels, each with its own rewrite: kernels that share one are named together before it."""
    groups: dict[str, list[str]] = {}
    for k in sorted(kernels):
        groups.setdefault(instead.get(k, ""), []).append(k)
    return "; ".join(", ".join(ks) + (f" (instead: {r})" if r else "") for r, ks in groups.items())


def describe_missing(answer: Answer) -> str:
    parts = []
    for m in answer.missing:
        how = (
            "refuses non-contiguous inputs, or was not fuzzed"
            if m["views"]
            else "not measured"
            if not m["ran"]
            else f"works in {m['works']} of {m['ran']} cells, not for {instead_for(m['failing'], m['instead'])}"
        )
        parts.append(f"`{m['stage']}` {how}")
    return "; ".join(parts)


def named(answer: Answer) -> str:
    """A style as an answer names it: its canonical style first, then the variant that wins, and the export mode."""
    said = [f"variant `{answer.style}`"] if answer.variant_of else []
    said += [f"{answer.mode} export"] if answer.mode else []
    return f"`{answer.variant_of or answer.style}`" + (f" ({', '.join(said)})" if said else "")


def _names(answers: list[Answer]) -> str:
    return ", ".join(named(a) for a in answers)


def goals(data: dict[str, Any]) -> list[tuple[str, list[Answer], list[Answer], list[Answer], list[Answer]]]:
    """The common goals, each answered: (question, styles that do all of it best first, those that do it for
    contiguous inputs only, those that do it on the model's inputs but are not fuzzed yet, and the two closest of
    the others)."""
    out = []
    for question, selection in GOALS:
        answers = evaluate(data, list(selection))
        meets, contiguous, unfuzzed = (
            [a for a in answers if a.level == lv] for lv in (MEETS, CONTIGUOUS_ONLY, UNFUZZED)
        )
        out.append((question, meets, contiguous, unfuzzed, [a for a in answers if a.level == MISSES][:2]))
    return out


INTRO = (
    "the styles whose every measured cell works in the stages it needs (every kernel the style applies to, every "
    "dtype). A cell the fuzz tests proved wrong on some inputs does not work; where they found it wrong only on "
    "non-contiguous inputs, the style is listed as working for contiguous inputs only; a style some of whose "
    "cells pass on the model's inputs but have not been fuzzed is listed apart."
)


LEVEL_WORDS = {
    MEETS: "does it, fuzz-verified",
    CONTIGUOUS_ONLY: "does it for contiguous inputs only",
    UNFUZZED: "does it on the model's inputs, not all fuzzed",
    MISSES: "does not",
}
CONTIGUOUS_CAVEAT = (
    "call .contiguous() on the inputs before the exported program or package: a .contiguous() inside "
    "the traced op copies nothing on the example"
)
PYTHON_CAVEAT = "its package needs the op registered in Python where it is loaded (not from C++)"


def _failing(answer: Answer) -> str:
    """For a style that misses: the kernels it misses on, each in its own words (wrong on views only; silently
    wrong; fails with an error) and with its own rewrite, so one exotic kernel does not hide a style that works for
    the others."""
    kernels = sorted({k for m in answer.missing for k in m["failing"]})
    if answer.level != MISSES or not kernels:
        return ""
    # The worst word a kernel earned at any missing stage: an error, then wrong values, then views only; its
    # rewrite, from the first missing stage that names one.
    errors = {k for m in answer.missing for k in m.get("errors", [])}
    silent = {k for m in answer.missing for k in m.get("silent", [])} - errors
    views = set(kernels) - errors - silent
    instead: dict[str, str] = {}
    for m in answer.missing:
        instead = {**m["instead"], **instead}
    shared = {instead.get(k, "") for k in errors}
    if errors >= set(answer.kernels) and len(shared) == 1:
        rewrite = shared.pop()
        return " (fails for every kernel it ran" + (f"; instead: {rewrite})" if rewrite else ")")
    said = [
        f"{words} for {instead_for(group, instead)}"
        for words, group in (("fails", errors), ("silently wrong", silent))
        if group
    ]
    if views:  # one remedy for all of them, the caveat's
        said.append(
            f"wrong on non-contiguous inputs only for {', '.join(sorted(views))} (instead: pass contiguous inputs)"
        )
    rest = "" if set(kernels) >= set(answer.kernels) else "; works for the others"
    return f" ({'; '.join(said)}{rest})"


def _measured_on(data: dict[str, Any], answer: Answer) -> str:
    """What an answer stands on: the kernels its style ran, and its cells at the judged stages that passed on the
    model's inputs without a fuzz test."""
    stages = next(e["stages"] for e in data["styles"] if e["style"] == answer.style)
    unfuzzed = sum(stages[s]["unfuzzed"] for s in answer.stages if s in stages)
    kernels = len(answer.kernels)
    return f"measured on {kernels} kernel{'s' * (kernels != 1)}, {unfuzzed} cell{'s' * (unfuzzed != 1)} not fuzzed"


def recommended(data: dict[str, Any], selection: list[str]) -> tuple[list[Answer], list[Answer]]:
    """The styles a goal's answer names, best first, and every style as judged on its own kernels. Where the main
    styles share kernels, the styles are compared on those (`common`): the answer is the styles best there, the
    one whose own kernels also show it best first; else on each style's own kernels."""
    own = evaluate(data, selection)
    if not data.get("common"):
        return ([own[0]] if own and own[0].level != MISSES else []), own
    compared = evaluate(data["common"], selection)
    top = compared[0]
    if top.level == MISSES:
        return [], own
    by_style = {a.style: a for a in own}
    tied = [a for a in compared if a.level == top.level and not a.missing]
    families: dict[str, Answer] = {}  # one per canonical style: itself where it ties, else its first variant
    for a in sorted(tied, key=lambda a: a.variant_of is not None):
        families.setdefault(a.variant_of or a.style, a)
    # The broadest evidence first: the style shown to do it on the most kernels of its own.
    order = {a.style: i for i, a in enumerate(own)}
    return sorted(families.values(), key=lambda a: (-_works_on(by_style[a.style]), order[a.style])), own


def _works_on(answer: Answer) -> int:
    """How many of its own kernels a style was shown to do a goal on (views-only misses count as failing)."""
    if answer.level != MISSES:
        return len(answer.kernels)
    failing = {k for m in answer.missing for k in m["failing"]}
    return 0 if any(m["views"] or not m["ran"] for m in answer.missing) else len(answer.kernels) - len(failing)


@dataclass(frozen=True)
class Said:
    """An answer as a page shows it: one line (the question and the style to use), and its evidence behind it."""

    head: str
    evidence: str

    def markdown(self) -> list[str]:
        return [f"- {self.head}", f"  - {self.evidence}"]


LEVEL_SHORT = {MEETS: "fuzz-verified", CONTIGUOUS_ONLY: "contiguous only", UNFUZZED: "not all fuzzed"}


def answers(data: dict[str, Any]) -> list[Said]:
    """Per common goal, answer first: the style to use in one line; then its evidence, its caveat and the main
    styles."""
    out = []
    common: list[str] = (data.get("common") or {}).get("kernels") or []
    for question, selection in GOALS:
        best_ones, ranked = recommended(data, list(selection))
        best = next((a for a in ranked if best_ones and a.style == best_ones[0].style), None)
        n = len(common)
        said = [f"compared on the {n} kernel{'s' * (n != 1)} all main styles ran ({', '.join(common)})"] if n else []
        if best is None:
            closest = (evaluate(data["common"], list(selection)) if common else ranked)[:1]
            head = f"**{question}**: " + ("no style does all of it" if closest else "nothing measured")
            said += [f"closest {named(closest[0])}, which misses {describe_missing(closest[0])}"] if closest else []
        else:
            level = best_ones[0].level
            first = best_ones[0]  # by the style's own name: what it varies is in the evidence
            how = f" ({first.mode} export)" if first.mode else ""
            shared = f", on {n} shared kernel{'s' * (n != 1)}" if n else ""
            head = f"**{question}**: use `{first.style}`{how} — {LEVEL_SHORT[level]}{shared}"
            said += [f"`{first.style}` is a `{first.variant_of}` variant"] if first.variant_of else []
            said += [f"so does {_names(best_ones[1:])}"] if len(best_ones) > 1 else []
            own = f"{LEVEL_WORDS[best.level]}{_failing(best)} ({_measured_on(data, best)})"
            said.append(f"on its own kernels {named(best)} {own}" if common else f"{named(best)} {own}")
            if CONTIGUOUS_ONLY in (level, best.level):
                said.append(CONTIGUOUS_CAVEAT)
            if (best.variant_of or best.style) == "custom_op" and "aoti" in selection:
                said.append(PYTHON_CAVEAT)
        status = {a.style: a for a in ranked}
        main = [
            f"`{s}` {LEVEL_WORDS[status[s].level]}{_failing(status[s])}"
            for s in CANONICAL_STYLES
            if s in status and status[s] is not best
        ]
        said += [f"of the main styles: {', '.join(main)}"] if main else []
        text = "; ".join(said)
        out.append(Said(head, f"{text[:1].upper()}{text[1:]}." if text else ""))
    return out + ([views] if (views := packages_on_views(data)) else [])


def packages_on_views(data: dict[str, Any]) -> Said | None:
    """The sentence for when no AOTInductor package, of any style, passed its fuzz test on non-contiguous inputs
    (a C++ cell runs its package, so it is not counted twice)."""
    records = [
        r
        for e in data["styles"]
        for stage, r in e["stages"].items()
        if stage in STAGES and STAGES[stage].packaged and STAGES[stage].family not in RUNS_LIBRARY_OF
    ]
    fuzzed = sum(r["fuzzed"] for r in records)
    if not fuzzed or any(r["layouts_ok"] for r in records):
        return None
    return Said(
        "**Non-contiguous inputs to an AOTInductor package**: no style's package gives eager's values",
        f"None of the {fuzzed} packages fuzzed here, of any style, took every non-contiguous layout and gave "
        f"eager's values; {CONTIGUOUS_CAVEAT}.",
    )


def markdown(data: dict[str, Any]) -> list[str]:
    out = [
        "## Which style should I use?",
        "",
        *(line for said in answers(data) for line in said.markdown()),
        "",
        f"For each goal, on {data['device']}: {INTRO} The HTML page answers any combination.",
        "",
    ]
    # A list, not a table: five columns of style names do not fit GitHub's column (1,279 px of 948).
    for question, full, contiguous, unfuzzed, close in goals(data):
        near = "; ".join(f"`{a.style}`: {describe_missing(a)}" for a in close)
        out += [
            f"- **{question}**",
            f"  - does all of it (fuzz-verified): {_names(full) or '**none**'}",
            f"  - for contiguous inputs only: {_names(contiguous) or '—'}",
            f"  - on the model's inputs, not fuzzed yet: {_names(unfuzzed) or '—'}",
            f"  - closest of the others, and what it misses: {near or '—'}",
        ]
    return out + [""]
