"""Evidence: what was observed and what was expected. Outcomes and their root causes, the numerics that compare with
eager PyTorch, the expectations file and the catalogue of known failures that explains it, results files (write,
read, merge), a cell's verdict with its fuzz evidence, the baseline of an upgrade, the diff between two runs and the
view across versions.

May import: compat.matrix (names, cell ids, registries), compat.errors, compat.atomic. Never the run, the reports or
the child."""
