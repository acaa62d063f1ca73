"""Lesson 00's kernels, in pairs that differ in one idea each (see the package docstring)."""
from __future__ import annotations

import numpy as np
from numba import njit

import labkit.jit  # noqa: F401 - numba's cache key holds labkit's sources (labkit.jit)

__all__ = ["add_arrays", "sum_plain", "sum_fastmath", "prefix_sum", "colsum_naive", "colsum_rows",
           "dot_plain", "dot_partials", "add_arrays_repeat", "dot_fastmath", "softsign_checked",
           "softsign_numpy_errors"]


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


@njit(cache=True)
def softsign_checked(x, out):
    """out[i] = x[i] / (1 + |x[i]|) under numba's default (Python) error model: every division
    checks for a zero divisor and may raise ZeroDivisionError — an exit from the loop, which LLVM
    refuses to vectorise ("early exit loop"), although 1 + |x| is never zero."""
    for i in range(x.size):
        out[i] = x[i] / (1.0 + abs(x[i]))
    return out


@njit(cache=True, error_model="numpy")
def softsign_numpy_errors(x, out):
    """The same loop with numpy's error model (x/0 gives inf or nan, no exception): no exit, so
    the loop vectorises."""
    for i in range(x.size):
        out[i] = x[i] / (1.0 + abs(x[i]))
    return out
