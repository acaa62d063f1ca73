"""Lesson 00's oracles: column sums and softsign by numpy, ``reference`` and ``validate``."""
from __future__ import annotations

import numpy as np

from labkit._common import raise_mismatch

from .inputs import Inputs

__all__ = ["colsum_reference", "softsign_reference", "reference", "validate"]


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
