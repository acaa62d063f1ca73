"""The search's exact skips: the χ² bound (``_chi_rows``) and the tighter Taylor bound
(``_taylor_rows``) on N·MI must hold for every table, including extreme cells (all cases, all
controls, empty, single individuals) and unbalanced classes, within the slack the search allows
(relative 2**-10, absolute 1e-6 for the Taylor bound; the χ² limit's 1 + 2**-12)."""
import numpy as np
import pytest
from numba import njit

from labkit import epistasis as ep
from labkit.epistasis import _plan, _stages
from labkit.epistasis._fused import _fused3_v16, fused_params
from labkit.epistasis._mi_rows import _chi_rows, _taylor_rows


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


@pytest.mark.parametrize("dtype", [np.int64, np.float32])
@pytest.mark.parametrize("kind", ["random", "extreme", "sparse"])
@pytest.mark.parametrize("R,n_cases,n_controls", [(9, 1000, 1000), (9, 37, 400), (3, 5, 2),
                                                  (1, 300, 20), (27, 640, 640)])
def test_mi_bounds_hold(kind, R, n_cases, n_controls, dtype):
    rng = np.random.default_rng(R * 1000 + n_cases + len(kind))
    for _ in range(20):
        a, b, rows1, rows0 = _tables(rng, R, n_cases, n_controls, kind)
        cs = 8
        counts = np.zeros(4 * R * cs, dtype=dtype)    # float32: _last_stage16's counts
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
    src = inspect.getsource(_stages._last_stage)
    assert "_chi_rows" in src and "_taylor_rows" in src


@njit
def _fused16_s(tab32, lanes16, pj, par, pc, W, nw1, lims, countsf):
    """_fused3_v16 on one block of 16 candidates (one segment per class, cases first): for each
    lane j, whether its float32 Taylor sum reached lims[j]."""
    out = np.zeros(16, dtype=np.int64)
    pcf = np.empty(24, dtype=np.float32)
    fused_params(pc, pcf)
    for j in range(16):
        m = _fused3_v16(tab32, 0, nw1, 2 * W, lanes16, 0, nw1 * 16, 2 * W * 16, nw1,
                        2 * W - nw1, pj, par, 0, pcf, lims[j], countsf, 0, 16, 0)
        out[j] = (m >> j) & 1
    return out


def _taylor_sum(a, b, N, N1):
    """Σ over the cells of (a − n·π)² / clamp(a·b/n, n·v/2, n·v), float64 numpy (the bound
    ``_fused3_v16`` computes in float32)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    pi = N1 / N
    v = pi * (1 - pi)
    n = a + b
    n1 = np.maximum(n, 1.0)
    w = np.clip(a * b / n1, n1 * v / 2, n1 * v)
    return float(((a - n * pi) ** 2 / w).sum())


@pytest.mark.parametrize("n_cases,n_controls,maf", [(1000, 1000, 0.4), (37, 400, 0.05),
                                                    (5, 2, 0.5), (640, 70, 0.02),
                                                    (3000, 2500, 0.3), (9, 6000, 0.45)])
def test_fused16_counts_and_taylor_bound(n_cases, n_controls, maf):
    """_fused3_v16 (counts in 32-bit lanes, the Taylor bound on 2·N·MI in float32 × 16 with
    vrcp14ps): its stored counts are the numpy contingency tables of prefix (0, 1) with
    candidates 16, 17, every lane reaches a limit of its exact 2·N·MI (the bound holds, float32
    slack included: no candidate that could enter the top list is skipped), and a limit a
    little above the exact Taylor sum is not reached (the bound is not loosened further)."""
    rng = np.random.default_rng(n_cases + n_controls)
    n = n_cases + n_controls
    geno = rng.binomial(2, maf, size=(n, 18)).astype(np.int8)
    lab = np.r_[np.ones(n_cases), np.zeros(n_controls)].astype(np.int8)
    enc = ep.encode(geno, lab)
    W, cw = enc.words, enc.case_words
    # prefix rows of SNPs 0, 1 in _build_level's split order: (r, g < 2) at r·2 + g, (r, 2) at 6 + r
    tab = np.zeros(9 * W, dtype=np.uint64)
    pc = np.zeros((9, 2), dtype=np.int64)
    for r in range(3):
        for g in range(3):
            q = r * 2 + g if g < 2 else 6 + r
            tab[q * W:(q + 1) * W] = enc.bits[0, r] & enc.bits[1, g]
            for c, sl in ((1, slice(0, cw)), (0, slice(cw, W))):
                pc[q, c] = int(np.bitwise_count(tab[q * W:(q + 1) * W][sl]).sum())
    _, p16 = _stages._pair_counts(enc.bits, enc.lanes, np.array([[0, cw, 1], [cw, W, 0]]),
                              enc.lanes.shape[0] * 8, True)
    lanes16 = _plan._lanes16(enc.lanes)[2 * 2 * W * 16:]         # candidates 16 … 31 → block 1
    cand = range(16, 18)
    countsf = np.zeros(36 * 16 + 16, dtype=np.float32)
    nmi2 = np.zeros(16)
    tay = np.zeros(16)
    for k in cand:
        sel3 = (geno[:, 0] * 9 + geno[:, 1] * 3 + geno[:, k])
        a = np.bincount(sel3[lab == 1], minlength=27)
        b = np.bincount(sel3[lab == 0], minlength=27)
        nmi2[k - 16] = 2 * _mi_times_n(a, b)
        tay[k - 16] = _taylor_sum(a, b, n, n_cases)
        assert tay[k - 16] * (1 + 2.0 ** -10) + 1e-6 >= nmi2[k - 16]
    got = _fused16_s(tab.view(np.uint32), lanes16, p16[1][192:], p16[0][192:], pc, W, 2 * cw,
                     nmi2, countsf)
    assert got[:2].all()
    # the stored counts: row q of class c, genotype g of the candidate at ((c·9 + q)·2 + g)·16
    for k in cand:
        x = geno[:, k]
        for q in range(9):
            r, g = (q // 2, q % 2) if q < 6 else (q - 6, 2)
            sel = (geno[:, 0] == r) & (geno[:, 1] == g)
            for c in (0, 1):
                for gk in range(2):
                    want = int(((x == gk) & sel & (lab == c)).sum())
                    assert countsf[((c * 9 + q) * 2 + gk) * 16 + k - 16] == want
    v = n_cases * n_controls / n ** 2
    over = _fused16_s(tab.view(np.uint32), lanes16, p16[1][192:], p16[0][192:], pc, W, 2 * cw,
                      tay * (1 + 2.0 ** -8) + n * 2.0 ** -18 / v + 1e-3, countsf)
    assert not over[:2].any()
