"""The results file: one JSON document per run, written atomically at the end."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from .atomic import write_atomic
from .errors import ResultsError
from .outcomes import KINDS

SCHEMA = 1


def document(env: dict[str, Any], cells: list[dict[str, Any]], builds: dict[str, Any], wall_seconds: float,
             options: dict[str, Any]) -> dict[str, Any]:
    cells = sorted(cells, key=lambda c: c["id"])
    by_outcome = Counter(c["outcome"]["kind"] for c in cells)
    return {
        "schema": SCHEMA,
        "environment": env,
        "options": options,
        "summary": {
            "cells": len(cells),
            "by_outcome": {k: by_outcome.get(k, 0) for k in KINDS},
            "unexpected": sum(1 for c in cells if c["verdict"]),
            "environment_failures": sum(1 for c in cells if c["outcome"]["detail"].get("environment_failure")),
            "cells_per_gpu": dict(sorted(Counter(c["gpu"] for c in cells if c.get("gpu")).items())),
            "wall_seconds": round(wall_seconds, 1),
            **builds,
        },
        "cells": cells,
    }


def write(path: str | Path, doc: dict[str, Any]) -> None:
    try:
        write_atomic(path, json.dumps(doc, indent=1, sort_keys=False) + "\n")
    except OSError as exc:
        raise ResultsError(f"{path}: cannot write the results file: {exc}") from None


def load(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        raise ResultsError(f"{path}: no such results file") from None
    except json.JSONDecodeError as exc:
        raise ResultsError(f"{path}: not valid JSON (truncated?): {exc}") from None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        got = doc.get("schema") if isinstance(doc, dict) else type(doc).__name__
        raise ResultsError(f"{path}: results schema {got!r}; this version reads schema {SCHEMA}")
    return doc
