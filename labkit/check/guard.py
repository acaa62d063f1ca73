"""The student's function as a check body sees it: a :class:`Guard`.

* **Delegation** (``uses labkit's answer``): the exercise's answer kernels (``answers=`` of
  ``@exercise``) may not be the student's function, be reachable from its bytecode (globals,
  attribute chains, closures, defaults, nested and helper functions of the same cell), be
  called from its numba code (the typing of every compiled overload, helpers followed), or be
  called while it runs (the answers are replaced by tracing wrappers in every ``labkit.*``
  module during each call, so ``getattr(A, "trans" + "pose_batch")`` and ``importlib`` are seen).
  In the child process that runs a plain-Python student (``runtime=True``) every other
  off-limits labkit function is traced the same way, and every off-limits labkit numba kernel
  changes class to one whose ``__call__`` records the call: a name computed at run time reaches
  a traced object. A call counts when the code calling it is not labkit's or numba's own (an
  allowed labkit function may call labkit's kernels).
* **Tampering**: the identities of the functions, classes and modules in numpy, json, time,
  math, marshal, builtins and ``labkit.*`` are snapshotted before student code runs and
  verified after each call (the first 64, then every 16th, and at the check's end), with the
  thread, trace and import-hook state. A change ends the check
  with ``error`` (0 points); the worker that saw it is then replaced.

In the trusted worker the guarded function is a numba dispatcher or a
:class:`~labkit.check.proxy.Proxy` (plain Python, run in a child process); the child wraps the
real function in its own Guard, so run-time delegation and tampering there are reported to the
worker as data (they can only fail the check).
"""
from __future__ import annotations

import builtins
import dis
import importlib
import operator
import os
import sys
import threading
import types
from typing import Any, Callable

from .result import CheckFailure

__all__ = ["Guard", "Tampered", "Snapshot", "unwrap", "resolve_answers", "is_dispatcher"]

ANSWER = "uses labkit's answer"

#: Modules whose callables a check relies on (plus every loaded ``labkit.*`` module).
WATCHED = ("builtins", "json", "json.encoder", "json.decoder", "time", "math", "marshal",
           "numpy", "numpy.linalg", "numpy.random", "numpy._core.numeric",
           "numpy._core.fromnumeric", "numpy._core.multiarray", "numpy._core.numerictypes",
           "numpy._core._methods", "numpy.lib._function_base_impl", "zlib", "secrets",
           "functools", "operator", "linecache")


#: Calls verified one by one; after that every EVERY-th call (and always at the check's end) —
#: a check calling the student thousands of times (job_coords) would spend seconds verifying.
FULL_CALLS = 64
EVERY = 16


class Tampered(Exception):
    """Student code changed something the checker relies on."""


def is_dispatcher(fn) -> bool:
    try:
        from numba.core.dispatcher import Dispatcher
    except Exception:  # noqa: BLE001 - numba missing: nothing is a dispatcher
        return False
    return isinstance(fn, Dispatcher)


def unwrap(fn):
    """The student's own callable behind a :class:`Guard` (gates inspect this)."""
    return fn.fn if isinstance(fn, Guard) else fn


def _watched_modules() -> list[tuple[str, types.ModuleType]]:
    mods = sys.modules
    out = [(n, mods[n]) for n in WATCHED if n in mods]
    out += [(n, m) for n, m in list(mods.items())
            if (n == "labkit" or n.startswith("labkit.")) and isinstance(m, types.ModuleType)]
    return out


def _kept(v) -> bool:
    return callable(v) or isinstance(v, types.ModuleType)


class Snapshot:
    """Identities of the callables/modules in the watched modules, and process-wide hooks."""

    def __init__(self):
        self.items: dict[str, dict[str, Any]] = {}
        self.modules: dict[str, types.ModuleType] = {}
        self._fast: list[tuple[dict, tuple, tuple]] = []
        self._nmods = -1
        self.extend()
        self.trace = (sys.gettrace(), sys.getprofile(), threading.gettrace()
                      if hasattr(threading, "gettrace") else None)
        self.threads = {t.ident for t in threading.enumerate()}
        self.meta_path = list(sys.meta_path)
        self.path_hooks = list(sys.path_hooks)
        self.excepthook = sys.excepthook

    def extend(self) -> None:
        """Add modules loaded since (called only at trusted points, between student calls)."""
        if len(sys.modules) == self._nmods:
            return
        self._nmods = len(sys.modules)
        for name, mod in _watched_modules():
            if name in self.items:
                continue
            self.modules[name] = mod
            items = self.items[name] = {k: v for k, v in vars(mod).items() if _kept(v)}
            self._fast.append((vars(mod), tuple(items), tuple(items.values())))

    def accept(self, replaced) -> None:
        """Take ``[(module name, attribute, new value)]`` as the baseline (labkit's own run-time
        tracers, installed at a trusted point)."""
        for mname, k, v in replaced:
            if mname in self.items:
                self.items[mname][k] = v
        self._fast = [(vars(self.modules[n]), tuple(it), tuple(it.values()))
                      for n, it in self.items.items()]

    def unchanged(self) -> bool:
        """Fast path: every watched function/module still the same object (C-speed loop)."""
        is_ = operator.is_
        for d, keys, vals in self._fast:
            if not all(map(is_, map(d.get, keys), vals)):
                return False
        mods = sys.modules
        return (all(mods.get(n) is m for n, m in self.modules.items())
                and (sys.gettrace(), sys.getprofile()) == self.trace[:2]
                and len(sys.meta_path) == len(self.meta_path)
                and threading.active_count() <= len(self.threads))

    def changes(self, ignore: dict | None = None) -> list[str]:
        if not ignore and self.unchanged():
            return []
        out = []
        mods = sys.modules
        for name, mod in self.modules.items():
            if mods.get(name) is not mod:
                out.append(f"sys.modules[{name!r}]")
                continue
            d = vars(mod)
            for k, v in self.items[name].items():
                cur = d.get(k, _MISSING)
                if cur is not v and not (ignore and ignore.get((name, k)) is cur):
                    out.append(f"{name}.{k}")
                    if len(out) >= 5:
                        return out
        if (sys.gettrace(), sys.getprofile()) != self.trace[:2]:
            out.append("sys.settrace/setprofile")
        new = [t for t in threading.enumerate() if t.ident not in self.threads and t.is_alive()]
        if new:
            out.append(f"a thread it started ({new[0].name})")
        if list(sys.meta_path) != self.meta_path or list(sys.path_hooks) != self.path_hooks:
            out.append("the import system (sys.meta_path)")
        return out


_MISSING = object()


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


def _allowed_for(name: str) -> tuple[str, ...]:
    """The labkit functions exercise ``name`` lets the student's code call (``allowed=`` of its
    ``@exercise``); none for an unknown name."""
    if not name:
        return ()
    try:
        from .framework import _REGISTRY
    except ImportError:       # pragma: no cover - framework is part of this package
        return ()
    ex = _REGISTRY.get(name)
    return tuple(getattr(ex, "allowed", ()) or ())


def _ids(obj) -> set[int]:
    s = {id(obj)}
    py = getattr(obj, "py_func", None)
    if py is not None:
        s.add(id(py))
    return s


def _package_dir(name: str) -> str | None:
    mod = sys.modules.get(name)
    f = getattr(mod, "__file__", None)
    return os.path.dirname(os.path.abspath(f)) + os.sep if f else None


#: Code in these directories is labkit's or numba's own: its calls into labkit's functions are
#: not the student's (an allowed labkit function calling a kernel; numba typing an intrinsic).
_TRUSTED_DIRS = tuple(d for d in (os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
                                  + os.sep,) if d)


def _trusted_dirs() -> tuple[str, ...]:
    return _TRUSTED_DIRS + tuple(d for d in (_package_dir("numba"), _package_dir("llvmlite")) if d)


def _student_caller(frame, trusted: tuple[str, ...]) -> bool:
    return frame is not None and not frame.f_code.co_filename.startswith(trusted)


#: The guard whose run-time tracing is installed (child process: one at a time).
_RUNTIME: dict = {}
_TRACED_CLASSES: dict[type, type] = {}


def _traced_call(self, *args, **kwargs):
    base = _TRACED_CLASSES.get(type(self), type(self).__mro__[1])
    st = _RUNTIME
    guard = st.get("guard")
    if guard is not None and guard._active and _student_caller(sys._getframe(1), st["trusted"]):
        guard.delegated = guard.delegated or (
            "your function called labkit's kernel while it ran "
            f"({st['labels'].get(id(self), '?')})")
    return base.__call__(self, *args, **kwargs)


def _traced_class(base: type) -> type:
    """A subclass of a dispatcher class whose ``__call__`` records calls (same layout, so an
    instance's ``__class__`` can be switched and back)."""
    for t, b in _TRACED_CLASSES.items():
        if b is base:
            return t
    t = type(f"Traced{base.__name__}", (base,), {"__slots__": (), "__call__": _traced_call,
                                                  "__module__": base.__module__})
    _TRACED_CLASSES[t] = base
    return t


class Guard:
    """Wraps the student's callable for a check body; attribute access passes through."""

    def __init__(self, fn: Callable, answers=(), *, name: str = "", snapshot: Snapshot | None = None,
                 allowed=None, runtime: bool = False):
        self.fn = fn
        self.runtime = runtime          # trace every off-limits labkit function (child process)
        self._swapped: list[tuple[Any, type]] = []
        self.name = name
        self.answers = resolve_answers(answers)
        self._answer_ids = {}
        for label, obj in self.answers:
            for i in _ids(obj):
                self._answer_ids[i] = label
        if allowed is None:
            allowed = _allowed_for(name)
        self._allowed = {i for _, obj in resolve_answers(allowed) for i in _ids(obj)}
        self.snapshot = snapshot or Snapshot()
        self.delegated: str | None = None
        self.tampered: list[str] = []
        self.calls = 0
        self._checked_sigs: set = set()
        self._tracers: list[tuple[types.ModuleType, str, Any]] = []
        self._active = 0
        self._ignore: dict = {}
        self._where = None

    # -- pass-through so `hasattr(student, "signatures")`, `.py_func` … keep working
    def __getattr__(self, item):
        return getattr(self.fn, item)

    @property
    def __name__(self):  # noqa: D401 - the student's function name
        return getattr(self.fn, "__name__", type(self.fn).__name__)

    # -- delegation, static
    def _answer_label(self, obj) -> str | None:
        for i in _ids(obj):
            if i in self._answer_ids:
                return self._answer_ids[i]
        if isinstance(obj, Guard):
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
        if isinstance(obj, Guard):
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

    # -- delegation at run time
    def _install_tracers(self) -> None:
        if not self.answers or self._tracers:
            return
        guard = self
        by_id = {}
        for label, obj in self.answers:
            by_id[id(obj)] = (label, obj)
        if self._where is not None and self._where[0] == len(sys.modules):
            for mod, mname, k, tracer, v in self._where[1]:
                if vars(mod).get(k) is v:
                    self._tracers.append((mod, k, v))
                    vars(mod)[k] = tracer
                    self._ignore[(mname, k)] = tracer
            return
        where = []
        for mname, mod in list(sys.modules.items()):
            if not (mname == "labkit" or mname.startswith("labkit.")) or mname.endswith(".checks") \
                    or mname.startswith("labkit.check") or not isinstance(mod, types.ModuleType):
                continue
            d = vars(mod)
            for k, v in list(d.items()):
                hit = by_id.get(id(v))
                if hit is None:
                    continue
                label, real = hit

                def tracer(*a, _real=real, _label=label, **kw):
                    if guard._active:
                        guard.delegated = guard.delegated or (
                            f"your function called labkit's kernel while it ran ({_label})")
                    return _real(*a, **kw)

                tracer.__name__ = tracer.__qualname__ = f"labkit_answer_{k}"
                tracer.__labkit_answer__ = label
                self._tracers.append((mod, k, v))
                d[k] = tracer
                self._ignore[(mname, k)] = tracer
                where.append((mod, mname, k, tracer, v))
        self._where = (len(sys.modules), where)

    def _install_runtime(self) -> None:
        """Trace every off-limits labkit function and kernel while the student's code runs (once:
        they stay in place for the child's life; calls count only while a call is active)."""
        if not self.runtime or _RUNTIME.get("guard") is self:
            return
        guard = self
        trusted = _trusted_dirs()
        labels: dict[int, str] = {}
        answers = {i for _, obj in self.answers for i in _ids(obj)}
        swapped: dict[int, Any] = {}
        accepted: list[tuple[str, str, Any]] = []
        for mname, mod in list(sys.modules.items()):
            if not (mname == "labkit" or mname.startswith("labkit.")) or \
                    mname == "labkit.check" or mname.startswith("labkit.check.") or \
                    not isinstance(mod, types.ModuleType):
                continue
            d = vars(mod)
            for k, v in list(d.items()):
                if id(v) in answers or isinstance(v, type):
                    continue
                label = self._offlimits(v)
                if label is None:
                    continue
                if is_dispatcher(v):
                    if id(v) not in swapped:
                        swapped[id(v)] = v
                        labels[id(v)] = label
                    continue
                if not isinstance(v, types.FunctionType):
                    continue

                def tracer(*a, _real=v, _label=label, **kw):
                    if guard._active and _student_caller(sys._getframe(1), trusted):
                        guard.delegated = guard.delegated or (
                            f"your function called labkit's {_label} while it ran")
                    return _real(*a, **kw)

                tracer.__name__ = getattr(v, "__name__", k)
                tracer.__qualname__ = getattr(v, "__qualname__", k)
                tracer.__module__ = v.__module__
                tracer.__doc__ = v.__doc__
                tracer.__wrapped__ = v
                tracer.__labkit_traced__ = label
                d[k] = tracer
                accepted.append((mname, k, tracer))
        for v in swapped.values():
            cls = type(v)
            if cls in _TRACED_CLASSES:
                continue
            try:
                v.__class__ = _traced_class(cls)
            except TypeError:       # a layout numba changed: left untraced (static checks hold)
                continue
            self._swapped.append((v, cls))
        self.snapshot.accept(accepted)      # the tracers are the baseline from now on
        _RUNTIME.clear()
        _RUNTIME.update(guard=self, labels=labels, trusted=trusted)

    def _remove_tracers(self) -> None:
        for mod, k, v in self._tracers:
            vars(mod)[k] = v
        self._tracers.clear()
        self._ignore.clear()

    def tracing(self):
        """Context manager: answers traced and calls counted as the student's (speed gates)."""
        guard = self

        class _T:
            def __enter__(self_):
                guard._install_tracers()
                guard._install_runtime()
                guard._active += 1
                return guard

            def __exit__(self_, et, ev, tb):
                guard._active -= 1
                if not guard._active:
                    guard._remove_tracers()
                if et is not None and ev is not None and guard.answers and \
                        "labkit_answer_" in str(ev) and guard.delegated is None:
                    guard.delegated = "your numba code refers to labkit's kernel"
                return False

        return _T()

    # -- the call
    def __call__(self, *args, **kwargs):
        self.snapshot.extend()
        self.precompile(args)
        self.calls += 1
        with self.tracing():
            out = self.fn(*args, **kwargs)
        if self.calls <= FULL_CALLS or self.calls % EVERY == 0:
            self.verify()
        elif self.delegated:
            self.verify()
        return out

    def verify(self) -> None:
        """Raise :class:`Tampered` / end with ``uses labkit's answer`` if the last calls did so."""
        ch = self.snapshot.changes(self._ignore)
        if ch:
            self.tampered = ch
            raise Tampered(f"your code changed {', '.join(ch[:3])} — the checker's own "
                           "functions must not be replaced (0 points)")
        if self.delegated:
            raise CheckFailure(ANSWER, f"{self.delegated} — write the exercise's code yourself; "
                                       "labkit's kernels are there to compare with")

    def late_verdict(self) -> tuple[str, str] | None:
        """A verdict that overrides the body's: tampering, then delegation."""
        try:
            self.verify()
        except Tampered as e:
            return "error", str(e)
        except CheckFailure as e:
            return e.verdict, e.message
        return None
