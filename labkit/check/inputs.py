"""Inputs the student cannot touch: the student's function gets copies of the check's arrays.

A check body binds its references from its own (pristine) arrays; the guarded call
(:class:`labkit.check.framework` wraps the Guard) hands the student a copy of every array
argument — same dtype, shape and memory layout, so numba compiles the same specialisation —
and compares the copies with the pristine arrays afterwards: a changed input is its own
verdict, ``wrong`` with "changed its input <name>: …". Arguments the exercise declares as
outputs (``@exercise(..., outputs=(3,))``: positions of the arrays the student fills) are
passed through untouched. :mod:`labkit.check.speed` uses the same helpers between timed samples.
"""
from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from labkit._common import mismatch

__all__ = ["own_copy", "hand_over", "changed_input", "same_bytes", "restore", "arg_names"]


def own_copy(x: Any) -> Any:
    """A copy of ``x`` with the same type, dtype, shape and layout (arrays, and arrays inside
    tuples / named tuples); any other value is returned as is."""
    if isinstance(x, np.ndarray):
        if x.flags.c_contiguous or x.flags.f_contiguous:
            y = _aligned_like(x)
        else:
            y = _strided_copy(x)     # a strided view stays strided: numba's layout 'A' again
        if not x.flags.writeable:
            y.flags.writeable = False    # numba types a read-only array apart
        return y
    if isinstance(x, tuple):
        items = [own_copy(v) for v in x]
        if all(a is b for a, b in zip(items, x)):
            return x
        return type(x)(*items) if hasattr(x, "_fields") else tuple(items)
    if type(x) is list:             # a list (of str: lab 01's challenge) is mutable, and numba
        return [own_copy(v) for v in x]     # writes a reflected list's changes back
    return x


#: a copy starts at the same address modulo this many bytes (a page) as the array it copies: a
#: vector loop then meets the same split loads and the same cache-set aliasing on the copy as on the
#: check's array — timed on a copy, a student is not slower or faster than labkit's kernel on
#: the original by where the allocator happened to put the copy (measured on lab 02's SoA loop:
#: docs/bspline.md, 'SoA gate size')
_LINE = 4096


def _aligned_like(x: np.ndarray) -> np.ndarray:
    """A contiguous copy of ``x`` (its order) at ``x``'s address modulo :data:`_LINE`."""
    if x.size == 0 or x.ndim == 0:
        return np.array(x, order="K", copy=True, subok=False)
    raw = np.empty(x.nbytes + _LINE, np.uint8)
    start = (x.ctypes.data - raw.ctypes.data) % _LINE
    order = "C" if x.flags.c_contiguous else "F"
    y = raw[start:start + x.nbytes].view(x.dtype).reshape(x.shape, order=order)
    y[...] = x
    return y


def _strided_copy(x: np.ndarray) -> np.ndarray:
    """A non-contiguous array with ``x``'s values: every other element of a fresh buffer."""
    big = np.empty(x.shape[:-1] + (2 * x.shape[-1],), dtype=x.dtype) if x.ndim else \
        np.empty((), dtype=x.dtype)
    y = big[..., ::2] if x.ndim else big
    y[...] = x
    return y


def _is_output(i: int, outputs) -> bool:
    return i in outputs


def hand_over(args: tuple, outputs=()) -> tuple:
    """The arguments the student's function receives: copies, outputs passed through."""
    return tuple(a if _is_output(i, outputs) else own_copy(a) for i, a in enumerate(args))


def same_bytes(a: np.ndarray, b: np.ndarray) -> bool:
    """True when ``a`` and ``b`` hold the same bytes (NaN payloads and signed zeros included)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.size == 0:
        return True
    return bool(np.array_equal(np.ascontiguousarray(a).reshape(-1).view(np.uint8),
                               np.ascontiguousarray(b).reshape(-1).view(np.uint8)))


def _arrays(x, path=""):
    if isinstance(x, np.ndarray):
        yield path, x
    elif isinstance(x, tuple):
        fields = getattr(x, "_fields", None)
        for k, v in enumerate(x):
            sub = f".{fields[k]}" if fields else f"[{k}]"
            yield from _arrays(v, path + sub)


def arg_names(fn, n: int) -> list[str]:
    """Parameter names of ``fn`` (its ``py_func`` for numba) for ``n`` positional arguments."""
    from .guard import unwrap
    f = unwrap(fn)
    f = getattr(f, "py_func", f)
    try:
        names = [p.name for p in inspect.signature(f).parameters.values()
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        names = []
    return [names[i] if i < len(names) else f"argument {i + 1}" for i in range(n)]


def changed_input(pristine: tuple, given: tuple, outputs=(), names=None) -> str | None:
    """``None`` if every non-output array in ``given`` still holds ``pristine``'s bytes, else
    the message "changed its input <name>: <first differences>"."""
    names = names or [f"argument {i + 1}" for i in range(len(given))]
    for i, (p, g) in enumerate(zip(pristine, given)):
        if _is_output(i, outputs) or p is g:
            continue
        if type(p) is list:
            msg = _changed_list(p, g, names[i])
            if msg is not None:
                return msg
            continue
        for (path, pa), (_, ga) in zip(_arrays(p), _arrays(g)):
            if same_bytes(pa, ga):
                continue
            label = f"{names[i]}{path}"
            try:
                diff = mismatch(ga, pa, name=label)
            except Exception:  # noqa: BLE001 - a shape the student changed in place
                diff = None
            diff = diff or f"{label} holds other bytes than before the call"
            return (f"changed its input {label}: {diff} — a kernel must only read its inputs "
                    "(the check gave you its own copy and compares it afterwards)")
    return None


def _changed_list(p: list, g, name: str) -> str | None:
    """The message for a list argument whose copy ``g`` no longer equals ``p`` (its length, or
    the first item that differs), else None."""
    tail = (" — a kernel must only read its inputs (the check gave you its own copy and "
            "compares it afterwards)")
    if type(g) is not list or len(g) != len(p):
        n = len(g) if isinstance(g, list) else type(g).__name__
        return f"changed its input {name}: {len(p)} items before the call, {n} after{tail}"
    for k, (a, b) in enumerate(zip(p, g)):
        if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
            same = isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and same_bytes(a, b)
        else:
            same = type(a) is type(b) and a == b
        if not same:
            return (f"changed its input {name}: {name}[{k}] is {_short(b)}, it was "
                    f"{_short(a)}{tail}")
    return None


def _short(v) -> str:
    text = repr(v)
    return text if len(text) <= 40 else text[:37] + "…"


def restore(pristine: tuple, given: tuple, outputs=()) -> None:
    """Copy the pristine values back into the student's (non-output) arrays (and lists)."""
    for i, (p, g) in enumerate(zip(pristine, given)):
        if _is_output(i, outputs) or p is g:
            continue
        if type(p) is list and type(g) is list:
            g[:] = own_copy(p)
            continue
        for (_, pa), (_, ga) in zip(_arrays(p), _arrays(g)):
            if ga.flags.writeable and ga.shape == pa.shape:
                np.copyto(ga, pa, casting="unsafe")
