"""Lab 01's oracles: Gotoh in numpy and in plain Python (``reference``), parasail's scores (a
peer library), and ``validate``."""
from __future__ import annotations

import numpy as np

from labkit._common import raise_mismatch

from .inputs import Inputs
from .scoring import ALPHABET, _as_scoring

__all__ = ["reference", "parasail_scores", "validate"]


def _gotoh_scan(a: np.ndarray, b: np.ndarray, mt: int, mm: int, go: int, ge: int) -> int:
    """Row-by-row Gotoh in numpy; the horizontal gaps of a row come from one running maximum."""
    m = b.size
    j = np.arange(m + 1, dtype=np.int64)
    neg = -(1 << 40)
    H = np.where(j == 0, 0, go + (j - 1) * ge).astype(np.int64)   # row 0
    F = np.full(m + 1, neg, np.int64)                              # gaps coming down a column
    E = np.empty(m + 1, np.int64)
    b = b.astype(np.int64)
    for i in range(1, a.size + 1):
        F = np.maximum(F + ge, H + go)
        D = np.empty(m + 1, np.int64)
        D[0] = go + (i - 1) * ge                                   # H[i, 0]
        D[1:] = np.maximum(H[:-1] + np.where(b == a[i - 1], mt, mm), F[1:])
        # E[j] = max_{k<j} H[k] + go + (j-1-k)*ge; since go ≤ ge the E-terms inside H are
        # dominated, so E[j] = go + (j-1)*ge + max_{k<j}(D[k] - k*ge)  (a prefix maximum)
        run = np.maximum.accumulate(D - j * ge)
        E[0] = neg
        E[1:] = go + (j[1:] - 1) * ge + run[:-1]
        H = np.maximum(D, E)
        H[0] = D[0]
    return int(H[m])


def _gotoh_loops(a, b, mt, mm, go, ge) -> int:
    """Textbook three-matrix Gotoh in plain Python (any gap scores)."""
    n, m = len(a), len(b)
    neg = -(1 << 40)
    H = [[neg] * (m + 1) for _ in range(n + 1)]
    E = [[neg] * (m + 1) for _ in range(n + 1)]
    F = [[neg] * (m + 1) for _ in range(n + 1)]
    H[0][0] = 0
    for i in range(1, n + 1):
        H[i][0] = go + (i - 1) * ge
    for j in range(1, m + 1):
        H[0][j] = go + (j - 1) * ge
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            E[i][j] = max(E[i][j - 1] + ge, H[i][j - 1] + go)
            F[i][j] = max(F[i - 1][j] + ge, H[i - 1][j] + go)
            s = mt if a[i - 1] == b[j - 1] else mm
            H[i][j] = max(H[i - 1][j - 1] + s, E[i][j], F[i][j])
    return H[n][m]


def reference(inputs: Inputs) -> np.ndarray:
    """The oracle: plain numpy Gotoh, one pair at a time (slow, obviously correct) → int32."""
    mt, mm, go, ge = _as_scoring(inputs.scoring).ints()
    out = np.empty(inputs.pairs, np.int64)
    for p in range(inputs.pairs):
        a = inputs.seqs1[p, :inputs.lens1[p]]
        b = inputs.seqs2[p, :inputs.lens2[p]]
        if go <= ge:
            out[p] = _gotoh_scan(a, b, mt, mm, go, ge)
        else:
            out[p] = _gotoh_loops(list(a), list(b), mt, mm, go, ge)
    return out.astype(np.int32)


def parasail_scores(inputs: Inputs) -> np.ndarray:
    """Scores from parasail ``nw_scan_16`` (an independent library; needs ``parasail``)."""
    import parasail

    mt, mm, go, ge = _as_scoring(inputs.scoring).ints()
    matrix = parasail.matrix_create(ALPHABET, mt, mm)
    s1, s2 = inputs.strings()
    return np.array([parasail.nw_scan_16(a, b, -go, -ge, matrix).score for a, b in zip(s1, s2)],
                    dtype=np.int32)


def validate(result, expected) -> None:
    """Raise AssertionError naming the first differing pairs (``score[3] = 12, expected 14``)."""
    raise_mismatch(result, np.asarray(expected), name="score")
