"""Fake students several test files hand to the checks (not collected: no test_ prefix).

Each is a top-level definition, written as a student would write it: the trusted worker loads
this file's definitions as it loads a notebook cell's, and the grader's tests take a student's
cell text from the source here (``inspect.getsource``)."""
import numpy as np
from numba import njit


@njit
def colsum_honest(a):
    """Honest: walks along the rows, columns independent (vectorises)."""
    n, m = a.shape
    out = np.zeros(m)
    for i in range(n):
        for j in range(m):
            out[j] += a[i, j]
    return out


@njit
def colsum_dead_vector(a):
    """The vector (row-wise) loop runs only for a negative entry (the inputs are in [0, 1)); the
    column-wise scalar sum (one float chain per column, in numpy's order) is what runs."""
    n, m = a.shape
    out = np.zeros(m)
    if a.size and a[0, 0] < -1.0:            # never: the inputs are in [0, 1)
        for i in range(n):
            for j in range(m):
                out[j] += a[i, j]
        return out
    for j in range(m):
        s = 0.0
        for i in range(n):
            s += a[i, j]
        out[j] = s
    return out
