"""Lesson 00's benchmark: the two exercise pairs (loop order, latency chains) side by side."""
from __future__ import annotations

from labkit import bench
from labkit.bench import Target, ratio_of
from labkit.lesson00 import colsum, make_inputs
from labkit.lesson00.kernels import (colsum_naive, colsum_rows, dot_fastmath, dot_partials,
                                     dot_plain)

__all__ = ["run_benchmark", "TARGETS"]

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


def UARCH_KERNEL():
    """The kernel `labkit bench` puts beside its OSACA prediction (:mod:`labkit.bench.uarch`)."""
    import numpy as np

    from labkit.bench.uarch import KernelSpec

    from .kernels import dot_fastmath
    # 2 × 128 KiB (L2): enough work per call that the call's own cost is small beside it
    x = np.random.default_rng(0).random(1 << 14)
    return KernelSpec("dot_fastmath", dot_fastmath, (x, x.copy()), x.size)
