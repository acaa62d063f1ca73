"""Tests for labkit.pcc: bijection, kernels vs np.corrcoef, bounded-memory pairs, MPI, checks."""
from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numba
import numpy as np
import pytest

from labkit import pcc
from labkit.pcc import checks as _checks  # noqa: F401 - registers check.job_coords, …

ROOT = Path(__file__).resolve().parents[2]


def _corrcoef(X):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.atleast_2d(np.corrcoef(X))


# ---------------------------------------------------------------- bijection
def test_job_mapping_exhaustive_small_n():
    for n in range(1, 41):
        J = 0
        for y in range(n):
            for x in range(y, n):
                assert pcc.job_id(n, y, x) == J
                assert pcc.job_coords(n, J) == (y, x)
                J += 1
        assert J == pcc.n_jobs(n)
        ys, xs = pcc.job_coords(n, np.arange(J))
        assert np.array_equal(pcc.job_id(n, ys, xs), np.arange(J))
        # order preserved: left-to-right, top-to-bottom
        assert np.all(np.diff(ys * n + xs) > 0)


def test_job_mapping_matches_seed_figure():
    # n = 5: first row 0..4, second 5..8, …, last cell 14 (the seed's Fig. 1 numbering)
    grid = np.full((5, 5), -1)
    for J in range(15):
        y, x = pcc.job_coords(5, J)
        grid[y, x] = J
    assert grid[0].tolist() == [0, 1, 2, 3, 4]
    assert grid[1, 1:].tolist() == [5, 6, 7, 8]
    assert grid[4, 4] == 14


@pytest.mark.parametrize("n", [2**31 - 1, 2**31, pcc.FLOAT_FIRST_BAD_N, 10**9 + 7, 123_456_789])
def test_job_mapping_large_n_near_end_and_row_edges(n):
    rng = np.random.default_rng(n % 1000)
    T = n * (n + 1) // 2
    ids = np.concatenate([T - 1 - rng.integers(0, 10**7, 2000), rng.integers(0, T, 2000),
                          np.arange(10), T - 1 - np.arange(10)])
    ids_all = ids
    ys, xs = pcc.job_coords(n, ids)
    assert np.all((0 <= ys) & (ys <= xs) & (xs < n))
    assert np.array_equal(pcc.job_id(n, ys, xs), ids)
    # first and last cell of rows near the bottom and the top
    rows = np.concatenate([np.arange(5), n - 1 - np.arange(3000)])
    first = pcc.job_id(n, rows, rows)
    last = pcc.job_id(n, rows, np.full_like(rows, n - 1))
    for ids in (first, last):
        y2, _ = pcc.job_coords(n, ids)
        assert np.array_equal(y2, rows)
    # scalar (Python int, math.isqrt) path agrees with the vectorised (numba) one
    for k in range(0, 4000, 97):
        assert pcc.job_coords(n, int(ids_all[k])) == (int(ys[k]), int(xs[k]))
    assert [pcc.job_coords(n, int(J))[0] for J in last[-20:]] == rows[-20:].tolist()


def test_seed_float_formula_first_breaks_at_documented_n():
    def last_cells(n, k=2000):
        rows = np.arange(n - 1 - k, n - 1, dtype=np.int64)
        return rows, pcc.job_id(n, rows, np.full_like(rows, n - 1))
    n = pcc.FLOAT_FIRST_BAD_N
    rows, ids = last_cells(n)
    yf, _ = pcc.job_coords_float(n, ids)
    assert np.any(yf != rows)          # the float closed form is wrong here…
    ye, _ = pcc.job_coords(n, ids)
    assert np.array_equal(ye, rows)    # …the exact one is not
    rows, ids = last_cells(n - 1)
    yf, _ = pcc.job_coords_float(n - 1, ids)
    assert np.array_equal(yf, rows)    # one below, float still fine on these cells
    assert (n - 1) * n < 2**51 <= n * (n + 1)


def test_mapping_numba_callable():
    @numba.njit
    def roundtrip(n, J):
        y, x = pcc.job_coords(n, J)
        return pcc.job_id(n, y, x), y, x

    n = 2**31
    J = n * (n + 1) // 2 - 7
    assert roundtrip(n, J)[0] == J
    assert roundtrip(10, 54)[1:] == (9, 9)

    @numba.njit
    def tiles(n, t, J):
        yt, xt = pcc.tile_coords(n, t, J)
        return pcc.tile_id(n, t, yt, xt)

    assert tiles(1000, 96, 50) == 50


def test_tiles():
    n, t = 1000, 96
    m, T = pcc.n_tiles(n, t)
    assert m == 11 and T == 66
    seen = np.zeros((n, n), dtype=np.int64)
    for Jt in range(T):
        yt, xt = pcc.tile_coords(n, t, Jt)
        assert pcc.tile_id(n, t, yt, xt) == Jt
        y0, y1, x0, x1 = pcc.tile_bounds(n, t, Jt)
        seen[y0:y1, x0:x1] += 1
    assert np.all(np.triu(seen) == np.triu(np.ones((n, n), dtype=np.int64)))


@pytest.mark.parametrize("call, err", [
    (lambda: pcc.job_id(5, 3, 2), ValueError),
    (lambda: pcc.job_id(5, 0, 5), ValueError),
    (lambda: pcc.job_id(5, -1, 2), ValueError),
    (lambda: pcc.job_coords(5, 15), ValueError),
    (lambda: pcc.job_coords(5, -1), ValueError),
    (lambda: pcc.job_coords(0, 0), ValueError),
    (lambda: pcc.job_coords(2**31 + 1, 0), ValueError),
    (lambda: pcc.job_coords(5.0, 1), TypeError),
    (lambda: pcc.job_coords(5, np.array([1.0])), TypeError),
    (lambda: pcc.job_coords(5, np.array([3, 15])), ValueError),
    (lambda: pcc.job_id(5, np.array([0, 3]), np.array([1, 2])), ValueError),
    (lambda: pcc.tile_coords(10, 0, 0), ValueError),
    (lambda: pcc.rank_tile_range(2, 2, 10), ValueError),
])
def test_mapping_bad_input(call, err):
    with pytest.raises(err):
        call()


def test_rank_tile_range_covers():
    for T in (0, 1, 7, 820):
        for P in (1, 2, 3, 8):
            got = [pcc.rank_tile_range(r, P, T) for r in range(P)]
            assert got[0][0] == 0 and got[-1][1] == T
            assert all(a[1] == b[0] for a, b in zip(got, got[1:]))
            chunk = -(-T // P)
            assert got[0] == (0, min(T, chunk))


# ---------------------------------------------------------------- kernels
SHAPES = [(1, 2), (2, 2), (3, 2), (5, 3), (37, 19), (97, 64), (130, 2), (250, 301)]


@pytest.mark.parametrize("n, l", SHAPES)
def test_pearson_allpairs_vs_corrcoef(n, l):
    X = np.random.default_rng(n * 1000 + l).random((n, l)) * 10 - 3
    ref = _corrcoef(X)
    for tile in (1, 5, 32, 96):
        for schedule in pcc.SCHEDULES:
            R = pcc.pearson_allpairs(X, tile=tile, schedule=schedule)
            assert R.shape == (n, n) and R.dtype == np.float64
            pcc.validate(R, ref)
            assert np.array_equal(R, R.T)
    pcc.validate(pcc.reference(pcc.PCCInputs(X)), ref)


@pytest.mark.parametrize("n, l", [(1, 2), (37, 19), (97, 64)])
def test_step_kernels_vs_corrcoef(n, l):
    X = np.random.default_rng(n).normal(size=(n, l))
    ref = _corrcoef(X)
    Z, const = pcc.standardize(X)
    assert not const.any()
    pcc.validate(pcc.pcc_naive(X), ref)
    pcc.validate(pcc.pcc_transformed(Z), ref)
    pcc.validate(pcc.pcc_tiled(Z, 8), ref)
    pcc.validate(pcc.blas_pcc(X), ref)


def test_threads_and_owner():
    X = pcc.make_inputs({"n": 300, "l": 50}).X
    Z, _ = pcc.standardize(X)
    ref = _corrcoef(X)
    for schedule in pcc.SCHEDULES:
        for threads in (1, 2):
            R, owner = pcc.pcc_threads(Z, tile=32, schedule=schedule, threads=threads)
            pcc.validate(R, ref)
            assert owner.shape == (pcc.n_tiles(300, 32)[1],)
            assert owner.min() >= 0 and owner.max() < threads
    _, owner = pcc.pcc_threads(Z, tile=32, schedule="static", threads=2)
    T = len(owner)
    if numba.config.NUMBA_NUM_THREADS >= 2:  # contiguous halves of the id range
        assert len(set(owner[: T // 2 - 1])) == 1 and len(set(owner[-(T // 2 - 1):])) == 1


def test_constant_rows_nan_with_warning():
    X = np.random.default_rng(3).random((20, 10))
    X[3] = 2.0
    X[11] = -1.0
    with pytest.warns(RuntimeWarning, match="constant row"):
        R = pcc.pearson_allpairs(X, tile=8)
    pcc.validate(R, _corrcoef(X))
    assert np.isnan(R[3]).all() and np.isnan(R[:, 11]).all()
    assert np.isfinite(R[0, 1])
    with pytest.warns(RuntimeWarning, match="constant row"):
        i, j, r = pcc.correlated_pairs(X, 0.01, tile=8)
    assert 3 not in i and 3 not in j


@pytest.mark.parametrize("bad, err", [
    (np.zeros(5), ValueError),                       # 1-D
    (np.zeros((3, 1)), ValueError),                  # l = 1
    (np.zeros((0, 4)), ValueError),                  # no variables
    (np.array([[1, 2], [3, np.nan]]), ValueError),   # NaN
    (np.ones((2, 3), dtype=complex), TypeError),
    (np.array([["a", "b"]]), TypeError),
])
def test_pearson_allpairs_bad_input(bad, err):
    with pytest.raises(err):
        pcc.pearson_allpairs(bad)


def test_pearson_allpairs_bad_params():
    X = np.random.default_rng(0).random((10, 5))
    with pytest.raises(ValueError):
        pcc.pearson_allpairs(X, tile=0)
    with pytest.raises(TypeError):
        pcc.pearson_allpairs(X, tile=2.5)
    with pytest.raises(ValueError):
        pcc.pearson_allpairs(X, threads=0)
    with pytest.raises(ValueError):
        pcc.pearson_allpairs(X, schedule="guided")
    for thr in (0.0, 1.5, -0.2):
        with pytest.raises(ValueError):
            pcc.correlated_pairs(X, thr)
    with pytest.raises(TypeError):
        pcc.correlated_pairs(X, "0.5")


def test_int_and_float32_inputs_accepted():
    X = np.random.default_rng(5).integers(0, 10, (30, 12))
    pcc.validate(pcc.pearson_allpairs(X, tile=8), _corrcoef(X))
    pcc.validate(pcc.pearson_allpairs(X.astype(np.float32), tile=8), _corrcoef(X))


@pytest.mark.parametrize("n, l, tile, tpp", [(2, 2, 4, 1), (150, 40, 32, 3), (301, 80, 96, 2),
                                            (400, 300, 64, None)])
def test_correlated_pairs_vs_corrcoef(n, l, tile, tpp):
    X = pcc.make_inputs({"n": n, "l": l, "planted": max(1, n // 20)}, seed=n).X
    ref = _corrcoef(X)
    for thr in (0.2, 0.6, 1.0):
        i, j, r = pcc.correlated_pairs(X, thr, tile=tile, tiles_per_pass=tpp)
        ii, jj = np.nonzero(np.triu(np.abs(ref) >= thr, 1))
        # pairs within 1e-12 of the threshold may fall either side; none here in practice
        assert np.array_equal(i, ii) and np.array_equal(j, jj), (thr, len(i), len(ii))
        np.testing.assert_allclose(r, ref[ii, jj], rtol=1e-12, atol=1e-12)
        assert np.all(i < j)


def test_correlated_pairs_max_pairs():
    X = np.random.default_rng(0).random((60, 3))
    with pytest.raises(ValueError, match="max_pairs"):
        pcc.correlated_pairs(X, 0.01, tile=8, tiles_per_pass=1, max_pairs=10)


def test_make_inputs_and_validate():
    a = pcc.make_inputs("tiny", seed=1)
    b = pcc.make_inputs("tiny", seed=1)
    assert np.array_equal(a.X, b.X) and a.X.shape == (37, 19)
    assert pcc.make_inputs({"n": 5, "l": 3}).X.shape == (5, 3)
    with pytest.raises(ValueError):
        pcc.make_inputs("huge")
    with pytest.raises(ValueError):
        pcc.make_inputs({"n": 5, "q": 3})
    R = pcc.reference(a)
    pcc.validate(R, R.copy())
    R2 = R.copy()
    R2[4, 7] += 1e-6
    with pytest.raises(AssertionError, match=r"R\[4, 7\]"):
        pcc.validate(R2, R)


def test_gflops_and_blas_peer():
    assert pcc.gflops(4000, 2000, 1.0) == pytest.approx(4000 * 4001 / 2 * 4000 / 1e9)


# ---------------------------------------------------------------- MPI
def _mpiexec():
    cand = Path(sys.executable).parent / "mpiexec"
    if cand.exists():
        return str(cand)
    return shutil.which("mpiexec")


def test_serial_comm_distributed_matches():
    from labkit.pcc.mpi import SerialComm, distributed_pcc
    X = pcc.make_inputs({"n": 150, "l": 30}).X
    R = distributed_pcc(X, SerialComm(), tile=32)
    pcc.validate(R, _corrcoef(X))
    i, j, r = distributed_pcc(X, SerialComm(), tile=32, threshold=0.5)
    i2, j2, r2 = pcc.correlated_pairs(X, 0.5, tile=32)
    assert np.array_equal(i, i2) and np.array_equal(j, j2)


def test_serial_comm_distributed_equals_pearson_allpairs_over_several_k_blocks():
    """distributed_pcc runs the engine exactly as pearson_allpairs does: same bits, with more
    samples than one k-block and n not a multiple of the tile."""
    from labkit.pcc import engine
    from labkit.pcc.mpi import SerialComm, distributed_pcc
    X = pcc.make_inputs({"n": 70, "l": 2 * engine.KB + 37}).X
    assert np.array_equal(distributed_pcc(X, SerialComm(), tile=32),
                          pcc.pearson_allpairs(X, tile=32))


@pytest.mark.mpi
@pytest.mark.parametrize("threshold", [None, 0.5])
def test_mpiexec_two_ranks_matches_single_process(tmp_path, threshold):
    pytest.importorskip("mpi4py", reason="mpi4py not installed (pip install -e .[mpi])")
    mpiexec = _mpiexec()
    if mpiexec is None:
        pytest.skip("no mpiexec found (pip install mpich, or install an MPI implementation)")
    out = tmp_path / ("R.npy" if threshold is None else "pairs.npz")
    cmd = [mpiexec, "-n", "2", sys.executable, "-m", "labkit.pcc", "--n", "230", "--l", "40",
           "--tile", "32", "--threads", "1", "--seed", "4", "--out", str(out)]
    if threshold is not None:
        cmd += ["--threshold", str(threshold)]
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=240, cwd=ROOT, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["ranks"] == 2
    m, T = pcc.n_tiles(230, 32)
    assert summary["ranges"] == [[0, -(-T // 2)], [-(-T // 2), T]]
    X = pcc.make_inputs({"n": 230, "l": 40}, seed=4).X
    if threshold is None:
        R = np.load(out)
        ref = pcc.pearson_allpairs(X, tile=32)
        assert np.array_equal(R, ref)      # same kernel, same tiles: bit-identical
    else:
        d = np.load(out)
        i, j, r = pcc.correlated_pairs(X, threshold, tile=32)
        assert np.array_equal(d["i"], i) and np.array_equal(d["j"], j)
        assert np.array_equal(d["r"], r)


# ---------------------------------------------------------------- exercise checks
@pytest.fixture
def report_speed(monkeypatch):
    monkeypatch.setenv("LABKIT_SPEED", "report")
    monkeypatch.delenv("LABKIT_GRADING", raising=False)


def _seed_float_coords(n, J):
    y = int(np.ceil(n - 0.5 - np.sqrt(n * n + n + 0.25 - 2.0 * (J + 1))))
    return y, J + y - y * (2 * n - y + 1) // 2


def _stub(*args):
    raise NotImplementedError("map J back to (y, x)")


# Students' answers are defined with def at module level: the checks load a student's function
# from its source and refuse labkit's own kernels.
def _exact_coords(n, J):
    R = n * (n + 1) // 2 - 1 - J
    r = (math.isqrt(8 * R + 1) - 1) // 2
    y = n - 1 - r
    return y, J + y - y * (2 * n - y + 1) // 2


def _first_row_coords(n, J):
    return 0, J


def test_check_job_coords(report_speed):
    from labkit import check
    r = check.job_coords(_exact_coords)
    assert r.passed, str(r)
    bad = check.job_coords(_seed_float_coords)      # right for small n, wrong at n ≥ 47 453 133
    assert not bad.passed and bad.verdict == "wrong" and "47453133" in bad.message.replace("_", "")
    off = check.job_coords(_first_row_coords)
    assert off.verdict == "wrong"
    stub = check.job_coords(_stub)
    assert stub.verdict == "not implemented" and "map J back" in stub.message


def test_checks_registered_by_the_lab():
    from labkit import check
    for name in ("job_coords", "float_breaks", "tile_loop", "block4x4", "split_ids"):
        assert check.get(name).module == "labkit.pcc.checks"       # the fake students: test_pcc_exercises.py


def test_tile_pairs_and_owner_matrix():
    w = pcc.tile_pairs(10, 4)
    assert w.tolist() == [10, 16, 8, 10, 8, 3] and w.sum() == pcc.n_jobs(10)
    M = pcc.owner_matrix(np.arange(6), 10, 4)
    assert M[0].tolist() == [0, 1, 2] and np.isnan(M[1, 0]) and M[2, 2] == 5
    with pytest.raises(ValueError):
        pcc.owner_matrix(np.arange(5), 10, 4)


def test_bench_blas_threads_and_info():
    pytest.importorskip("threadpoolctl", reason="threadpoolctl not installed (pip install threadpoolctl)")
    from labkit.pcc import bench as pcc_bench
    with pcc_bench.blas_threads(1) as pinned:
        info = pcc_bench.blas_info()
    assert pinned is True
    assert "1 threads" in info and "kernels" in info, info
    assert any(t.need == 1.1 and "BLAS" in t.claim for t in pcc_bench.TARGETS)
