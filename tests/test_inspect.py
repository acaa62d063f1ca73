"""Tests for labkit.inspect: IR/asm access, vector reports, cross-CPU compiles, remarks, annotate."""
import inspect as pyinspect
import platform
import re

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


# ------------------------------------------------------------------ other architectures
def test_compile_for_aarch64_shows_neon():
    text = li.compile_for(add, "apple-m1")
    assert re.search(r"\bfadd\s+v\d+\.2d", text), text
    rep = li.vector_report(add, cpu="apple-m1")
    assert rep.vectorized and rep.arch == "aarch64" and rep.max_width_bits == 128 and not rep.scalable
    assert rep.registers["v"] > 0 and rep.registers["ymm"] == 0 and "NEON" in rep.summary()
    assert li.vector_report(add, cpu="aarch64").vectorized  # an architecture name: LLVM's generic CPU
    assert li.show(add, cpu="apple-m1").hot_loop() is not None
    with pytest.raises(ValueError, match="x86 tuning"):
        li.compile_for(add, "apple-m1", prefer_vector_width=256)


def test_compile_for_sve_shows_z_registers():
    text = li.compile_for(add, "neoverse-v1", features="+sve")
    assert re.search(r"\bz\d+\.d\b", text), text
    rep = li.vector_report(add, cpu="neoverse-v1", features="+sve")
    assert rep.vectorized and rep.scalable and rep.registers["z"] > 0
    assert rep.max_width_bits == 128 and "SVE" in str(rep)


def test_compile_for_riscv_vector():
    rep = li.vector_report(add, cpu="riscv64", features="+v")
    assert rep.vectorized and rep.arch == "riscv64" and rep.scalable
    assert rep.instructions["vfadd.vv"] >= 1 and "RVV" in rep.summary()


def test_known_cpus_by_architecture():
    cpus = li.known_cpus()
    assert {"x86-64", "aarch64", "riscv64"} <= set(cpus)
    assert {"x86-64", "haswell", "znver4", "skylake-avx512"} <= set(cpus["x86-64"])
    assert {"apple-m1", "apple-m4", "neoverse-n1", "neoverse-v1", "neoverse-v2", "a64fx"} <= set(
        li.known_cpus("arm64"))
    assert "sifive-x280" in li.known_cpus("riscv64")
    with pytest.raises(ValueError, match="architecture"):
        li.known_cpus("mips")
    with pytest.raises(ValueError, match="unknown CPU 'apple-m9'.*apple-m"):
        li.compile_for(add, "apple-m9")


def test_neon_sve_and_rvv_text_is_classified():
    neon = li.vector_report_from_asm("""f:
        ldp     q0, q1, [x0]
        fadd    v0.2d, v0.2d, v2.2d
        fmla    v1.4s, v2.4s, v3.4s
        cnt     v4.16b, v4.16b
        uaddlv  h5, v4.16b
        fadd    d0, d0, d1
        ret
    """)
    assert neon.arch == "aarch64" and neon.vectorized and neon.max_width_bits == 128
    assert neon.categories["fma"] == 1 and neon.categories["popcount"] == 1
    assert neon.categories["add"] == 2 and neon.instructions["fadd"] == 1  # not the scalar d0 add
    apple = li.vector_report_from_asm("ldr q0, [x8]\nfadd.2d v0, v0, v2\ncnt.16b v1, v1\n")
    assert apple.vectorized and apple.categories["popcount"] == 1 and apple.counts == {128: 3}
    sve = li.vector_report_from_asm("""f:
        ptrue   p0.d
        ld1d    { z0.d }, p0/z, [x0, x8, lsl #3]
        fmla    z0.d, p0/m, z1.d, z2.d
        ld1d    { z3.d }, p0/z, [x1, z4.d, lsl #3]
        whilelo p0.d, x8, x9
    """)
    assert sve.scalable and sve.vectorized and sve.registers["z"] == 6
    assert sve.categories["fma"] == 1 and sve.categories["gather"] == 1 and sve.categories["move"] == 1
    rvv = li.vector_report_from_asm("""f:
        vsetvli    a1, zero, e64, m1, ta, ma
        vle64.v    v8, (a0)
        vfmacc.vf  v8, fa0, v9
        vluxei64.v v10, (a1), v11
        vmv.x.s    a2, v8
        fadd.d     fa5, fa5, fa4
    """)
    assert rvv.arch == "riscv64" and rvv.scalable and rvv.vectorized
    assert rvv.categories == {"move": 1, "fma": 1, "gather": 1}


MACHO = """\t.section\t__TEXT,__text,regular,pure_instructions
\t.globl\t__ZN8__main__1fE
\t.p2align\t2
__ZN8__main__1fE:
LBB0_1:
\tldr\tq0, [x8], #16
\tfadd.2d\tv0, v0, v1
\tsubs\tx9, x9, #2
\tb.ne\tLBB0_1
\tret
\t.globl\t__ZN7cpython8__main__1fE
\t.p2align\t2
__ZN7cpython8__main__1fE:
\tmovi.2d\tv0, #0
\tmul.4s\tv1, v2, v3
\tret
"""


def test_macos_assembly_is_split_by_function():
    # numba's own assembly on an Apple-silicon Mac: Mach-O (no .type, a leading '_'), Apple syntax
    rep = li.vector_report_from_asm(MACHO, symbol="_ZN8__main__1fE")
    assert rep.arch == "aarch64" and rep.vectorized and rep.max_width_bits == 128
    assert dict(rep.categories) == {"move": 1, "add": 1}  # not the wrapper's mul.4s
    assert li.show(MACHO).hot_loop() is not None


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
    # an exercise's answer is earned, not printed: the early-exit fix points at the exception
    # numba adds (lesson 00's softsign) without naming the option that removes it
    text, fix = li.explain("loop not vectorized: could not vectorize early exit loop")
    assert "ZeroDivisionError" in text and "exception" in fix and "error_model" not in fix


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


def test_compile_for_a_kernel_with_an_intrinsic_and_one_naming_the_host():
    """labkit.jit's ``"prefer-vector-width"`` can be a function's only attribute: its group,
    stripped of target attributes, is ``{ }``, which LLVM refuses to parse; IR that names the
    host's architecture (an x86 intrinsic) is refused with a reason instead of LLVM aborting
    the process."""
    from llvmlite import ir
    from numba import njit, types
    from numba.extending import intrinsic

    from labkit import jit
    from labkit.alignment._atomic import claim

    @jit.njit
    def take(c):
        return claim(c)

    c = np.zeros(1, dtype=np.int64)
    take(c)
    arm = li.compile_for(take, "neoverse-n1")
    assert re.search(r"\b(ldadd\w*|ldaxr|ldxr)\b", arm), arm[-1500:]
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return

    @intrinsic
    def pause(typingctx):
        def codegen(context, builder, sig, args):
            fnty = ir.FunctionType(ir.VoidType(), [])
            builder.call(builder.module.declare_intrinsic("llvm.x86.sse2.pause", fnty=fnty), [])
            return context.get_dummy_value()
        return types.none(), codegen

    @njit
    def spin():
        pause()

    spin()
    with pytest.raises(ValueError, match="uses x86-64 intrinsics"):
        li.compile_for(spin, "apple-m1")
