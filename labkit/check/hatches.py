"""Numba's escape hatches, refused in the trusted worker before a student's compiled code runs.

nopython machine code cannot reach Python objects — unless the function opens a hatch back
into Python or to raw memory: a ``with numba.objmode()`` block (lifted out as an object-mode
function), object mode itself (``forceobj=True``), a ctypes/cffi function pointer, an external
C function, ``numba.carray``/``farray`` over a raw pointer, or one of numba's intrinsics
(``numba.core.unsafe`` …). :func:`install` registers a listener on numba's ``numba:compile``
event: each overload of a function defined by the student's cell (its module is a
``labkit_cell_*`` module) is inspected as soon as it is compiled — before the first call —
with every cell-defined numba function it calls, and :func:`refusal` names the hatch.

:func:`uncache` makes the cell's dispatchers compile in memory (their disk cache could have
been written by student code); :func:`guard_disk_cache` makes the worker ignore numba cache
files created after student code first ran in a child process (labkit's own kernels would
otherwise load a pickled index that student code could have written).
"""
from __future__ import annotations

import os
import time

__all__ = ["install", "refusal", "uncache", "guard_disk_cache", "is_cell", "mark_student_ran"]

CELL_PREFIX = "labkit_cell_"


def is_cell(disp) -> bool:
    py = getattr(disp, "py_func", None)
    return (getattr(py, "__module__", None) or "").startswith(CELL_PREFIX)


def _type_hatch(t) -> str | None:
    from numba.core import types as nt
    from numba.core.dispatcher import LiftedCode
    if isinstance(t, (nt.ExternalFunctionPointer,)):
        return "a ctypes/cffi function call"
    if isinstance(t, nt.ExternalFunction):
        return "an external C function"
    if isinstance(t, nt.ObjModeDispatcher) or (isinstance(t, nt.Dispatcher)
                                               and isinstance(t.dispatcher, LiftedCode)):
        return "numba.objmode"
    if isinstance(t, (nt.CPointer, nt.RawPointer)) and not isinstance(t, nt.MemInfoPointer):
        return "a raw pointer"
    if isinstance(t, nt.Function):
        import numba
        from numba.core.extending import _Intrinsic
        key = getattr(t, "typing_key", None)
        if key is numba.carray or key is numba.farray:
            return "numba.carray/farray"
        if any(key is getattr(numba, g, None) for g in ("gdb", "gdb_init", "gdb_breakpoint")):
            return "numba.gdb"               # a debugger attached to the checker
        if isinstance(key, _Intrinsic):
            defn = getattr(key, "_defn", None)
            if (getattr(defn, "__module__", "") or "").startswith("labkit."):
                return None           # labkit's own (ep.popcount64): its IR is labkit's
            if getattr(defn, "__module__", "") == "numba.parfors.array_analysis":
                return None           # parallel=True's own shape checks (assert_equiv, wrap_index)
            return f"a numba intrinsic ({getattr(key, '__name__', '?')})"
        mod = getattr(key, "__module__", "") or ""
        if ".unsafe" in mod or mod.startswith("numba.core.unsafe"):
            return f"numba's unsafe {getattr(key, '__name__', '?')}"
        if getattr(key, "__name__", "") == "from_buffer":
            return "cffi's from_buffer"
    return None


def refusal(disp, sig=None, _seen=None) -> str | None:
    """The first escape hatch in ``disp``'s overload ``sig`` (all overloads if None) or in the
    cell-defined numba functions they call; None when there is none."""
    from numba.core import types as nt
    seen = _seen if _seen is not None else set()
    sigs = [sig] if sig is not None else list(disp.overloads)
    for s in sigs:
        if (id(disp), s) in seen:
            continue
        seen.add((id(disp), s))
        cres = disp.overloads.get(s)
        if cres is None:
            continue
        from numba.core.dispatcher import LiftedCode
        if isinstance(disp, LiftedCode):
            return "numba.objmode (a block lifted to object mode)"
        if getattr(cres, "objectmode", False):
            return "numba's object mode"
        if getattr(cres, "lifted", ()):
            return "numba.objmode (or a loop lifted to object mode)"
        ann = getattr(cres, "type_annotation", None)
        if ann is None:
            return "a compiled function labkit cannot inspect (loaded from a cache)"
        for t in list(ann.typemap.values()):
            why = _type_hatch(t)
            if why:
                return why
            if isinstance(t, nt.Dispatcher) and is_cell(t.dispatcher):
                why = refusal(t.dispatcher, None, seen)
                if why:
                    return why
        for ct in list(ann.calltypes.values()):
            for t in list(getattr(ct, "args", ())) + [getattr(ct, "return_type", None)]:
                why = _type_hatch(t) if t is not None else None
                if why:
                    return why
    return None


_INSTALLED: list = []


def install(on_refuse) -> None:
    """Call ``on_refuse(name, why)`` (which must not return: it answers and exits) when a
    cell-defined function compiles with an escape hatch."""
    if _INSTALLED:
        return
    from numba.core import event as ev

    class _Listener(ev.Listener):
        def on_start(self, event):
            pass

        def on_end(self, event):
            data = event.data or {}
            disp = data.get("dispatcher")
            if disp is None or not is_cell(disp):
                return
            why = refusal(disp, tuple(data.get("args") or ()))
            if why:
                on_refuse(getattr(disp.py_func, "__name__", "your function"), why)

    lst = _Listener()
    ev.register("numba:compile", lst)
    _INSTALLED.append(lst)


def uncache(ns: dict) -> None:
    """The cell's dispatchers compile in memory only (no disk cache to read or write)."""
    from numba.core.caching import NullCache

    from .guard import is_dispatcher
    for v in list(ns.values()):
        if is_dispatcher(v) and is_cell(v):
            v._cache = NullCache()
            v.targetoptions.pop("cache", None)


_STUDENT_RAN = [float("inf")]


def mark_student_ran() -> None:
    """From now on, numba cache files created later are not trusted by this process."""
    if _STUDENT_RAN[0] == float("inf"):
        _STUDENT_RAN[0] = time.time() - 1.0


def _read_old(path: str) -> bytes | None:
    """The bytes of ``path`` if it was last changed before student code first ran (checked
    on the open file: no swap between the check and the read); None otherwise."""
    try:
        with open(path, "rb") as f:
            if os.fstat(f.fileno()).st_ctime >= _STUDENT_RAN[0]:
                return None
            return f.read()
    except FileNotFoundError:
        return None


def guard_disk_cache() -> None:
    """numba's index and data files are pickles: ignore those created or changed after a
    child process ran student code (a file's ctime cannot be set back by a user)."""
    import io
    import pickle

    from numba.core import caching
    cls = caching.IndexDataCacheFile
    if getattr(cls, "_labkit_guarded", False):
        return

    def _load_index(self):
        raw = _read_old(self._index_path)
        if raw is None:
            return {}
        f = io.BytesIO(raw)
        if pickle.load(f) != self._version:
            return {}
        stamp, overloads = pickle.loads(f.read())
        return overloads if stamp == self._source_stamp else {}

    def _load_data(self, name):
        raw = _read_old(self._data_path(name))
        if raw is None:
            raise OSError("no numba cache file older than the first student code")
        return pickle.loads(raw)

    cls._load_index, cls._load_data = _load_index, _load_data
    cls._labkit_guarded = True
