"""A fresh interpreter that runs one task: `python -m compat.child TASK.json JOURNAL.jsonl` (the old way of starting
children, kept for `--compat-children=fresh` and the benchmark that compares it with the warm server's forks)."""

import sys

from .tasks import run

if __name__ == "__main__":
    run(sys.argv[1], sys.argv[2])
