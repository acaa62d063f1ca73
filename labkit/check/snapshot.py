"""Tampering: the identities of the functions, classes and modules a check relies on
(:data:`WATCHED` and every loaded ``labkit.*`` module), with the thread, trace and import-hook
state, snapshotted before student code runs and compared after (:class:`Snapshot`). The
:class:`~labkit.check.guard.Guard` verifies it after the student's calls; the worker after
loading a cell.
"""
from __future__ import annotations

import operator
import sys
import threading
import types
from typing import Any


#: Modules whose callables a check relies on (plus every loaded ``labkit.*`` module).
WATCHED = ("builtins", "json", "json.encoder", "json.decoder", "time", "math", "marshal",
           "numpy", "numpy.linalg", "numpy.random", "numpy._core.numeric",
           "numpy._core.fromnumeric", "numpy._core.multiarray", "numpy._core.numerictypes",
           "numpy._core._methods", "numpy.lib._function_base_impl", "zlib", "secrets",
           "functools", "operator", "linecache")


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
