"""Lesson 00's exercise checks: ``colsum`` (loop order) and ``dot_partials`` (latency chains)."""
from __future__ import annotations

import numpy as np

from labkit.check import CheckFailure, exercise, mismatch, rng, speed_gate, vectorized_gate
from labkit.lesson00 import colsum_reference
from labkit.lesson00.kernels import colsum_naive, dot_plain


def _as_2d_args(g: np.random.Generator):
    shapes = [(1, 1), (3, 17), (int(g.integers(20, 60)), int(g.integers(20, 60)))]
    return [g.random(s) for s in shapes]


@exercise("colsum", points=2)
def check_colsum(student):
    """Column sums equal numpy's (same summation order), vectorised, ≥ 2× the naive kernel."""
    g = rng()
    for a in _as_2d_args(g):
        got = student(a)
        msg = mismatch(got, colsum_reference(a), name="out", rtol=1e-12, atol=1e-12)
        assert msg is None, f"{msg} (input {a.shape[0]}×{a.shape[1]})"
    a = g.random((600, 600))
    vectorized_gate(student, (a,), min_bits=256)
    speed_gate(student, colsum_naive, (a,), need=2.0, vs="colsum_naive")
    return "column sums exact on 3 random matrices"


@exercise("dot_partials", points=2)
def check_dot_partials(student):
    """Dot products correct (to rounding) for every length, ≥ 1.5× the one-accumulator loop."""
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
    speed_gate(student, dot_plain, (x, y), need=1.5, vs="dot_plain")
    return f"correct for lengths {', '.join(map(str, lengths))}"
