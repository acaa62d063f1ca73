"""Loading a student's cell into a fresh ``labkit_cell_*`` module, the one way both processes
that load cells share (:func:`_loaded`: one module per cell content, kept by a cache; the
failure messages), with what each process must guarantee kept apart:

* :func:`_strict`, in the trusted worker (:mod:`labkit.check.worker`): nothing of the student's
  runs — :func:`labkit.check.strict.load` evaluates only imports of installed packages, ``def``
  with numba's decorators and constants, and the compiled code's escape hatches are guarded
  (:func:`labkit.check.hatches.uncache`).
* :func:`_load`, only in the child process C that runs a plain-Python student
  (:mod:`labkit.check.child`): the cell's definitions (:func:`labkit.check.loader.definitions`:
  classes and any decorator included) executed.

Both keep the same statements' line numbers and name the dropped ones the same way
(:mod:`labkit.check.loader`); :func:`missing_message` and :func:`redefined_note` say why the
function asked for is not what the cell gave.
"""
from __future__ import annotations

import hashlib
import marshal
import os
import sys
import tempfile
import types


class _NotLoaded(Exception):
    """A cell that does not load; its message is the check's."""


def _cell_file(source: str) -> str:
    """A private file holding ``source`` (named by its hash), for tracebacks and numba."""
    d = os.path.join(tempfile.gettempdir(), f"labkit-cells-{os.getuid()}")
    os.makedirs(d, mode=0o700, exist_ok=True)
    path = os.path.join(d, "cell_" + hashlib.sha256(source.encode()).hexdigest()[:16] + ".py")
    if not os.path.exists(path):
        tmp = path + f".{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(source)
        os.replace(tmp, path)
    return path


def _cell_key(req: dict) -> str:
    """The cache key of a request's cell: its source, imports, constants and file name."""
    return hashlib.sha256(marshal.dumps((req.get("source") or "", req.get("imports") or "",
                                         sorted((req.get("constants") or {}).items()),
                                         req.get("filename") or ""))).hexdigest()


def _cell_module(req: dict, source: str) -> tuple[dict, str]:
    """A fresh ``labkit_cell_*`` module for the cell (registered: numba's cache and pickling
    look modules up by name) and the file name its code is compiled with."""
    import builtins
    import linecache
    filename = req.get("filename") or ""
    if not filename or not os.path.exists(filename):
        filename = _cell_file(source)
    else:
        with open(filename, encoding="utf-8") as f:
            if f.read() != source:
                filename = _cell_file(source)
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    modname = "labkit_cell_" + os.path.basename(filename).rsplit(".", 1)[0].replace("-", "_")
    modname = "".join(c if c.isalnum() or c == "_" else "_" for c in modname)
    module = types.ModuleType(modname)
    module.__file__ = filename
    sys.modules[modname] = module
    ns = vars(module)
    ns["__builtins__"] = builtins
    return ns, filename


def _parse_error(e: SyntaxError) -> str:
    """The message of a cell that does not parse."""
    return f"the cell does not parse: {e.msg} (line {e.lineno})"


def _raised(e: Exception) -> str:
    """The message of a cell whose loading raised ``e`` (its first line)."""
    text = str(e).strip().splitlines()[0] if str(e).strip() else ""
    return f"loading your cell raised {type(e).__name__}: {text}".rstrip(": ")


def _loaded(req: dict, cache: dict, fill) -> tuple[dict | None, list, str | None]:
    """(namespace or None, dropped statements, error text or None): the cell of ``req`` loaded
    by ``fill(req, source)`` → ``(namespace, dropped)`` once per content (:func:`_cell_key`;
    a cell that fails to load is not kept)."""
    key = _cell_key(req)
    hit = cache.get(key)
    if hit is not None:
        return hit[0], hit[1], None
    try:
        ns, dropped = fill(req, req.get("source") or "")
    except _NotLoaded as e:
        return None, [], str(e)
    cache[key] = (ns, dropped)
    return ns, dropped, None


def _strictly(req: dict, source: str) -> tuple[dict, list]:
    """The cell loaded with no student code run (:func:`labkit.check.strict.load`), its compiled
    functions kept off numba's disk cache."""
    from labkit.check import hatches, strict
    ns, filename = _cell_module(req, source)
    ns.update(req.get("constants") or {})
    try:
        dropped = strict.load(source, ns, filename, req.get("imports") or "")
    except SyntaxError as e:
        raise _NotLoaded(_parse_error(e)) from None
    except Exception as e:  # noqa: BLE001 - e.g. a NameError of the cell's own constants
        raise _NotLoaded(_raised(e)) from None
    hatches.uncache(ns)
    return ns, dropped


def _permissively(req: dict, source: str) -> tuple[dict, list]:
    """The cell's definitions (:func:`labkit.check.loader.definitions`) executed after the
    earlier cells' imports (each on its own: one that fails is skipped) and the constants."""
    from labkit.check.loader import definitions, import_statements
    try:
        kept, dropped = definitions(source)
    except SyntaxError as e:
        raise _NotLoaded(_parse_error(e)) from None
    ns, filename = _cell_module(req, source)
    for stmt in import_statements(req.get("imports") or ""):
        try:
            exec(compile(stmt, "<imports>", "exec"), ns)
        except Exception:  # noqa: BLE001 - an earlier cell's import that fails here
            pass
    ns.update(req.get("constants") or {})
    try:
        exec(compile(kept, filename, "exec"), ns)
    except Exception as e:  # noqa: BLE001 - the student's definitions may raise
        raise _NotLoaded(_raised(e)) from None
    return ns, dropped


def _strict(req: dict, cache: dict):
    """(namespace or None, dropped statements, error text or None): the cell loaded with no
    student code run (:mod:`labkit.check.strict`)."""
    return _loaded(req, cache, _strictly)


def _load(req: dict, cache: dict):
    """The permissive load, run only in the child process C (:mod:`labkit.check.child`): the
    cell's definitions (:func:`labkit.check.loader.definitions`: classes and any decorator
    included) executed. ``(function or None, message notes, error text or None)``."""
    ns, dropped, err = _loaded(req, cache, _permissively)
    notes = []
    if err is not None:
        return None, notes, err
    if dropped and req.get("cell", True):     # a .py module's other statements are no news
        notes.append(_dropped_note(dropped))
    name = req.get("name_fn") or ""
    if name not in ns:
        return None, notes, missing_message(req.get("source") or "", name)
    return ns[name], notes, None


def _assignments(source: str, name: str):
    """(kind, line) of each top-level statement of ``source`` that binds ``name``: ``"def"``,
    ``"lambda"`` or ``"value"`` (any other assignment)."""
    import ast
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    out = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            out.append(("def", node.lineno))
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                kind = "lambda" if isinstance(node.value, ast.Lambda) else "value"
                out.append((kind, node.lineno))
    return out


def missing_message(source: str, name: str) -> str:
    """Why the cell's definitions do not give ``name``: a lambda, a value built by code, or no
    definition at all — each in its own words."""
    who = name or "your function"
    binds = _assignments(source, name) if name else []
    kinds = {k for k, _ in binds}
    if "lambda" in kinds:
        line = next(ln for k, ln in binds if k == "lambda")
        return (f"{who} is a lambda (line {line}): the check loads functions written with def — "
                f"write `def {who}(…):` (with @njit where the exercise compiles it)")
    if "value" in kinds:
        line = next(ln for k, ln in binds if k == "value")
        return (f"{who} is assigned by code (line {line}), which the check does not run — "
                f"define it with `def {who}(…):` in the exercise cell")
    return (f"{who} is not defined by the cell's definitions (the check loads only its imports, "
            "functions and constants)")


def redefined_note(source: str, name: str) -> str:
    """A note when ``name`` is defined more than once in the cell (the last one is judged)."""
    lines = [ln for k, ln in _assignments(source, name) if k == "def"] if name else []
    if len(lines) < 2:
        return ""
    return (f"{name} is defined {len(lines)} times in this cell (lines "
            f"{', '.join(map(str, lines))}): the check judges the last one, line {lines[-1]}, "
            "as Python does — delete the others")


def _dropped_note(dropped: list) -> str:
    """The message's note naming the statements the check did not run (the first three)."""
    shown = "; ".join(dropped[:3]) + (f" and {len(dropped) - 3} more" if len(dropped) > 3 else "")
    return (f"not run by the check (only imports, functions and constants are loaded): "
            f"{shown}")
