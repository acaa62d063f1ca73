"""Validation helpers every lab shares: one wording for one mistake, whichever lab it is in.

- ``positive_int(v, name)``: a whole number ≥ 1 (bools refused), with an optional hint.
- ``check_threads(threads)`` / ``use_threads(threads)``: a thread count within numba's pool.
- ``check_tile(tile, n=None)``: a tile size (splines, variables or individuals per tile).
- ``int_array(x, name, ndim=None)``: an integer ndarray (floats that happen to be whole refused).
- ``aligned_empty(shape, dtype, align=64)``: an uninitialised array starting on a cache line.
- ``mismatch(got, expected, name=…)``: the one mismatch formatter
  (``out[3, 7] = 12, expected 14 (2 more)``); ``raise_mismatch`` raises it as AssertionError.
"""
from __future__ import annotations

import contextlib
import numbers
from typing import Iterator

import numpy as np

__all__ = ["is_int", "positive_int", "check_threads", "use_threads", "check_tile", "int_array",
           "mismatch", "raise_mismatch"]


def is_int(v) -> bool:
    """A whole-number scalar (Python or numpy), not a bool."""
    return isinstance(v, (numbers.Integral, np.integer)) and not isinstance(v, (bool, np.bool_))


def positive_int(v, name: str, *, hint: str = "") -> int:
    """``v`` as an int ≥ 1: TypeError for a non-integer, ValueError below 1."""
    extra = f" ({hint})" if hint else ""
    if not is_int(v):
        raise TypeError(f"{name} must be a positive int{extra}, got {v!r}")
    if int(v) < 1:
        raise ValueError(f"{name} must be ≥ 1{extra}, got {int(v)}")
    return int(v)


def _pool() -> int:
    import numba
    return int(numba.config.NUMBA_NUM_THREADS)


def check_threads(threads, *, clamp: bool = False) -> int:
    """A thread count for numba: None → the current count; an int in 1 … NUMBA_NUM_THREADS
    (``clamp=True``: larger values become the pool size, for benchmarks on small machines)."""
    import numba
    if threads is None:
        return int(numba.get_num_threads())
    if not is_int(threads):
        raise TypeError(f"threads must be a positive int or None, got {threads!r}")
    top = _pool()
    t = int(threads)
    if t < 1 or (t > top and not clamp):
        raise ValueError(f"threads = {t} must be in [1, {top}] (numba started {top} threads; "
                         f"set NUMBA_NUM_THREADS before importing numba for more)")
    return min(t, top)


@contextlib.contextmanager
def use_threads(threads, *, clamp: bool = False) -> Iterator[int]:
    """Run the body with numba set to ``threads`` threads (validated as in ``check_threads``);
    the previous count is restored afterwards. Yields the count in use."""
    import numba
    t = check_threads(threads, clamp=clamp)
    old = numba.get_num_threads()
    if t == old:            # the common case (threads=None, or the count already set): no
        yield t             # set_num_threads calls, ~5 µs of a short call's serial part
        return
    numba.set_num_threads(t)
    try:
        yield t
    finally:
        numba.set_num_threads(old)


def check_tile(tile, n: int | None = None, *, what: str = "items", hint: str = "") -> int:
    """A tile size ≥ 1 (``what`` per tile); with ``n``, tiles larger than ``n`` become ``n``."""
    t = positive_int(tile, "tile", hint=hint or f"{what} per tile")
    return t if n is None else min(t, max(int(n), 1))


def int_array(x, name: str, *, ndim: int | None = None, shape_hint: str = "") -> np.ndarray:
    """``x`` as an integer ndarray (bool → int8). TypeError for other dtypes, with the
    conversion to make; ValueError for the wrong number of dimensions."""
    a = np.asarray(x)
    if a.dtype == np.bool_:
        a = a.astype(np.int8)
    if ndim is not None and a.ndim != ndim:
        what = f" ({shape_hint})" if shape_hint else ""
        raise ValueError(f"{name} must be a {ndim}-D array{what}; got shape {a.shape}")
    if a.dtype.kind not in "iu":
        if a.dtype.kind == "f" and a.size and np.all(np.isfinite(a)) and np.all(a == np.floor(a)):
            raise TypeError(f"{name} must hold integers, got dtype {a.dtype}; "
                            f"convert with {name}.astype(np.int64)")
        raise TypeError(f"{name} must be an integer array, got dtype {a.dtype}")
    if a.dtype.kind == "u" and a.size and a.dtype.itemsize == 8 and a.max() > np.iinfo(np.int64).max:
        raise ValueError(f"{name} has values above int64's range")
    return a


def _fmt(v) -> str:
    if isinstance(v, (float, np.floating)):
        return f"{float(v):.6g}"
    if isinstance(v, np.generic):
        return str(v.item())
    return str(v)


def mismatch(got, expected, *, name: str = "out", atol: float = 0.0, rtol: float = 0.0,
             max_show: int = 5) -> str | None:
    """``None`` if ``got`` equals ``expected`` (within atol/rtol), else a message naming up to
    ``max_show`` differing entries: ``out[3, 7] = 12, expected 14 (2 more)``."""
    exp = np.asarray(expected)
    if got is None:
        return f"{name} is None — did you forget to return the result?"
    try:
        g = np.asarray(got)
    except Exception:  # noqa: BLE001 - any object that numpy cannot take
        return f"{name} is a {type(got).__name__}, expected an array of shape {exp.shape}"
    if g.dtype == object:
        return f"{name} has dtype object, expected a numeric array like {exp.dtype}"
    if g.shape != exp.shape:
        return f"{name} has shape {g.shape}, expected {exp.shape}"
    if exp.dtype.kind in "fc" or g.dtype.kind in "fc":
        bad = ~np.isclose(g, exp, atol=atol, rtol=rtol, equal_nan=True)
    else:
        bad = g != exp
    nbad = int(np.count_nonzero(bad))
    if nbad == 0:
        return None
    idx = np.argwhere(bad)[:max_show] if g.ndim else [()]
    parts = []
    for ix in idx:
        ix = tuple(int(i) for i in ix)
        label = f"{name}[{', '.join(map(str, ix))}]" if ix else name
        parts.append(f"{label} = {_fmt(g[ix])}, expected {_fmt(exp[ix])}")
    more = nbad - len(parts)
    tail = f" ({more} more)" if more > 0 else ""
    return "; ".join(parts) + tail


def raise_mismatch(got, expected, **kw) -> None:
    """``validate`` in one line: AssertionError with ``mismatch``'s message when they differ."""
    msg = mismatch(got, expected, **kw)
    if msg is not None:
        raise AssertionError(msg)


def aligned_empty(shape, dtype=np.float64, align: int = 64) -> np.ndarray:
    """An uninitialised C-contiguous array whose data starts on an ``align``-byte boundary (a
    view of a slightly larger buffer, so ``owndata`` is False). numpy only promises 16 bytes —
    its large arrays start 16 bytes past a page — and then every 64-byte vector load or store
    of a row straddles two cache lines."""
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(int(v) for v in shape)
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    buf = np.empty(nbytes + align, dtype=np.uint8)
    start = (-buf.ctypes.data) % align
    return buf[start:start + nbytes].view(dtype).reshape(shape)
