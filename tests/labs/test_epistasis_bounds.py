"""The search's exact skips: the χ² bound (``_chi_rows``) and the tighter Taylor bound
(``_taylor_rows``) on N·MI must hold for every table, including extreme cells (all cases, all
controls, empty, single individuals) and unbalanced classes, within the slack the search allows
(relative 2**-10, absolute 1e-6 for the Taylor bound; the χ² limit's 1 + 2**-12)."""
import numpy as np
import pytest
from numba import njit

from labkit.epistasis import dfs
from labkit.epistasis._intrinsics import _chi_rows, _taylor_rows


@njit
def _bounds(counts, b1, b0, cs, pc, R, pi, out):
    acc = np.zeros(8)
    m1 = _chi_rows(counts, b1, b0, cs, 0, pc, R, 0.0, 0.0, acc)
    out[0] = acc
    m2 = _taylor_rows(counts, b1, b0, cs, 0, pc, R, -1.0, pi, acc)
    out[1] = acc
    return m1 + m2


def _tables(rng, R, n_cases, n_controls, kind):
    """(R rows × 3 genotypes) case and control counts for 8 candidates, each row's totals equal
    across candidates (the prefix row counts), cells by the kind of table."""
    rows1 = rng.multinomial(n_cases, np.ones(R) / R)
    rows0 = rng.multinomial(n_controls, np.ones(R) / R)
    a = np.zeros((8, R, 3), dtype=np.int64)
    b = np.zeros((8, R, 3), dtype=np.int64)
    for j in range(8):
        for r in range(R):
            if kind == "random":
                p1 = p0 = rng.dirichlet(np.ones(3))
            elif kind == "extreme":      # a genotype of the last SNP only in cases or controls
                p1 = rng.permutation([1.0, 0.0, 0.0])
                p0 = rng.permutation([0.0, 0.5, 0.5])
            else:                        # sparse: most cells empty or single individuals
                p1 = p0 = rng.dirichlet(np.full(3, 0.05))
            a[j, r] = rng.multinomial(rows1[r], p1)
            b[j, r] = rng.multinomial(rows0[r], p0)
    return a, b, rows1, rows0


def _mi_times_n(a, b):
    """N·MI of one table (cells a = cases, b = controls), plain numpy."""
    n = a + b
    N, N1 = n.sum(), a.sum()
    N0 = N - N1

    def xlx(x):
        x = np.asarray(x, dtype=float)
        return np.where(x > 0, x * np.log(np.where(x > 0, x, 1.0)), 0.0).sum()
    return xlx(a) + xlx(b) - xlx(n) - (xlx([N1, N0]) - xlx([N]))


@pytest.mark.parametrize("kind", ["random", "extreme", "sparse"])
@pytest.mark.parametrize("R,n_cases,n_controls", [(9, 1000, 1000), (9, 37, 400), (3, 5, 2),
                                                  (1, 300, 20), (27, 640, 640)])
def test_mi_bounds_hold(kind, R, n_cases, n_controls):
    rng = np.random.default_rng(R * 1000 + n_cases + len(kind))
    for _ in range(20):
        a, b, rows1, rows0 = _tables(rng, R, n_cases, n_controls, kind)
        cs = 8
        counts = np.zeros(4 * R * cs, dtype=np.int64)
        b1, b0 = R * 2 * cs, 0
        for r in range(R):
            for g in range(2):
                counts[b1 + (2 * r + g) * cs: b1 + (2 * r + g) * cs + 8] = a[:, r, g]
                counts[b0 + (2 * r + g) * cs: b0 + (2 * r + g) * cs + 8] = b[:, r, g]
        pc = np.stack([rows0, rows1], axis=1).astype(np.int64)
        N, N1 = n_cases + n_controls, n_cases
        out = np.zeros((2, 8))
        _bounds(counts, b1, b0, cs, pc, R, N1 / N, out)
        for j in range(8):
            nmi = _mi_times_n(a[j].ravel(), b[j].ravel())
            chi = (N * N * out[0, j] * (1 + 2.0 ** -12) - N * N1 * N1) / (N1 * (N - N1))
            assert chi >= nmi - 1e-9, (kind, j, chi, nmi)
            assert out[1, j] * (1 + 2.0 ** -10) + 1e-6 >= 2 * nmi, (kind, j, out[1, j], nmi)
            # the Taylor bound is the tighter one on tables with ≥ a few individuals per cell
            if kind == "random" and N >= 2000:
                assert out[1, j] / 2 <= chi * 1.001


def test_search_module_uses_both_bounds():
    import inspect
    src = inspect.getsource(dfs._last_stage)
    assert "_chi_rows" in src and "_taylor_rows" in src
