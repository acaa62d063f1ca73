"""Distributed all-pairs PCC over MPI ranks by tile-id range (LightPCC §III-D).

Rank i of P computes tile ids ``[i·ceil(T/P), (i+1)·ceil(T/P))`` of the m×m tile matrix
(``rank_tile_range``) with the same threaded tile kernel, then rank 0 gathers: the full matrix
(small n) or the edge lists (i, j, r) of a thresholded run. Run it with::

    .venv/bin/mpiexec -n 2 .venv/bin/python -m labkit.pcc --n 2000 --l 500 --check
"""
from __future__ import annotations

import numpy as np
from numba import njit

from labkit._common import check_threads, use_threads
from labkit._mpi import SerialComm, ranks, world  # noqa: F401 - SerialComm, world re-exported

from .engine import _nan_const, _pairs_over_range, _standardized_rows, kb_for, tiles_to_buffer
from .inputs import DEFAULT_TILE, _check_tile, _check_X
from .mapping import _job_coords_nb, rank_tile_range

__all__ = ["distributed_pcc", "SerialComm", "world"]


@njit(cache=True)
def _assemble(buf, n, tile, J0, R):
    """Copy the upper cells of tiles J0.. from buf into R, clipped, and mirror them."""
    m = (n + tile - 1) // tile
    for b in range(buf.shape[0]):
        yt, xt = _job_coords_nb(m, J0 + b)
        i0 = yt * tile
        j0 = xt * tile
        for i in range(i0, min(n, i0 + tile)):
            for j in range(max(i, j0), min(n, j0 + tile)):
                v = min(1.0, max(-1.0, buf[b, i - i0, j - j0]))
                R[i, j] = v
                R[j, i] = v


def distributed_pcc(X, comm=None, tile=DEFAULT_TILE, threshold=None, threads=None):
    """Each rank computes its tile-id range; rank 0 returns R (or (i, j, r)), others None."""
    comm, rank, size = ranks(comm)
    X = _check_X(X)
    tile = _check_tile(tile)
    P = check_threads(threads)
    n = X.shape[0]
    Z, const = _standardized_rows(X, P, tile)  # the engine's panels or aligned rows
    m = -(-n // tile)
    T = m * (m + 1) // 2
    J0, J1 = rank_tile_range(rank, size, T)
    if threshold is None:
        buf = np.empty((J1 - J0, tile, tile))
        if J1 > J0:
            with use_threads(P):
                tiles_to_buffer(Z, tile, kb_for(Z), J0, J1, buf)
        parts = comm.gather((J0, J1, buf), root=0)
        if rank != 0:
            return None
        R = np.empty((n, n))
        for s, e, b in parts:
            if e > s:
                _assemble(b, n, tile, s, R)
        _nan_const(R, const, "X")
        return R
    threshold = float(threshold)
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"threshold = {threshold} must be in (0, 1]")
    tpp = max(4 * P, (64 << 20) // (8 * tile * tile))
    i, j, v = _pairs_over_range(Z, tile, J0, J1, threshold, P, tpp, 50_000_000)
    parts = comm.gather((i, j, v), root=0)
    if rank != 0:
        return None
    I = np.concatenate([p[0] for p in parts])
    Jx = np.concatenate([p[1] for p in parts])
    V = np.concatenate([p[2] for p in parts])
    order = np.lexsort((Jx, I))
    return I[order], Jx[order], V[order]
