"""Lab 02 kernels, by step: the basis weights of a position (``prefactors``), then VGH of all N
splines at one position in three output layouts — ``vgh_aos`` (13 strided streams),
``vgh_soa`` (10 contiguous streams), ``vgh_aosoa`` (tiles of Nb splines) — and the
register-blocked SoA/AoSoA kernel ``vgh_soa_blocked``; the drivers ``_batch_tiles`` /
``_batch_tiles_blocked`` put positions × tiles into one ``prange`` (numba has no nested parallel
regions), ``_walker_tiles`` shares one walker's tiles per move (the seed's nested threading); the
model's cost per evaluation (``flops_per_eval``, ``traffic_per_eval``). What ``evaluate_vgh``
runs by default, the fused kernel ``_batch_canonical``, is in ``engine``.

Imports only numpy, numba, labkit.jit and .layouts (never the package ``__init__``).
"""
from __future__ import annotations

import math

import numba
import numpy as np
from numba import njit, prange

from labkit.jit import njit as wide_njit

from .layouts import _check_coefs

__all__ = ["basis", "prefactors", "vgh_aos", "vgh_soa", "vgh_aosoa", "vgh_soa_blocked",
           "flops_per_eval", "traffic_per_eval"]


# ----------------------------------------------------------------------------- basis weights
def basis(t: float) -> np.ndarray:
    """The four cubic B-spline weights and their first and second t-derivatives, shape (3, 4)."""
    t = float(t)
    s = 1.0 - t
    return np.array([
        [s**3 / 6, (3 * t**3 - 6 * t**2 + 4) / 6, (-3 * t**3 + 3 * t**2 + 3 * t + 1) / 6, t**3 / 6],
        [-s**2 / 2, 1.5 * t**2 - 2 * t, -1.5 * t**2 + t + 0.5, t**2 / 2],
        [s, 3 * t - 2, 1 - 3 * t, t],
    ])



@njit(cache=True)
def _prefactors_kernel(positions, grid, lengths, idx, pref):
    # idx[p, axis, i] = (i0 + i) mod n ; pref[p, axis, order, i] = d^order b_i / dx^order
    for p in range(positions.shape[0]):
        for a in range(3):
            n = grid[a]
            L = lengths[a]
            x = positions[p, a]
            x = x - L * math.floor(x / L)          # wrap into [0, L]
            u = x * (n / L)
            fi = math.floor(u)
            t = u - fi
            i0 = int(fi) % n
            dinv = n / L
            s = 1.0 - t
            t2 = t * t
            t3 = t2 * t
            pref[p, a, 0, 0] = s * s * s / 6.0
            pref[p, a, 0, 1] = (3.0 * t3 - 6.0 * t2 + 4.0) / 6.0
            pref[p, a, 0, 2] = (-3.0 * t3 + 3.0 * t2 + 3.0 * t + 1.0) / 6.0
            pref[p, a, 0, 3] = t3 / 6.0
            pref[p, a, 1, 0] = -0.5 * s * s * dinv
            pref[p, a, 1, 1] = (1.5 * t2 - 2.0 * t) * dinv
            pref[p, a, 1, 2] = (-1.5 * t2 + t + 0.5) * dinv
            pref[p, a, 1, 3] = 0.5 * t2 * dinv
            pref[p, a, 2, 0] = s * dinv * dinv
            pref[p, a, 2, 1] = (3.0 * t - 2.0) * dinv * dinv
            pref[p, a, 2, 2] = (1.0 - 3.0 * t) * dinv * dinv
            pref[p, a, 2, 3] = t * dinv * dinv
            for i in range(4):          # n < 4: the four knots wrap more than once
                idx[p, a, i] = (i0 + i) % n


def prefactors(positions, grid, lengths=(1.0, 1.0, 1.0), dtype=np.float64):
    """Per position: grid indices ``idx (P, 3, 4)`` (already mod n) and basis weights
    ``pref (P, 3, 3, 4)`` = [axis, derivative order 0/1/2 (in x, not t), i] in ``dtype``."""
    pos = np.ascontiguousarray(np.atleast_2d(np.asarray(positions, dtype=np.float64)))
    if pos.ndim != 2 or pos.shape[1] != 3:
        raise ValueError(f"positions must have shape (P, 3), got {np.shape(positions)}")
    if not np.all(np.isfinite(pos)):
        bad = tuple(int(i) for i in np.argwhere(~np.isfinite(pos))[0])
        raise ValueError(f"positions{list(bad)} = {pos[bad]} is not finite; pass finite "
                         "coordinates (they are wrapped into the periodic box)")
    g = np.asarray(grid, dtype=np.int64)
    L = np.asarray(lengths, dtype=np.float64)
    idx = np.empty((pos.shape[0], 3, 4), dtype=np.int64)
    pref = np.empty((pos.shape[0], 3, 3, 4), dtype=np.float64)
    _prefactors_kernel(pos, g, L, idx, pref)
    return idx, pref.astype(dtype, copy=False)



# ----------------------------------------------------------------------------- kernels by step
@njit(cache=True, fastmath=True)
def vgh_aos(coefs, idx, pref, v, g, h):
    """AoS VGH at one position: ``v (N,)``, ``g (N, 3)``, ``h (N, 3, 3)`` overwritten."""
    N = coefs.shape[3]
    for n in range(N):
        v[n] = 0.0
        for a in range(3):
            g[n, a] = 0.0
            for b in range(3):
                h[n, a, b] = 0.0
    k0, k1, k2, k3 = idx[2, 0], idx[2, 1], idx[2, 2], idx[2, 3]
    c0, c1, c2, c3 = pref[2, 0, 0], pref[2, 0, 1], pref[2, 0, 2], pref[2, 0, 3]
    d0, d1, d2, d3 = pref[2, 1, 0], pref[2, 1, 1], pref[2, 1, 2], pref[2, 1, 3]
    e0, e1, e2, e3 = pref[2, 2, 0], pref[2, 2, 1], pref[2, 2, 2], pref[2, 2, 3]
    for i in range(4):
        ix = idx[0, i]
        a, da, d2a = pref[0, 0, i], pref[0, 1, i], pref[0, 2, i]
        for j in range(4):
            iy = idx[1, j]
            b, db, d2b = pref[1, 0, j], pref[1, 1, j], pref[1, 2, j]
            ab, dab, adb = a * b, da * b, a * db
            d2ab, dadb, ad2b = d2a * b, da * db, a * d2b
            for n in range(N):
                p0 = coefs[ix, iy, k0, n]
                p1 = coefs[ix, iy, k1, n]
                p2 = coefs[ix, iy, k2, n]
                p3 = coefs[ix, iy, k3, n]
                vz = c0 * p0 + c1 * p1 + c2 * p2 + c3 * p3
                dz = d0 * p0 + d1 * p1 + d2 * p2 + d3 * p3
                d2z = e0 * p0 + e1 * p1 + e2 * p2 + e3 * p3
                v[n] += ab * vz
                g[n, 0] += dab * vz
                g[n, 1] += adb * vz
                g[n, 2] += ab * dz
                h[n, 0, 0] += d2ab * vz
                h[n, 0, 1] += dadb * vz
                h[n, 0, 2] += dab * dz
                h[n, 1, 0] += dadb * vz
                h[n, 1, 1] += ad2b * vz
                h[n, 1, 2] += adb * dz
                h[n, 2, 0] += dab * dz
                h[n, 2, 1] += adb * dz
                h[n, 2, 2] += ab * d2z


@njit(cache=True, fastmath=True)
def vgh_soa(coefs, idx, pref, out):
    """SoA VGH at one position: ``out (10, N)`` overwritten with the streams in STREAMS order."""
    N = coefs.shape[3]
    for s in range(10):
        for n in range(N):
            out[s, n] = 0.0
    k0, k1, k2, k3 = idx[2, 0], idx[2, 1], idx[2, 2], idx[2, 3]
    c0, c1, c2, c3 = pref[2, 0, 0], pref[2, 0, 1], pref[2, 0, 2], pref[2, 0, 3]
    d0, d1, d2, d3 = pref[2, 1, 0], pref[2, 1, 1], pref[2, 1, 2], pref[2, 1, 3]
    e0, e1, e2, e3 = pref[2, 2, 0], pref[2, 2, 1], pref[2, 2, 2], pref[2, 2, 3]
    for i in range(4):
        ix = idx[0, i]
        a, da, d2a = pref[0, 0, i], pref[0, 1, i], pref[0, 2, i]
        for j in range(4):
            iy = idx[1, j]
            b, db, d2b = pref[1, 0, j], pref[1, 1, j], pref[1, 2, j]
            ab, dab, adb = a * b, da * b, a * db
            d2ab, dadb, ad2b = d2a * b, da * db, a * d2b
            for n in range(N):
                p0 = coefs[ix, iy, k0, n]
                p1 = coefs[ix, iy, k1, n]
                p2 = coefs[ix, iy, k2, n]
                p3 = coefs[ix, iy, k3, n]
                vz = c0 * p0 + c1 * p1 + c2 * p2 + c3 * p3
                dz = d0 * p0 + d1 * p1 + d2 * p2 + d3 * p3
                d2z = e0 * p0 + e1 * p1 + e2 * p2 + e3 * p3
                out[0, n] += ab * vz
                out[1, n] += dab * vz
                out[2, n] += adb * vz
                out[3, n] += ab * dz
                out[4, n] += d2ab * vz
                out[5, n] += dadb * vz
                out[6, n] += dab * dz
                out[7, n] += ad2b * vz
                out[8, n] += adb * dz
                out[9, n] += ab * d2z


@njit(cache=True, fastmath=True, inline="always")
def _tile_vgh(tcoefs, m, idx, pref, p, out, q):
    # one (position p, tile m) task: out[q, m] (10, Nb) ← VGH of tile m of tcoefs at position p.
    # Only direct element indexing (no slices/views) so that, inside a prange body, numba's alias
    # analysis finds no aliases and marks the arrays noalias: LLVM then drops its run-time
    # overlap checks, which otherwise dominate for small tiles.
    Nb = tcoefs.shape[4]
    for s in range(10):
        for n in range(Nb):
            out[q, m, s, n] = 0.0
    k0, k1, k2, k3 = idx[p, 2, 0], idx[p, 2, 1], idx[p, 2, 2], idx[p, 2, 3]
    c0, c1, c2, c3 = pref[p, 2, 0, 0], pref[p, 2, 0, 1], pref[p, 2, 0, 2], pref[p, 2, 0, 3]
    d0, d1, d2, d3 = pref[p, 2, 1, 0], pref[p, 2, 1, 1], pref[p, 2, 1, 2], pref[p, 2, 1, 3]
    e0, e1, e2, e3 = pref[p, 2, 2, 0], pref[p, 2, 2, 1], pref[p, 2, 2, 2], pref[p, 2, 2, 3]
    for i in range(4):
        ix = idx[p, 0, i]
        a, da, d2a = pref[p, 0, 0, i], pref[p, 0, 1, i], pref[p, 0, 2, i]
        for j in range(4):
            iy = idx[p, 1, j]
            b, db, d2b = pref[p, 1, 0, j], pref[p, 1, 1, j], pref[p, 1, 2, j]
            ab, dab, adb = a * b, da * b, a * db
            d2ab, dadb, ad2b = d2a * b, da * db, a * d2b
            for n in range(Nb):
                p0 = tcoefs[m, ix, iy, k0, n]
                p1 = tcoefs[m, ix, iy, k1, n]
                p2 = tcoefs[m, ix, iy, k2, n]
                p3 = tcoefs[m, ix, iy, k3, n]
                vz = c0 * p0 + c1 * p1 + c2 * p2 + c3 * p3
                dz = d0 * p0 + d1 * p1 + d2 * p2 + d3 * p3
                d2z = e0 * p0 + e1 * p1 + e2 * p2 + e3 * p3
                out[q, m, 0, n] += ab * vz
                out[q, m, 1, n] += dab * vz
                out[q, m, 2, n] += adb * vz
                out[q, m, 3, n] += ab * dz
                out[q, m, 4, n] += d2ab * vz
                out[q, m, 5, n] += dadb * vz
                out[q, m, 6, n] += dab * dz
                out[q, m, 7, n] += ad2b * vz
                out[q, m, 8, n] += adb * dz
                out[q, m, 9, n] += ab * d2z


@njit(cache=True, fastmath=True)
def vgh_aosoa(tcoefs, idx, pref, out):
    """AoSoA VGH at one position: ``tcoefs (M, nx, ny, nz, Nb)``, ``out (M, 10, Nb)`` overwritten."""
    idx3 = idx.reshape((1, 3, 4))
    pref4 = pref.reshape((1, 3, 3, 4))
    out4 = out.reshape((1,) + out.shape)
    for m in range(tcoefs.shape[0]):
        _tile_vgh(tcoefs, m, idx3, pref4, 0, out4, 0)


# Drivers inlining _tile_vgh carry its fastmath (numba inlines the body with the driver's flags:
# without it the hot loop was vmulpd + vaddpd, no FMA). At LLVM's preferred width, not
# labkit.jit's: 512-bit was slower on the seed grid (measured: docs/bspline.md, 'Session 8').
@njit(cache=True, parallel=True, fastmath=True)
def _batch_tiles(tcoefs, idx, pref, out):
    # positions × tiles flattened into one parallel loop: task t → (position t // M, tile t % M)
    M = tcoefs.shape[0]
    P = idx.shape[0]
    for t in prange(P * M):
        p = t // M
        m = t - p * M
        _tile_vgh(tcoefs, m, idx, pref, p, out, p)


@njit(cache=True, fastmath=True, inline="always")
def _zcol(tcoefs, m, ix, iy, ks, n, zw):
    # one grid column (ix, iy): the z-sums Σ_k b_k P, Σ_k b'_k P, Σ_k b''_k P at spline n
    p0 = tcoefs[m, ix, iy, ks[0], n]
    p1 = tcoefs[m, ix, iy, ks[1], n]
    p2 = tcoefs[m, ix, iy, ks[2], n]
    p3 = tcoefs[m, ix, iy, ks[3], n]
    vz = zw[0] * p0 + zw[1] * p1 + zw[2] * p2 + zw[3] * p3
    dz = zw[4] * p0 + zw[5] * p1 + zw[6] * p2 + zw[7] * p3
    d2z = zw[8] * p0 + zw[9] * p1 + zw[10] * p2 + zw[11] * p3
    return vz, dz, d2z


@njit(cache=True, fastmath=True, inline="always")
def _yplane(tcoefs, m, ix, iys, ks, n, zw, yw):
    # one x-plane ix: the six (y, z) sums s_ab = Σ_j ∂^a b_j Σ_k ∂^b c_k P[ix, iy_j, k], a + b ≤ 2,
    # kept in registers (16 coefficients in, 6 numbers out)
    vz, dz, d2z = _zcol(tcoefs, m, ix, iys[0], ks, n, zw)
    s00, s10, s20 = yw[0] * vz, yw[4] * vz, yw[8] * vz
    s01, s11, s02 = yw[0] * dz, yw[4] * dz, yw[0] * d2z
    vz, dz, d2z = _zcol(tcoefs, m, ix, iys[1], ks, n, zw)
    s00, s10, s20 = s00 + yw[1] * vz, s10 + yw[5] * vz, s20 + yw[9] * vz
    s01, s11, s02 = s01 + yw[1] * dz, s11 + yw[5] * dz, s02 + yw[1] * d2z
    vz, dz, d2z = _zcol(tcoefs, m, ix, iys[2], ks, n, zw)
    s00, s10, s20 = s00 + yw[2] * vz, s10 + yw[6] * vz, s20 + yw[10] * vz
    s01, s11, s02 = s01 + yw[2] * dz, s11 + yw[6] * dz, s02 + yw[2] * d2z
    vz, dz, d2z = _zcol(tcoefs, m, ix, iys[3], ks, n, zw)
    s00, s10, s20 = s00 + yw[3] * vz, s10 + yw[7] * vz, s20 + yw[11] * vz
    s01, s11, s02 = s01 + yw[3] * dz, s11 + yw[7] * dz, s02 + yw[3] * d2z
    return s00, s10, s20, s01, s11, s02


@njit(cache=True, fastmath=True, inline="always")
def _plane_terms(tcoefs, m, idx, pref, p, i, iys, ks, zw, yw, n):
    # x-plane i's contribution to the 10 streams (STREAMS order) of spline n at position p
    ix = idx[p, 0, i]
    a, da, d2a = pref[p, 0, 0, i], pref[p, 0, 1, i], pref[p, 0, 2, i]
    s00, s10, s20, s01, s11, s02 = _yplane(tcoefs, m, ix, iys, ks, n, zw, yw)
    return (a * s00, da * s00, a * s10, a * s01, d2a * s00, da * s10, da * s01, a * s20,
            a * s11, a * s02)


@njit(cache=True, fastmath=True, inline="always")
def _plane_set(tcoefs, m, idx, pref, p, i, iys, ks, zw, yw, u0, nb, out, q, mo):
    # x-plane i of splines u0 … u0 + nb of tile m: out[q, mo, :, :nb] overwritten with its terms
    # (the first plane: no zeroing pass over the outputs before it)
    for k in range(nb):
        t = _plane_terms(tcoefs, m, idx, pref, p, i, iys, ks, zw, yw, u0 + numba.uint64(k))
        out[q, mo, 0, k], out[q, mo, 1, k], out[q, mo, 2, k] = t[0], t[1], t[2]
        out[q, mo, 3, k], out[q, mo, 4, k], out[q, mo, 5, k] = t[3], t[4], t[5]
        out[q, mo, 6, k], out[q, mo, 7, k], out[q, mo, 8, k] = t[6], t[7], t[8]
        out[q, mo, 9, k] = t[9]


@njit(cache=True, fastmath=True, inline="always")
def _plane_add(tcoefs, m, idx, pref, p, i, iys, ks, zw, yw, u0, nb, out, q, mo):
    # as _plane_set, adding x-plane i's terms to out[q, mo, :, :nb]
    for k in range(nb):
        t = _plane_terms(tcoefs, m, idx, pref, p, i, iys, ks, zw, yw, u0 + numba.uint64(k))
        for s in range(10):
            out[q, mo, s, k] += t[s]


@njit(cache=True, fastmath=True, inline="always")
def _plane_last_at(tcoefs, m, idx, pref, p, iys, ks, zw, yw, u0, buf, q, k0, gbuf):
    # the last x-plane of splines u0 … u0 + G (G = gbuf.shape[3]): buf[q, 0, :, k0 + k] plus its
    # terms → gbuf[q, 0, :, k] (a trip count that is an array's shape: LLVM vectorises it)
    for k in range(gbuf.shape[3]):
        t = _plane_terms(tcoefs, m, idx, pref, p, 3, iys, ks, zw, yw, u0 + numba.uint64(k))
        for s in range(10):
            gbuf[q, 0, s, k] = buf[q, 0, s, k0 + numba.uint64(k)] + t[s]


@njit(cache=True, fastmath=True, inline="always")
def _tile_vgh_blocked(tcoefs, m, idx, pref, p, out, q):
    # like _tile_vgh, register-blocked: per x-plane (4 of them) and spline n, the 16 coefficients
    # are reduced over z and y in registers, and only then added to the 10 output streams —
    # 4 passes over the outputs instead of 16 (one per grid column); the first plane overwrites
    # them (no zeroing pass: 5–14 % on the seed grid, whose outputs are fresh memory per position).
    # Spline offsets are uint64 (u0 + k): numba wraps negative signed indices, and where LLVM
    # cannot rule them out (n0 + k in _range_canonical) the loads become gathers.
    Nb = tcoefs.shape[4]
    ks = (idx[p, 2, 0], idx[p, 2, 1], idx[p, 2, 2], idx[p, 2, 3])
    iys = (idx[p, 1, 0], idx[p, 1, 1], idx[p, 1, 2], idx[p, 1, 3])
    zw = (pref[p, 2, 0, 0], pref[p, 2, 0, 1], pref[p, 2, 0, 2], pref[p, 2, 0, 3],
          pref[p, 2, 1, 0], pref[p, 2, 1, 1], pref[p, 2, 1, 2], pref[p, 2, 1, 3],
          pref[p, 2, 2, 0], pref[p, 2, 2, 1], pref[p, 2, 2, 2], pref[p, 2, 2, 3])
    yw = (pref[p, 1, 0, 0], pref[p, 1, 0, 1], pref[p, 1, 0, 2], pref[p, 1, 0, 3],
          pref[p, 1, 1, 0], pref[p, 1, 1, 1], pref[p, 1, 1, 2], pref[p, 1, 1, 3],
          pref[p, 1, 2, 0], pref[p, 1, 2, 1], pref[p, 1, 2, 2], pref[p, 1, 2, 3])
    u0 = numba.uint64(0)
    _plane_set(tcoefs, m, idx, pref, p, 0, iys, ks, zw, yw, u0, Nb, out, q, m)
    for i in range(1, 4):
        _plane_add(tcoefs, m, idx, pref, p, i, iys, ks, zw, yw, u0, Nb, out, q, m)


@wide_njit(cache=True, parallel=True, fastmath=True)
def _batch_tiles_blocked(tcoefs, idx, pref, out):
    # as _batch_tiles with the register-blocked tile kernel (fastmath: FMA contraction), with
    # labkit.jit's 512-bit vectors: +4.5–9 % on the float64 seed grid, +0.5–2 % in float32, +13 %
    # on the 8³ grid (interleaved against the plain twin, docs/bspline.md). labkit's
    # own fast kernel: the checks time students against the plain _batch_tiles/vgh_soa/vgh_aos.
    M = tcoefs.shape[0]
    P = idx.shape[0]
    for t in prange(P * M):
        p = t // M
        m = t - p * M
        _tile_vgh_blocked(tcoefs, m, idx, pref, p, out, p)


def vgh_soa_blocked(coefs, idx, pref, out):
    """SoA VGH at one position, register-blocked per x-plane: same ``out (10, ≥N)`` as vgh_soa."""
    coefs = _check_coefs(coefs)
    out = np.asarray(out)
    if out.ndim != 2 or out.shape[0] != 10 or out.shape[1] < coefs.shape[3]:
        raise ValueError(f"out must have shape (10, ≥N) with N = {coefs.shape[3]}, got {out.shape}; "
                         "make it with labkit.bspline.new_output(N)")
    if out.dtype != coefs.dtype or not out.flags.c_contiguous:
        raise TypeError(f"out must be C-contiguous {coefs.dtype} like the coefficients, got "
                        f"{out.dtype}; make it with new_output(N, dtype=coefs.dtype)")
    # through the prange kernel: only inside a prange body does numba mark the arrays noalias,
    # without which LLVM does not vectorise this loop (overlap checks on ~30 pointers)
    _batch_tiles_blocked(coefs.reshape((1,) + coefs.shape), np.asarray(idx).reshape(1, 3, 4),
                         np.asarray(pref, dtype=coefs.dtype).reshape(1, 3, 3, 4),
                         out.reshape((1, 1) + out.shape))


@njit(cache=True, parallel=True, fastmath=True)
def _walker_tiles(tcoefs, idx, pref, out):
    # one walker, moves one after another; each move's M tiles shared by the threads
    M = tcoefs.shape[0]
    for p in range(idx.shape[0]):
        for m in prange(M):
            _tile_vgh(tcoefs, m, idx, pref, p, out, 0)


# ----------------------------------------------------------------------------- cost per evaluation
def flops_per_eval() -> int:
    """Floating-point operations per spline per position in these kernels (FMA = 2): for each
    of the 16 (i, j) columns, 3 z-sums (4 mul/fma each) and 10 output FMAs → 16·(2·19 + 3) = 656."""
    return 16 * (2 * 19 + 3)


def traffic_per_eval(layout: str = "soa", dtype=np.float64) -> dict:
    """Bytes moved per spline per position: ``coef_reads`` (64 coefficients), ``out_writes``
    (10 SoA / 13 AoS outputs written once), and ``out_rmw`` (the read-modify-write of the
    outputs for each of the 16 (i, j) columns, which stays in cache when the outputs fit)."""
    item = np.dtype(dtype).itemsize
    streams = 13 if layout == "aos" else 10
    return {"coef_reads": 64 * item, "out_writes": streams * item,
            "out_rmw": 16 * 2 * streams * item}
