"""labkit's packed-panel micro-kernel (AVX-512 hosts): what ``engine.py``'s drivers run when
``ENABLED`` and the tile is a multiple of 8 variables; elsewhere they run the 6×4 row block.

BLIS-style (Van Zee & van de Geijn): the rows are standardised straight into **k-major panels of
8 variables** (``Zp[p, k, r] = Z[8p + r, k]``, 64-byte aligned, zero rows past n), so one sample k
of 8 variables is one cache line, one ``<8 x double>`` load. The micro-kernel computes an
**8 × 8·nv block** of R (nv = 1, 2, 3 column panels): per k it loads nv column vectors and
broadcasts the 8 row values, ``8·nv`` FMAs into ``8·nv`` vector accumulators that stay in
registers for the whole k loop (nv = 3: 24 zmm accumulators, 3 loads + 8 broadcasts per 24 FMAs)
— no horizontal sums: each accumulator lane is one cell R[i, j]. It is written as LLVM IR
(``numba.extending.intrinsic``, the pattern of ``labkit/epistasis/_intrinsics.py``), so LLVM has
nothing left to vectorise and compiles it quickly; the last k-block of a tile of R clips each
cell to [-1, 1] and stores the block's transpose too (the mirror: an 8 × 8 transpose in
registers, 8 vector stores). Those final stores are non-temporal when R's rows start on 64-byte
lines (``engine.aligned_empty``, n a multiple of 8): a fresh R's lines are not read from memory
before being overwritten (docs/pcc.md run 8).

Loop order in a tile (``panel_tile``): k-blocks of ``kb`` samples (``KB`` = 2048: one block up to
l = 2048, so each block of R is stored once) → groups of 3 column panels → row panels (the other
order, row panels outside, ran 2–5 % slower: docs/pcc.md). A panel containing rows ≥ n (n not a
multiple of 8) is computed into an 8 × 8 scratch block and copied cell by cell (``_edge_block``).
The micro-kernel is one numba function, ``_ukernel``, that ``panel_tile`` calls (LLVM does not
inline it into every driver).

Caching: ``engine.py``'s cached drivers contain this module's code, and numba invalidates a cache
entry by its own function's file only — after editing this file, touch ``engine.py`` (or clear
``labkit/pcc/__pycache__``) so the drivers are recompiled.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import prange, types
from numba.core import cgutils
from numba.extending import intrinsic

from labkit.jit import compiles_for_avx512, njit

from ._layout import _ALIGN, LANE, _row_moments

__all__ = ["ENABLED", "NV", "KB", "applies", "panel_rows", "standardize_panels", "as_panels",
           "panel_tile"]

#: the panel engine runs where numba compiles for AVX-512F (32 zmm registers hold the 24
#: accumulators); tests flip it to exercise the row engine in the same process
ENABLED = compiles_for_avx512()
#: column panels per micro-kernel call (8 × 8·NV block, 8·NV accumulators)
NV = 3
#: samples per k-block for the panels: up to 2048 samples the whole k range is one block, so a
#: block of R is stored once and never re-read (k-blocks of 512 re-read R's partial sums: 5–7 %
#: of the kernel's CPU time at n = 4000, l = 2000; the operand streams run as fast either way)
KB = 2048

_F64 = ir.DoubleType()
_VD = ir.VectorType(_F64, LANE)
_I32, _I64 = ir.IntType(32), ir.IntType(64)


def applies(tile) -> bool:
    """Whether the entry points run the panel engine for this tile size."""
    return ENABLED and int(tile) % LANE == 0


# ---------------------------------------------------------------- packed panels
def panel_rows(n, l):
    """An uninitialised (ceil(n/8), l, 8) float64 array starting on a 64-byte line."""
    P = -(-int(n) // LANE)
    raw = np.empty(P * l * LANE + _ALIGN // 8)
    off = (-raw.ctypes.data % _ALIGN) // 8
    return raw[off:off + P * l * LANE].reshape(P, l, LANE)


@njit(cache=True, parallel=True)
def standardize_panels(X, Zp, const):
    """Eq. 4 straight into panels: Zp[p, k, r] = Z[8p + r, k], the bits of ``standardize_into``
    (the same ``_row_moments``, the same products); rows past n → zeros. Each panel is written
    line by line (sample k of its 8 rows), not row by row (8 strided passes, slower: measured in
    docs/pcc.md, 'Panels written line by line')."""
    n, l = X.shape
    for p in prange(Zp.shape[0]):
        mean = np.zeros(LANE)
        inv = np.zeros(LANE)
        rows = min(LANE, n - p * LANE)
        for r in range(rows):
            mean[r], inv[r], const[p * LANE + r] = _row_moments(X[p * LANE + r])
        if rows == LANE:
            for k in range(l):
                for r in range(LANE):
                    Zp[p, k, r] = (X[p * LANE + r, k] - mean[r]) * inv[r]
        else:
            for k in range(l):
                for r in range(LANE):
                    Zp[p, k, r] = (X[p * LANE + r, k] - mean[r]) * inv[r] if r < rows else 0.0


@njit(cache=True, parallel=True)
def _pack(Z, Zp):
    n, l = Z.shape
    for p in prange(Zp.shape[0]):
        for r in range(LANE):
            i = p * LANE + r
            for k in range(l):
                Zp[p, k, r] = Z[i, k] if i < n else 0.0


def as_panels(Z):
    """Standardised rows Z (n × l) → (panels, n), the form the drivers take."""
    Z = np.ascontiguousarray(Z, dtype=np.float64)
    n, l = Z.shape
    Zp = panel_rows(n, l)
    _pack(Z, Zp)
    return Zp, n


# ---------------------------------------------------------------- the micro-kernel (LLVM IR)
def _transpose8(builder, rows):
    """The columns of an 8 × 8 block given as 8 ``<8 x double>`` rows: three stages of
    two-source shuffles (pairs of lanes, of 2-lane and of 4-lane groups), 24 shuffles."""
    def sh(a, b, idx):
        return builder.shuffle_vector(a, b, ir.Constant(ir.VectorType(_I32, LANE), idx))
    t = [None] * LANE
    for i in range(0, LANE, 2):
        t[i] = sh(rows[i], rows[i + 1], [0, 8, 2, 10, 4, 12, 6, 14])
        t[i + 1] = sh(rows[i], rows[i + 1], [1, 9, 3, 11, 5, 13, 7, 15])
    u = [None] * LANE
    for base in (0, 4):
        for j in (0, 1):
            a, b = t[base + j], t[base + j + 2]
            u[base + j] = sh(a, b, [0, 1, 8, 9, 4, 5, 12, 13])
            u[base + j + 2] = sh(a, b, [2, 3, 10, 11, 6, 7, 14, 15])
    cols = [None] * LANE
    for j in range(4):
        cols[j] = sh(u[j], u[j + 4], [0, 1, 2, 3, 8, 9, 10, 11])
        cols[j + 4] = sh(u[j], u[j + 4], [4, 5, 6, 7, 12, 13, 14, 15])
    return cols


def _make_ukernel(nv):
    """An intrinsic ``uk(Zp, pi, pj, k0, kk, out, oi, oj, first, mirror)`` for an 8 × 8·nv block:
    out[oi + c, oj + 8v + r] (+)= Σ_{k0 ≤ k < k0+kk} Zp[pi, k, c] · Zp[pj + v, k, r]; ``first``
    stores, else adds to out; ``mirror``: clip to [-1, 1] and also store out[oj + 8v + r, oi + c]."""

    @intrinsic
    def uk(typingctx, Zp, pi, pj, k0, kk, out, oi, oj, first, mirror):
        ints = (pi, pj, k0, kk, oi, oj)
        if not (isinstance(Zp, types.Array) and Zp.ndim == 3 and isinstance(out, types.Array)
                and out.ndim == 2 and out.layout == "C"
                and all(isinstance(t, types.Integer) for t in ints)):
            return None
        sig = types.void(Zp, pi, pj, k0, kk, out, oi, oj, first, mirror)

        def codegen(context, builder, signature, args):
            A = context.make_array(signature.args[0])(context, builder, args[0])
            O = context.make_array(signature.args[5])(context, builder, args[5])
            c64 = lambda k: context.cast(builder, args[k], signature.args[k], types.int64)  # noqa: E731
            pi_, pj_, k0_, kk_, oi_, oj_ = (c64(k) for k in (1, 2, 3, 4, 6, 7))
            first_ = context.cast(builder, args[8], signature.args[8], types.boolean)
            mirror_ = context.cast(builder, args[9], signature.args[9], types.boolean)
            L = cgutils.unpack_tuple(builder, A.shape, 3)[1]
            ldo = cgutils.unpack_tuple(builder, O.shape, 2)[1]
            K = lambda v: ir.Constant(_I64, v)  # noqa: E731
            lane = builder.mul

            def panel_ptr(p):        # &Zp[p, k0, 0]
                return builder.gep(A.data, [lane(builder.add(builder.mul(p, L), k0_), K(LANE))])

            pa = panel_ptr(pi_)
            pbs = [panel_ptr(builder.add(pj_, K(v))) for v in range(nv)]
            zero = ir.Constant(_VD, [0.0] * LANE)
            accs = [[cgutils.alloca_once_value(builder, zero) for _ in range(nv)] for _ in range(LANE)]
            fma = cgutils.get_or_insert_function(builder.module, ir.FunctionType(_VD, [_VD] * 3),
                                                 "llvm.fma.v8f64")
            splat = ir.Constant(ir.VectorType(_I32, LANE), [0] * LANE)
            undef = ir.Constant(_VD, ir.Undefined)
            with cgutils.for_range(builder, kk_) as loop:
                off = builder.mul(loop.index, K(LANE))
                bv = [builder.load(builder.bitcast(builder.gep(pb, [off]), _VD.as_pointer()),
                                   align=64) for pb in pbs]
                for c in range(LANE):
                    a = builder.load(builder.gep(pa, [builder.add(off, K(c))]))
                    av = builder.shuffle_vector(builder.insert_element(undef, a, ir.Constant(_I32, 0)),
                                                undef, splat)
                    for v in range(nv):
                        builder.store(builder.call(fma, [av, bv[v], builder.load(accs[c][v])]),
                                      accs[c][v])
            maxnum = cgutils.get_or_insert_function(builder.module, ir.FunctionType(_VD, [_VD] * 2),
                                                    "llvm.maxnum.v8f64")
            minnum = cgutils.get_or_insert_function(builder.module, ir.FunctionType(_VD, [_VD] * 2),
                                                    "llvm.minnum.v8f64")
            lo = ir.Constant(_VD, [-1.0] * LANE)
            hi = ir.Constant(_VD, [1.0] * LANE)
            # every cell's value first (a diagonal block's mirror lands on cells not yet read)
            ptrs, vals = {}, {}
            for c in range(LANE):
                for v in range(nv):
                    cell = builder.add(builder.mul(builder.add(oi_, K(c)), ldo),
                                       builder.add(oj_, K(LANE * v)))
                    ptrs[c, v] = builder.bitcast(builder.gep(O.data, [cell]), _VD.as_pointer())
                    vals[c, v] = builder.load(accs[c][v])
            # a later k-block adds the partial sums in out; the first does not read out at all
            with builder.if_else(first_) as (then, otherwise):
                with then:
                    from_first = builder.block
                with otherwise:
                    added = {key: builder.fadd(builder.load(ptr, align=8), vals[key])
                             for key, ptr in ptrs.items()}
                    from_later = builder.block
            phis = {}
            for key in ptrs:                          # (phi nodes first in their block)
                phis[key] = builder.phi(_VD)
                phis[key].add_incoming(vals[key], from_first)
                phis[key].add_incoming(added[key], from_later)
            for key, phi in phis.items():
                clipped = builder.call(minnum, [builder.call(maxnum, [phi, lo]), hi])
                vals[key] = builder.select(mirror_, clipped, phi)
            def store(val, ptr, nt):
                if not nt:
                    return builder.store(val, ptr, align=8)
                st = builder.store(val, ptr, align=64)
                st.set_metadata("nontemporal", builder.module.add_metadata([ir.Constant(_I32, 1)]))
                return st

            def upper(nt):
                for key, ptr in ptrs.items():
                    store(vals[key], ptr, nt)

            def mirror(nt):                           # the transpose: 8 vector stores per 8 × 8
                for v in range(nv):
                    for r, col in enumerate(_transpose8(builder, [vals[c, v] for c in range(LANE)])):
                        mcell = builder.add(builder.mul(builder.add(oj_, K(LANE * v + r)), ldo), oi_)
                        store(col, builder.bitcast(builder.gep(O.data, [mcell]), _VD.as_pointer()), nt)

            # the last k-block of a tile of R: every store is final, so they bypass the caches
            # (non-temporal: R's fresh lines are not read from memory first) when every row of
            # out starts on a 64-byte line (R from aligned_empty, n a multiple of 8)
            mis = builder.or_(builder.ptrtoint(O.data, _I64), builder.mul(ldo, K(8)))
            aligned = builder.icmp_unsigned("==", builder.and_(mis, K(_ALIGN - 1)), K(0))
            with builder.if_else(builder.and_(mirror_, aligned)) as (then, otherwise):
                with then:
                    upper(True)
                    mirror(True)
                with otherwise:
                    upper(False)
                    with builder.if_then(mirror_):
                        mirror(False)
            return context.get_dummy_value()
        return sig, codegen
    return uk


_uk1, _uk2, _uk3 = (_make_ukernel(v) for v in (1, 2, 3))


@intrinsic
def _store_fence(typingctx):
    """A full fence (``fence seq_cst``: mfence on x86): the micro-kernel's non-temporal stores are
    globally visible before the thread reports its tiles done."""
    def codegen(context, builder, signature, args):
        builder.fence("seq_cst")
        return context.get_dummy_value()
    return types.void(), codegen


@njit(cache=True, nogil=True)
def _ukernel(Zp, pi, pj, nv, k0, kk, out, oi, oj, first, mirror):
    if nv == 3:
        _uk3(Zp, pi, pj, k0, kk, out, oi, oj, first, mirror)
    elif nv == 2:
        _uk2(Zp, pi, pj, k0, kk, out, oi, oj, first, mirror)
    else:
        _uk1(Zp, pi, pj, k0, kk, out, oi, oj, first, mirror)


@njit(cache=True, nogil=True)
def _edge_block(Zp, n, pi, pj, kb, out, oi, oj, sym):
    """The 8 × 8 block of panels (pi, pj) when one holds rows ≥ n: into a scratch block over every
    k-block (the same sums as ``panel_tile``'s), then its cells < n copied (clipped and mirrored
    if sym)."""
    l = Zp.shape[1]
    s = np.empty((LANE, LANE))
    for k0 in range(0, l, kb):
        _uk1(Zp, pi, pj, k0, min(kb, l - k0), s, 0, 0, k0 == 0, False)
    for c in range(min(LANE, n - pi * LANE)):
        i = pi * LANE + c
        for r in range(min(LANE, n - pj * LANE)):
            j = pj * LANE + r
            v = s[c, r]
            if sym:
                v = min(1.0, max(-1.0, v))
                out[j - oj, i - oi] = v
            out[i - oi, j - oj] = v


@njit(cache=True, nogil=True)
def panel_tile(Zp, n, i0, i1, j0, j1, diag, kb, out, oi, oj, sym):
    """out[i-oi, j-oj] = <Z_i, Z_j> for i in [i0, i1), j in [j0, j1) (i0, j0 multiples of 8; on a
    diagonal tile from i's own panel on). sym (a tile of R itself, oi = oj = 0): clipped and
    mirrored by the micro-kernel's last store."""
    l = Zp.shape[1]
    full = n // LANE                              # panels with 8 rows < n
    pi0, pi1 = i0 // LANE, -(-i1 // LANE)
    pj0, pj1 = j0 // LANE, -(-j1 // LANE)
    pj1f = min(pj1, full)
    for k0 in range(0, l, kb):
        kk = min(kb, l - k0)
        first = k0 == 0
        last = sym and k0 + kk == l
        for g in range(pj0, pj1f, NV):           # a group of NV column panels …
            ge = min(g + NV, pj1f)
            for pi in range(pi0, min(pi1, full, ge) if diag else min(pi1, full)):   # … × row panels
                pj = max(g, pi) if diag else g       # a diagonal tile: panels from pi's own on
                _ukernel(Zp, pi, pj, ge - pj, k0, kk, out, pi * LANE - oi, pj * LANE - oj,
                         first, last)
    if pj1 > full:                                # the column panel with rows ≥ n
        for pi in range(pi0, min(pi1, full)):
            _edge_block(Zp, n, pi, full, kb, out, oi, oj, sym)
    if pi1 > full:                                # the row panel with rows ≥ n
        for pj in range(full if diag else pj0, pj1):
            _edge_block(Zp, n, full, pj, kb, out, oi, oj, sym)
    if sym:
        _store_fence()
