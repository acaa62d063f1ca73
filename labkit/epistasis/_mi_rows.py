"""LLVM intrinsics of lab 04's last stage: for 8 candidates at once, a sum over the prefix rows
and the last SNP's 3 genotypes of one term per cell — the χ² bound (``_chi_rows``), the tighter
Taylor bound (``_taylor_rows``), both returning the lanes that may enter the top list, and
n·ln n gathered from a table (``_nlogn_rows``: the MI itself). Genotype 2's counts are derived
by subtraction from the row's count. Used by ``_stages.py``.
"""
from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from labkit.jit import compiles_for_avx512

from ._intrinsics import _F64, _I8, _I64, _V8, _declare, _int_args_ok, _vload

__all__: list = []

_VF = ir.VectorType(_F64, 8)


def _splat(b, x, vty):
    v = b.insert_element(ir.Constant(vty, ir.Undefined), x, ir.Constant(ir.IntType(32), 0))
    return b.shuffle_vector(v, ir.Constant(vty, ir.Undefined),
                            ir.Constant(ir.VectorType(ir.IntType(32), 8), [0] * 8))


def _row_cells(builder, C, P, r, b1, b0, cs, off, f32=False):
    """The 3 cells (a = cases, b = controls) of prefix row r for 8 candidates: genotypes 0, 1 of
    the last SNP loaded from the counts, genotype 2 = the row's count P[r, c] minus both
    (``f32``: float32 counts, ``_last_stage16``'s, returned as doubles — exact integers)."""
    two = ir.Constant(_I64, 2)
    o1 = builder.add(builder.add(b1, builder.mul(builder.mul(r, two), cs)), off)
    o0 = builder.add(builder.add(b0, builder.mul(builder.mul(r, two), cs)), off)
    if f32:
        ld = lambda o: builder.fpext(_vload(builder, C, o, ir.VectorType(ir.FloatType(), 8)),  # noqa
                                     _VF)
        sub, vt = builder.fsub, _VF
    else:
        ld = lambda o: _vload(builder, C, o, _V8)  # noqa: E731
        sub, vt = builder.sub, _V8
    a1, e1 = ld(o1), ld(builder.add(o1, cs))
    a0, e0 = ld(o0), ld(builder.add(o0, cs))
    p1 = builder.load(builder.gep(P, [builder.add(builder.mul(r, two), ir.Constant(_I64, 1))]))
    p0 = builder.load(builder.gep(P, [builder.mul(r, two)]))
    if f32:
        p1, p0 = builder.sitofp(p1, _F64), builder.sitofp(p0, _F64)
    z1 = sub(sub(_splat(builder, p1, vt), a1), e1)
    z0 = sub(sub(_splat(builder, p0, vt), a0), e0)
    return ((a1, a0), (e1, e0), (z1, z0))


def _tof(builder, v):
    """Count vector as doubles (converted from int64, or already doubles)."""
    return v if isinstance(v.type.element, ir.DoubleType) else builder.sitofp(v, _VF)


def _toi(builder, v):
    """Count vector as int64 (as is, or from doubles holding integers)."""
    return builder.fptosi(v, _V8) if isinstance(v.type.element, ir.DoubleType) else v


def _rows_intrinsic(cell_term):
    """Intrinsic f(counts, b1, b0, cstride, off, pc, R, x, y, acc): acc[0:8] = Σ over the R prefix
    rows and the 3 genotypes of the last SNP of cell_term(a, b) for 8 candidates (3 independent
    sums in registers, one store); returns the bit mask of the lanes with acc ≥ x when x is a
    float (0 when x is a table)."""
    @intrinsic
    def rows(typingctx, counts, b1, b0, cstride, off, pc, R, x, y, acc):
        if not (isinstance(counts, types.Array) and isinstance(pc, types.Array)
                and isinstance(acc, types.Array) and _int_args_ok(b1, b0, cstride, off, R)):
            return None
        sig = types.int64(counts, b1, b0, cstride, off, pc, R, x, y, acc)

        def codegen(context, builder, sg, args):
            C = context.make_array(sg.args[0])(context, builder, args[0])
            P = context.make_array(sg.args[5])(context, builder, args[5])
            A = context.make_array(sg.args[9])(context, builder, args[9])
            c = lambda k: context.cast(builder, args[k], sg.args[k], types.int64)  # noqa: E731
            b1_, b0_, cs, off, R_ = c(1), c(2), c(3), c(4), c(6)
            if isinstance(sg.args[7], types.Array):      # a table: its address as an int
                T = context.make_array(sg.args[7])(context, builder, args[7])
                xs = [builder.ptrtoint(T.data, _I64), None]
            else:
                xs = [context.cast(builder, args[k], sg.args[k], types.float64) for k in (7, 8)]
            sums = [cgutils.alloca_once_value(builder, ir.Constant(_VF, None)) for _ in range(3)]
            f32 = isinstance(sg.args[0].dtype, types.Float)
            with cgutils.for_range(builder, R_) as loop:
                cells = _row_cells(builder, C.data, P.data, loop.index, b1_, b0_, cs, off, f32)
                for acc_, (ca, cb) in zip(sums, cells):
                    builder.store(builder.fadd(builder.load(acc_),
                                               cell_term(builder, context, ca, cb, xs)), acc_)
            tot = builder.fadd(builder.fadd(builder.load(sums[0]), builder.load(sums[1])),
                               builder.load(sums[2]))
            builder.store(tot, builder.bitcast(A.data, _VF.as_pointer()), align=8)
            if xs[1] is None:
                return ir.Constant(_I64, 0)
            ge = builder.fcmp_ordered(">=", tot, _splat(builder, xs[0], _VF))
            return builder.zext(builder.bitcast(ge, _I8), _I64)
        return sig, codegen
    return rows


def _recip(builder, x):
    """1 / x for 8 doubles: vrcp14pd (relative error < 2**-14) where numba compiles for AVX-512,
    an exact division elsewhere (AVX2 laptops, AArch64)."""
    if compiles_for_avx512():
        rcp = _declare(builder, "llvm.x86.avx512.rcp14.pd.512", _VF, [_VF, _VF, _I8])
        return builder.call(rcp, [x, ir.Constant(_VF, None), ir.Constant(_I8, 0xFF)])
    return builder.fdiv(ir.Constant(_VF, [1.0] * 8), x)


def _max1(builder, n):
    one = ir.Constant(_VF, [1.0] * 8)
    return builder.select(builder.fcmp_ordered("<", n, one), one, n)


def _chi_term(builder, context, ca, cb, xs):
    """a² / max(n, 1) (a = cases, n = cases + controls of the cell), the reciprocal by _recip
    (relative error < 2**-14); Σ over the cells is S, and Σ (a·N − n·N1)² / n = N²·S − N·N1²."""
    a = _tof(builder, ca)
    n = builder.fadd(a, cb) if a is ca else builder.sitofp(builder.add(ca, cb), _VF)
    return builder.fmul(builder.fmul(a, a), _recip(builder, _max1(builder, n)))


def _taylor_term(builder, context, ca, cb, xs):
    """2·n·KL(a/n ‖ π) ≤ (a − n·π)² / clamp(a·b/n, n·v/2, n·v) with v = π(1 − π), π = xs[1]
    (the cases' share): KL's second derivative 1/(ξ(1 − ξ)) at its largest between p = a/n and π
    (Taylor with Lagrange remainder), capped by the χ² term. Both reciprocals by _recip: the
    term's relative error stays below 2**-12."""
    pi = xs[1]
    v = builder.fmul(pi, builder.fsub(ir.Constant(_F64, 1.0), pi))
    a = _tof(builder, ca)
    b = _tof(builder, cb)
    n = builder.fadd(a, b)
    n1 = _max1(builder, n)
    h = builder.fmul(n1, _splat(builder, builder.fmul(v, ir.Constant(_F64, 0.5)), _VF))
    hh = builder.fadd(h, h)
    w = builder.fmul(builder.fmul(a, b), _recip(builder, n1))
    w = builder.select(builder.fcmp_ordered("<", w, h), h, w)
    w = builder.select(builder.fcmp_ordered(">", w, hh), hh, w)
    d = builder.fsub(a, builder.fmul(n, _splat(builder, pi, _VF)))
    return builder.fmul(builder.fmul(d, d), _recip(builder, w))


def _nlogn_term(builder, context, ca, cb, xs):
    """T[a] + T[b] − T[a + b] gathered from the n·ln n table (xs[0]: its address)."""
    base = _splat(builder, xs[0], _V8)
    PV = ir.VectorType(_F64.as_pointer(), 8)
    gfn = _declare(builder, "llvm.masked.gather.v8f64.v8p0", _VF,
                   [PV, ir.IntType(32), ir.VectorType(ir.IntType(1), 8), _VF])
    allm = ir.Constant(ir.VectorType(ir.IntType(1), 8), [1] * 8)

    def g(ix):
        addr = builder.add(base, builder.shl(ix, ir.Constant(_V8, [3] * 8)))
        return builder.call(gfn, [builder.inttoptr(addr, PV), ir.Constant(ir.IntType(32), 8),
                                  allm, ir.Constant(_VF, None)])
    ca, cb = _toi(builder, ca), _toi(builder, cb)
    return builder.fsub(builder.fadd(g(ca), g(cb)), g(builder.add(ca, cb)))


#: acc = S = Σ_cells a² / n for 8 candidates: Pearson's χ² = (N²·S − N·N1²) / (N1·N0), and
#: N·MI ≤ χ² (KL ≤ χ²-divergence, cell by cell): the bound that lets the search skip the MI
_chi_rows = _rows_intrinsic(_chi_term)
#: acc = Σ_cells (a − nπ)² / clamp(ab/n, nv/2, nv) ≥ 2·N·MI for 8 candidates (π = y): a bound
#: tighter than χ²'s (measured: docs/epistasis.md, 'The stretch target, third pass'), for the
#: candidates that pass _chi_rows
_taylor_rows = _rows_intrinsic(_taylor_term)
#: acc = Σ_cells n·ln n(a) + n·ln n(b) − n·ln n(a + b) for 8 candidates (gathers from the table)
_nlogn_rows = _rows_intrinsic(_nlogn_term)
