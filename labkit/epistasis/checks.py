"""Lab 04's exercise checks (``check.popcount``, ``check.masked_mi``, ``check.fused_count``)."""
from __future__ import annotations

import numpy as np

from labkit.check import exercise, mismatch, no_branch_gate, require_njit, rng, speed_gate
from labkit.epistasis import (_bench_popcount_inputs, _entropy, _numpy_popcount,
                              combine_then_popcount, mi_branchy, popcount_table)


@exercise("popcount", points=1, answers=("labkit.epistasis.kernels:popcount_hw",
                                         "labkit.epistasis.kernels:popcount_hw_scalar",
                                         "labkit.epistasis.kernels:_popcount_mula_avx2"))
def check_popcount(student):
    """``student(words)`` → total set bits of a 1-D uint64 array, like ``np.bitwise_count(words).sum()``."""
    r = rng()
    cases = [np.zeros(0, np.uint64), np.full(3, np.iinfo(np.uint64).max, np.uint64),
             np.array([1, 2**63, 0], dtype=np.uint64)]
    cases += [r.integers(0, 2**64, int(n), dtype=np.uint64, endpoint=False)
              for n in (1, 8, r.integers(9, 3000))]
    for a in cases:
        got = student(a.copy())
        exp = _numpy_popcount(a)
        if got is None or int(got) != exp:
            raise AssertionError(f"popcount of {a.size} words = {got}, expected {exp}")
    big = _bench_popcount_inputs(1 << 14, seed=int(r.integers(1 << 30)))
    speed_gate(student, popcount_table, big, need=3.0, vs="the byte-table popcount")
    return "exact on 6 arrays (empty, all ones, top bit, random lengths)"


def _random_tables(r, B: int, cells: int, zero_frac: float = 0.4):
    t = r.integers(0, 60, (B, 2, cells))
    t[r.random(t.shape) < zero_frac] = 0
    t[t.sum(axis=(1, 2)) == 0, 0, 0] = 1
    return t


@exercise("masked_mi", points=2, answers=("labkit.epistasis.kernels:mi_masked",
                                          "labkit.epistasis.kernels:mi_table",
                                          "labkit.epistasis.kernels:mi_branchy",
                                          "labkit.epistasis.kernels:mi_batch_masked",
                                          "labkit.epistasis.kernels:mi_batch_table"))
def check_masked_mi(student):
    """``student(counts)`` → MI in nats of a table ``counts[2, cells]``; empty cells count 0, no
    NaN; compiled by numba with no branch in the loop over cells (a mask, not an ``if``)."""
    r = rng()
    tables = [np.array([[3, 0, 0], [0, 0, 5]]), np.array([[4, 4, 4], [4, 4, 4]]),
              np.array([[0, 7, 0, 0, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 0, 0, 0, 0]])]
    for cells in (3, 9, 27, 81):
        tables += list(_random_tables(r, 3, cells))
    for t in tables:
        got = student(np.ascontiguousarray(t))
        exp = _table_mi(t)
        if got is None or not np.isfinite(got):
            raise AssertionError(f"MI of {t.tolist()[:2]} is {got} — an empty cell gave log(0); "
                                 "replace zeros by ones before the log (n·log 1 = 0)")
        if abs(float(got) - exp) > 1e-9:
            raise AssertionError(f"MI of a {t.shape[1]}-cell table = {float(got):.10g}, "
                                 f"expected {exp:.10g} nats (natural log?)")
    batch = _random_tables(r, 1, 27)[0]
    require_njit(student, "technique missing")
    no_branch_gate(student, (batch,), where=r"llvm\.log|@log",
                   hint="the exercise replaces `if p > 0` by the mask log(p + (p == 0))")
    speed_gate(student, mi_branchy, (batch,), need=0.6, vs="the branchy MI")
    return f"matches the reference on {len(tables)} tables with empty cells"


def _table_mi(t: np.ndarray) -> float:
    """Plain-numpy MI (nats) of a table counts[2, cells] (explicit entropies)."""
    p = np.asarray(t, dtype=np.float64)
    p = p / p.sum()
    return float(_entropy(p.sum(axis=0)) + _entropy(p.sum(axis=1)) - _entropy(p))


@exercise("fused_count", points=2, answers=("labkit.epistasis.kernels:combine_popcount",
                                            "labkit.epistasis.kernels:combine_popcount_scalar",
                                            "labkit.epistasis.kernels:contingency_fused",
                                            "labkit.epistasis.kernels:and_popcount"))
def check_fused_count(student):
    """``student(prefix, snp)`` → counts[r*3+g] = Σ_w popcount(prefix[r, w] & snp[g, w]), without storing the AND."""
    r = rng()
    for R, W in ((1, 1), (3, 8), (9, int(r.integers(9, 40))), (27, 16)):
        P = r.integers(0, 2**64, (R, W), dtype=np.uint64, endpoint=False)
        S = r.integers(0, 2**64, (3, W), dtype=np.uint64, endpoint=False)
        exp = np.array([np.bitwise_count(P[i] & S[g]).sum() for i in range(R) for g in range(3)])
        msg = mismatch(student(P.copy(), S.copy()), exp, name="counts")
        if msg is not None:
            raise AssertionError(f"{msg} — counts[r*3 + g] is prefix row r AND genotype row g")
    P = r.integers(0, 2**64, (27, 32), dtype=np.uint64, endpoint=False)
    S = r.integers(0, 2**64, (3, 32), dtype=np.uint64, endpoint=False)
    speed_gate(student, combine_then_popcount, (P, S), need=1.1,
               vs="combine-then-popcount (table stored)")
    return "exact for 1, 3, 9 and 27 prefix rows"
