"""Lab 04 — epistasis detection: bit-packed genotype tables, popcount, masked mutual information.

Reproduces the ideas of "A SIMD algorithm for the detection of epistatic interactions of any
order" (bit-packed genotype tables with 3 rows per SNP for cases and controls, combine by AND,
popcount — hardware vs Muła's nibble lookup —, fused combine-and-popcount into contingency
tables, mutual information with masking instead of branches, depth-first search reusing prefix
tables, segmented evaluation) with numba.

Conventions
-----------
* ``genotypes`` is an integer array *individuals × SNPs* with values 0/1/2; ``labels`` holds
  0 = control, 1 = case, in any order (cases and controls interleaved).
* Contingency tables are ``counts[class, cell]`` with class 0 = controls, 1 = cases and
  ``cell = Σ_t g_t · 3**(k-1-t)`` (the first SNP is the most significant digit).
* MI is the plug-in mutual information ``H(X) + H(Y) − H(X, Y)`` in nats between the 3**k-cell
  genotype combination X and the phenotype Y; empty cells contribute 0.
* Ranking: MI descending, ties by SNP indices ascending. Values are compared after rounding
  to 1e-11 nats, so that mathematically equal MIs computed in a different summation order tie.
"""
from __future__ import annotations

import math
import os
import platform
from dataclasses import dataclass, field
from itertools import combinations

import numba
import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.core import cgutils
from numba.extending import intrinsic

from labkit._sizes import resolve_size
from labkit.bench import Target, ratio_of, throughput_of

__all__ = [
    "MAX_ORDER", "Encoded", "EpistasisInputs", "encode", "make_inputs", "reference",
    "reference_counts", "reference_mi", "reference_search", "validate", "search",
    "popcount64", "popcount_table", "popcount_nibble", "popcount_mula", "popcount_hw_scalar",
    "popcount_hw", "and_popcount", "combine_then_popcount", "combine_popcount",
    "combine_popcount_scalar", "contingency", "contingency_fused", "mi_combinations", "mi_branchy", "mi_masked",
    "mi_table", "mi_batch_branchy", "mi_batch_masked", "mi_batch_table", "nlogn_table",
    "search_stats", "BENCHMARK", "TARGETS", "run_benchmark", "MULA_KIND",
]

MAX_ORDER = 8          #: 3**8 = 6561 cells: beyond that almost every cell is empty anyway
_WORD_CHUNK = 8        #: words per 512-bit chunk; each class's row is padded to a multiple of it
_MI_SCALE = 1e11       #: ranking resolution (nats⁻¹): MI values closer than ~1e-11 tie


# ---------------------------------------------------------------------------------------------
# Input validation and encoding
# ---------------------------------------------------------------------------------------------

def _as_int_array(x, name: str, ndim: int) -> np.ndarray:
    a = np.asarray(x)
    if a.dtype == np.bool_:
        a = a.astype(np.int8)
    if a.ndim != ndim:
        shape = "individuals × SNPs" if ndim == 2 else "one entry per individual"
        raise ValueError(f"{name} must be a {ndim}-D array ({shape}); got shape {a.shape}")
    if not np.issubdtype(a.dtype, np.integer):
        raise TypeError(f"{name} must hold integers (got dtype {a.dtype}); convert with "
                        f"{name}.astype(np.int8) after checking the values are whole numbers")
    return a


def _first_bad(a: np.ndarray, allowed_max: int):
    bad = (a < 0) | (a > allowed_max)
    if not bad.any():
        return None
    pos = np.unravel_index(int(np.argmax(bad.ravel())), a.shape)
    return pos, a[pos], int(bad.sum())


def _check_data(genotypes, labels):
    g = _as_int_array(genotypes, "genotypes", 2)
    y = _as_int_array(labels, "labels", 1)
    if g.shape[0] != y.shape[0]:
        hint = (" — genotypes looks like SNPs × individuals: pass genotypes.T"
                if g.shape[1] == y.shape[0] else "")
        raise ValueError(f"genotypes has {g.shape[0]} rows (individuals) but labels has "
                         f"{y.shape[0]} entries; genotypes must be individuals × SNPs{hint}")
    if g.shape[1] == 0:
        raise ValueError("genotypes has no SNP columns; pass an individuals × SNPs array")
    bad = _first_bad(g, 2)
    if bad is not None:
        pos, val, n = bad
        raise ValueError(f"genotypes[{pos[0]}, {pos[1]}] = {val} ({n} bad values): genotypes "
                         "must be 0, 1 or 2 (minor-allele counts); recode or drop missing calls "
                         "(e.g. -1 or 3) before the search")
    bad = _first_bad(y, 1)
    if bad is not None:
        pos, val, n = bad
        raise ValueError(f"labels[{pos[0]}] = {val} ({n} bad values): labels must be 0 "
                         "(control) or 1 (case)")
    n_cases = int(np.count_nonzero(y))
    n_controls = y.shape[0] - n_cases
    if n_cases == 0 or n_controls == 0:
        which = "cases (label 1)" if n_cases == 0 else "controls (label 0)"
        raise ValueError(f"there are no {which}: MI needs both classes; check the label coding")
    return g, y


def _check_order(order, n_snps: int) -> int:
    if isinstance(order, bool) or not isinstance(order, (int, np.integer)):
        raise TypeError(f"order must be an int (1 … {MAX_ORDER}); got {order!r}")
    order = int(order)
    if not 1 <= order <= MAX_ORDER:
        raise ValueError(f"order must be between 1 and {MAX_ORDER}; got {order}")
    if order > n_snps:
        raise ValueError(f"order {order} needs at least {order} SNPs, but genotypes has only "
                         f"{n_snps} columns")
    return order


@dataclass
class Encoded:
    """Bit-packed genotype tables: ``bits[snp, genotype, word]``, case words first, then controls."""

    bits: np.ndarray          # (n_snps, 3, case_words + control_words) uint64, padding bits 0
    n_cases: int
    n_controls: int
    case_words: int
    control_words: int
    lanes: np.ndarray | None = None   # (ceil(n_snps/8), 2, words, 8): genotype rows 0, 1 of 8 SNPs per vector

    def __post_init__(self):
        if self.lanes is None:
            n, _, W = self.bits.shape
            npad = -(-n // 8) * 8
            b = np.zeros((npad, 2, W), dtype=np.uint64)
            b[:n] = self.bits[:, :2, :]
            self.lanes = np.ascontiguousarray(b.reshape(npad // 8, 8, 2, W).transpose(0, 2, 3, 1))

    @property
    def n_snps(self) -> int:
        """Number of SNPs."""
        return self.bits.shape[0]

    @property
    def words(self) -> int:
        """Words per genotype row (cases + controls, both padded to 8-word chunks)."""
        return self.bits.shape[2]

    @property
    def cases(self) -> np.ndarray:
        """Case sub-table view ``(n_snps, 3, case_words)``."""
        return self.bits[:, :, :self.case_words]

    @property
    def controls(self) -> np.ndarray:
        """Control sub-table view ``(n_snps, 3, control_words)``."""
        return self.bits[:, :, self.case_words:]

    @property
    def nbytes(self) -> int:
        """Bytes of packed data."""
        return self.bits.nbytes


def _pack_class(g: np.ndarray) -> np.ndarray:
    """(m individuals × n SNPs) → (n, 3, words) uint64 with bit i of the row = individual i."""
    m, n = g.shape
    words = max(_WORD_CHUNK, -(-m // (64 * _WORD_CHUNK)) * _WORD_CHUNK)
    out = np.zeros((n, 3, words * 8), dtype=np.uint8)
    gt = np.ascontiguousarray(g.T)
    for v in range(3):
        packed = np.packbits(gt == v, axis=1, bitorder="little")      # (n, ceil(m/8))
        out[:, v, :packed.shape[1]] = packed
    return out.view("<u8").astype(np.uint64, copy=False)


def encode(genotypes, labels) -> Encoded:
    """Pack genotypes (individuals × SNPs, 0/1/2) into 3 bit rows per SNP for cases and controls."""
    g, y = _check_data(genotypes, labels)
    cases = _pack_class(g[y == 1])
    controls = _pack_class(g[y == 0])
    bits = np.ascontiguousarray(np.concatenate([cases, controls], axis=2))
    return Encoded(bits, int(np.count_nonzero(y)), int(np.count_nonzero(y == 0)),
                   cases.shape[2], controls.shape[2])


# ---------------------------------------------------------------------------------------------
# LLVM intrinsics: scalar ctpop, fused <8 x i64> AND + ctpop, Muła's pshufb lookup
# ---------------------------------------------------------------------------------------------

_I8, _I64 = ir.IntType(8), ir.IntType(64)
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


def _make_lane_counter(G):
    """Intrinsic counting G prefix rows against 8 SNPs at once (one SNP per vector lane).

    For words i < nw: s_g = bitsL[s_off + g*gstride + 8*i : +8] (8 SNPs' word i of genotype row g),
    p_r = splat(tab[toff + r*W + i]); acc[r, g] += ctpop(p_r & s_g). No horizontal reduction:
    lane j of acc[r, g] is the count of SNP j. acc[r, g] is added to counts[coff + (2r+g)*cstride].
    """
    @intrinsic
    def lane_counter(typingctx, tab, toff, W, bitsL, s_off, gstride, nw, counts, coff, cstride):
        if not (isinstance(tab, types.Array) and isinstance(bitsL, types.Array)
                and isinstance(counts, types.Array)
                and _int_args_ok(toff, W, s_off, gstride, nw, coff, cstride)):
            return None
        sig = types.void(tab, toff, W, bitsL, s_off, gstride, nw, counts, coff, cstride)

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
            for j in range(2 * G):
                off = builder.mul(ir.Constant(_I64, j), cstr)
                ptr = builder.bitcast(builder.gep(pc, [off]), _V8.as_pointer())
                builder.store(builder.add(builder.load(ptr, align=8),
                                          builder.load(accs[j])), ptr, align=8)
            return context.get_dummy_value()
        return sig, codegen
    return lane_counter


_lanes1 = _make_lane_counter(1)
_lanes3 = _make_lane_counter(3)
_lanes9 = _make_lane_counter(9)


_F64 = ir.DoubleType()
_VF = ir.VectorType(_F64, 8)


def _splat(b, x, vty):
    v = b.insert_element(ir.Constant(vty, ir.Undefined), x, ir.Constant(ir.IntType(32), 0))
    return b.shuffle_vector(v, ir.Constant(vty, ir.Undefined),
                            ir.Constant(ir.VectorType(ir.IntType(32), 8), [0] * 8))


@intrinsic
def _mi_lanes(typingctx, counts, o1, o0, cstride, p1, p0, nlogn, acc):
    sig = types.void(counts, o1, o0, cstride, p1, p0, nlogn, acc)
    def codegen(context, builder, sg, args):
        C = context.make_array(sg.args[0])(context, builder, args[0])
        L = context.make_array(sg.args[6])(context, builder, args[6])
        A = context.make_array(sg.args[7])(context, builder, args[7])
        c = lambda k: context.cast(builder, args[k], sg.args[k], types.int64)
        o1_, o0_, cs, p1_, p0_ = c(1), c(2), c(3), c(4), c(5)
        a1 = _vload(builder, C.data, o1_, _V8); e1 = _vload(builder, C.data, builder.add(o1_, cs), _V8)
        a0 = _vload(builder, C.data, o0_, _V8); e0 = _vload(builder, C.data, builder.add(o0_, cs), _V8)
        z1 = builder.sub(builder.sub(_splat(builder, p1_, _V8), a1), e1)
        z0 = builder.sub(builder.sub(_splat(builder, p0_, _V8), a0), e0)
        base = _splat(builder, builder.ptrtoint(L.data, _I64), _V8)
        PV = ir.VectorType(_F64.as_pointer(), 8)
        gfn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(_VF, [PV, ir.IntType(32), ir.VectorType(ir.IntType(1), 8), _VF]), "llvm.masked.gather.v8f64.v8p0")
        allm = ir.Constant(ir.VectorType(ir.IntType(1), 8), [1]*8)
        def g(ix):
            addr = builder.add(base, builder.shl(ix, ir.Constant(_V8, [3]*8)))
            return builder.call(gfn, [builder.inttoptr(addr, PV), ir.Constant(ir.IntType(32), 8), allm, ir.Constant(_VF, None)])
        joint = builder.fadd(builder.fadd(builder.fadd(g(a1), g(e1)), builder.fadd(g(z1), g(a0))), builder.fadd(g(e0), g(z0)))
        marg = builder.fadd(builder.fadd(g(builder.add(a1, a0)), g(builder.add(e1, e0))), g(builder.add(z1, z0)))
        pa = builder.bitcast(A.data, _VF.as_pointer())
        builder.store(builder.fadd(builder.load(pa, align=8), builder.fsub(joint, marg)), pa, align=8)
        return context.get_dummy_value()
    return sig, codegen


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


def _host_has_avx2() -> bool:
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return False
    try:
        from llvmlite import binding as ll
        feats = ll.get_host_cpu_features()
        return bool(feats.get("avx2", False))
    except Exception:            # pragma: no cover - exotic llvmlite builds
        return False


_HAS_AVX2 = _host_has_avx2()
#: which Muła kernel this machine runs: "avx2-pshufb" (explicit vpshufb) or "scalar-nibble"
MULA_KIND = "avx2-pshufb" if _HAS_AVX2 else "scalar-nibble"


# ---------------------------------------------------------------------------------------------
# Popcount kernels over a 1-D uint64 array
# ---------------------------------------------------------------------------------------------

_BYTE_POP = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)
_NIBBLE_TABLE = np.array(_NIBBLE_POP, dtype=np.uint8)


@njit(cache=True)
def popcount_table(words):
    """Total set bits with a 256-entry byte lookup table (8 loads per word)."""
    b = words.view(np.uint8)
    total = 0
    for i in range(b.size):
        total += _BYTE_POP[b[i]]
    return total


@njit(cache=True)
def popcount_nibble(words):
    """Total set bits with a 16-entry nibble table, one byte at a time (portable Muła fallback)."""
    b = words.view(np.uint8)
    total = 0
    for i in range(b.size):
        x = b[i]
        total += _NIBBLE_TABLE[x & 15] + _NIBBLE_TABLE[x >> 4]
    return total


@njit(cache=True)
def _popcount_mula_avx2(words):
    n4 = words.size // 4
    total = _mula_avx2(words, 0, n4)
    for i in range(4 * n4, words.size):
        total += popcount64(words[i])
    return total


#: Muła's nibble-lookup popcount (vpshufb + vpsadbw on AVX2 machines, scalar nibble elsewhere)
popcount_mula = _popcount_mula_avx2 if _HAS_AVX2 else popcount_nibble


@njit(cache=True)
def popcount_hw_scalar(words):
    """Total set bits, one scalar hardware popcnt per word (what LLVM makes of a ctpop loop)."""
    total = 0
    for i in range(words.size):
        total += popcount64(words[i])
    return total


@njit(cache=True)
def popcount_hw(words):
    """Total set bits with <8 x i64> ctpop (one zmm vpopcntq per 8 words on AVX-512 VPOPCNTDQ)."""
    n8 = words.size // 8
    total = _popcount_v8(words, 0, n8)
    for i in range(8 * n8, words.size):
        total += popcount64(words[i])
    return total


@njit(cache=True)
def and_popcount(a, b):
    """Σ popcount(a & b) without storing a & b (fused combine + count, <8 x i64>)."""
    n = min(a.size, b.size)
    n8 = n // 8
    total = _and_popcount_v8(a, 0, b, 0, n8)
    for i in range(8 * n8, n):
        total += popcount64(a[i] & b[i])
    return total


# ---------------------------------------------------------------------------------------------
# Combine + popcount: prefix table (R × W) with one SNP's 3 rows (3 × W) → R*3 counts
# ---------------------------------------------------------------------------------------------

@njit(cache=True)
def combine_then_popcount(prefix, snp):
    """Materialise the combined table prefix[r] & snp[g] (R*3 rows), then popcount each row."""
    R, W = prefix.shape
    table = np.empty((R * 3, W), dtype=np.uint64)
    for r in range(R):
        for g in range(3):
            for w in range(W):
                table[r * 3 + g, w] = prefix[r, w] & snp[g, w]
    out = np.zeros(R * 3, dtype=np.int64)
    for row in range(R * 3):
        s = 0
        for w in range(W):
            s += popcount64(table[row, w])
        out[row] = s
    return out


@njit(cache=True)
def combine_popcount_scalar(prefix, snp):
    """Fused combine + popcount with scalar popcnt: counts[r*3+g] = Σ_w pc(prefix[r,w] & snp[g,w])."""
    R, W = prefix.shape
    out = np.zeros(R * 3, dtype=np.int64)
    for r in range(R):
        for g in range(3):
            s = 0
            for w in range(W):
                s += popcount64(prefix[r, w] & snp[g, w])
            out[r * 3 + g] = s
    return out


@njit(cache=True)
def combine_popcount(prefix, snp):
    """Fused combine + popcount, <8 x i64> vectors; two SNP rows per pass, third by subtraction."""
    R, W = prefix.shape
    p = np.ascontiguousarray(prefix).ravel()
    s = np.ascontiguousarray(snp).ravel()
    n8 = W // 8
    out = np.zeros(R * 3, dtype=np.int64)
    for r in range(R):
        packed = _and_popcount2_v8(p, r * W, s, 0, W, n8)
        c0 = packed & 0xFFFFFFFF
        c1 = packed >> 32
        c2 = _and_popcount_v8(p, r * W, s, 2 * W, n8)
        for w in range(8 * n8, W):
            c0 += popcount64(p[r * W + w] & s[w])
            c1 += popcount64(p[r * W + w] & s[W + w])
            c2 += popcount64(p[r * W + w] & s[2 * W + w])
        out[r * 3] = c0
        out[r * 3 + 1] = c1
        out[r * 3 + 2] = c2
    return out


# ---------------------------------------------------------------------------------------------
# Contingency tables of one k-SNP combination
# ---------------------------------------------------------------------------------------------

@njit(cache=True)
def contingency_fused(bits, case_words, snps):
    """counts[class, cell] for SNPs ``snps``: AND of their k genotype rows per cell, fused with popcount."""
    k = snps.size
    W = bits.shape[2]
    ncell = 3 ** k
    out = np.zeros((2, ncell), dtype=np.int64)
    digits = np.zeros(k, dtype=np.int64)
    for cell in range(ncell):
        rem = cell
        for t in range(k - 1, -1, -1):
            digits[t] = rem % 3
            rem //= 3
        for w in range(W):
            x = bits[snps[0], digits[0], w]
            for t in range(1, k):
                x &= bits[snps[t], digits[t], w]
            if w < case_words:
                out[1, cell] += popcount64(x)
            else:
                out[0, cell] += popcount64(x)
    return out


def contingency(enc: Encoded, snps) -> np.ndarray:
    """Contingency table ``counts[class, cell]`` (class 0 = controls, 1 = cases) of a SNP combination."""
    if not isinstance(enc, Encoded):
        raise TypeError("contingency needs an Encoded table: enc = epistasis.encode(genotypes, labels)")
    s = np.asarray(snps, dtype=np.int64).ravel()
    if s.size == 0 or s.size > MAX_ORDER:
        raise ValueError(f"give 1 … {MAX_ORDER} SNP indices; got {s.size}")
    if s.min() < 0 or s.max() >= enc.n_snps:
        raise ValueError(f"SNP indices must be in 0 … {enc.n_snps - 1}; got {s.tolist()}")
    return contingency_fused(enc.bits, enc.case_words, s)


@njit(cache=True)
def _mi_combinations(bits, case_words, combos, nlogn):
    out = np.empty(combos.shape[0])
    for i in range(combos.shape[0]):
        out[i] = mi_table(contingency_fused(bits, case_words, combos[i]), nlogn)
    return out


def mi_combinations(enc: Encoded, combos) -> np.ndarray:
    """MI (nats) of each given SNP combination, every table built from scratch (no prefix reuse)."""
    if not isinstance(enc, Encoded):
        raise TypeError("mi_combinations needs an Encoded table: enc = epistasis.encode(genotypes, labels)")
    c = np.ascontiguousarray(np.asarray(combos, dtype=np.int64))
    if c.ndim != 2 or c.shape[1] < 1 or c.shape[1] > MAX_ORDER:
        raise ValueError(f"combos must be a 2-D array (combinations × 1…{MAX_ORDER} SNP indices)")
    if c.size and (c.min() < 0 or c.max() >= enc.n_snps):
        raise ValueError(f"SNP indices must be in 0 … {enc.n_snps - 1}")
    return _mi_combinations(enc.bits, enc.case_words, c, nlogn_table(enc.n_cases + enc.n_controls))


# ---------------------------------------------------------------------------------------------
# Mutual information of a contingency table counts[class, cell]
# ---------------------------------------------------------------------------------------------

@njit(cache=True)
def mi_branchy(counts):
    """MI (nats) of counts[2, cells] with ``if p > 0`` around every logarithm (the seed's base code)."""
    n0 = 0
    n1 = 0
    for c in range(counts.shape[1]):
        n0 += counts[0, c]
        n1 += counts[1, c]
    N = n0 + n1
    inv = 1.0 / N
    hxy = 0.0
    hx = 0.0
    for c in range(counts.shape[1]):
        p0 = counts[0, c] * inv
        p1 = counts[1, c] * inv
        px = p0 + p1
        if p0 > 0.0:
            hxy -= p0 * np.log(p0)
        if p1 > 0.0:
            hxy -= p1 * np.log(p1)
        if px > 0.0:
            hx -= px * np.log(px)
    hy = 0.0
    for py in (n0 * inv, n1 * inv):
        if py > 0.0:
            hy -= py * np.log(py)
    return hx + hy - hxy


@njit(cache=True)
def mi_masked(counts):
    """MI (nats) without branches: log(p + (p == 0)) — the 0/1 mask turns empty cells into log 1 = 0."""
    n0 = 0
    n1 = 0
    for c in range(counts.shape[1]):
        n0 += counts[0, c]
        n1 += counts[1, c]
    N = n0 + n1
    inv = 1.0 / N
    hxy = 0.0
    hx = 0.0
    for c in range(counts.shape[1]):
        p0 = counts[0, c] * inv
        p1 = counts[1, c] * inv
        px = p0 + p1
        # a mask, not a branch: (p == 0.0) is 0 or 1, so an empty cell adds 0 · log 1 = 0
        hxy -= p0 * np.log(p0 + (p0 == 0.0)) + p1 * np.log(p1 + (p1 == 0.0))
        hx -= px * np.log(px + (px == 0.0))
    q0 = n0 * inv
    q1 = n1 * inv
    hy = -(q0 * np.log(q0 + (q0 == 0.0)) + q1 * np.log(q1 + (q1 == 0.0)))
    return hx + hy - hxy


def nlogn_table(n: int) -> np.ndarray:
    """Lookup table T[c] = c·ln c for c = 0 … n (T[0] = 0), float64."""
    c = np.arange(int(n) + 1, dtype=np.float64)
    out = np.zeros_like(c)
    out[1:] = c[1:] * np.log(c[1:])
    return out


@njit(cache=True)
def mi_table(counts, nlogn):
    """MI (nats) from Σ n·ln n looked up in ``nlogn`` (no logarithm, no branch, T[0] = 0)."""
    n0 = 0
    n1 = 0
    sxy = 0.0
    sx = 0.0
    for c in range(counts.shape[1]):
        a = counts[0, c]
        b = counts[1, c]
        n0 += a
        n1 += b
        sxy += nlogn[a] + nlogn[b]
        sx += nlogn[a + b]
    N = n0 + n1
    # H(X)+H(Y)-H(X,Y) = [Σxy n ln n − Σx n ln n − Σy n ln n + N ln N] / N
    return (sxy - sx - nlogn[n0] - nlogn[n1] + nlogn[N]) / N


@njit(cache=True)
def mi_batch_branchy(tables):
    """mi_branchy over a batch tables[B, 2, cells]."""
    out = np.empty(tables.shape[0])
    for i in range(tables.shape[0]):
        out[i] = mi_branchy(tables[i])
    return out


@njit(cache=True)
def mi_batch_masked(tables):
    """mi_masked over a batch tables[B, 2, cells]."""
    out = np.empty(tables.shape[0])
    for i in range(tables.shape[0]):
        out[i] = mi_masked(tables[i])
    return out


@njit(cache=True)
def mi_batch_table(tables, nlogn):
    """mi_table over a batch tables[B, 2, cells]."""
    out = np.empty(tables.shape[0])
    for i in range(tables.shape[0]):
        out[i] = mi_table(tables[i], nlogn)
    return out


# ---------------------------------------------------------------------------------------------
# Exhaustive depth-first search
# ---------------------------------------------------------------------------------------------

@njit(cache=True, inline="always")
def _better(q, idx, k, order, tq, ti, pos):
    """Is candidate (q, idx[:order-1] + [k]) ranked above entry ``pos`` of the top list?"""
    if q != tq[pos]:
        return q > tq[pos]
    for t in range(order):
        v = idx[t] if t < order - 1 else k
        if v != ti[pos, t]:
            return v < ti[pos, t]
    return False


@njit(cache=True)
def _worst(tq, ti, order):
    w = 0
    for p in range(1, tq.size):
        if tq[p] != tq[w]:
            if tq[p] < tq[w]:
                w = p
            continue
        for t in range(order):
            if ti[p, t] != ti[w, t]:
                if ti[p, t] > ti[w, t]:
                    w = p
                break
    return w


@njit(cache=True)
def _build_level(tables, pcs, lvl_off, d, bits, W, case_words, j):
    """Table of level d+1 (3**(d+1) rows) = level-d rows AND the 3 rows of SNP j; row counts too."""
    R = 3 ** d
    src = lvl_off[d]
    dst = lvl_off[d + 1]
    n8c = case_words // 8
    n8k = (W - case_words) // 8
    for r in range(R):
        for g in range(3):
            o = dst + (r * 3 + g) * W
            s = src + r * W
            b = (j * 3 + g) * W
            for w in range(W):
                tables[o + w] = tables[s + w] & bits[b + w]
            pcs[d + 1, r * 3 + g, 1] = _popcount_v8(tables, o, n8c)
            pcs[d + 1, r * 3 + g, 0] = _popcount_v8(tables, o + case_words, n8k)


@njit(cache=True)
def _last_stage(tables, toff, R, pc, idx, order, k_lo, k_hi, lanes, W, segs, counts, batch,
                nlogn, inv_n, hy, tq, tm, ti, state, acc):
    """Counts of (prefix + k) for k in [k_lo, k_hi): integer phase for a batch, then MI + top list.

    ``lanes[kblock, g, w, j]`` holds word w of genotype row g (g = 0, 1) of SNP 8*kblock + j, so a
    vector of 8 lanes covers 8 candidate last SNPs; genotype 2 is derived by subtraction.
    """
    S = segs.shape[0]
    G = 9 if R % 9 == 0 else (3 if R % 3 == 0 else 1)
    k_first = (k_lo // 8) * 8
    for kb in range(k_first, k_hi, batch):
        ke = min(kb + batch, k_hi)
        nvec = (ke - kb + 7) // 8
        cstride = 8 * nvec
        for x in range(4 * R * cstride):
            counts[x] = 0
        # integer phase: AND + popcount, lanes = 8 consecutive last SNPs
        for s in range(S):
            lo = segs[s, 0]
            nw = segs[s, 1] - lo
            c = segs[s, 2]
            for v in range(nvec):
                kblk = kb // 8 + v
                s_off = (kblk * 2 * W + lo) * 8
                for rg in range(0, R, G):
                    coff = (c * R + rg) * 2 * cstride + 8 * v
                    t0 = toff + rg * W + lo
                    if G == 9:
                        _lanes9(tables, t0, W, lanes, s_off, W * 8, nw, counts, coff, cstride)
                    elif G == 3:
                        _lanes3(tables, t0, W, lanes, s_off, W * 8, nw, counts, coff, cstride)
                    else:
                        _lanes1(tables, t0, W, lanes, s_off, W * 8, nw, counts, coff, cstride)
        # floating-point phase: MI from Σ n ln n (lookup table), 8 candidates per vector
        b0 = 0
        b1 = R * 2 * cstride
        for v in range(nvec):
            for j in range(8):
                acc[j] = 0.0
            for r in range(R):
                _mi_lanes(counts, b1 + 2 * r * cstride + 8 * v, b0 + 2 * r * cstride + 8 * v,
                          cstride, pc[r, 1], pc[r, 0], nlogn, acc)
            for j in range(8):
                k = kb + 8 * v + j
                if k < k_lo or k >= ke:
                    continue
                mi = hy + acc[j] * inv_n
                q = np.int64(np.floor(mi * 1e11 + 0.5))
                w = state[0]
                if q < tq[w]:
                    continue
                if _better(q, idx, k, order, tq, ti, w):
                    tq[w] = q
                    tm[w] = mi
                    for t in range(order - 1):
                        ti[w, t] = idx[t]
                    ti[w, order - 1] = k
                    state[0] = _worst(tq, ti, order)


@njit(cache=True, parallel=True)
def _search_kernel(bits3, lanes4, case_words, order, segs, tasks, ntasks, nlogn, n_cases,
                   n_controls, top, batch):
    """Each worker (prange row) runs its first-index tasks depth-first; returns per-worker top lists."""
    n_snps = bits3.shape[0]
    W = bits3.shape[2]
    bits = bits3.ravel()
    lanes = lanes4.ravel()
    T = tasks.shape[0]
    N = n_cases + n_controls
    inv_n = 1.0 / N
    hy = (nlogn[N] - nlogn[n_cases] - nlogn[n_controls]) * inv_n
    out_q = np.full((T, top), -1, dtype=np.int64)
    out_m = np.zeros((T, top))
    out_i = np.full((T, top, order), n_snps, dtype=np.int64)
    # level offsets of the prefix tables: level d has 3**d rows
    lvl_off = np.zeros(order + 1, dtype=np.int64)
    for d in range(order):
        lvl_off[d + 1] = lvl_off[d] + (3 ** d) * W
    Rmax = 3 ** (order - 1)
    for wk in prange(T):
        tables = np.zeros(lvl_off[order], dtype=np.uint64)
        pcs = np.zeros((order, Rmax, 2), dtype=np.int64)
        counts = np.zeros(batch * 4 * Rmax + 8, dtype=np.int64)
        idx = np.zeros(order, dtype=np.int64)
        nxt = np.zeros(order + 1, dtype=np.int64)
        state = np.zeros(1, dtype=np.int64)
        acc = np.zeros(8)
        tq = out_q[wk]
        tm = out_m[wk]
        ti = out_i[wk]
        # level 0: the "all individuals" mask row
        for w in range(W):
            tables[w] = 0
        for i in range(n_cases):
            tables[i // 64] |= np.uint64(1) << np.uint64(i % 64)
        for i in range(n_controls):
            tables[case_words + i // 64] |= np.uint64(1) << np.uint64(i % 64)
        pcs[0, 0, 1] = n_cases
        pcs[0, 0, 0] = n_controls
        for ti_ in range(ntasks[wk]):
            i = tasks[wk, ti_]
            if order == 1:
                _last_stage(tables, lvl_off[0], 1, pcs[0], idx, order, i, i + 1, lanes, W, segs,
                            counts, batch, nlogn, inv_n, hy, tq, tm, ti, state, acc)
                continue
            idx[0] = i
            _build_level(tables, pcs, lvl_off, 0, bits, W, case_words, i)
            d = 1                      # prefix length; table of level d holds idx[:d]
            nxt[1] = i + 1
            while d >= 1:
                if d == order - 1:
                    _last_stage(tables, lvl_off[d], 3 ** d, pcs[d], idx, order, idx[d - 1] + 1,
                                n_snps, lanes, W, segs, counts, batch, nlogn, inv_n, hy,
                                tq, tm, ti, state, acc)
                    d -= 1
                    continue
                j = nxt[d]
                if j > n_snps - (order - d):
                    d -= 1
                    continue
                nxt[d] = j + 1
                idx[d] = j
                _build_level(tables, pcs, lvl_off, d, bits, W, case_words, j)
                d += 1
                nxt[d] = j + 1
    return out_q, out_m, out_i


def _l1_l2() -> tuple[int, int]:
    try:
        from labkit import hardware
        hw = hardware.info()
        return int(hw.get("l1d") or 32768), int(hw.get("l2") or 1 << 20)
    except Exception:            # pragma: no cover - hardware module missing/broken
        return 32768, 1 << 20


def default_block(order: int) -> int:
    """Individuals per segment so one prefix-table segment fills about half of L1d (multiple of 512)."""
    l1, _ = _l1_l2()
    rows = 3 ** (order - 1) + 2
    words = max(8, (l1 // 2) // (8 * rows) // 8 * 8)
    return words * 64


def default_batch(order: int) -> int:
    """Contingency tables per integer→MI phase so the batch of counts fits in about 1/4 of L2."""
    _, l2 = _l1_l2()
    return int(min(4096, max(16, (l2 // 4) // (32 * 3 ** (order - 1)))))


def _segments(case_words: int, control_words: int, block_words: int) -> np.ndarray:
    segs = []
    for start, nwords, cls in ((0, case_words, 1), (case_words, control_words, 0)):
        for lo in range(0, nwords, block_words):
            segs.append((start + lo, start + min(nwords, lo + block_words), cls))
    return np.array(segs, dtype=np.int64)


def _task_work(n: int, order: int) -> np.ndarray:
    i = np.arange(n)
    if order == 1:
        return np.ones(n)
    return np.array([math.comb(n - 1 - int(x), order - 1) for x in i], dtype=np.float64)


def _assign(task_ids: np.ndarray, T: int) -> tuple[np.ndarray, np.ndarray]:
    """Snake (boustrophedon) assignment of tasks sorted by work to T workers: balanced triangles."""
    per = [[] for _ in range(T)]
    for p, t in enumerate(task_ids):
        rnd, pos = divmod(p, T)
        per[pos if rnd % 2 == 0 else T - 1 - pos].append(int(t))
    L = max(1, max(len(x) for x in per))
    tasks = np.full((T, L), -1, dtype=np.int64)
    for w, lst in enumerate(per):
        tasks[w, :len(lst)] = lst
    return tasks, np.array([len(x) for x in per], dtype=np.int64)


@dataclass
class _Plan:
    enc: Encoded
    order: int
    top: int
    threads: int
    block: int
    batch: int
    segs: np.ndarray
    nlogn: np.ndarray
    combos: int
    chunks: list = field(default_factory=list)


def _plan(enc: Encoded, order, top, threads, block, batch, progress) -> _Plan:
    order = _check_order(order, enc.n_snps)
    if isinstance(top, bool) or not isinstance(top, (int, np.integer)) or top < 1:
        raise ValueError(f"top must be a positive int; got {top!r}")
    maxthreads = numba.config.NUMBA_NUM_THREADS
    if threads is None:
        threads = numba.get_num_threads()
    if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) \
            or not 1 <= threads <= maxthreads:
        raise ValueError(f"threads must be an int in 1 … {maxthreads} (NUMBA_NUM_THREADS); "
                         f"got {threads!r}")
    if block is None:
        block = default_block(order)
    if isinstance(block, bool) or not isinstance(block, (int, np.integer)) or block < 1:
        raise ValueError(f"block (individuals per segment) must be a positive int; got {block!r}")
    block_words = max(8, -(-int(block) // 512) * 8)
    if batch is None:
        batch = default_batch(order)
    if isinstance(batch, bool) or not isinstance(batch, (int, np.integer)) or batch < 1:
        raise ValueError(f"batch (tables per MI phase) must be a positive int; got {batch!r}")
    batch = -(-int(batch) // 8) * 8
    rows = (3 ** order - 1) // 2
    mem = rows * enc.words * 8 + int(batch) * 4 * 3 ** (order - 1) * 8
    if mem * threads > (1 << 30):
        raise ValueError(f"order {order} needs {mem * threads / 2**30:.1f} GiB of prefix tables "
                         "for this many individuals; lower the order or the batch")
    n = enc.n_snps
    combos = math.comb(n, order)
    work = _task_work(n, order)
    ids = np.arange(n) if order > 1 else np.arange(n)
    if order > 1:
        ids = ids[: n - order + 1]
    if progress is None:
        progress = combos * 3 ** order * enc.words > 5e10
    nchunks = 1 if not progress else min(50, max(1, len(ids) // (4 * threads)))
    # contiguous chunks of roughly equal work (progress bar steps)
    cum = np.cumsum(work[ids])
    edges = np.searchsorted(cum, np.linspace(0, cum[-1], nchunks + 1)[1:-1])
    parts = [p for p in np.split(ids, edges) if p.size]
    chunks = [(_assign(p, int(threads)), int(sum(math.comb(n - 1 - int(x), order - 1)
                                                for x in p)) if order > 1 else p.size)
              for p in parts]
    return _Plan(enc, order, int(top), int(threads), block_words * 64, int(batch),
                 _segments(enc.case_words, enc.control_words, block_words),
                 nlogn_table(enc.n_cases + enc.n_controls), combos, chunks)


def _run_plan(plan: _Plan, progress: bool) -> list:
    enc = plan.enc
    old = numba.get_num_threads()
    numba.set_num_threads(plan.threads)
    bar = None
    if progress and len(plan.chunks) > 1:
        from tqdm.auto import tqdm
        bar = tqdm(total=plan.combos, unit="comb", unit_scale=True,
                   desc=f"order-{plan.order} search")
    qs, ms, ids = [], [], []
    try:
        for (tasks, ntasks), ncomb in plan.chunks:
            q, m, i = _search_kernel(enc.bits, enc.lanes, enc.case_words, plan.order, plan.segs,
                                     tasks, ntasks, plan.nlogn, enc.n_cases, enc.n_controls,
                                     plan.top, plan.batch)
            qs.append(q.reshape(-1))
            ms.append(m.reshape(-1))
            ids.append(i.reshape(-1, plan.order))
            if bar is not None:
                bar.update(ncomb)
    finally:
        numba.set_num_threads(old)
        if bar is not None:
            bar.close()
    q = np.concatenate(qs)
    m = np.concatenate(ms)
    idx = np.concatenate(ids)
    keep = q >= 0
    q, m, idx = q[keep], m[keep], idx[keep]
    order_keys = [idx[:, t] for t in range(plan.order - 1, -1, -1)] + [-q]
    sel = np.lexsort(order_keys)[: plan.top]
    return [(tuple(int(v) for v in idx[s]), float(m[s])) for s in sel]


def search(genotypes, labels, order: int = 2, top: int = 10, threads: int | None = None,
           block: int | None = None, batch: int | None = None, progress: bool | None = None):
    """Exhaustive order-k search: the ``top`` SNP combinations by MI as [(indices, mi_nats), …]."""
    enc = genotypes if isinstance(genotypes, Encoded) else encode(genotypes, labels)
    plan = _plan(enc, order, top, threads, block, batch, progress)
    return _run_plan(plan, progress is not False and len(plan.chunks) > 1)


def search_stats(n_snps: int, order: int) -> dict:
    """Operation counts of an exhaustive search with and without depth-first prefix reuse (row ANDs)."""
    combos = math.comb(n_snps, order)
    # without reuse: every combination ANDs k rows for each of its 3**k cells
    naive = combos * 3 ** order * max(order - 1, 0)
    # with reuse: level d+1 tables built once per (d+1)-prefix (3**(d+1) row ANDs), last level fused
    reuse = sum(math.comb(n_snps, d + 1) * 3 ** (d + 1) for d in range(1, order - 1))
    reuse += combos * 3 ** order
    # the subtraction trick: only 2 of the 3 rows of the last SNP are counted
    reuse_sub = reuse - combos * 3 ** (order - 1)
    return {"combinations": combos, "row_ands_naive": naive, "row_ands_dfs": reuse,
            "row_ands_dfs_subtract": reuse_sub}


# ---------------------------------------------------------------------------------------------
# Inputs, reference (plain numpy), validation
# ---------------------------------------------------------------------------------------------

@dataclass
class EpistasisInputs:
    """Genotypes (individuals × SNPs, int8 0/1/2), interleaved labels, search order/top, planted SNPs."""

    genotypes: np.ndarray
    labels: np.ndarray
    order: int = 3
    top: int = 10
    planted: tuple | None = None

    @property
    def n_snps(self) -> int:
        """Number of SNPs."""
        return self.genotypes.shape[1]

    @property
    def n_individuals(self) -> int:
        """Number of individuals."""
        return self.genotypes.shape[0]

    @property
    def combinations(self) -> int:
        """Number of SNP combinations of the search order."""
        return math.comb(self.n_snps, self.order)


_SIZES = {
    "small": dict(snps=40, individuals=301, order=3),
    "seed": dict(snps=1000, individuals=2000, order=3),     # Table 3 of the seed
    "large": dict(snps=4000, individuals=2000, order=3),
}


def make_inputs(size="small", seed: int = 0) -> EpistasisInputs:
    """Random case/control data: size "small" | "seed" | "large" | dict(snps, individuals, order, top, planted, penetrance)."""
    spec = resolve_size(size, _SIZES, ("snps", "individuals", "order", "top", "planted",
                                       "penetrance", "maf"))
    rng = np.random.default_rng(seed)
    n, m = int(spec["snps"]), int(spec["individuals"])
    lo, hi = spec.get("maf", (0.1, 0.5))
    maf = rng.uniform(lo, hi, n)
    # Hardy–Weinberg genotype frequencies per SNP
    u = rng.random((m, n))
    g = (u < maf ** 2).astype(np.int8) + (u < maf ** 2 + 2 * maf * (1 - maf)).astype(np.int8)
    g = (g * 1).astype(np.int8)
    planted = spec.get("planted")
    if planted:
        planted = tuple(sorted(int(x) for x in planted))
        pen = float(spec.get("penetrance", 0.8))
        for s in planted:        # common SNPs make the parity balanced
            u2 = rng.random(m)
            g[:, s] = (u2 < 0.25).astype(np.int8) + (u2 < 0.75).astype(np.int8)
        parity = g[:, list(planted)].sum(axis=1) % 2
        p_case = np.where(parity == 1, pen, 1 - pen)
        labels = (rng.random(m) < p_case).astype(np.int8)
    else:
        planted = None
        labels = rng.integers(0, 2, m).astype(np.int8)
    # make sure both classes exist even on tiny inputs
    if labels.min() == labels.max():
        labels[0] = 1 - labels[0]
    return EpistasisInputs(g, labels, int(spec.get("order", 3)), int(spec.get("top", 10)),
                           planted)


def reference_counts(genotypes, labels, snps) -> np.ndarray:
    """counts[class, cell] by np.add.at over individuals (plain numpy)."""
    g, y = _check_data(genotypes, labels)
    cell = np.zeros(g.shape[0], dtype=np.int64)
    for s in snps:
        cell = cell * 3 + g[:, int(s)]
    out = np.zeros((2, 3 ** len(snps)), dtype=np.int64)
    np.add.at(out, (y.astype(np.int64), cell), 1)
    return out


def _entropy(p: np.ndarray, axis=None) -> np.ndarray:
    logp = np.log(np.where(p > 0, p, 1.0))
    return -(p * logp).sum(axis=axis)


def reference_mi(genotypes, labels, snps) -> float:
    """MI (nats) = H(X) + H(Y) − H(X,Y) of one SNP combination, explicit formulas (plain numpy)."""
    t = reference_counts(genotypes, labels, snps).astype(np.float64)
    p = t / t.sum()
    return float(_entropy(p.sum(axis=0)) + _entropy(p.sum(axis=1)) - _entropy(p))


def reference_search(genotypes, labels, order: int = 2, top: int = 10) -> list:
    """Exhaustive search by bincount over all combinations (plain numpy; small inputs only)."""
    g, y = _check_data(genotypes, labels)
    order = _check_order(order, g.shape[1])
    n = g.shape[1]
    C = 3 ** order
    combos = np.array(list(combinations(range(n), order)), dtype=np.int64).reshape(-1, order)
    g64 = g.astype(np.int64)
    y64 = y.astype(np.int64)
    mis = np.empty(len(combos))
    step = max(1, 2_000_000 // (g.shape[0] + 1))
    for a in range(0, len(combos), step):
        cb = combos[a:a + step]
        cell = np.zeros((g.shape[0], len(cb)), dtype=np.int64)
        for t in range(order):
            cell = cell * 3 + g64[:, cb[:, t]]
        key = (np.arange(len(cb))[None, :] * 2 + y64[:, None]) * C + cell
        t = np.bincount(key.ravel(), minlength=len(cb) * 2 * C).reshape(len(cb), 2, C)
        p = t / g.shape[0]
        mis[a:a + step] = (_entropy(p.sum(axis=1), axis=1) + _entropy(p.sum(axis=2), axis=1)
                           - _entropy(p.reshape(len(cb), -1), axis=1))
    q = np.floor(mis * _MI_SCALE + 0.5).astype(np.int64)
    sel = np.lexsort([combos[:, t] for t in range(order - 1, -1, -1)] + [-q])[:top]
    return [(tuple(int(v) for v in combos[s]), float(mis[s])) for s in sel]


def reference(inputs: EpistasisInputs) -> list:
    """Top list of an exhaustive search of ``inputs`` computed with plain numpy."""
    return reference_search(inputs.genotypes, inputs.labels, inputs.order, inputs.top)


def validate(result, expected, atol: float = 1e-9) -> None:
    """Raise AssertionError at the first rank where two top lists differ (indices, or MI beyond atol)."""
    result, expected = list(result), list(expected)
    for rank, (got, exp) in enumerate(zip(result, expected)):
        if tuple(got[0]) != tuple(exp[0]) or abs(got[1] - exp[1]) > atol:
            raise AssertionError(f"rank {rank}: got SNPs {tuple(got[0])} MI {got[1]:.6g}, "
                                 f"expected {tuple(exp[0])} MI {exp[1]:.6g}")
    if len(result) != len(expected):
        raise AssertionError(f"top list has {len(result)} entries, expected {len(expected)}")


# ---------------------------------------------------------------------------------------------
# Benchmark spec
# ---------------------------------------------------------------------------------------------
def _bench_popcount_inputs(words: int = 1 << 15, seed: int = 0):
    r = np.random.default_rng(seed)
    return (r.integers(0, 2**64, words, dtype=np.uint64, endpoint=False),)


def _numpy_popcount(words):
    return int(np.bitwise_count(words).sum())


#: `labkit bench epistasis` spec: popcount variants (GB/s) and the order-3 search (triples/s)
BENCHMARK = {
    "inputs": {"snps": 400, "individuals": 2000, "order": 3},
    "variants": {"search_1_thread": "search(..., threads=1)",
                 "search_2_threads": "search(..., threads=2)"},
    "baseline": "search_1_thread",
    "peers": {},
    "work": lambda inp: math.comb(inp.n_snps, inp.order),
    "unit": "triples",
    "popcount": {"words": 1 << 11,
                 "variants": {"byte_table": popcount_table, "mula": popcount_mula,
                              "hw_scalar": popcount_hw_scalar, "hw_v8": popcount_hw,
                              "numpy": _numpy_popcount},
                 "baseline": "byte_table", "unit": "B"},
}


#: The lab's performance targets (its issue), checked by `labkit bench epistasis`.
TARGETS = [
    Target("hardware popcount vs byte table, 16 KiB", 10, ratio_of("popcount", "hw_v8", "byte_table")),
    Target("order-3 search, 400 SNPs × 2000, 1 thread", 10,
           throughput_of("search", "search_1_thread", 1e6), unit=" M triples/s"),
    Target("order-3 search, 2 threads vs 1", 1.8,
           ratio_of("search", "search_2_threads", "search_1_thread")),
]


def run_benchmark(size=None, repeat: int = 5, threads=(1, 2)) -> dict:
    """Benchmarks for `labkit bench epistasis`: {"popcount": BenchResult (B/s), "search": BenchResult (triples/s)}."""
    from labkit import bench
    spec = BENCHMARK["popcount"]
    words = _bench_popcount_inputs(spec["words"])
    pop = bench.compare(dict(spec["variants"]), words, baseline=spec["baseline"], repeat=repeat,
                        min_time=0.1, work=words[0].nbytes, unit="B",
                        validate=lambda r: int(r) == _numpy_popcount(words[0]),
                        label=f"popcount of {words[0].nbytes // 1024} KiB")
    inp = make_inputs(BENCHMARK["inputs"] if size is None else size)
    enc = encode(inp.genotypes, inp.labels)
    maxt = numba.config.NUMBA_NUM_THREADS
    funcs = {}
    for t in threads:
        if t <= maxt:
            name = f"search_{t}_thread" + ("s" if t > 1 else "")
            funcs[name] = (lambda t=t: search(enc, None, order=inp.order, top=inp.top, threads=t,
                                              progress=False))
    expected = search(enc, None, order=inp.order, top=inp.top, progress=False)
    srch = bench.compare(funcs, (), repeat=repeat, min_time=0.2,
                         work=BENCHMARK["work"](inp), unit="triples" if inp.order == 3 else "combos",
                         validate=lambda r: validate(r, expected, atol=1e-12),
                         label=f"order-{inp.order} search, {inp.n_snps} SNPs × "
                               f"{inp.n_individuals} individuals")
    return {"popcount": pop, "search": srch}


from . import checks as _checks  # noqa: E402,F401  (registers check.<name> until the lookup imports .checks)
