"""The code's shape, as compat/*/__init__.py states it: the package tree is docs/LAYOUT.md's layout (declared data,
evidence, the run, reports, the child), each package imports only the packages its rules allow, and no import circle
remains among the modules (imports inside functions count).

Type-only imports (under `if TYPE_CHECKING:`) count for the packages' rules, a type named is a layer reached, and
for circles: none closes through them either."""

import ast
import os
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "compat"
SHARED = {"errors", "atomic", "processes"}  # compat's top-level modules every package may use; they import none
# What each package may import besides itself and the shared modules (its __init__.py says why).
MAY_IMPORT = {
    "matrix": set(),
    "evidence": {"matrix"},
    "child": {"matrix", "evidence"},
    "report": {"matrix", "evidence"},
    "run": {"matrix", "evidence", "report", "child"},
}
ENTRY_POINTS = {"compat", "compat.__main__", "compat.plugin", "compat.testing"}  # they assemble the packages


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


def imports(type_only: bool = False) -> dict[str, set[str]]:
    """Every compat module and the compat modules it imports, at module level or inside functions; imports under
    `if TYPE_CHECKING:` only when `type_only`."""
    modules = {_module_name(p) for p in PACKAGE.rglob("*.py")}
    graph = {}
    for path in PACKAGE.rglob("*.py"):
        name = _module_name(path)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        tree = ast.parse(path.read_text())
        annotations = {
            id(n)
            for guard in ast.walk(tree)
            if isinstance(guard, ast.If) and getattr(guard.test, "id", None) == "TYPE_CHECKING"
            for n in ast.walk(guard)
        }
        graph[name] = {
            m
            for node in ast.walk(tree)
            if isinstance(node, (ast.Import, ast.ImportFrom)) and (type_only or id(node) not in annotations)
            for m in _imported(node, package, modules)
        } - {name}
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


def test_no_circle_closes_through_a_type_only_import_either():
    """A circle that only `if TYPE_CHECKING:` closes runs, but it is a layering the reader must untangle all the same."""
    assert cycles(imports(type_only=True)) == []


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else module


def test_every_module_lives_in_a_package_of_the_layout_or_is_shared_or_an_entry_point():
    for module in imports():
        layer = _layer(module)
        assert layer in MAY_IMPORT or layer in SHARED or module in ENTRY_POINTS, (
            f"{module} is outside the layout: put it in one of {sorted(MAY_IMPORT)}, or make it shared"
        )


@pytest.mark.parametrize("layer", sorted(MAY_IMPORT) + sorted(SHARED))
def test_each_package_imports_only_what_its_rules_allow(layer):
    allowed = {layer} | MAY_IMPORT.get(layer, set()) | (SHARED if layer in MAY_IMPORT else set())
    for module, deps in imports(type_only=True).items():
        if _layer(module) != layer or module in ENTRY_POINTS:
            continue
        wrong = sorted(d for d in deps if _layer(d) not in allowed)
        assert not wrong, f"{module} imports {wrong}; {layer} may import only {sorted(allowed - {layer})}"


def test_the_run_imports_of_the_child_only_its_protocol_which_imports_nothing():
    """The parent reads what it shares with its children (task and file names, environment variables, timeouts) from
    compat.child.protocol alone: it never imports the child's work, and with it torch."""
    graph = imports(type_only=True)
    for module, deps in graph.items():
        if _layer(module) == "run":
            child = sorted(d for d in deps if _layer(d) == "child" and d != "compat.child.protocol")
            assert not child, f"{module} imports {child}; the run may import only compat.child.protocol of the child"
    tree = ast.parse((PACKAGE / "child" / "protocol.py").read_text())
    assert not [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]


def test_the_protocol_names_every_task_the_run_asks_for_and_the_child_has_a_body_for_each():
    from compat.child import protocol, tasks

    assert set(protocol.TASKS) <= set(tasks.TASKS)
    asked = set()
    for path in (PACKAGE / "run").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "attr", None) == "run"
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                asked.add(node.args[0].value)
            if (
                isinstance(node, ast.Tuple)
                and node.elts
                and isinstance(node.elts[0], ast.Constant)
                and node.elts[0].value in tasks.TASKS
            ):
                asked.add(node.elts[0].value)
    assert asked and asked <= set(protocol.TASKS), sorted(asked - set(protocol.TASKS))


def test_the_package_rules_are_the_ones_each_package_states():
    """Each package's docstring names what it may import: the rules above and the docs cannot drift apart."""
    for layer, allowed in MAY_IMPORT.items():
        doc = ast.get_docstring(ast.parse((PACKAGE / layer / "__init__.py").read_text()))
        stated = re.search(r"May import:(.*?)\.(\s|$)", doc, re.S).group(1)
        named = {p for p in MAY_IMPORT if f"compat.{p}" in stated}
        assert named == allowed, (
            f"compat/{layer}/__init__.py says it may import {sorted(named)}, the rule {sorted(allowed)}"
        )


def test_paths_into_the_checkout_survive_the_package_tree():
    """Modules one package down name the checkout's root by climbing to it: the suite's expectations and the root a
    fresh child imports compat from."""
    from compat.evidence.expectations import SUITE
    from compat.run.launcher import _child_env

    assert SUITE == PACKAGE.parent / "expectations.yaml" and SUITE.is_file()
    assert _child_env({})["PYTHONPATH"].split(os.pathsep)[0] == str(PACKAGE.parent)


MAX_FUNCTION_IMPORTS = 40


def _function_imports():
    """(path, line, whether its reason is given) for each import inside a function: a comment on its line or the two
    above, or a child task's body (compat.child.tasks says why those import what they run)."""
    for path in sorted(PACKAGE.rglob("*.py")):
        lines = path.read_text().split("\n")
        for fn in ast.walk(ast.parse("\n".join(lines))):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            task = any(isinstance(d, ast.Call) and getattr(d.func, "id", None) == "task" for d in fn.decorator_list)
            for node in ast.walk(fn):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    near = "".join(lines[max(node.lineno - 3, 0) : node.lineno])
                    yield path.relative_to(PACKAGE.parent), node.lineno, task or "#" in near


def test_imports_inside_functions_are_few_and_each_says_why():
    found = list(_function_imports())
    assert len(found) <= MAX_FUNCTION_IMPORTS, f"{len(found)} imports inside functions; at most {MAX_FUNCTION_IMPORTS}"
    silent = [f"{path}:{line}" for path, line, why in found if not why]
    assert not silent, f"imports inside functions without a reason (a comment on or just above the line): {silent}"


def test_the_tests_readme_names_every_test_module():
    from pathlib import Path

    here = Path(__file__).resolve().parent
    said = (here / "README.md").read_text()
    assert [p.name for p in sorted(here.glob("test_*.py")) if f"`{p.name}`" not in said] == []


def test_no_function_is_longer_than_80_lines_and_the_controller_only_orchestrates():
    """A function a newcomer can read at once; the controller, which once also selected, scheduled, judged and wrote
    (697 lines at d0c9217), within 500."""
    long = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno >= 80:
                long.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {node.name}")
    assert not long, long
    assert len((PACKAGE / "run" / "controller.py").read_text().splitlines()) <= 500
