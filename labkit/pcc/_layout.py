"""What pcc's two engines share: the layout of their rows — padded to a multiple of ``LANE``
doubles, starting on ``_ALIGN``-byte lines (``engine.engine_rows``, ``panels.panel_rows``) — and
the one standardisation of a row (``_row_moments``, so every path gets the same bits).

``engine.py`` (the 6×4 row block and the drivers) and ``panels.py`` (the packed-panel
micro-kernel the drivers run on AVX-512 hosts) both import this module; it imports neither.
"""
from __future__ import annotations

import math

from labkit.jit import njit

__all__ = ["LANE"]

#: rows are padded to a multiple of LANE doubles (one 512-bit vector, one 64-byte cache line)
LANE = 8
_ALIGN = 64


@njit(cache=True, nogil=True)
def _row_moments(x):
    """(mean, 1/‖x − mean‖, constant?) of one row, two-pass, sums in sample order; a constant
    row (every sample equal to the first) → inverse norm 0. Shared by every standardisation."""
    l = x.shape[0]
    x0 = x[0]
    mean = 0.0
    same = True
    for k in range(l):
        mean += x[k]
        if x[k] != x0:
            same = False
    mean /= l
    inv = 0.0
    if not same:
        ss = 0.0
        for k in range(l):
            d = x[k] - mean
            ss += d * d
        inv = 1.0 / math.sqrt(ss)
    return mean, inv, same
