"""The child side: the work done inside a child process, one cell's (or one shared group's) at a time.

A child is forked from a warm server (compat.child.server) or started as a fresh interpreter (`python -m
compat.child`); either way it runs one task of compat.child.tasks and records each phase in its journal. Nothing
here decides what runs where, starts processes or reads expectations: that is the run's (compat.run).

May import: compat.matrix, compat.evidence (outcomes, numerics), and the shared modules. Never compat.run or
compat.report.
"""
