"""The kernels ``align`` runs: the batched kernel with shifted int16 scores or int8 differences,
fixed 64-lane tiles, compiled at the host's full vector width.

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

**8-bit lanes** (``align_int8``): the same tiles with the cells of ``_int8`` — int8
*differences* between neighbouring cells, which stay within a few multiples of the scores at
any length: 64 lanes per 512-bit vector at 11 operations per cell. ``align`` runs it where
``fits_int8(scoring)`` holds (the default scores do) and the lengths ``fits_shifted``; elsewhere
the int16 kernels, with the same scores.

These are not the lessons' step kernels: the checks compare students against plain-``numba.njit``
kernels (``kernels.py``) only.
"""
from __future__ import annotations

import numba
import numpy as np
from numba import prange

from labkit._common import use_threads
from labkit.jit import njit

from ._atomic import claim
from ._int8 import _tile8, fits_int8
from ._ragged import _align_ragged_parallel, _align_ragged_serial
from ._tiles import TILE, _fill
from .inputs import _letters
from .kernels import _align_scalar_lens, _ends, align_batched, align_batched_serial
from .scoring import _LOOKUP, fits_int16

__all__ = ["TILE", "fits_shifted", "fits_int8", "align_shifted", "align_shifted_serial",
           "align_int8", "align_int8_serial", "align_direct", "align_codes"]

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


#: The flags the jitted callers pass: numpy bools, typed ``bool`` like the Python callers' (a
#: literal ``True``/``False`` would make numba compile every kernel below once more for
#: ``Literal[bool]``: each variant of the tile drivers costs seconds of a notebook's first run).
_NO, _YES = np.bool_(False), np.bool_(True)


@njit(cache=True)
def _align_tile(raw1, sp1, raw2, sp2, order, letters, scoring, int8, start, stop, out):
    """Pairs order[start:stop] → one tile each side → scores into out[order[...]] (with
    ``int8`` the int8 difference kernel ``_int8._tile8``, else the shifted int16 ``_tile``);
    True if a symbol is bad (``_fill``; nothing written then)."""
    L1 = np.int64(1)                               # not a literal 1: numba would compile
    L2 = np.int64(1)                               # _fill for Literal[int](1) as well
    for k in range(start, stop):
        L1 = max(L1, sp1[order[k], 1])
        L2 = max(L2, sp2[order[k], 1])
    s1T, l1, bad1 = _fill(raw1, sp1, order, start, stop, letters, L1)
    s2T, l2, bad2 = _fill(raw2, sp2, order, start, stop, letters, L2)
    if bad1 or bad2:
        return True
    res = np.empty(TILE, np.int32)
    if int8:
        _tile8(s1T, s2T, l1, l2, scoring.match, scoring.mismatch, scoring.gap_open,
               scoring.gap_extend, res)
    else:
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
def _align_spans_parallel(raw1, sp1, raw2, sp2, order, letters, scoring, int8, out):
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
            bad[t] = _align_tile(raw1, sp1, raw2, sp2, order, letters, scoring, int8, t * TILE,
                                 min(t * TILE + TILE, order.size), out)
            c = claim(nxt)
    return bad.any()


@njit(cache=True)
def _align_spans_serial(raw1, sp1, raw2, sp2, order, letters, scoring, int8, out):
    """``_align_spans_parallel`` on the calling thread only."""
    for t in range((order.size + TILE - 1) // TILE):
        if _align_tile(raw1, sp1, raw2, sp2, order, letters, scoring, int8, t * TILE,
                       min(t * TILE + TILE, order.size), out):
            return True
    return False


@njit(cache=True)
def _align_codes(seqs1, seqs2, scoring, int8, parallel, out):
    """Code arrays of equal lengths (pairs × length uint8, C-contiguous, same pairs) → scores
    into ``out`` (int8 differences if ``int8``, else shifted int16), over threads if
    ``parallel``; True if a code is above 4 (each tile checks its own, on its thread: no pass
    over the input before the kernel)."""
    n = seqs1.shape[0]
    raw1, sp1 = _code_spans(seqs1, np.full(n, seqs1.shape[1], np.int64))
    raw2, sp2 = _code_spans(seqs2, np.full(n, seqs2.shape[1], np.int64))
    if parallel:
        return _align_spans_parallel(raw1, sp1, raw2, sp2, np.arange(n), _NO, scoring, int8,
                                     out)
    return _align_spans_serial(raw1, sp1, raw2, sp2, np.arange(n), _NO, scoring, int8, out)


@njit(cache=True)
def _padded(seqs1, lens1, seqs2, lens2, scoring, int8, parallel):
    """The tiles of padded codes (pairs × length uint8, lengths ≥ 1) → scores."""
    raw1, sp1 = _code_spans(seqs1, lens1)
    raw2, sp2 = _code_spans(seqs2, lens2)
    out = np.empty(seqs1.shape[0], np.int32)
    order = np.arange(seqs1.shape[0])
    if parallel:
        _align_spans_parallel(raw1, sp1, raw2, sp2, order, _NO, scoring, int8, out)
    else:
        _align_spans_serial(raw1, sp1, raw2, sp2, order, _NO, scoring, int8, out)
    return out


@njit(cache=True)
def align_shifted_serial(seqs1, lens1, seqs2, lens2, scoring):
    """The shifted int16 kernel on padded codes (pairs × length uint8, lengths ≥ 1), one
    thread: tiles of ``TILE`` pairs. Assumes validated input within ``fits_shifted``."""
    return _padded(seqs1, lens1, seqs2, lens2, scoring, _NO, _NO)


@njit(cache=True)
def align_shifted(seqs1, lens1, seqs2, lens2, scoring):
    """``align_shifted_serial`` with threads over tiles."""
    return _padded(seqs1, lens1, seqs2, lens2, scoring, _NO, _YES)


@njit(cache=True)
def align_int8_serial(seqs1, lens1, seqs2, lens2, scoring):
    """The int8 difference kernel (``_int8``) on padded codes, one thread: tiles of ``TILE``
    pairs, 64 lanes per 512-bit vector. Assumes validated input within ``fits_int8`` (any
    lengths: the differences do not grow)."""
    return _padded(seqs1, lens1, seqs2, lens2, scoring, _YES, _NO)


@njit(cache=True)
def align_int8(seqs1, lens1, seqs2, lens2, scoring):
    """``align_int8_serial`` with threads over tiles."""
    return _padded(seqs1, lens1, seqs2, lens2, scoring, _YES, _YES)


# ---------------------------------------------------------------------------- what align runs
def align_direct(seqs1, seqs2, sc, lanes, threads):
    """``align`` on two lists of str or two 2-D uint8 code arrays, read as they are (no padded
    copies, the symbols checked on the tiles' threads); None for any other input, or when a
    symbol is bad or int16 could overflow: ``align`` then validates, reports or widens."""
    out = _align_letters(seqs1, seqs2, sc, lanes, threads, "auto")
    return _align_arrays(seqs1, seqs2, sc, threads) if out is None else out


def _align_letters(seqs1, seqs2, sc, lanes, threads, method, *, int8=True):
    """``align`` on two lists of str in one pass per batch (letters → codes → transposed batch
    → scores, ``_ragged._align_ragged_*``): no padded code arrays. None when the input is not
    two non-empty lists of str of the same size, a letter is outside the alphabet, or int16
    could overflow (the general path then validates, reports or widens). ``int8=False``: the
    shifted int16 tiles even where ``fits_int8`` holds (lab 01's challenge anchor)."""
    a, b = _letters(seqs1), _letters(seqs2)
    if a is None or b is None or a[1].shape[0] != b[1].shape[0]:
        return None
    (raw1, sp1), (raw2, sp2) = a, b
    l1, l2 = sp1[:, 1], sp2[:, 1]
    if not fits_int16(int(l1.max()), int(l2.max()), sc):
        return None
    n = l1.size
    width = max(32, (lanes + 31) // 32 * 32)
    equal = l1.min() == l1.max() and l2.min() == l2.max()
    order = np.arange(n, dtype=np.int64) if equal else np.lexsort((l1, l2)).astype(np.int64)
    out = np.empty(n, np.int32)
    with use_threads(threads):
        many = numba.get_num_threads() > 1
        if fits_shifted(int(l1.max()), int(l2.max()), sc):
            kernel = _align_spans_parallel if many and n > TILE else _align_spans_serial
            bad = -1 if not kernel(raw1, sp1, raw2, sp2, order, True, sc,
                                   int8 and fits_int8(sc), out) else 0
        else:
            kernel = _align_ragged_parallel if many and n > width else _align_ragged_serial
            bad = kernel(raw1, sp1, raw2, sp2, order, _LOOKUP, sc, width, out)
    return out if bad == -1 else None


def _align_arrays(seqs1, seqs2, sc, threads):
    """``align`` on two 2-D uint8 code arrays with as many rows, within ``fits_shifted``: one
    kernel call (``_align_codes``) that checks the codes tile by tile on the tiles'
    threads, where ``_as_codes`` reads all of them first on one thread. None for any other
    input or if a code is above 4 (the general path then validates and reports)."""
    if not (type(seqs1) is np.ndarray and type(seqs2) is np.ndarray and seqs1.ndim == 2
            and seqs2.ndim == 2 and seqs1.dtype == np.uint8 and seqs2.dtype == np.uint8):
        return None
    (n, len1), (n2, len2) = seqs1.shape, seqs2.shape
    if n != n2 or n == 0 or len1 == 0 or len2 == 0 or not fits_shifted(len1, len2, sc):
        return None
    out = np.empty(n, np.int32)
    with use_threads(threads) as t:
        bad = _align_codes(np.ascontiguousarray(seqs1), np.ascontiguousarray(seqs2), sc,
                           fits_int8(sc), t > 1 and n > TILE, out)
    return None if bad else out


def align_codes(c1, l1, c2, l2, sc, method, lanes, threads):
    """Scores of validated padded codes (as many pairs each side) with the kernel that fits:
    within ``fits_shifted`` ``align_int8`` if ``fits_int8`` else ``align_shifted``,
    ``align_batched`` within ``fits_int16``, else the
    int32 scalar kernel ("auto", "scalar") or ValueError ("transposed"). Ragged batches run
    sorted by length (similar lengths share a tile: less padding)."""
    n = c1.shape[0]
    if n == 0:
        return np.zeros(0, np.int32)
    with use_threads(threads):
        if method == "scalar":
            return _align_scalar_lens(c1, l1, c2, l2, sc)
        many = numba.get_num_threads() > 1
        if fits_shifted(int(l1.max()), int(l2.max()), sc):
            if fits_int8(sc):
                kernel = align_int8 if many and n > TILE else align_int8_serial
            else:
                kernel = align_shifted if many and n > TILE else align_shifted_serial
            extra = ()
        elif fits_int16(int(l1.max()), int(l2.max()), sc):
            width = max(32, (lanes + 31) // 32 * 32)
            kernel = align_batched if many and n > width else align_batched_serial
            extra = (lanes,)
        elif method == "transposed":
            raise ValueError(f"sequences up to {int(l1.max())} × {int(l2.max())} with {sc} can "
                             f"overflow int16 scores; use method='auto' (widens to int32) "
                             f"or method='scalar'")
        else:
            return _align_scalar_lens(c1, l1, c2, l2, sc)
        if (l1 == l1[0]).all() and (l2 == l2[0]).all():
            return kernel(c1, l1, c2, l2, sc, *extra)
        order = np.lexsort((l1, l2))             # similar lengths share a batch: less padding
        res = kernel(np.ascontiguousarray(c1[order]), l1[order],
                     np.ascontiguousarray(c2[order]), l2[order], sc, *extra)
        out = np.empty(n, np.int32)
        out[order] = res
        return out
