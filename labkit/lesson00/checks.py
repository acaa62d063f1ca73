"""Lesson 00's exercise checks: ``colsum`` (loop order) and ``dot_partials`` (latency chains)."""
from __future__ import annotations

import numpy as np

from labkit.check import (CheckFailure, accumulators_gate, exercise, mismatch, no_fastmath_gate,
                          require_njit, rng, speed_gate, vectorized_gate)
from labkit.lesson00 import colsum_reference
from labkit.lesson00.kernels import colsum_naive, dot_plain


def _as_2d_args(g: np.random.Generator):
    shapes = [(1, 1), (3, 17), (int(g.integers(20, 60)), int(g.integers(20, 60)))]
    return [g.random(s) for s in shapes]


@exercise("colsum", points=2, answers=("labkit.lesson00.kernels:colsum_rows",))
def check_colsum(student):
    """Column sums equal numpy's (same summation order), vectorised at the host's native width,
    ≥ 2× the naive kernel."""
    g = rng()
    for a in _as_2d_args(g):
        got = student(a)
        msg = mismatch(got, colsum_reference(a), name="out", rtol=1e-12, atol=1e-12)
        assert msg is None, f"{msg} (input {a.shape[0]}×{a.shape[1]})"
    a = g.random((600, 600))
    vectorized_gate(student, (a,))
    speed_gate(student, colsum_naive, (a,), need=2.0, vs="colsum_naive")
    return "column sums exact on 3 random matrices"


#: Independent partial sums the dot-product exercise asks for.
PARTIALS = 8


@exercise("dot_partials", points=2, answers=("labkit.lesson00.kernels:dot_partials",
                                             "labkit.lesson00.kernels:dot_fastmath"))
def check_dot_partials(student):
    """Dot products correct (to rounding) for every length, written as eight independent sums
    (no fastmath, no np.dot: the loop's phi nodes are counted), ≥ 1.5× the one-accumulator loop."""
    g = rng()
    lengths = [0, 1, 7, 8, 9, int(g.integers(100, 1000))]
    for n in lengths:
        x, y = g.random(n), g.random(n)
        got = student(x, y)
        if not isinstance(got, (float, np.floating)):
            raise CheckFailure("wrong", f"returned {type(got).__name__}, expected a float")
        exp = float(np.dot(x, y)) if n else 0.0
        msg = mismatch(got, exp, name=f"dot(length {n})", rtol=1e-10, atol=1e-12)
        assert msg is None, msg
    x, y = g.random(1 << 14), g.random(1 << 14)
    require_njit(student, "technique missing")
    no_fastmath_gate(student, (x, y), hint="write the eight partial sums s0 … s7 yourself")
    accumulators_gate(student, (x, y), PARTIALS,
                      hint="keep s0 … s7 as separate variables updated in one loop")
    speed_gate(student, dot_plain, (x, y), need=1.5, vs="dot_plain")
    return f"correct for lengths {', '.join(map(str, lengths))}"
