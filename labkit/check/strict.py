"""Loading a cell in the trusted worker without running any of the student's Python.

:func:`load` executes a cell's top-level statements one by one into a namespace, keeping only
what evaluates without calling student code:

* imports of modules found outside the submission (the standard library, site-packages,
  labkit: a module in the working directory or on another path is not imported);
* ``def`` statements whose decorators are numba's jit family (``njit``, ``jit``,
  ``vectorize``, ``guvectorize``, ``stencil``, ``labkit.jit.njit``; not ``cfunc``, compiled
  outside the dispatcher's checks) called with literal arguments or numba types, whose default values are literals or names, with annotations stripped;
* assignments of literals, names, attribute chains and calls of those same decorators (or of
  numba types, numpy's scalar types and ``np.dtype``) on literals and names — not arrays
  (``np.array(...)`` is dropped, as before: define tables inside the function).

Class bodies, other decorators, lambdas and every other statement are dropped and named in the
check's message. The expressions are evaluated here by a small interpreter (:func:`_eval`),
never by ``exec``, so no ``__getattr__``, ``__index__`` or decorator of the student's runs:
the namespace holds only library objects, literals and the student's (uncalled) functions.

The worker calls it through :func:`labkit.check.cells._strict`, the strict side of the one cell
loader; the earlier cells' imports one by one and the names of the dropped statements are
:mod:`labkit.check.loader`'s, as for the permissive side.
"""
from __future__ import annotations

import ast
import builtins
import copy
import importlib
import importlib.util
import operator
import os
import site
import sys
import sysconfig

from .loader import describe_dropped, import_statements, is_check_call

__all__ = ["load", "module_allowed", "Refused"]


class Refused(Exception):
    """A statement whose evaluation could run student code (dropped)."""


_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
           ast.Pow: operator.pow, ast.LShift: operator.lshift, ast.RShift: operator.rshift,
           ast.BitOr: operator.or_, ast.BitAnd: operator.and_, ast.BitXor: operator.xor}
_UNOPS = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_,
          ast.Invert: operator.invert}


def _allowed_callables() -> dict[int, str]:
    out = {}
    import functools

    import numpy as np
    out[id(functools.partial)] = "partial"
    out[id(np.dtype)] = "numpy.dtype"      # arrays are not constants (as before: a NameError)
    try:
        import numba
        for name in ("njit", "jit", "vectorize", "guvectorize", "stencil"):   # not cfunc
            if hasattr(numba, name):
                out[id(getattr(numba, name))] = f"numba.{name}"
        from labkit import jit as lk_jit
        out[id(lk_jit.njit)] = "labkit.jit.njit"
    except ImportError:  # pragma: no cover - numba is a dependency
        pass
    return out


_ALLOWED: dict[int, str] = {}


def _callable_ok(f) -> bool:
    if not _ALLOWED:
        _ALLOWED.update(_allowed_callables())
    if id(f) in _ALLOWED:
        return True
    import numpy as np
    if isinstance(f, type) and issubclass(f, np.generic):
        return True                                  # np.float64(1e-9), np.int64(3)
    try:
        from numba.core import types as nt
    except ImportError:  # pragma: no cover
        return False
    return isinstance(f, nt.Type) or (isinstance(f, type) and issubclass(f, nt.Type))


_PRIMITIVE = (int, float, complex, bool, str, bytes, type(None))


def _primitive(v) -> bool:
    import numpy as np
    if isinstance(v, tuple):
        return all(_primitive(x) for x in v)
    return isinstance(v, _PRIMITIVE + (np.generic,))


def _binop(op, a, b):
    if not (_primitive(a) and _primitive(b)):
        raise Refused("an operator on an object")
    big = lambda x: isinstance(x, int) and abs(x) > 4096      # noqa: E731
    if op is ast.Pow and isinstance(b, int) and b > 4096 and not isinstance(a, float):
        raise Refused("a huge power")
    if op is ast.LShift and big(b):
        raise Refused("a huge shift")
    if op is ast.Mult and isinstance(a, (str, bytes, tuple)) and big(b) or \
            op is ast.Mult and isinstance(b, (str, bytes, tuple)) and big(a):
        raise Refused("a huge repetition")
    return _BINOPS[op](a, b)


def _eval(node, ns: dict, calls: list | None = None):
    """The value of a literal-like expression; :class:`Refused` for anything that could run
    code of the student's (calls of non-allowed callables, lambdas, comprehensions …)."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        vals = [_eval(e, ns, calls) for e in node.elts]
        if any(isinstance(e, ast.Starred) for e in node.elts):
            raise Refused("a starred element")
        return tuple(vals) if isinstance(node, ast.Tuple) else \
            (vals if isinstance(node, ast.List) else set(vals))
    if isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):
            raise Refused("a ** in a dict")
        keys = [_eval(k, ns, calls) for k in node.keys]
        if not all(_primitive(k) for k in keys):
            raise Refused("a dict key that is an object")
        return dict(zip(keys, (_eval(v, ns, calls) for v in node.values)))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNOPS:
        v = _eval(node.operand, ns, calls)
        if not _primitive(v):
            raise Refused("an operator on an object")
        return _UNOPS[type(node.op)](v)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        return _binop(type(node.op), _eval(node.left, ns, calls), _eval(node.right, ns, calls))
    if isinstance(node, ast.Name):
        if node.id in ns:
            return ns[node.id]
        if node.id in ("True", "False", "None"):
            return {"True": True, "False": False, "None": None}[node.id]
        if hasattr(builtins, node.id) and isinstance(getattr(builtins, node.id), type):
            return getattr(builtins, node.id)        # int, float … as dtypes / locals
        raise NameError(f"name {node.id!r} is not defined")
    if isinstance(node, ast.Attribute):
        return getattr(_eval(node.value, ns, calls), node.attr)
    if isinstance(node, ast.Subscript):
        base = _eval(node.value, ns, calls)
        if not (_callable_ok(base) or isinstance(base, (tuple, list, dict, str, bytes))):
            raise Refused("indexing an object")
        return base[_eval_slice(node.slice, ns, calls)]
    if isinstance(node, ast.Call):
        if isinstance(node.func, ast.Call):             # njit(fastmath=True)(fn)
            f = _decorator(node.func, ns)
        else:
            f = _eval(node.func, ns, calls)
        if not isinstance(node.func, ast.Call) and not _callable_ok(f):
            name = getattr(f, "__name__", type(f).__name__)
            raise Refused(f"a call of {name}")
        if any(isinstance(a, ast.Starred) for a in node.args) or \
                any(k.arg is None for k in node.keywords):
            raise Refused("a starred argument")
        args = [_eval(a, ns, calls) for a in node.args]
        kw = {k.arg: _eval(k.value, ns, calls) for k in node.keywords}
        if calls is not None:
            calls.append(f)
        return f(*args, **kw)
    raise Refused(type(node).__name__.lower())


def _eval_slice(node, ns, calls):
    if isinstance(node, ast.Slice):
        parts = [None if p is None else _eval(p, ns, calls)
                 for p in (node.lower, node.upper, node.step)]
        if not all(p is None or isinstance(p, int) for p in parts):
            raise Refused("a slice of objects")
        return slice(*parts)
    if isinstance(node, ast.Tuple):
        return tuple(_eval_slice(e, ns, calls) for e in node.elts)
    v = _eval(node, ns, calls)
    if not _primitive(v):
        raise Refused("an index that is an object")
    return v


def _jit_family(f) -> bool:
    if not _ALLOWED:
        _ALLOWED.update(_allowed_callables())
    label = _ALLOWED.get(id(f), "")
    return label.startswith(("numba.", "labkit.jit"))


def _decorator(node, ns):
    """A decorator expression's value, if it is numba's jit family (``njit``) or the result of
    calling it with literal arguments (``njit(cache=True)``)."""
    head = node.func if isinstance(node, ast.Call) else node
    f = _eval(head, ns)
    if not _jit_family(f):
        raise Refused(f"the decorator {getattr(f, '__name__', type(f).__name__)}")
    if not isinstance(node, ast.Call):
        return f
    for a in list(node.args) + [k.value for k in node.keywords]:
        if not _option(_eval(a, ns)):
            raise Refused("a decorator option that is not a literal or numba type")
    node = copy.copy(node)      # compiled in memory here: no disk cache student code could write
    node.keywords = [k for k in node.keywords if k.arg != "cache"]
    return _eval(node, ns)


def _option(v, depth=0) -> bool:
    """njit's options: literals, signature strings, numba types (``locals={"x": int64}``)."""
    from numba.core import types as nt
    from numba.core.typing.templates import Signature
    if _primitive(v) or isinstance(v, (nt.Type, Signature)):
        return True
    if depth < 3 and isinstance(v, (list, tuple)):
        return all(_option(x, depth + 1) for x in v)
    if depth < 3 and isinstance(v, dict):
        return all(_primitive(k) and _option(x, depth + 1) for k, x in v.items())
    return False


# ---------------------------------------------------------------- imports
def _trusted_roots() -> list[str]:
    paths = set()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        p = sysconfig.get_paths().get(key)
        if p:
            paths.add(p)
    try:
        paths.update(site.getsitepackages())
    except AttributeError:  # pragma: no cover - virtualenv's old site
        pass
    import labkit
    paths.add(os.path.dirname(os.path.abspath(labkit.__file__)))
    return sorted({os.path.realpath(p) + os.sep for p in paths})


_ROOTS: list[str] = []
_PRELOADED: set[str] = set()


def trust_loaded() -> None:
    """Trust every top-level module imported so far (the worker calls this before any student
    code: labkit, numpy, numba, the extra exercise modules)."""
    _PRELOADED.update(n.split(".")[0] for n in list(sys.modules)
                      if not n.startswith("labkit_cell_"))


def module_allowed(name: str) -> bool:
    """True if the top-level package of ``name`` is already imported (by labkit, before any
    student code) or resolves to a file of Python, site-packages or labkit — not the
    working directory or another folder a submission could have put a module in."""
    top = name.split(".")[0]
    if not top or top.startswith("labkit_cell_"):
        return False
    if top in _PRELOADED:
        return True
    mod = sys.modules.get(top)
    if mod is not None:
        origin = getattr(mod, "__file__", None)
        if origin is None:
            return top in sys.builtin_module_names or getattr(mod, "__spec__", None) is not None \
                and getattr(mod.__spec__, "origin", None) in ("built-in", "frozen")
    else:
        try:
            spec = importlib.util.find_spec(top)
        except (ImportError, ValueError):
            return False
        if spec is None:
            return False
        if spec.origin in ("built-in", "frozen"):
            return True
        origin = spec.origin or (list(spec.submodule_search_locations or [None])[0])
        if origin is None:
            return False
    if not _ROOTS:
        _ROOTS.extend(_trusted_roots())
    real = os.path.realpath(origin)
    return any(real.startswith(r) for r in _ROOTS)


def _do_import(node, ns: dict) -> None:
    if isinstance(node, ast.ImportFrom):
        if node.level:
            raise Refused("a relative import")
        if node.module == "__future__":
            return
        if not module_allowed(node.module or ""):
            raise Refused(f"module {node.module} is not an installed package")
        mod = importlib.import_module(node.module)
        for a in node.names:
            if a.name == "*":
                names = getattr(mod, "__all__", [k for k in vars(mod) if not k.startswith("_")])
                for k in names:
                    ns[k] = getattr(mod, k)
                continue
            try:
                ns[a.asname or a.name] = getattr(mod, a.name)
            except AttributeError:
                sub = f"{node.module}.{a.name}"
                ns[a.asname or a.name] = importlib.import_module(sub)
        return
    for a in node.names:
        if not module_allowed(a.name):
            raise Refused(f"module {a.name} is not an installed package")
        mod = importlib.import_module(a.name)
        if a.asname:
            ns[a.asname] = mod
        else:
            top = a.name.split(".")[0]
            ns[top] = sys.modules[top]


# ---------------------------------------------------------------- statements
def _function(node, ns: dict, filename: str) -> None:
    decos = [_decorator(d, ns) for d in node.decorator_list]
    a = node.args
    for d in list(a.defaults) + [d for d in a.kw_defaults if d is not None]:
        _eval(d, ns)                               # a literal or a name: no call
    bare = copy.copy(node)
    bare.decorator_list = []
    bare.returns = None
    for arg in a.posonlyargs + a.args + a.kwonlyargs + [x for x in (a.vararg, a.kwarg) if x]:
        arg.annotation = None
    mod = ast.Module(body=[bare], type_ignores=[])
    ast.fix_missing_locations(mod)
    exec(compile(mod, filename, "exec"), ns)      # a def: binds the name, runs nothing
    fn = ns[node.name]
    for d in reversed(decos):
        fn = d(fn)
    ns[node.name] = fn


def _assign(targets, value, ns: dict) -> None:
    for t in targets:
        if isinstance(t, ast.Name):
            ns[t.id] = value
        elif isinstance(t, ast.Tuple) and all(isinstance(e, ast.Name) for e in t.elts):
            if not isinstance(value, (tuple, list)) or len(value) != len(t.elts):
                raise Refused("unpacking an object")
            for e, v in zip(t.elts, value):
                ns[e.id] = v
        else:
            raise Refused("an assignment to an attribute or item")


def run_statements(tree: ast.Module, source: str, ns: dict, filename: str,
                   quiet_imports: bool = False) -> list[str]:
    """Execute ``tree``'s top-level statements into ``ns`` as described above; returns the
    descriptions of the dropped ones. A NameError or other failure while evaluating a kept
    statement propagates (the cell's own error)."""
    lines = source.splitlines()
    dropped = []
    for node in tree.body:
        try:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                try:
                    _do_import(node, ns)
                except ImportError:
                    if not quiet_imports:
                        raise
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                _function(node, ns, filename)
            elif isinstance(node, ast.Assign):
                _assign(node.targets, _eval(node.value, ns), ns)
            elif isinstance(node, ast.AnnAssign):
                if node.value is not None:
                    _assign([node.target], _eval(node.value, ns), ns)
            elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
                continue
            elif is_check_call(node):
                continue
            else:
                raise Refused(type(node).__name__)
        except Refused:
            if quiet_imports and isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            dropped.append(describe_dropped(node, lines))
    return dropped


def load(source: str, ns: dict, filename: str, imports: str = "") -> list[str]:
    """Run ``imports`` (earlier cells' import statements: failures skipped) then ``source``'s
    definitions into ``ns``; ``[descriptions of the dropped statements]``. SyntaxError if
    ``source`` does not parse; an exception of the evaluation (NameError …) propagates."""
    for stmt in import_statements(imports):
        try:
            run_statements(stmt, imports, ns, "<imports>", quiet_imports=True)
        except Exception:  # noqa: BLE001 - an earlier cell's import that fails here
            pass
    tree = ast.parse(source)
    return run_statements(tree, source, ns, filename)
