"""Tiny parallel numba kernel used by `labkit doctor` as a smoke test (own module: imported on first
use, so `import labkit.hardware` does not import numba)."""
from numba import njit, prange

import labkit.jit  # noqa: F401 - numba's cache key holds labkit's sources (labkit.jit)


@njit(parallel=True, cache=True)
def parallel_sum(x):
    """Sum of a 1-D array with prange."""
    s = 0.0
    for i in prange(x.shape[0]):
        s += x[i]
    return s
