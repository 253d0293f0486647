"""Declared data: what the matrix is made of. The contract (what a kernel or an op as shipped declares), the kernel,
style and stage registries, the devices and cell ids (cells), the model a cell's op is embedded in, the fuzz tests'
input strategies, and the import of a user's cases modules. Each fact is declared once, here, as data.

May import: compat.errors and compat.atomic only (and torch, triton, hypothesis). Nothing here runs a cell, reads a
result or renders a page: the other packages import this one, never the reverse."""
