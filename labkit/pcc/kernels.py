"""numba kernels for all-pairs PCC, one per optimisation step (no input checks here).

Steps: ``pcc_naive`` (Eq. 1 per pair, means recomputed) → ``standardize`` + ``pcc_transformed``
(Eq. 4–5: one dot product per pair) → ``pcc_tiled`` (tiles by id, Alg. 1, one thread) →
``tile_block`` (the lesson's 4×4 register block over a tile; exercise 4 is timed against it, so
it is compiled with plain ``numba.njit``). The threaded drivers ``pcc_tiles_static`` /
``_cyclic`` / ``_dynamic`` / ``_rows`` and ``tiles_to_buffer`` (a pass over a tile-id range,
Alg. 2 / MPI) live in ``engine.py`` (a 6×4 block, aligned rows, the host's full vector width)
and are re-exported here.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from .engine import standardize_into
from .mapping import _job_coords_nb

__all__ = ["standardize", "tile_block", "pcc_naive", "pcc_transformed", "pcc_tiled", "pcc_tiles_static",
           "pcc_tiles_cyclic", "pcc_tiles_dynamic", "pcc_tiles_rows", "tiles_to_buffer",
           "extract_pairs", "KBLOCK"]

#: k-block (samples per pass over a tile): 4 rows × KBLOCK doubles stay in L1/L2.
KBLOCK = 1024


# ---------------------------------------------------------------- step 0: naive (Eq. 1)
@njit(cache=True)
def pcc_naive(X):
    """Eq. 1 literally for every pair i ≤ j: means and sums recomputed per pair (one thread)."""
    n, l = X.shape
    R = np.empty((n, n))
    for i in range(n):
        for j in range(i, n):
            mu = 0.0
            mv = 0.0
            for k in range(l):
                mu += X[i, k]
                mv += X[j, k]
            mu /= l
            mv /= l
            num = 0.0
            su = 0.0
            sv = 0.0
            for k in range(l):
                du = X[i, k] - mu
                dv = X[j, k] - mv
                num += du * dv
                su += du * du
                sv += dv * dv
            r = num / math.sqrt(su * sv)
            R[i, j] = r
            R[j, i] = r
    return R


# ---------------------------------------------------------------- step 1: transformation
def standardize(X):
    """Eq. 4: rows centred and scaled to unit norm (two-pass, rows in parallel); constant rows →
    zeros, flagged. The loop is ``engine.standardize_into`` (the entry points run it on aligned,
    padded rows); this is a Python function, not a cached @njit caller of it, so numba's cache
    never keeps a caller compiled against an older engine.py."""
    n, l = X.shape
    Z = np.empty((n, l))
    const = np.empty(n, dtype=np.bool_)
    standardize_into(X, Z, const)
    return Z, const


@njit(cache=True)
def pcc_transformed(Z):
    """Eq. 5: r(i, j) = <Z_i, Z_j> for every pair i ≤ j, one dot product each (one thread)."""
    n, l = Z.shape
    R = np.empty((n, n))
    for i in range(n):
        for j in range(i, n):
            s = 0.0
            for k in range(l):
                s += Z[i, k] * Z[j, k]
            R[i, j] = s
            R[j, i] = s
    return R


# ---------------------------------------------------------------- step 2: tiles by id
@njit(cache=True)
def pcc_tiled(Z, tile):
    """Alg. 1 on one thread: loop over tile ids, map each to (yt, xt), fill its upper cells."""
    n, l = Z.shape
    m = (n + tile - 1) // tile
    R = np.empty((n, n))
    for J in range(m * (m + 1) // 2):
        yt, xt = _job_coords_nb(m, J)
        for y in range(yt * tile, min(n, (yt + 1) * tile)):
            for x in range(max(y, xt * tile), min(n, (xt + 1) * tile)):
                s = 0.0
                for k in range(l):
                    s += Z[y, k] * Z[x, k]
                R[y, x] = s
                R[x, y] = s
    return R


# ---------------------------------------------------------------- step 3: register-blocked tile
@njit(cache=True, fastmath=True, nogil=True)
def tile_block(Z, i0, i1, j0, j1, diag, kb, out, oi, oj):
    """out[i-oi, j-oj] = <Z_i, Z_j> for i in [i0,i1), j in [j0,j1) (j ≥ i's 4-block if diag).

    4×4 register block (16 accumulators), k split in blocks of ``kb``; rows are sliced so the
    innermost loop runs from 0 (a loop from k0 makes numba emit masked gathers)."""
    l = Z.shape[1]
    for k0 in range(0, l, kb):
        k1 = min(k0 + kb, l)
        kk = k1 - k0
        first = k0 == 0
        i = i0
        while i + 4 <= i1:
            a0 = Z[i, k0:k1]
            a1 = Z[i + 1, k0:k1]
            a2 = Z[i + 2, k0:k1]
            a3 = Z[i + 3, k0:k1]
            j = i if diag else j0
            while j + 4 <= j1:
                b0 = Z[j, k0:k1]
                b1 = Z[j + 1, k0:k1]
                b2 = Z[j + 2, k0:k1]
                b3 = Z[j + 3, k0:k1]
                s00 = s01 = s02 = s03 = 0.0
                s10 = s11 = s12 = s13 = 0.0
                s20 = s21 = s22 = s23 = 0.0
                s30 = s31 = s32 = s33 = 0.0
                for k in range(kk):
                    x0 = a0[k]
                    x1 = a1[k]
                    x2 = a2[k]
                    x3 = a3[k]
                    y0 = b0[k]
                    y1 = b1[k]
                    y2 = b2[k]
                    y3 = b3[k]
                    s00 += x0 * y0
                    s01 += x0 * y1
                    s02 += x0 * y2
                    s03 += x0 * y3
                    s10 += x1 * y0
                    s11 += x1 * y1
                    s12 += x1 * y2
                    s13 += x1 * y3
                    s20 += x2 * y0
                    s21 += x2 * y1
                    s22 += x2 * y2
                    s23 += x2 * y3
                    s30 += x3 * y0
                    s31 += x3 * y1
                    s32 += x3 * y2
                    s33 += x3 * y3
                r = i - oi
                c = j - oj
                if first:
                    out[r, c] = s00
                    out[r, c + 1] = s01
                    out[r, c + 2] = s02
                    out[r, c + 3] = s03
                    out[r + 1, c] = s10
                    out[r + 1, c + 1] = s11
                    out[r + 1, c + 2] = s12
                    out[r + 1, c + 3] = s13
                    out[r + 2, c] = s20
                    out[r + 2, c + 1] = s21
                    out[r + 2, c + 2] = s22
                    out[r + 2, c + 3] = s23
                    out[r + 3, c] = s30
                    out[r + 3, c + 1] = s31
                    out[r + 3, c + 2] = s32
                    out[r + 3, c + 3] = s33
                else:
                    out[r, c] += s00
                    out[r, c + 1] += s01
                    out[r, c + 2] += s02
                    out[r, c + 3] += s03
                    out[r + 1, c] += s10
                    out[r + 1, c + 1] += s11
                    out[r + 1, c + 2] += s12
                    out[r + 1, c + 3] += s13
                    out[r + 2, c] += s20
                    out[r + 2, c + 1] += s21
                    out[r + 2, c + 2] += s22
                    out[r + 2, c + 3] += s23
                    out[r + 3, c] += s30
                    out[r + 3, c + 1] += s31
                    out[r + 3, c + 2] += s32
                    out[r + 3, c + 3] += s33
                j += 4
            while j < j1:                      # leftover columns: 4×1
                b0 = Z[j, k0:k1]
                s0 = s1 = s2 = s3 = 0.0
                for k in range(kk):
                    y0 = b0[k]
                    s0 += a0[k] * y0
                    s1 += a1[k] * y0
                    s2 += a2[k] * y0
                    s3 += a3[k] * y0
                r = i - oi
                c = j - oj
                if first:
                    out[r, c] = s0
                    out[r + 1, c] = s1
                    out[r + 2, c] = s2
                    out[r + 3, c] = s3
                else:
                    out[r, c] += s0
                    out[r + 1, c] += s1
                    out[r + 2, c] += s2
                    out[r + 3, c] += s3
                j += 1
            i += 4
        while i < i1:                          # leftover rows: 1×1
            a0 = Z[i, k0:k1]
            j = i if diag else j0
            while j < j1:
                b0 = Z[j, k0:k1]
                s = 0.0
                for k in range(kk):
                    s += a0[k] * b0[k]
                if first:
                    out[i - oi, j - oj] = s
                else:
                    out[i - oi, j - oj] += s
                j += 1
            i += 1


# ---------------------------------------------------------------- the engine (engine.py)
# The threaded drivers and the passes over id ranges run engine.py's 6×4 block on aligned,
# padded rows, compiled at the host's full vector width; re-exported here under their old names.
from .engine import (extract_pairs, pcc_tiles_cyclic, pcc_tiles_dynamic,  # noqa: E402
                     pcc_tiles_rows, pcc_tiles_static, tiles_to_buffer)
