"""Lab 02's oracle: VGH by a plain-numpy tensor contraction of each position's 4×4×4
coefficient block (``reference``), ``validate`` and the float32 tolerance."""
from __future__ import annotations

import numpy as np

from labkit._common import mismatch

from .inputs import BsplineInputs, _unpack
from .kernels import basis

__all__ = ["FLOAT32_RTOL", "reference", "validate"]

#: Documented tolerance for float32 coefficients: |err| ≤ rtol · max|quantity| per output.
FLOAT32_RTOL = 2e-5


def reference(inputs, positions=None):
    """Plain-numpy VGH by tensor contraction of the 4×4×4 coefficient block: ``(value, grad, hess)``
    with shapes ``(P, N)``, ``(P, N, 3)``, ``(P, N, 3, 3)`` in float64 (slow, obviously correct)."""
    coefs, lengths = _unpack(inputs)
    if positions is None:
        if not isinstance(inputs, BsplineInputs):
            raise ValueError("pass positions when inputs is a bare coefficient array")
        positions = inputs.positions
    pos = np.atleast_2d(np.asarray(positions, dtype=np.float64))
    grid = coefs.shape[:3]
    N = coefs.shape[3]
    P = pos.shape[0]
    value = np.empty((P, N))
    grad = np.empty((P, N, 3))
    hess = np.empty((P, N, 3, 3))
    for p in range(P):
        w, ix = [], []
        for a in range(3):
            n, L = grid[a], lengths[a]
            u = (pos[p, a] % L) * n / L
            i0 = int(np.floor(u))
            t = u - i0
            d = n / L
            w.append(basis(t) * np.array([[1.0], [d], [d * d]]))
            ix.append((i0 + np.arange(4)) % n)
        block = coefs[np.ix_(ix[0], ix[1], ix[2])].astype(np.float64)   # (4, 4, 4, N)
        wx, wy, wz = w

        def c(ox, oy, oz):
            return np.einsum("i,j,k,ijkn->n", wx[ox], wy[oy], wz[oz], block)

        value[p] = c(0, 0, 0)
        grad[p, :, 0], grad[p, :, 1], grad[p, :, 2] = c(1, 0, 0), c(0, 1, 0), c(0, 0, 1)
        for a in range(3):
            for b in range(a, 3):
                order = [0, 0, 0]
                order[a] += 1
                order[b] += 1
                hess[p, :, a, b] = hess[p, :, b, a] = c(*order)
    return value, grad, hess


def validate(result, expected, *, rtol: float = 1e-10, atol: float | None = None) -> None:
    """Raise AssertionError naming the first differing entries of value/grad/hess (canonical
    form), through the shared mismatch formatter; tolerance ``atol + rtol · max|expected|``."""
    if not isinstance(result, (tuple, list)) or len(result) != 3:
        raise AssertionError("result must be the tuple (value, grad, hess) in canonical form "
                             "(P, N), (P, N, 3), (P, N, 3, 3); convert SoA output with "
                             "labkit.bspline.soa_to_canonical")
    for name, got, exp in zip(("value", "grad", "hess"), result, expected):
        exp = np.asarray(exp)
        scale = float(np.max(np.abs(exp))) if exp.size else 1.0
        tol = (atol if atol is not None else 0.0) + rtol * max(scale, 1e-300)
        msg = mismatch(got, exp, name=name, atol=tol)
        if msg is not None:
            raise AssertionError(f"{msg} (tolerance {tol:.2g})")
