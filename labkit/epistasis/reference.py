"""Lab 04's oracles, plain numpy and independent of every kernel: contingency tables by
``np.add.at``, MI from its explicit formulas, the exhaustive search by ``bincount``
(``reference``), ``validate``, and numpy's popcount (``_numpy_popcount``)."""
from __future__ import annotations

from itertools import combinations

import numpy as np

from .inputs import Inputs, _check_data, _check_order
from .kernels import _MI_SCALE

__all__ = ["reference", "reference_counts", "reference_mi", "reference_search", "validate"]


def _numpy_popcount(words):
    return int(np.bitwise_count(words).sum())


def reference_counts(genotypes, labels, snps) -> np.ndarray:
    """counts[class, cell] by np.add.at over individuals (plain numpy)."""
    g, y = _check_data(genotypes, labels)
    cell = np.zeros(g.shape[0], dtype=np.int64)
    for s in snps:
        cell = cell * 3 + g[:, int(s)]
    out = np.zeros((2, 3 ** len(snps)), dtype=np.int64)
    np.add.at(out, (y.astype(np.int64), cell), 1)
    return out


def _entropy(p: np.ndarray, axis=None) -> np.ndarray:
    logp = np.log(np.where(p > 0, p, 1.0))
    return -(p * logp).sum(axis=axis)


def reference_mi(genotypes, labels, snps) -> float:
    """MI (nats) = H(X) + H(Y) − H(X,Y) of one SNP combination, explicit formulas (plain numpy)."""
    t = reference_counts(genotypes, labels, snps).astype(np.float64)
    p = t / t.sum()
    return float(_entropy(p.sum(axis=0)) + _entropy(p.sum(axis=1)) - _entropy(p))


def reference_search(genotypes, labels, order: int = 2, top: int = 10) -> list:
    """Exhaustive search by bincount over all combinations (plain numpy; small inputs only)."""
    g, y = _check_data(genotypes, labels)
    order = _check_order(order, g.shape[1])
    n = g.shape[1]
    C = 3 ** order
    combos = np.array(list(combinations(range(n), order)), dtype=np.int64).reshape(-1, order)
    g64 = g.astype(np.int64)
    y64 = y.astype(np.int64)
    mis = np.empty(len(combos))
    step = max(1, 2_000_000 // (g.shape[0] + 1))
    for a in range(0, len(combos), step):
        cb = combos[a:a + step]
        cell = np.zeros((g.shape[0], len(cb)), dtype=np.int64)
        for t in range(order):
            cell = cell * 3 + g64[:, cb[:, t]]
        key = (np.arange(len(cb))[None, :] * 2 + y64[:, None]) * C + cell
        t = np.bincount(key.ravel(), minlength=len(cb) * 2 * C).reshape(len(cb), 2, C)
        p = t / g.shape[0]
        mis[a:a + step] = (_entropy(p.sum(axis=1), axis=1) + _entropy(p.sum(axis=2), axis=1)
                           - _entropy(p.reshape(len(cb), -1), axis=1))
    q = np.floor(mis * _MI_SCALE + 0.5).astype(np.int64)
    sel = np.lexsort([combos[:, t] for t in range(order - 1, -1, -1)] + [-q])[:top]
    return [(tuple(int(v) for v in combos[s]), float(mis[s])) for s in sel]


def reference(inputs: Inputs) -> list:
    """Top list of an exhaustive search of ``inputs`` computed with plain numpy."""
    return reference_search(inputs.genotypes, inputs.labels, inputs.order, inputs.top)


def validate(result, expected, atol: float = 1e-9) -> None:
    """Raise AssertionError at the first rank where two top lists differ (indices, or MI beyond atol)."""
    result, expected = list(result), list(expected)
    for rank, (got, exp) in enumerate(zip(result, expected)):
        if tuple(got[0]) != tuple(exp[0]) or abs(got[1] - exp[1]) > atol:
            raise AssertionError(f"rank {rank}: got SNPs {tuple(got[0])} MI {got[1]:.6g}, "
                                 f"expected {tuple(exp[0])} MI {exp[1]:.6g}")
    if len(result) != len(expected):
        raise AssertionError(f"top list has {len(result)} entries, expected {len(expected)}")
