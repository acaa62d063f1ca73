"""Lesson 00's benchmark: the two exercise pairs (loop order, latency chains) side by side."""
from __future__ import annotations

from labkit import bench
from labkit.lesson00 import make_inputs
from labkit.lesson00.kernels import (colsum_naive, colsum_rows, dot_fastmath, dot_partials,
                                     dot_plain)

__all__ = ["run_benchmark", "TARGETS"]

#: no performance targets: lesson 00 teaches measuring; its ratios are what the notebook explains
TARGETS: list = []


def run_benchmark(size=None, repeat: int = 5) -> dict:
    """Two tables: column sums (naive vs row order) and dot products (1 vs 8 accumulators,
    fastmath) on the "seed" inputs (or ``size``)."""
    inp = make_inputs(size or "seed")
    a, x, y = inp.a, inp.x, inp.y
    cols = bench.compare({"colsum_naive": colsum_naive, "colsum_rows": colsum_rows}, (a,),
                         repeat=repeat, work=a.size, unit="elements", label="column sums")
    dots = bench.compare({"dot_plain": dot_plain, "dot_partials": dot_partials,
                          "dot_fastmath": dot_fastmath}, (x, y), repeat=repeat, work=x.size,
                         unit="elements", label="dot products")
    return {"colsum": cols, "dot": dots}
