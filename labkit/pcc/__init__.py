"""Lab 03 — all-pairs Pearson correlation (LightPCC): transformation, bijective tile ids, threads, MPI.

Reproduces LightPCC (Liu et al., "Parallel pairwise correlation computation on Intel Xeon Phi
clusters", 2016; ../shared/seeds/000_7561a6925a085d67.txt): rows standardised once (Eq. 4–5) so
every PCC is a dot product; the upper triangle of the job matrix numbered by a bijection
J ↔ (y, x) (Eq. 9–19) so tiles can be handed to threads and MPI ranks by id range.

Files (the lab template, ``labkit.registry``): ``inputs.py`` (``SIZES``, ``Inputs``,
``make_inputs``, the checks of X, tile and schedule), ``reference.py`` (numpy's Eq. 1, ``validate``,
the BLAS peer), ``kernels.py`` (the numba kernels by step), ``engine.py`` (what the entry points
run: the fast drivers and the 6×4 row block; its helpers ``_block.py``, the generated block,
``_layout.py``, the rows' layout, and ``_panels.py``, packed panels and the 8×24 micro-kernel on
AVX-512 hosts, which the notebook reads as ``pcc.panels``), ``mpi.py`` + ``__main__.py`` (tile-id
ranges over MPI ranks), ``bench.py`` (``run_benchmark``, ``TARGETS``), ``checks.py`` (the
exercises), ``challenge.py``; the topic ``mapping.py`` (the bijection, tile ids and their
splits).

>>> from labkit import pcc
>>> inp = pcc.make_inputs("small")
>>> R = pcc.pearson_allpairs(inp.X)             # full symmetric n×n, float64
>>> i, j, r = pcc.correlated_pairs(inp.X, 0.8)  # bounded memory, any n
"""
from __future__ import annotations

import numbers

import numpy as np

from labkit._common import check_threads, is_int

from . import _panels as panels      # the notebook reads pcc.panels (KB, applies)
from . import engine
from .engine import _standardized_rows, engine_input, kb_for  # noqa: F401 - _standardized_rows: tests
from .inputs import (DEFAULT_SCHEDULE, DEFAULT_TILE, SCHEDULES, SIZES, Inputs, PCCInputs,
                     _check_schedule, _check_tile, _check_X, _phys_mem, make_inputs)
from .kernels import (KBLOCK, extract_pairs,  # noqa: F401 - the drivers, re-exported
                      pcc_naive, pcc_tiled, pcc_tiles_cyclic,
                      pcc_tiles_dynamic, pcc_tiles_rows, pcc_tiles_static, pcc_transformed,
                      standardize, tile_block, tiles_to_buffer)
from .mapping import (FLOAT_FIRST_BAD_N, MAX_N, isqrt64, job_coords, job_coords_float, job_id,
                      n_jobs, n_tiles, owner_matrix, rank_tile_range, tile_bounds, tile_coords,
                      tile_id, tile_pairs)
from .reference import blas_pcc, gflops, reference, validate

__all__ = [
    "SIZES", "Inputs", "PCCInputs", "make_inputs", "reference", "validate",
    "pearson_allpairs", "correlated_pairs", "pcc_threads", "blas_pcc", "gflops",
    "DEFAULT_TILE", "SCHEDULES", "DEFAULT_SCHEDULE", "engine_input", "kb_for",
    # kernels.py
    "standardize", "pcc_naive", "pcc_transformed", "pcc_tiled", "KBLOCK",
    # mapping.py
    "job_id", "job_coords", "job_coords_float", "n_jobs", "tile_id", "tile_coords",
    "tile_bounds", "n_tiles", "rank_tile_range", "tile_pairs", "owner_matrix",
    "MAX_N", "FLOAT_FIRST_BAD_N", "isqrt64",
    # bench.py (imported on first use)
    "TARGETS", "run_benchmark",
]


def pearson_allpairs(X, tile=DEFAULT_TILE, threads=None, schedule=DEFAULT_SCHEDULE):
    """All-pairs PCC of the rows of X (n × l) → symmetric n×n float64; constant rows → NaN.

    R is C-contiguous and writable, a view of a 64-byte-aligned block (``R.base`` holds it,
    ``R.flags.owndata`` is False): the kernel's 512-bit stores never straddle cache lines."""
    # 1. X: a real n × l array (NaN and inf are found while standardising)
    X = _check_X(X, finite=False)
    # 2. the tile, the schedule and the threads
    tile = _check_tile(tile)
    _check_schedule(schedule)
    P = check_threads(threads)
    # 3. room for the n × n result
    n = X.shape[0]
    need = 8 * n * n
    if need > 0.7 * _phys_mem():
        raise ValueError(f"the {n}×{n} result needs {need / 2**30:.1f} GiB, more than this "
                         "machine's memory allows; use correlated_pairs(X, threshold) instead")
    # 4. the engine
    return engine.allpairs(X, tile, schedule, P)


def pcc_threads(Z, tile=DEFAULT_TILE, schedule="static", threads=None, kb=None):
    """Fast kernel on standardised rows Z: (R, owner) with owner[J] = thread that did tile J.

    Z's rows are copied into the engine's form first (``engine_input``: packed panels or aligned,
    zero-padded rows) unless they already are; ``kb`` (samples per k-block) defaults to
    ``kb_for(Z)`` (``panels.KB`` or ``engine.KB``)."""
    # 1. the tile, the schedule and the threads
    tile = _check_tile(tile)
    schedule = _check_schedule(schedule)
    P = check_threads(threads)
    # 2. packed panels only where they run
    if isinstance(Z, tuple) and not panels.applies(tile):
        raise ValueError(f"packed panels run only where panels.applies(tile={tile}); pass Z itself")
    # 3. a k-block of whole samples
    if kb is not None and (not is_int(kb) or kb < 1):
        raise ValueError(f"kb must be a positive int (samples per k-block), got {kb!r}")
    # 4. the engine: Z in its form, then every tile
    return engine.all_tiles(Z, tile, schedule, P, kb)


def correlated_pairs(X, threshold, tile=DEFAULT_TILE, threads=None, tiles_per_pass=None,
                     max_pairs=50_000_000):
    """(i, j, r) for every pair i < j with |r| ≥ threshold, tile by tile in bounded memory."""
    # 1. X: a real n × l array (NaN and inf are found while standardising)
    X = _check_X(X, finite=False)
    # 2. the tile and the threads
    tile = _check_tile(tile)
    P = check_threads(threads)
    # 3. a threshold in (0, 1]
    if not isinstance(threshold, (numbers.Real, np.floating)) or isinstance(threshold, bool):
        raise TypeError(f"threshold must be a number in (0, 1], got {threshold!r}")
    threshold = float(threshold)
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"threshold = {threshold} must be in (0, 1]; |r| ≥ 0 keeps every pair "
                         "— use pearson_allpairs for the full matrix")
    # 4. the engine: passes over the tiles in bounded memory
    return engine.pairs(X, threshold, tile, P, tiles_per_pass, max_pairs)


def __getattr__(name):
    """``run_benchmark`` / ``TARGETS`` from ``.bench``, imported on first use (no import cycle)."""
    if name in ("run_benchmark", "TARGETS"):
        from . import bench
        return getattr(bench, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

