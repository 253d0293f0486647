"""The cells of a cut shard that its run did not finish, as a cells list of their own.

    python scripts/shard_rest.py LIST RESULTS FUZZ_TESTS OUT

LIST: the shard's cells list; RESULTS: its run's results (.json or .json.gz); FUZZ_TESTS: the ids of the fuzz tests
the runner collects for the gate, one per line (from `pytest --collect-only -q` there); OUT: the list to write.
A cell is left when its record is missing, or its fuzz test was collected and has no record: running it again redoes
both, and `merge` keeps the later run's.
"""

import gzip
import json
import sys
from pathlib import Path


def _load(path: Path) -> dict:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        return json.load(f)


def _lines(path: str) -> list[str]:
    return [line.strip() for line in Path(path).read_text().splitlines() if line.strip()]


def main(listed: str, results: str, fuzz_tests: str, out: str) -> int:
    cells = _lines(listed)
    doc = _load(Path(results))
    recorded = {r["id"] for r in doc["cells"]}
    fuzzed = {r["id"] for r in doc["fuzz"]}
    fuzzable = set(_lines(fuzz_tests))
    left = [c for c in cells if c not in recorded or (c in fuzzable and c not in fuzzed)]
    Path(out).write_text("".join(f"{c}\n" for c in left))
    print(f"{out}: {len(left)} of {len(cells)} cells left")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
