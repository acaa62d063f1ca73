"""Lab 04's fused order-3 block: one intrinsic counts the 4 prefix rows of both classes against
16 candidate SNPs in 32-bit lanes (``<16 x i32>`` ctpop: the same vpopcnt work per individual
as 8 × 64-bit lanes), derives the other 5 rows from the pair tables, stores the 36 count
vectors and returns the lanes whose Taylor bound on 2·N·MI reaches a limit, all in float32 × 16
— the counts never go through memory between the integer phase and the bound, and the bound's
reciprocals (vrcp14ps) cover 16 candidates (``_stages._last_stage16``). The Taylor bound here,
not χ²'s: with χ² first (N·MI ≤ χ², a factor 2 loose) 6.8 % of the lanes passed and a third
of the 8-lane halves then took the float64 Taylor bound (``_mi_rows._taylor_rows``) — more
time than this bound on every lane (400 SNPs × 2000, order 3: 1.12–1.22× the search's
triples per CPU second, 3 interleaved rounds); 0.05 % of the lanes pass it.

Generic LLVM IR apart from vrcp14ps (only where numba compiles for AVX-512, a division
elsewhere); imports only llvmlite, numba, labkit.jit and ``_intrinsics``.
"""
from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from labkit.jit import compiles_for_avx512, njit

from ._intrinsics import _F64, _I64, _declare, _int_args_ok

_P8 = ir.IntType(8).as_pointer()


def _I32(v):
    return ir.Constant(ir.IntType(32), v)


_I32T = ir.IntType(32)
_V16 = ir.VectorType(_I32T, 16)
_F32 = ir.FloatType()
_VF16 = ir.VectorType(_F32, 16)


def _splat16(builder, x, vty):
    v = builder.insert_element(ir.Constant(vty, ir.Undefined), x, _I32(0))
    return builder.shuffle_vector(v, ir.Constant(vty, ir.Undefined),
                                  ir.Constant(ir.VectorType(_I32T, 16), [0] * 16))


def _recip16(builder, x):
    """1 / x for 16 floats: vrcp14ps (relative error < 2**-14) where numba compiles for AVX-512,
    an exact division elsewhere."""
    if compiles_for_avx512():
        rcp = _declare(builder, "llvm.x86.avx512.rcp14.ps.512", _VF16,
                       [_VF16, _VF16, ir.IntType(16)])
        return builder.call(rcp, [x, ir.Constant(_VF16, None), ir.Constant(ir.IntType(16), 0xFFFF)])
    return builder.fdiv(ir.Constant(_VF16, [1.0] * 16), x)


@njit(cache=True)
def fused_params(pc, pcf):
    """``_fused3_v16``'s per-prefix constants, once per prefix (not per block of 16): pcf[2r + c]
    = the prefix row r's count of class c (``pc``, float32), pcf[18] = π = N1/N, pcf[19] = v/2
    with v = π(1 − π), pcf[20] = N·2**-20/v: the absolute slack of the float32 Taylor sum (π
    rounded to float32 in d = a − n·π: |δd| ≤ n·2**-24, so |δ(d²/w)| ≤ n·2**-22/v per cell,
    and Σ n = N). Returns N (float) for the caller's limit."""
    n1 = 0
    n0 = 0
    for r in range(9):
        pcf[2 * r] = pc[r, 0]
        pcf[2 * r + 1] = pc[r, 1]
        n1 += pc[r, 1]
        n0 += pc[r, 0]
    fn = float(n1 + n0)
    v = float(n1) * float(n0) / (fn * fn)
    pcf[18] = n1 / fn
    pcf[19] = 0.5 * v
    pcf[20] = fn * 2.0 ** -20 / v
    return fn


def _ld(builder, P, i):
    """pcf[i] (float32)."""
    return builder.load(builder.gep(P.data, [ir.Constant(_I64, i)]))


def _taylor_limit(builder, P, lim):
    """(limit, π, v/2) as float32 × 16 splats for ``_taylor16`` from ``fused_params``' pcf: the
    limit ``lim`` on 2·N·MI less the float32 sum's error, relative 2**-10 (one vrcp14ps,
    2**-14, and roundings of 2**-24) and pcf[20] absolute."""
    slack = builder.fpext(_ld(builder, P, 20), _F64)
    limd = builder.fsub(builder.fmul(lim, ir.Constant(_F64, 1.0 - 2.0 ** -10)), slack)
    f32 = lambda x: _splat16(builder, x, _VF16)  # noqa: E731
    return (f32(builder.fptrunc(limd, _F32)), f32(_ld(builder, P, 18)),
            f32(_ld(builder, P, 19)))


def _taylor16(builder, n, P, piv, hv):
    """Σ over the 27 cells of (a − n·π)² / clamp(a·b/n, n·v/2, n·v) ≥ 2·N·MI for 16 candidates
    (``_mi_rows._taylor_term``'s bound, float32: counts are exact integers below 2**24), one
    reciprocal per cell as (a − n·π)²·n / clamp(a·b, n²·v/2, n²·v); ``n``:
    the count vectors n[c, q, g] of ``_fused3_v16`` (rows q of the split layout, genotype 2 of
    the candidate from the row counts)."""
    one = ir.Constant(_VF16, [1.0] * 16)
    fma = _declare(builder, "llvm.fma.v16f32", _VF16, [_VF16, _VF16, _VF16])
    npi = builder.fsub(ir.Constant(_VF16, None), piv)
    sums = [ir.Constant(_VF16, None)] * 3
    for r in range(9):
        z = {}
        for cl in (1, 0):
            t = _splat16(builder, _ld(builder, P, 2 * r + cl), _VF16)
            z[cl] = builder.fsub(builder.fsub(t, n[cl, r, 0]), n[cl, r, 1])
        cells = ((n[1, r, 0], n[0, r, 0]), (n[1, r, 1], n[0, r, 1]), (z[1], z[0]))
        new = []
        for s, (a, b) in zip(sums, cells):
            nn = builder.fadd(a, b)
            n1 = builder.select(builder.fcmp_ordered("<", nn, one), one, nn)
            lo = builder.fmul(builder.fmul(n1, n1), hv)      # n·w = clamp(a·b, n²·v/2, n²·v)
            hi = builder.fadd(lo, lo)
            w = builder.fmul(a, b)
            w = builder.select(builder.fcmp_ordered("<", w, lo), lo, w)
            w = builder.select(builder.fcmp_ordered(">", w, hi), hi, w)
            d = builder.call(fma, [nn, npi, a])
            dd = builder.fmul(builder.fmul(d, d), n1)
            new.append(builder.call(fma, [dd, _recip16(builder, w), s]))
        sums = new
    return builder.fadd(builder.fadd(sums[0], sums[1]), sums[2])


@intrinsic
def _fused3_v16(typingctx, tab, t1, t0, W, lanes, s1, s0, gstr, nw1, nw0, pj, par, blk, pcf, lim,
                counts, coff, cs, pf):
    """For the 16 candidates of one lane block at order 3 with pair tables (R = 9 split rows):
    counts n_c(q, g) of rows q < 4 (first SNP's genotype a = q // 2, second's b = q % 2) with the
    candidate's genotype g < 2, class 1 over 32-bit words [t1, t1 + nw1) of ``tab`` (lanes from
    ``lanes[s1 + g·gstr + 16i]``), class 0 over [t0, t0 + nw0) (``s0``); n(2, b) = pj(b) −
    n(0, b) − n(1, b) (rows 4 + b), n(a, 2) = par(a) − n(a, 0) − n(a, 1) (rows 6 + a); the
    lane words ``pf`` on prefetched; the prefix row r's genotype 2 from its count pcf[2r + c]
    (``pcf``: ``fused_params``' float32 constants of the prefix).
    In 32-bit lanes: ``tab`` and ``lanes`` are uint32 views
    (offsets and word counts in 32-bit words; ``lanes`` blocked by 16 SNPs, ``_plan._lanes16``),
    the pair tables float32 in blocks of 16 (``_stages._pair_counts(..., b16=True)``: 12 vectors of 16 per block,
    ``blk`` the block's first element), ``counts`` float32: row q of class c, genotype g at
    counts[((c·9 + q)·2 + g)·cs + coff]; returns the 16-bit mask of the lanes whose Taylor
    sum (``_taylor16``, ≥ 2·N·MI) reaches ``lim`` less its float32 error (``_taylor_limit``): a
    lane left out cannot have 2·N·MI ≥ lim."""
    arrs = (tab, lanes, pj, par, pcf, counts)
    if not (all(isinstance(a, types.Array) for a in arrs)
            and _int_args_ok(t1, t0, W, s1, s0, gstr, nw1, nw0, blk, coff, cs, pf)
            and isinstance(lim, types.Float) and pcf.dtype == types.float32):
        return None
    sig = types.int64(tab, t1, t0, W, lanes, s1, s0, gstr, nw1, nw0, pj, par, blk, pcf, lim,
                      counts, coff, cs, pf)

    def codegen(context, builder, sg, args):
        T, L, PJ, PA, P, C = (context.make_array(sg.args[k])(context, builder, args[k])
                              for k in (0, 4, 10, 11, 13, 15))
        c = lambda k: context.cast(builder, args[k], sg.args[k], types.int64)  # noqa: E731
        k_ = lambda v: ir.Constant(_I64, v)  # noqa: E731
        W_, gstr_, blk_, coff_, cs_ = c(3), c(7), c(12), c(16), c(17)
        ctpop = _declare(builder, "llvm.ctpop.v16i32", _V16, [_V16])
        prefetch = _declare(builder, "llvm.prefetch.p0", ir.VoidType(),
                            [_P8, ir.IntType(32), ir.IntType(32), ir.IntType(32)])
        gstr2 = c(18)

        def vptr(base, off, vty=_V16):
            return builder.bitcast(builder.gep(base, [off]), vty.as_pointer())

        n = {}
        for cl, (tk, sk, nk) in ((1, (1, 5, 8)), (0, (2, 6, 9))):
            accs = [cgutils.alloca_once_value(builder, ir.Constant(_V16, None)) for _ in range(8)]
            pt = builder.gep(T.data, [c(tk)])
            pb0 = builder.gep(L.data, [c(sk)])
            pb1 = builder.gep(pb0, [gstr_])
            with cgutils.for_range(builder, c(nk)) as loop:
                i = loop.index
                i16 = builder.mul(i, k_(16))
                sv = (builder.load(vptr(pb0, i16), align=4),
                      builder.load(vptr(pb1, i16), align=4))
                for pb in (pb0, pb1):    # the next lane block (2·gstr on) into L1 meanwhile
                    ahead = builder.bitcast(builder.gep(pb, [builder.add(i16, gstr2)]), _P8)
                    builder.call(prefetch, [ahead, _I32(0), _I32(3), _I32(1)])
                for q in range(4):
                    x = builder.load(builder.gep(pt, [builder.add(builder.mul(k_(q), W_), i)]))
                    p = _splat16(builder, x, _V16)
                    for g in range(2):
                        a = accs[2 * q + g]
                        builder.store(builder.add(builder.load(a),
                                                  builder.call(ctpop, [builder.and_(p, sv[g])])),
                                      a)
            for q in range(4):
                for g in range(2):
                    n[cl, q, g] = builder.sitofp(builder.load(accs[2 * q + g]), _VF16)
            for g in range(2):
                def ext(base, a):
                    o = builder.add(blk_, k_(((cl * 3 + a) * 2 + g) * 16))
                    return builder.load(vptr(base, o, _VF16), align=4)
                for b in range(2):
                    n[cl, 4 + b, g] = builder.fsub(builder.fsub(ext(PJ.data, b), n[cl, b, g]),
                                                   n[cl, 2 + b, g])
                for a in range(3):
                    n[cl, 6 + a, g] = builder.fsub(builder.fsub(ext(PA.data, a), n[cl, 2 * a, g]),
                                                   n[cl, 2 * a + 1, g])
        pcb = builder.gep(C.data, [coff_])
        for (cl, q, g), v in n.items():
            builder.store(v, vptr(pcb, builder.mul(k_((cl * 9 + q) * 2 + g), cs_), _VF16),
                          align=4)
        limv, piv, hv = _taylor_limit(builder, P,
                                      context.cast(builder, args[14], sg.args[14], types.float64))
        ge = builder.fcmp_ordered(">=", _taylor16(builder, n, P, piv, hv), limv)
        return builder.zext(builder.bitcast(ge, ir.IntType(16)), _I64)
    return sig, codegen
