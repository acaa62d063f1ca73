"""Tests for labkit.bspline (lab 02): kernels vs the numpy reference vs scipy's NdBSpline."""
import dataclasses

import numba
import numpy as np
import pytest

from labkit import bspline as bs

scipy_interp = pytest.importorskip("scipy.interpolate")


def _ndbspline(coefs, lengths):
    """Independent oracle: scipy NdBSpline with knots Δ·arange(-3, n+4), coefficients mod n."""
    grid = coefs.shape[:3]
    knots = tuple((L / n) * np.arange(-3, n + 4) for n, L in zip(grid, lengths))
    ext = coefs[np.ix_(*[np.arange(n + 3) % n for n in grid])].astype(np.float64)
    return scipy_interp.NdBSpline(knots, ext, 3)


def _oracle(coefs, lengths, positions):
    spl = _ndbspline(coefs, lengths)
    wrapped = np.mod(positions, np.asarray(lengths))
    value = spl(wrapped)
    grad = np.stack([spl(wrapped, nu=nu) for nu in ((1, 0, 0), (0, 1, 0), (0, 0, 1))], axis=-1)
    hess = np.empty(value.shape + (3, 3))
    for a in range(3):
        for b in range(3):
            nu = [0, 0, 0]
            nu[a] += 1
            nu[b] += 1
            hess[..., a, b] = spl(wrapped, nu=tuple(nu))
    return value, grad, hess


@pytest.fixture(scope="module")
def inp():
    x = bs.make_inputs({"grid": (6, 5, 7), "n": 24, "positions": 9, "lengths": (1.0, 1.3, 0.7)},
                       seed=3)
    # positions outside the box and on grid points exercise the periodic wrap
    x.positions[0] = (-0.25, 2.9, 0.0)
    x.positions[1] = (1.0, 1.3, 0.7)
    x.positions[2] = (0.5, 0.26, 0.1)
    return x


@pytest.fixture(scope="module")
def ref(inp):
    return bs.reference(inp)


def test_reference_matches_ndbspline(inp, ref):
    oracle = _oracle(inp.coefs, inp.lengths, inp.positions)
    bs.validate(ref, oracle, rtol=1e-11)


def test_basis_partition_of_unity_and_derivatives():
    for t in (0.0, 0.3, 0.999):
        w = bs.basis(t)
        assert abs(w[0].sum() - 1) < 1e-14
        assert abs(w[1].sum()) < 1e-14 and abs(w[2].sum()) < 1e-14
        h = 1e-6
        num = (bs.basis(t + h)[0] - bs.basis(t - h)[0]) / (2 * h)
        assert np.allclose(num, w[1], atol=1e-8)


@pytest.mark.parametrize("layout,tile", [("aos", None), ("soa", None), ("aosoa", 8), ("aosoa", 5),
                                         ("aosoa", 1), ("aosoa", 24), ("aosoa", 100)])
def test_layouts_match_reference(inp, ref, layout, tile):
    got = bs.evaluate_vgh(inp, inp.positions, layout=layout, tile=tile)
    assert [g.dtype for g in got] == [np.float64] * 3
    assert got[0].shape == (9, 24) and got[1].shape == (9, 24, 3) and got[2].shape == (9, 24, 3, 3)
    bs.validate(got, ref, rtol=1e-12)


def test_bare_coefficients_unit_cube():
    x = bs.make_inputs("tiny", seed=1)
    got = bs.evaluate_vgh(x.coefs, x.positions, layout="aosoa", tile=7)
    bs.validate(got, bs.reference(x.coefs, x.positions), rtol=1e-12)


@pytest.mark.parametrize("grid", [(1, 2, 3), (3, 1, 4), (2, 2, 2)])
def test_grid_axes_shorter_than_the_four_knots_wrap_every_index(grid):
    """An axis of 1–3 points: the four knots of a position wrap more than once (knot i0 + 3 of a
    2-point axis is point 1 again); every layout still matches the reference and the oracle."""
    x = bs.make_inputs({"grid": grid, "n": 5, "positions": 7}, seed=3)
    ref = bs.reference(x)
    for layout, tile in (("aos", None), ("soa", None), ("aosoa", 2)):
        bs.validate(bs.evaluate_vgh(x, x.positions, layout=layout, tile=tile), ref, rtol=1e-12)
    idx, _ = bs.prefactors(x.positions, grid)
    assert all(0 <= idx[:, a].min() and idx[:, a].max() < grid[a] for a in range(3))


def test_hessian_symmetric(inp):
    _, _, h = bs.evaluate_vgh(inp, inp.positions, layout="soa")
    assert np.array_equal(h, np.swapaxes(h, -1, -2))


@pytest.mark.parametrize("layout,tile", [("aos", None), ("soa", None), ("aosoa", 16)])
def test_float32_within_documented_tolerance(layout, tile):
    x = bs.make_inputs({"grid": (8, 9, 10), "n": 40, "positions": 12, "dtype": "float32"}, seed=5)
    ref = bs.reference(x)
    got = bs.evaluate_vgh(x, x.positions, layout=layout, tile=tile)
    assert got[0].dtype == np.float64
    bs.validate(got, ref, rtol=bs.FLOAT32_RTOL)
    with pytest.raises(AssertionError):          # and it is genuinely float32, not float64
        bs.validate(got, ref, rtol=1e-12)


def test_threads_give_identical_results(inp):
    one = bs.evaluate_vgh(inp, inp.positions, layout="aosoa", tile=8, threads=1)
    two = bs.evaluate_vgh(inp, inp.positions, layout="aosoa", tile=8, threads=2)
    for a, b in zip(one, two):
        assert np.array_equal(a, b)


def test_single_position_kernels(inp, ref):
    idx, pref = bs.prefactors(inp.positions, inp.grid, inp.lengths)
    p = 4
    v, g, h = bs.new_output(inp.n, "aos")
    bs.vgh_aos(inp.coefs, idx[p], pref[p], v, g, h)
    bs.validate((v[None], g[None], h[None]), tuple(r[p:p + 1] for r in ref), rtol=1e-12)
    out = bs.new_output(inp.n, "soa")
    bs.vgh_soa(inp.coefs, idx[p], pref[p], out)
    got = bs.soa_to_canonical(out[:, :inp.n][None])
    bs.validate(got, tuple(r[p:p + 1] for r in ref), rtol=1e-12)
    tile = 10                                    # ragged: 24 = 10 + 10 + 4
    tout = bs.new_output(inp.n, "aosoa", tile=tile)
    bs.vgh_aosoa(inp.tiled(tile), idx[p], pref[p], tout)
    soa = np.moveaxis(tout[:, :, :tile], 0, 1).reshape(10, -1)[:, :inp.n]
    assert np.allclose(soa, out[:, :inp.n], rtol=1e-13, atol=1e-13)


def test_stream_stride_pads_power_of_two_rows():
    assert bs.stream_stride(512) == 520 and bs.stream_stride(256) == 264
    assert bs.stream_stride(100) == 100 and bs.stream_stride(512, np.float32) == 528


def test_walker_tiles_is_last_move(inp, ref):
    soa = bs.walker_tiles(inp, inp.positions, tile=8, threads=2)
    exp = bs.aos_to_soa(ref[0][-1], ref[1][-1], ref[2][-1])
    assert np.allclose(soa, exp, rtol=1e-12, atol=1e-10)


def test_conversions_round_trip(ref):
    soa = bs.aos_to_soa(ref[0], ref[1], ref[2])
    assert soa.shape == (9, 10, 24)
    back = bs.soa_to_canonical(soa)
    for a, b in zip(back, ref):
        assert np.array_equal(a, b)


def test_to_aosoa_pads_ragged_tile():
    c = np.arange(2 * 2 * 2 * 5, dtype=np.float64).reshape(2, 2, 2, 5)
    t = bs.to_aosoa(c, 2)
    assert t.shape == (3, 2, 2, 2, 2)
    assert np.array_equal(t[2, ..., 0], c[..., 4]) and not t[2, ..., 1].any()


def test_traffic_and_flops():
    assert bs.traffic_per_eval("soa")["coef_reads"] == 512
    assert bs.traffic_per_eval("aos", np.float32)["out_writes"] == 52
    assert bs.flops_per_eval() == 656


# ------------------------------------------------------------------ bad input
def test_bad_coefficient_rank():
    with pytest.raises(ValueError, match="rank 4"):
        bs.evaluate_vgh(np.zeros((4, 4, 4)), [[0.1, 0.2, 0.3]])


def test_zero_splines():
    with pytest.raises(ValueError, match="N = 0"):
        bs.evaluate_vgh(np.zeros((4, 4, 4, 0)), [[0.1, 0.2, 0.3]])


def test_integer_coefficients():
    with pytest.raises(TypeError, match="float32 or float64"):
        bs.evaluate_vgh(np.zeros((4, 4, 4, 2), dtype=np.int64), [[0.1, 0.2, 0.3]])


def test_list_coefficients():
    with pytest.raises(TypeError, match="numpy array"):
        bs.evaluate_vgh([[[[1.0]]]], [[0.1, 0.2, 0.3]])


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_positions(bad):
    with pytest.raises(ValueError, match="not finite"):
        bs.evaluate_vgh(np.zeros((4, 4, 4, 2)), [[0.1, 0.2, 0.3], [0.1, bad, 0.3]])


def test_positions_shape():
    with pytest.raises(ValueError, match=r"\(P, 3\)"):
        bs.evaluate_vgh(np.zeros((4, 4, 4, 2)), [[0.1, 0.2]])


@pytest.mark.parametrize("tile,exc", [(0, ValueError), (-3, ValueError), (2.5, TypeError),
                                      (True, TypeError)])
def test_bad_tile(tile, exc):
    with pytest.raises(exc, match="tile"):
        bs.evaluate_vgh(np.zeros((4, 4, 4, 8)), [[0.1, 0.2, 0.3]], layout="aosoa", tile=tile)


def test_tile_needs_aosoa_and_vice_versa():
    with pytest.raises(ValueError, match="needs tile"):
        bs.evaluate_vgh(np.zeros((4, 4, 4, 8)), [[0.1, 0.2, 0.3]], layout="aosoa")
    with pytest.raises(ValueError, match="only used with layout='aosoa'"):
        bs.evaluate_vgh(np.zeros((4, 4, 4, 8)), [[0.1, 0.2, 0.3]], tile=4)


def test_bad_layout_and_threads():
    with pytest.raises(ValueError, match="layout"):
        bs.evaluate_vgh(np.zeros((4, 4, 4, 8)), [[0.1, 0.2, 0.3]], layout="soaos")
    with pytest.raises(ValueError, match="threads"):
        bs.evaluate_vgh(np.zeros((4, 4, 4, 8)), [[0.1, 0.2, 0.3]], threads=0)
    top = numba.config.NUMBA_NUM_THREADS
    with pytest.raises(ValueError, match=rf"threads = {top + 1} must be in \[1, {top}\]"):
        bs.evaluate_vgh(np.zeros((4, 4, 4, 8)), [[0.1, 0.2, 0.3]], threads=top + 1)
    with pytest.raises(ValueError, match="NUMBA_NUM_THREADS"):
        bs.walker_tiles(np.zeros((4, 4, 4, 8)), [[0.1, 0.2, 0.3]], tile=4, threads=top + 1)
    x = bs.make_inputs("tiny")
    bs.Workload(x, "aosoa", tile=8, threads=top + 1)()      # benchmark paths clamp instead


def test_bad_lengths():
    x = dataclasses.replace(bs.make_inputs("tiny"), lengths=(1.0, 0.0, 1.0))   # Inputs is frozen
    with pytest.raises(ValueError, match="lengths"):
        bs.evaluate_vgh(x, x.positions)


def test_make_inputs_errors_and_sizes():
    x = bs.make_inputs("tiny", seed=0)
    assert x.coefs.shape == (6, 5, 7, 24) and x.positions.shape == (8, 3)
    y = bs.make_inputs("tiny", seed=0)
    assert np.array_equal(x.coefs, y.coefs)
    assert "N=24" in repr(x)
    with pytest.raises(ValueError, match="unknown size"):
        bs.make_inputs("huge")
    with pytest.raises(ValueError, match="unknown size keys"):
        bs.make_inputs({"gird": (4, 4, 4)})
    with pytest.raises(TypeError):
        bs.make_inputs(3)
    with pytest.raises(ValueError, match="dtype"):
        bs.make_inputs({"dtype": "int32"})


def test_validate_messages(ref):
    bad = [r.copy() for r in ref]
    bad[1][2, 3, 1] += 1.0
    with pytest.raises(AssertionError, match=r"grad\[2, 3, 1\]"):
        bs.validate(tuple(bad), ref)
    with pytest.raises(AssertionError, match="shape"):
        bs.validate((ref[0][:1], ref[1], ref[2]), ref)
    with pytest.raises(AssertionError, match="canonical"):
        bs.validate(ref[0], ref)


# ------------------------------------------------------------------ exercise checks
from numba import njit  # noqa: E402

from labkit import check  # noqa: E402
import labkit.bspline.checks  # noqa: E402,F401  (registers the exercises, as check's lookup does)


# Students' answers are defined with def at module level: the checks load a student's function
# from its source and refuse labkit's own kernels (so none of these calls bs.*). The other
# exercises' fake students are in test_bspline_checks.py.
@njit(fastmath=True)
def _my_vgh_soa(coefs, idx, pref, out):
    N = coefs.shape[3]
    for s in range(10):
        for n in range(N):
            out[s, n] = 0.0
    k0, k1, k2, k3 = idx[2, 0], idx[2, 1], idx[2, 2], idx[2, 3]
    c0, c1, c2, c3 = pref[2, 0, 0], pref[2, 0, 1], pref[2, 0, 2], pref[2, 0, 3]
    d0, d1, d2, d3 = pref[2, 1, 0], pref[2, 1, 1], pref[2, 1, 2], pref[2, 1, 3]
    e0, e1, e2, e3 = pref[2, 2, 0], pref[2, 2, 1], pref[2, 2, 2], pref[2, 2, 3]
    for i in range(4):
        ix = idx[0, i]
        a, da, d2a = pref[0, 0, i], pref[0, 1, i], pref[0, 2, i]
        for j in range(4):
            iy = idx[1, j]
            b, db, d2b = pref[1, 0, j], pref[1, 1, j], pref[1, 2, j]
            ab, dab, adb = a * b, da * b, a * db
            d2ab, dadb, ad2b = d2a * b, da * db, a * d2b
            for n in range(N):
                p0 = coefs[ix, iy, k0, n]
                p1 = coefs[ix, iy, k1, n]
                p2 = coefs[ix, iy, k2, n]
                p3 = coefs[ix, iy, k3, n]
                vz = c0 * p0 + c1 * p1 + c2 * p2 + c3 * p3
                dz = d0 * p0 + d1 * p1 + d2 * p2 + d3 * p3
                d2z = e0 * p0 + e1 * p1 + e2 * p2 + e3 * p3
                out[0, n] += ab * vz
                out[1, n] += dab * vz
                out[2, n] += adb * vz
                out[3, n] += ab * dz
                out[4, n] += d2ab * vz
                out[5, n] += dadb * vz
                out[6, n] += dab * dz
                out[7, n] += ad2b * vz
                out[8, n] += adb * dz
                out[9, n] += ab * d2z


@njit(fastmath=True)
def _wrong_soa(coefs, idx, pref, out):
    N = coefs.shape[3]
    for s in range(10):
        for n in range(N):
            out[s, n] = 0.0
    k0, k1, k2, k3 = idx[2, 0], idx[2, 1], idx[2, 2], idx[2, 3]
    c0, c1, c2, c3 = pref[2, 0, 0], pref[2, 0, 1], pref[2, 0, 2], pref[2, 0, 3]
    d0, d1, d2, d3 = pref[2, 1, 0], pref[2, 1, 1], pref[2, 1, 2], pref[2, 1, 3]
    e0, e1, e2, e3 = pref[2, 2, 0], pref[2, 2, 1], pref[2, 2, 2], pref[2, 2, 3]
    for i in range(4):
        ix = idx[0, i]
        a, da, d2a = pref[0, 0, i], pref[0, 1, i], pref[0, 2, i]
        for j in range(4):
            iy = idx[1, j]
            b, db, d2b = pref[1, 0, j], pref[1, 1, j], pref[1, 2, j]
            ab, dab, adb = a * b, da * b, a * db
            d2ab, dadb, ad2b = d2a * b, da * db, a * d2b
            for n in range(N):
                p0 = coefs[ix, iy, k0, n]
                p1 = coefs[ix, iy, k1, n]
                p2 = coefs[ix, iy, k2, n]
                p3 = coefs[ix, iy, k3, n]
                vz = c0 * p0 + c1 * p1 + c2 * p2 + c3 * p3
                dz = d0 * p0 + d1 * p1 + d2 * p2 + d3 * p3
                d2z = e0 * p0 + e1 * p1 + e2 * p2 + e3 * p3
                out[0, n] += ab * vz
                out[1, n] += dab * vz
                out[2, n] += adb * vz
                out[3, n] += ab * dz
                out[4, n] += d2ab * vz
                out[5, n] += dab * dz          # hxy replaced by hxz
                out[6, n] += dab * dz
                out[7, n] += ad2b * vz
                out[8, n] += adb * dz
                out[9, n] += ab * d2z


@njit
def _stub_soa(coefs, idx, pref, out):
    raise NotImplementedError("write the SoA inner loop")


def test_check_soa_inner_loop(monkeypatch):
    monkeypatch.setenv("LABKIT_SPEED", "report")
    r = check.soa_inner_loop(_my_vgh_soa)
    assert r.passed, str(r)
    r = check.soa_inner_loop(_wrong_soa)
    assert r.verdict == "wrong" and "out[5," in r.message
    r = check.soa_inner_loop(_stub_soa)
    assert r.verdict == "not implemented" and "SoA inner loop" in r.message
    monkeypatch.setenv("LABKIT_NATIVE_BITS", "128")
    r = check.soa_inner_loop(_my_vgh_soa)
    assert r.passed, str(r)


def test_run_benchmark_small():
    res = bs.run_benchmark("small", repeat=1, min_time=0.0)
    assert "layouts, cache-resident grid" in res and "nested threading, one walker" in res
    assert res["layouts, seed grid"].ratio("soa", "aos") > 0
    roofs = res["roofs by precision, seed grid"].names      # both precisions, side by side
    for p in ("float64", "float32"):
        assert sum(n.startswith(f"read-bandwidth roof {p}") or n.startswith(f"FMA roof {p}")
                   for n in roofs) == 2
        assert f"soa blocked kernel {p}" in roofs and f"its coefficient loads alone {p}" in roofs
    assert "296 B per VGH" in " ".join(roofs) and "592 B per VGH" in " ".join(roofs)
    with pytest.raises(ValueError, match="size"):
        bs.run_benchmark("enormous")


# ------------------------------------------------------------------ timing helpers
def test_scipy_workload_chunks_cover_the_batch():
    x = bs.make_inputs({"grid": (6, 6, 6), "n": 8, "positions": 12})
    w = bs._ScipyWorkload(x, batch=6, chunk=4)
    parts = w()                                  # positions 0..5 in chunks of 4 and 2
    assert [len(p[0]) for p in parts] == [4, 2]
    whole = bs.ndbspline_vgh(w.spline, w.pos[:6])
    for k in range(10):
        np.testing.assert_allclose(np.concatenate([p[k] for p in parts]), whole[k], rtol=1e-12)
    assert len(w()[0][0]) == 4 and w.step == 2   # the next call: positions 6..11


def test_ndbspline_chunk_sweep_structure_and_errors():
    x = bs.make_inputs({"grid": (6, 6, 6), "n": 8, "positions": 16})
    sw = bs.ndbspline_chunk_sweep(x, chunks=(4, 1, 4), batch=8, repeat=1, min_time=0.0)
    assert sw["chunks"] == [1, 4] and len(sw["scipy"]) == 2
    assert all(v > 0 for v in sw["scipy"]) and sw["soa blocked"] > 0
    assert sw["bytes_per_position"] == 64 * 8 * 8
    with pytest.raises(ValueError, match="chunks"):
        bs.ndbspline_chunk_sweep(x, chunks=(16,), batch=8)
    with pytest.raises(ValueError, match="batch"):
        bs.ndbspline_chunk_sweep(x, batch=100)
    with pytest.raises(TypeError, match="BsplineInputs"):
        bs.ndbspline_chunk_sweep(x.coefs)


def test_workload_rotates_through_positions():
    x = bs.make_inputs({"grid": (6, 6, 6), "n": 16, "positions": 10})
    w = bs.Workload(x, "soa", batch=4)
    assert w.work == 4 * 16 and w.chunks == 2
    first = w.args[1].copy()
    w()
    assert not np.array_equal(w.args[1], first)       # next call: the next 4 positions
    w()
    assert np.array_equal(w.args[1], first)           # and round again
    out = w.outs[0]
    w()
    got = bs.soa_to_canonical(out[:, 0, :, :16])
    bs.validate(got, bs.reference(x, x.positions[0:4]), rtol=1e-12)   # third call: chunk 0


def test_time_interleaved_and_sweeps():
    x = bs.make_inputs({"grid": (6, 6, 6), "n": 64, "positions": 8})
    secs = bs.time_interleaved({"a": bs.Workload(x, "soa"), "b": bs.Workload(x, "aos")},
                               repeat=2, min_time=0.0)
    assert set(secs) == {"a", "b"} and all(v > 0 for v in secs.values())
    with pytest.raises(ValueError, match="clock"):
        bs.time_interleaved({"a": bs.Workload(x, "soa")}, clock="gpu")
    sweep = bs.tile_sweep(x, tiles=(16, 64, 128), repeat=1, min_time=0.0)
    assert set(sweep) == {"soa", 16, 64}              # tiles larger than N are skipped
    rounds = bs.tile_sweep(x, tiles=(16,), repeat=3, min_time=0.0, samples=True)
    assert set(rounds) == {"soa", 16} and all(len(v) == 3 and (v > 0).all() for v in rounds.values())
    per = bs.time_interleaved({"a": bs.Workload(x, "soa")}, repeat=2, min_time=0.0, samples=True)
    assert len(per["a"]) == 2                          # one entry per repeat, for bench.claim
    lay = bs.layout_throughputs(x, tile=16, repeat=1, min_time=0.0)
    assert set(lay) == {"aos", "soa", "aosoa Nb=16"}


def test_machine_limits_are_positive():
    assert bs.measure_bandwidth(mib=4, repeat=2) > 0
    assert bs.measure_fma_rate(repeat=2) > 0


def test_thread_scaling_small():
    r = bs.thread_scaling("small", repeat=2)
    assert set(r) == {"one walker", "walkers x tiles"} and all(v > 0 for v in r.values())
    with pytest.raises(ValueError, match="stat"):
        bs.time_interleaved({"a": lambda: None}, stat="mean")


def test_aligned_buffers():
    for shape, dt in (((3, 5), np.float64), (7, np.float32), ((2, 3, 4, 9), np.float64)):
        a = bs.aligned_empty(shape, dt)
        assert a.ctypes.data % bs.ALIGN == 0 and a.flags.c_contiguous and a.dtype == dt
    z = bs.aligned_zeros((4, 4))
    assert not z.any() and z.ctypes.data % 64 == 0
    x = bs.make_inputs("tiny")
    assert x.coefs.ctypes.data % 64 == 0 and x.tiled(8).ctypes.data % 64 == 0
    assert bs.new_output(24, "soa").ctypes.data % 64 == 0


# ------------------------------------------------------------------ register-blocked kernel
@pytest.mark.parametrize("layout,tile", [("soa", None), ("aosoa", 8), ("aosoa", 5), ("aosoa", 100)])
def test_blocked_matches_reference_and_ndbspline(inp, ref, layout, tile):
    got = bs.evaluate_vgh(inp, inp.positions, layout=layout, tile=tile, blocked=True)
    bs.validate(got, ref, rtol=1e-12)
    bs.validate(got, _oracle(inp.coefs, inp.lengths, inp.positions), rtol=1e-10)


def test_blocked_float32_within_documented_tolerance():
    x = bs.make_inputs({"grid": (8, 9, 10), "n": 40, "positions": 12, "dtype": "float32"}, seed=5)
    got = bs.evaluate_vgh(x, x.positions, layout="soa", blocked=True)
    bs.validate(got, bs.reference(x), rtol=bs.FLOAT32_RTOL)


def test_vgh_soa_blocked_single_position(inp, ref):
    idx, pref = bs.prefactors(inp.positions, inp.grid, inp.lengths)
    out = bs.new_output(inp.n, "soa")
    out[:] = np.nan                              # must overwrite, not add to, old values
    bs.vgh_soa_blocked(inp.coefs, idx[4], pref[4], out)
    bs.validate(bs.soa_to_canonical(out[:, :inp.n][None]), tuple(r[4:5] for r in ref), rtol=1e-12)
    with pytest.raises(ValueError, match="new_output"):
        bs.vgh_soa_blocked(inp.coefs, idx[4], pref[4], np.zeros((10, 3)))
    with pytest.raises(TypeError, match="dtype"):
        bs.vgh_soa_blocked(inp.coefs, idx[4], pref[4], np.zeros((10, inp.n), np.float32))


def test_blocked_bad_arguments(inp):
    with pytest.raises(ValueError, match="layout='soa' or 'aosoa'"):
        bs.evaluate_vgh(inp, inp.positions, layout="aos", blocked=True)
    with pytest.raises(TypeError, match="blocked"):
        bs.evaluate_vgh(inp, inp.positions, blocked="yes")
    with pytest.raises(ValueError, match="blocked"):
        bs.Workload(inp, "soa", walker=True, blocked=True)


def test_blocked_kernel_vectorises():
    from numba import typeof

    from labkit import inspect as li
    x = bs.make_inputs("tiny")
    idx, pref = bs.prefactors(x.positions, x.grid)
    args = (x.coefs.reshape((1,) + x.coefs.shape), idx, pref, np.zeros((8, 1, 10, 24)))
    bs._batch_tiles_blocked(*args)
    rep = li.vector_report(bs._batch_tiles_blocked, tuple(typeof(a) for a in args))
    assert "zmm" in rep.summary() or "ymm" in rep.summary(), rep.summary()


# ------------------------------------------------------------------ the entry point's fast paths
def test_evaluate_vgh_default_is_the_fused_blocked_kernel(inp, ref):
    bs.validate(bs.evaluate_vgh(inp, inp.positions), ref, rtol=1e-12)
    plain = bs.evaluate_vgh(inp, inp.positions, blocked=False)
    fused = bs.evaluate_vgh(inp, inp.positions)
    for a, b in zip(plain, fused):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12 * float(np.max(np.abs(a))))
    for tile in (5, 8, 24):
        bs.validate(bs.evaluate_vgh(inp, inp.positions, layout="aosoa", tile=tile), ref, rtol=1e-12)


@pytest.mark.parametrize("P", [1, 2, 9])
def test_fused_kernel_splits_few_positions_over_threads(inp, ref, P):
    one = bs.evaluate_vgh(inp, inp.positions[:P], threads=1)
    two = bs.evaluate_vgh(inp, inp.positions[:P], threads=2)
    for a, b, r in zip(one, two, ref):
        assert np.array_equal(a, b)
    bs.validate(one, tuple(r[:P] for r in ref), rtol=1e-12)
    assert bs._chunk_for(512, 1, 1, 512, 2) % 8 == 0 and bs._chunk_for(512, 1, 1, 512, 2) < 512
    assert bs._chunk_for(512, 64, 1, 512, 2) == 512
    assert bs._chunk_for(3, 1, 1, 3, 2) == 3


def test_evaluate_vgh_soa_output(inp, ref):
    soa = bs.evaluate_vgh(inp, inp.positions, output="soa")
    assert soa.shape == (len(inp.positions), 10, inp.n) and soa.dtype == inp.coefs.dtype
    assert soa.base is not None                       # the kernel's own buffer, no copy
    bs.validate(bs.soa_to_canonical(soa), ref, rtol=1e-12)
    tiled = bs.evaluate_vgh(inp, inp.positions, layout="aosoa", tile=7, output="soa")
    bs.validate(bs.soa_to_canonical(tiled), ref, rtol=1e-12)
    plain = bs.evaluate_vgh(inp, inp.positions, output="soa", blocked=False)
    bs.validate(bs.soa_to_canonical(plain), ref, rtol=1e-12)
    with pytest.raises(ValueError, match="output must be"):
        bs.evaluate_vgh(inp, inp.positions, output="aos")
    with pytest.raises(ValueError, match="output='soa' needs layout"):
        bs.evaluate_vgh(inp, inp.positions, layout="aos", output="soa")


def test_fused_float32_within_documented_tolerance():
    x = bs.make_inputs({"grid": (6, 6, 6), "n": 40, "positions": 5, "dtype": "float32"})
    ref = bs.reference(x)
    got = bs.evaluate_vgh(x, x.positions)
    assert all(a.dtype == np.float64 for a in got)
    bs.validate(got, ref, rtol=bs.FLOAT32_RTOL)


def test_benchmark_has_entry_point_and_roof_rows():
    names = [t.claim for t in bs.TARGETS]
    assert any(n.startswith("evaluate_vgh(coefs, positions)") for n in names)
    assert any("bandwidth" in n for n in names)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_coefficient_loads_alone_read_the_kernels_rows(dtype):
    """_roofs.read_rows (the roof table's 'coefficient loads alone') sums exactly the 64 rows
    of each position that the VGH kernel reads: against numpy's sum of those rows."""
    from labkit.bspline import _roofs
    from labkit.bspline.kernels import prefactors
    x = bs.make_inputs({"grid": (6, 7, 5), "n": 24, "positions": 11})
    c = x.coefs.astype(dtype)
    idx, _ = prefactors(x.positions, x.grid, x.lengths, dtype=dtype)
    sink = np.zeros(8)
    _roofs.read_rows(c.reshape((1,) + c.shape), idx, sink)
    expected = np.zeros(8)
    for p in range(len(idx)):
        rows = c[np.ix_(idx[p, 0], idx[p, 1], idx[p, 2])]     # (4, 4, 4, N)
        expected[p % 8] += rows.astype(np.float64).sum()
    np.testing.assert_allclose(sink, expected, rtol=1e-5 if dtype == np.float32 else 1e-12)
