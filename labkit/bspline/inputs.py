"""Lab 02's inputs: the sizes, ``BsplineInputs`` (alias ``Inputs``), ``make_inputs``, and the
coercion of what ``evaluate_vgh`` is given: a spline or bare coefficients (``_unpack``), and the
coefficients in the layout's tiles (``_tiled_coefs``)."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from labkit._sizes import resolve_size

from .layouts import _check_coefs, _tile, aligned_empty, to_aosoa

__all__ = ["SIZES", "BsplineInputs", "Inputs", "make_inputs"]

#: Named sizes for :func:`make_inputs`: grid, number of splines N, number of positions P.
SIZES = {
    "tiny": {"grid": (6, 5, 7), "n": 24, "positions": 8},
    "small": {"grid": (12, 12, 12), "n": 128, "positions": 64},
    "seed": {"grid": (48, 48, 60), "n": 512, "positions": 256},
    "large": {"grid": (48, 48, 60), "n": 1024, "positions": 256},
}


@dataclass(frozen=True)
class BsplineInputs:
    """Spline coefficients ``(nx, ny, nz, N)`` on the box ``lengths`` and test positions ``(P, 3)``."""

    coefs: np.ndarray
    positions: np.ndarray
    lengths: tuple = (1.0, 1.0, 1.0)
    _tiled: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def grid(self) -> tuple:
        """Grid points per axis ``(nx, ny, nz)``."""
        return tuple(int(s) for s in self.coefs.shape[:3])

    @property
    def n(self) -> int:
        """Number of splines (orbitals) N."""
        return int(self.coefs.shape[3])

    @property
    def nbytes(self) -> int:
        """Size of the coefficient table in bytes."""
        return int(self.coefs.nbytes)

    def tiled(self, tile: int) -> np.ndarray:
        """The AoSoA copy of the coefficients for tile size ``tile`` (cached on this object)."""
        tile = _tile(tile, self.n)
        if tile not in self._tiled:
            self._tiled[tile] = to_aosoa(self.coefs, tile)
        return self._tiled[tile]

    def __repr__(self) -> str:
        return (f"BsplineInputs(grid={self.grid}, N={self.n}, positions={len(self.positions)}, "
                f"dtype={self.coefs.dtype}, {self.nbytes / 2**20:.1f} MiB)")


#: The lab contract's name for the inputs class (``BsplineInputs`` is the old one, kept).
Inputs = BsplineInputs


def make_inputs(size="small", seed: int = 0) -> BsplineInputs:
    """Random spline coefficients and positions: ``size`` is a name in SIZES or a dict
    ``{"grid": (nx, ny, nz), "n": N, "positions": P, "dtype": "float64", "lengths": (Lx, Ly, Lz)}``."""
    spec = resolve_size(size, SIZES, ("grid", "n", "positions", "dtype", "lengths"))
    grid = tuple(int(g) for g in spec["grid"])
    if len(grid) != 3 or min(grid) < 1:
        raise ValueError(f"grid must be three positive sizes (nx, ny, nz), got {spec['grid']}")
    n, npos = int(spec["n"]), int(spec["positions"])
    if n < 1 or npos < 1:
        raise ValueError(f"need n ≥ 1 splines and positions ≥ 1, got n={n}, positions={npos}")
    dtype = np.dtype(spec.get("dtype", "float64"))
    if dtype not in (np.float32, np.float64):
        raise ValueError(f"dtype must be float32 or float64, got {dtype}")
    lengths = tuple(float(v) for v in spec.get("lengths", (1.0, 1.0, 1.0)))
    rng = np.random.default_rng(seed)
    coefs = aligned_empty(grid + (n,), dtype)
    rng.random(out=coefs, dtype=dtype)
    coefs -= dtype.type(0.5)
    positions = rng.random((npos, 3)) * np.asarray(lengths)
    return BsplineInputs(coefs=coefs, positions=positions, lengths=lengths)


def _unpack(spline):
    if isinstance(spline, BsplineInputs):
        coefs, lengths = spline.coefs, spline.lengths
    else:
        coefs, lengths = spline, (1.0, 1.0, 1.0)
    coefs = _check_coefs(coefs)
    lengths = tuple(float(v) for v in lengths)
    if len(lengths) != 3 or not all(np.isfinite(v) and v > 0 for v in lengths):
        raise ValueError(f"lengths must be three positive finite box sizes, got {lengths}")
    return coefs, lengths


def _tiled_coefs(spline, coefs, layout: str, tile):
    """The coefficients as tiles ``(M, nx, ny, nz, Nb)`` for the layout: one tile of all N for
    "soa" (a view), the AoSoA copy for "aosoa" (cached on a ``BsplineInputs``), None for "aos"."""
    if layout == "aos":
        return None
    if layout == "soa":
        return coefs.reshape((1,) + coefs.shape)
    if isinstance(spline, BsplineInputs):
        return spline.tiled(tile)
    return to_aosoa(coefs, tile)


def _as_float32(x: BsplineInputs) -> BsplineInputs:
    """The inputs with float32 coefficients (rounded from x's), 64-byte aligned."""
    c32 = aligned_empty(x.coefs.shape, np.float32)
    c32[...] = x.coefs
    return BsplineInputs(coefs=c32, positions=x.positions, lengths=x.lengths)
