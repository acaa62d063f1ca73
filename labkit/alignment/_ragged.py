"""The engine's fallback for lists of str beyond ``fits_shifted`` (within ``fits_int16``):
letters in, scores out, one pass per batch of ``lanes`` pairs (encode, transpose, align with
``kernels._batch_kernel``), threads over batches; no padded 2-D code arrays."""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from .kernels import _batch_kernel


@njit(cache=True)
def _gather(raw, spans, order, start, stop, lanes, lut, T, lens):
    """Pairs order[start:stop] of a ragged batch of raw letters (sequence p =
    ``raw[spans[p, 0]:spans[p, 0] + spans[p, 1]]``) → T (L × lanes, codes through
    ``lut``; zeros elsewhere) and lens (their lengths; padding lanes get the full size L).
    Returns the index into ``raw`` of the first letter outside the alphabet, or -1."""
    L = T.shape[0]
    T[:, :] = 0
    for k in range(lanes):
        lens[k] = L
    for k in range(stop - start):
        p = order[start + k]
        o = spans[p, 0]
        m = spans[p, 1]
        lens[k] = m
        seen = np.uint8(0)
        for i in range(m):                       # no branch: codes 0..4 OR to ≤ 7, 255 marks
            c = lut[raw[o + i]]                  # a letter outside the alphabet
            seen |= c
            T[i, k] = c
        if seen > 7:
            for i in range(m):
                if lut[raw[o + i]] > 4:
                    return o + i
    return -1


@njit(cache=True)
def _gather_pairs(raw1, sp1, raw2, sp2, order, lut, start, stop, lanes):
    """Pairs order[start:stop] of two ragged batches of letters → (s1T, s2T, l1, l2, err):
    transposed codes as ``_gather`` makes them; err -1, or the first bad letter's position
    as ``-2 - index`` into raw1 or ``-2 - index - raw1.size`` into raw2."""
    L1 = 1
    L2 = 1
    for k in range(start, stop):
        p = order[k]
        L1 = max(L1, sp1[p, 1])
        L2 = max(L2, sp2[p, 1])
    s1T = np.empty((L1, lanes), np.uint8)
    s2T = np.empty((L2, lanes), np.uint8)
    l1 = np.empty(lanes, np.int64)
    l2 = np.empty(lanes, np.int64)
    err = -1
    bad = _gather(raw1, sp1, order, start, stop, lanes, lut, s1T, l1)
    if bad >= 0:
        err = -2 - bad
    else:
        bad = _gather(raw2, sp2, order, start, stop, lanes, lut, s2T, l2)
        if bad >= 0:
            err = -2 - bad - raw1.size
    return s1T, s2T, l1, l2, err


@njit(cache=True)
def _ragged_batch(raw1, sp1, raw2, sp2, order, lut, mt, mm, go, ge, start, stop, lanes, out):
    """One batch of ``_align_ragged``: gather + transpose + align; -1 or the bad letter's
    position (as ``-2 - index`` into raw1, or ``-2 - index - raw1.size`` into raw2)."""
    s1T, s2T, l1, l2, err = _gather_pairs(raw1, sp1, raw2, sp2, order, lut, start, stop, lanes)
    if err != -1:
        return err
    res = np.empty(lanes, np.int32)
    _batch_kernel(s1T, s2T, l1, l2, mt, mm, go, ge, res)
    for k in range(start, stop):
        out[order[k]] = res[k - start]
    return -1


@njit(cache=True)
def _align_ragged_serial(raw1, sp1, raw2, sp2, order, lut, scoring, lanes, out):
    """Letters in, scores out, one thread: each batch of ``lanes`` pairs (in ``order``) is
    encoded, transposed and aligned in one pass (no padded 2-D code arrays). Returns -1, or the
    first bad letter's position as in ``_ragged_batch``."""
    n = order.size
    nb = (n + lanes - 1) // lanes
    for bi in range(nb):
        start = bi * lanes
        r = _ragged_batch(raw1, sp1, raw2, sp2, order, lut, scoring.match, scoring.mismatch,
                          scoring.gap_open, scoring.gap_extend, start, min(start + lanes, n),
                          lanes, out)
        if r != -1:
            return r
    return -1


@njit(cache=True, parallel=True)
def _align_ragged_parallel(raw1, sp1, raw2, sp2, order, lut, scoring, lanes, out):
    """``_align_ragged_serial`` with threads over batches."""
    n = order.size
    nb = (n + lanes - 1) // lanes
    errs = np.full(nb, -1, np.int64)
    for bi in prange(nb):
        start = bi * lanes
        errs[bi] = _ragged_batch(raw1, sp1, raw2, sp2, order, lut, scoring.match,
                                 scoring.mismatch, scoring.gap_open, scoring.gap_extend, start,
                                 min(start + lanes, n), lanes, out)
    for bi in range(nb):
        if errs[bi] != -1:
            return errs[bi]
    return -1
