"""Filling the engine's tiles: ``TILE`` pairs of letters or codes → one transposed
(length × ``TILE``) uint8 tile, zeros past the ends, and whether a symbol is bad — checked on the
tile just written, on the tile's thread. Full tiles of equal lengths on 8-byte boundaries take an
8 × 8 byte transpose in registers."""
from __future__ import annotations

import sys

import numpy as np

from labkit.jit import njit

from .scoring import ALPHABET

__all__ = ["TILE"]

#: Pairs per tile: the lane loop's compile-time trip count (two 512-bit int16 vectors).
TILE = 64

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
