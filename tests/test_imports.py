"""The import graph of ``labkit``: module-level imports form a DAG, the packages form layers (no
package cycle, imports inside functions included), and tools never import a lab.

Labs (the modules the registry lists, and their submodules) may import tools; tools — every other
module — reach a lab only through ``labkit.registry`` (importlib at run time), never by an import
statement, at any level. Imports inside functions are lazy and may not close a cycle at import time,
so the module-level cycle check reads module-level statements only (including those under
``if``/``try``); the layering checks read every import statement, lazy ones included (only those
under ``if TYPE_CHECKING:`` left out): a package (``labkit.X/``, or a top-level module
``labkit/Y.py``) never reaches back to itself through another, and inside a package the modules
that were untangled stay so.
"""
from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

from labkit import registry

PKG = Path(__file__).resolve().parent.parent / "labkit"


def _modules() -> dict[str, Path]:
    mods = {}
    for p in sorted(PKG.rglob("*.py")):
        if "__pycache__" in p.parts:
            continue
        rel = p.relative_to(PKG.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods[".".join(parts)] = p
    return mods


MODULES = _modules()


def _is_package(mod: str) -> bool:
    return MODULES.get(mod, Path()).name == "__init__.py"


def _resolve(mod: str, node: ast.AST) -> list[str]:
    """The labkit modules an import statement in ``mod`` names."""
    out = []
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
        for n in names:
            if n == "labkit" or n.startswith("labkit."):
                out.append(n)
        return [n for n in out if n in MODULES]
    assert isinstance(node, ast.ImportFrom)
    if node.level:
        base = mod.split(".") if _is_package(mod) else mod.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        target = ".".join(base + ([node.module] if node.module else []))
    else:
        target = node.module or ""
    if not (target == "labkit" or target.startswith("labkit.")):
        return []
    for a in node.names:
        sub = f"{target}.{a.name}"
        out.append(sub if sub in MODULES else target)
    return [n for n in out if n in MODULES]


def _module_level(tree: ast.Module):
    """Import statements executed when the module is imported (not those inside def/class)."""
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        else:
            stack.extend(ast.iter_child_nodes(node))


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _all_imports(tree: ast.AST, typing_only: bool = True):
    """Every import statement, inside functions too; ``typing_only=False`` leaves out those under
    ``if TYPE_CHECKING:`` (never executed)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif not typing_only and isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
        else:
            stack.extend(ast.iter_child_nodes(node))


@functools.lru_cache(maxsize=None)
def _parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), str(path))


@functools.lru_cache(maxsize=None)
def _graph(level_only: bool, typing_only: bool = True) -> dict[str, set[str]]:
    """mod → the labkit modules its import statements run (read-only: the result is shared)."""
    g: dict[str, set[str]] = {}
    for mod, path in MODULES.items():
        tree = _parse(path)
        nodes = _module_level(tree) if level_only else _all_imports(tree, typing_only)
        edges = set()
        for node in nodes:
            for t in _resolve(mod, node):
                edges.add(t)
                # importing a.b.c first runs a.b (unless it is mod's own ancestor, already running)
                parts = t.split(".")
                for k in range(2, len(parts)):
                    parent = ".".join(parts[:k])
                    if parent in MODULES and not (mod == parent or mod.startswith(parent + ".")):
                        edges.add(parent)
        edges.discard(mod)
        g[mod] = edges
    return g


def _is_lab(mod: str) -> bool:
    return any(mod == m or mod.startswith(m + ".") for m in registry.modules())


def test_every_registry_lab_is_a_package():
    for lab in registry.LABS:
        assert _is_package(lab.module), f"{lab.module} must be a package (labkit/{lab.name}/)"


def test_module_level_imports_form_a_dag():
    g = _graph(level_only=True)
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(m):
        state[m] = 1
        path.append(m)
        for t in sorted(g.get(m, ())):
            if state.get(t) == 1:
                cyc = path[path.index(t):] + [t]
                pytest.fail("import cycle at module level: " + " → ".join(cyc))
            if t not in state:
                visit(t)
        path.pop()
        state[m] = 2

    for m in sorted(g):
        if m not in state:
            visit(m)


def _package(mod: str) -> str:
    """The layer a module belongs to: its subpackage ``labkit.X`` or its top-level module."""
    return ".".join(mod.split(".")[:2])


def _sccs(g: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan, iterative), each sorted,
    in sorted order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    for root in sorted(g):
        if root in index:
            continue
        work = [(root, iter(sorted(g.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(g.get(w, ())))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return sorted(out)


def _a_cycle(g: dict[str, set[str]], comp: list[str]) -> list[str]:
    """One cycle through the first node of a strongly connected component (a shortest one)."""
    inside, start = set(comp), comp[0]
    prev: dict[str, str] = {}
    todo = [start]
    while todo:
        nxt = []
        for v in todo:
            for w in sorted(g.get(v, set()) & inside):
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(prev[path[-1]])
                    return path[::-1] + [start]
                if w not in prev:
                    prev[w] = v
                    nxt.append(w)
        todo = nxt
    return comp  # pragma: no cover - a component always has a cycle


def _package_graph() -> dict[str, set[str]]:
    g: dict[str, set[str]] = {}
    for m, ts in _graph(level_only=False, typing_only=False).items():
        g.setdefault(_package(m), set()).update(
            _package(t) for t in ts if _package(t) != _package(m))
    return g


def _why(g_mod: dict[str, set[str]], a: str, b: str) -> str:
    """The module imports behind the package edge a → b."""
    return ", ".join(f"{m} → {t}" for m in sorted(g_mod) if _package(m) == a
                     for t in sorted(g_mod[m]) if _package(t) == b)


def test_packages_form_layers_lazy_imports_included():
    """No cycle between packages (``labkit.bench``, ``labkit.hardware``, …; a top-level module
    such as ``labkit.jit`` counts as one), imports inside functions included: the timing core
    (``labkit.timing``) lies below hardware and bench, loop analysis is inspect's, hints never
    import check, and ``labkit.target`` lies below ``labkit.jit`` and ``labkit.hardware``."""
    g, g_mod = _package_graph(), _graph(level_only=False, typing_only=False)
    cycles = []
    for comp in _sccs(g):
        cyc = _a_cycle(g, comp)
        cycles.append(" → ".join(cyc) + "  (" + "; ".join(
            f"{a} → {b}: {_why(g_mod, a, b)}" for a, b in zip(cyc, cyc[1:])) + ")")
    assert not cycles, "package import cycles, lazy imports included:\n" + "\n".join(cycles)


#: Module cycles inside one package (lazy imports included) that are still to be untangled: a
#: cycle found must lie within one of these — they may shrink or go, never grow, and no new one
#: may appear. A lab's public face (its ``__init__``) and its ``bench`` reach each other lazily.
KNOWN_MODULE_CYCLES = (
    {"labkit.check.executed", "labkit.check.framework", "labkit.check.guard",
     "labkit.check.hatches", "labkit.check.inputs", "labkit.check.proxy", "labkit.check.runner"},
    {"labkit.bench.measure", "labkit.bench.results", "labkit.bench.uarch"},
    {"labkit.grade.cli", "labkit.grade.cluster", "labkit.grade.course", "labkit.grade.gradescope",
     "labkit.grade.gsexport", "labkit.grade.pages", "labkit.grade.shard"},
    {"labkit.lesson00", "labkit.lesson00.bench"},
    {"labkit.pcc", "labkit.pcc.bench"},
)

#: modules untangled by moving what both needed below them (grade.cells: a cell's Python source
#: and the names it defines; pcc._layout: the rows' layout constants and their moments)
UNTANGLED = ("labkit.grade.build", "labkit.grade.notebooks", "labkit.grade.cells",
             "labkit.pcc.engine", "labkit.pcc._panels", "labkit.pcc._layout",
             "labkit.timing.timer", "labkit.timing.formatting", "labkit.inspect.loops",
             "labkit.inspect.ir", "labkit.hints", "labkit.target", "labkit.jit")


def test_no_new_module_cycle_lazy_imports_included():
    g = _graph(level_only=False, typing_only=False)
    new = [" → ".join(_a_cycle(g, comp)) for comp in _sccs(g)
           if not any(set(comp) <= known for known in KNOWN_MODULE_CYCLES)]
    assert not new, "module import cycles, lazy imports included:\n" + "\n".join(new)


@pytest.mark.parametrize("mod", UNTANGLED)
def test_untangled_modules_are_on_no_cycle(mod):
    assert mod in MODULES, f"{mod} no longer exists: update UNTANGLED"
    g = _graph(level_only=False, typing_only=False)
    comp = next((c for c in _sccs(g) if mod in c), None)
    assert comp is None, f"{mod} is on an import cycle: " + " → ".join(
        _a_cycle(g, [mod] + [m for m in comp if m != mod]))


def test_the_cycle_finder_finds_cycles():
    g = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e2"}, "e2": {"e"}}
    assert _sccs(g) == [["a", "b", "c"], ["e", "e2"]]
    assert _a_cycle(g, ["a", "b", "c"]) == ["a", "b", "c", "a"]
    assert _sccs({"a": {"b"}, "b": set()}) == []


def test_the_lazy_graph_reader_sees_function_level_edges():
    # a guard that lazy imports are read at all: labkit.bench.results imports hardware's clock
    # inside a method, and labkit.jit reads the target inside functions
    g = _graph(level_only=False, typing_only=False)
    assert "labkit.hardware.clock" in g["labkit.bench.results"]
    assert "labkit.target" in g["labkit.jit"]
    assert "labkit.hardware.clock" not in _graph(level_only=True)["labkit.bench.results"]


def test_tools_never_import_a_lab():
    g = _graph(level_only=False)
    upward = sorted(f"{m} → {t}" for m, ts in g.items() if not _is_lab(m)
                    for t in ts if _is_lab(t))
    assert not upward, ("tool modules import labs (use labkit.registry instead): "
                        + "; ".join(upward))


def test_no_lab_imports_another_lab():
    g = _graph(level_only=False)
    def lab_of(m):
        return next(x for x in registry.modules() if m == x or m.startswith(x + "."))
    across = sorted(f"{m} → {t}" for m, ts in g.items() if _is_lab(m)
                    for t in ts if _is_lab(t) and lab_of(t) != lab_of(m))
    assert not across, "labs import each other: " + "; ".join(across)


def test_the_graph_reader_sees_real_edges():
    # a guard that the resolver works at all: the lab packages import their own kernels
    g = _graph(level_only=True)
    for lab in registry.LABS:
        assert f"{lab.module}.kernels" in g[lab.module], g[lab.module]


def _has_cached_kernel(path: Path) -> bool:
    """A decorator call with ``cache=True`` at module level (a kernel numba caches on disk)."""
    tree = ast.parse(path.read_text(), str(path))
    return any(isinstance(n, ast.keyword) and n.arg == "cache" and
               isinstance(n.value, ast.Constant) and n.value.value is True
               for node in tree.body for n in ast.walk(node)
               if not isinstance(node, (ast.Import, ast.ImportFrom)))


def test_every_cached_kernel_gets_the_sources_digest_key():
    """A module with ``cache=True`` kernels imports ``labkit.jit`` (which puts the digest of the
    package's sources into numba's cache key) at import time, through itself or its packages —
    else a callee changed in another file could load stale machine code (``labkit.jit``)."""
    g, lazy = _graph(level_only=True), _graph(level_only=False)
    missing = []
    for mod, path in MODULES.items():
        if mod == "labkit.jit" or not _has_cached_kernel(path):
            continue
        parts = mod.split(".")
        # its packages and itself run first; a kernel jitted inside a function may import it there
        todo = [".".join(parts[:k]) for k in range(1, len(parts) + 1)] + sorted(lazy[mod])
        seen: set[str] = set()
        while todo:
            m = todo.pop()
            if m not in seen and m in MODULES:
                seen.add(m)
                todo.extend(g.get(m, ()))
        if "labkit.jit" not in seen:
            missing.append(mod)
    assert not missing, f"import labkit.jit in these modules (numba's cache key): {missing}"
