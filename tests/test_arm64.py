"""What must hold on AArch64: the hardware description, numba's native vectors (NEON, or SVE when
numba targets it) and their results at this vector length, retargeting from ARM to every ISA, the
check gates at the native 128-bit width (every reference solution passes, no override), the labs'
kernels on small inputs, and a notebook executed in a Jupyter kernel.

On x86 these tests skip (reason printed); ``tools/arm64/job.sh`` runs them on an emulated AArch64
(qemu user mode) twice: NEON (``QEMU_CPU=max,sve=off``) and SVE (``NUMBA_CPU_NAME=neoverse-v1
NUMBA_CPU_FEATURES=+sve``, ``QEMU_CPU=max,sve-default-vector-length=32``: 256-bit vectors).
On a real ARM machine (Graviton, Apple silicon under Linux) they run as they are.
"""
import os
import platform
import re
from pathlib import Path

import numba
import numpy as np
import pytest

from labkit import hardware
from labkit import inspect as li

from test_inspect import add as _add, fsum_fast as _fsum   # an elementwise add, a fastmath sum

ROOT = Path(__file__).resolve().parent.parent
ARM = platform.machine().lower() in ("aarch64", "arm64")
# numba compiles SVE code only when told to (NUMBA_CPU_FEATURES is used verbatim)
SVE = "+sve" in os.environ.get("NUMBA_CPU_FEATURES", "")
# the vector length the job gave qemu (bits), when it set one
EXPECT_SVE_BITS = int(os.environ.get("LABKIT_ARM64_SVE_BITS", "0") or 0)

pytestmark = pytest.mark.skipif(not ARM, reason=f"AArch64 only (this is {platform.machine()}): "
                                                "run tools/arm64/job.sh to test under qemu")


@pytest.fixture(autouse=True)
def _native(monkeypatch):
    monkeypatch.delenv("LABKIT_NATIVE_BITS", raising=False)  # the real width, never a simulation


# ------------------------------------------------------------------ what the machine is

def test_hardware_describes_aarch64(capsys):
    hw = hardware.info(refresh=True)
    assert hw.arch == "aarch64" and hw.features["neon"] and hw.has("asimd") and hw.has("AdvSIMD")
    assert set(hw.features) == set(hardware.FEATURES) == set(hardware.MEANING)
    assert not hw.has("avx2") and not hw.has("sse4.2")
    assert hw.cpu and hw.logical_cores >= 1 and "NEON" in hw.summary()
    if EXPECT_SVE_BITS:
        assert hw.features["sve"] and hw.sve_bits == EXPECT_SVE_BITS, str(hw)
    elif os.environ.get("QEMU_CPU", "").endswith("sve=off"):
        assert not hw.features["sve"] and hw.sve_bits is None
    assert hardware.native_vector_bits() == 128 == hardware.native_vector_bits(preferred=True)
    assert hardware.native_lanes(np.int16) == 8 and hardware.native_lanes("float64") == 2
    assert hardware.doctor(["--no-smoke"]) == 0
    out = capsys.readouterr().out
    assert "ISA features (aarch64)" in out and "neon" in out and "compile_for" in out


def test_doctor_smoke_runs_a_parallel_kernel(capsys):
    from labkit.hardware import _doctor

    good, msg = _doctor._check_numba()
    assert good, msg


# ------------------------------------------------------------------ numba's vectors here

@numba.njit
def _imax16(a, b, out):
    for i in range(a.shape[0]):
        out[i] = max(a[i], b[i]) - np.int16(1)


@numba.njit
def _popcount(words):
    n = 0
    for i in range(words.shape[0]):
        w = words[i]
        w = w - ((w >> np.uint64(1)) & np.uint64(0x5555555555555555))
        w = (w & np.uint64(0x3333333333333333)) + ((w >> np.uint64(2)) & np.uint64(0x3333333333333333))
        w = (w + (w >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
        n += (w * np.uint64(0x0101010101010101)) >> np.uint64(56)
    return n


def test_numba_emits_neon_or_sve_and_the_results_are_right():
    rng = np.random.default_rng(0)
    for n in (0, 1, 3, 7, 8, 15, 16, 17, 31, 33, 67, 1000):   # every tail length of 128/256/512-bit
        a, b = rng.random(n), rng.random(n)
        out = np.empty(n)
        _add(a, b, out)
        assert np.array_equal(out, a + b), n
        assert abs(_fsum(a) - a.sum()) <= 1e-12 * max(1.0, n)
        x, y = (rng.integers(-2**15 + 1, 2**15, n).astype(np.int16) for _ in range(2))
        o16 = np.empty(n, np.int16)
        _imax16(x, y, o16)
        assert np.array_equal(o16, np.maximum(x, y) - 1), n
        w = rng.integers(0, 2**63, n, dtype=np.uint64)
        assert _popcount(w) == int(np.unpackbits(w.view(np.uint8)).sum()), n
    rep = li.vector_report(_add)
    assert rep.vectorized and rep.arch == "aarch64", str(rep)
    if SVE:
        assert rep.scalable and rep.registers["z"] > 0, str(rep)
    else:
        assert rep.registers["v"] > 0 and not rep.scalable and rep.max_width_bits == 128, str(rep)
    text = li.asm(_popcount)  # NEON counts bytes (cnt v.16b + addp/uaddlv), SVE whole lanes (cnt z.d)
    assert re.search(r"\bcnt\s+(v\d+\.(16|8)b|z\d+\.[bd])\b", text), text[-2000:]


def test_compile_for_from_arm_to_every_isa():
    x = np.ones(8)
    _add(x, x, x.copy())
    assert li.vector_report(_add, cpu="znver4").max_width_bits == 512
    assert li.vector_report(_add, cpu="haswell").max_width_bits == 256
    assert li.vector_report(_add, cpu="x86-64").max_width_bits == 128
    m1 = li.vector_report(_add, cpu="apple-m1")
    assert m1.arch == "aarch64" and m1.registers["v"] > 0 and not m1.scalable
    v1 = li.vector_report(_add, cpu="neoverse-v1", features="+sve")
    assert v1.scalable and v1.registers["z"] > 0
    assert re.search(r"\bfadd\s+v\d+\.2d", li.compile_for(_add, "apple-m1"))


# ------------------------------------------------------------------ checks at the native width

# one exercise per lab whose check reads the native vector width or int16 lanes (the other checks
# do not depend on the ISA; emulation is slow); LABKIT_ARM64_ALL_SOLUTIONS=1 (e.g. on a real ARM
# machine, where it is fast) checks every one
_ISA = {"colsum", "transposed_inner", "int16_lanes", "soa_inner_loop", "popcount"}


def _solutions():
    from labkit.check.falsefail import solutions

    slow = {"tile_size", "pick_tile"}   # measurement-only choices: no technique gate
    every = os.environ.get("LABKIT_ARM64_ALL_SOLUTIONS") == "1"
    return [s for s in solutions() if s.name not in slow and (every or s.name in _ISA)]


def test_gates_read_the_native_width():
    from labkit.check import gates

    assert gates.native_bits() == 128 and gates.native_lanes("int16") == 8
    assert gates.native_lanes("float64") == 2


@pytest.mark.parametrize("sol", _solutions() if ARM else [], ids=lambda s: s.name)
def test_reference_solution_passes_at_native_width(sol, monkeypatch):
    from labkit import check

    monkeypatch.setenv("LABKIT_SPEED", "report")
    r = check.run_source(sol.name, sol.source, sol.imports, function=sol.function,
                         constants=sol.constants)
    assert r.passed, str(r)
    if "native_bits" in r.details:
        assert r.details["native_bits"] == 128, r.details


# ------------------------------------------------------------------ the labs' kernels, small inputs

def test_alignment_kernels_small():
    # tests/labs/test_alignment.py needs parasail (no aarch64 wheel): the kernels against the
    # lab's own reference here, on equal and varying lengths
    from labkit import alignment as A

    for spec in ({"pairs": 17, "length": 40}, {"pairs": 9, "length": 30, "length2": 50, "min_length": 1}):
        inp = A.make_inputs(spec, seed=3)
        ref = A.reference(inp)
        s1, s2 = inp.strings()
        for method in ("auto", "transposed", "scalar"):
            A.validate(A.align(s1, s2, inp.scoring, method=method), ref)
        A.validate(A.align_batched(inp.seqs1, inp.lens1, inp.seqs2, inp.lens2, inp.scoring, 16), ref)
        if inp.equal_lengths:
            s1T, s2T = A.transpose_batch(inp.seqs1), A.transpose_batch(inp.seqs2)
            A.validate(A.align_transposed(s1T, s2T, inp.scoring), ref)
            A.validate(A.align_scalar(inp.seqs1, inp.seqs2, inp.scoring), ref)
            rep = li.vector_report(A.align_transposed)
            assert rep.vectorized and any("x i16>" in op for op in rep.ir_vector_ops), str(rep)


def test_lesson00_kernels_small():
    from labkit import lesson00 as L

    inp = L.make_inputs("small")
    L.validate(L.colsum(inp.a), L.reference(inp))
    assert np.allclose(L.dot_partials(inp.x, inp.y), inp.x @ inp.y)


def test_bspline_grouped_write_small():
    # evaluate_vgh's default write where N allows it (groups of 32 / 16 splines: the last plane
    # transposed in registers, full-line stores after an llvm.prefetch) and the scalar write
    # for other N — the same compiled kernel as tests/labs/test_bspline.py's layouts
    from labkit import bspline as bs

    a = bs.aligned_empty(64)
    assert bs._write_mode(64, 64, 64, a) == (1, 32) and bs._write_mode(24, 24, 24, a)[0] == 0
    for n in (64, 48, 24):
        x = bs.make_inputs({"grid": (6, 5, 7), "n": n, "positions": 5}, seed=3)
        bs.validate(bs.evaluate_vgh(x, x.positions), bs.reference(x), rtol=1e-12)


def test_pcc_entry_point_small():
    # the friendly entry point's whole path (standardise, tiles, mirror, constant rows → NaN)
    # on the engine rows this host uses (the packed panels are AVX-512 only)
    from labkit import pcc

    X = pcc.make_inputs({"n": 37, "l": 29}, seed=2).X
    X[5] = 1.5                                  # a constant row
    with pytest.warns(RuntimeWarning, match="constant"):
        R = pcc.pearson_allpairs(X, tile=8)
    ok = np.ones(len(X), bool)
    ok[5] = False
    assert np.allclose(R[np.ix_(ok, ok)], np.corrcoef(X[ok]), atol=1e-12)
    assert np.isnan(R[5]).all() and np.isnan(R[:, 5]).all()
    with pytest.warns(RuntimeWarning, match="constant"):
        i, j, r = pcc.correlated_pairs(X, 0.2, tile=8)
    assert np.allclose(r, R[i, j]) and (np.abs(r) >= 0.2).all()


def test_epistasis_entry_point_small():
    # the order-3 search (pair tables, lane counter, bounds, top list) against brute force
    from labkit import epistasis as ep

    inp = ep.make_inputs({"snps": 14, "individuals": 150}, seed=4)
    got = ep.search(inp.genotypes, inp.labels, order=3, top=6)
    ep.validate(got, ep.reference_search(inp.genotypes, inp.labels, order=3, top=6), atol=1e-12)


# ------------------------------------------------------------------ a notebook in a kernel

def test_isa_tour_notebook_executes():
    nbclient = pytest.importorskip("nbclient")
    jupytext = pytest.importorskip("jupytext")
    nb = jupytext.read(ROOT / "tools" / "arm64" / "isa_tour.md")
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(ROOT)}})
    client.execute()
    text = "\n".join(o.get("text", "") + str(o.get("data", {}).get("text/plain", ""))
                     for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert "aarch64" in text and "NEON" in text and "z registers" in text, text[-3000:]
    assert not [o for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
