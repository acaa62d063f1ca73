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

Files (the lab template, ``labkit.registry``): ``inputs.py`` (``SIZES``, ``BsplineInputs``,
``make_inputs``), ``reference.py`` (the numpy oracle, ``validate``), ``kernels.py`` (the kernels by
step), ``engine.py`` (what ``evaluate_vgh`` runs; its LLVM helpers in ``_intrinsics``),
``bench.py`` (workloads, ``run_benchmark``, ``TARGETS``, timing helpers; imported on first use),
``checks.py`` (the exercises; loaded by ``labkit.check``), ``challenge.py``; the topic
``layouts.py`` (aligned buffers, streams, conversions).

:func:`evaluate_vgh` is the friendly entry point for many positions; it returns one canonical
form whatever the layout: ``value (P, N)``, ``grad (P, N, 3)``, ``hess (P, N, 3, 3)``, float64.
By default it runs the register-blocked SoA kernel fused with the write into those arrays
(``engine._batch_canonical``: no SoA array, no conversion pass; where N is a multiple of 16 the
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

import numpy as np

from labkit._common import use_threads

from . import engine
from .engine import _chunk_for, _streamable, _write_mode  # noqa: F401 - how it writes (tests)
from .inputs import SIZES, BsplineInputs, Inputs, _tiled_coefs, _unpack, make_inputs
from .kernels import (_batch_tiles, _batch_tiles_blocked,  # noqa: F401 - the notebook reads them
                      _walker_tiles, basis, flops_per_eval, prefactors, traffic_per_eval, vgh_aos,
                      vgh_aosoa, vgh_soa, vgh_soa_blocked)
from .layouts import (ALIGN, STREAMS, _tile, aligned_empty, aligned_zeros, aos_to_soa,
                      new_output, soa_to_canonical, stream_stride, to_aosoa)
from .reference import FLOAT32_RTOL, reference, validate

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

# ----------------------------------------------------------------------------- inputs
# ----------------------------------------------------------------------------- reference
# ----------------------------------------------------------------------------- entry point
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
    # 1. the coefficients and the box
    coefs, lengths = _unpack(spline_or_coefs)
    # 2. a layout and an output form that exist
    if layout not in ("aos", "soa", "aosoa"):
        raise ValueError(f"layout must be 'aos', 'soa' or 'aosoa', got {layout!r}")
    if output not in ("canonical", "soa"):
        raise ValueError(f"output must be 'canonical' or 'soa', got {output!r}")
    N = coefs.shape[3]
    # 3. blocked: a bool, for a layout that has a register-blocked kernel
    if blocked is None:
        blocked = layout != "aos"
    if not isinstance(blocked, (bool, np.bool_)):
        raise TypeError(f"blocked must be True or False, got {blocked!r}")
    if blocked and layout == "aos":
        raise ValueError("blocked=True needs layout='soa' or 'aosoa' (the AoS kernel has no "
                         "register-blocked version)")
    # 4. SoA streams out only from a kernel that writes them
    if layout == "aos" and output == "soa":
        raise ValueError("output='soa' needs layout='soa' or 'aosoa' (the AoS kernel writes "
                         "the canonical form directly)")
    # 5. a tile for AoSoA, and only there
    if layout == "aosoa":
        if tile is None:
            raise ValueError("layout='aosoa' needs tile=Nb (splines per tile), e.g. tile=64")
        tile = _tile(tile, N)
    elif tile is not None:
        raise ValueError(f"tile is only used with layout='aosoa' (got layout={layout!r})")
    # 6. each position's grid points and basis weights
    idx, pref = prefactors(positions, coefs.shape[:3], lengths, dtype=coefs.dtype)
    # 7. the coefficients in the layout's tiles, then the engine
    tc = _tiled_coefs(spline_or_coefs, coefs, layout, tile)
    return engine.vgh(coefs, tc, idx, pref, layout, blocked, output, threads)


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
