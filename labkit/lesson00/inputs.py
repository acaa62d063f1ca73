"""Lesson 00's inputs: the sizes, the ``Inputs`` record and ``make_inputs``."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from labkit._sizes import resolve_size

__all__ = ["SIZES", "Inputs", "make_inputs"]

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
