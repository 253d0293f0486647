"""What a cut shard's runs left of it: the cells list to run again, and the tests of it not to.

    python scripts/shard_rest.py LIST FUZZ_TESTS OUT RESULTS...

LIST: the shard's cells list; FUZZ_TESTS: the ids of the fuzz tests the runner collects for the gate, one per line
(from `pytest --collect-only -q` there); RESULTS: the results of every run of the shard so far (.json or .json.gz).
OUT: the cells with a test left (its record missing, or its fuzz test collected and without one); OUT's stem
.deselect beside it: a pytest arguments file (`@OUT.deselect`) that deselects each of their tests a run recorded,
so the next run redoes nothing: a run goes longest first, so a run of whole cells again would redo the long fuzz
tests each time and reach few of the cells it never recorded (three calls of the whole gate at f228959 did).
"""

import gzip
import json
import sys
from pathlib import Path

TESTS = {"cells": "test_cell", "fuzz": "test_fuzz"}


def _load(path: Path) -> dict:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        return json.load(f)


def _lines(path: str) -> list[str]:
    return [line.strip() for line in Path(path).read_text().splitlines() if line.strip()]


def main(listed: str, fuzz_tests: str, out: str, *runs: str) -> int:
    cells = _lines(listed)
    fuzzable = set(_lines(fuzz_tests))
    recorded: dict[str, set[str]] = {section: set() for section in TESTS}
    for run in runs:
        doc = _load(Path(run))
        for section in TESTS:
            recorded[section] |= {r["id"] for r in doc[section]}
    left = [c for c in cells if c not in recorded["cells"] or (c in fuzzable and c not in recorded["fuzz"])]
    deselect = [
        f"--deselect=compat/testing.py::{test}[{c}]"
        for c in left
        for section, test in TESTS.items()
        if c in recorded[section]
    ]
    Path(out).write_text("".join(f"{c}\n" for c in left))
    Path(out).with_suffix(".deselect").write_text("".join(f"{a}\n" for a in deselect))
    print(f"{out}: {len(left)} of {len(cells)} cells left, {len(deselect)} of their tests recorded (deselected)")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
