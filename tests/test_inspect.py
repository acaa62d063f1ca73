"""Tests for labkit.inspect: IR/asm access, vector reports, cross-CPU compiles, remarks, annotate."""
import inspect as pyinspect
import platform

import numba
import numpy as np
import pytest

from labkit import inspect as li

x86_only = pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"),
                              reason="x86 assembly expected (compile_for targets x86 CPUs)")


@numba.njit(cache=True)
def add(a, b, out):
    for i in range(a.shape[0]):
        out[i] = a[i] + b[i]


@numba.njit(cache=True)
def fsum(a):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i]
    return s


@numba.njit(cache=True, fastmath=True)
def fsum_fast(a):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i]
    return s


@numba.njit(cache=True)
def recurrence(a):
    for i in range(1, a.shape[0]):
        a[i] = a[i - 1] * 0.5 + a[i]


@numba.njit(cache=True, parallel=True)
def padd(a, out):
    for i in numba.prange(a.shape[0]):
        out[i] = a[i] + 1.0


@numba.njit(cache=True)
def twice(x):
    return x * 2


@numba.njit(cache=True)
def never_called(x):
    return x + 1


X = np.arange(64, dtype=np.float64)


@pytest.fixture(scope="module", autouse=True)
def compiled():
    add(X, X, X.copy())
    fsum(X)
    fsum_fast(X)
    recurrence(X.copy())
    twice(1)
    twice(1.0)


def line_of(fn, text):
    """Absolute line number of the first source line of ``fn`` containing ``text``."""
    lines, start = pyinspect.getsourcelines(fn.py_func)
    return start + next(i for i, l in enumerate(lines) if text in l)


# ------------------------------------------------------------------ text access
def test_llvm_ir_and_asm_are_the_function_body():
    ir = li.llvm_ir(add)
    assert ir.startswith("define") and "cpython" not in ir
    body = li.asm(add)
    assert "_ZN7cpython" not in body and "cfunc." not in body
    assert "cpython" in li.asm(add, full=True)


def test_signature_forms_agree():
    sig = add.signatures[0]
    by_types = li.asm(add, sig)
    assert li.asm(add, (X, X, X)) == by_types
    assert li.asm(add, "(float64[::1], float64[::1], float64[::1])") == by_types
    assert "define" in li.llvm_ir(add, add.overloads[sig].signature)


# ------------------------------------------------------------------ vector report
def test_vector_report_elementwise_add():
    rep = li.vector_report(add)
    assert rep.vectorized and rep.max_width_bits >= 128
    assert sum(rep.counts.values()) > 0 and rep.ir_vector_types
    assert str(rep).startswith("vectorised: yes") and "vectorised: yes" in rep._repr_html_()


def test_vector_report_float_sum_is_scalar():
    rep = li.vector_report(fsum)
    assert not rep.vectorized and rep.max_width_bits == 0
    assert str(rep).startswith("vectorised: no")


def test_scalar_sse_and_idioms_are_not_vector_code():
    text = """f:
        vxorps  %xmm0, %xmm0, %xmm0
        vaddsd  (%rdi,%rax,8), %xmm0, %xmm0
        vmovsd  %xmm0, (%rsi)
        vmovq   %xmm0, %rax
        vcvtsi2sd %rax, %xmm1, %xmm1
        vmovapd %xmm0, %xmm2
        vucomisd %xmm1, %xmm0
        vzeroupper
        retq
    """
    rep = li.vector_report_from_asm(text)
    assert not rep.vectorized and rep.counts == {}


def test_packed_instructions_are_classified():
    text = """k:
        vpaddw  %zmm1, %zmm0, %zmm0
        vfmadd231pd (%rax), %ymm1, %ymm2
        vpopcntq %zmm3, %zmm3
        vmovupd %zmm0, (%rdi)
        vpminsd %xmm1, %xmm2, %xmm3
    """
    rep = li.vector_report_from_asm(text)
    assert rep.vectorized and rep.max_width_bits == 512
    assert rep.counts == {512: 3, 256: 1, 128: 1}
    assert rep.instructions["vpopcntq"] == 1 and rep.categories["fma"] == 1
    assert rep.registers["zmm"] == 6


# ------------------------------------------------------------------ compile_for
@x86_only
def test_compile_for_changes_the_vector_width():
    sse = li.vector_report_from_asm(li.compile_for(add, "x86-64"))
    assert sse.vectorized and sse.max_width_bits == 128
    assert sse.registers["ymm"] == sse.registers["zmm"] == 0
    avx512 = li.vector_report(add, cpu="skylake-avx512", features="-prefer-256-bit")
    assert avx512.max_width_bits == 512 and avx512.registers["zmm"] > 0
    assert "zmm" in li.compile_for(add, "skylake-avx512", prefer_vector_width=512)
    # LLVM's own tuning for Intel AVX-512 parts prefers 256-bit vectors by default
    assert li.vector_report(add, cpu="skylake-avx512").max_width_bits == 256
    assert li.vector_report(add, cpu="x86-64-v4", prefer_vector_width=512).max_width_bits == 512


@x86_only
def test_compile_for_parallel_function():
    padd(X, X.copy())
    rep = li.vector_report(padd, cpu="haswell")
    assert rep.vectorized and rep.max_width_bits == 256


# ------------------------------------------------------------------ show / diff
def test_show_finds_the_hot_loop():
    listing = li.show(add)
    assert listing.hot_loop() is not None
    assert "hot loop" in listing._repr_html_() and "▶" in str(listing)
    ir = li.show(add, kind="llvm")
    assert ir.kind == "llvm" and ir.loops


@x86_only
def test_diff_text_and_html():
    d = li.diff(li.compile_for(add, "x86-64"), li.compile_for(add, "haswell"), names=("sse2", "avx2"))
    assert d.changed > 0 and "--- sse2" in str(d) and "<table" in d._repr_html_()
    same = li.diff(add, add)
    assert same.changed == 0 and "identical" in str(same)


# ------------------------------------------------------------------ remarks
def test_remarks_elementwise_add_vectorised_with_width():
    rem = li.remarks(add)
    assert len(rem) == 1
    r = rem[0]
    assert r.vectorized and r.width >= 2 and r.interleave >= 1
    assert r.line == line_of(add, "for i in range")
    assert "✔" in str(rem) and "<table" in rem._repr_html_()


def test_remarks_float_sum_needs_reassociation():
    (r,) = li.remarks(fsum)
    assert not r.vectorized
    assert "reorder floating-point" in r.reason and "fastmath" in r.fix
    assert r.line == line_of(fsum, "for i in range")
    assert r.reason_line == line_of(fsum, "s += a[i]")


def test_remarks_fastmath_sum_vectorises():
    (r,) = li.remarks(fsum_fast)
    assert r.vectorized and r.width >= 2


def test_remarks_recurrence_reports_dependence():
    (r,) = li.remarks(recurrence)
    assert not r.vectorized
    assert "dependent memory" in r.reason and "loop carried" in r.reason.lower()
    assert "#pragma" not in r.reason and "loop-carried" in r.explanation
    assert r.line == line_of(recurrence, "for i in range")


def test_remarks_leave_no_llvm_option_set(capfd):
    li.remarks(fsum)
    capfd.readouterr()

    def later(a):  # an unrelated compile after the call; fresh dispatcher so it really compiles
        t = 0.0
        for i in range(a.shape[0]):
            t += a[i] * 2.0
        return t
    numba.njit(later)(X)
    assert "remark" not in capfd.readouterr().err


def test_remarks_do_not_touch_the_users_function():
    before = list(add.signatures)
    li.remarks(add)
    li.annotate(add)
    assert list(add.signatures) == before and not add.targetoptions.get("debug")


def test_remarks_parallel_loop():
    padd(X, X.copy())
    rem = li.remarks(padd)
    assert rem and rem[0].line == line_of(padd, "prange") and rem[0].parallel
    assert "prange" in rem.note


def test_explain_table():
    text, fix = li.explain("loop not vectorized: cannot identify array bounds")
    assert "indices" in text and "contiguous" in fix
    assert li.explain("something LLVM never says") == ("", "")


# ------------------------------------------------------------------ annotate
def test_annotate_maps_asm_to_lines():
    ann = li.annotate(add)
    body = line_of(add, "out[i] =")
    assert any("add" in ins for ins in ann.asm[body])
    assert ann.marks[line_of(add, "for i")][0].vectorized
    text = str(ann)
    assert "✔ vectorised" in text and "<table" in ann._repr_html_()
    assert "✘" in str(li.annotate(fsum))


# ------------------------------------------------------------------ bad input
def test_not_a_numba_function():
    def plain(x):
        return x
    with pytest.raises(TypeError, match="numba.njit"):
        li.asm(plain)
    with pytest.raises(TypeError, match="numba"):
        li.vector_report(np.sum)


def test_uncompiled_function():
    with pytest.raises(ValueError, match="call it once first"):
        li.llvm_ir(never_called)
    with pytest.raises(ValueError, match="call it once first"):
        li.remarks(never_called)


def test_several_signatures_are_listed():
    with pytest.raises(ValueError, match=r"2 compiled signatures.*int64.*float64"):
        li.asm(twice)
    assert "define" in li.llvm_ir(twice, (numba.float64,))


def test_bad_signature_is_a_clear_error():
    with pytest.raises(ValueError, match="cannot compile add"):
        li.asm(add, (1.0,))


@x86_only
def test_unknown_cpu():
    with pytest.raises(ValueError, match="unknown CPU 'haswel'.*haswell"):
        li.compile_for(add, "haswel")
    with pytest.raises(ValueError, match="64-bit"):
        li.compile_for(add, "pentium4")
    with pytest.raises(TypeError):
        li.compile_for(add, 42)


def test_kernels_loaded_from_numba_cache_are_inspected(tmp_path):
    """numba cannot inspect code loaded from its disk cache; labkit recompiles a fresh copy."""
    import subprocess
    import sys
    import textwrap

    (tmp_path / "cached_kernel.py").write_text(textwrap.dedent("""
        import numba
        @numba.njit(cache=True)
        def scale(a, out):
            for i in range(a.shape[0]):
                out[i] = a[i] * 3.0
    """))
    script = textwrap.dedent("""
        import warnings, numpy as np
        warnings.simplefilter("error")
        import cached_kernel
        from labkit import inspect as li
        x = np.ones(32)
        cached_kernel.scale(x, x.copy())
        print(sum(cached_kernel.scale.stats.cache_hits.values()), li.vector_report(cached_kernel.scale).vectorized)
    """)
    runs = [subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True,
                           timeout=120) for _ in range(2)]
    assert [r.returncode for r in runs] == [0, 0], runs[-1].stderr
    assert runs[0].stdout.split() == ["0", "True"]
    assert runs[1].stdout.split() == ["1", "True"]  # loaded from the cache, still inspected
