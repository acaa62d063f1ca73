"""labkit.bspline: evaluate_vgh's canonical outputs come from a reused block only when nothing
references the previous result any more (layouts.canonical_outputs)."""
import numpy as np
import pytest

from labkit import bspline as bs
from labkit.bspline import layouts


def _inputs():
    return bs.make_inputs({"grid": (6, 5, 7), "n": 24, "positions": 9}, seed=5)


def _address(result):
    return result[0].ctypes.data


def test_a_held_result_is_never_overwritten():
    x = _inputs()
    ref = bs.reference(x)
    first = bs.evaluate_vgh(x.coefs, x.positions)
    kept = [a.copy() for a in first]
    grad_view = first[1][:, :, 0]                       # a view alone keeps the block alive
    del first
    for _ in range(3):
        other = bs.evaluate_vgh(x.coefs, x.positions[::-1])
        bs.validate(other, tuple(r[::-1] for r in ref), rtol=1e-12)
    assert np.array_equal(grad_view, kept[1][:, :, 0])
    held = bs.evaluate_vgh(x.coefs, x.positions)
    nxt = bs.evaluate_vgh(x.coefs, x.positions[::-1])   # held is alive: a different block
    assert not np.shares_memory(held[2], nxt[2])
    for a, b in zip(held, kept):
        assert np.array_equal(a, b)


def test_a_dropped_result_is_reused_and_aligned():
    if not layouts._POOL_OK:
        return
    x = _inputs()
    addr = _address(bs.evaluate_vgh(x.coefs, x.positions))
    res = bs.evaluate_vgh(x.coefs, x.positions)          # the previous result was dropped
    assert _address(res) == addr
    for a in res:
        assert a.ctypes.data % bs.ALIGN == 0 and a.flags.c_contiguous and a.dtype == np.float64
    bs.validate(res, bs.reference(x), rtol=1e-12)
    # the natural loop: the previous result is alive during the call, two blocks alternate
    seen = set()
    for _ in range(4):
        res = bs.evaluate_vgh(x.coefs, x.positions)
        seen.add(_address(res))
    assert len(seen) <= 2
    assert len(layouts._POOL) <= layouts._POOL_SIZE


def test_other_sizes_get_their_own_block():
    x = _inputs()
    a = bs.evaluate_vgh(x.coefs, x.positions)
    b = bs.evaluate_vgh(x.coefs, x.positions[:4])
    assert a[0].shape == (9, 24) and b[0].shape == (4, 24)
    assert not np.shares_memory(a[0], b[0])
    bs.validate(b, tuple(r[:4] for r in bs.reference(x)), rtol=1e-12)


def test_scratch_keeps_its_page_offset_away_from_the_coefficients():
    for avoid in (64, 4096 + 128, 1000 * 64 + 7 * 64):
        v, g, h, buf = layouts.canonical_outputs(3, 40, (2, 1, 10, 48), np.float32, avoid=avoid)
        assert buf.shape == (2, 1, 10, 48) and buf.dtype == np.float32
        assert buf.ctypes.data % bs.ALIGN == 0
        assert (buf.ctypes.data - avoid) % 4096 == layouts._SCRATCH_SKEW
        end = buf.ctypes.data + buf.nbytes
        base = buf.base if buf.base is not None else buf
        assert end <= base.ctypes.data + base.nbytes          # inside the block
        assert not any(np.shares_memory(buf, a) for a in (v, g, h))


def test_streamed_canonical_write_matches_the_scalar_one(monkeypatch):
    # LABKIT_BSPLINE_STREAM=1 and N, tiles, chunks multiples of 8: the non-temporal transposed
    # write (_intrinsics); the default: the scalar last-plane write; both against the reference
    assert not bs._streamable(32, 32, 32, bs.aligned_empty(16))            # off by default
    monkeypatch.setenv("LABKIT_BSPLINE_STREAM", "1")
    for dt, rtol in (("float64", 1e-12), ("float32", bs.FLOAT32_RTOL)):
        x = bs.make_inputs({"grid": (6, 5, 7), "n": 32, "positions": 7, "dtype": dt}, seed=2)
        ref = bs.reference(x)
        for kw in ({}, {"threads": 2}, {"layout": "aosoa", "tile": 16}):
            fast = bs.evaluate_vgh(x.coefs, x.positions, **kw)
            assert bs._streamable(32, 32 if not kw.get("tile") else 16, 8, *fast)
            bs.validate(fast, ref, rtol=rtol)
            fast = [a.copy() for a in fast]
            monkeypatch.setenv("LABKIT_BSPLINE_STREAM", "0")
            slow = bs.evaluate_vgh(x.coefs, x.positions, **kw)
            monkeypatch.setenv("LABKIT_BSPLINE_STREAM", "1")
            for a, b in zip(fast, slow):
                np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * float(np.max(np.abs(b))))
    assert not bs._streamable(29, 29, 29, np.empty(3))
    assert not bs._streamable(32, 32, 32, bs.aligned_empty(16)[1:])


def test_grouped_vector_write_is_the_default_where_n_allows_it():
    # N, tile and chunk multiples of 16 or 32: the last plane per group of G splines, transposed
    # in registers, full-line stores after an L2 prefetch (engine._range_canonical, stream=1);
    # other N: the scalar write. Both against the reference, float64 and float32, 1 and 2 threads.
    a = bs.aligned_empty(64)
    assert bs._write_mode(64, 64, 64, a) == (1, 32)
    assert bs._write_mode(48, 48, 48, a) == (1, 16) and bs._write_mode(64, 16, 16, a) == (1, 16)
    assert bs._write_mode(24, 24, 24, a) == (0, 8) and bs._write_mode(29, 29, 29, a) == (0, 8)
    assert bs._write_mode(64, 64, 64, bs.aligned_empty(16)[1:]) == (0, 8)
    for n in (64, 48, 40):
        for dt, rtol in (("float64", 1e-12), ("float32", bs.FLOAT32_RTOL)):
            x = bs.make_inputs({"grid": (6, 5, 7), "n": n, "positions": 9, "dtype": dt}, seed=3)
            ref = bs.reference(x)
            for kw in ({}, {"threads": 2}, {"threads": 1}, {"layout": "aosoa", "tile": 16},
                       {"layout": "aosoa", "tile": 32}):
                bs.validate(bs.evaluate_vgh(x, x.positions, **kw), ref, rtol=rtol)
            bs.validate(bs.evaluate_vgh(x, x.positions[:1]), tuple(r[:1] for r in ref), rtol=rtol)


@pytest.mark.full      # the host matrix re-executes the solutions as haswell (make test-hosts)
def test_streamed_write_compiles_and_agrees_for_avx2(tmp_path):
    # AVX2 laptops: the <8 x double> transpose and its non-temporal stores lowered to ymm
    import os
    import subprocess
    import sys
    code = ("import numpy as np, labkit.bspline as bs\n"
            "x = bs.make_inputs({'grid': (6, 5, 7), 'n': 32, 'positions': 5}, seed=4)\n"
            "got = bs.evaluate_vgh(x.coefs, x.positions)\n"
            "assert bs._streamable(32, 32, 32, *got)\n"
            "bs.validate(got, bs.reference(x), rtol=1e-12)\n"
            "import os; os.environ['LABKIT_BSPLINE_STREAM'] = '0'\n"     # the grouped write
            "got = bs.evaluate_vgh(x.coefs, x.positions)\n"
            "assert bs._write_mode(32, 32, 32, *got) == (1, 32)\n"
            "bs.validate(got, bs.reference(x), rtol=1e-12)\n")
    env = dict(os.environ, NUMBA_CPU_NAME="haswell", NUMBA_CACHE_DIR=str(tmp_path),
               LABKIT_BSPLINE_STREAM="1")
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]


def test_streamed_transpose_compiles_for_aarch64_from_here():
    # the streamed write's x86 sfence becomes a generic fence when retargeted (dmb on AArch64):
    # labkit.inspect.compile_for shows the entry point's streamed kernel for an ARM core too
    import numba

    from labkit.bspline._intrinsics import _streams_to_canonical8
    from labkit.inspect import compile_for
    from labkit.inspect.retarget import _portable_fences

    @numba.njit
    def one_group(buf, value, grad, hess):          # 8 splines: 10 streams -> canonical
        _streams_to_canonical8(buf, 0, buf.shape[3], value, grad, hess, 0, 1)

    buf = bs.aligned_empty((1, 1, 10, 8))
    buf[...] = np.arange(80.0).reshape(buf.shape)
    v, g, h = bs.aligned_empty((1, 8)), bs.aligned_empty((1, 8, 3)), bs.aligned_empty((1, 8, 3, 3))
    one_group(buf, v, g, h)
    assert np.array_equal(v[0], buf[0, 0, 0]) and np.array_equal(g[0, :, 1], buf[0, 0, 2])
    assert np.array_equal(h[0, :, 0, 1], buf[0, 0, 5]) and np.array_equal(h[0, :, 1, 0], buf[0, 0, 5])
    asm = compile_for(one_group, "neoverse-v1", one_group.signatures[0], features="+sve", full=True)
    assert "dmb" in asm and "sfence" not in asm
    ir = ("  tail call void @llvm.x86.sse.sfence() #4\n  ret void\n}\n"
          "declare void @llvm.x86.sse.sfence() #5\n")
    assert _portable_fences(ir) == "  fence seq_cst\n  ret void\n}\n\n"
