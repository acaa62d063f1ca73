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


_CACHED = '''
import numpy as np, numba
from labkit import jit

def dot(a, b):
    t = 0.0
    for i in range(a.size):
        t += a[i] * b[i]
    return t

wide = jit.njit(cache=True, fastmath=True)(dot)
plain = numba.njit(cache=True, fastmath=True)(dot)
fresh = numba.njit(cache=False, fastmath=True)(dot)   # what numba alone emits here, never cached
'''

_PROBE = '''
import sys, numpy as np
sys.path.insert(0, sys.argv[1])
import cached_mod as m
a = np.ones(256)
first = sys.argv[2]
for name in (first, "plain" if first == "wide" else "wide", "fresh"):
    f = getattr(m, name)
    f(a, a)
    lib = f.overloads[f.signatures[0]].library
    text = lib.get_asm_str() if not getattr(lib, "_disable_inspection", False) else ""
    print(name, f.stats.cache_hits.total() if hasattr(f.stats.cache_hits, "total") else
          sum(f.stats.cache_hits.values()), "zmm" in text)
'''


@pytest.mark.skipif(jit.vector_bits() is None, reason="no AVX-512 here: one width only")
def test_wide_and_plain_compiles_of_one_function_keep_separate_cache_entries(tmp_path):
    """Before the width was in the cache key, the second of the two compiles loaded the first's
    code from numba's cache: a plain twin ran 512-bit code (or the wide kernel 256-bit code).
    The property: each compile is saved and loaded as its own entry, the wide one is 512-bit and
    the plain one is whatever numba alone emits on this target (256-bit on Intel's AVX-512
    servers, 512-bit on AMD Zen 5 — an uncached compile says which)."""
    (tmp_path / "cached_mod.py").write_text(_CACHED)
    env = {"PATH": "", "NUMBA_CACHE_DIR": str(tmp_path / "cache"), "HOME": str(tmp_path)}
    run = lambda first: subprocess.run([sys.executable, "-c", _PROBE, str(tmp_path), first],
                                       env=env, capture_output=True, text=True, check=True).stdout
    cold = run("wide").split()                       # compiles both, saves both
    numba_alone = cold[8]
    assert cold[:8] == ["wide", "0", "True", "plain", "0", numba_alone, "fresh", "0"], cold
    warm = run("plain").split()                      # loads both from the cache
    assert warm[:2] == ["plain", "1"] and warm[3:5] == ["wide", "1"], warm


def test_signatures_compile_eagerly_like_numba():
    f = jit.njit("float64(float64[:], float64[:])", fastmath=True)(_dot)
    assert len(f.signatures) == 1
    a = np.ones(8)
    assert f(a, a) == 8.0
    with pytest.raises(TypeError):
        f(np.ones(8, dtype=np.int32), np.ones(8, dtype=np.int32))


def _copy_add(a, b, out):
    for i in range(out.size):
        out[i] = a[i] + b[i]


def test_noalias_drops_the_overlap_checks_and_is_validated():
    x = np.arange(100.0)
    plain, na = jit.njit(_copy_add), jit.njit(noalias=True)(_copy_add)
    o1, o2 = np.empty_like(x), np.empty_like(x)
    plain(x, x, o1)
    na(x, x, o2)
    assert np.array_equal(o1, o2) and np.array_equal(o1, 2 * x)
    assert na._compiler.pipeline_class is jit.NoAliasWidePipeline
    def head(f):                       # the kernel's own define line (numba marks retptr anyway)
        return f.inspect_llvm(f.signatures[0]).split("define", 2)[1].split("{")[0].count("noalias")
    assert head(na) > head(plain)
    with pytest.raises(TypeError, match="noalias"):
        jit.njit(noalias="yes")(_copy_add)


_CALLEE = "from numba import njit\n\n@njit(cache=True)\ndef callee():\n    return {}\n"
_CALLER = ("from numba import njit\nfrom .a import callee\n\n"
           "@njit(cache=True)\ndef caller():\n    return callee()\n")
_RUN = '''
import pathlib, sys
sys.path.insert(0, sys.argv[1])
from labkit import jit
if sys.argv[2] == "digest":
    jit.CACHE_PACKAGES["pkgx"] = pathlib.Path(sys.argv[1]) / "pkgx"
from pkgx.lab.b import caller
print(caller(), sum(caller.stats.cache_hits.values()))
'''


def test_a_callee_changed_in_another_file_is_not_loaded_stale_from_the_cache(tmp_path):
    """numba keys a cached function on its own file: after ``a.py`` changes, ``b.py``'s cached
    caller still runs the old callee. With the package's sources in the key (what labkit.jit
    does for labkit's modules) it compiles again — and loads from the cache while nothing
    changes."""
    lab = tmp_path / "pkgx" / "lab"
    lab.mkdir(parents=True)
    for d in (tmp_path / "pkgx", lab):
        (d / "__init__.py").write_text("")
    (lab / "b.py").write_text(_CALLER)
    # no .pyc: a.py rewritten within the same second at the same size would import stale
    env = {"PATH": "", "NUMBA_CACHE_DIR": str(tmp_path / "cache"), "HOME": str(tmp_path),
           "PYTHONDONTWRITEBYTECODE": "1"}

    def run(mode):
        out = subprocess.run([sys.executable, "-c", _RUN, str(tmp_path), mode], env=env,
                             capture_output=True, text=True, check=True).stdout.split()
        return int(out[0]), int(out[1])           # (result, cache hits)

    for mode, stale in (("plain", True), ("digest", False)):
        (lab / "a.py").write_text(_CALLEE.format(1))
        assert run(mode)[0] == 1
        (lab / "a.py").write_text(_CALLEE.format(2))
        got = run(mode)
        if stale:
            assert got == (1, 1), f"numba itself now sees the callee's file: {got}"
        else:
            assert got == (2, 0), got
            assert run(mode) == (2, 1)              # unchanged sources: loaded from the cache


def test_sources_digest_covers_the_subpackage_and_only_labkit():
    d = jit.sources_digest("labkit.pcc.engine")
    assert d == jit.sources_digest("labkit.pcc._panels") != jit.sources_digest("labkit.bspline")
    assert jit.sources_digest("__main__") is None and jit.sources_digest("numpy.linalg") is None
