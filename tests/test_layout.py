"""The code's shape: no import circle among the suite's modules (imports inside functions count), and the child side
(work inside a child) never reaches for the parent side (scheduling, keys, locks, launching)."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "compat"
PARENT_SIDE = {"compat.session", "compat.launcher", "compat.plugin", "compat.results", "compat.report",
               "compat.summary", "compat.diff", "compat.doctor", "compat.__main__", "compat.workers", "compat.page",
               "compat.recommend", "compat.verdicts", "compat.browser"}


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(node, package: str, modules: set[str]) -> set[str]:
    """The compat modules one import statement names (relative imports resolved against `package`)."""
    if isinstance(node, ast.Import):
        return {a.name for a in node.names if a.name in modules}
    base = node.module or ""
    if node.level:
        parts = package.split(".")
        base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
    return {c for c in [base, *(f"{base}.{a.name}" for a in node.names)] if c in modules}


def imports() -> dict[str, set[str]]:
    """Every compat module and the compat modules it imports, at module level or inside functions; imports under
    `if TYPE_CHECKING:` are annotations, not dependencies."""
    modules = {_module_name(p) for p in PACKAGE.rglob("*.py")}
    graph = {}
    for path in PACKAGE.rglob("*.py"):
        name = _module_name(path)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        tree = ast.parse(path.read_text())
        annotations = {id(n) for guard in ast.walk(tree) if isinstance(guard, ast.If)
                       and getattr(guard.test, "id", None) == "TYPE_CHECKING" for n in ast.walk(guard)}
        graph[name] = {m for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))
                       and id(node) not in annotations for m in _imported(node, package, modules)} - {name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_circle_remains():
    assert cycles(imports()) == []


def test_the_child_side_never_imports_the_parent_side():
    graph = imports()
    for module, deps in graph.items():
        if module.startswith("compat.child"):
            assert not deps & PARENT_SIDE, f"{module} imports {sorted(deps & PARENT_SIDE)}"
