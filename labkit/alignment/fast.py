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

import sys

import numpy as np
from numba import prange

from labkit.jit import njit

from ._atomic import claim
from .kernels import _ends
from .scoring import ALPHABET

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


#: array arguments never overlap here (the callers allocate them): LLVM noalias
_noalias = njit(cache=True, noalias=True)


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


# ---------------------------------------------------------------------------- tiles
_LITTLE = sys.byteorder == "little"              # the masks number bytes from the low end
_M1 = np.uint64(0x00FF00FF00FF00FF)
_M2 = np.uint64(0x0000FFFF0000FFFF)
_M4 = np.uint64(0x00000000FFFFFFFF)
_SYMBOLS = np.array([ord(c) | 0x20 for c in ALPHABET], np.uint8)   # lower case
assert _SYMBOLS.size == 5, "_misses compares against exactly five letters"


@njit(cache=True, inline="always")
def _swap(a, b, mask, shift):
    """Exchange the bytes of a and b that an 8 × 8 byte transpose swaps at this distance."""
    t = ((a >> shift) ^ b) & mask
    return a ^ (t << shift), b ^ t


@njit(cache=True)
def _transpose8(rv, starts, fold, Tv, kb, nblocks):
    """Eight sequences (uint64 word offsets ``starts`` into ``rv``) → columns 8·kb … 8·kb + 7
    of the tile ``Tv`` (its rows as uint64): each 8 × 8 block of bytes transposed in registers
    by three rounds of masked swaps (8, 16, 32 bits), eight words in, eight words out; every
    byte OR ``fold``."""
    s0, s1, s2, s3 = starts[0], starts[1], starts[2], starts[3]
    s4, s5, s6, s7 = starts[4], starts[5], starts[6], starts[7]
    sh8, sh16, sh32 = np.uint64(8), np.uint64(16), np.uint64(32)
    for ib in range(nblocks):
        x0, x1 = _swap(rv[s0 + ib] | fold, rv[s1 + ib] | fold, _M1, sh8)
        x2, x3 = _swap(rv[s2 + ib] | fold, rv[s3 + ib] | fold, _M1, sh8)
        x4, x5 = _swap(rv[s4 + ib] | fold, rv[s5 + ib] | fold, _M1, sh8)
        x6, x7 = _swap(rv[s6 + ib] | fold, rv[s7 + ib] | fold, _M1, sh8)
        x0, x2 = _swap(x0, x2, _M2, sh16)
        x1, x3 = _swap(x1, x3, _M2, sh16)
        x4, x6 = _swap(x4, x6, _M2, sh16)
        x5, x7 = _swap(x5, x7, _M2, sh16)
        x0, x4 = _swap(x0, x4, _M4, sh32)
        x1, x5 = _swap(x1, x5, _M4, sh32)
        x2, x6 = _swap(x2, x6, _M4, sh32)
        x3, x7 = _swap(x3, x7, _M4, sh32)
        r = 8 * ib
        Tv[r, kb] = x0
        Tv[r + 1, kb] = x1
        Tv[r + 2, kb] = x2
        Tv[r + 3, kb] = x3
        Tv[r + 4, kb] = x4
        Tv[r + 5, kb] = x5
        Tv[r + 6, kb] = x6
        Tv[r + 7, kb] = x7


@njit(cache=True)
def _misses(seg):
    """Nonzero if a byte of ``seg`` (1-D, letters) is no letter of the alphabet in either case.
    (Written as a max-reduction of one chain of byte compares: 64 lanes; a select chain or an
    OR-reduction vectorises 8 wide here.)"""
    s0, s1, s2, s3, s4 = _SYMBOLS[0], _SYMBOLS[1], _SYMBOLS[2], _SYMBOLS[3], _SYMBOLS[4]
    acc = np.uint8(0)
    for i in range(seg.size):
        u = seg[i] | np.uint8(0x20)
        m = (u != s0) & (u != s1) & (u != s2) & (u != s3) & (u != s4)
        acc = max(acc, np.uint8(m))
    return acc


@njit(cache=True)
def _bad_codes(seg):
    """Nonzero if a code of ``seg`` (1-D uint8) is above 4 (a max-reduction, 64 lanes)."""
    acc = np.uint8(0)
    for i in range(seg.size):
        acc = max(acc, seg[i])
    return np.uint8(acc > np.uint8(4))


@njit(cache=True)
def _fill(raw, spans, order, start, stop, letters, L):
    """Pairs order[start:stop] (sequence p = raw[spans[p, 0]:][:spans[p, 1]]) → (T, lens, bad):
    the L × TILE tile, zeros past the ends, the lane lengths (L for padding lanes), and whether
    a symbol is bad: a letter outside the alphabet, or without ``letters`` a code above 4 (the
    check runs on the tile just written, in cache, on the tile's thread). With ``letters`` the
    symbols stay letters, folded to lower case (the kernel only compares them; a code would
    cost a lookup per letter). Full tiles of equal lengths on 8-byte boundaries take the
    register transpose."""
    n = stop - start
    T = np.zeros((L, TILE), np.uint8)
    lens = np.full(TILE, L, np.int64)
    fast = _LITTLE and n == TILE and L % 8 == 0 and raw.size % 8 == 0
    for k in range(n):
        p = order[start + k]
        lens[k] = spans[p, 1]
        fast = fast and spans[p, 1] == L and spans[p, 0] % 8 == 0
    fold = np.uint8(0x20) if letters else np.uint8(0)
    bad = np.uint8(0)
    if fast:
        rv = raw.view(np.uint64)
        Tv = T.view(np.uint64)
        starts = np.empty(8, np.int64)
        fold8 = np.uint64(0x0101010101010101) * np.uint64(fold)
        for kb in range(TILE // 8):
            for r in range(8):
                starts[r] = spans[order[start + 8 * kb + r], 0] // 8
            _transpose8(rv, starts, fold8, Tv, kb, L // 8)
        flat = T.reshape(T.size)
        bad = _misses(flat) if letters else _bad_codes(flat)
    else:
        last = -1
        for k in range(n):
            p = order[start + k]
            o = spans[p, 0]
            if o != last:                          # a query repeated in every lane: once
                seg = raw[o:o + spans[p, 1]]
                bad |= _misses(seg) if letters else _bad_codes(seg)
                last = o
            for i in range(spans[p, 1]):
                T[i, k] = raw[o + i] | fold
    return T, lens, bad != 0


@njit(cache=True)
def _align_tile(raw1, sp1, raw2, sp2, order, letters, scoring, start, stop, out):
    """Pairs order[start:stop] → one tile each side → scores into out[order[...]]; True if a
    symbol is bad (``_fill``; nothing written then)."""
    L1 = 1
    L2 = 1
    for k in range(start, stop):
        L1 = max(L1, sp1[order[k], 1])
        L2 = max(L2, sp2[order[k], 1])
    s1T, l1, bad1 = _fill(raw1, sp1, order, start, stop, letters, L1)
    s2T, l2, bad2 = _fill(raw2, sp2, order, start, stop, letters, L2)
    if bad1 or bad2:
        return True
    res = np.empty(TILE, np.int32)
    _tile(s1T, s2T, l1, l2, scoring.match, scoring.mismatch, scoring.gap_open,
          scoring.gap_extend, res)
    for k in range(start, stop):
        out[order[k]] = res[k - start]
    return False


@njit(cache=True)
def _code_spans(seqs, lens):
    """(flat codes, spans) of padded codes (pairs × length, C-contiguous)."""
    n, L = seqs.shape
    spans = np.empty((n, 2), np.int64)
    for p in range(n):
        spans[p, 0] = p * L
        spans[p, 1] = lens[p]
    return seqs.reshape(n * L), spans


@njit(cache=True, parallel=True)
def _align_spans_parallel(raw1, sp1, raw2, sp2, order, letters, scoring, out):
    """Tiles of ``TILE`` pairs (in ``order``) over threads; True if a symbol was bad.

    Threads claim tiles from a shared atomic counter, the next one as they finish one, the
    last tiles of ``order`` (the longest, as ``align`` sorts ragged input) first: a thread
    that starts late or loses its core for a while leaves its share to the others, and
    ragged tiles balance. (A ``prange`` over the tiles gives each thread one fixed block of
    them before any runs: the call waits for the slowest block.) The ``prange`` has one
    iteration per tile only so that it needs no thread count (``numba.get_num_threads()``
    would keep the function out of numba's cache): a thread's first iteration claims until
    no tile is left, its other iterations find none."""
    nt = (order.size + TILE - 1) // TILE
    bad = np.empty(nt, np.bool_)                   # every tile writes its entry
    nxt = np.empty(8, np.int64)                    # the counter: a cache line of its own
    nxt[0] = 0                                     # (np.zeros would be a parallel loop: a
    for _ in prange(nt):                           # region of its own, threads woken twice)
        c = claim(nxt)
        while c < nt:
            t = nt - 1 - c
            bad[t] = _align_tile(raw1, sp1, raw2, sp2, order, letters, scoring, t * TILE,
                                 min(t * TILE + TILE, order.size), out)
            c = claim(nxt)
    return bad.any()


@njit(cache=True)
def _align_spans_serial(raw1, sp1, raw2, sp2, order, letters, scoring, out):
    """``_align_spans_parallel`` on the calling thread only."""
    for t in range((order.size + TILE - 1) // TILE):
        if _align_tile(raw1, sp1, raw2, sp2, order, letters, scoring, t * TILE,
                       min(t * TILE + TILE, order.size), out):
            return True
    return False


@njit(cache=True)
def _align_codes(seqs1, seqs2, scoring, parallel, out):
    """Code arrays of equal lengths (pairs × length uint8, C-contiguous, same pairs) → scores
    into ``out``, over threads if ``parallel``; True if a code is above 4 (each tile checks its
    own, on its thread: no pass over the input before the kernel)."""
    n = seqs1.shape[0]
    raw1, sp1 = _code_spans(seqs1, np.full(n, seqs1.shape[1], np.int64))
    raw2, sp2 = _code_spans(seqs2, np.full(n, seqs2.shape[1], np.int64))
    if parallel:
        return _align_spans_parallel(raw1, sp1, raw2, sp2, np.arange(n), False, scoring, out)
    return _align_spans_serial(raw1, sp1, raw2, sp2, np.arange(n), False, scoring, out)


@njit(cache=True)
def align_shifted_serial(seqs1, lens1, seqs2, lens2, scoring):
    """The fast kernel on padded codes (pairs × length uint8, lengths ≥ 1), one thread: tiles of
    ``TILE`` pairs. Assumes validated input within ``fits_shifted``."""
    raw1, sp1 = _code_spans(seqs1, lens1)
    raw2, sp2 = _code_spans(seqs2, lens2)
    out = np.empty(seqs1.shape[0], np.int32)
    _align_spans_serial(raw1, sp1, raw2, sp2, np.arange(seqs1.shape[0]), False, scoring, out)
    return out


@njit(cache=True)
def align_shifted(seqs1, lens1, seqs2, lens2, scoring):
    """``align_shifted_serial`` with threads over tiles."""
    raw1, sp1 = _code_spans(seqs1, lens1)
    raw2, sp2 = _code_spans(seqs2, lens2)
    out = np.empty(seqs1.shape[0], np.int32)
    _align_spans_parallel(raw1, sp1, raw2, sp2, np.arange(seqs1.shape[0]), False, scoring, out)
    return out
