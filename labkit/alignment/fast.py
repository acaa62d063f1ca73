"""The kernels ``align`` runs: the batched int16 kernel with shifted scores, fixed 64-lane tiles,
compiled at the host's full vector width.

Three changes to ``kernels.align_batched`` (same DP, same scores):

* **Shifted scores.** Every value is stored as ``X̂ = X − (i + j)·ge`` (``ge`` the gap extension).
  The extensions vanish from the recurrence — ``Ê(i, j+1) = max(Ê(i, j), Ĥ(i, j) + go − ge)`` and
  likewise F — and the diagonal step adds ``s − 2·ge``; the borders become constants (``go − ge``).
  A cell costs 8 vector operations instead of 10 (compare, select, add, two maxima for H, the
  opening, two maxima for the gaps); the score is read out as ``Ĥ + (len1 + len2)·ge`` in int32.
  The shifted values grow by ``|ge|`` per row and column, so ``fits_shifted`` bounds them (it
  admits less than ``fits_int16``; ``align`` falls back to the unshifted kernel between the two).
* **64-lane tiles, no aliasing.** The lane loop runs over exactly ``TILE`` pairs (a compile-time
  trip count) and the sweep over the rows is a function whose array arguments are marked
  ``noalias``: LLVM then needs no run-time overlap checks and no remainder loop per row, which
  cost about as much as the row's work itself at 64 lanes.
* **512-bit vectors** (``labkit.jit.njit``): 32 int16 lanes per instruction on AVX-512 hosts
  where LLVM would pick 256 bits; ``LABKIT_VECTOR_BITS=256`` turns it off.

These are not the lessons' step kernels: the checks compare students against plain-``numba.njit``
kernels (``kernels.py``) only.
"""
from __future__ import annotations

import numba
import numpy as np
from numba import prange

from labkit.jit import WidePipeline, njit

from .kernels import _ends, _gather_pairs, _transpose_pairs

__all__ = ["TILE", "fits_shifted", "align_shifted", "align_shifted_serial"]

#: Pairs per tile: the lane loop's compile-time trip count (two 512-bit int16 vectors).
TILE = 64

_I16_MIN, _I16_MAX = -32768, 32767


def fits_shifted(len1: int, len2: int, scoring) -> bool:
    """True when every shifted DP value (``X − (i + j)·ge``) for sequences up to len1 × len2 fits
    int16 (a margin of 8 kept, like ``fits_int16``)."""
    mt, mm, go, ge = scoring.ints()
    g = go - ge
    h_lo = min(0, 2 * g)                       # H ≥ two leading gaps → Ĥ ≥ 2·(go − ge)
    lo = min(h_lo + min(0, g), h_lo + min(mt, mm) - 2 * ge)
    hi = max(mt, mm, 0) * min(len1, len2) - (len1 + len2) * ge + max(0, g)
    return lo >= _I16_MIN + 8 and hi <= _I16_MAX - 8


class _NoAliasPipeline(WidePipeline):
    """labkit.jit's pipeline with numba's ``noalias`` flag: array arguments get LLVM ``noalias``.
    Only for functions whose array arguments never overlap (the callers here allocate them)."""

    def __init__(self, typingctx, targetctx, library, args, return_type, flags, locals):
        flags.noalias = True                   # a fresh Flags object per compilation
        super().__init__(typingctx, targetctx, library, args, return_type, flags, locals)


_noalias = numba.njit(cache=True, pipeline_class=_NoAliasPipeline)


@njit(cache=True, inline="always")
def _cell(d, f, e, a, b, mt, mm, g):
    """One shifted cell: diagonal ``d``, gaps ``f`` (down) and ``e`` (right), residues a, b;
    ``mt``/``mm`` already minus 2·ge, ``g`` = go − ge → (H, next f, next e)."""
    h = np.int16(d + (mt if a == b else mm))
    h = h if h > f else f
    h = h if h > e else e
    o = np.int16(h + g)
    return h, (f if f > o else o), (e if e > o else o)


@_noalias
def _sweep4(s1T, b0, b1, b2, b3, H, E, D0, D1, D2, D3, F0, F1, F2, F3, mt, mm, g):
    """Four columns (residues b0..b3 of each lane) over every row of the tile: H/E hold each row's
    H and E of the last column done, D/F each column's diagonal and vertical gap."""
    for i in range(1, s1T.shape[0] + 1):
        a = s1T[i - 1]
        hr = H[i]
        er = E[i]
        for k in range(TILE):
            ak = a[k]
            d = D0[k]
            D0[k] = hr[k]
            left, F0[k], e = _cell(d, F0[k], er[k], ak, b0[k], mt, mm, g)
            d = D1[k]
            D1[k] = left
            left, F1[k], e = _cell(d, F1[k], e, ak, b1[k], mt, mm, g)
            d = D2[k]
            D2[k] = left
            left, F2[k], e = _cell(d, F2[k], e, ak, b2[k], mt, mm, g)
            d = D3[k]
            D3[k] = left
            hr[k], F3[k], er[k] = _cell(d, F3[k], e, ak, b3[k], mt, mm, g)


@_noalias
def _sweep1(s1T, b0, H, E, D0, F0, mt, mm, g):
    """One column over every row (where a lane's sequence ends inside a group of four)."""
    for i in range(1, s1T.shape[0] + 1):
        a = s1T[i - 1]
        hr = H[i]
        er = E[i]
        for k in range(TILE):
            d = D0[k]
            D0[k] = hr[k]
            hr[k], F0[k], er[k] = _cell(d, F0[k], er[k], a[k], b0[k], mt, mm, g)


@njit(cache=True)
def _tile(s1T, s2T, lens1, lens2, mt, mm, go, ge, out):
    """One transposed tile (L1 × TILE, L2 × TILE codes): out[k] = score of lane k, read at its
    own cell (lens1[k], lens2[k])."""
    L1 = s1T.shape[0]
    L2 = s2T.shape[0]
    g = np.int16(go - ge)
    g2 = np.int16(2 * g)
    mt = np.int16(mt - 2 * ge)
    mm = np.int16(mm - 2 * ge)
    H = np.full((L1 + 1, TILE), g, np.int16)       # Ĥ(i, 0) = go − ge
    E = np.full((L1 + 1, TILE), g2, np.int16)      # Ê(i, 1) = Ĥ(i, 0) + go − ge
    S = np.empty((8, TILE), np.int16)              # per column of a sweep: diagonal D, gap F
    is_end = _ends(lens2, L2)
    j = 0                                          # columns done
    while j < L2:
        S[:4] = g                                  # Ĥ(0, j…j+3): go − ge (0 at the corner)
        S[0] = np.int16(0) if j == 0 else g
        S[4:] = g2                                 # F̂(1, ·) = Ĥ(0, ·) + go − ge
        if j + 4 <= L2 and not (is_end[j + 1] or is_end[j + 2] or is_end[j + 3]):
            _sweep4(s1T, s2T[j], s2T[j + 1], s2T[j + 2], s2T[j + 3], H, E, S[0], S[1], S[2],
                    S[3], S[4], S[5], S[6], S[7], mt, mm, g)
            j += 4
        else:
            _sweep1(s1T, s2T[j], H, E, S[0], S[4], mt, mm, g)
            j += 1
        if is_end[j]:
            for k in range(TILE):
                if lens2[k] == j:
                    out[k] = np.int32(H[lens1[k], k]) + np.int32(lens1[k] + j) * np.int32(ge)


@njit(cache=True)
def _pairs_tile(seqs1, lens1, seqs2, lens2, scoring, start, stop, out):
    """Pairs start..stop (≤ TILE) of padded codes → one tile → out[start:stop]."""
    s1T, s2T, l1, l2 = _transpose_pairs(seqs1, lens1, seqs2, lens2, start, stop, TILE)
    res = np.empty(TILE, np.int32)
    _tile(s1T, s2T, l1, l2, scoring.match, scoring.mismatch, scoring.gap_open,
          scoring.gap_extend, res)
    for p in range(start, stop):
        out[p] = res[p - start]


@njit(cache=True, parallel=True)
def align_shifted(seqs1, lens1, seqs2, lens2, scoring):
    """The fast kernel on padded codes (pairs × length uint8, lengths ≥ 1): tiles of ``TILE``
    pairs, threads over tiles. Assumes validated input within ``fits_shifted``."""
    n = seqs1.shape[0]
    out = np.empty(n, np.int32)
    for t in prange((n + TILE - 1) // TILE):
        _pairs_tile(seqs1, lens1, seqs2, lens2, scoring, t * TILE, min(t * TILE + TILE, n), out)
    return out


@njit(cache=True)
def align_shifted_serial(seqs1, lens1, seqs2, lens2, scoring):
    """``align_shifted`` on the calling thread only."""
    n = seqs1.shape[0]
    out = np.empty(n, np.int32)
    for t in range((n + TILE - 1) // TILE):
        _pairs_tile(seqs1, lens1, seqs2, lens2, scoring, t * TILE, min(t * TILE + TILE, n), out)
    return out


# ---------------------------------------------------------------------------- letters in
@njit(cache=True)
def _letters_tile(raw1, sp1, raw2, sp2, order, lut, scoring, start, stop, out):
    """Pairs order[start:stop] as raw letters → codes, transposed, aligned → out; -1 or the bad
    letter's position as in ``kernels._ragged_batch``."""
    s1T, s2T, l1, l2, err = _gather_pairs(raw1, sp1, raw2, sp2, order, lut, start, stop, TILE)
    if err != -1:
        return err
    res = np.empty(TILE, np.int32)
    _tile(s1T, s2T, l1, l2, scoring.match, scoring.mismatch, scoring.gap_open,
          scoring.gap_extend, res)
    for k in range(start, stop):
        out[order[k]] = res[k - start]
    return -1


@njit(cache=True)
def _align_letters_serial(raw1, sp1, raw2, sp2, order, lut, scoring, out):
    """Letters in, scores out, one thread, tile by tile; -1 or the first bad letter's position."""
    n = order.size
    for t in range((n + TILE - 1) // TILE):
        r = _letters_tile(raw1, sp1, raw2, sp2, order, lut, scoring, t * TILE,
                          min(t * TILE + TILE, n), out)
        if r != -1:
            return r
    return -1


@njit(cache=True, parallel=True)
def _align_letters_parallel(raw1, sp1, raw2, sp2, order, lut, scoring, out):
    """``_align_letters_serial`` with threads over tiles."""
    n = order.size
    nt = (n + TILE - 1) // TILE
    errs = np.full(nt, -1, np.int64)
    for t in prange(nt):
        errs[t] = _letters_tile(raw1, sp1, raw2, sp2, order, lut, scoring, t * TILE,
                                min(t * TILE + TILE, n), out)
    for t in range(nt):
        if errs[t] != -1:
            return errs[t]
    return -1
