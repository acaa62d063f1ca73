"""Lab 04's fused order-3 block: one ``<8 x i64>`` intrinsic counts the 4 prefix rows of both
classes against 8 candidate SNPs, derives the other 5 rows from the pair tables, stores the 36
count vectors and returns the lanes whose χ² bound reaches a limit — the counts never go through
memory between the integer phase and the first bound (``dfs._last_stage``'s fused path).

Generic LLVM IR apart from ``_intrinsics._recip`` (vrcp14pd only where numba compiles for
AVX-512); imports only llvmlite, numba and ``_intrinsics``.
"""
from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from ._intrinsics import _I8, _I64, _V8, _VF, _declare, _chi_term, _int_args_ok, _splat

_P8 = ir.IntType(8).as_pointer()


def _I32(v):
    return ir.Constant(ir.IntType(32), v)


@intrinsic
def _fused3_v8(typingctx, tab, t1, t0, W, lanes, s1, s0, gstr, nw1, nw0, pj, par, blk, pc, lim,
               counts, coff, cs, pf):
    """For the 8 candidates of one lane block at order 3 with pair tables (R = 9 split rows):

    * counts n_c(q, g) of rows q < 4 (first SNP's genotype a = q // 2, second's b = q % 2) with
      the candidate's genotype g < 2, class 1 over words [t1, t1 + nw1) of ``tab`` (lanes from
      ``lanes[s1 + g·gstr + 8i]``), class 0 over [t0, t0 + nw0) (``s0``), 16 accumulators;
    * n(2, b) = pj(b) − n(0, b) − n(1, b) (rows 4 + b), n(a, 2) = par(a) − n(a, 0) − n(a, 1)
      (rows 6 + a), the pair tables' blocked layout at ``blk`` (``dfs._pair_counts``);
    * stores row q of class c, genotype g at counts[((c·9 + q)·2 + g)·cs + coff];
    * prefetches the lane words ``pf`` on (the next lane block: 2·gstr) into L1;
    * returns the bit mask of the lanes with S = Σ a²/n ≥ lim (``_intrinsics._chi_term``; the
      prefix row r's genotype 2 from its class counts ``pc[r, c]``, a 9 × 2 int64 array).
    """
    arrs = (tab, lanes, pj, par, pc, counts)
    if not (all(isinstance(a, types.Array) for a in arrs)
            and _int_args_ok(t1, t0, W, s1, s0, gstr, nw1, nw0, blk, coff, cs, pf)
            and isinstance(lim, types.Float)):
        return None
    sig = types.int64(tab, t1, t0, W, lanes, s1, s0, gstr, nw1, nw0, pj, par, blk, pc, lim,
                      counts, coff, cs, pf)

    def codegen(context, builder, sg, args):
        T, L, PJ, PA, P, C = (context.make_array(sg.args[k])(context, builder, args[k])
                              for k in (0, 4, 10, 11, 13, 15))
        c = lambda k: context.cast(builder, args[k], sg.args[k], types.int64)  # noqa: E731
        k_ = lambda v: ir.Constant(_I64, v)  # noqa: E731
        W_, gstr_, blk_, coff_, cs_ = c(3), c(7), c(12), c(16), c(17)
        ctpop = _declare(builder, "llvm.ctpop.v8i64", _V8, [_V8])
        zero_mask = ir.Constant(ir.VectorType(ir.IntType(32), 8), [0] * 8)
        prefetch = _declare(builder, "llvm.prefetch.p0", ir.VoidType(),
                            [_P8, ir.IntType(32), ir.IntType(32), ir.IntType(32)])
        gstr2 = c(18)

        def vptr(base, off):
            return builder.bitcast(builder.gep(base, [off]), _V8.as_pointer())

        n = {}
        for cl, (tk, sk, nk) in ((1, (1, 5, 8)), (0, (2, 6, 9))):
            accs = [cgutils.alloca_once_value(builder, ir.Constant(_V8, None)) for _ in range(8)]
            pt = builder.gep(T.data, [c(tk)])
            pb0 = builder.gep(L.data, [c(sk)])
            pb1 = builder.gep(pb0, [gstr_])
            with cgutils.for_range(builder, c(nk)) as loop:
                i = loop.index
                i8 = builder.mul(i, k_(8))
                sv = (builder.load(vptr(pb0, i8), align=8), builder.load(vptr(pb1, i8), align=8))
                for pb in (pb0, pb1):    # the next lane block (2·gstr on) into L1 meanwhile
                    ahead = builder.bitcast(builder.gep(pb, [builder.add(i8, gstr2)]), _P8)
                    builder.call(prefetch, [ahead, _I32(0), _I32(3), _I32(1)])
                for q in range(4):
                    x = builder.load(builder.gep(pt, [builder.add(builder.mul(k_(q), W_), i)]))
                    v = builder.insert_element(ir.Constant(_V8, ir.Undefined), x,
                                               ir.Constant(ir.IntType(32), 0))
                    p = builder.shuffle_vector(v, ir.Constant(_V8, ir.Undefined), zero_mask)
                    for g in range(2):
                        a = accs[2 * q + g]
                        builder.store(builder.add(builder.load(a),
                                                  builder.call(ctpop, [builder.and_(p, sv[g])])),
                                      a)
            for q in range(4):
                for g in range(2):
                    n[cl, q, g] = builder.load(accs[2 * q + g])
            for g in range(2):
                def ext(base, a):
                    o = builder.add(blk_, k_(((cl * 3 + a) * 2 + g) * 8))
                    return builder.load(vptr(base, o), align=8)
                for b in range(2):
                    n[cl, 4 + b, g] = builder.sub(builder.sub(ext(PJ.data, b), n[cl, b, g]),
                                                  n[cl, 2 + b, g])
                for a in range(3):
                    n[cl, 6 + a, g] = builder.sub(builder.sub(ext(PA.data, a), n[cl, 2 * a, g]),
                                                  n[cl, 2 * a + 1, g])
        pcb = builder.gep(C.data, [coff_])
        for (cl, q, g), v in n.items():
            builder.store(v, vptr(pcb, builder.mul(k_((cl * 9 + q) * 2 + g), cs_)), align=8)
        sums = [ir.Constant(_VF, None)] * 3
        for r in range(9):
            z = {}
            for cl in (1, 0):
                t = builder.load(builder.gep(P.data, [k_(2 * r + cl)]))
                z[cl] = builder.sub(builder.sub(_splat(builder, t, _V8), n[cl, r, 0]),
                                    n[cl, r, 1])
            cells = ((n[1, r, 0], n[0, r, 0]), (n[1, r, 1], n[0, r, 1]), (z[1], z[0]))
            sums = [builder.fadd(s, _chi_term(builder, context, ca, cb, None))
                    for s, (ca, cb) in zip(sums, cells)]
        tot = builder.fadd(builder.fadd(sums[0], sums[1]), sums[2])
        limv = _splat(builder, context.cast(builder, args[14], sg.args[14], types.float64), _VF)
        ge = builder.fcmp_ordered(">=", tot, limv)
        return builder.zext(builder.bitcast(ge, _I8), _I64)
    return sig, codegen
