"""No import cycle among fairpca's modules, counting imports inside functions.

And no import of a fairpca module inside a function (issue 40): those go at the
module's top; only optional dependencies (pandas, matplotlib, ...) are imported late.
"""

import ast
from pathlib import Path

import fairpca

PACKAGE = Path(fairpca.__file__).resolve().parent


def _modules():
    """Module name -> path, for every module of the package."""
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        parts = ["fairpca", *path.relative_to(PACKAGE).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def _from_module(node, base):
    """The absolute module of a ``from ... import`` node; ``base`` is its package's path."""
    if not node.level:
        return node.module or ""
    stem = base[: len(base) - node.level + 1]
    return ".".join(stem + ([node.module] if node.module else []))


def _imported(tree, name, is_package, modules):
    """The package's modules that ``tree`` imports anywhere (under TYPE_CHECKING too).

    An import for type annotations only is still a dependency of the module's
    meaning: a cycle through one means the shared type sits at the wrong level.
    """
    base = name.split(".") if is_package else name.split(".")[:-1]
    targets = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = _from_module(node, base)
            for alias in node.names:
                # ``from package import name`` reads the package's namespace: an
                # edge to the package itself, and to the submodule if it is one.
                targets.add(module)
                full = f"{module}.{alias.name}"
                if full in modules:
                    targets.add(full)
    return {t for t in targets if t in modules and t != name}


def import_graph():
    modules = _modules()
    return {
        name: _imported(ast.parse(path.read_text()), name, path.name == "__init__.py", modules)
        for name, path in modules.items()
    }


def find_cycle(graph):
    """One cycle of ``graph`` as a list of nodes, or None."""
    state, stack = {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state:
                cycle = visit(nxt)
                if cycle:
                    return cycle
        state[node] = "done"
        stack.pop()
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node)
            if cycle:
                return cycle
    return None


def test_no_import_cycle_among_the_package_modules():
    graph = import_graph()
    assert len(graph) > 40 and "fairpca.compare" in graph
    cycle = find_cycle(graph)
    assert cycle is None, " -> ".join(cycle)


def test_the_cycle_finder_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


# Function-level imports of fairpca modules that are allowed, as (file relative to
# the package, imported module), each with a comment saying why. Keep it empty
# but for a stated reason.
#: (module, imported module) pairs allowed inside a function: none today.
DEFERRED_ALLOWED: set[tuple[str, str]] = set()


def function_level_imports(tree, name, is_package):
    """``(line, module)`` of every import of a fairpca module inside a function of ``tree``."""
    base = name.split(".") if is_package else name.split(".")[:-1]
    found = set()
    for func in ast.walk(tree):
        if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(func):
            if isinstance(node, ast.Import):
                found.update(
                    (node.lineno, alias.name)
                    for alias in node.names
                    if alias.name.split(".")[0] == "fairpca"
                )
            elif isinstance(node, ast.ImportFrom):
                module = _from_module(node, base)
                if module.split(".")[0] == "fairpca":
                    found.add((node.lineno, module))
    return sorted(found)


def test_no_fairpca_import_inside_a_function():
    found = []
    for name, path in sorted(_modules().items()):
        tree = ast.parse(path.read_text())
        relative = path.relative_to(PACKAGE).as_posix()
        for line, module in function_level_imports(tree, name, path.name == "__init__.py"):
            if (relative, module) not in DEFERRED_ALLOWED:
                found.append(f"{relative}:{line} imports {module} inside a function")
    assert not found, "move to the module's top (issue 40):\n" + "\n".join(found)


def test_the_scan_finds_function_level_imports():
    code = (
        "from fairpca import metrics\n"
        "def f():\n"
        "    import pandas\n"
        "    from . import _x\n"
        "    def g():\n"
        "        import fairpca.plotting\n"
        "class C:\n"
        "    def m(self):\n"
        "        from fairpca.metrics import report\n"
    )
    found = function_level_imports(ast.parse(code), "fairpca.sub.mod", False)
    assert found == [
        (4, "fairpca.sub"),
        (6, "fairpca.plotting"),
        (9, "fairpca.metrics"),
    ]
