"""8-bit lanes: the engine's tile kernel on *differences* of the DP (Suzuki–Kasahara), 64 pairs per
512-bit vector.

The int16 kernels store the scores themselves, which grow with the lengths. The differences
between neighbouring cells do not: for affine gaps they stay within a few multiples of the
scores, whatever the lengths, so they fit int8 exactly (no saturation, no re-run). With
``e = −gap_extend`` and ``q = gap_extend − gap_open`` (a gap of length k costs ``q + k·e``), H the
best score, Fv / Eh the best scores ending in a vertical / horizontal gap, the kernel keeps

* ``u = H(i, j) − H(i−1, j)`` and ``v = H(i, j) − H(i, j−1)`` (each in ``[−q−e, M+q+e]``,
  ``M = max(match, mismatch, 0)``),
* ``A = Fv(i+1, j) − H(i, j−1)`` and ``B = Eh(i, j+1) − H(i−1, j)`` (the gap candidates for the
  next cell, measured from the cell they reach it over: ``[−2q−2e, M+q]``),

stored with offsets that absorb the gap extension (``U = u + e``, ``V = v + e``, ``A' = A + 2e``,
``B' = B + 2e``). One cell, from A', V above and B', U on the left, with ``z' = H(i, j) −
H(i−1, j−1) + 2e``::

    z' = max(s + 2e, A'_up, B'_left)      U = z' − V_up       A' = max(A'_up, z' − q) − U_left
                                          V = z' − U_left     B' = max(B'_left, z' − q) − V_up

11 vector operations (compare and select, two maxima, the opening, two maxima, four
differences) on 64 lanes where the shifted int16 cell takes 8 on 32. The borders are constants
(``U(1, 0) = V(0, 1) = −q``, 0 further on; ``A'``, ``B'`` there ``−2q``, then ``−q``) and the
score is read out in int32 as ``H(0, j) + Σ_r u(r, j)`` down the lane's last column.

``fits_int8`` states the bound; wrapping int8 arithmetic is exact whenever every value that is
*compared* or *stored* lies in [−128, 127] (intermediate sums may wrap: they are never compared).
"""
from __future__ import annotations

import numpy as np

from labkit.jit import njit

from ._tiles import TILE
from .kernels import _ends
from .scoring import _as_scoring

__all__ = ["fits_int8", "int8_bounds"]

#: array arguments never overlap here (the callers allocate them): LLVM noalias
_noalias = njit(cache=True, noalias=True)


def int8_bounds(scoring=None) -> tuple[int, int] | None:
    """(lowest, highest) value the int8 kernel compares or stores, for any lengths; None when
    ``gap_open > gap_extend`` (opening cheaper than extending: the recurrence below assumes
    ``q ≥ 0``).

    Derivation (``e = −ge ≥ 0``, ``q = ge − go ≥ 0``, ``m``/``M`` = min/max of match, mismatch
    and 0): H(i, j) ≥ Fv(i, j) ≥ H(i−1, j) − q − e gives ``u ≥ −q−e`` (v likewise); the best
    path into (i, j) leaves row i−1 at some column k ≤ j, and the same prefix then a gap along
    row i−1 reaches (i−1, j) at most q + e worse than the last diagonal step's score, so
    ``u ≤ M+q+e``. Fv, Eh ≤ H makes the gap differences ``x = Fv(i+1, j) − H(i, j)`` ∈ [−q−e, −e],
    hence ``A = x + v`` ∈ [−2q−2e, M+q] (B likewise), and ``z = max(s, A, B)`` ∈
    [max(m, −2q−2e), M+q]. With the offsets: U, V ∈ [−q, M+q+2e]; A', B' ∈ [−2q, M+q+2e];
    z' = z + 2e; the opening z' − q ≥ max(m + 2e, −2q) − q; the scores s + 2e."""
    mt, mm, go, ge = _as_scoring(scoring).ints()
    e, q = -ge, ge - go
    if q < 0:
        return None
    m, M = min(mt, mm, 0), max(mt, mm, 0)
    hi = M + q + 2 * e
    lo = min(-2 * q, min(mt, mm) + 2 * e, max(m + 2 * e, -2 * q) - q)
    return lo, hi


def fits_int8(scoring=None) -> bool:
    """True when the int8 difference kernel is exact for this scoring at every length:
    ``int8_bounds`` within [−128, 127] (the lengths do not enter: differences do not grow)."""
    b = int8_bounds(scoring)
    return b is not None and b[0] >= -128 and b[1] <= 127


@njit(cache=True, inline="always")
def _cell8(a_up, v_up, b_left, u_left, x, y, smt, smm, q):
    """One cell on differences: A', V from above, B', U from the left, residues x, y →
    (U, B' to the right; V, A' down)."""
    s = smt if x == y else smm
    z = s if s > a_up else a_up
    z = z if z > b_left else b_left
    zq = np.int8(z - q)
    u = np.int8(z - v_up)
    v = np.int8(z - u_left)
    a = np.int8((a_up if a_up > zq else zq) - u_left)
    b = np.int8((b_left if b_left > zq else zq) - v_up)
    return u, b, v, a


@_noalias
def _sweep4(s1T, y0, y1, y2, y3, U, B, V0, V1, V2, V3, A0, A1, A2, A3, smt, smm, q):
    """Four columns (residues y0..y3 of each lane) over every row: U/B hold each row's
    differences of the last column done, V/A each column's."""
    for i in range(1, s1T.shape[0] + 1):
        x = s1T[i - 1]
        ur = U[i]
        br = B[i]
        for k in range(TILE):
            xk = x[k]
            u, b, V0[k], A0[k] = _cell8(A0[k], V0[k], br[k], ur[k], xk, y0[k], smt, smm, q)
            u, b, V1[k], A1[k] = _cell8(A1[k], V1[k], b, u, xk, y1[k], smt, smm, q)
            u, b, V2[k], A2[k] = _cell8(A2[k], V2[k], b, u, xk, y2[k], smt, smm, q)
            ur[k], br[k], V3[k], A3[k] = _cell8(A3[k], V3[k], b, u, xk, y3[k], smt, smm, q)


@_noalias
def _sweep1(s1T, y0, U, B, V0, A0, smt, smm, q):
    """One column over every row (where a lane's sequence ends inside a group of four)."""
    for i in range(1, s1T.shape[0] + 1):
        x = s1T[i - 1]
        ur = U[i]
        br = B[i]
        for k in range(TILE):
            ur[k], br[k], V0[k], A0[k] = _cell8(A0[k], V0[k], br[k], ur[k], x[k], y0[k], smt,
                                                smm, q)


@_noalias
def _column_sums(U, lim, acc):
    """acc[k] = Σ U[r, k] for r = 1 … lim[k] (int32; one vector pass down the rows)."""
    for k in range(TILE):
        acc[k] = 0
    top = 0
    for k in range(TILE):
        top = max(top, lim[k])
    for r in range(1, top + 1):
        row = U[r]
        for k in range(TILE):
            acc[k] += np.int32(row[k]) if r <= lim[k] else np.int32(0)


@njit(cache=True)
def _read_out(U, lens1, lens2, j, e, q, out):
    """The scores of the lanes whose second sequence ends at column j (U holds that column):
    H(l1, j) = H(0, j) + Σ_{r ≤ l1} (U(r, j) − e), with H(0, j) = −q − j·e."""
    lim = np.zeros(TILE, np.int32)
    for k in range(TILE):
        if lens2[k] == j:
            lim[k] = lens1[k]
    acc = np.empty(TILE, np.int32)
    _column_sums(U, lim, acc)
    for k in range(TILE):
        if lens2[k] == j:
            out[k] = np.int32(acc[k] - lens1[k] * e - q - j * e)


@njit(cache=True)
def _tile8(s1T, s2T, lens1, lens2, mt, mm, go, ge, out):
    """``engine._tile`` on int8 differences (within ``fits_int8``): out[k] = score of lane k,
    read at its own cell (lens1[k], lens2[k])."""
    L1 = s1T.shape[0]
    L2 = s2T.shape[0]
    e = -np.int64(ge)
    q = np.int64(ge) - np.int64(go)
    smt = np.int8(mt + 2 * e)
    smm = np.int8(mm + 2 * e)
    q8 = np.int8(q)
    U = np.zeros((L1 + 1, TILE), np.int8)          # U(i, 0) = u + e: −q in row 1, then 0
    B = np.full((L1 + 1, TILE), np.int8(-q), np.int8)   # B'(i, 0): −2q in row 1, then −q
    U[1] = np.int8(-q)
    B[1] = np.int8(-2 * q)
    S = np.empty((8, TILE), np.int8)               # per column of a sweep: V, then A'
    is_end = _ends(lens2, L2)
    j = 0                                          # columns done
    while j < L2:
        S[:4] = 0                                  # V(0, c) = v + e: −q in column 1, then 0
        S[4:] = np.int8(-q)                        # A'(0, c): −2q in column 1, then −q
        if j == 0:
            S[0] = np.int8(-q)
            S[4] = np.int8(-2 * q)
        if j + 4 <= L2 and not (is_end[j + 1] or is_end[j + 2] or is_end[j + 3]):
            _sweep4(s1T, s2T[j], s2T[j + 1], s2T[j + 2], s2T[j + 3], U, B, S[0], S[1], S[2],
                    S[3], S[4], S[5], S[6], S[7], smt, smm, q8)
            j += 4
        else:
            _sweep1(s1T, s2T[j], U, B, S[0], S[4], smt, smm, q8)
            j += 1
        if is_end[j]:
            _read_out(U, lens1, lens2, j, e, q, out)
