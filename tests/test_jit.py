"""labkit.jit.njit: numba.njit plus LLVM's prefer-vector-width attribute on the host's AVX-512."""
from __future__ import annotations

import subprocess
import sys

import numba
import numpy as np
import pytest

from labkit import jit


def _dot(a, b):
    t = 0.0
    for i in range(a.size):
        t += a[i] * b[i]
    return t


def _square_rows(a, out):
    for j in numba.prange(a.shape[0]):
        t = 0.0
        for i in range(a.shape[1]):
            t += a[j, i] * a[j, i]
        out[j] = t


def test_same_results_as_numba_njit():
    a = np.random.default_rng(0).standard_normal(1001)
    wide = jit.njit(fastmath=True)(_dot)
    plain = numba.njit(fastmath=True)(_dot)
    assert wide(a, a) == pytest.approx(plain(a, a), rel=1e-12)
    assert wide(a, a) == pytest.approx(float(a @ a), rel=1e-12)


def test_attribute_reaches_the_function_and_the_prange_body():
    bits = jit.vector_bits()
    wide = jit.njit(fastmath=True)(_dot)
    a = np.ones(64)
    wide(a, a)
    ir = wide.inspect_llvm(wide.signatures[0])
    rows = jit.njit(parallel=True, fastmath=True)(_square_rows)
    A, out = np.ones((4, 64)), np.empty(4)
    rows(A, out)
    assert np.allclose(out, 64.0)
    if bits is None:
        assert jit.ATTRIBUTE not in ir
        pytest.skip("no AVX-512 here: labkit.jit.njit is numba.njit")
    assert f'"{jit.ATTRIBUTE}"="{bits}"' in ir
    asm = wide.inspect_asm(wide.signatures[0])
    assert "zmm" in asm, "the attribute did not widen the loop"
    assert "zmm" in rows.inspect_asm(rows.signatures[0]), "the prange body was not widened"
    plain = numba.njit(fastmath=True)(_dot)
    plain(a, a)
    assert jit.ATTRIBUTE not in plain.inspect_llvm(plain.signatures[0]), "leaked into numba.njit"


def test_environment_turns_it_off_and_rejects_nonsense():
    code = "from labkit import jit; print(jit.vector_bits())"
    out = subprocess.run([sys.executable, "-c", code], env={"LABKIT_VECTOR_BITS": "256", "PATH": ""},
                         capture_output=True, text=True, check=True).stdout.strip()
    assert out == "None"
    bad = subprocess.run([sys.executable, "-c", code], env={"LABKIT_VECTOR_BITS": "wide", "PATH": ""},
                         capture_output=True, text=True)
    assert bad.returncode != 0 and "give a width in bits" in bad.stderr


def test_pipeline_class_is_refused():
    with pytest.raises(TypeError, match="pipeline_class"):
        jit.njit(pipeline_class=object)


def test_inspection_recompiles_with_the_same_pipeline():
    """labkit.inspect recompiles cache-loaded kernels for their text: it must keep the wide pipeline."""
    from labkit.inspect import ir

    wide = jit.njit(fastmath=True)(_dot)
    a = np.ones(64)
    fresh = ir._compile_fresh(wide, (numba.typeof(a),) * 2)
    assert fresh._compiler.pipeline_class is jit.WidePipeline
    plain = ir._compile_fresh(numba.njit(_dot), (numba.typeof(a),) * 2)
    assert plain._compiler.pipeline_class is not jit.WidePipeline
