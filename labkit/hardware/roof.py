"""The two machine limits of a roofline, measured on one core: memory bandwidth (a STREAM-style
triad, or a read-only sum) and double-precision FMA rate.

The kernels are plain Python functions jitted on first use (``numba.njit(cache=True)``), so
``import labkit.hardware`` does not import numba.  Timing is :mod:`labkit.timing`'s timer (the
timing core below both this package and labkit.bench), imported inside the function that times,
so ``import labkit.hardware`` stays light.
"""
from __future__ import annotations

import functools

__all__ = ["measure_bandwidth", "measure_fma_rate"]


def _triad(a, b, c, s):
    for i in range(a.size):
        a[i] = b[i] + s * c[i]


def _read_sum(a):
    # one sum, which fastmath lets LLVM split into interleaved vector partial sums: a read-only
    # stream with no write-allocate traffic, the bound of kernels that mostly read
    s = 0.0
    for i in range(a.size):
        s += a[i]
    return s


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


@functools.lru_cache(maxsize=None)
def _kernel(name: str):
    """The jitted kernel (compiled, or loaded from numba's cache, on first use). The FMA kernel
    comes twice: ``"fma"`` asks LLVM for the registers' full width (labkit.jit), ``"fma_plain"``
    is a plain ``numba.njit`` loop at LLVM's preferred width."""
    from numba import njit

    import labkit.jit  # noqa: F401 - numba's cache key holds labkit's sources (labkit.jit)

    if name == "triad":
        return njit(cache=True, fastmath=True)(_triad)
    if name == "fma_plain":
        return njit(cache=True, fastmath={"contract"})(_fma_chains)
    from labkit.jit import njit as wide_njit

    if name == "read":
        return wide_njit(cache=True, fastmath=True)(_read_sum)
    return wide_njit(cache=True, fastmath={"contract"})(_fma_chains)


def _best_seconds(fn, args, repeat: int, min_time: float) -> float:
    """Seconds per call of ``fn(*args)``: the fastest of ``repeat`` timed repeats of ≥ min_time
    each (labkit.timing.timeit: first call apart, loops autoscaled, garbage collector paused), as
    STREAM reports — a shared machine only ever slows a run down. Timed in this thread's CPU time
    (the kernels are single-threaded): wall time also counts the moments another job held the
    core, and on a shared machine reads the triad far below what a kernel beside it moves
    (measured: docs/bench-hosts.md, 'Roofs in CPU time'). A thread stalled on memory still
    runs, so bandwidth-bound loops are timed correctly."""
    from labkit.timing import timeit  # lazily: import labkit.hardware stays light

    t = timeit(fn, *args, repeat=repeat, min_time=min_time, clock="thread")
    return max(min(t.times), 1e-9)


def _positive_int(name: str, value, what: str = "") -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive int{what}, got {value!r}")


def measure_bandwidth(mib: int = 96, repeat: int = 7, *, kind: str = "triad") -> float:
    """Single-thread memory bandwidth in GB/s, best of repeats (as STREAM reports, since a shared
    machine only ever slows a run down), on arrays far beyond the last-level cache.

    ``kind="triad"``: STREAM's ``a = b + s·c``, counted as STREAM counts it (3 arrays × 8 bytes
    per element; the write-allocate read of ``a`` is not counted, so the bus moves a third
    more). ``kind="read"``: a sum over one array of 3·mib MiB — the read bandwidth, the roof of a
    kernel that mostly reads (it is above the triad's figure)."""
    _positive_int("mib", mib, " (MiB per array)")
    _positive_int("repeat", repeat)
    if kind not in ("triad", "read"):
        raise ValueError(f"kind must be 'triad' or 'read', got {kind!r}")
    import numpy as np

    n = mib * 2**20 // 8
    if kind == "read":
        a = np.ones(3 * n)
        return 3 * 8 * n / _best_seconds(_kernel("read"), (a,), repeat, 0.1) / 1e9
    a, b, c = np.zeros(n), np.ones(n), np.full(n, 2.0)
    return 3 * 8 * n / _best_seconds(_kernel("triad"), (a, b, c, 0.5), repeat, 0.1) / 1e9


def measure_fma_rate(repeat: int = 7, *, full_width: bool = True) -> float:
    """Single-thread double-precision FMA throughput in GFLOP/s (FMA = 2 FLOP; best of repeats).

    ``full_width=True`` (the roof): vectors as wide as the registers (labkit.jit's request; on an
    Intel AVX-512 core LLVM's own choice is 256 bits, which reaches about half). ``False``: what a
    plain ``@numba.njit`` loop reaches here — the roof for code compiled without that request."""
    _positive_int("repeat", repeat)
    if not isinstance(full_width, bool):
        raise TypeError(f"full_width must be True or False, got {full_width!r}")
    import numpy as np

    x = np.full(2048, 0.999)
    out = np.empty_like(x)
    kernel = _kernel("fma" if full_width else "fma_plain")
    return 2 * 8 * 16 * x.size / _best_seconds(kernel, (x, out), repeat, 0.05) / 1e9
