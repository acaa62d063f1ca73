"""labkit.alignment's 8-bit lanes (``_int8``): the int8 difference kernel equals the int16 kernel
and the plain-Python Gotoh on random, edge and ragged batches; ``fits_int8``'s bound holds on the
true DP differences and is tight (at the bound exact, one beyond wrong — so ``align`` falls back);
the same scores at 256-bit vectors; 64 int8 lanes per instruction on AVX-512 hosts. No parasail
needed (these run on AArch64 too)."""
import os
import subprocess
import sys

import numba
import numpy as np
import pytest

from labkit import alignment as A
from labkit.alignment import _int8, engine
from labkit.alignment.reference import _gotoh_loops
from tests.tooling import compiled_signatures

SC = A.Scoring()
#: at the int8 bound (highest or lowest value exactly 127 / −128) and one step beyond it
AT_BOUND = [A.Scoring(27, -4, -75, -25), A.Scoring(50, -50, -64, 0)]
BEYOND = [A.Scoring(28, -4, -75, -25), A.Scoring(50, -50, -65, 0), A.Scoring(100, -4, -20, -10)]


def _oracle(inp, sc):
    """The plain-Python three-matrix Gotoh (``reference._gotoh_loops``), pair by pair."""
    mt, mm, go, ge = sc.ints()
    return np.array([_gotoh_loops(list(inp.seqs1[p, :inp.lens1[p]]),
                                  list(inp.seqs2[p, :inp.lens2[p]]), mt, mm, go, ge)
                     for p in range(inp.pairs)], np.int32)


def _batch(n, len1, len2=None, *, vary=False, seed=0, alphabet=5):
    spec = {"pairs": n, "length": len1, "length2": len2 or len1, "alphabet": alphabet}
    if vary:
        spec["min_length"] = 1
    return A.make_inputs(spec, seed=seed)


def _kernels(inp, sc):
    args = (inp.seqs1, inp.lens1, inp.seqs2, inp.lens2, sc)
    return {"int8 serial": engine.align_int8_serial(*args), "int8 threads": engine.align_int8(*args),
            "int16 serial": engine.align_shifted_serial(*args)}


def test_fits_int8_bound():
    assert A.fits_int8(SC) and _int8.int8_bounds(SC) == (-20, 18)
    assert all(A.fits_int8(sc) for sc in AT_BOUND) and not any(A.fits_int8(sc) for sc in BEYOND)
    assert {_int8.int8_bounds(sc)[1] for sc in AT_BOUND[:1] + BEYOND[:1]} == {127, 128}
    assert {_int8.int8_bounds(sc)[0] for sc in AT_BOUND[1:] + BEYOND[1:2]} == {-128, -130}
    # opening cheaper than extending (q < 0): not derived, never int8
    assert _int8.int8_bounds(A.Scoring(6, -4, -1, -3)) is None
    assert not A.fits_int8(A.Scoring(6, -4, -1, -3))


def _true_values(a, b, sc):
    """(lowest, highest) of every value the int8 kernel compares or stores — U, V, A', B', z',
    z' − q, s + 2e — from full int64 Gotoh matrices (independent of the kernel)."""
    mt, mm, go, ge = sc.ints()
    e, q, n, m = -ge, ge - go, len(a), len(b)
    neg = -(1 << 40)
    H = np.full((n + 1, m + 1), neg, np.int64)
    Fv = np.full((n + 2, m + 1), neg, np.int64)      # best ending in a vertical gap
    Eh = np.full((n + 1, m + 2), neg, np.int64)      # best ending in a horizontal gap
    H[0, 0] = 0
    H[1:, 0] = go + np.arange(n) * ge
    H[0, 1:] = go + np.arange(m) * ge
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            Fv[i, j] = max(Fv[i - 1, j] + ge, H[i - 1, j] + go)
            Eh[i, j] = max(Eh[i, j - 1] + ge, H[i, j - 1] + go)
            H[i, j] = max(H[i - 1, j - 1] + (mt if a[i - 1] == b[j - 1] else mm), Fv[i, j],
                          Eh[i, j])
    for j in range(1, m + 1):                         # the candidates the last row/column pass on
        Fv[n + 1, j] = max(Fv[n, j] + ge, H[n, j] + go)
    for i in range(1, n + 1):
        Eh[i, m + 1] = max(Eh[i, m] + ge, H[i, m] + go)
    vals = [mt + 2 * e, mm + 2 * e]
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            z = H[i, j] - H[i - 1, j - 1] + 2 * e
            vals += [H[i, j] - H[i - 1, j] + e, H[i, j] - H[i, j - 1] + e, z, z - q,
                     Fv[i + 1, j] - H[i, j - 1] + 2 * e, Eh[i, j + 1] - H[i - 1, j] + 2 * e]
    return min(vals), max(vals)


@pytest.mark.parametrize("sc", [SC, A.Scoring(1, -1, -2, -2), A.Scoring(5, -4, -3, -3),
                                A.Scoring(-1, -3, -5, -1), A.Scoring(2, 3, -7, -2)] + AT_BOUND)
def test_int8_bounds_hold_on_the_true_differences(sc):
    lo, hi = _int8.int8_bounds(sc)
    rng = np.random.default_rng(7)
    cases = [("ACGTACGTAC", "ACGTACGTAC"), ("AAAAAAAA", "CCCCCCCC"), ("ACGTTGCA", "AC"),
             ("A", "ACGTACGTACGT")]
    for letters in ("ACGTN", "AC"):
        for _ in range(8):
            cases.append(tuple("".join(rng.choice(list(letters), int(rng.integers(1, 14))))
                               for _ in range(2)))
    for s1, s2 in cases:
        got_lo, got_hi = _true_values(A.encode(s1), A.encode(s2), sc)
        assert lo <= got_lo and got_hi <= hi, (s1, s2, (got_lo, got_hi), (lo, hi))


@pytest.mark.parametrize("n,len1,len2,vary", [
    (1, 1, 1, False), (3, 1, 9, False), (5, 9, 1, False), (64, 37, 37, False), (63, 50, 41, False),
    (65, 16, 70, False), (130, 40, 40, True), (200, 35, 60, True), (129, 2, 3, True),
])
def test_int8_kernel_equals_int16_and_the_oracle(n, len1, len2, vary):
    for seed, sc in enumerate((SC, A.Scoring(1, -1, -2, -2), A.Scoring(2, 3, -7, -2))):
        inp = _batch(n, len1, len2, vary=vary, seed=seed)
        ref = _oracle(inp, sc)
        for name, got in _kernels(inp, sc).items():
            assert np.array_equal(got, ref), name


@pytest.mark.parametrize("sc", AT_BOUND)
def test_int8_exact_at_the_bound(sc):
    for seed, alphabet in ((1, 5), (2, 2)):
        inp = _batch(150, 40, 30, vary=True, seed=seed, alphabet=alphabet)
        ref = _oracle(inp, sc)
        for name, got in _kernels(inp, sc).items():
            assert np.array_equal(got, ref), name
        assert np.array_equal(A.align(*inp.strings(), sc, threads=1), ref)


@pytest.mark.parametrize("sc", BEYOND)
def test_beyond_the_bound_align_falls_back_to_int16(sc, monkeypatch):
    inp = _batch(200, 40, vary=True, seed=3)
    ref = _oracle(inp, sc)
    wrong = engine.align_int8_serial(inp.seqs1, inp.lens1, inp.seqs2, inp.lens2, sc)
    assert not np.array_equal(wrong, ref)        # the bound is tight: int8 would overflow here
    calls = []
    monkeypatch.setattr(engine, "align_int8_serial", lambda *a: calls.append(a))
    monkeypatch.setattr(engine, "align_int8", lambda *a: calls.append(a))
    rows1 = [inp.seqs1[p, :inp.lens1[p]] for p in range(inp.pairs)]
    rows2 = [inp.seqs2[p, :inp.lens2[p]] for p in range(inp.pairs)]
    for threads in sorted({1, min(2, numba.config.NUMBA_NUM_THREADS)}):
        assert np.array_equal(A.align(*inp.strings(), sc, threads=threads), ref)
        assert np.array_equal(A.align(rows1, rows2, sc, threads=threads), ref)
    assert not calls


def test_align_takes_the_int8_kernel_and_keeps_its_scores(monkeypatch):
    inp = _batch(150, 30, 45, vary=True, seed=4)
    ref = _oracle(inp, SC)
    s1, s2 = inp.strings()
    rows1 = [inp.seqs1[p, :inp.lens1[p]] for p in range(inp.pairs)]
    rows2 = [inp.seqs2[p, :inp.lens2[p]] for p in range(inp.pairs)]
    eq = _batch(130, 24, 40, seed=5)
    eq_ref = _oracle(eq, SC)
    for threads in sorted({1, min(2, numba.config.NUMBA_NUM_THREADS)}):
        assert np.array_equal(A.align(s1, s2, threads=threads), ref)
        assert np.array_equal(A.align(rows1, rows2, threads=threads), ref)
        assert np.array_equal(A.align(eq.seqs1, eq.seqs2, threads=threads), eq_ref)
    calls = []
    real = engine.align_int8_serial
    monkeypatch.setattr(engine, "align_int8_serial", lambda *a: calls.append(1) or real(*a))
    assert np.array_equal(A.align(rows1, rows2, threads=1), ref) and calls


def test_empty_sequences_still_refused():
    with pytest.raises(ValueError, match="empty"):
        A.align(["", "A"], ["A", "C"])


@pytest.mark.full     # ≈ 17 s of compilation in an empty cache; the default tier proves the kernel on
                      # the host (test_int8_kernel_equals_int16_and_the_oracle), make test-hosts runs
                      # that test and test_int8_sweep_runs_on_int8_vectors natively as haswell and
                      # icelake-server (tools/hosts/tests-x86.txt): 256-bit int8 code
def test_int8_same_scores_at_256_bit_vectors():
    """``LABKIT_VECTOR_BITS=256`` (what an AVX2 or 128/256-bit host compiles): the same scores."""
    inp = _batch(100, 33, 70, vary=True, seed=6)
    here = engine.align_int8_serial(inp.seqs1, inp.lens1, inp.seqs2, inp.lens2, SC)
    code = ("import sys, numpy as np; from labkit import alignment as A; from labkit.alignment "
            "import engine; i = A.make_inputs({'pairs': 100, 'length': 33, 'length2': 70, "
            "'alphabet': 5, 'min_length': 1}, seed=6); sys.stdout.write(' '.join(map(str, "
            "engine.align_int8_serial(i.seqs1, i.lens1, i.seqs2, i.lens2, A.Scoring()))))")
    env = dict(os.environ, LABKIT_VECTOR_BITS="256")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout
    assert [int(v) for v in out.split()] == list(here) == list(_oracle(inp, SC))


def test_int8_sweep_runs_on_int8_vectors():
    from labkit import inspect as lk_inspect
    from labkit.jit import vector_bits

    T = np.zeros((8, 64), np.uint8)
    R = np.zeros((9, 64), np.int8)
    S = np.zeros((8, 64), np.int8)
    args = (T, T[0], T[1], T[2], T[3], R, R.copy(), *S, np.int8(8), np.int8(-2), np.int8(10))
    _int8._sweep4(*args)
    rep = lk_inspect.vector_report(_int8._sweep4, args)
    assert rep.vectorized and any("smax" in op and "x i8>" in op for op in rep.ir_vector_ops)
    if vector_bits() == 512:                      # AVX-512 hosts: 64 lanes per instruction
        asm = lk_inspect.asm(_int8._sweep4, _int8._sweep4.signatures[0])
        for op in ("vpmaxsb", "vpsubb"):
            assert any(op in line and "zmm" in line for line in asm.splitlines()), op


@pytest.mark.parametrize("dtype", [np.int16, np.int8])
def test_alu_roof_chains_compute_independent_vector_chains(dtype):
    """The ALU roofs' microbenchmark (``bench._int16_chains`` / ``_int8_chains``): each of its four
    rows is the chain t = max(t + v, c) eight times per pass, and LLVM vectorises it on the lanes
    it names (smax on i16 / i8 vectors) — four independent chains per element, so the measured
    rate is the ALUs', not one chain's latency (a single chain per element let the int8 kernel
    read 108 % of its "roof" on a Zen 5 core)."""
    from labkit import inspect as lk_inspect
    from labkit.alignment import bench as ab
    from labkit.jit import njit as wide_njit

    chains = ab._int16_chains if dtype is np.int16 else ab._int8_chains
    kern = wide_njit(chains)
    y = np.tile(np.array([[0, 5, -3, 9], [1, -7, 2, 0], [-2, 3, 4, -6], [7, 7, -7, 1]], dtype),
                (1, 16))
    x = np.tile(np.array([-1, 2, -3, 0], dtype), 16)
    want = y.astype(np.int64)
    for _ in range(8 * 3):                  # reps=3 passes of 8 steps; stays within int8
        want = np.maximum(want + x, -7)
    got = y.copy()
    kern(got, x, 3)
    assert ab._CHAINS == got.shape[0] and ab._OPS_PER_CHAIN == 16
    assert (got == want.astype(dtype)).all()
    bits = "i16>" if dtype is np.int16 else "i8>"
    rep = lk_inspect.vector_report(kern, (got, x, 3))
    assert rep.vectorized and any("smax" in op and bits in op for op in rep.ir_vector_ops)


_ONE_SIGNATURE = """
import numpy as np
from labkit import alignment as A
from labkit.alignment import _tiles, engine
g = np.random.default_rng(0)
def r(n, L):
    return ["".join(g.choice(list("ACGT"), L)) for _ in range(n)]
# from str: near-equal lengths (one 2-D copy), one query, ragged (one joined buffer)
for a, b in [(r(70, 40), r(70, 40)), (r(70, 40), r(1, 40) * 70), (r(35, 9) + r(35, 90), r(70, 40))]:
    A.align(a, b)
    A.align(a, b, threads=1)
c = np.zeros((70, 40), np.uint8)
n = np.full(70, 40, np.int64)
for f in (engine.align_int8_serial, engine.align_int8, engine.align_shifted_serial,
          engine.align_shifted):
    f(c, n, c, n, A.Scoring())
A.align(c, c)
A.align(c, c, threads=1)
for f in (engine._align_tile, engine._align_spans_serial, engine._align_spans_parallel,
          engine._padded, _tiles._fill):
    print(f.__name__, len(f.signatures), sum("Literal" in str(s) for s in f.signatures))
"""


@pytest.mark.full     # ≈ 20 s of compilation in an empty cache (a loaded caller hides its callees)
def test_the_tile_drivers_compile_once_per_kind_of_input(tmp_path):
    """Every path into the tiles (lists of str, one query, ragged, code arrays; int8 or int16;
    threads or not) shares the drivers' signatures: one for read-only letters, one for codes —
    no ``Literal[bool]`` variants (each would cost seconds of a notebook's first run)."""
    counts = compiled_signatures(_ONE_SIGNATURE, tmp_path)
    assert counts == {"_align_tile": (2, 0), "_align_spans_serial": (2, 0),
                      "_align_spans_parallel": (2, 0), "_padded": (1, 0), "_fill": (2, 0)}, counts
