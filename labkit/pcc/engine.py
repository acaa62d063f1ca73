"""labkit's fast all-pairs engine: what ``pearson_allpairs``, ``pcc_threads`` and
``correlated_pairs`` run (``kernels.py`` keeps the lesson's steps, its 4×4 ``tile_block`` included).
The drivers (``pcc_tiles_*``, ``tiles_to_buffer``) take Z as engine rows (the 6×4 block below:
hosts without AVX-512, tiles that are not multiples of 8) or as ``(panels, n)``, the packed panels
and 8×24 micro-kernel of ``_panels.py`` (AVX-512 hosts); numba picks the tile kernel by Z's type.

The row engine is compiled with :func:`labkit.jit.njit` (512-bit vectors on AVX-512 hosts, ``LABKIT_VECTOR_BITS=256``
turns that off). Three things make it fast, measured in docs/pcc.md:

* **Aligned, padded rows.** ``standardize_into`` writes Z into a 64-byte-aligned buffer whose rows
  are padded with zeros to a multiple of 8 doubles (``engine_rows``): every k-slice of every row
  starts on a cache line, so no 512-bit load is split across two lines (a row start 16 bytes off
  the line halved the 4×4 block's speed), and the k loop has no scalar tail. The standardisation
  is fused with that copy: one pass over X writes the padded Z.
* **A 6×4 register block** (``MR`` × ``NR``; 24 accumulators of 8 doubles + 10 loaded vectors
  fill the 32 zmm registers): 10 vector loads feed 24 FMAs per k-step, 2.4 per load (the 4×4 block:
  2). The block's source is generated from ``MR``, ``NR`` (``BLOCK_SOURCE``) rather than written
  out 24 times (``_block.py``).
* **k-blocks of ``KB`` = 512 samples**, so the 6 row slices (24 KiB) stay in L1 while a tile's
  column slices stream from L2.
"""
from __future__ import annotations

import threading
import warnings

import numba
import numpy as np
from numba import get_thread_id, prange, types
from numba.extending import overload

from labkit._common import aligned_empty, use_threads
from labkit.jit import njit

from . import _panels as panels
from ._block import BLOCK_SOURCE, MR, NR, block_tile
from ._layout import _ALIGN, LANE, _row_moments
from .inputs import DEFAULT_TILE, _require_finite
from .mapping import _job_coords_nb

__all__ = ["MR", "NR", "KB", "LANE", "BLOCK_SOURCE", "engine_rows", "aligned_empty",
           "as_engine_rows",
           "standardize_into", "block_tile", "pcc_tiles_static", "pcc_tiles_cyclic",
           "pcc_tiles_dynamic", "pcc_tiles_rows", "tiles_to_buffer", "extract_pairs", "engine_input",
           "kb_for", "allpairs", "all_tiles", "pairs", "release_spare", "SPARE_MAX_BYTES"]

#: samples per k-block (a multiple of LANE, so every k-slice of an aligned row is aligned)
KB = 512


# ---------------------------------------------------------------- aligned, padded rows
def engine_rows(n, l):
    """An uninitialised n × l float64 view whose rows start on 64-byte lines: the rows of a
    C-contiguous buffer of n × ceil(l / 8)·8 doubles (``Zp[:, :l]`` is the data, the rest padding)."""
    lp = -(-int(l) // LANE) * LANE
    raw = np.empty(n * lp + _ALIGN // 8)
    off = (-raw.ctypes.data % _ALIGN) // 8
    return raw[off:off + n * lp].reshape(n, lp)


def as_engine_rows(Z):
    """Z itself if its rows are already aligned and padded (C-contiguous, row length a multiple
    of 8, 64-byte start), else a zero-padded aligned copy: the dot products are unchanged."""
    Z = np.asarray(Z, dtype=np.float64)
    n, l = Z.shape
    if Z.flags.c_contiguous and l % LANE == 0 and Z.ctypes.data % _ALIGN == 0:
        return Z
    Zp = engine_rows(n, l)
    Zp[:, :l] = Z
    Zp[:, l:] = 0.0
    return Zp


@njit(cache=True, parallel=True)
def standardize_into(X, Z, const):
    """Eq. 4 (two-pass) into Z: Z[i, :l] = (X[i] − mean) / ‖X[i] − mean‖ and Z[i, l:] = 0 (the
    padding of engine rows); a constant row (every sample equal to the first) → zeros,
    const[i] = True. No fastmath: sums in sample order, so every path that standardises
    (``kernels.standardize``, the entry points, the MPI ranks, ``panels``) gets the same bits."""
    n, l = X.shape
    for i in prange(n):
        x = X[i]
        z = Z[i]
        mean, inv, same = _row_moments(x)
        const[i] = same
        for k in range(l):
            z[k] = (x[k] - mean) * inv
        for k in range(l, Z.shape[1]):
            z[k] = 0.0


# ---------------------------------------------------------------- tiles → R, by thread
@njit(cache=True, fastmath=True, nogil=True)
def _finish_tile(R, i0, i1, j0, j1, diag):
    """Clip the tile's upper cells to [-1, 1] and mirror them into the lower triangle (the
    diagonal tiles; the others are mirrored by ``block_tile``: this loop's column-wise writes
    cost 13 % of the kernel at n = 4000)."""
    for i in range(i0, i1):
        for j in range(i if diag else j0, j1):
            v = min(1.0, max(-1.0, R[i, j]))
            R[i, j] = v
            R[j, i] = v


# Z is either engine rows (n × l, the MR×NR block above) or, where ``panels.applies(tile)``, the
# tuple (packed panels, n) of ``_panels.py`` (its 8 × 24 micro-kernel): the drivers below run
# both, picked when numba types Z.
def _n_vars(Z):
    """Number of variables in the drivers' Z (rows or (panels, n))."""
    return Z[1] if isinstance(Z, tuple) else Z.shape[0]


@overload(_n_vars)
def _ov_n_vars(Z):
    if isinstance(Z, types.BaseTuple):
        return lambda Z: Z[1]
    return lambda Z: Z.shape[0]


def _tile_into(Z, i0, i1, j0, j1, diag, kb, out, oi, oj, sym):
    """One tile (rows [i0, i1) × columns [j0, j1)) into out[i - oi, j - oj]; sym: a tile of R
    itself, clipped to [-1, 1] and mirrored into its lower triangle."""


@overload(_tile_into)
def _ov_tile_into(Z, i0, i1, j0, j1, diag, kb, out, oi, oj, sym):
    if isinstance(Z, types.BaseTuple):
        from ._panels import panel_tile

        def impl(Z, i0, i1, j0, j1, diag, kb, out, oi, oj, sym):
            panel_tile(Z[0], Z[1], i0, i1, j0, j1, diag, kb, out, oi, oj, sym)
        return impl

    def impl(Z, i0, i1, j0, j1, diag, kb, out, oi, oj, sym):
        if sym and diag:         # a diagonal tile: its block rows overlap the lower triangle
            block_tile(Z, i0, i1, j0, j1, True, kb, out, oi, oj, False)
            _finish_tile(out, i0, i1, j0, j1, True)
        else:                    # clipped and mirrored by the block itself if sym
            block_tile(Z, i0, i1, j0, j1, diag, kb, out, oi, oj, sym)
    return impl


@njit(cache=True, nogil=True)
def _do_tile(Z, R, tile, m, J, kb):
    n = _n_vars(Z)
    yt, xt = _job_coords_nb(m, J)
    i0 = yt * tile
    j0 = xt * tile
    _tile_into(Z, i0, min(n, i0 + tile), j0, min(n, j0 + tile), yt == xt, kb, R, 0, 0, True)


@njit(cache=True, parallel=True)
def pcc_tiles_static(Z, tile, kb, P, R, owner):
    """Thread p takes tile ids [p·ceil(T/P), (p+1)·ceil(T/P)) (the seed's split); fills R."""
    n = _n_vars(Z)
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
    n = _n_vars(Z)
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
    n = _n_vars(Z)
    m = (n + tile - 1) // tile
    T = m * (m + 1) // 2
    for J in prange(T):
        # prange's index is unsigned: as int64, _do_tile is the other schedules' (one compile)
        _do_tile(Z, R, tile, m, np.int64(J), kb)
        owner[J] = get_thread_id()


@njit(cache=True, parallel=True)
def pcc_tiles_rows(Z, tile, kb, R, owner):
    """prange over tile *rows* (no bijection): triangular work split statically — unbalanced."""
    n = _n_vars(Z)
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
    n = _n_vars(Z)
    m = (n + tile - 1) // tile
    for b in prange(J1 - J0):
        yt, xt = _job_coords_nb(m, J0 + b)
        i0 = yt * tile
        j0 = xt * tile
        _tile_into(Z, i0, min(n, i0 + tile), j0, min(n, j0 + tile), yt == xt, kb,
                   buf[b], i0, j0, False)


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


# ---------------------------------------------------------------- what the entry points run
def allpairs(X, tile, schedule, P):
    """``pearson_allpairs`` on validated X: standardised rows (into the spare buffer of the last
    call if it has this shape), every tile, constant rows NaN."""
    Z, const = _standardized_rows(X, P, tile, spare=True)
    try:
        R, _ = _run_tiles(Z, tile, schedule, P, kb_for(Z))
    finally:
        _keep_spare(Z[0] if isinstance(Z, tuple) else Z)
    _nan_const(R, const, "X", stacklevel=4)
    return R


# ---------------------------------------------------------------- the entry point's spare buffer
#: ``pearson_allpairs`` keeps the buffer it standardised X into (n × l doubles, the size of X)
#: for its next call of the same shape, as BLAS libraries keep their packing buffers, if it is at
#: most SPARE_MAX_BYTES; ``release_spare()`` frees it. A fresh 64 MB buffer per call cost
#: 0.10–0.15 s of system time on the 2-core Zen 4 VM (its freed 2 MB blocks go back to the host,
#: so first touches fault there again), 20 % of the call: docs/pcc.md, 'The entry point against
#: its kernel'. Every call overwrites all of it (padding included) before reading it.
SPARE_MAX_BYTES = 256 << 20
_spare: list = []
_spare_lock = threading.Lock()


def _take_spare(shape, make):
    """The kept buffer if it has this shape (it is then no longer kept: a concurrent call makes
    its own), else ``make()``."""
    with _spare_lock:
        if _spare and _spare[0].shape == shape:
            return _spare.pop()
    return make()


def _keep_spare(buf):
    """Keep ``buf`` (replacing any other) for the next call, if it is small enough."""
    if buf.nbytes <= SPARE_MAX_BYTES:
        with _spare_lock:
            _spare[:] = [buf]


def release_spare():
    """Free the buffer ``pearson_allpairs`` keeps between calls (it is made again when needed)."""
    with _spare_lock:
        _spare.clear()


def all_tiles(Z, tile, schedule, P, kb=None):
    """``pcc_threads`` on validated arguments: Z in the engine's form (``engine_input``), then
    every tile; (R, owner)."""
    Z = engine_input(Z, tile)
    return _run_tiles(Z, tile, schedule, P, int(kb_for(Z) if kb is None else kb))


def pairs(X, threshold, tile, P, tiles_per_pass, max_pairs):
    """``correlated_pairs`` on validated arguments: (i, j, r) sorted by (i, j), tile by tile
    in passes over a reused buffer; constant rows warned about and left out."""
    n = X.shape[0]
    Z, const = _standardized_rows(X, P, tile)
    if const.any():
        warnings.warn(f"{int(const.sum())} constant row(s) in X (first: {np.flatnonzero(const)[0]}):"
                      " PCC undefined, they appear in no pair", RuntimeWarning, stacklevel=3)
    m = -(-n // tile)
    T = m * (m + 1) // 2
    if tiles_per_pass is None:
        tiles_per_pass = max(4 * P, (64 << 20) // (8 * tile * tile))   # ~64 MB buffer
    I, Jx, V = _pairs_over_range(Z, tile, 0, T, threshold, P, int(tiles_per_pass), max_pairs)
    order = np.lexsort((Jx, I))
    return I[order], Jx[order], V[order]


def _standardized_rows(X, P, tile=DEFAULT_TILE, spare=False):
    """(Z, const): X's rows standardised straight into what the engine runs on for this tile —
    packed panels ``(Zp, n)`` where ``panels.applies(tile)`` (AVX-512 hosts, tile a multiple
    of 8), else engine rows (aligned, zero-padded). The same bits of Z either way. A row with a
    NaN or inf (or too large to standardise) has a non-finite mean or norm, so its first sample
    in Z is NaN: that raises the ValueError naming the first bad cell. ``spare``: into the
    entry point's kept buffer when it has the shape (``_take_spare``)."""
    n, l = X.shape
    const = np.empty(n, dtype=np.bool_)
    use = _take_spare if spare else (lambda shape, make: make())
    with use_threads(P):
        if panels.applies(tile):
            Zp = use((-(-n // LANE), l, LANE), lambda: panels.panel_rows(n, l))
            panels.standardize_panels(X, Zp, const)
            Z, first = (Zp, n), Zp[:, 0, :].ravel()[:n]
        else:
            Z = use((n, -(-l // LANE) * LANE), lambda: engine_rows(n, l))
            standardize_into(X, Z, const)
            first = Z[:, 0]
    if not np.isfinite(first).all():
        _require_finite(X)
        i = int(np.flatnonzero(~np.isfinite(first))[0])
        raise ValueError(f"X[{i}] overflows float64 when centred and scaled; rescale X first")
    return Z, const


def engine_input(Z, tile=DEFAULT_TILE):
    """Standardised rows Z (n × l) in the form the engine runs on for this tile: packed panels
    ``(Zp, n)`` (``panels.as_panels``) or engine rows (``engine.as_engine_rows``). Given to
    ``pcc_threads``, the kernel is timed without that copy."""
    if isinstance(Z, tuple):
        return Z
    Z = np.asarray(Z, dtype=np.float64)
    if Z.ndim != 2:
        raise ValueError(f"Z must be 2-D (n variables × l samples), got shape {Z.shape}")
    return panels.as_panels(Z) if panels.applies(tile) else as_engine_rows(Z)


def kb_for(Z):
    """Samples per k-block for the engine's form of Z: ``panels.KB`` for packed panels (a tuple),
    ``engine.KB`` for engine rows. Every path (matrix, buffer passes, MPI ranks) uses it, so
    they all sum in the same order."""
    return panels.KB if isinstance(Z, tuple) else KB


def _run_tiles(Z, tile, schedule, P, kb):
    """(R, owner): every tile of Z's all-pairs matrix, handed to P threads by ``schedule``."""
    n = _n_vars(Z)
    m = -(-n // tile)
    T = m * (m + 1) // 2
    R = aligned_empty((n, n))       # 64-byte rows starts for the blocks' vector stores
    owner = np.full(T, -1, dtype=np.int64)
    with use_threads(P):
        if schedule == "static":
            pcc_tiles_static(Z, tile, int(kb), P, R, owner)
        elif schedule == "cyclic":
            pcc_tiles_cyclic(Z, tile, int(kb), P, R, owner)
        elif schedule == "dynamic":
            with numba.parallel_chunksize(1):
                pcc_tiles_dynamic(Z, tile, int(kb), R, owner)
        else:
            pcc_tiles_rows(Z, tile, int(kb), R, owner)
    return R, owner


def _nan_const(R, const, what, stacklevel=3):
    """NaN in the rows and columns of R of constant variables, with a warning at the caller's
    caller (``stacklevel``)."""
    if const.any():
        idx = np.flatnonzero(const)
        R[idx, :] = np.nan
        R[:, idx] = np.nan
        warnings.warn(f"{len(idx)} constant row(s) in {what} (first: {idx[0]}): PCC is undefined "
                      "there → NaN in their row and column (as np.corrcoef)",
                      RuntimeWarning, stacklevel=stacklevel)


def _pairs_over_range(Z, tile, J0, J1, threshold, P, tiles_per_pass, max_pairs):
    """Passes over tile ids [J0, J1): compute into a reused buffer, keep pairs ≥ threshold."""
    n = _n_vars(Z)
    buf = np.empty((min(tiles_per_pass, max(1, J1 - J0)), tile, tile))
    parts_i, parts_j, parts_v = [], [], []
    total = 0
    with use_threads(P):
        for s in range(J0, J1, tiles_per_pass):
            e = min(J1, s + tiles_per_pass)
            b = buf[: e - s]
            tiles_to_buffer(Z, tile, kb_for(Z), s, e, b)
            i, j, v = extract_pairs(b, n, tile, s, threshold)
            total += len(i)
            if total > max_pairs:
                raise ValueError(f"more than max_pairs={max_pairs} pairs have |r| ≥ {threshold}; "
                                 "raise the threshold (or max_pairs if you have the memory)")
            parts_i.append(i)
            parts_j.append(j)
            parts_v.append(v)
    if not parts_i:
        return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0)
    return np.concatenate(parts_i), np.concatenate(parts_j), np.concatenate(parts_v)
