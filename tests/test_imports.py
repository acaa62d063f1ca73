"""The import graph of ``labkit``: module-level imports form a DAG, and tools never import a lab.

Labs (the modules the registry lists, and their submodules) may import tools; tools — every other
module — reach a lab only through ``labkit.registry`` (importlib at run time), never by an import
statement, at any level. Imports inside functions are lazy and may not close a cycle at import time,
so the cycle check reads module-level statements only (including those under ``if``/``try``).
"""
from __future__ import annotations

import ast
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


def _graph(level_only: bool) -> dict[str, set[str]]:
    g: dict[str, set[str]] = {}
    for mod, path in MODULES.items():
        tree = ast.parse(path.read_text(), str(path))
        nodes = _module_level(tree) if level_only else (
            n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)))
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
