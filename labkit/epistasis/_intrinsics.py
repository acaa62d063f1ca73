"""LLVM intrinsics of lab 04: scalar ``ctpop``, fused ``<8 x i64>`` AND + ctpop, the lane counters
of the depth-first search, the counts' subtraction, Muła's AVX2 ``pshufb`` lookup (the MI of 8
candidates at once is in ``_mi_rows.py``).

Used by the @njit kernels in ``kernels.py`` and ``_stages.py``; imports only llvmlite and numba.
"""
from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

_I8, _I64 = ir.IntType(8), ir.IntType(64)
_F64 = ir.DoubleType()
_V8 = ir.VectorType(_I64, 8)


def _declare(builder, name, ret, args):
    return cgutils.get_or_insert_function(builder.module, ir.FunctionType(ret, args), name)


def _vload(builder, base, offset, vty):
    ptr = builder.gep(base, [offset])
    return builder.load(builder.bitcast(ptr, vty.as_pointer()), align=8)


@intrinsic
def popcount64(typingctx, x):
    """Number of set bits of an integer word (LLVM ``ctpop`` → one ``popcnt``); use inside @njit."""
    if not isinstance(x, types.Integer):
        return None
    sig = types.int64(x)

    def codegen(context, builder, signature, args):
        v = context.cast(builder, args[0], signature.args[0], types.uint64)
        return builder.call(_declare(builder, "llvm.ctpop.i64", _I64, [_I64]), [v])
    return sig, codegen


def _int_args_ok(*tys):
    return all(isinstance(t, types.Integer) for t in tys)


@intrinsic
def _popcount_v8(typingctx, a, aoff, n8):
    """Σ popcount(a[aoff : aoff + 8*n8]) with <8 x i64> ctpop (zmm vpopcntq on AVX-512)."""
    if not (isinstance(a, types.Array) and _int_args_ok(aoff, n8)):
        return None
    sig = types.int64(a, aoff, n8)

    def codegen(context, builder, signature, args):
        A = context.make_array(signature.args[0])(context, builder, args[0])
        off = context.cast(builder, args[1], signature.args[1], types.int64)
        n = context.cast(builder, args[2], signature.args[2], types.int64)
        base = builder.gep(A.data, [off])
        ctpop = _declare(builder, "llvm.ctpop.v8i64", _V8, [_V8])
        acc = cgutils.alloca_once_value(builder, ir.Constant(_V8, None))
        with cgutils.for_range(builder, n) as loop:
            i = builder.mul(loop.index, ir.Constant(_I64, 8))
            v = _vload(builder, base, i, _V8)
            builder.store(builder.add(builder.load(acc), builder.call(ctpop, [v])), acc)
        red = _declare(builder, "llvm.vector.reduce.add.v8i64", _I64, [_V8])
        return builder.call(red, [builder.load(acc)])
    return sig, codegen


@intrinsic
def _and_popcount_v8(typingctx, a, aoff, b, boff, n8):
    """Σ popcount(a[aoff+w] & b[boff+w]) over 8*n8 words, <8 x i64> vectors."""
    if not (isinstance(a, types.Array) and isinstance(b, types.Array)
            and _int_args_ok(aoff, boff, n8)):
        return None
    sig = types.int64(a, aoff, b, boff, n8)

    def codegen(context, builder, signature, args):
        A = context.make_array(signature.args[0])(context, builder, args[0])
        B = context.make_array(signature.args[2])(context, builder, args[2])
        c = lambda k: context.cast(builder, args[k], signature.args[k], types.int64)  # noqa: E731
        pa, pb = builder.gep(A.data, [c(1)]), builder.gep(B.data, [c(3)])
        ctpop = _declare(builder, "llvm.ctpop.v8i64", _V8, [_V8])
        acc = cgutils.alloca_once_value(builder, ir.Constant(_V8, None))
        with cgutils.for_range(builder, c(4)) as loop:
            i = builder.mul(loop.index, ir.Constant(_I64, 8))
            v = builder.and_(_vload(builder, pa, i, _V8), _vload(builder, pb, i, _V8))
            builder.store(builder.add(builder.load(acc), builder.call(ctpop, [v])), acc)
        red = _declare(builder, "llvm.vector.reduce.add.v8i64", _I64, [_V8])
        return builder.call(red, [builder.load(acc)])
    return sig, codegen


@intrinsic
def _and_popcount2_v8(typingctx, a, aoff, b, boff0, boff1, n8):
    """Two fused counts sharing the ``a`` loads: Σ pc(a & b0) + (Σ pc(a & b1) << 32)."""
    if not (isinstance(a, types.Array) and isinstance(b, types.Array)
            and _int_args_ok(aoff, boff0, boff1, n8)):
        return None
    sig = types.int64(a, aoff, b, boff0, boff1, n8)

    def codegen(context, builder, signature, args):
        A = context.make_array(signature.args[0])(context, builder, args[0])
        B = context.make_array(signature.args[2])(context, builder, args[2])
        c = lambda k: context.cast(builder, args[k], signature.args[k], types.int64)  # noqa: E731
        pa = builder.gep(A.data, [c(1)])
        pb0, pb1 = builder.gep(B.data, [c(3)]), builder.gep(B.data, [c(4)])
        ctpop = _declare(builder, "llvm.ctpop.v8i64", _V8, [_V8])
        acc0 = cgutils.alloca_once_value(builder, ir.Constant(_V8, None))
        acc1 = cgutils.alloca_once_value(builder, ir.Constant(_V8, None))
        with cgutils.for_range(builder, c(5)) as loop:
            i = builder.mul(loop.index, ir.Constant(_I64, 8))
            va = _vload(builder, pa, i, _V8)
            x0 = builder.call(ctpop, [builder.and_(va, _vload(builder, pb0, i, _V8))])
            x1 = builder.call(ctpop, [builder.and_(va, _vload(builder, pb1, i, _V8))])
            builder.store(builder.add(builder.load(acc0), x0), acc0)
            builder.store(builder.add(builder.load(acc1), x1), acc1)
        packed = builder.add(builder.load(acc0),
                             builder.shl(builder.load(acc1), ir.Constant(_V8, [32] * 8)))
        red = _declare(builder, "llvm.vector.reduce.add.v8i64", _I64, [_V8])
        return builder.call(red, [packed])
    return sig, codegen


@intrinsic
def _and_store_v8(typingctx, dst, o, a, s, b, bo, n8c, n8):
    """dst[o + w] = a[s + w] & b[bo + w] for w < 8*n8 (<8 x i64> vectors); returns the popcount
    of the first 8*n8c words + (that of the rest << 32): a prefix-table row and its class counts."""
    if not (isinstance(dst, types.Array) and isinstance(a, types.Array)
            and isinstance(b, types.Array) and _int_args_ok(o, s, bo, n8c, n8)):
        return None
    sig = types.int64(dst, o, a, s, b, bo, n8c, n8)

    def codegen(context, builder, signature, args):
        D, A, B = (context.make_array(signature.args[k])(context, builder, args[k])
                   for k in (0, 2, 4))
        c = lambda k: context.cast(builder, args[k], signature.args[k], types.int64)  # noqa: E731
        pd, pa, pb = builder.gep(D.data, [c(1)]), builder.gep(A.data, [c(3)]), \
            builder.gep(B.data, [c(5)])
        ctpop = _declare(builder, "llvm.ctpop.v8i64", _V8, [_V8])
        acc0 = cgutils.alloca_once_value(builder, ir.Constant(_V8, None))
        acc1 = cgutils.alloca_once_value(builder, ir.Constant(_V8, None))
        n8c_ = c(6)
        with cgutils.for_range(builder, c(7)) as loop:
            i = builder.mul(loop.index, ir.Constant(_I64, 8))
            v = builder.and_(_vload(builder, pa, i, _V8), _vload(builder, pb, i, _V8))
            builder.store(v, builder.bitcast(builder.gep(pd, [i]), _V8.as_pointer()), align=8)
            pc = builder.call(ctpop, [v])
            case = builder.icmp_signed("<", loop.index, n8c_)
            zero = ir.Constant(_V8, None)
            builder.store(builder.add(builder.load(acc0), builder.select(case, pc, zero)), acc0)
            builder.store(builder.add(builder.load(acc1), builder.select(case, zero, pc)), acc1)
        packed = builder.add(builder.load(acc0),
                             builder.shl(builder.load(acc1), ir.Constant(_V8, [32] * 8)))
        red = _declare(builder, "llvm.vector.reduce.add.v8i64", _I64, [_V8])
        return builder.call(red, [packed])
    return sig, codegen


@intrinsic
def _sub2_v8(typingctx, dst, o, o0, o1, par, op, n8):
    """dst[o + x] = par[op + x] − dst[o0 + x] − dst[o1 + x] for x < 8*n8, <8 x i64> vectors (the
    counts of genotype 2 by subtraction; plain loops over one array lose their vectors to numba's
    negative-index wraparound and LLVM's alias checks)."""
    if not (isinstance(dst, types.Array) and isinstance(par, types.Array)
            and _int_args_ok(o, o0, o1, op, n8)):
        return None
    sig = types.void(dst, o, o0, o1, par, op, n8)

    def codegen(context, builder, signature, args):
        D = context.make_array(signature.args[0])(context, builder, args[0])
        P = context.make_array(signature.args[4])(context, builder, args[4])
        c = lambda k: context.cast(builder, args[k], signature.args[k], types.int64)  # noqa: E731
        pd, p0, p1 = (builder.gep(D.data, [c(k)]) for k in (1, 2, 3))
        pp = builder.gep(P.data, [c(5)])
        with cgutils.for_range(builder, c(6)) as loop:
            i = builder.mul(loop.index, ir.Constant(_I64, 8))
            v = builder.sub(builder.sub(_vload(builder, pp, i, _V8), _vload(builder, p0, i, _V8)),
                            _vload(builder, p1, i, _V8))
            builder.store(v, builder.bitcast(builder.gep(pd, [i]), _V8.as_pointer()), align=8)
        return context.get_dummy_value()
    return sig, codegen


@intrinsic
def _derive3_v8(typingctx, counts, R, cs, pj, par, kb8, nvec):
    """The 5 derived prefix rows of an order-3 batch in one pass, <8 x i64> per 8 candidates:
    with n(a, b) the counted rows (first SNP's genotype a, second's b < 2; row a·2 + b of
    ``counts``), n(2, b) = pj(b) − n(0, b) − n(1, b) (rows 4 + b) and n(a, 2) = par(a) − n(a, 0) −
    n(a, 1) (rows 6 + a, a = 2 from the derived rows), per class c and genotype g of the last SNP;
    count row q at ((c·R + q)·2 + g)·cs, pj(b) and par(a) in the pair tables' blocked layout
    (``_pair_counts``: block kb8 + x of 8 SNPs holds its 12 vectors ((c·3 + a)·2 + g) side by
    side, one stream per batch; R = 9: see ``_last_stage``)."""
    if not (isinstance(counts, types.Array) and isinstance(pj, types.Array)
            and isinstance(par, types.Array) and _int_args_ok(R, cs, kb8, nvec)):
        return None
    sig = types.void(counts, R, cs, pj, par, kb8, nvec)

    def codegen(context, builder, signature, args):
        C, PJ, PA = (context.make_array(signature.args[k])(context, builder, args[k])
                     for k in (0, 3, 4))
        c = lambda k: context.cast(builder, args[k], signature.args[k], types.int64)  # noqa: E731
        R_, cs_, kb8_ = c(1), c(2), c(5)
        k_ = lambda v: ir.Constant(_I64, v)  # noqa: E731

        def ptr(base, off):
            return builder.bitcast(builder.gep(base, [off]), _V8.as_pointer())
        with cgutils.for_range(builder, c(6)) as loop:
            x8 = builder.mul(loop.index, k_(8))
            blk = builder.mul(builder.add(kb8_, loop.index), k_(96))
            for cl in range(2):
                for g in range(2):
                    def row(q):
                        o = builder.mul(builder.add(builder.mul(builder.add(
                            builder.mul(k_(cl), R_), k_(q)), k_(2)), k_(g)), cs_)
                        return builder.add(o, x8)

                    def ext(base, a):
                        o = builder.add(blk, k_(((cl * 3 + a) * 2 + g) * 8))
                        return builder.load(ptr(base, o), align=8)
                    n = {q: builder.load(ptr(C.data, row(q)), align=8) for q in range(4)}
                    for b in range(2):       # n(2, b): rows 4 + b
                        n[4 + b] = builder.sub(builder.sub(ext(PJ.data, b), n[b]), n[2 + b])
                    for a in range(3):       # n(a, 2): rows 6 + a
                        n[6 + a] = builder.sub(builder.sub(ext(PA.data, a), n[2 * a]),
                                               n[2 * a + 1])
                    for q in range(4, 9):
                        builder.store(n[q], ptr(C.data, row(q)), align=8)
        return context.get_dummy_value()
    return sig, codegen


def _make_lane_counter(G):
    """Intrinsic counting G prefix rows against 8 SNPs at once (one SNP per vector lane).

    For words i < nw: s_g = bitsL[s_off + g*gstride + 8*i : +8] (8 SNPs' word i of genotype row g),
    p_r = splat(tab[toff + r*W + i]); acc[r, g] += ctpop(p_r & s_g). No horizontal reduction:
    lane j of acc[r, g] is the count of SNP j. acc[r, g] is added to counts[coff + (2r+g)*cstride]
    (stored there when ``first`` is non-zero: the first segment of a class, so no zeroing).
    """
    @intrinsic
    def lane_counter(typingctx, tab, toff, W, bitsL, s_off, gstride, nw, counts, coff, cstride,
                     first):
        if not (isinstance(tab, types.Array) and isinstance(bitsL, types.Array)
                and isinstance(counts, types.Array)
                and _int_args_ok(toff, W, s_off, gstride, nw, coff, cstride, first)):
            return None
        sig = types.void(tab, toff, W, bitsL, s_off, gstride, nw, counts, coff, cstride, first)

        def codegen(context, builder, signature, args):
            T = context.make_array(signature.args[0])(context, builder, args[0])
            B = context.make_array(signature.args[3])(context, builder, args[3])
            C = context.make_array(signature.args[7])(context, builder, args[7])
            c = lambda k: context.cast(builder, args[k], signature.args[k], types.int64)  # noqa
            toff_, W_, soff, gstr, nw_, coff_, cstr = c(1), c(2), c(4), c(5), c(6), c(8), c(9)
            ctpop = _declare(builder, "llvm.ctpop.v8i64", _V8, [_V8])
            i32 = ir.IntType(32)
            zero_mask = ir.Constant(ir.VectorType(i32, 8), [0] * 8)
            accs = [cgutils.alloca_once_value(builder, ir.Constant(_V8, None))
                    for _ in range(2 * G)]
            pt = builder.gep(T.data, [toff_])
            pb0 = builder.gep(B.data, [soff])
            pb1 = builder.gep(B.data, [builder.add(soff, gstr)])
            with cgutils.for_range(builder, nw_) as loop:
                i = loop.index
                i8 = builder.mul(i, ir.Constant(_I64, 8))
                s0 = _vload(builder, pb0, i8, _V8)
                s1 = _vload(builder, pb1, i8, _V8)
                for r in range(G):
                    off = builder.add(builder.mul(ir.Constant(_I64, r), W_), i)
                    x = builder.load(builder.gep(pt, [off]))
                    v = builder.insert_element(ir.Constant(_V8, ir.Undefined), x,
                                               ir.Constant(i32, 0))
                    p = builder.shuffle_vector(v, ir.Constant(_V8, ir.Undefined), zero_mask)
                    for g, s in ((0, s0), (1, s1)):
                        a = accs[2 * r + g]
                        builder.store(builder.add(builder.load(a),
                                                  builder.call(ctpop, [builder.and_(p, s)])), a)
            pc = builder.gep(C.data, [coff_])
            store = builder.icmp_signed("!=", c(10), ir.Constant(_I64, 0))
            for j in range(2 * G):
                off = builder.mul(ir.Constant(_I64, j), cstr)
                ptr = builder.bitcast(builder.gep(pc, [off]), _V8.as_pointer())
                with builder.if_else(store) as (then, otherwise):
                    with then:
                        builder.store(builder.load(accs[j]), ptr, align=8)
                    with otherwise:
                        builder.store(builder.add(builder.load(ptr, align=8),
                                                  builder.load(accs[j])), ptr, align=8)
            return context.get_dummy_value()
        return sig, codegen
    return lane_counter


_lanes1 = _make_lane_counter(1)
_lanes3 = _make_lane_counter(3)
_lanes4 = _make_lane_counter(4)
_lanes6 = _make_lane_counter(6)
_lanes9 = _make_lane_counter(9)


_V32B = ir.VectorType(_I8, 32)
_V4 = ir.VectorType(_I64, 4)
_NIBBLE_POP = [0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4]


@intrinsic
def _mula_avx2(typingctx, a, aoff, n4):
    """Muła et al.'s AVX2 lookup popcount over 4*n4 words: vpshufb nibble table + vpsadbw."""
    if not (isinstance(a, types.Array) and _int_args_ok(aoff, n4)):
        return None
    sig = types.int64(a, aoff, n4)

    def codegen(context, builder, signature, args):
        A = context.make_array(signature.args[0])(context, builder, args[0])
        off = context.cast(builder, args[1], signature.args[1], types.int64)
        n = context.cast(builder, args[2], signature.args[2], types.int64)
        base = builder.gep(A.data, [off])
        pshufb = _declare(builder, "llvm.x86.avx2.pshuf.b", _V32B, [_V32B, _V32B])
        psadbw = _declare(builder, "llvm.x86.avx2.psad.bw", _V4, [_V32B, _V32B])
        lut = ir.Constant(_V32B, _NIBBLE_POP * 2)
        low = ir.Constant(_V32B, [0x0F] * 32)
        four = ir.Constant(_V32B, [4] * 32)
        zero = ir.Constant(_V32B, None)
        acc = cgutils.alloca_once_value(builder, ir.Constant(_V4, None))
        with cgutils.for_range(builder, n) as loop:
            i = builder.mul(loop.index, ir.Constant(_I64, 4))
            v = _vload(builder, base, i, _V32B)
            lo = builder.and_(v, low)
            hi = builder.and_(builder.lshr(v, four), low)
            cnt = builder.add(builder.call(pshufb, [lut, lo]), builder.call(pshufb, [lut, hi]))
            builder.store(builder.add(builder.load(acc), builder.call(psadbw, [cnt, zero])), acc)
        red = _declare(builder, "llvm.vector.reduce.add.v4i64", _I64, [_V4])
        return builder.call(red, [builder.load(acc)])
    return sig, codegen
