"""Delegation seen before a call (``uses labkit's answer``): the student's function is not one
of the exercise's answer kernels, nor reaches one or another off-limits labkit function through
its bytecode (globals, attribute chains, closures, defaults, nested and helper functions of the
same cell) or the typing of its compiled numba overloads (helpers followed).

:class:`Delegation` holds these checks for :class:`~labkit.check.guard.Guard` (its base, through
:class:`~labkit.check.tracing.Tracing`); it reads the guard's ``fn``, ``_answer_ids``,
``_allowed``, ``delegated`` and ``_checked_sigs``.
"""
from __future__ import annotations

import builtins
import dis
import importlib
import types
from typing import Any

from .result import CheckFailure


ANSWER = "uses labkit's answer"


def is_dispatcher(fn) -> bool:
    """True when ``fn`` is a numba dispatcher (an ``@njit`` function)."""
    try:
        from numba.core.dispatcher import Dispatcher
    except Exception:  # noqa: BLE001 - numba missing: nothing is a dispatcher
        return False
    return isinstance(fn, Dispatcher)


def resolve_answers(answers) -> list[tuple[str, Any]]:
    """``["labkit.alignment:transpose_batch", …]`` → ``[(label, object), …]`` (missing ones skipped)."""
    out = []
    for spec in answers:
        mod, _, attr = spec.partition(":")
        try:
            obj = importlib.import_module(mod)
            for part in attr.split("."):
                obj = getattr(obj, part)
        except (ImportError, AttributeError):
            continue
        out.append((f"{mod.split('.')[1] if mod.count('.') else mod}.{attr}", obj))
    return out


def _ids(obj) -> set[int]:
    """The ids ``obj`` is known by: its own and its ``py_func``'s."""
    s = {id(obj)}
    py = getattr(obj, "py_func", None)
    if py is not None:
        s.add(id(py))
    return s


_MISSING = object()


class Delegation:
    """The static delegation checks of a guard: identity, bytecode and numba typing."""

    def _answer_label(self, obj) -> str | None:
        """The label of the answer or off-limits labkit function ``obj`` is, else None."""
        for i in _ids(obj):
            if i in self._answer_ids:
                return self._answer_ids[i]
        if isinstance(obj, Delegation):         # a guard around the student's function
            return self._answer_label(obj.fn)
        return self._offlimits(obj)

    def _offlimits(self, obj) -> str | None:
        """A label when ``obj`` is a function or kernel of labkit (the check's comparators and
        helpers, an engine wrapped around the answer, any lab's kernel) that this exercise does
        not name as allowed — off-limits wherever it was imported from (any cell)."""
        py = getattr(obj, "py_func", obj)
        if not (isinstance(py, (types.FunctionType, types.BuiltinFunctionType))
                or is_dispatcher(obj)):
            return None
        mod = getattr(py, "__module__", "") or ""
        if not (mod == "labkit" or mod.startswith("labkit.")):
            return None
        if any(i in self._allowed for i in _ids(obj)):
            return None
        if getattr(py, "__name__", "").startswith("labkit_answer_"):   # our own run-time tracer
            return None
        short = mod.split(".")[1] if mod.count(".") else mod
        return f"{short}.{getattr(py, '__qualname__', getattr(py, '__name__', '?'))}"

    def static_checks(self) -> None:
        """Identity, bytecode (globals, attributes, closures, defaults, helpers) — before any call."""
        label = self._answer_label(self.fn)
        if label is not None:
            self._delegate(label, "your function is labkit's own kernel")
        seen: set[int] = set()
        self._scan(self.fn, seen, depth=0)

    def _delegate(self, label: str, how: str):
        self.delegated = self.delegated or f"{how} ({label})"
        raise CheckFailure(ANSWER, f"{how} ({label}) — write the exercise's loop yourself; "
                                   "labkit's kernels are there to compare with, not to hand in")

    def _scan(self, obj, seen: set[int], depth: int) -> None:
        if id(obj) in seen or depth > 6:
            return
        seen.add(id(obj))
        label = self._answer_label(obj)
        if label is not None:
            self._delegate(label, "your function uses labkit's kernel")
        if isinstance(obj, Delegation):
            obj = obj.fn
        import functools
        if isinstance(obj, functools.partial):
            self._scan(obj.func, seen, depth + 1)
            for a in list(obj.args) + list((obj.keywords or {}).values()):
                if callable(a):
                    self._scan(a, seen, depth + 1)
            return
        py = getattr(obj, "py_func", None)
        fn = py if py is not None else obj
        if isinstance(fn, types.MethodType):
            fn = fn.__func__
        code = getattr(fn, "__code__", None)
        if code is None:
            call = getattr(type(obj), "__call__", None)
            if call is not None and getattr(call, "__code__", None) is not None and \
                    not type(obj).__module__.startswith(("numba", "labkit", "builtins")):
                self._scan(call, seen, depth + 1)
            return
        glb = getattr(fn, "__globals__", {})
        for cell in getattr(fn, "__closure__", None) or ():
            try:
                v = cell.cell_contents
            except ValueError:
                continue
            self._scan_value(v, seen, depth)
        for v in (getattr(fn, "__defaults__", None) or ()):
            self._scan_value(v, seen, depth)
        for v in (getattr(fn, "__kwdefaults__", None) or {}).values():
            self._scan_value(v, seen, depth)
        self._scan_code(code, glb, seen, depth)

    def _scan_value(self, v, seen, depth):
        if callable(v) or isinstance(v, types.ModuleType):
            if isinstance(v, types.ModuleType):
                return
            self._scan(v, seen, depth + 1)

    def _scan_code(self, code, glb: dict, seen: set[int], depth: int) -> None:
        chain: Any = _MISSING
        for ins in dis.get_instructions(code):
            op = ins.opname
            if op in ("LOAD_GLOBAL", "LOAD_NAME"):
                name = ins.argval
                chain = glb.get(name, getattr(builtins, name, _MISSING))
                self._check_loaded(chain, seen, depth, glb)
            elif op in ("LOAD_ATTR", "LOAD_METHOD") and chain is not _MISSING:
                try:
                    chain = getattr(chain, ins.argval)
                except Exception:  # noqa: BLE001 - a lazy attribute may fail: not our business
                    chain = _MISSING
                    continue
                self._check_loaded(chain, seen, depth, glb)
            elif op in ("LOAD_DEREF", "LOAD_CLOSURE", "LOAD_FAST", "PRECALL", "CACHE",
                        "EXTENDED_ARG", "PUSH_NULL"):
                if op not in ("PRECALL", "CACHE", "EXTENDED_ARG", "PUSH_NULL"):
                    chain = _MISSING
            else:
                chain = _MISSING
        for c in code.co_consts:
            if isinstance(c, types.CodeType):
                self._scan_code(c, glb, seen, depth + 1)

    def _check_loaded(self, obj, seen, depth, glb) -> None:
        if obj is _MISSING:
            return
        if isinstance(obj, (list, tuple, set, frozenset, dict)) and depth < 4 and len(obj) < 1000:
            items = list(obj.values()) + list(obj) if isinstance(obj, dict) else list(obj)
            for v in items:                  # FUNCS = [A.transpose_batch] … FUNCS[0](x)
                self._check_loaded(v, seen, depth + 1, glb)
            return
        label = self._answer_label(obj)
        if label is not None:
            self._delegate(label, "your function uses labkit's kernel")
        # follow the student's own helpers (same globals: same cell / module)
        py = getattr(obj, "py_func", obj)
        if getattr(py, "__globals__", None) is glb and id(obj) not in seen:
            self._scan(obj, seen, depth + 1)

    # -- delegation, numba typing
    def _check_overload(self, disp, sig, seen: set | None = None) -> None:
        seen = seen if seen is not None else set()
        key = (id(disp), sig)
        if key in seen:
            return
        seen.add(key)
        cres = disp.overloads.get(sig)
        if cres is None:
            return
        try:
            from numba.core import types as nt
            ann = cres.type_annotation
            typemap = ann.typemap if ann is not None else {}
            calltypes = ann.calltypes if ann is not None else {}
        except Exception:  # noqa: BLE001 - no annotation (cached overload): nothing to read
            return
        for t in list(typemap.values()):
            if isinstance(t, nt.Dispatcher):
                d = t.dispatcher
                label = self._answer_label(d)
                if label is not None:
                    self._delegate(label, "your numba code calls labkit's kernel")
                if not type(d.py_func).__module__.startswith("labkit") and \
                        not (getattr(d.py_func, "__module__", "") or "").startswith("labkit"):
                    for s in list(d.overloads):
                        self._check_overload(d, s, seen)
        del calltypes

    def precompile(self, args) -> None:
        """Compile a numba dispatcher for ``args`` with labkit's answers untouched, then read
        its typing for calls into them (a cached overload is recompiled fresh for that)."""
        fn = self.fn
        if not is_dispatcher(fn):
            return
        import numba
        try:
            sig = tuple(numba.typeof(a) for a in args)
        except Exception:  # noqa: BLE001 - an argument numba cannot type: the call will say
            return
        if sig in self._checked_sigs:
            return
        self._checked_sigs.add(sig)
        try:
            if sig not in fn.overloads:
                fn.compile(sig)
        except Exception:  # noqa: BLE001 - the real call reports the compile error
            pass
        for other in list(fn.overloads):    # explicit signatures (@njit("f8(f8[:])")) too
            if other != sig and other not in self._checked_sigs:
                self._checked_sigs.add(other)
                self._check_overload(fn, other)
        cres = fn.overloads.get(sig)
        if cres is not None and getattr(cres, "type_annotation", None) is None:
            try:   # loaded from numba's disk cache: type a fresh copy to read its calls
                opts = {k: v for k, v in fn.targetoptions.items() if k != "cache"}
                fresh = numba.njit(**opts)(fn.py_func)
                fresh.compile(sig)
                self._check_overload(fresh, sig)
            except CheckFailure:
                raise
            except Exception:  # noqa: BLE001
                return
            return
        self._check_overload(fn, sig)
