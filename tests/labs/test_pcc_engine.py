"""Tests for labkit.pcc.engine (the fast path): aligned padded rows and packed panels, the fused
standardisation, both engines (the 6×4 row block; the 8×24 panel micro-kernel where
``panels.ENABLED``) over several k-blocks with odd sizes against np.corrcoef, the in-block mirror,
and the hot loops' code (full-width FMAs, no spills) on AVX-512 hosts."""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

from labkit import pcc
from labkit.jit import vector_bits
from labkit.pcc import engine, panels


@pytest.fixture(params=["panels", "rows"])
def path(request, monkeypatch):
    """Both engines in this process: the panel micro-kernel (where it runs here) and the row
    block, which every host without AVX-512 runs (``panels.ENABLED = False``)."""
    if request.param == "panels" and not panels.ENABLED:
        pytest.skip("no AVX-512 here: the entry points run the row engine only")
    monkeypatch.setattr(panels, "ENABLED", request.param == "panels")
    return request.param


def _corrcoef(X):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.atleast_2d(np.corrcoef(X))


@pytest.mark.parametrize("n, l", [(1, 3), (7, 8), (13, 1037), (50, 9)])
def test_engine_rows_aligned_and_padded(n, l):
    Zp = engine.engine_rows(n, l)
    assert Zp.ctypes.data % 64 == 0 and Zp.flags.c_contiguous
    assert Zp.shape == (n, -(-l // engine.LANE) * engine.LANE)
    X = np.random.default_rng(l).random((n, l))
    X[0] = 5.0                                   # a constant row
    const = np.empty(n, dtype=np.bool_)
    Zp[:] = np.nan
    engine.standardize_into(X, Zp, const)
    assert const[0] and not const[1:].any()
    assert not np.isnan(Zp).any() and (Zp[:, l:] == 0).all() and (Zp[0] == 0).all()
    Z, c = pcc.standardize(X)                    # the lesson's standardize: the same bits
    assert np.array_equal(Z, Zp[:, :l]) and np.array_equal(c, const)
    assert engine.as_engine_rows(Zp) is Zp       # already engine rows: no copy


@pytest.mark.parametrize("n, l", [(1, 3), (9, 20), (13, 1037), (50, 9)])
def test_panels_packed_and_same_bits(n, l):
    Zp = panels.panel_rows(n, l)
    assert Zp.ctypes.data % 64 == 0 and Zp.shape == (-(-n // 8), l, 8)
    X = np.random.default_rng(l).random((n, l))
    X[0] = 5.0                                   # a constant row
    const = np.empty(n, dtype=np.bool_)
    Zp[:] = np.nan
    panels.standardize_panels(X, Zp, const)
    Z, c = pcc.standardize(X)
    rows = Zp.transpose(0, 2, 1).reshape(-1, l)  # panel p, lane r → row 8p + r
    assert np.array_equal(rows[:n], Z) and (rows[n:] == 0).all() and np.array_equal(c, const)
    Zq, nq = panels.as_panels(Z)
    assert nq == n and np.array_equal(Zq, Zp)


@pytest.mark.parametrize("n, l", [(203, 1037), (61, 513), (130, 1024), (97, 1500)])
def test_several_k_blocks_odd_sizes(n, l, path):
    """l > engine.KB: the sums are split over k-blocks and the last one clips and mirrors."""
    X = np.random.default_rng(n + l).normal(size=(n, l))
    ref = _corrcoef(X)
    for tile in (pcc.DEFAULT_TILE, 96, 13, 7):
        R = pcc.pearson_allpairs(X, tile=tile)
        pcc.validate(R, ref)
        assert np.array_equal(R, R.T)
    Z = pcc.standardize(X)[0][:, :]              # a plain (unaligned, unpadded) Z
    for kb in (8, 100, 512, 4096):
        for schedule in pcc.SCHEDULES:
            R, _ = pcc.pcc_threads(Z, 24, schedule, kb=kb)
            pcc.validate(R, ref)
            assert np.array_equal(R, R.T)


def test_pcc_threads_bad_kb():
    Z = pcc.standardize(np.random.default_rng(0).random((10, 5)))[0]
    for kb in (0, -3, 2.5, "8"):
        with pytest.raises(ValueError):
            pcc.pcc_threads(Z, kb=kb)
    with pytest.raises(ValueError):
        pcc.pcc_threads(Z[0])


@pytest.mark.parametrize("n", [64, 61])
def test_aligned_R_non_temporal_and_plain_stores_agree(n, path):
    """R from pearson_allpairs starts on a 64-byte line; n a multiple of 8 takes the micro-kernel's
    non-temporal stores, other n the plain ones: both exact and symmetric, and the same bits as
    the buffer path (plain stores) where they overlap."""
    X = np.random.default_rng(n).normal(size=(n, 300))
    R = pcc.pearson_allpairs(X, tile=16)
    assert R.ctypes.data % 64 == 0 and R.flags.c_contiguous and R.shape == (n, n)
    pcc.validate(R, _corrcoef(X))
    assert np.array_equal(R, R.T)
    i, j, r = pcc.correlated_pairs(X, 1e-9, tile=16)
    assert np.array_equal(r, R[i, j])


@pytest.mark.parametrize("n", [150, 147])
def test_buffer_tiles_match_the_matrix(n, path):
    """tiles_to_buffer (no mirror, no clip, tile-local cells) and pearson_allpairs: the same bits."""
    X = np.random.default_rng(3).random((n, 700))
    tile = 48
    Z, _ = pcc._standardized_rows(X, 1, tile)
    assert isinstance(Z, tuple) == (path == "panels")
    m, T = pcc.n_tiles(n, tile)
    buf = np.zeros((T, tile, tile))
    engine.tiles_to_buffer(Z, tile, pcc.kb_for(Z), 0, T, buf)
    R = pcc.pearson_allpairs(X, tile=tile)
    for J in range(T):
        yt, xt = pcc.tile_coords(n, tile, J)
        i0, j0 = yt * tile, xt * tile
        for i in range(i0, min(n, i0 + tile)):
            for j in range(max(i, j0), min(n, j0 + tile)):
                assert min(1.0, max(-1.0, buf[J, i - i0, j - j0])) == R[i, j]   # R is clipped


@pytest.mark.skipif(not vector_bits(), reason="no AVX-512 here: the engine is plain numba.njit")
def test_hot_loop_full_width_no_spills():
    from labkit import inspect as lk
    Z = engine.engine_rows(12, 64)
    Z[:] = 1.0
    out = np.zeros((12, 12))
    args = (Z, 0, 12, 0, 12, False, engine.KB, out, 0, 0, True)
    engine.block_tile(*args)
    asm = str(lk.asm(engine.block_tile, args))
    assert not re.search(r"\b(Spill|Reload)\b", asm)
    blocks = re.split(r"\n\.LBB\S+:", asm)
    hot = max(blocks, key=lambda b: b.count("vfmadd"))
    fma = re.findall(r"vfmadd\w*pd\s+[^\n]*", hot)
    steps, rest = divmod(len(fma), engine.MR * engine.NR)   # LLVM may unroll the k loop
    assert steps >= 1 and rest == 0, len(fma)
    assert all("zmm" in f for f in fma)
    loads = len(re.findall(r"vmovupd\s+\(", hot)) + sum("(" in f for f in fma)
    assert loads == steps * (engine.MR + engine.NR)


@pytest.mark.skipif(not panels.ENABLED, reason="no AVX-512 here: the panel engine does not run")
def test_panel_micro_kernel_registers():
    """The 8×24 micro-kernel's k loop keeps its 8×NV accumulators in registers: no spills, every
    FMA a zmm FMA, NV vector loads and 8 broadcasts per k step — LLVM may unroll k (the count is
    then a multiple: 48 FMAs for two k steps on znver5), so the test states the ratios, not one
    schedule."""
    from labkit import inspect as lk
    Zp, _ = panels.as_panels(np.ones((32, 64)))
    out = np.zeros((32, 32))
    args = (Zp, 0, 0, 3, 0, 64, out, 0, 8, True, True)
    asm = str(lk.asm(panels._ukernel, args))
    assert not re.search(r"\b(Spill|Reload)\b", asm)
    hot = max(re.split(r"\n\.LBB\S+:", asm), key=lambda b: b.count("vfmadd"))
    fma = re.findall(r"vfmadd\w*pd\s+[^\n]*", hot)
    steps, rest = divmod(len(fma), 8 * panels.NV)       # k steps in one pass of the hot block
    assert steps >= 1 and rest == 0, len(fma)
    assert all("zmm" in f for f in fma)
    loads = len(re.findall(r"vmov[au]pd\s+-?(?:0x)?\w*\(", hot)) + sum("{1to8}" not in f and "(" in f for f in fma)
    broadcasts = len(re.findall(r"vbroadcastsd\s+", hot)) + sum("{1to8}" in f for f in fma)
    assert (loads, broadcasts) == (steps * panels.NV, steps * 8)
    # the last k-block's stores: the 8×24 block and its transpose, 512-bit, non-temporal when
    # aligned (plain stores otherwise), no scalar stores of single cells
    assert len(re.findall(r"vmovntpd\s+%zmm", asm)) >= 2 * 8 * panels.NV
    assert not re.search(r"vmovsd\s+%xmm\d+, ", asm)


@pytest.mark.parametrize("n", [40, 37])
def test_spare_buffer_reused_and_overwritten(n, path):
    """pearson_allpairs standardises into the buffer its last call kept when the shape matches:
    a second X of that shape (a constant row where the first had none, so the padding and the
    zeros are rewritten) gives its own corrcoef; another shape makes a new buffer; released →
    none kept. Results never alias the buffer."""
    engine.release_spare()
    g = np.random.default_rng(5)
    X1, X2 = g.random((n, 61)), g.normal(size=(n, 61)) * 1e3
    X2[3] = 2.5
    R1 = pcc.pearson_allpairs(X1, tile=16)
    (kept,) = engine._spare
    R1c = R1.copy()
    with pytest.warns(RuntimeWarning, match="constant row"):
        R2 = pcc.pearson_allpairs(X2, tile=16)
    assert engine._spare[0] is kept                        # the same buffer, taken and kept again
    expected = _corrcoef(X2)
    pcc.validate(R2, expected)
    assert np.array_equal(R1, R1c)                         # the first result untouched
    pcc.validate(pcc.pearson_allpairs(X1, tile=16), _corrcoef(X1))
    pcc.pearson_allpairs(X1[:, :40], tile=16)              # another shape: a new buffer
    assert engine._spare[0] is not kept and engine._spare[0].shape != kept.shape
    assert not any(np.shares_memory(R2, b) for b in engine._spare)
    engine.release_spare()
    assert engine._spare == []
    big = engine.SPARE_MAX_BYTES
    try:
        engine.SPARE_MAX_BYTES = 0                         # too big to keep: nothing kept
        pcc.pearson_allpairs(X1, tile=16)
        assert engine._spare == []
    finally:
        engine.SPARE_MAX_BYTES = big
