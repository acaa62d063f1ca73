"""The two machine limits of a roofline, measured on one core: memory bandwidth (STREAM-style
triad) and double-precision FMA rate. Imported lazily by :mod:`labkit.hardware` (numba)."""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, fastmath=True)
def _triad(a, b, c, s):
    for i in range(a.size):
        a[i] = b[i] + s * c[i]


@njit(cache=True, fastmath={"contract"})
def _fma_chains(x, out):
    # per element 8 independent Horner chains of 16 FMAs (a constant trip count, so LLVM unrolls
    # it and vectorises across elements): 128 FMAs per load and store, so memory does not matter
    for i in range(x.size):
        v = x[i]
        y0 = y1 = y2 = y3 = y4 = y5 = y6 = y7 = v
        for _ in range(16):
            y0 = y0 * v + 0.1
            y1 = y1 * v + 0.2
            y2 = y2 * v + 0.3
            y3 = y3 * v + 0.4
            y4 = y4 * v + 0.5
            y5 = y5 * v + 0.6
            y6 = y6 * v + 0.7
            y7 = y7 * v + 0.8
        out[i] = y0 + y1 + y2 + y3 + y4 + y5 + y6 + y7


def _best_seconds(fn, args, repeat: int, min_time: float) -> float:
    """Seconds per call of ``fn(*args)``: the fastest of ``repeat`` timed repeats (≥ min_time
    each), as STREAM reports — a shared machine only ever slows a run down."""
    from labkit import bench

    return bench.compare({"f": fn}, args, repeat=repeat, min_time=min_time, stat="best").time("f")


def bandwidth(mib: int, repeat: int) -> float:
    n = mib * 2**20 // 8
    a, b, c = np.zeros(n), np.ones(n), np.full(n, 2.0)
    return 3 * 8 * n / _best_seconds(_triad, (a, b, c, 0.5), repeat, 0.1) / 1e9


def fma_rate(repeat: int) -> float:
    x = np.full(2048, 0.999)
    out = np.empty_like(x)
    return 2 * 8 * 16 * x.size / _best_seconds(_fma_chains, (x, out), repeat, 0.05) / 1e9
