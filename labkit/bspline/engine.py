"""What ``evaluate_vgh`` runs: by default the register-blocked SoA kernel fused with the write into
the canonical arrays (``_batch_canonical``: positions × tiles × chunks of splines in one
``prange``, no SoA array and no conversion pass; the last x-plane per group of splines through an
in-register transpose into full-line stores, ``_intrinsics``), else the lesson's drivers
(``kernels._batch_tiles`` / ``_batch_tiles_blocked``, then a conversion) or the AoS driver
``_batch_aos``; and how the fused kernel splits and writes (``_chunk_for``, ``_write_mode``).
"""
from __future__ import annotations

import os

import numba
import numpy as np
from numba import njit, prange

from labkit._common import use_threads
from labkit.jit import njit as wide_njit

from ._intrinsics import _prefetch_lines, _streams_to_canonical8, _streams_to_canonical8_t
from .kernels import (_batch_tiles, _batch_tiles_blocked, _plane_add, _plane_last_at, _plane_set,
                      _yplane, vgh_aos)
from .layouts import aligned_empty, canonical_outputs, soa_to_canonical, stream_stride

__all__ = ["vgh"]


def vgh(coefs, tc, idx, pref, layout: str, blocked: bool, output: str, threads):
    """VGH of validated arguments: ``coefs (nx, ny, nz, N)``, ``tc`` the coefficients in the
    layout's tiles (None for "aos"), ``idx``/``pref`` the positions' grid points and weights.
    The canonical ``(value, grad, hess)`` or, with ``output="soa"``, the streams ``(P, 10, N)``."""
    N = coefs.shape[3]
    with use_threads(threads):
        if layout == "aos":
            return _vgh_aos(coefs, idx, pref)
        if blocked and output == "canonical":
            return _vgh_fused(coefs, tc, idx, pref)
        P, M, Nb = idx.shape[0], tc.shape[0], tc.shape[4]
        out = aligned_empty((P, M, 10, stream_stride(Nb, coefs.dtype)), coefs.dtype)
        (_batch_tiles_blocked if blocked else _batch_tiles)(tc, idx, pref, out)
    if layout == "soa":
        soa = out[:, 0, :, :N]                                   # a view: no copy
    else:
        soa = np.moveaxis(out[..., :Nb], 1, 2).reshape(P, 10, M * Nb)[:, :, :N]
    return soa if output == "soa" else soa_to_canonical(soa)


def _vgh_aos(coefs, idx, pref):
    """The AoS driver into (P, N), (P, N, 3), (P, N, 3, 3) arrays, returned as float64."""
    P, N = idx.shape[0], coefs.shape[3]
    v = aligned_empty((P, N), coefs.dtype)
    g = aligned_empty((P, N, 3), coefs.dtype)
    h = aligned_empty((P, N, 3, 3), coefs.dtype)
    _batch_aos(coefs, idx, pref, v, g, h)
    return (v.astype(np.float64, copy=False), g.astype(np.float64, copy=False),
            h.astype(np.float64, copy=False))


def _vgh_fused(coefs, tc, idx, pref):
    """The fused kernel into canonical arrays carved from the pooled block (per-thread scratch
    blocks beside them), in the write mode the sizes and the alignment allow."""
    P, N, M, Nb = idx.shape[0], coefs.shape[3], tc.shape[0], tc.shape[4]
    chunk = _chunk_for(N, P, M, Nb, numba.get_num_threads())
    T = numba.config.NUMBA_NUM_THREADS
    value, grad, hess, buf, gbuf = canonical_outputs(
        P, N, (T, 1, 10, stream_stride(chunk, coefs.dtype)), coefs.dtype,
        avoid=coefs.ctypes.data, extra=T * 10 * max(_GROUPS))
    mode, G = _write_mode(N, Nb, chunk, value, grad, hess)
    _batch_canonical(tc, N, idx, pref, chunk, value, grad, hess, buf, mode,
                     gbuf[:T * 10 * G].reshape(T, 1, 10, G))
    return value, grad, hess


def _chunk_for(N: int, P: int, M: int, Nb: int, threads: int) -> int:
    """Splines per task of the fused kernel: a whole tile when there are enough tasks for the
    threads, else tiles cut into multiples of 8 so that every thread has work."""
    tasks = P * M
    if tasks >= 2 * threads:
        return Nb
    per = -(-Nb * tasks // (2 * threads))            # splines per task for 2 tasks per thread
    return int(min(Nb, max(8, -(-per // 8) * 8)))


def _streamable(N: int, Nb: int, chunk: int, *arrays) -> bool:
    """Whether the fused kernel writes the canonical arrays with 64-byte non-temporal vector
    stores: only with ``LABKIT_BSPLINE_STREAM=1`` (off by default: on this 260 MB-L3 host the
    reused outputs stay in L3, and bypassing it lost at low load — docs/bspline.md), and when
    every task's splines start at a multiple of 8 (N, tile, chunk) and the arrays on 64 bytes."""
    if os.environ.get("LABKIT_BSPLINE_STREAM", "0") != "1":
        return False
    return (N % 8 == 0 and Nb % 8 == 0 and chunk % 8 == 0
            and all(a.ctypes.data % 64 == 0 and a.flags.c_contiguous for a in arrays))


#: Splines per group of the grouped vector write of the last plane (_range_canonical,
#: stream=1), largest first: N, the tile and the chunk must all be multiples of it.
_GROUPS = (32, 16)


def _write_mode(N: int, Nb: int, chunk: int, *arrays) -> tuple:
    """How the fused kernel writes the canonical arrays: ``(2, 8)`` non-temporal (only with
    ``LABKIT_BSPLINE_STREAM=1``, see :func:`_streamable`), ``(1, G)`` grouped full-line vector
    stores with L2 prefetch (the default where N, the tile and the chunk are multiples of G and
    the arrays start on 64 bytes), else ``(0, 8)`` — spline by spline, any N."""
    if _streamable(N, Nb, chunk, *arrays):
        return 2, 8
    if all(a.ctypes.data % 64 == 0 and a.flags.c_contiguous for a in arrays):
        for G in _GROUPS:
            if N % G == 0 and Nb % G == 0 and chunk % G == 0:
                return 1, G
    return 0, 8


#: Groups of splines ahead whose canonical lines the grouped last-plane write prefetches into L2
#: (read prefetch: the lines arrive exclusive, so the stores find them there): +8–15 % over the
#: scalar write on the seed grid at 1 group (32 splines, 52 lines); 2 or 3 alike within noise.
_PREFETCH_GROUPS = 1


@njit(cache=True, fastmath=True, inline="always")
def _range_canonical(tcoefs, m, n0, nb, idx, pref, p, buf, q, lo, value, grad, hess, stream,
                     gbuf):
    # _tile_vgh_blocked for splines n0 … n0 + nb of tile m at position p: x-planes 0–2 summed
    # into the scratch block buf[q, 0] (10, nb; L1), the last plane added on the way out into
    # the canonical arrays at splines lo … lo + nb. ``stream`` 0: spline by spline (scalar: LLVM
    # does not vectorise the stride-3/9 stores), Hessian mirrored; 1 (the caller checked N, tile,
    # chunk % G == 0, G = gbuf.shape[3], arrays on 64 bytes): per group of G splines, the lines
    # of the group _PREFETCH_GROUPS ahead prefetched into L2 (else the full-line stores wait on
    # them: slower than scalar on the seed grid), the last plane vectorised into gbuf, transposed
    # in registers, full-line stores (_intrinsics); 2 (LABKIT_BSPLINE_STREAM=1): all four planes
    # into buf, then transposed with non-temporal stores.
    ks = (idx[p, 2, 0], idx[p, 2, 1], idx[p, 2, 2], idx[p, 2, 3])
    iys = (idx[p, 1, 0], idx[p, 1, 1], idx[p, 1, 2], idx[p, 1, 3])
    zw = (pref[p, 2, 0, 0], pref[p, 2, 0, 1], pref[p, 2, 0, 2], pref[p, 2, 0, 3],
          pref[p, 2, 1, 0], pref[p, 2, 1, 1], pref[p, 2, 1, 2], pref[p, 2, 1, 3],
          pref[p, 2, 2, 0], pref[p, 2, 2, 1], pref[p, 2, 2, 2], pref[p, 2, 2, 3])
    yw = (pref[p, 1, 0, 0], pref[p, 1, 0, 1], pref[p, 1, 0, 2], pref[p, 1, 0, 3],
          pref[p, 1, 1, 0], pref[p, 1, 1, 1], pref[p, 1, 1, 2], pref[p, 1, 1, 3],
          pref[p, 1, 2, 0], pref[p, 1, 2, 1], pref[p, 1, 2, 2], pref[p, 1, 2, 3])
    u0, ul = numba.uint64(n0), numba.uint64(lo)
    _plane_set(tcoefs, m, idx, pref, p, 0, iys, ks, zw, yw, u0, nb, buf, q, 0)
    for i in range(1, 3):
        _plane_add(tcoefs, m, idx, pref, p, i, iys, ks, zw, yw, u0, nb, buf, q, 0)
    if stream == 1:
        G = gbuf.shape[3]
        for g0 in range(0, nb, G):
            j = p * value.shape[1] + lo + g0 + _PREFETCH_GROUPS * G
            if j + G <= value.size:
                _prefetch_lines(value, j, G // 8, 0, 2)
                _prefetch_lines(grad, 3 * j, 3 * G // 8, 0, 2)
                _prefetch_lines(hess, 9 * j, 9 * G // 8, 0, 2)
            _plane_last_at(tcoefs, m, idx, pref, p, iys, ks, zw, yw, u0 + numba.uint64(g0),
                           buf, q, numba.uint64(g0), gbuf)
            _streams_to_canonical8_t(gbuf, q * 10 * G, G, value, grad, hess,
                                     p * value.shape[1] + lo + g0, G // 8)
        return
    if stream == 2:
        _plane_add(tcoefs, m, idx, pref, p, 3, iys, ks, zw, yw, u0, nb, buf, q, 0)
        ld = buf.shape[3]
        _streams_to_canonical8(buf, q * 10 * ld, ld, value, grad, hess, p * value.shape[1] + lo,
                               nb // 8)
        return
    ix = idx[p, 0, 3]
    a, da, d2a = pref[p, 0, 0, 3], pref[p, 0, 1, 3], pref[p, 0, 2, 3]
    for k in range(nb):
        s00, s10, s20, s01, s11, s02 = _yplane(tcoefs, m, ix, iys, ks, u0 + numba.uint64(k), zw, yw)
        j = ul + numba.uint64(k)
        value[p, j] = buf[q, 0, 0, k] + a * s00
        grad[p, j, 0] = buf[q, 0, 1, k] + da * s00
        grad[p, j, 1] = buf[q, 0, 2, k] + a * s10
        grad[p, j, 2] = buf[q, 0, 3, k] + a * s01
        h00 = buf[q, 0, 4, k] + d2a * s00
        h01 = buf[q, 0, 5, k] + da * s10
        h02 = buf[q, 0, 6, k] + da * s01
        h11 = buf[q, 0, 7, k] + a * s20
        h12 = buf[q, 0, 8, k] + a * s11
        h22 = buf[q, 0, 9, k] + a * s02
        hess[p, j, 0, 0] = h00
        hess[p, j, 0, 1] = h01
        hess[p, j, 0, 2] = h02
        hess[p, j, 1, 0] = h01
        hess[p, j, 1, 1] = h11
        hess[p, j, 1, 2] = h12
        hess[p, j, 2, 0] = h02
        hess[p, j, 2, 1] = h12
        hess[p, j, 2, 2] = h22


@wide_njit(cache=True, parallel=True, fastmath=True)
def _batch_canonical(tcoefs, n, idx, pref, chunk, value, grad, hess, buf, stream, gbuf):
    # the entry point's fused kernel: positions × tiles × chunks of ``chunk`` splines in one
    # prange; each task works in its thread's scratch block buf[numba.get_thread_id(), 0]
    # (allocated once by the caller) and writes the canonical value (P, N), grad (P, N, 3),
    # hess (P, N, 3, 3) itself: no SoA array and no numpy conversion pass afterwards.
    # labkit.jit's 512-bit vectors (labkit's own fast kernel; no check times a student against
    # it): +2 % on the float64 seed grid, +5 % in float32 and on the 8³ grid (docs/bspline.md).
    # ``stream``: how the last plane is written (_range_canonical); ``gbuf (threads, 1, 10, G)``:
    # the per-thread group scratch of stream=1.
    M, Nb = tcoefs.shape[0], tcoefs.shape[4]
    C = (Nb + chunk - 1) // chunk
    P = idx.shape[0]
    for t in prange(P * M * C):
        p = t // (M * C)
        r = t - p * (M * C)
        m = r // C
        n0 = (r - m * C) * chunk
        lo = m * Nb + n0
        nb = min(chunk, Nb - n0, n - lo)
        if nb <= 0:
            continue
        q = numba.get_thread_id()
        if nb == Nb:
            # a whole tile: its own inlined copy, whose loops run to the array's shape — with
            # the trip count from min() above every write mode's vector loops run below the
            # kernel's speed (LLVM's loop versioning; the non-temporal write's last plane the
            # most, the grouped and scalar writes 1.25–2.1× slower: docs/bspline.md (9) and
            # 'Compile time of the fused kernel')
            _range_canonical(tcoefs, m, 0, tcoefs.shape[4], idx, pref, p, buf, q, lo, value,
                             grad, hess, stream, gbuf)
        else:
            _range_canonical(tcoefs, m, n0, nb, idx, pref, p, buf, q, lo, value, grad, hess,
                             stream, gbuf)


@njit(cache=True, parallel=True)
def _batch_aos(coefs, idx, pref, v, g, h):
    # walkers in parallel, AoS outputs (P, N), (P, N, 3), (P, N, 3, 3)
    for p in prange(idx.shape[0]):
        vgh_aos(coefs, idx[p], pref[p], v[p], g[p], h[p])
