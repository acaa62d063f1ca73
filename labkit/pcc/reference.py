"""Lab 03's oracles: Eq. 1 in plain numpy (``reference``), ``validate``, the BLAS peer
``blas_pcc`` (numpy standardises, ``Z @ Z.T``), and the unit both are measured in (``gflops``)."""
from __future__ import annotations

import numpy as np

from labkit._common import raise_mismatch

from .inputs import Inputs

__all__ = ["reference", "validate", "blas_pcc", "gflops"]


def reference(inputs) -> np.ndarray:
    """Eq. 1 in plain numpy (centre, cross-products, divide); constant rows → NaN."""
    X = inputs.X if isinstance(inputs, Inputs) else np.asarray(inputs, dtype=np.float64)
    Xc = X - X.mean(axis=1, keepdims=True)
    const = np.all(X == X[:, :1], axis=1)
    Xc[const] = 0.0
    num = Xc @ Xc.T
    ss = np.einsum("ij,ij->i", Xc, Xc)
    with np.errstate(divide="ignore", invalid="ignore"):
        R = num / np.sqrt(np.outer(ss, ss))
    R[const, :] = np.nan
    R[:, const] = np.nan
    return np.clip(R, -1.0, 1.0)


def validate(result, expected, rtol=1e-12, atol=1e-12) -> None:
    """Raise AssertionError naming the first cells where result and expected differ
    (``R[4, 7] = …, expected …``; NaN equals NaN)."""
    raise_mismatch(result, expected, name="R", rtol=rtol, atol=atol)


def blas_pcc(X):
    """The peer: numpy standardises the rows, then Z @ Z.T (BLAS syrk). Oracle, not labkit's engine."""
    Xc = X - X.mean(axis=1, keepdims=True)
    Xc /= np.sqrt(np.einsum("ij,ij->i", Xc, Xc))[:, None]
    return Xc @ Xc.T


def gflops(n, l, seconds):
    """GFLOP/s counting the upper triangle's 2·l flops per pair (n(n+1)/2 pairs)."""
    return n * (n + 1) / 2 * 2 * l / seconds / 1e9
