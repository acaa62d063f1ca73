"""Lab 02 — B-spline orbitals: value, gradient and Hessian (VGH) of N periodic tricubic splines.

Reproduces the layout study of Mathuriya, Luo, Benali, Shulenburger and Kim, *Optimization and
parallelization of B-spline based orbital evaluations in QMC on multi/many-core shared memory
processors* (IPDPS 2017, miniQMC): AoS → SoA → AoSoA (tiles of ``Nb`` splines) and nested
threading over tiles, with throughput ``T = Nw·N / t`` (VGH evaluations per second).

The spline model (einspline convention): N orbitals share a uniform periodic grid of
``nx × ny × nz`` points on the box ``[0, Lx) × [0, Ly) × [0, Lz)``; coefficients ``coefs`` have
shape ``(nx, ny, nz, N)``. Along each axis, with ``u = x/Δ``, ``i0 = floor(u)``, ``t = u − i0``,
the value is ``Σ_{i=0..3} b_i(t) · P[(i0 + i) mod n]`` where
``b0 = (1−t)³/6, b1 = (3t³−6t²+4)/6, b2 = (−3t³+3t²+3t+1)/6, b3 = t³/6``; in 3-D the tensor
product over 4×4×4 = 64 grid points.

Kernels (numba, ``cache=True``), one position each:

* :func:`vgh_aos`   — per spline a 3-vector gradient and a full 3×3 Hessian (13 output streams,
  strided: the loop over splines does not vectorise).
* :func:`vgh_soa`   — 10 contiguous output streams ``v, gx, gy, gz, hxx, hxy, hxz, hyy, hyz, hzz``
  (Hessian symmetry), shape ``(10, N)``.
* :func:`vgh_aosoa` — splines split into ``M`` tiles of ``Nb``; coefficients ``(M, nx, ny, nz, Nb)``,
  outputs ``(M, 10, Nb)``; every tile is an independent SoA problem.
* :func:`vgh_soa_blocked` — SoA, register-blocked: per x-plane the 16 coefficients of a spline are
  reduced over z and y in registers before touching the outputs (4 passes over the 10 streams
  instead of 16, the first one writing), with FMA contraction and labkit.jit's 512-bit vectors;
  ``blocked=True`` in evaluate_vgh/Workload.

Files: ``kernels.py`` (the kernels by step), ``layouts.py`` (aligned buffers, streams,
conversions), ``bench.py`` (workloads, ``run_benchmark``, ``TARGETS``, timing helpers; imported
on first use), ``checks.py`` (the exercises; loaded by ``labkit.check``).

:func:`evaluate_vgh` is the friendly entry point for many positions; it returns one canonical
form whatever the layout: ``value (P, N)``, ``grad (P, N, 3)``, ``hess (P, N, 3, 3)``, float64.
By default it runs the register-blocked SoA kernel fused with the write into those arrays
(``kernels._batch_canonical``: no SoA array, no conversion pass; where N is a multiple of 16 the
last x-plane goes per group of splines through an in-register transpose into full-line stores,
``_intrinsics``, with ``LABKIT_BSPLINE_STREAM=1`` non-temporal ones), into
arrays carved from a block the next call reuses once the caller dropped them
(``layouts.canonical_outputs``); ``output="soa"`` returns the
kernel's own ``(P, 10, N)`` streams without a copy. Positions × tiles (× chunks of splines) are
flattened into one ``prange`` (numba has no nested parallel regions).
float32 coefficients are supported: the kernel then computes in float32 and the result agrees
with the float64 reference to ``FLOAT32_RTOL`` relative to the size of each quantity.
"""
from __future__ import annotations

import importlib
import os
from dataclasses import dataclass, field

import numba
import numpy as np

from labkit._common import mismatch, use_threads
from labkit._sizes import resolve_size

from .kernels import (_batch_aos, _batch_canonical, _batch_tiles, _batch_tiles_blocked,
                      _check_coefs, _walker_tiles,
                      basis, prefactors, vgh_aos, vgh_aosoa, vgh_soa, vgh_soa_blocked)
from .layouts import (ALIGN, STREAMS, _HESS_INDEX, _tile, aligned_empty, aligned_zeros,
                      aos_to_soa, canonical_outputs, new_output, soa_to_canonical,
                      stream_stride, to_aosoa)

__all__ = [
    "Inputs", "BsplineInputs", "SIZES", "STREAMS", "FLOAT32_RTOL", "make_inputs", "reference",
    "validate", "evaluate_vgh", "walker_tiles", "flops_per_eval", "traffic_per_eval",
    # kernels.py
    "basis", "prefactors", "vgh_aos", "vgh_soa", "vgh_soa_blocked", "vgh_aosoa",
    # layouts.py
    "ALIGN", "aligned_empty", "aligned_zeros", "stream_stride", "new_output", "to_aosoa",
    "soa_to_canonical", "aos_to_soa",
    # bench.py (imported on first use)
    "TARGETS", "run_benchmark", "Workload", "ndbspline_of", "ndbspline_vgh",
    "ndbspline_chunk_sweep", "tile_sweep", "layout_throughputs", "time_interleaved",
    "thread_scaling",
    # labkit.hardware (the roofline's limits, imported on first use)
    "measure_bandwidth", "measure_fma_rate",
]

#: Documented tolerance for float32 coefficients: |err| ≤ rtol · max|quantity| per output.
FLOAT32_RTOL = 2e-5

#: Named sizes for :func:`make_inputs`: grid, number of splines N, number of positions P.
SIZES = {
    "tiny": {"grid": (6, 5, 7), "n": 24, "positions": 8},
    "small": {"grid": (12, 12, 12), "n": 128, "positions": 64},
    "seed": {"grid": (48, 48, 60), "n": 512, "positions": 256},
    "large": {"grid": (48, 48, 60), "n": 1024, "positions": 256},
}


# ----------------------------------------------------------------------------- inputs
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


# ----------------------------------------------------------------------------- reference
def reference(inputs, positions=None):
    """Plain-numpy VGH by tensor contraction of the 4×4×4 coefficient block: ``(value, grad, hess)``
    with shapes ``(P, N)``, ``(P, N, 3)``, ``(P, N, 3, 3)`` in float64 (slow, obviously correct)."""
    coefs, lengths = _unpack(inputs)
    if positions is None:
        if not isinstance(inputs, BsplineInputs):
            raise ValueError("pass positions when inputs is a bare coefficient array")
        positions = inputs.positions
    pos = np.atleast_2d(np.asarray(positions, dtype=np.float64))
    grid = coefs.shape[:3]
    N = coefs.shape[3]
    P = pos.shape[0]
    value = np.empty((P, N))
    grad = np.empty((P, N, 3))
    hess = np.empty((P, N, 3, 3))
    for p in range(P):
        w, ix = [], []
        for a in range(3):
            n, L = grid[a], lengths[a]
            u = (pos[p, a] % L) * n / L
            i0 = int(np.floor(u))
            t = u - i0
            d = n / L
            w.append(basis(t) * np.array([[1.0], [d], [d * d]]))
            ix.append((i0 + np.arange(4)) % n)
        block = coefs[np.ix_(ix[0], ix[1], ix[2])].astype(np.float64)   # (4, 4, 4, N)
        wx, wy, wz = w

        def c(ox, oy, oz):
            return np.einsum("i,j,k,ijkn->n", wx[ox], wy[oy], wz[oz], block)

        value[p] = c(0, 0, 0)
        grad[p, :, 0], grad[p, :, 1], grad[p, :, 2] = c(1, 0, 0), c(0, 1, 0), c(0, 0, 1)
        for a in range(3):
            for b in range(a, 3):
                order = [0, 0, 0]
                order[a] += 1
                order[b] += 1
                hess[p, :, a, b] = hess[p, :, b, a] = c(*order)
    return value, grad, hess


def validate(result, expected, *, rtol: float = 1e-10, atol: float | None = None) -> None:
    """Raise AssertionError naming the first differing entries of value/grad/hess (canonical
    form), through the shared mismatch formatter; tolerance ``atol + rtol · max|expected|``."""
    if not isinstance(result, (tuple, list)) or len(result) != 3:
        raise AssertionError("result must be the tuple (value, grad, hess) in canonical form "
                             "(P, N), (P, N, 3), (P, N, 3, 3); convert SoA output with "
                             "labkit.bspline.soa_to_canonical")
    for name, got, exp in zip(("value", "grad", "hess"), result, expected):
        exp = np.asarray(exp)
        scale = float(np.max(np.abs(exp))) if exp.size else 1.0
        tol = (atol if atol is not None else 0.0) + rtol * max(scale, 1e-300)
        msg = mismatch(got, exp, name=name, atol=tol)
        if msg is not None:
            raise AssertionError(f"{msg} (tolerance {tol:.2g})")


# ----------------------------------------------------------------------------- entry point
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


#: Splines per group of the grouped vector write of the last plane (kernels._range_canonical,
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


def evaluate_vgh(spline_or_coefs, positions, layout: str = "soa", tile: int | None = None,
                 threads: int | None = None, blocked: bool | None = None,
                 output: str = "canonical"):
    """VGH of all N splines at every position.

    ``output="canonical"`` (default) → ``(value (P, N), grad (P, N, 3), hess (P, N, 3, 3))``
    float64, whatever the layout ("aos", "soa", "aosoa" with ``tile``). The defaults run the
    fastest kernel: the register-blocked SoA kernel (``blocked`` defaults to True for "soa" and
    "aosoa"), fused with the write into the canonical arrays (no SoA array, no conversion pass).
    ``blocked=False`` runs the plain SoA/AoSoA kernel (the lesson's step), then converts.
    With the fused kernel the three canonical arrays are views of one 64-byte-aligned block
    (``owndata`` False; ``.copy()`` detaches one), which a later call of the same size reuses
    only when nothing references it any more — neither the arrays nor any view of them.

    ``output="soa"`` → the SoA streams ``(P, 10, N)`` in the coefficients' dtype, rows in
    STREAMS order — the kernels' own output, a view without any copy for layout "soa": the
    fastest path when the caller reads streams anyway (``soa_to_canonical`` converts).

    ``threads``: 1 … numba's thread count (default: all of them)."""
    coefs, lengths = _unpack(spline_or_coefs)
    if layout not in ("aos", "soa", "aosoa"):
        raise ValueError(f"layout must be 'aos', 'soa' or 'aosoa', got {layout!r}")
    if output not in ("canonical", "soa"):
        raise ValueError(f"output must be 'canonical' or 'soa', got {output!r}")
    N = coefs.shape[3]
    if blocked is None:
        blocked = layout != "aos"
    if not isinstance(blocked, (bool, np.bool_)):
        raise TypeError(f"blocked must be True or False, got {blocked!r}")
    if blocked and layout == "aos":
        raise ValueError("blocked=True needs layout='soa' or 'aosoa' (the AoS kernel has no "
                         "register-blocked version)")
    if layout == "aos" and output == "soa":
        raise ValueError("output='soa' needs layout='soa' or 'aosoa' (the AoS kernel writes "
                         "the canonical form directly)")
    if layout == "aosoa":
        if tile is None:
            raise ValueError("layout='aosoa' needs tile=Nb (splines per tile), e.g. tile=64")
        tile = _tile(tile, N)
    elif tile is not None:
        raise ValueError(f"tile is only used with layout='aosoa' (got layout={layout!r})")
    idx, pref = prefactors(positions, coefs.shape[:3], lengths, dtype=coefs.dtype)
    P = idx.shape[0]
    with use_threads(threads):
        if layout == "aos":
            v = aligned_empty((P, N), coefs.dtype)
            g = aligned_empty((P, N, 3), coefs.dtype)
            h = aligned_empty((P, N, 3, 3), coefs.dtype)
            _batch_aos(coefs, idx, pref, v, g, h)
            return (v.astype(np.float64, copy=False), g.astype(np.float64, copy=False),
                    h.astype(np.float64, copy=False))
        if layout == "soa":
            tc = coefs.reshape((1,) + coefs.shape)
        elif isinstance(spline_or_coefs, BsplineInputs):
            tc = spline_or_coefs.tiled(tile)
        else:
            tc = to_aosoa(coefs, tile)
        M, Nb = tc.shape[0], tc.shape[4]
        if blocked and output == "canonical":
            chunk = _chunk_for(N, P, M, Nb, numba.get_num_threads())
            T = numba.config.NUMBA_NUM_THREADS
            value, grad, hess, buf, gbuf = canonical_outputs(
                P, N, (T, 1, 10, stream_stride(chunk, coefs.dtype)), coefs.dtype,
                avoid=coefs.ctypes.data, extra=T * 10 * max(_GROUPS))
            mode, G = _write_mode(N, Nb, chunk, value, grad, hess)
            _batch_canonical(tc, N, idx, pref, chunk, value, grad, hess, buf, mode,
                             gbuf[:T * 10 * G].reshape(T, 1, 10, G))
            return value, grad, hess
        out = aligned_empty((P, M, 10, stream_stride(Nb, coefs.dtype)), coefs.dtype)
        (_batch_tiles_blocked if blocked else _batch_tiles)(tc, idx, pref, out)
    if layout == "soa":
        soa = out[:, 0, :, :N]                                   # a view: no copy
    else:
        soa = np.moveaxis(out[..., :Nb], 1, 2).reshape(P, 10, M * Nb)[:, :, :N]
    return soa if output == "soa" else soa_to_canonical(soa)


def walker_tiles(spline_or_coefs, positions, tile: int, threads: int | None = None) -> np.ndarray:
    """Nested threading as in the seed: ONE walker's moves, one after another, each move's
    tiles shared by ``threads`` threads; returns the SoA streams of the last move ``(10, N)``."""
    coefs, lengths = _unpack(spline_or_coefs)
    N = coefs.shape[3]
    tile = _tile(tile, N)
    tc = (spline_or_coefs.tiled(tile) if isinstance(spline_or_coefs, BsplineInputs)
          else to_aosoa(coefs, tile))
    idx, pref = prefactors(positions, coefs.shape[:3], lengths, dtype=coefs.dtype)
    out = aligned_empty((1, tc.shape[0], 10, stream_stride(tile, coefs.dtype)), coefs.dtype)
    with use_threads(threads):
        _walker_tiles(tc, idx, pref, out)
    return np.moveaxis(out[0, :, :, :tile], 0, 1).reshape(10, -1)[:, :N].astype(np.float64)


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


# ----------------------------------------------------------------------------- imported on first use
# bench.py imports this package (Inputs, make_inputs), checks.py registers exercises with
# labkit.check, hardware measures the roofline: none of them is loaded by `import labkit.bspline`.
_LAZY = {name: ".bench" for name in (
    "TARGETS", "run_benchmark", "Workload", "_ScipyWorkload", "_bench_sizes", "ndbspline_of",
    "ndbspline_vgh", "ndbspline_chunk_sweep", "tile_sweep", "layout_throughputs",
    "time_interleaved", "thread_scaling", "paired_rounds")}
_LAZY.update({"measure_bandwidth": "labkit.hardware", "measure_fma_rate": "labkit.hardware"})


def __getattr__(name: str):
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(mod, __name__), name)


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
