"""What of a notebook cell the trusted worker loads, and how the notebook side collects it.

:func:`definitions` keeps a cell's imports, ``def``/``class`` statements and assignments of
constants (numbers, strings, tuples …, names and attribute chains such as
``my_transpose = A.transpose_batch``, and ``njit(...)``-style wrapping); every other top-level
statement is dropped and named in the check's message. :func:`collect` finds, for a function
given to ``check.<name>(fn)``, the source of the cell that defined it (IPython keeps cell
sources in :mod:`linecache`), the import statements of earlier cells (IPython's ``In``), and the
plain-data globals it reads that the cell does not define (e.g. ``best_tile``).

The text-level helpers (:func:`import_statements`, :func:`describe_dropped`,
:func:`is_check_call`) are shared with the strict loader (:mod:`labkit.check.strict`), which
keeps fewer statements and evaluates them without running student code.
"""
from __future__ import annotations

import ast
import builtins
import inspect
import linecache
import os
import sys
import textwrap
import types

__all__ = ["definitions", "imports_only", "import_statements", "helper_defs", "collect"]

_WRAPPERS = {"njit", "jit", "vectorize", "guvectorize", "stencil", "generated_jit", "cfunc",
             "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
             "float32", "float64", "complex128", "bool_", "dtype", "partial"}


def _safe_value(node) -> bool:
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return all(_safe_value(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return all(k is None or _safe_value(k) for k in node.keys) and \
            all(_safe_value(v) for v in node.values)
    if isinstance(node, ast.UnaryOp):
        return _safe_value(node.operand)
    if isinstance(node, ast.BinOp):
        return _safe_value(node.left) and _safe_value(node.right)
    if isinstance(node, ast.Name):
        return True
    if isinstance(node, ast.Attribute):
        return _safe_value(node.value) if not isinstance(node.value, ast.Name) else True
    if isinstance(node, ast.Call):
        f = node.func
        fname = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
        inner = isinstance(f, ast.Call) and _safe_value(f)     # njit(fastmath=True)(fn)
        return (fname in _WRAPPERS or inner) and all(_safe_value(a) for a in node.args) and \
            all(_safe_value(k.value) for k in node.keywords)
    return False


def is_check_call(node) -> bool:
    """True when the statement ``node`` uses ``check.<something>`` (the check call itself)."""
    return any(isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
               and n.value.id == "check" for n in ast.walk(node))


def describe_dropped(node, lines: list[str]) -> str:
    """How a check's message names a dropped statement: ``line N `its first line…``` (from its
    first decorator; ``lines``: the source's lines)."""
    start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
    text = " ".join(lines[start - 1].split()) if start - 1 < len(lines) else ""
    return f"line {start} `{text[:40]}{'…' * (len(text) > 40)}`"


def import_statements(imports: str) -> list[ast.Module]:
    """Each top-level import statement of ``imports`` (earlier cells' imports) as a module of
    its own, so that one failing import skips only itself; none when it does not parse."""
    try:
        tree = ast.parse(imports or "")
    except SyntaxError:
        return []
    return [ast.Module(body=[n], type_ignores=[]) for n in tree.body
            if isinstance(n, (ast.Import, ast.ImportFrom))]


def definitions(source: str) -> tuple[str, list[str]]:
    """``(source of the kept statements, [descriptions of the dropped ones])``.

    Line numbers are kept (dropped statements become blank lines), so tracebacks and numba's
    messages point at the student's own lines."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    keep = [False] * len(lines)
    dropped = []
    for node in tree.body:
        ok = isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef,
                               ast.ClassDef))
        if isinstance(node, ast.Assign):
            ok = all(isinstance(t, (ast.Name, ast.Tuple)) for t in node.targets) and \
                _safe_value(node.value)
        elif isinstance(node, ast.AnnAssign):
            ok = isinstance(node.target, ast.Name) and (node.value is None or _safe_value(node.value))
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            ok = True    # a docstring / bare string
        elif is_check_call(node):
            continue     # the check call itself (`check.x(fn)`, `print(check.x(fn))`): not news
        start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])]) - 1
        if ok:
            for i in range(start, node.end_lineno):
                keep[i] = True
        else:
            dropped.append(describe_dropped(node, lines))
    out = "".join(ln if k else "\n" for ln, k in zip(lines, keep))
    return out, dropped


def imports_only(source: str) -> str:
    """The top-level import statements of ``source`` (cells that do not parse give nothing)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return ""
    lines = source.splitlines(keepends=True)
    out = []
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out.append("".join(lines[node.lineno - 1: node.end_lineno]))
    return "".join(s if s.endswith("\n") else s + "\n" for s in out)


# ---------------------------------------------------------------- notebook side
def _ipython():
    ip_mod = sys.modules.get("IPython")
    if ip_mod is None:
        return None
    try:
        return ip_mod.get_ipython()
    except Exception:  # noqa: BLE001
        return None


def _is_cell_file(filename: str) -> bool:
    base = os.path.basename(filename)
    return (filename.startswith("<ipython-input") or "ipykernel_" in filename
            or (base[:-3].isdigit() and base.endswith(".py") and not os.path.exists(filename))
            or filename.startswith("<cell"))


def _earlier_cells() -> list[str]:
    """The Python source of the cells run before this one (IPython's input history)."""
    ip = _ipython()
    if ip is None:
        return []
    hist = ip.user_ns.get("In") or ip.user_ns.get("_ih") or []
    out = []
    for src in hist[:-1] if hist else []:
        try:
            out.append(ip.transform_cell(src))
        except Exception:  # noqa: BLE001 - a cell IPython cannot transform
            out.append(src)
    return out


def _earlier_imports() -> str:
    return "".join(imports_only(py) for py in _earlier_cells())


_PLAIN = (int, float, complex, str, bool, type(None), bytes)


def _plain(v, depth=0) -> bool:
    if isinstance(v, _PLAIN):
        return True
    if isinstance(v, (tuple, list)) and depth < 3 and len(v) <= 1000:
        return all(_plain(x, depth + 1) for x in v)
    if isinstance(v, dict) and depth < 3 and len(v) <= 1000:
        return all(_plain(k, depth + 1) and _plain(x, depth + 1) for k, x in v.items())
    return False


def _to_plain(v):
    try:
        import numpy as np
        if isinstance(v, np.generic):
            return v.item()
    except ImportError:  # pragma: no cover
        pass
    return v


def _code_names(code: types.CodeType, acc: set) -> set:
    acc.update(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            _code_names(c, acc)
    return acc


def _defined_names(source: str) -> set:
    out = set()
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return out
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for a in node.names:
                out.add((a.asname or a.name).split(".")[0])
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                for n in ast.walk(t):
                    if isinstance(n, ast.Name):
                        out.add(n.id)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out.add(node.target.id)
    return out


def reads(source: str) -> set[str]:
    """The names a Python source reads (loads); empty when it does not parse."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def helper_defs(sources, cell_source: str, imports: str = "") -> str:
    """The top-level ``def``s of other cells (``sources``: Python source in notebook order; the
    last binding of a name wins, as in the notebook) that the exercise cell reads and neither
    defines nor imports, with the ``def``s those read in turn — so a helper the student wrote
    in an earlier cell travels with the exercise cell. They are appended to it (the cell's own
    line numbers stay) and loaded under the same rules as the cell's own definitions."""
    defs: dict[str, tuple[tuple[int, int], str]] = {}   # name -> ((cell, line), text)
    for k, src in enumerate(sources):
        try:
            tree = ast.parse(src)
        except SyntaxError:
            continue
        lines = src.splitlines(keepends=True)
        for node in tree.body:
            if isinstance(node, ast.FunctionDef):
                start = min([node.lineno] + [d.lineno for d in node.decorator_list]) - 1
                defs[node.name] = ((k, node.lineno), "".join(lines[start:node.end_lineno]))
            else:       # a later import or assignment of the name shadows an earlier def
                for n in _defined_names(ast.unparse(node)):
                    defs.pop(n, None)
    have = _defined_names(cell_source) | _defined_names(imports)
    want, taken = reads(cell_source) - have, {}
    while want:
        n = want.pop()
        if n in taken or n not in defs:
            continue
        taken[n] = defs[n]
        want |= reads(defs[n][1]) - have - set(taken)
    return "".join("\n\n" + text.rstrip("\n") + "\n" for _, text in sorted(taken.values()))


def _imports_from_globals(code, glb: dict, defined: set) -> str:
    """Import statements for the modules and importable functions/classes ``code`` reads from
    its globals that neither the cell nor the earlier imports define (a kernel without input
    history, e.g. nbval's, still gets ``np``, ``njit``, ``A``)."""
    import importlib
    out = []
    for n in sorted(_code_names(code, set())):
        if n in defined or n not in glb or hasattr(builtins, n):
            continue
        v = glb[n]
        if isinstance(v, types.ModuleType):
            out.append(f"import {v.__name__} as {n}\n" if v.__name__ != n else f"import {n}\n")
            continue
        mod, name = getattr(v, "__module__", None), getattr(v, "__name__", None)
        if not (isinstance(mod, str) and isinstance(name, str)) or mod.startswith("__"):
            continue
        try:
            if getattr(importlib.import_module(mod), name) is not v:
                continue
        except Exception:  # noqa: BLE001 - not importable by name: leave it
            continue
        out.append(f"from {mod} import {name} as {n}\n" if name != n else f"from {mod} import {n}\n")
    return "".join(out)


def collect(fn) -> dict:
    """Everything the worker needs to rebuild ``fn``: ``source``, ``imports``, ``name``,
    ``constants`` (or ``ref`` for a function defined inside labkit)."""
    target = getattr(fn, "py_func", fn)
    if isinstance(target, types.MethodType):
        target = target.__func__
    code = getattr(target, "__code__", None)
    mod = getattr(target, "__module__", "") or ""
    if code is None:
        raise TypeError(f"check needs a function defined with def (got a "
                        f"{type(fn).__name__}); wrap other callables in a def")
    if mod == "labkit" or mod.startswith("labkit."):
        return {"ref": f"{mod}:{target.__qualname__}", "name": target.__name__}
    filename = code.co_filename
    glb = getattr(target, "__globals__", {})
    name = next((k for k, v in glb.items() if v is fn and not k.startswith("_")
                 and k.isidentifier()), None) or next(
        (k for k, v in glb.items() if v is fn and k.isidentifier()), target.__name__)
    helpers = ""
    if _is_cell_file(filename):
        source = "".join(linecache.getlines(filename))
        imports = _earlier_imports()
        helpers = helper_defs(_earlier_cells(), source, imports)
        source = source.rstrip("\n") + "\n" + helpers if helpers else source
    else:
        try:
            with open(filename, encoding="utf-8") as f:
                source = f.read()
        except OSError:
            source = "".join(linecache.getlines(filename))
        imports = ""
        if "<locals>" in target.__qualname__ or name not in _defined_names(source):
            try:
                own = textwrap.dedent(inspect.getsource(target))
            except (OSError, TypeError):
                own = ""
            if own:
                source = source.rstrip("\n") + "\n\n" + own
                if name != target.__name__:
                    source += f"\n{name} = {target.__name__}\n"
    if not source.strip():
        raise TypeError(f"cannot find the source of {target.__name__} (defined in {filename}); "
                        "define it with def in a notebook cell or a .py file")
    defined = _defined_names(source) | _defined_names(imports)
    try:
        cell_code = compile(definitions(source)[0], filename, "exec")
    except SyntaxError:
        cell_code = None
    imports += _imports_from_globals(cell_code or code, glb, defined)
    defined |= _defined_names(imports)
    constants = {}
    for n in _code_names(code, set()) | reads(helpers):
        if n in defined or hasattr(builtins, n) or n not in glb:
            continue
        v = _to_plain(glb[n])
        if _plain(v):
            constants[n] = v
    return {"source": source, "imports": imports, "name": name, "constants": constants,
            "filename": filename, "cell": _is_cell_file(filename)}
