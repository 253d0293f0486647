"""Where a run writes its results: one file per run under the repository's `compat-results/`, named by what it holds
(the versions and host, the time it started, the selection it was narrowed to), and `latest.json`, a link to the
newest run that covered everything the link's run did. A run cut short, or narrowed to fewer cells, never moves the
link off a fuller run; `report` and `describe` read the link (or every run) by default. A results file named with
--compat-results is written where it is named, and the link is left alone."""

from __future__ import annotations

import datetime
import os
import re
from pathlib import Path
from typing import Any

from ..errors import ResultsError
from ..evidence import results
from ..matrix.cells import in_matrix
from .options import RUNS_DIR

LATEST = "latest.json"


def new_path(root: Path, label: str, started: datetime.datetime, narrowed: dict[str, list[str]]) -> Path:
    """A file of its own for one run: `<label>_<UTC time>[_<what>-<names>...].json` under root/compat-results, where
    `narrowed` names what the command line narrowed the selection to (stages, cells, tier; a second run in the same
    second gets a number)."""
    stamp = started.astimezone(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    selection = "".join(f"_{what}-{'+'.join(names)}" for what, names in narrowed.items() if names)
    name = re.sub(r"[^\w.+=-]", "-", f"{label}_{stamp}{selection}")[:180]
    folder = root / RUNS_DIR
    path, n = folder / f"{name}.json", 2
    while path.exists():
        path, n = folder / f"{name}-{n}.json", n + 1
    return path


def records(doc: dict[str, Any]) -> set[tuple[str, str]]:
    """What a results file measured, still in the matrix: (section, cell id) of every record not skipped."""
    return {
        (section, r["id"])
        for section in ("cells", "fuzz")
        for r in doc.get(section) or []
        if r["outcome"]["kind"] != "skipped" and in_matrix(r["id"])
    }


def latest(folder: Path) -> Path | None:
    link = folder / LATEST
    return link if link.exists() else None


def update_latest(path: Path, doc: dict[str, Any]) -> str:
    """Point `latest.json` beside `path` at it, unless it was interrupted or the run the link names measured
    something this one did not; the line the summary prints either way."""
    link = path.parent / LATEST
    if doc["options"].get("interrupted"):
        return f"{LATEST} left alone: this run was interrupted"
    if link.exists():
        try:
            before = results.load(link)
        except ResultsError:
            before = None  # unreadable: any run replaces it
        missing = records(before) - records(doc) if before is not None else set()
        if missing:
            return (
                f"{LATEST} left at {os.readlink(link) if link.is_symlink() else link.name}: it measured "
                f"{len(missing)} record(s) this run did not (a fuller run; this one is {path.name})"
            )
    temporary = link.with_name(f".{LATEST}.{os.getpid()}")
    temporary.unlink(missing_ok=True)
    temporary.symlink_to(path.name)
    os.replace(temporary, link)
    return f"{LATEST} -> {path.name}"
