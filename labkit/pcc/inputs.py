"""Lab 03's inputs: the sizes, ``Inputs`` (alias ``PCCInputs``), ``make_inputs``, the tile and
schedule defaults, and the checks of what the entry points are given (``_check_X``,
``_check_tile``, ``_check_schedule``, ``_require_finite``)."""
from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from labkit._common import check_tile
from labkit._sizes import resolve_size

from .mapping import MAX_N

__all__ = ["SIZES", "Inputs", "PCCInputs", "make_inputs", "DEFAULT_TILE", "SCHEDULES",
           "DEFAULT_SCHEDULE"]

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
