"""labkit's fast all-pairs engine: what ``pearson_allpairs``, ``pcc_threads`` and
``correlated_pairs`` run (``kernels.py`` keeps the lesson's steps, its 4×4 ``tile_block`` included).
The drivers (``pcc_tiles_*``, ``tiles_to_buffer``) take Z as engine rows (the 6×4 block below:
hosts without AVX-512, tiles that are not multiples of 8) or as ``(panels, n)``, the packed panels
and 8×24 micro-kernel of ``panels.py`` (AVX-512 hosts); numba picks the tile kernel by Z's type.

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
  out 24 times.
* **k-blocks of ``KB`` = 512 samples**, so the 6 row slices (24 KiB) stay in L1 while a tile's
  column slices stream from L2.
"""
from __future__ import annotations

import numpy as np
from numba import get_thread_id, prange, types
from numba.extending import overload

from labkit._common import aligned_empty
from labkit.jit import njit

from .layout import _ALIGN, LANE, _row_moments
from .mapping import _job_coords_nb

__all__ = ["MR", "NR", "KB", "LANE", "BLOCK_SOURCE", "engine_rows", "aligned_empty",
           "as_engine_rows",
           "standardize_into", "block_tile", "pcc_tiles_static", "pcc_tiles_cyclic",
           "pcc_tiles_dynamic", "pcc_tiles_rows", "tiles_to_buffer", "extract_pairs"]

#: register block: MR rows × NR columns of dot products per pass over a k-block
MR, NR = 6, 4
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


# ---------------------------------------------------------------- the MR×NR register block
def _block_source(mr, nr):
    """Source of ``block_tile`` for an mr × nr register block (mr·nr scalar sums, which LLVM
    turns into mr·nr vector accumulators of the k loop), leftover columns mr × 1, rows 1 × 1."""
    rows, cols = range(mr), range(nr)
    cells = [(r, c) for r in rows for c in cols]

    def lines(indent, items):
        return [" " * indent + s for s in items]

    def store(indent, pairs, dest, acc, mirror):
        # first k-block: store; later ones: add; the last one of a sym tile: clip, mirror
        return (lines(indent, ["if first:"]) + lines(indent + 4, [f"{dest(*p)} = {acc(*p)}" for p in pairs])
                + lines(indent, ["else:"]) + lines(indent + 4, [f"{dest(*p)} += {acc(*p)}" for p in pairs])
                + lines(indent, ["if last:"])
                + lines(indent + 4, [f"{x}" for p in pairs for x in (
                    f"v = min(1.0, max(-1.0, {dest(*p)}))", f"{dest(*p)} = v", f"{mirror(*p)} = v")]))

    src = [
        "def block_tile(Z, i0, i1, j0, j1, diag, kb, out, oi, oj, sym):",
        f'    """out[i-oi, j-oj] = <Z_i, Z_j> for i in [i0,i1), j in [j0,j1) (on a diagonal tile',
        f'    only from i\'s {nr}-column block on): a {mr}×{nr} register block over k-blocks of kb.',
        "    sym (an off-diagonal tile of R itself, oi = oj = 0): the last k-block clips each cell to",
        '    [-1, 1] and writes it to out[j, i] too, from the block just computed (no second pass)."""',
        "    l = Z.shape[1]",
        "    for k0 in range(0, l, kb):",
        "        k1 = min(k0 + kb, l)",
        "        kk = k1 - k0",
        "        first = k0 == 0",
        "        last = sym and k1 == l",
        "        i = i0",
        f"        while i + {mr} <= i1:",
        *lines(12, [f"a{r} = Z[i + {r}, k0:k1]" for r in rows]),
        f"            j = j0 + (i - i0) // {nr} * {nr} if diag else j0",
        "            r = i - oi",
        f"            while j + {nr} <= j1:",
        *lines(16, [f"b{c} = Z[j + {c}, k0:k1]" for c in cols]),
        *lines(16, [f"s{r}_{c} = 0.0" for r, c in cells]),
        "                for k in range(kk):",
        *lines(20, [f"x{r} = a{r}[k]" for r in rows] + [f"y{c} = b{c}[k]" for c in cols]),
        *lines(20, [f"s{r}_{c} += x{r} * y{c}" for r, c in cells]),
        "                c = j - oj",
        *store(16, cells, lambda r, c: f"out[r + {r}, c + {c}]", lambda r, c: f"s{r}_{c}",
               lambda r, c: f"out[c + {c}, r + {r}]"),
        f"                j += {nr}",
        "            while j < j1:",
        "                b0 = Z[j, k0:k1]",
        *lines(16, [f"t{r} = 0.0" for r in rows]),
        "                for k in range(kk):",
        "                    y0 = b0[k]",
        *lines(20, [f"t{r} += a{r}[k] * y0" for r in rows]),
        *store(16, [(r, 0) for r in rows], lambda r, _: f"out[r + {r}, j - oj]", lambda r, _: f"t{r}",
               lambda r, _: f"out[j - oj, r + {r}]"),
        "                j += 1",
        f"            i += {mr}",
        "        while i < i1:",
        "            a0 = Z[i, k0:k1]",
        "            j = i if diag else j0",
        "            while j < j1:",
        "                b0 = Z[j, k0:k1]",
        "                s = 0.0",
        "                for k in range(kk):",
        "                    s += a0[k] * b0[k]",
        *store(16, [(0, 0)], lambda *_: "out[i - oi, j - oj]", lambda *_: "s",
               lambda *_: "out[j - oj, i - oi]"),
        "                j += 1",
        "            i += 1",
    ]
    return "\n".join(src) + "\n"


#: the generated source of ``block_tile`` (print it to read the register block)
BLOCK_SOURCE = _block_source(MR, NR)
_ns: dict = {"__name__": __name__}
# compiled under this file's name so numba's cache can locate (and invalidate) it with this module
exec(compile(BLOCK_SOURCE, __file__, "exec"), _ns)
block_tile = njit(cache=True, fastmath=True, nogil=True)(_ns["block_tile"])


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
# tuple (packed panels, n) of ``panels.py`` (its 8 × 24 micro-kernel): the drivers below run
# both, picked when numba types Z.
def _n_vars(Z):
    """Number of variables in the drivers' Z (rows or (panels, n))."""


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
        from .panels import panel_tile

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
        _do_tile(Z, R, tile, m, J, kb)
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
