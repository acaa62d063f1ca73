"""Lesson 00 — how to measure and how to look: small kernels that each differ in one idea.

Kernels come in pairs that differ in one idea each:

* ``add_arrays`` — element-wise, vectorises at full width (the easy case);
* ``sum_plain`` / ``sum_fastmath`` — a float reduction, which LLVM may only vectorise when it is
  allowed to reorder the additions;
* ``prefix_sum`` — a recurrence (each step needs the previous one): never vectorises;
* ``colsum_naive`` / ``colsum_rows`` — the same sums with the loops swapped: strided and
  reduction-bound versus contiguous and independent across columns (exercise ``colsum``);
* ``dot_plain`` / ``dot_partials`` — one accumulator (latency-bound) versus eight
  independent ones (exercise ``dot_partials``);
* ``loop_report`` — OSACA's report of a kernel's hot loop (port pressure, loop-carried chain,
  elements per iteration) without the bound: exercise ``loop_bound`` reads it.

The lab contract: ``make_inputs``, ``reference`` (column sums by numpy), ``validate``, the entry
point ``colsum(a)`` (validates, runs the fast kernel), ``run_benchmark``/``TARGETS`` in ``bench.py``,
the exercise checks in ``checks.py``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from labkit._common import raise_mismatch
from labkit._sizes import resolve_size

from labkit.inspect.loopreport import LoopReport, loop_report
from .kernels import (add_arrays, add_arrays_repeat, colsum_naive, colsum_rows, dot_fastmath,
                      dot_partials, dot_plain, prefix_sum, softsign_checked, softsign_numpy_errors,
                      sum_fastmath, sum_plain)

__all__ = [
    "SIZES", "Inputs", "make_inputs", "reference", "validate", "colsum",
    "add_arrays", "sum_plain", "sum_fastmath", "prefix_sum",
    "colsum_naive", "colsum_rows", "dot_plain", "dot_partials", "colsum_reference",
    "add_arrays_repeat", "dot_fastmath", "softsign_checked", "softsign_numpy_errors",
    "softsign_reference", "stream_add", "run_benchmark", "TARGETS", "loop_report", "LoopReport",
]

SIZES = {
    "small": {"n": 4096, "rows": 256, "cols": 256},
    "seed": {"n": 16384, "rows": 1000, "cols": 1000},
    "large": {"n": 1 << 22, "rows": 4000, "cols": 4000},
}


@dataclass(frozen=True)
class Inputs:
    """Vectors ``x``, ``y`` (float64, length n) and a C-contiguous matrix ``a`` (rows × cols)."""

    x: np.ndarray
    y: np.ndarray
    a: np.ndarray


def make_inputs(size="small", seed: int = 0) -> Inputs:
    """Random inputs for lesson 00: ``size`` is "small" | "seed" | "large" or a dict of n/rows/cols."""
    spec = resolve_size(size, SIZES, ("n", "rows", "cols"))
    if min(spec["n"], spec["rows"], spec["cols"]) < 1:
        raise ValueError(f"sizes must be ≥ 1, got {spec}")
    g = np.random.default_rng(seed)
    return Inputs(x=g.random(spec["n"]), y=g.random(spec["n"]),
                  a=g.random((spec["rows"], spec["cols"])))


def colsum_reference(a: np.ndarray) -> np.ndarray:
    """Column sums by numpy, summed top to bottom in the same order as the kernels."""
    a = np.asarray(a, dtype=np.float64)
    out = np.zeros(a.shape[1])
    for i in range(a.shape[0]):
        out += a[i]
    return out


def softsign_reference(x: np.ndarray) -> np.ndarray:
    """x / (1 + |x|) by numpy."""
    x = np.asarray(x, dtype=np.float64)
    return x / (1.0 + np.abs(x))


def reference(inputs: Inputs) -> np.ndarray:
    """The column sums of ``inputs.a`` by numpy (independent of every kernel)."""
    return colsum_reference(inputs.a)


def validate(result, expected, *, rtol: float = 1e-12, atol: float = 1e-12) -> None:
    """Raise AssertionError naming the first differing column sums (``out[3] = …, expected …``)."""
    raise_mismatch(result, expected, name="out", rtol=rtol, atol=atol)


def colsum(a) -> np.ndarray:
    """Column sums of a 2-D real array with the fast (row-walking, vectorised) kernel."""
    arr = np.asarray(a)
    if arr.ndim != 2:
        raise ValueError(f"a must be a 2-D array (rows × cols), got shape {arr.shape}")
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"a must hold real numbers, got dtype {arr.dtype}")
    out = colsum_rows(np.ascontiguousarray(arr, dtype=np.float64))
    # a NaN or inf in a column makes its sum NaN or inf: test the m sums, not the n × m inputs
    # (a second pass over a would cost more than the sums themselves)
    if arr.dtype.kind == "f" and not np.isfinite(out).all() and not np.isfinite(arr).all():
        raise ValueError("a contains NaN or inf; column sums would be NaN/inf")
    return out


def stream_add(n: int, repeat: int = 3) -> dict:
    """Bandwidth of ``add_arrays`` on n float64 elements: {'n', 'bytes', 'GB/s'} (widget helper)."""
    from labkit import bench

    if int(n) < 1:
        raise ValueError(f"n must be ≥ 1, got {n}")
    n = int(n)
    a = np.ones(n)
    b = np.ones(n)
    out = np.empty(n)
    reps = max(1, (1 << 21) // n)  # ≥ 2 M element-adds per call: call overhead stays negligible
    t = bench.timeit(add_arrays_repeat, a, b, out, reps, repeat=repeat, min_time=0.02)
    moved = 3 * 8 * n  # two loads and one store per element
    return {"n": n, "bytes": moved, "GB/s": moved * reps / t.median_s / 1e9}


def __getattr__(name):
    if name in ("run_benchmark", "TARGETS"):
        from . import bench
        return getattr(bench, name)
    raise AttributeError(f"module 'labkit.lesson00' has no attribute {name!r}")
