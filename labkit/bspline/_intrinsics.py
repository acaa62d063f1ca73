"""LLVM intrinsic of lab 02: the SoA → canonical transpose of 8 splines at a time in registers.

``_streams_to_canonical8`` reads the 10 SoA streams of 8 consecutive splines from a scratch
block (10 vector loads), interleaves them with ``shufflevector`` into the canonical
``value (…, N)``, ``grad (…, N, 3)``, ``hess (…, N, 3, 3)`` layouts and writes them with 1 + 3 + 9
full-vector **non-temporal** stores (64-byte-aligned: the caller guarantees it) — instead of
8 × 13 scalar stores (LLVM does not vectorise the stride-3 and stride-9 store groups of the
plain loop), and without reading the output's lines from memory before writing them. An
``sfence`` at the end on x86 (non-temporal stores are weakly ordered). Generic LLVM IR
otherwise (``<8 x double>`` vectors, shuffles, ``!nontemporal``): zmm on AVX-512, ymm on AVX2,
NEON on AArch64 (where the hint may become plain stores).

Used by ``engine._range_canonical``; imports only llvmlite and numba.
"""
from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

_I32, _I64, _F64 = ir.IntType(32), ir.IntType(64), ir.DoubleType()
_V8 = ir.VectorType(_F64, 8)
#: stream of each canonical entry: grad components gx, gy, gz; hess entries row-major (symmetric)
_GRAD_SRC = (1, 2, 3)
_HESS_SRC = (4, 5, 6, 5, 7, 8, 6, 8, 9)


def _mask(lanes):
    return ir.Constant(ir.VectorType(_I32, len(lanes)), [ir.Constant(_I32, v) for v in lanes])


def _concat(builder, a, b):
    n = a.type.count
    return builder.shuffle_vector(a, b, _mask(range(2 * n)))


def _store(builder, val, ptr, nontemporal):
    st = builder.store(val, builder.bitcast(ptr, _V8.as_pointer()), align=64)
    if nontemporal:
        st.set_metadata("nontemporal", builder.module.add_metadata([ir.Constant(_I32, 1)]))


def _interleave_store(builder, srcs, comps, ptr, nontemporal):
    # srcs: list of <8 x double>; comps: source index of each of the C components per spline;
    # writes the 8·C doubles spline-major (ptr[8·C]) as C vector stores of 8
    n = 1
    while n < len(srcs):
        n *= 2
    vs = list(srcs) + [srcs[0]] * (n - len(srcs))
    while len(vs) > 1:                                   # one wide vector: source s at lanes 8s…
        vs = [_concat(builder, vs[i], vs[i + 1]) for i in range(0, len(vs), 2)]
    wide = vs[0]
    C = len(comps)
    for r in range(C):
        lanes = [comps[e % C] * 8 + e // C for e in range(8 * r, 8 * r + 8)]
        part = builder.shuffle_vector(wide, wide, _mask(lanes))
        _store(builder, part, builder.gep(ptr, [ir.Constant(_I64, 8 * r)]), nontemporal)


def _transpose_typer(nontemporal, buf, boff, ld, value, grad, hess, coff, n8):
    # for g in 0 … n8-1: splines ``8g … 8g+7`` of the scratch streams ``buf.flat[boff + s·ld + …]``
    # (s = 0 … 9, STREAMS order) → ``value.flat[coff + …]``, ``grad.flat[3·(coff + …)]``,
    # ``hess.flat[9·(coff + …)]`` (float64; float32 streams are widened). All arrays C-contiguous.
    if not all(isinstance(a, types.Array) and a.layout == "C" for a in (buf, value, grad, hess)):
        return None
    if buf.dtype not in (types.float32, types.float64):
        return None
    if any(a.dtype != types.float64 for a in (value, grad, hess)):
        return None
    if not all(isinstance(t, types.Integer) for t in (boff, ld, coff, n8)):
        return None
    sig = types.void(buf, boff, ld, value, grad, hess, coff, n8)

    def codegen(context, builder, signature, args):
        arr = [context.make_array(signature.args[i])(context, builder, args[i]) for i in (0, 3, 4, 5)]
        B, V, G, H = (a.data for a in arr)
        boff_, ld_, coff_, n8_ = (context.cast(builder, args[i], signature.args[i], types.int64)
                                  for i in (1, 2, 6, 7))
        vin = ir.VectorType(B.type.pointee, 8)
        c3, c9, c8 = (ir.Constant(_I64, v) for v in (3, 9, 8))
        with cgutils.for_range(builder, n8_) as loop:
            k = builder.mul(loop.index, c8)
            s = []
            for st in range(10):
                off = builder.add(boff_, builder.add(builder.mul(ld_, ir.Constant(_I64, st)), k))
                v = builder.load(builder.bitcast(builder.gep(B, [off]), vin.as_pointer()), align=4)
                s.append(v if vin.element == _F64 else builder.fpext(v, _V8))
            j = builder.add(coff_, k)
            _store(builder, s[0], builder.gep(V, [j]), nontemporal)
            _interleave_store(builder, [s[1], s[2], s[3]], (0, 1, 2),
                              builder.gep(G, [builder.mul(j, c3)]), nontemporal)
            _interleave_store(builder, s[4:10], tuple(c - 4 for c in _HESS_SRC),
                              builder.gep(H, [builder.mul(j, c9)]), nontemporal)
        if nontemporal and "x86" in (builder.module.triple or _host_triple()):
            fence = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(ir.VoidType(), []), "llvm.x86.sse.sfence")
            builder.call(fence, [])
        return context.get_dummy_value()
    return sig, codegen


@intrinsic
def _streams_to_canonical8(typingctx, buf, boff, ld, value, grad, hess, coff, n8):
    """For g in 0 … n8-1: splines ``8g … 8g+7`` of the scratch streams ``buf.flat[boff + s·ld + …]``
    (s = 0 … 9, STREAMS order) → ``value.flat[coff + …]``, ``grad.flat[3·(coff + …)]``,
    ``hess.flat[9·(coff + …)]`` (float64; float32 streams are widened), non-temporal stores.
    All arrays C-contiguous, the canonical rows of every 8 splines on 64 bytes."""
    return _transpose_typer(True, buf, boff, ld, value, grad, hess, coff, n8)


@intrinsic
def _streams_to_canonical8_t(typingctx, buf, boff, ld, value, grad, hess, coff, n8):
    """As :func:`_streams_to_canonical8` with ordinary (temporal) stores and no fence."""
    return _transpose_typer(False, buf, boff, ld, value, grad, hess, coff, n8)


def _host_triple() -> str:
    from llvmlite import binding
    return binding.get_process_triple()


@intrinsic
def _prefetch_lines(typingctx, arr, start, nlines, write, locality):
    """``llvm.prefetch`` of ``nlines`` cache lines of the C-contiguous float64 array ``arr`` from
    element ``start`` on (one per 8 elements), for writing when ``write`` (a literal) is true —
    generic LLVM IR (prefetchw/prefetcht0 on x86, PRFM on AArch64, dropped where unsupported)."""
    if not (isinstance(arr, types.Array) and arr.layout == "C" and arr.dtype == types.float64):
        return None
    if not (isinstance(start, types.Integer) and isinstance(nlines, types.Integer)):
        return None
    if not (isinstance(write, types.IntegerLiteral) and isinstance(locality, types.IntegerLiteral)):
        return None
    rw, loc = int(write.literal_value != 0), int(locality.literal_value)
    sig = types.void(arr, start, nlines, write, locality)

    def codegen(context, builder, signature, args):
        data = context.make_array(signature.args[0])(context, builder, args[0]).data
        start_, n_ = (context.cast(builder, args[i], signature.args[i], types.int64) for i in (1, 2))
        i8p = ir.IntType(8).as_pointer()
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [i8p, _I32, _I32, _I32]),
            "llvm.prefetch.p0i8")
        with cgutils.for_range(builder, n_) as loop:
            off = builder.add(start_, builder.mul(loop.index, ir.Constant(_I64, 8)))
            ptr = builder.bitcast(builder.gep(data, [off]), i8p)
            builder.call(fn, [ptr, ir.Constant(_I32, rw), ir.Constant(_I32, loc), ir.Constant(_I32, 1)])
        return context.get_dummy_value()
    return sig, codegen
