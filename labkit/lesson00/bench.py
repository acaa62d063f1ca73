"""Lesson 00's benchmark: the two exercise pairs (loop order, latency chains) side by side, and
the widget's bandwidth probe ``stream_add``."""
from __future__ import annotations

import numpy as np

from labkit import bench
from labkit.bench import Target, ratio_of
from labkit.lesson00 import colsum
from labkit.lesson00.inputs import make_inputs
from labkit.lesson00.kernels import (add_arrays_repeat, colsum_naive, colsum_rows, dot_fastmath,
                                     dot_partials, dot_plain)

__all__ = ["run_benchmark", "TARGETS", "stream_add"]

#: lesson 00 teaches measuring: its exercise ratios are what the notebook explains, not targets;
#: the one target is that the friendly entry point costs no more than the kernel it runs
TARGETS = [
    Target("colsum(a) vs its kernel colsum_rows, seed input, CPU time", 0.8,
           ratio_of("entry point", "colsum(a)", "kernel colsum_rows")),
]


def run_benchmark(size=None, repeat: int = 5) -> dict:
    """Three tables: column sums (naive vs row order), dot products (1 vs 8 accumulators,
    fastmath) and the entry point ``colsum(a)`` beside the kernel it runs (CPU time, validation
    included) on the "seed" inputs (or ``size``)."""
    inp = make_inputs(size or "seed")
    a, x, y = inp.a, inp.x, inp.y
    cols = bench.compare({"colsum_naive": colsum_naive, "colsum_rows": colsum_rows}, (a,),
                         repeat=repeat, work=a.size, unit="elements", label="column sums")
    dots = bench.compare({"dot_plain": dot_plain, "dot_partials": dot_partials,
                          "dot_fastmath": dot_fastmath}, (x, y), repeat=repeat, work=x.size,
                         unit="elements", label="dot products")
    entry = bench.compare({"colsum(a)": colsum, "kernel colsum_rows": colsum_rows}, (a,),
                          clock="cpu", repeat=repeat, work=a.size, unit="elements",
                          label="entry point", baseline="kernel colsum_rows")
    return {"colsum": cols, "dot": dots, "entry point": entry}


def stream_add(n: int, repeat: int = 3) -> dict:
    """Bandwidth of ``add_arrays`` on n float64 elements: {'n', 'bytes', 'GB/s'} (widget helper)."""
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


def UARCH_KERNEL():
    """The kernel `labkit bench` puts beside its OSACA prediction (:mod:`labkit.bench.uarch`)."""
    from labkit.bench.uarch import KernelSpec

    from .kernels import dot_fastmath
    # 2 × 128 KiB (L2): enough work per call that the call's own cost is small beside it
    x = np.random.default_rng(0).random(1 << 14)
    return KernelSpec("dot_fastmath", dot_fastmath, (x, x.copy()), x.size)
