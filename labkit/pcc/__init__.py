"""Lab 03 — all-pairs Pearson correlation (LightPCC): transformation, bijective tile ids, threads, MPI.

Reproduces LightPCC (Liu et al., "Parallel pairwise correlation computation on Intel Xeon Phi
clusters", 2016; ../shared/seeds/000_7561a6925a085d67.txt): rows standardised once (Eq. 4–5) so
every PCC is a dot product; the upper triangle of the job matrix numbered by a bijection
J ↔ (y, x) (Eq. 9–19) so tiles can be handed to threads and MPI ranks by id range.

Files: ``kernels.py`` (the numba kernels by step), ``engine.py`` (the fast drivers and the 6×4 row
block), ``panels.py`` (packed panels and the 8×24 micro-kernel on AVX-512 hosts), ``mapping.py`` (the bijection, tile ids and
their splits), ``mpi.py`` + ``__main__.py`` (tile-id ranges over MPI ranks), ``bench.py``
(``run_benchmark``, ``TARGETS``), ``checks.py`` (the exercises).

>>> from labkit import pcc
>>> inp = pcc.make_inputs("small")
>>> R = pcc.pearson_allpairs(inp.X)             # full symmetric n×n, float64
>>> i, j, r = pcc.correlated_pairs(inp.X, 0.8)  # bounded memory, any n
"""
from __future__ import annotations

import numbers
import os
import warnings
from dataclasses import dataclass

import numba
import numpy as np

from labkit._common import check_threads, check_tile, is_int, raise_mismatch, use_threads
from labkit._sizes import resolve_size

from . import panels
from .engine import KB, aligned_empty, as_engine_rows, engine_rows, standardize_into
from .kernels import KBLOCK          # re-exported; the kernels themselves at the end

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

#: Tile side (variables per tile): a multiple of the engine's 6×4 register block whose k-block
#: (engine.KB samples) of two tiles' rows, 2 · 192 · 512 · 8 B = 1.5 MiB, fits a 2 MiB L2
#: (96 was slower: measured in docs/pcc.md, 'Run 6', the tile row of its table).
DEFAULT_TILE = 192
#: How tile ids are handed to threads.
SCHEDULES = ("static", "cyclic", "dynamic", "rows")
#: ``pearson_allpairs``' schedule: the seed's contiguous id ranges. Each tile timed alone, these
#: split the work to within 1 % (docs/pcc.md run 7); dynamic ids looked faster only while the
#: benchmark ran the static row right after OpenBLAS's call, whose threads spin for ~0.1 s.
DEFAULT_SCHEDULE = "static"

SIZES = {
    "tiny": dict(n=37, l=19),
    "small": dict(n=400, l=300),
    "bench": dict(n=4000, l=2000),
    "seed": dict(n=16000, l=5000),      # the seed's smallest artificial data set (16K × 5K)
    "large": dict(n=100_000, l=500),    # the bounded-memory correlated_pairs run
}


@dataclass(frozen=True)
class Inputs:
    """n variables × l samples (rows are variables), the tile size and a |r| threshold."""

    X: np.ndarray
    tile: int = DEFAULT_TILE
    threshold: float = 0.8

    @property
    def n(self) -> int:
        """Number of variables (rows)."""
        return self.X.shape[0]

    @property
    def l(self) -> int:  # noqa: E743 - the seed's name
        """Number of samples (columns)."""
        return self.X.shape[1]

    def __repr__(self) -> str:
        return f"PCCInputs(n={self.n}, l={self.l}, tile={self.tile}, threshold={self.threshold})"


#: The lab's old name for ``Inputs``.
PCCInputs = Inputs


def make_inputs(size="small", seed=0) -> Inputs:
    """Random expression-like data in [0, 1] (as the seed) with a few planted correlated pairs."""
    spec = resolve_size(size, SIZES, ("n", "l", "tile", "threshold", "planted"), base=None)
    n, l = int(spec.get("n", 400)), int(spec.get("l", 300))
    if n < 1 or l < 2:
        raise ValueError(f"need n ≥ 1 variables and l ≥ 2 samples, got n={n}, l={l}")
    rng = np.random.default_rng(seed)
    X = rng.random((n, l))
    planted = int(spec.get("planted", n // 100))
    if planted and n >= 2:
        src = rng.integers(0, n, planted)
        dst = rng.integers(0, n, planted)
        for s, d in zip(src, dst):
            if s != d:
                X[d] = 0.7 * X[s] + 0.3 * rng.random(l)
    return Inputs(X, int(spec.get("tile", DEFAULT_TILE)), float(spec.get("threshold", 0.8)))


def reference(inputs) -> np.ndarray:
    """Eq. 1 in plain numpy (centre, cross-products, divide); constant rows → NaN."""
    X = inputs.X if isinstance(inputs, Inputs) else np.asarray(inputs, dtype=np.float64)
    Xc = X - X.mean(axis=1, keepdims=True)
    const = np.all(X == X[:, :1], axis=1)
    Xc[const] = 0.0
    num = Xc @ Xc.T
    ss = np.einsum("ij,ij->i", Xc, Xc)
    with np.errstate(divide="ignore", invalid="ignore"):
        R = num / np.sqrt(np.outer(ss, ss))
    R[const, :] = np.nan
    R[:, const] = np.nan
    return np.clip(R, -1.0, 1.0)


def validate(result, expected, rtol=1e-12, atol=1e-12) -> None:
    """Raise AssertionError naming the first cells where result and expected differ
    (``R[4, 7] = …, expected …``; NaN equals NaN)."""
    raise_mismatch(result, expected, name="R", rtol=rtol, atol=atol)


# ---------------------------------------------------------------- input checks
def _check_X(X, name="X", finite=True):
    """X as a C-contiguous float64 n × l array, or a clear error. ``finite=False`` leaves the NaN/inf
    scan to ``_standardized_rows`` (a non-finite row makes its first standardised sample NaN:
    n values to look at instead of a pass over X)."""
    if isinstance(X, Inputs):
        X = X.X
    if not isinstance(X, np.ndarray):
        try:
            X = np.asarray(X)
        except Exception as e:  # noqa: BLE001
            raise TypeError(f"{name} must be a 2-D numeric array (n variables × l samples): {e}")
    if X.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be real numbers, got dtype {X.dtype}; "
                        f"convert with {name}.astype(np.float64)")
    if X.ndim != 2:
        raise ValueError(f"{name} must be 2-D (n variables × l samples), got shape {X.shape}; "
                         f"for one variable use {name}[None, :]")
    n, l = X.shape
    if n < 1:
        raise ValueError(f"{name} has no variables (shape {X.shape}); pass at least one row")
    if l < 2:
        raise ValueError(f"{name} has l={l} sample(s) per variable; PCC needs l ≥ 2 "
                         "(rows are variables — did you pass X.T?)")
    if n > MAX_N:
        raise ValueError(f"n={n} variables is above 2**31: job ids would overflow int64")
    X = np.ascontiguousarray(X, dtype=np.float64)
    if finite:
        _require_finite(X, name)
    return X


def _require_finite(X, name="X"):
    if not np.isfinite(X).all():
        bad = np.argwhere(~np.isfinite(X))[0]
        raise ValueError(f"{name}[{bad[0]}, {bad[1]}] = {X[bad[0], bad[1]]} is not finite; "
                         "drop or impute NaN/inf samples first")


def _check_tile(tile):
    return check_tile(tile, what="variables", hint=f"variables per tile; try {DEFAULT_TILE}")


def _check_schedule(schedule):
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule {schedule!r} unknown; use one of {SCHEDULES}")
    return schedule


def _phys_mem():
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # pragma: no cover
        return 1 << 40


# ---------------------------------------------------------------- entry points
def pearson_allpairs(X, tile=DEFAULT_TILE, threads=None, schedule=DEFAULT_SCHEDULE):
    """All-pairs PCC of the rows of X (n × l) → symmetric n×n float64; constant rows → NaN.

    R is C-contiguous and writable, a view of a 64-byte-aligned block (``R.base`` holds it,
    ``R.flags.owndata`` is False): the kernel's 512-bit stores never straddle cache lines."""
    X = _check_X(X, finite=False)          # NaN/inf: found by _standardized_rows
    tile = _check_tile(tile)
    _check_schedule(schedule)
    P = check_threads(threads)
    n = X.shape[0]
    need = 8 * n * n
    if need > 0.7 * _phys_mem():
        raise ValueError(f"the {n}×{n} result needs {need / 2**30:.1f} GiB, more than this "
                         "machine's memory allows; use correlated_pairs(X, threshold) instead")
    Z, const = _standardized_rows(X, P, tile)
    R, _ = _run_tiles(Z, tile, schedule, P, kb_for(Z))
    _nan_const(R, const, "X")
    return R


def _standardized_rows(X, P, tile=DEFAULT_TILE):
    """(Z, const): X's rows standardised straight into what the engine runs on for this tile —
    packed panels ``(Zp, n)`` where ``panels.applies(tile)`` (AVX-512 hosts, tile a multiple
    of 8), else engine rows (aligned, zero-padded). The same bits of Z either way. A row with a
    NaN or inf (or too large to standardise) has a non-finite mean or norm, so its first sample
    in Z is NaN: that raises the ValueError naming the first bad cell."""
    n, l = X.shape
    const = np.empty(n, dtype=np.bool_)
    with use_threads(P):
        if panels.applies(tile):
            Zp = panels.panel_rows(n, l)
            panels.standardize_panels(X, Zp, const)
            Z, first = (Zp, n), Zp[:, 0, :].ravel()[:n]
        else:
            Z = engine_rows(n, l)
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


def pcc_threads(Z, tile=DEFAULT_TILE, schedule="static", threads=None, kb=None):
    """Fast kernel on standardised rows Z: (R, owner) with owner[J] = thread that did tile J.

    Z's rows are copied into the engine's form first (``engine_input``: packed panels or aligned,
    zero-padded rows) unless they already are; ``kb`` (samples per k-block) defaults to
    ``kb_for(Z)`` (``panels.KB`` or ``engine.KB``)."""
    tile = _check_tile(tile)
    schedule = _check_schedule(schedule)
    P = check_threads(threads)
    if isinstance(Z, tuple) and not panels.applies(tile):
        raise ValueError(f"packed panels run only where panels.applies(tile={tile}); pass Z itself")
    if kb is not None and (not is_int(kb) or kb < 1):
        raise ValueError(f"kb must be a positive int (samples per k-block), got {kb!r}")
    Z = engine_input(Z, tile)
    return _run_tiles(Z, tile, schedule, P, int(kb_for(Z) if kb is None else kb))


def _n_vars(Z):
    return Z[1] if isinstance(Z, tuple) else Z.shape[0]


def _run_tiles(Z, tile, schedule, P, kb):
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


def _nan_const(R, const, what):
    if const.any():
        idx = np.flatnonzero(const)
        R[idx, :] = np.nan
        R[:, idx] = np.nan
        warnings.warn(f"{len(idx)} constant row(s) in {what} (first: {idx[0]}): PCC is undefined "
                      "there → NaN in their row and column (as np.corrcoef)",
                      RuntimeWarning, stacklevel=3)


def correlated_pairs(X, threshold, tile=DEFAULT_TILE, threads=None, tiles_per_pass=None,
                     max_pairs=50_000_000):
    """(i, j, r) for every pair i < j with |r| ≥ threshold, tile by tile in bounded memory."""
    X = _check_X(X, finite=False)          # NaN/inf: found by _standardized_rows
    tile = _check_tile(tile)
    P = check_threads(threads)
    if not isinstance(threshold, (numbers.Real, np.floating)) or isinstance(threshold, bool):
        raise TypeError(f"threshold must be a number in (0, 1], got {threshold!r}")
    threshold = float(threshold)
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"threshold = {threshold} must be in (0, 1]; |r| ≥ 0 keeps every pair "
                         "— use pearson_allpairs for the full matrix")
    n = X.shape[0]
    Z, const = _standardized_rows(X, P, tile)
    if const.any():
        warnings.warn(f"{int(const.sum())} constant row(s) in X (first: {np.flatnonzero(const)[0]}):"
                      " PCC undefined, they appear in no pair", RuntimeWarning, stacklevel=2)
    m = -(-n // tile)
    T = m * (m + 1) // 2
    if tiles_per_pass is None:
        tiles_per_pass = max(4 * P, (64 << 20) // (8 * tile * tile))   # ~64 MB buffer
    I, Jx, V = _pairs_over_range(Z, tile, 0, T, threshold, P, int(tiles_per_pass), max_pairs)
    order = np.lexsort((Jx, I))
    return I[order], Jx[order], V[order]


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


# ---------------------------------------------------------------- the peer and the unit
def blas_pcc(X):
    """The peer: numpy standardises the rows, then Z @ Z.T (BLAS syrk). Oracle, not labkit's engine."""
    Xc = X - X.mean(axis=1, keepdims=True)
    Xc /= np.sqrt(np.einsum("ij,ij->i", Xc, Xc))[:, None]
    return Xc @ Xc.T


def gflops(n, l, seconds):
    """GFLOP/s counting the upper triangle's 2·l flops per pair (n(n+1)/2 pairs)."""
    return n * (n + 1) / 2 * 2 * l / seconds / 1e9


# ---------------------------------------------------------------- re-exports (kernels, mapping)
# At the end, as in every lab package: the names above are looked up at call time.
from .kernels import (extract_pairs, pcc_naive, pcc_tiled, pcc_tiles_cyclic,  # noqa: E402
                      pcc_tiles_dynamic, pcc_tiles_rows, pcc_tiles_static, pcc_transformed,
                      standardize, tile_block, tiles_to_buffer)
from .mapping import (FLOAT_FIRST_BAD_N, MAX_N, isqrt64, job_coords, job_coords_float,  # noqa: E402
                      job_id, n_jobs, n_tiles, owner_matrix, rank_tile_range, tile_bounds,
                      tile_coords, tile_id, tile_pairs)


def __getattr__(name):
    """``run_benchmark`` / ``TARGETS`` from ``.bench``, imported on first use (no import cycle)."""
    if name in ("run_benchmark", "TARGETS"):
        from . import bench
        return getattr(bench, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

