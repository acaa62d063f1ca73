"""Lesson 00 — how to measure and how to look: the small kernels and the two exercise checks.

Kernels come in pairs that differ in one idea each:

* ``add_arrays`` — element-wise, vectorises at full width (the easy case);
* ``sum_plain`` / ``sum_fastmath`` — a float reduction, which LLVM may only vectorise when it is
  allowed to reorder the additions;
* ``prefix_sum`` — a recurrence (each step needs the previous one): never vectorises;
* ``colsum_naive`` / ``colsum_rows`` — the same sums with the loops swapped: strided and
  reduction-bound versus contiguous and independent across columns (exercise ``colsum``);
* ``dot_plain`` / ``dot_partials`` — one accumulator (latency-bound) versus eight
  independent ones (exercise ``dot_partials``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from labkit._sizes import resolve_size
from labkit.check import exercise, mismatch, rng, speed_gate, vectorized_gate, CheckFailure

__all__ = [
    "Inputs", "make_inputs", "add_arrays", "sum_plain", "sum_fastmath", "prefix_sum",
    "colsum_naive", "colsum_rows", "dot_plain", "dot_partials", "colsum_reference",
    "add_arrays_repeat", "dot_fastmath",
    "stream_add", "check_colsum", "check_dot_partials",
]

SIZES = {
    "small": {"n": 4096, "rows": 256, "cols": 256},
    "seed": {"n": 16384, "rows": 1000, "cols": 1000},
    "large": {"n": 1 << 22, "rows": 4000, "cols": 4000},
}


@dataclass
class Inputs:
    """Vectors ``x``, ``y`` (float64, length n) and a C-contiguous matrix ``a`` (rows × cols)."""

    x: np.ndarray
    y: np.ndarray
    a: np.ndarray


def make_inputs(size="small", seed: int = 0) -> Inputs:
    """Random inputs for lesson 00: ``size`` is "small" | "seed" | "large" or a dict of n/rows/cols."""
    spec = resolve_size(size, SIZES, ("n", "rows", "cols"))
    if min(spec["n"], spec["rows"], spec["cols"]) < 1:
        raise ValueError(f"sizes must be ≥ 1, got {spec}")
    g = np.random.default_rng(seed)
    return Inputs(x=g.random(spec["n"]), y=g.random(spec["n"]),
                  a=g.random((spec["rows"], spec["cols"])))


# ---------------------------------------------------------------- demo kernels
@njit(cache=True)
def add_arrays(a, b, out):
    """out[i] = a[i] + b[i]: independent iterations, vectorises at full width."""
    for i in range(out.size):
        out[i] = a[i] + b[i]
    return out


@njit(cache=True)
def sum_plain(x):
    """Sum in strict left-to-right order: a loop-carried float dependency."""
    s = 0.0
    for i in range(x.size):
        s += x[i]
    return s


@njit(cache=True, fastmath=True)
def sum_fastmath(x):
    """The same sum, but LLVM may reassociate the additions (fastmath) and so vectorise."""
    s = 0.0
    for i in range(x.size):
        s += x[i]
    return s


@njit(cache=True)
def prefix_sum(x, out):
    """out[i] = out[i-1] + x[i]: a true recurrence, which no reordering can vectorise."""
    s = 0.0
    for i in range(x.size):
        s += x[i]
        out[i] = s
    return out


@njit(cache=True)
def colsum_naive(a):
    """Column sums walking down each column: strided loads and one serial chain per column."""
    n, m = a.shape
    out = np.zeros(m)
    for j in range(m):
        s = 0.0
        for i in range(n):
            s += a[i, j]
        out[j] = s
    return out


@njit(cache=True)
def colsum_rows(a):
    """Column sums walking along rows: contiguous loads, columns independent → SIMD."""
    n, m = a.shape
    out = np.zeros(m)
    for i in range(n):
        for j in range(m):
            out[j] += a[i, j]
    return out


@njit(cache=True)
def dot_plain(x, y):
    """Dot product with one accumulator: each add waits for the previous one."""
    s = 0.0
    for i in range(x.size):
        s += x[i] * y[i]
    return s


@njit(cache=True)
def dot_partials(x, y):
    """Dot product with eight independent partial sums: the adds overlap in the pipeline."""
    n = x.size
    nb = n - n % 8
    s0 = s1 = s2 = s3 = s4 = s5 = s6 = s7 = 0.0
    for i in range(0, nb, 8):
        s0 += x[i] * y[i]
        s1 += x[i + 1] * y[i + 1]
        s2 += x[i + 2] * y[i + 2]
        s3 += x[i + 3] * y[i + 3]
        s4 += x[i + 4] * y[i + 4]
        s5 += x[i + 5] * y[i + 5]
        s6 += x[i + 6] * y[i + 6]
        s7 += x[i + 7] * y[i + 7]
    tail = 0.0
    for i in range(nb, n):
        tail += x[i] * y[i]
    return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7)) + tail


@njit(cache=True)
def add_arrays_repeat(a, b, out, reps):
    """``add_arrays`` repeated ``reps`` times in one call, so call overhead does not hide caches."""
    for _ in range(reps):
        for i in range(out.size):
            out[i] = a[i] + b[i]
    return out


@njit(cache=True, fastmath=True)
def dot_fastmath(x, y):
    """Dot product with one accumulator, but LLVM may reassociate (fastmath): it vectorises."""
    s = 0.0
    for i in range(x.size):
        s += x[i] * y[i]
    return s


def colsum_reference(a: np.ndarray) -> np.ndarray:
    """Column sums by numpy, summed top to bottom in the same order as the kernels."""
    a = np.asarray(a, dtype=np.float64)
    out = np.zeros(a.shape[1])
    for i in range(a.shape[0]):
        out += a[i]
    return out


def stream_add(n: int, repeat: int = 3) -> dict:
    """Bandwidth of ``add_arrays`` on n float64 elements: {'n', 'bytes', 'GB/s'} (widget helper)."""
    from labkit import bench

    if int(n) < 1:
        raise ValueError(f"n must be ≥ 1, got {n}")
    n = int(n)
    a = np.ones(n)
    b = np.ones(n)
    out = np.empty(n)
    reps = max(1, (1 << 21) // n)  # ≥ 2 M element-adds per call: call overhead stays negligible
    t = bench.timeit(add_arrays_repeat, a, b, out, reps, repeat=repeat, min_time=0.02)
    moved = 3 * 8 * n  # two loads and one store per element
    return {"n": n, "bytes": moved, "GB/s": moved * reps / t.median_s / 1e9}


# ---------------------------------------------------------------- exercise checks
def _as_2d_args(g: np.random.Generator):
    shapes = [(1, 1), (3, 17), (int(g.integers(20, 60)), int(g.integers(20, 60)))]
    return [g.random(s) for s in shapes]


@exercise("colsum", points=2)
def check_colsum(student):
    """Column sums equal numpy's (same summation order), vectorised, ≥ 2× the naive kernel."""
    g = rng()
    for a in _as_2d_args(g):
        got = student(a)
        msg = mismatch(got, colsum_reference(a), name="out", rtol=1e-12, atol=1e-12)
        assert msg is None, f"{msg} (input {a.shape[0]}×{a.shape[1]})"
    a = g.random((600, 600))
    vectorized_gate(student, (a,), min_bits=256)
    speed_gate(student, colsum_naive, (a,), need=2.0, vs="colsum_naive")
    return "column sums exact on 3 random matrices"


@exercise("dot_partials", points=2)
def check_dot_partials(student):
    """Dot products correct (to rounding) for every length, ≥ 1.5× the one-accumulator loop."""
    g = rng()
    lengths = [0, 1, 7, 8, 9, int(g.integers(100, 1000))]
    for n in lengths:
        x, y = g.random(n), g.random(n)
        got = student(x, y)
        if not isinstance(got, (float, np.floating)):
            raise CheckFailure("wrong", f"returned {type(got).__name__}, expected a float")
        exp = float(np.dot(x, y)) if n else 0.0
        msg = mismatch(got, exp, name=f"dot(length {n})", rtol=1e-10, atol=1e-12)
        assert msg is None, msg
    x, y = g.random(1 << 14), g.random(1 << 14)
    speed_gate(student, dot_plain, (x, y), need=1.5, vs="dot_plain")
    return f"correct for lengths {', '.join(map(str, lengths))}"
