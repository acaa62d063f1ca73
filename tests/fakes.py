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


#: lab 02's flat_tiles done right, as cell text (bs = labkit.bspline): positions × tiles in one
#: flat prange, each pair's VGH by the lab's SoA kernel
FLAT_TILES = '''
@njit(parallel=True)
def my_batch_tiles(tcoefs, idx, pref, out):
    M, P = tcoefs.shape[0], idx.shape[0]
    for t in prange(P * M):
        p = t // M
        m = t - p * M
        bs.vgh_soa(tcoefs[m], idx[p], pref[p], out[p, m])
'''


# lab 04's popcount_bound done right: of two OSACA reports, the kernel with fewer cycles per
# word (the larger of its busiest port and its dependency chain) and by how much; no answer
# when the model cannot tell the faster one
def faster(a, b):
    ca = max(max(a.ports.values()), a.dependency) / a.elements
    cb = max(max(b.ports.values()), b.dependency) / b.elements
    fast, slow = (a, b) if ca <= cb else (b, a)
    if fast.unknown:
        return None
    return fast.name, max(ca, cb) / min(ca, cb)
