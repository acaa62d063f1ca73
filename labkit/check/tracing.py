"""Delegation seen while the student's code runs: the exercise's answers replaced by tracing
wrappers in every ``labkit.*`` module during each call (so ``getattr(A, "trans" + "pose_batch")``
and ``importlib`` are seen), and — in the child process that runs a plain-Python student
(``runtime=True``) — every other off-limits labkit function traced the same way and every
off-limits labkit numba kernel switched to a class whose ``__call__`` records the call. A call
counts when the code calling it is not labkit's or numba's own.

:class:`Tracing` holds this for :class:`~labkit.check.guard.Guard` (its base); it reads the
guard's ``answers``, ``runtime``, ``snapshot`` and its tracer bookkeeping.
"""
from __future__ import annotations

import os
import sys
import types
from typing import Any

from .delegation import Delegation, _ids, is_dispatcher


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


class Tracing(Delegation):
    """A guard's run-time tracing: installed for the duration of :meth:`tracing`."""

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
