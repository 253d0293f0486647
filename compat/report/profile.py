"""Where a run's time went, from its results file alone (`python -m compat profile RESULTS.json`).

A test's duration is the wall time its worker spent on it. Tests of one lane (compat.matrix.cells.lane: a probe
child, a build, a fuzz child) share one child and run one after another on one worker, the child's time falling to
the first test that needed it; so a lane's time is its tests' durations summed, and the longest lane is the critical
path: no number of workers ends the run sooner. The phases are the children's own (each child counted once, by its
pid): `launch` (from the request to the child's first word: a fork, a fresh interpreter, or on a server's first use
its start), `startup` (importing the task's code), each probe stage, the export and each build phase, each fuzzed
stage, `waiting for the ISA detection` (a child's wait for the run's one detection of the CPU ISAs before its first
C++ compile), and `exit` (from the child's last word until the parent has read it). The run-wide work (the C++
runner, the AOTI canaries: made once a run by the first cell that needs it, while the others wait on its lock) is in
no lane's children: a cell that built or waited for it records the seconds (`run_wide_s`), shown among its lane's
phases as `run-wide NAME`.
Files written before lanes and start times were recorded get their lanes from the cell ids.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import RegistryError
from ..matrix.cells import lane, parse_cell_id
from ..matrix.stages import STAGES

SECTIONS = ("cells", "fuzz")


@dataclass
class Profile:
    wall_s: float
    workers: dict[str, float] = field(default_factory=dict)  # busy seconds per worker
    gpus: dict[str, float] = field(default_factory=dict)  # busy seconds per GPU
    lanes: dict[str, float] = field(default_factory=dict)  # wall seconds per lane
    lane_worker: dict[str, str] = field(default_factory=dict)
    lane_started: dict[str, float] = field(default_factory=dict)  # when each lane's first test started (epoch s)
    lane_phases: dict[str, dict[str, float]] = field(default_factory=dict)  # seconds per phase of each lane's children
    phases: dict[tuple[str, str], list[float]] = field(default_factory=dict)  # (section, phase): [phase runs, s, cpu s]
    tests: dict[str, int] = field(default_factory=dict)  # per section

    @property
    def busy_s(self) -> float:
        return sum(self.workers.values())

    @property
    def critical(self) -> tuple[str, float]:
        return max(self.lanes.items(), key=lambda kv: kv[1], default=("none", 0.0))


def _lane(record: dict[str, Any], section: str) -> str:
    if record.get("lane"):
        return record["lane"]
    try:
        return lane(parse_cell_id(record["id"], "a results file"), section)
    except RegistryError:  # a cell no longer in the matrix (or a kernel not declared here): its own lane
        return f"{section}-{record['id']}"


def _phase_family(section: str, phase: str) -> str:
    """A phase's name as the profile groups it: a stage's family (a fuzzed stage's, in the fuzz section)."""
    if phase in STAGES:
        family = STAGES[phase].family
        return f"fuzz {family}" if section == "fuzz" else family
    return phase if section == "cells" else f"fuzz {phase}"


def of(doc: dict[str, Any], source: str | None = None, wall_s: float | None = None) -> Profile:
    """The profile of one run: the whole file, or (a merged file) the records of its run `source`."""
    prof = Profile(float(doc["summary"].get("wall_seconds") or 0.0) if wall_s is None else wall_s)
    seen_children: set[tuple[str, Any]] = set()
    phases: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0, 0.0, 0.0])
    lanes: dict[str, float] = defaultdict(float)
    workers: dict[str, float] = defaultdict(float)
    gpus: dict[str, float] = defaultdict(float)
    for section in SECTIONS:
        records = [
            r
            for r in doc.get(section) or []
            if r["outcome"]["kind"] != "skipped" and (source is None or r.get("source") == source)
        ]
        prof.tests[section] = len(records)
        for r in records:
            seconds = r.get("duration_s") or 0.0
            name = _lane(r, section)
            lanes[name] += seconds
            worker = r.get("worker") or "main"
            workers[worker] += seconds
            prof.lane_worker.setdefault(name, worker)
            if r.get("started_at") is not None:
                prof.lane_started[name] = min(r["started_at"], prof.lane_started.get(name, r["started_at"]))
            if r.get("gpu") is not None:
                gpus[str(r["gpu"])] += seconds
            detail = r["outcome"].get("detail") or {}
            for work, s in (detail.get("run_wide_s") or {}).items():  # built once a run, or waited for: no child's
                own = prof.lane_phases.setdefault(name, {})
                own[f"run-wide {work}"] = own.get(f"run-wide {work}", 0.0) + s
            child = (worker, (detail.get("child") or {}).get("pid"))
            if child[1] is None or child in seen_children:
                continue
            seen_children.add(child)
            cpu = detail.get("cpu_seconds") or {}
            for phase, s in (detail.get("seconds") or {}).items():
                own = prof.lane_phases.setdefault(name, {})
                own[phase] = own.get(phase, 0.0) + s
                row = phases[(section, _phase_family(section, phase))]
                row[0] += 1
                row[1] += s
                row[2] += cpu.get(phase) or 0.0
    prof.phases, prof.lanes, prof.workers, prof.gpus = dict(phases), dict(lanes), dict(workers), dict(gpus)
    return prof


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def _over_bound(prof: Profile, bound: float) -> list[str]:
    """Each lane longer than `bound` (a lane is one shared child: no split of the run ends it sooner), its longest
    phases (a probe stage's is mostly its compile), and its place in the order the lanes started: one the schedule
    knew to be long starts among the first."""
    over = sorted(((s, name) for name, s in prof.lanes.items() if s > bound), reverse=True)
    if not over:
        return [f"no lane longer than the bound of {bound:g} s"]
    order = {name: i + 1 for i, name in enumerate(sorted(prof.lane_started, key=prof.lane_started.__getitem__))}
    lines = [f"lanes longer than the bound of {bound:g} s (their longest phases; the order the lanes started in):"]
    for s, name in over:
        own = prof.lane_phases.get(name) or {}
        started = f"started {_ordinal(order[name])} of {len(order)}" if name in order else "start not recorded"
        spent = [f"{phase} {secs:.1f} s" for phase, secs in sorted(own.items(), key=lambda kv: -kv[1])[:3]]
        # A lane that waited (on a build another worker makes, on a child's start) shows it here, not in a phase.
        spent.append(f"outside its children's phases {max(0.0, s - sum(own.values())):.1f} s")
        lines.append(f"  {s:>7.1f} s  {name}  ({started}): {', '.join(spent)}")
    return lines


def _pct(part: float, whole: float) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "-"


def text(doc: dict[str, Any], top: int = 10, bound: float | None = None) -> str:
    """The profile as a reader reads it, run by run (a merged file's runs each on their own: their workers and wall
    times are their own); with `bound`, every lane longer than it, what it spent its time on and when it started."""
    env = doc.get("environment") or {}
    where = ", ".join(g.get("name", "?") for g in env.get("gpus") or []) or "no GPU"
    head = f"torch {env.get('torch')}, triton {env.get('triton')}, {where}"
    merged = (doc.get("options") or {}).get("merged_from") or []
    if not merged:
        return f"{head}\n{_run_text(of(doc), top, bound)}"
    walls = {Path(run["path"]).name: run.get("wall_seconds") for run in merged}
    sources = sorted({r.get("source") for section in SECTIONS for r in doc.get(section) or [] if r.get("source")})
    parts = [f"{head}: merged from {len(merged)} run(s); each run that gave records here is profiled on its own"]
    for source in sources:
        wall = walls.get(Path(source).name)
        parts.append(f"\n== {source}\n{_run_text(of(doc, source, wall or 0.0), top, bound)}")
    return "\n".join(parts)


def _run_text(prof: Profile, top: int, bound: float | None = None) -> str:
    """One run: its tests and wall time, the critical path and the longest lanes, the phases by stage family and
    the time outside every phase, each worker's busy and idle time, each GPU's share."""
    name, critical = prof.critical
    slots = prof.wall_s * max(1, len(prof.workers))
    lines = [
        f"{prof.tests.get('cells', 0)} cells and {prof.tests.get('fuzz', 0)} fuzz tests ran (skipped ones left out), "
        f"{prof.wall_s:.0f} s wall time on {len(prof.workers)} worker(s), busy {prof.busy_s:.0f} worker-seconds "
        f"({_pct(prof.busy_s, slots)} of their time)",
        f"critical path: {name}, {critical:.0f} s ({_pct(critical, prof.wall_s)} of the wall time) on "
        f"{prof.lane_worker.get(name, '?')}: no number of workers ends the run sooner",
        "phases, each child counted once (phase runs, seconds, CPU seconds, share of the busy time):",
    ]
    total = 0.0
    for (_, phase), (runs, s, cpu) in sorted(prof.phases.items(), key=lambda kv: -kv[1][1]):
        total += s
        lines.append(f"  {phase:<28} {int(runs):>5} runs {s:>9.1f} s {cpu:>9.1f} cpu s  {_pct(s, prof.busy_s):>4}")
    outside = max(0.0, prof.busy_s - total)
    lines.append(
        f"  {'outside every phase':<28} {'':>10} {outside:>9.1f} s {'':>15} {_pct(outside, prof.busy_s):>4}"
        "  (starting children, the harness, waiting on a lock)"
    )
    lines.append(f"longest lanes (of {len(prof.lanes)}):")
    for lane_name, s in sorted(prof.lanes.items(), key=lambda kv: -kv[1])[:top]:
        lines.append(f"  {s:>7.1f} s  {lane_name}  ({prof.lane_worker.get(lane_name, '?')})")
    if bound is not None:
        lines += _over_bound(prof, bound)
    lines.append("workers (busy, idle until the run's end):")
    for worker, s in sorted(prof.workers.items(), key=lambda kv: int(kv[0][2:]) if kv[0][2:].isdigit() else -1):
        lines.append(f"  {worker:<8} busy {s:>7.1f} s  idle {max(0.0, prof.wall_s - s):>7.1f} s")
    if prof.gpus:
        lines.append("GPUs (share of the busy time of the tests that ran on one):")
        all_gpu = sum(prof.gpus.values())
        for gpu, s in sorted(prof.gpus.items()):
            lines.append(f"  GPU {gpu:<4} {s:>8.1f} s  {_pct(s, all_gpu):>4}")
    return "\n".join(lines) + "\n"
