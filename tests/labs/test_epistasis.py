"""Tests for labkit.epistasis: popcounts vs np.bitwise_count, encoding, contingency tables and MI
vs a plain-numpy reference (and scipy's entropy), exhaustive search vs reference, bad input.

MI tolerance: all kernels compute in float64; per-combination MI agrees with the reference to
1e-12 nats absolute (observed ~1e-16). Search ranks ties after rounding MI to 1e-11 nats.
"""
import math

import numpy as np
import pytest
from numba import njit

from labkit import epistasis as ep
from labkit.epistasis import checks as _checks  # noqa: F401 - registers check.popcount, …
from tests.tooling import compiled_signatures

POPCOUNTS = [ep.popcount_table, ep.popcount_nibble, ep.popcount_lut_register, ep.popcount_mula,
             ep.popcount_hw_scalar, ep.popcount_hw]


@pytest.fixture(scope="module")
def rng():
    return np.random.default_rng(20240)


@pytest.mark.parametrize("fn", POPCOUNTS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("n", [0, 1, 3, 7, 8, 9, 31, 64, 1001])
def test_popcount_matches_numpy(fn, n, rng):
    a = rng.integers(0, 2**64, n, dtype=np.uint64, endpoint=False)
    assert fn(a) == int(np.bitwise_count(a).sum())
    ones = np.full(n, np.iinfo(np.uint64).max, dtype=np.uint64)
    assert fn(ones) == 64 * n


def test_popcount64_scalar():
    from numba import njit

    @njit
    def pc(x):
        return ep.popcount64(x)
    for x in [0, 1, 0xFF, 2**63, 2**64 - 1]:
        assert pc(np.uint64(x)) == bin(x).count("1")


@pytest.mark.parametrize("n", [0, 5, 8, 37])
def test_and_popcount(n, rng):
    a = rng.integers(0, 2**64, n, dtype=np.uint64, endpoint=False)
    b = rng.integers(0, 2**64, n, dtype=np.uint64, endpoint=False)
    assert ep.and_popcount(a, b) == int(np.bitwise_count(a & b).sum())


@pytest.mark.parametrize("fn", [ep.combine_then_popcount, ep.combine_popcount_scalar,
                                ep.combine_popcount], ids=lambda f: f.__name__)
@pytest.mark.parametrize("R,W", [(1, 3), (3, 8), (9, 21), (27, 16)])
def test_combine_popcount(fn, R, W, rng):
    P = rng.integers(0, 2**64, (R, W), dtype=np.uint64, endpoint=False)
    S = rng.integers(0, 2**64, (3, W), dtype=np.uint64, endpoint=False)
    exp = np.array([np.bitwise_count(P[r] & S[g]).sum() for r in range(R) for g in range(3)])
    np.testing.assert_array_equal(fn(P, S), exp)


def test_encode_roundtrip_interleaved_labels():
    inp = ep.make_inputs({"snps": 11, "individuals": 333}, seed=3)
    g, y = inp.genotypes, inp.labels
    assert 0 < y.sum() < y.size and not (np.diff(y) >= 0).all()    # interleaved
    enc = ep.encode(g, y)
    assert enc.bits.dtype == np.uint64 and enc.bits.shape[:2] == (11, 3)
    assert enc.case_words % 8 == 0 and enc.control_words % 8 == 0
    for cls, sub, m in ((1, enc.cases, enc.n_cases), (0, enc.controls, enc.n_controls)):
        bits = np.unpackbits(sub.view(np.uint8), axis=2, bitorder="little")   # (snps, 3, words*64)
        assert not bits[:, :, m:].any(), "padding bits must be zero"
        decoded = bits[:, :, :m].argmax(axis=1).T                          # (m, snps)
        np.testing.assert_array_equal(decoded, g[y == cls])
        assert (bits[:, :, :m].sum(axis=1) == 1).all()                      # rows partition


def test_lanes_layout():
    inp = ep.make_inputs({"snps": 13, "individuals": 200}, seed=1)
    enc = ep.encode(inp.genotypes, inp.labels)
    lanes = enc.lanes
    assert lanes.shape == (2, 2, enc.words, 8)
    for s in range(13):
        for gt in range(2):
            np.testing.assert_array_equal(lanes[s // 8, gt, :, s % 8], enc.bits[s, gt])
    assert not lanes[1, :, :, 5:].any()


def test_lanes16_and_pairs16_layout():
    """The 16-lane views of ``_last_stage16``: 32-bit word w of genotype row g of SNP 16b + t at
    ((b·2 + g)·2W + w)·16 + t; pair counts q of SNP 16b + t at (b·12 + q)·16 + t, the same
    values as the 8-SNP blocks'."""
    from labkit.epistasis import _plan, _stages
    inp = ep.make_inputs({"snps": 21, "individuals": 200}, seed=1)
    enc = ep.encode(inp.genotypes, inp.labels)
    W = enc.words
    L = _plan._lanes16(enc.lanes).reshape(-1, 2, 2 * W, 16)
    assert L.shape[0] == 2 and L.dtype == np.uint32
    for s in range(21):
        for gt in range(2):
            np.testing.assert_array_equal(L[s // 16, gt, :, s % 16],
                                          enc.bits[s, gt].view(np.uint32))
    assert not L[1, :, :, 5:].any()
    segs = np.array([[0, enc.case_words, 1], [enc.case_words, W, 0]])
    npad = enc.lanes.shape[0] * 8
    pairs, none16 = _stages._pair_counts(enc.bits, enc.lanes, segs, npad, False)   # engine's call
    none, p16 = _stages._pair_counts(enc.bits, enc.lanes, segs, npad, True)
    assert none.shape[0] == 0 and none16.shape[0] == 0 and p16.dtype == np.float32
    P = p16.reshape(21, -1, 12, 16)
    for j in range(21):
        for k in range((j + 1) // 8 * 8, npad):
            for q in range(12):
                assert P[j, k // 16, q, k % 16] == pairs[j, ((k // 8) * 12 + q) * 8 + k % 8]


@pytest.mark.parametrize("snps", [(0,), (4, 2), (1, 5, 9), (0, 3, 6, 10), (2, 3, 4, 5, 6)])
def test_contingency_and_mi_vs_reference(snps):
    inp = ep.make_inputs({"snps": 12, "individuals": 257}, seed=5)
    g, y = inp.genotypes, inp.labels
    enc = ep.encode(g, y)
    ref = ep.reference_counts(g, y, snps)
    np.testing.assert_array_equal(ep.contingency(enc, snps), ref)
    mi = ep.reference_mi(g, y, snps)
    tab = ep.nlogn_table(g.shape[0])
    for val in (ep.mi_branchy(ref), ep.mi_masked(ref), ep.mi_table(ref, tab)):
        assert abs(val - mi) < 1e-12
    batch = np.stack([ref, ref])
    for out in (ep.mi_batch_branchy(batch), ep.mi_batch_masked(batch),
                ep.mi_batch_table(batch, tab)):
        np.testing.assert_allclose(out, mi, atol=1e-12, rtol=0)


def test_reference_mi_vs_scipy_entropy():
    from scipy.stats import entropy
    inp = ep.make_inputs({"snps": 6, "individuals": 150}, seed=9)
    t = ep.reference_counts(inp.genotypes, inp.labels, (1, 4)).astype(float)
    mi = entropy(t.sum(0)) + entropy(t.sum(1)) - entropy(t.ravel())
    assert abs(ep.reference_mi(inp.genotypes, inp.labels, (1, 4)) - mi) < 1e-12


def test_mi_empty_cells_are_zero_not_nan():
    t = np.array([[5, 0, 0], [0, 0, 7]])
    for val in (ep.mi_branchy(t), ep.mi_masked(t), ep.mi_table(t, ep.nlogn_table(12))):
        assert np.isfinite(val)
        p = np.array([5, 7]) / 12
        assert abs(val - float(-(p * np.log(p)).sum())) < 1e-12   # perfectly informative


@pytest.mark.parametrize("order", [1, 2, 3, 4])
@pytest.mark.parametrize("n_ind,threads", [(203, 1), (131, 2)])
def test_search_matches_reference(order, n_ind, threads):
    inp = ep.make_inputs({"snps": 17 if order < 4 else 13, "individuals": n_ind}, seed=order)
    got = ep.search(inp.genotypes, inp.labels, order=order, top=10, threads=threads)
    ref = ep.reference_search(inp.genotypes, inp.labels, order=order, top=10)
    ep.validate(got, ref, atol=1e-12)
    assert [m for _, m in got] == sorted((m for _, m in got), reverse=True)


@pytest.mark.parametrize("order", [2, 3])
def test_search_segments_and_batches(order):
    """Several segments per class (block=512 individuals) and tiny batches give the same answer."""
    inp = ep.make_inputs({"snps": 21, "individuals": 2501}, seed=11)
    ref = ep.reference_search(inp.genotypes, inp.labels, order=order, top=7)
    for kw in ({"block": 512, "batch": 8}, {"block": 10**6, "batch": 4096}, {"batch": 3}):
        got = ep.search(inp.genotypes, inp.labels, order=order, top=7, **kw)
        ep.validate(got, ref, atol=1e-12)


@pytest.mark.parametrize("pairs", [True, False])
@pytest.mark.parametrize("n_ind,top", [(257, 1), (130, 5), (65, 20), (1100, 84)])
def test_search_order3_pair_tables_and_mi_bound(pairs, n_ind, top, monkeypatch):
    """Order 3 with and without the pair tables (the first SNP's genotype 2 derived from the pair
    of the other two), ragged individual counts, top lists small (the chi-square bound skips most
    MIs) and complete (9 SNPs: every triple kept)."""
    from labkit.epistasis import _plan as plan
    if not pairs:
        monkeypatch.setattr(plan, "PAIR_TABLE_BYTES", 0)
    snps = 9 if top == 84 else 23
    inp = ep.make_inputs({"snps": snps, "individuals": n_ind}, seed=n_ind)
    assert ep._make_plan(ep.encode(inp.genotypes, inp.labels), 3, top, 1, None, None,
                    False).pairs is pairs
    ref = ep.reference_search(inp.genotypes, inp.labels, order=3, top=top)
    for threads in (1, 2):
        got = ep.search(inp.genotypes, inp.labels, order=3, top=top, threads=threads)
        ep.validate(got, ref, atol=1e-12)


@pytest.mark.parametrize("n_cases,n_controls,maf", [(2400, 2300, 0.3), (9, 700, 0.2),
                                                    (650, 13, 0.05), (3000, 4000, 0.45)])
def test_search_order3_fused_bound_unbalanced(n_cases, n_controls, maf):
    """Order 3 through ``_last_stage16`` (one segment per class: the float32 Taylor bound decides
    which candidates get their exact MI) on unbalanced classes, rare genotypes and individual
    counts above 4096 (products of counts past float32's exact integers): the top list is the
    reference's, on 1 and 2 threads."""
    rng = np.random.default_rng(n_cases * 7 + n_controls)
    n = n_cases + n_controls
    geno = rng.binomial(2, maf, size=(n, 19)).astype(np.int8)
    lab = rng.permutation(np.r_[np.ones(n_cases), np.zeros(n_controls)]).astype(np.int8)
    enc = ep.encode(geno, lab)
    plan = ep._make_plan(enc, 3, 4, 1, None, None, False)
    assert plan.pairs and plan.segs.shape[0] == 2
    ref = ep.reference_search(geno, lab, order=3, top=4)
    for threads in (1, 2):
        ep.validate(ep.search(geno, lab, order=3, top=4, threads=threads), ref, atol=1e-12)


def test_search_ties_by_indices():
    inp = ep.make_inputs({"snps": 8, "individuals": 99}, seed=2)
    g = inp.genotypes.copy()
    g[:, 5] = g[:, 1]                      # duplicated SNP: identical MI, must rank 1 before 5
    g[:, 6] = 2 - g[:, 1]                  # relabelled genotypes: same MI again
    got = ep.search(g, inp.labels, order=1, top=8)
    ref = ep.reference_search(g, inp.labels, order=1, top=8)
    ep.validate(got, ref, atol=1e-12)
    pos = [s[0] for s, _ in got]
    assert pos.index(1) < pos.index(5) < pos.index(6)


def test_search_top_larger_than_combinations():
    inp = ep.make_inputs({"snps": 5, "individuals": 77}, seed=4)
    got = ep.search(inp.genotypes, inp.labels, order=3, top=100)
    assert len(got) == math.comb(5, 3)
    ep.validate(got, ep.reference_search(inp.genotypes, inp.labels, order=3, top=100))


def test_planted_parity_found_first():
    inp = ep.make_inputs({"snps": 60, "individuals": 801, "planted": (7, 23, 41)}, seed=8)
    got = ep.search(inp.genotypes, inp.labels, order=3, top=5)
    assert got[0][0] == (7, 23, 41)
    assert got[0][1] > 2 * got[1][1]
    # pure epistasis: no single SNP of the triple stands out at order 1
    singles = [s[0] for s, _ in ep.search(inp.genotypes, inp.labels, order=1, top=3)]
    assert not set(singles) <= {7, 23, 41}


def test_search_progress_bar_runs(capsys):
    inp = ep.make_inputs({"snps": 40, "individuals": 70}, seed=6)
    got = ep.search(inp.genotypes, inp.labels, order=2, top=3, progress=True)
    ep.validate(got, ep.reference_search(inp.genotypes, inp.labels, order=2, top=3))
    err = capsys.readouterr().err
    assert "comb" in err and "100%" in err, f"no finished progress bar was drawn: {err!r}"


def test_encoded_input_accepted():
    inp = ep.make_inputs("small")
    enc = ep.encode(inp.genotypes, inp.labels)
    ep.validate(ep.search(enc, None, order=2, top=4),
                ep.search(inp.genotypes, inp.labels, order=2, top=4))


def test_reference_wrapper_and_validate():
    inp = ep.make_inputs({"snps": 9, "individuals": 65, "order": 2, "top": 4})
    ref = ep.reference(inp)
    assert len(ref) == 4
    ep.validate(ref, ref)
    bad = [((0, 1), ref[0][1])] + ref[1:]
    with pytest.raises(AssertionError, match="rank 0"):
        ep.validate(bad, ref)
    with pytest.raises(AssertionError, match="entries"):
        ep.validate(ref[:2], ref)


def test_make_inputs_sizes():
    small = ep.make_inputs("small")
    assert small.genotypes.shape == (301, 40) and small.order == 3
    assert set(np.unique(small.genotypes)) <= {0, 1, 2}
    assert ep.make_inputs("small", seed=1).genotypes.tolist() != small.genotypes.tolist()
    with pytest.raises(ValueError, match="size"):
        ep.make_inputs("huge")
    with pytest.raises(ValueError, match="unknown size keys"):
        ep.make_inputs({"snp": 3})
    with pytest.raises(TypeError):
        ep.make_inputs(3)


def test_phase_times_parts():
    inp = ep.make_inputs({"snps": 12, "individuals": 130, "order": 3}, seed=3)
    parts = ep.phase_times(inp.genotypes, inp.labels, repeat=1, min_time=0.0)
    assert parts["cells"] == math.comb(12, 3) * 27
    assert parts["total"] > 0
    assert all(parts[k] >= 0 for k in ("prefix tables", "counts", "MI and top list"))
    # the stopped searches leave the real search untouched
    ep.validate(ep.search(inp.genotypes, inp.labels, order=3, top=5),
                ep.reference_search(inp.genotypes, inp.labels, order=3, top=5), atol=1e-12)


def test_search_stats():
    st = ep.search_stats(100, 3)
    assert st["combinations"] == math.comb(100, 3)
    assert st["row_ands_dfs_subtract"] < st["row_ands_dfs"] < st["row_ands_naive"]
    assert st["row_ands_search"] <= st["row_ands_dfs_subtract"]


# -- bad input -------------------------------------------------------------------------------

def _data():
    inp = ep.make_inputs({"snps": 6, "individuals": 40}, seed=0)
    return inp.genotypes.copy(), inp.labels.copy()


def test_bad_genotype_value():
    g, y = _data()
    g[3, 2] = 3
    with pytest.raises(ValueError, match=r"genotypes\[3, 2\] = 3.*0, 1 or 2"):
        ep.search(g, y)
    g[3, 2] = -1
    with pytest.raises(ValueError, match="0, 1 or 2"):
        ep.encode(g, y)


def test_bad_labels():
    g, y = _data()
    y[4] = 2
    with pytest.raises(ValueError, match=r"labels\[4\] = 2"):
        ep.search(g, y)
    with pytest.raises(ValueError, match="no cases"):
        ep.search(g, np.zeros(len(y), dtype=int))
    with pytest.raises(ValueError, match="no controls"):
        ep.search(g, np.ones(len(y), dtype=int))


def test_bad_shapes_and_types():
    g, y = _data()
    with pytest.raises(ValueError, match="40 rows .* 39 entries"):
        ep.search(g, y[:-1])
    with pytest.raises(ValueError, match="genotypes.T"):
        ep.search(g.T, y)
    with pytest.raises(TypeError, match="astype"):
        ep.search(g.astype(float), y)
    with pytest.raises(ValueError, match="2-D"):
        ep.search(g[0], y)


def test_bad_order_top_threads():
    g, y = _data()
    with pytest.raises(ValueError, match="at least 7 SNPs"):
        ep.search(g, y, order=7)
    with pytest.raises(ValueError, match="between 1 and"):
        ep.search(g, y, order=0)
    with pytest.raises(ValueError, match="between 1 and"):
        ep.search(g, y, order=ep.MAX_ORDER + 1)
    with pytest.raises(TypeError, match="order must be an int"):
        ep.search(g, y, order=2.0)
    with pytest.raises(ValueError, match="top"):
        ep.search(g, y, top=0)
    with pytest.raises(ValueError, match="threads"):
        ep.search(g, y, threads=10**6)
    with pytest.raises(ValueError, match="block"):
        ep.search(g, y, block=0)


def test_contingency_bad_input():
    g, y = _data()
    enc = ep.encode(g, y)
    with pytest.raises(TypeError, match="encode"):
        ep.contingency(g, (0, 1))
    with pytest.raises(ValueError, match="0 … 5"):
        ep.contingency(enc, (0, 6))


# -- exercise checks -------------------------------------------------------------------------

def _stub(*args):
    raise NotImplementedError("write the kernel")


# students' answers, as the solution notebook writes them (the checks refuse labkit's own kernels)
@njit(cache=True)
def student_popcount(words):
    LUT = np.uint64(0x4332322132212110)      # Muła's nibble table, in a register
    total = np.uint64(0)
    for i in range(words.size):
        x = words[i]
        s = np.uint64(0)
        for k in range(16):
            s += (LUT >> (((x >> np.uint64(4 * k)) & np.uint64(15)) << np.uint64(2))) & np.uint64(15)
        total += s
    return total


@njit(cache=True)
def student_mi(counts):
    n0 = 0
    n1 = 0
    for c in range(counts.shape[1]):
        n0 += counts[0, c]
        n1 += counts[1, c]
    inv = 1.0 / (n0 + n1)
    hxy = 0.0
    hx = 0.0
    for c in range(counts.shape[1]):
        p0 = counts[0, c] * inv
        p1 = counts[1, c] * inv
        px = p0 + p1
        hxy -= p0 * np.log(p0 + (p0 == 0.0)) + p1 * np.log(p1 + (p1 == 0.0))
        hx -= px * np.log(px + (px == 0.0))
    q0 = n0 * inv
    q1 = n1 * inv
    hy = -(q0 * np.log(q0 + (q0 == 0.0)) + q1 * np.log(q1 + (q1 == 0.0)))
    return hx + hy - hxy


@njit(cache=True)
def student_fused_count(prefix, snp):
    R, W = prefix.shape
    out = np.zeros(R * 3, dtype=np.int64)
    for r in range(R):
        for g in range(3):
            s = 0
            for w in range(W):
                s += ep.popcount64(prefix[r, w] & snp[g, w])
            out[r * 3 + g] = s
    return out


@pytest.mark.parametrize("name,good,labkits", [("popcount", student_popcount, ep.popcount_hw),
                                               ("masked_mi", student_mi, ep.mi_masked),
                                               ("fused_count", student_fused_count,
                                                ep.combine_popcount)])
def test_checks_pass_on_students_kernels_and_report_stubs(name, good, labkits, monkeypatch):
    from labkit import check
    monkeypatch.setenv("LABKIT_SPEED", "report")
    res = check.run(name, good)
    assert res.passed, str(res)
    stub = check.run(name, _stub)
    assert not stub.passed and stub.verdict == "not implemented"
    assert "write the kernel" in stub.message
    handed_in = check.run(name, labkits)          # labkit's own kernel is not an answer
    assert not handed_in.passed and "labkit" in handed_in.message, str(handed_in)


# wrong kernels, defined at module level as a student defines them in a cell (the check reads
# the definitions it runs from their source)
@njit
def popcount_skips_last(a):
    LUT = np.uint64(0x4332322132212110)
    s = np.uint64(0)
    for i in range(a.size - 1):
        for k in range(16):
            s += (LUT >> (((a[i] >> np.uint64(4 * k)) & np.uint64(15)) << np.uint64(2))) & np.uint64(15)
    return s


@njit
def mi_log_of_zero(t):
    N = t.sum()
    s = 0.0
    for c in range(t.shape[1]):
        px = (t[0, c] + t[1, c]) / N
        s -= px * np.log(px)
        for k in range(2):
            p = t[k, c] / N
            s += p * np.log(p)
    return s


def fused_transposed(P, S):
    return np.array([np.bitwise_count(P[r] & S[g]).sum() for g in range(3)
                     for r in range(P.shape[0])])


def test_checks_fail_on_wrong_kernels(monkeypatch):
    from labkit import check
    monkeypatch.setenv("LABKIT_SPEED", "report")
    for name, bad in (("popcount", popcount_skips_last), ("masked_mi", mi_log_of_zero),
                      ("fused_count", fused_transposed)):
        res = check.run(name, bad)
        assert not res.passed and res.verdict == "wrong", str(res)
    assert "log(0)" in check.run("masked_mi", mi_log_of_zero).message


def test_mi_combinations_matches_search():
    inp = ep.make_inputs({"snps": 10, "individuals": 150}, seed=12)
    enc = ep.encode(inp.genotypes, inp.labels)
    top = ep.search(enc, None, order=3, top=5)
    mi = ep.mi_combinations(enc, [s for s, _ in top])
    np.testing.assert_allclose(mi, [m for _, m in top], atol=1e-12, rtol=0)
    with pytest.raises(ValueError, match="0 … 9"):
        ep.mi_combinations(enc, [(0, 1, 10)])


@pytest.mark.parametrize("order,n", [(5, 9), (6, 8), (ep.MAX_ORDER, 9)])
def test_search_high_orders(order, n):
    inp = ep.make_inputs({"snps": n, "individuals": 157}, seed=order)
    got = ep.search(inp.genotypes, inp.labels, order=order, top=5)
    ep.validate(got, ep.reference_search(inp.genotypes, inp.labels, order=order, top=5), atol=1e-12)


# -- across MPI ranks ------------------------------------------------------------------------

@pytest.mark.parametrize("n,order,size", [(40, 3, 2), (400, 3, 3), (30, 2, 4), (12, 4, 5),
                                          (5, 3, 8)])
def test_rank_snp_ranges_cover_and_balance(n, order, size):
    ranges = [ep.rank_snp_range(r, size, n, order) for r in range(size)]
    assert ranges[0][0] == 0 and ranges[-1][1] == n - order + 1
    assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))
    work = ep.first_snp_work(n, order)
    assert work.sum() == math.comb(n, order)
    per = [work[lo:hi].sum() for lo, hi in ranges]
    if n >= 40:       # enough first SNPs: every rank within 1 % of an equal share
        assert max(per) <= 1.01 * math.comb(n, order) / size


class _Rank:
    """A rank of a simulated communicator: allgather returns what every rank computed."""

    def __init__(self, rank, size, box):
        self.rank, self.size, self.box = rank, size, box

    def Get_rank(self):
        return self.rank

    def Get_size(self):
        return self.size

    def allgather(self, obj):
        self.box[self.rank] = obj
        return [self.box[r] if r in self.box else self.box["others"][r]
                for r in range(self.size)]


@pytest.mark.parametrize("size", [2, 3, 7])
def test_search_comm_merges_top_exactly(size):
    inp = ep.make_inputs({"snps": 24, "individuals": 211}, seed=3)
    enc = ep.encode(inp.genotypes, inp.labels)
    one = ep.search(enc, None, order=3, top=12)
    # every other rank's part, computed as that rank would
    others = {}
    for r in range(size):
        first = ep.rank_snp_range(r, size, enc.n_snps, 3)
        plan = ep._make_plan(enc, 3, 12, 1, None, None, False, first=first)
        others[r] = ep._select(*ep._candidates(plan, False), 3, 12)
    for r in range(size):
        got = ep.search(enc, None, order=3, top=12, comm=_Rank(r, size, {"others": others}))
        assert got == one


def _mpiexec():
    import shutil
    import sys
    from pathlib import Path
    cand = Path(sys.executable).parent / "mpiexec"
    return str(cand) if cand.exists() else shutil.which("mpiexec")


@pytest.mark.mpi
def test_mpiexec_two_ranks_matches_single_process(tmp_path):
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path
    pytest.importorskip("mpi4py", reason="mpi4py not installed (pip install -e .[mpi])")
    mpiexec = _mpiexec()
    if mpiexec is None:
        pytest.skip("no mpiexec found (pip install mpich, or install an MPI implementation)")
    root = Path(__file__).resolve().parents[2]
    out = tmp_path / "top.json"
    cmd = [mpiexec, "-n", "2", sys.executable, "-m", "labkit.epistasis", "--snps", "50",
           "--individuals", "300", "--order", "3", "--top", "15", "--threads", "1", "--seed", "5",
           "--out", str(out)]
    env = dict(os.environ, PYTHONPATH=str(root) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=240, cwd=root, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["ranks"] == 2
    assert summary["ranges"] == [list(ep.rank_snp_range(r, 2, 50, 3)) for r in range(2)]
    assert sum(summary["work"]) == math.comb(50, 3)
    inp = ep.make_inputs({"snps": 50, "individuals": 300, "order": 3, "top": 15}, seed=5)
    one = ep.search(inp.genotypes, inp.labels, order=3, top=15, threads=1)
    got = [(tuple(c), mi) for c, mi in json.loads(out.read_text())]
    assert got == one                 # same kernel, same keys: the same floats, the same order


def test_roof_table_rows():
    from labkit.epistasis import bench as ep_bench
    assert ep_bench.popcounts_per_combination(3, 32) == 2 * 6 * 32
    assert ep_bench.popcounts_per_combination(2, 32) == 2 * 3 * 32
    assert ep_bench.popcounts_per_combination(3, 32, pairs=True) == 2 * 4 * 32
    inp = ep.make_inputs({"snps": 30, "individuals": 300}, seed=1)
    enc = ep.encode(inp.genotypes, inp.labels)
    res = ep_bench.roof_table(enc, 3, repeat=1, hz=3e9)
    assert len(res.names) == 2 and "roof" in res.names[0]
    assert all(res.throughput(n) > 0 for n in res.names)
    assert "% of the vector-popcount roof" in res.label


def test_roof_by_order_rows():
    """The roof table with orders 2, 3 and 4: the roof row first (the baseline), one row per
    order naming its combinations per second, each row's ratio its share of the roof; the
    order-3 share target reads it."""
    from labkit.epistasis import bench as ep_bench
    encs = {}
    for k, snps in ((2, 40), (3, 20), (4, 12)):
        inp = ep.make_inputs({"snps": snps, "individuals": 333}, seed=k)
        encs[k] = ep.encode(inp.genotypes, inp.labels)
    res = ep_bench.roof_by_order(encs, repeat=1, hz=3e9)
    assert res.names[0].startswith("vector popcount roof") and res.baseline == res.names[0]
    for name, unit in zip(res.names[1:], ("pairs", "triples", "quads")):
        assert f" M {unit}/s" in name and res.throughput(name) > 0
    assert "order 2 at" in res.label and "% of the vector-popcount roof" in res.label
    (target,) = [t for t in ep_bench.TARGETS if "share of the vector-popcount roof" in t.claim]
    share = target.measure({"roof": res})
    assert share == res.ratio(res.names[2], res.names[0]) > 0
    assert ep_bench.ORDER_INPUTS[3] == ep_bench.SEARCH_INPUTS


@pytest.mark.full      # the host matrix re-executes the solutions as haswell (make test-hosts)
def test_search_compiles_and_agrees_without_avx512(tmp_path):
    """The χ² bound uses vrcp14pd only where AVX-512 is present: compiled for an AVX2 core
    (NUMBA_CPU_NAME=haswell) the search runs and returns the same top list."""
    import os
    import subprocess
    import sys
    code = ("import json; from labkit import epistasis as ep\n"
            "inp = ep.make_inputs({'snps': 30, 'individuals': 257, 'order': 3}, seed=5)\n"
            "r = ep.search(inp.genotypes, inp.labels, order=3, top=5, threads=1, progress=False)\n"
            "print(json.dumps([[list(map(int, c)), round(float(m), 12)] for c, m in r]))")
    env = dict(os.environ, NUMBA_CPU_NAME="haswell", NUMBA_CACHE_DIR=str(tmp_path))
    env.pop("NUMBA_CPU_FEATURES", None)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    import json
    inp = ep.make_inputs({"snps": 30, "individuals": 257, "order": 3}, seed=5)
    here = ep.search(inp.genotypes, inp.labels, order=3, top=5, threads=1, progress=False)
    assert json.loads(out.stdout) == [[list(map(int, c)), round(float(m), 12)] for c, m in here]


_ONE_SIGNATURE = """
import numpy as np
from labkit import epistasis as E
from labkit.epistasis import _stages
g = np.random.default_rng(0)
G = g.integers(0, 3, (300, 40)).astype(np.uint8)
y = g.integers(0, 2, 300).astype(np.uint8)
for order in (1, 2, 3, 4):
    E.search(G, y, order=order, top=3, threads=1, progress=False)
for f in (_stages._build_level, _stages._count_rows, _stages._parent_counts,
          _stages._last_stage):
    print(f.__name__, len(f.signatures), sum("Literal" in str(s) for s in f.signatures))
"""


@pytest.mark.full     # ≈ 15 s of compilation in an empty cache (a loaded caller hides its callees)
def test_the_search_stages_compile_once(tmp_path):
    """The depth-first search calls each stage with run-time values and with constants (order 1's
    one row, level 0, the pair tables' 3 rows): one signature each — no ``Literal[int]``
    variants, each a second compile of a stage inside the search's first call."""
    counts = compiled_signatures(_ONE_SIGNATURE, tmp_path)
    assert counts == {"_build_level": (1, 0), "_count_rows": (1, 0), "_parent_counts": (1, 0),
                      "_last_stage": (1, 0)}, counts
