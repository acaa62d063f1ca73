"""Direct bijective mapping between upper-triangle coordinates and job ids (LightPCC, Eq. 9–19).

Jobs ``(y, x)`` with ``0 <= y <= x < n`` are numbered left-to-right, top-to-bottom::

    J_n(y, x) = F_n(y) + x - y,      F_n(y) = y (2n - y + 1) / 2

The seed inverts this with a floating-point closed form (Eq. 14). In float64 that formula is
exact only while ``n*n + n + 0.25`` is representable, i.e. ``n*n + n < 2**51``; from
``n = 47_453_133`` on it returns ``y + 1`` for the last job of the rows near the bottom.
labkit's inverse counts rows from the bottom instead and corrects the float square root with
exact integer arithmetic, so it is exact for every ``n <= 2**31`` with int64 ids.

``rank_tile_range`` splits the T tile ids into contiguous ranges (threads, MPI ranks);
``tile_pairs`` / ``owner_matrix`` show how much work each id stands for and who did it.

Every ``job_*``/``tile_*`` function here exists in three forms under one name: Python scalars (exact ints),
numpy arrays (vectorised, int64) and inside ``@numba.njit`` code (via ``numba.extending.overload``;
no range checks there — validate before entering the kernel).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit
from numba.extending import overload

from labkit._common import check_tile, int_array, is_int, positive_int

__all__ = ["MAX_N", "FLOAT_FIRST_BAD_N", "n_jobs", "job_id", "job_coords", "n_tiles",
           "tile_id", "tile_coords", "tile_bounds", "job_coords_float", "isqrt64",
           "rank_tile_range", "tile_pairs", "owner_matrix"]

#: Largest n for which every id fits in int64 and the exact inverse is guaranteed.
MAX_N = 2 ** 31
#: First n where the seed's float64 closed form (Eq. 14) returns a wrong row.
FLOAT_FIRST_BAD_N = 47_453_133


# ---------------------------------------------------------------- numba kernels (no checks)
@njit(cache=True, nogil=True)
def _F(n, y):
    """Cells before row y in the upper triangle (Eq. 10)."""
    return y * (2 * n - y + 1) // 2


@njit(cache=True, nogil=True)
def isqrt64(v):
    """Exact floor(sqrt(v)) for 0 <= v < 2**62 (float guess, then integer fix-up)."""
    s = np.int64(math.sqrt(np.float64(v)))
    while s * s > v:
        s -= 1
    while (s + 1) * (s + 1) <= v:
        s += 1
    return s


@njit(cache=True, nogil=True)
def _job_id_nb(n, y, x):
    """J_n(y, x) = F_n(y) + x - y (Eq. 9)."""
    return y * (2 * n - y + 1) // 2 + x - y


@njit(cache=True, nogil=True)
def _job_coords_nb(n, J):
    """Exact inverse of _job_id_nb: count rows from the bottom, integer square root."""
    n = np.int64(n)
    J = np.int64(J)
    R = n * (n + 1) // 2 - 1 - J          # id counted from the last job backwards
    r = isqrt64(2 * R)                   # row from the bottom: r(r+1)/2 <= R < (r+1)(r+2)/2
    if r * (r + 1) // 2 > R:
        r -= 1
    y = n - 1 - r
    x = J + y - y * (2 * n - y + 1) // 2
    return y, x


@njit(cache=True, nogil=True)
def _job_coords_vec(n, J, ys, xs):
    for i in range(J.shape[0]):
        y, x = _job_coords_nb(n, J[i])
        ys[i] = y
        xs[i] = x


# ---------------------------------------------------------------- validation helpers
def _check_n(n, what="n"):
    n = positive_int(n, what, hint=f"pass int({what})")
    if n > MAX_N:
        raise ValueError(f"{what} = {n} is above 2**31: ids would overflow int64; "
                         "split the problem (e.g. over tiles) so n ≤ 2**31")
    return n


def _as_int_array(v, name):
    return int_array(v, name).astype(np.int64, copy=False)


def n_jobs(n):
    """Number of upper-triangle jobs including the diagonal: n(n+1)/2."""
    n = _check_n(n)
    return n * (n + 1) // 2


# ---------------------------------------------------------------- public: jobs
def job_id(n, y, x):
    """Job id J_n(y, x) of cell (y, x), 0 <= y <= x < n (scalars → int, arrays → int64 array)."""
    n = _check_n(n)
    if is_int(y) and is_int(x):
        y, x = int(y), int(x)
        if not (0 <= y <= x < n):
            raise ValueError(f"need 0 ≤ y ≤ x < n, got y={y}, x={x}, n={n} "
                             "(for a lower-triangle cell swap y and x)")
        return y * (2 * n - y + 1) // 2 + x - y
    ya, xa = np.broadcast_arrays(_as_int_array(y, "y"), _as_int_array(x, "x"))
    bad = (ya < 0) | (ya > xa) | (xa >= n)
    if bad.any():
        k = int(np.flatnonzero(bad.ravel())[0])
        raise ValueError(f"need 0 ≤ y ≤ x < n: y[{k}]={ya.ravel()[k]}, x[{k}]={xa.ravel()[k]}, "
                         f"n={n} ({int(bad.sum())} bad cells; swap y and x for lower-triangle ones)")
    return ya * (2 * n - ya + 1) // 2 + xa - ya


def job_coords(n, J):
    """Coordinates (y, x) of job id J in [0, n(n+1)/2) — exact for every n ≤ 2**31."""
    n = _check_n(n)
    total = n * (n + 1) // 2
    if is_int(J):
        J = int(J)
        if not (0 <= J < total):
            raise ValueError(f"job id J={J} out of range [0, n(n+1)/2 = {total}) for n={n}")
        R = total - 1 - J
        r = (math.isqrt(8 * R + 1) - 1) // 2
        y = n - 1 - r
        return y, J + y - y * (2 * n - y + 1) // 2
    Ja = _as_int_array(J, "J")
    if Ja.size and (Ja.min() < 0 or Ja.max() >= total):
        k = int(np.flatnonzero(((Ja < 0) | (Ja >= total)).ravel())[0])
        raise ValueError(f"job id J[{k}]={Ja.ravel()[k]} out of range [0, {total}) for n={n}")
    flat = np.ascontiguousarray(Ja).ravel()
    ys = np.empty_like(flat)
    xs = np.empty_like(flat)
    _job_coords_vec(np.int64(n), flat, ys, xs)
    return ys.reshape(Ja.shape), xs.reshape(Ja.shape)


def job_coords_float(n, J):
    """The seed's float64 closed form (Eq. 14–15), vectorised — wrong for n ≥ 47 453 133."""
    J = np.asarray(J, dtype=np.int64)
    nf = np.float64(n)
    y = np.ceil(nf - 0.5 - np.sqrt(nf * nf + nf + 0.25 - 2.0 * (J + 1).astype(np.float64)))
    y = y.astype(np.int64)
    x = J + y - y * (2 * np.int64(n) - y + 1) // 2
    return y, x


# ---------------------------------------------------------------- public: tiles
def _check_tile(tile):
    return check_tile(tile, what="variables", hint="variables per tile; try 64 or 96")


def n_tiles(n, tile):
    """(m, T): tiles per side m = ceil(n/tile) and upper-triangle tile count T = m(m+1)/2."""
    n = _check_n(n)
    tile = _check_tile(tile)
    m = -(-n // tile)
    return m, m * (m + 1) // 2


def tile_id(n, tile, yt, xt):
    """Tile id J_m(yt, xt) over the m×m tile matrix, m = ceil(n/tile) (Eq. 16–17)."""
    m, _ = n_tiles(n, tile)
    return job_id(m, yt, xt)


def tile_coords(n, tile, Jt):
    """Tile coordinates (yt, xt) of tile id Jt over the m×m tile matrix (Eq. 18–19, exact)."""
    m, _ = n_tiles(n, tile)
    return job_coords(m, Jt)


def tile_bounds(n, tile, Jt):
    """Row and column ranges (y0, y1, x0, x1) of the variables in tile Jt (scalar only)."""
    yt, xt = tile_coords(n, tile, Jt)
    return (yt * tile, min(n, (yt + 1) * tile), xt * tile, min(n, (xt + 1) * tile))


# ---------------------------------------------------------------- splitting tile ids
def rank_tile_range(rank, size, T):
    """Tile ids [rank·ceil(T/size), (rank+1)·ceil(T/size)) ∩ [0, T) of one MPI rank (the seed's split)."""
    for name, v in (("rank", rank), ("size", size), ("T", T)):
        if not is_int(v):
            raise TypeError(f"{name} must be an integer, got {v!r}")
    if size < 1 or not 0 <= rank < size or T < 0:
        raise ValueError(f"need size ≥ 1, 0 ≤ rank < size, T ≥ 0; got rank={rank}, size={size}, T={T}")
    chunk = -(-int(T) // int(size))
    return min(T, rank * chunk), min(T, (rank + 1) * chunk)


def tile_pairs(n, tile):
    """Pairs (y ≤ x) inside each tile, by tile id: the work each tile id stands for."""
    m, T = n_tiles(n, tile)
    yt, xt = job_coords(m, np.arange(T, dtype=np.int64))
    h = np.minimum(n, (yt + 1) * tile) - yt * tile
    w = np.minimum(n, (xt + 1) * tile) - xt * tile
    return np.where(yt == xt, h * (h + 1) // 2, h * w)


def owner_matrix(owner, n, tile):
    """m×m float matrix of the thread (or rank) that computed each tile; NaN below the diagonal."""
    m, T = n_tiles(n, tile)
    owner = np.asarray(owner)
    if owner.shape != (T,):
        raise ValueError(f"owner has shape {owner.shape}, expected ({T},) for n={n}, tile={tile}")
    M = np.full((m, m), np.nan)
    yt, xt = job_coords(m, np.arange(T, dtype=np.int64))
    M[yt, xt] = owner
    return M



# ---------------------------------------------------------------- numba-callable forms
@overload(job_id, jit_options={"cache": True})
def _ov_job_id(n, y, x):
    def impl(n, y, x):
        return _job_id_nb(n, y, x)
    return impl


@overload(job_coords, jit_options={"cache": True})
def _ov_job_coords(n, J):
    def impl(n, J):
        return _job_coords_nb(n, J)
    return impl


@overload(tile_coords, jit_options={"cache": True})
def _ov_tile_coords(n, tile, Jt):
    def impl(n, tile, Jt):
        m = (n + tile - 1) // tile
        return _job_coords_nb(m, Jt)
    return impl


@overload(tile_id, jit_options={"cache": True})
def _ov_tile_id(n, tile, yt, xt):
    def impl(n, tile, yt, xt):
        m = (n + tile - 1) // tile
        return _job_id_nb(m, yt, xt)
    return impl
