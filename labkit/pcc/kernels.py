"""numba kernels for all-pairs PCC, one per optimisation step (no input checks here).

Steps: ``pcc_naive`` (Eq. 1 per pair, means recomputed) → ``standardize`` + ``pcc_transformed``
(Eq. 4–5: one dot product per pair) → ``pcc_tiled`` (tiles by id, Alg. 1, one thread) →
``pcc_tiles_static`` / ``pcc_tiles_cyclic`` / ``pcc_tiles_dynamic`` (4×4 register-blocked tiles
handed to threads by tile id) → ``tiles_to_buffer`` (a pass over a tile-id range, Alg. 2 / MPI).
"""
from __future__ import annotations

import math

import numpy as np
from numba import get_thread_id, njit, prange

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
@njit(cache=True, parallel=True)
def standardize(X):
    """Eq. 4: rows centred and scaled to unit norm (two-pass); constant rows → zeros, flagged."""
    n, l = X.shape
    Z = np.empty((n, l))
    const = np.zeros(n, dtype=np.bool_)
    for i in prange(n):
        x0 = X[i, 0]
        same = True
        mean = 0.0
        for k in range(l):
            v = X[i, k]
            mean += v
            if v != x0:
                same = False
        mean /= l
        if same:
            const[i] = True
            for k in range(l):
                Z[i, k] = 0.0
            continue
        ss = 0.0
        for k in range(l):
            d = X[i, k] - mean
            ss += d * d
        inv = 1.0 / math.sqrt(ss)
        for k in range(l):
            Z[i, k] = (X[i, k] - mean) * inv
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


@njit(cache=True, fastmath=True, nogil=True)
def _finish_tile(R, i0, i1, j0, j1, diag):
    """Clip the tile's upper cells to [-1, 1] and mirror them into the lower triangle."""
    for i in range(i0, i1):
        for j in range(i if diag else j0, j1):
            v = min(1.0, max(-1.0, R[i, j]))
            R[i, j] = v
            R[j, i] = v


@njit(cache=True, nogil=True)
def _do_tile(Z, R, tile, m, J, kb):
    n = Z.shape[0]
    yt, xt = _job_coords_nb(m, J)
    i0 = yt * tile
    i1 = min(n, i0 + tile)
    j0 = xt * tile
    j1 = min(n, j0 + tile)
    tile_block(Z, i0, i1, j0, j1, yt == xt, kb, R, 0, 0)
    _finish_tile(R, i0, i1, j0, j1, yt == xt)


@njit(cache=True, parallel=True)
def pcc_tiles_static(Z, tile, kb, P, R, owner):
    """Thread p takes tile ids [p·ceil(T/P), (p+1)·ceil(T/P)) (the seed's split); fills R."""
    n = Z.shape[0]
    m = (n + tile - 1) // tile
    T = m * (m + 1) // 2
    chunk = (T + P - 1) // P
    for p in prange(P):
        for J in range(p * chunk, min(T, (p + 1) * chunk)):
            _do_tile(Z, R, tile, m, J, kb)
            owner[J] = get_thread_id()


@njit(cache=True, parallel=True)
def pcc_tiles_cyclic(Z, tile, kb, P, R, owner):
    """Thread p takes tile ids p, p+P, p+2P, … (interleaved, as Alg. 1's loop); fills R."""
    n = Z.shape[0]
    m = (n + tile - 1) // tile
    T = m * (m + 1) // 2
    for p in prange(P):
        for J in range(p, T, P):
            _do_tile(Z, R, tile, m, J, kb)
            owner[J] = get_thread_id()


@njit(cache=True, parallel=True)
def pcc_tiles_dynamic(Z, tile, kb, R, owner):
    """prange over tile ids; with numba.parallel_chunksize(c) set, threads grab chunks as they
    finish (dynamic). Fills R."""
    n = Z.shape[0]
    m = (n + tile - 1) // tile
    T = m * (m + 1) // 2
    for J in prange(T):
        _do_tile(Z, R, tile, m, J, kb)
        owner[J] = get_thread_id()


@njit(cache=True, parallel=True)
def pcc_tiles_rows(Z, tile, kb, R, owner):
    """prange over tile *rows* (no bijection): triangular work split statically — unbalanced."""
    n = Z.shape[0]
    m = (n + tile - 1) // tile
    for yt in prange(m):
        for xt in range(yt, m):
            J = yt * (2 * m - yt + 1) // 2 + xt - yt
            _do_tile(Z, R, tile, m, J, kb)
            owner[J] = get_thread_id()


# ---------------------------------------------------------------- passes over id ranges
@njit(cache=True, parallel=True, nogil=True)
def tiles_to_buffer(Z, tile, kb, J0, J1, buf):
    """One pass (Alg. 2): tiles J0..J1-1 into buf[J-J0, :, :] (tile-local rows and columns).

    ``nogil`` (as ``extract_pairs``): a Python thread can compute the next pass while another
    extracts this one — Alg. 2's double buffering, shown in the notebook."""
    n = Z.shape[0]
    m = (n + tile - 1) // tile
    for b in prange(J1 - J0):
        yt, xt = _job_coords_nb(m, J0 + b)
        i0 = yt * tile
        j0 = xt * tile
        tile_block(Z, i0, min(n, i0 + tile), j0, min(n, j0 + tile), yt == xt, kb,
                    buf[b], i0, j0)


@njit(cache=True, parallel=True, nogil=True)
def extract_pairs(buf, n, tile, J0, threshold):
    """(i, j, r) of every pair i < j in the pass's tiles with |r| ≥ threshold (tile order)."""
    m = (n + tile - 1) // tile
    nb = buf.shape[0]
    counts = np.zeros(nb + 1, dtype=np.int64)
    for b in prange(nb):
        yt, xt = _job_coords_nb(m, J0 + b)
        i0 = yt * tile
        j0 = xt * tile
        c = 0
        for i in range(i0, min(n, i0 + tile)):
            for j in range(max(j0, i + 1), min(n, j0 + tile)):
                if abs(buf[b, i - i0, j - j0]) >= threshold:
                    c += 1
        counts[b + 1] = c
    for b in range(nb):
        counts[b + 1] += counts[b]
    total = counts[nb]
    I = np.empty(total, dtype=np.int64)
    Jx = np.empty(total, dtype=np.int64)
    V = np.empty(total)
    for b in prange(nb):
        yt, xt = _job_coords_nb(m, J0 + b)
        i0 = yt * tile
        j0 = xt * tile
        c = counts[b]
        for i in range(i0, min(n, i0 + tile)):
            for j in range(max(j0, i + 1), min(n, j0 + tile)):
                v = buf[b, i - i0, j - j0]
                if abs(v) >= threshold:
                    I[c] = i
                    Jx[c] = j
                    V[c] = min(1.0, max(-1.0, v))
                    c += 1
    return I, Jx, V
