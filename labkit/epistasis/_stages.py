"""The stages of lab 04's depth-first search (``engine._search_kernel`` runs them): the per-worker
top list (``_better``, ``_worst``, ``_offer``), the prefix tables built level by level
(``_build_level``), the last SNP counted 8 candidates per vector (``_count_rows``,
``_last_stage``; 16 per vector in float32, ``_last_stage16``), the MI where a χ² bound says a
candidate can enter (``_mi_one``), and the parent and pair counts genotype 2 is derived from by
subtraction (``_parent_counts``, ``_pair_counts``).
"""
from __future__ import annotations

import numpy as np
from numba import prange

from labkit.jit import njit

from ._fused import _fused3_v16, fused_params
from ._intrinsics import (_and_store_v8, _derive3_v8, _lanes1, _lanes3, _lanes4, _lanes6,
                          _lanes9, _sub2_v8)
from ._mi_rows import _chi_rows, _nlogn_rows, _taylor_rows

#: Constants the jitted callers pass as numpy scalars, typed like the run-time values other
#: callers pass: a literal ``0``/``3``/``False`` would make numba compile the stages (and the
#: search that calls them) once more for ``Literal[int]`` / ``Literal[bool]``.
_ZERO, _ONE, _THREE, _NO = np.int64(0), np.int64(1), np.int64(3), np.bool_(False)


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
def _build_level(tables, pcs, lvl_off, d, bits, W, case_words, j, split=False):
    """Table of level d+1 (3**(d+1) rows) = level-d rows AND the 3 rows of SNP j; row counts too.

    ``split``: rows (r, g) with g < 2 first (at r·2 + g), then the rows (r, 2) (at 2R + r), so
    the last stage counts the first 2R rows and derives the others from the parent's counts."""
    R = 3 ** d
    src = lvl_off[d]
    dst = lvl_off[d + 1]
    n8c = case_words // 8
    n8k = (W - case_words) // 8
    for r in range(R):
        for g in range(3):
            q = (r * 2 + g if g < 2 else 2 * R + r) if split else r * 3 + g
            o = dst + q * W
            s = src + r * W
            x = _and_store_v8(tables, o, tables, s, bits, (j * 3 + g) * W, n8c, n8c + n8k)
            pcs[d + 1, q, 1] = x & 0xFFFFFFFF
            pcs[d + 1, q, 0] = x >> 32


@njit(cache=True)
def _count_rows(tables, toff, R, G, k_first, k_hi, lanes, W, segs, counts, RL, cstride, kofs):
    """counts[((c·RL + r)·2 + g)·cstride + kofs + k − k_first] = Σ popcount(table row r & row g of SNP
    k) over class c's words, for k in [k_first, k_hi) (k_first a multiple of 8), 8 SNPs per
    vector; rows r < R (≤ RL, the rows of the counts' layout) in groups of G (G divides R)."""
    S = segs.shape[0]
    nvec = (k_hi - k_first + 7) // 8
    for s in range(S):
        lo = segs[s, 0]
        nw = segs[s, 1] - lo
        c = segs[s, 2]
        first = 1 if s == 0 or segs[s - 1, 2] != c else 0     # store, later segments add
        for v in range(nvec):
            kblk = k_first // 8 + v
            s_off = (kblk * 2 * W + lo) * 8
            for rg in range(0, R, G):
                coff = (c * RL + rg) * 2 * cstride + kofs + 8 * v
                t0 = toff + rg * W + lo
                if G == 9:
                    _lanes9(tables, t0, W, lanes, s_off, W * 8, nw, counts, coff, cstride, first)
                elif G == 6:
                    _lanes6(tables, t0, W, lanes, s_off, W * 8, nw, counts, coff, cstride, first)
                elif G == 4:
                    _lanes4(tables, t0, W, lanes, s_off, W * 8, nw, counts, coff, cstride, first)
                elif G == 3:
                    _lanes3(tables, t0, W, lanes, s_off, W * 8, nw, counts, coff, cstride, first)
                else:
                    _lanes1(tables, t0, W, lanes, s_off, W * 8, nw, counts, coff, cstride, first)


def _group(R):
    return 9 if R % 9 == 0 else (6 if R % 6 == 0 else (4 if R % 4 == 0 else
                                                    (3 if R % 3 == 0 else 1)))


_group_nb = njit(cache=True)(_group)


@njit(cache=True)
def _last_stage(tables, toff, R, pc, idx, order, k_lo, k_hi, lanes, W, segs, counts, batch,
                nlogn, inv_n, hy, tq, tm, ti, state, acc, phases, par, npad, pj):
    """Counts of (prefix + k) for k in [k_lo, k_hi): integer phase for a batch, then MI + top list.

    ``lanes[kblock, g, w, j]`` holds word w of genotype row g (g = 0, 1) of SNP 8*kblock + j, so a
    vector of 8 lanes covers 8 candidate last SNPs; genotype 2 is derived by subtraction.
    ``phases < 3`` stops after the integer phase (for ``phase_times``: no MI, no top list).

    ``par.size > 0`` (order ≥ 3): the table's rows are split (see ``_build_level``): only its
    first 2R/3 rows (last prefix SNP's genotype 0, 1) are counted; row (r', 2) is the parent's
    count with SNP k (``par``, counted once per parent for every k) minus rows (r', 0), (r', 1).
    ``pj.size > 0`` (order 3): of those, only the rows of the first SNP's genotypes 0, 1 are
    counted (4 of 9); rows (2, g') are the pair counts of (j, k) (``pj``: the second prefix SNP's
    counts with every k, counted once per search) minus rows (0, g'), (1, g'); then ``par`` and
    ``pj`` are rows of the pair tables in their blocked layout (``_pair_counts``), and all 5
    derived rows come from one ``_derive3_v8`` pass. (With one segment per class, the usual
    case, the search runs ``_last_stage16`` instead.)
    """
    sub = par.size > 0
    n1 = 0
    n0 = 0
    for r in range(R):          # the prefix rows partition the individuals
        n1 += pc[r, 1]
        n0 += pc[r, 0]
    fN = float(n1 + n0)
    fN1 = float(n1)
    # MI ≤ χ²/N = (N·S − N1²) / (N1·N0) with S = Σ a²/n (_chi_rows); S is computed with
    # vrcp14pd (< 2**-14) where AVX-512 is present, so the S a candidate must reach is divided by
    # 1 + 2**-12 (a division elsewhere: the factor then only loosens the bound a little more)
    s_scale = fN1 * float(n0) / fN / (1.0 + 2.0 ** -12)
    s_base = fN1 * fN1 / fN / (1.0 + 2.0 ** -12)
    pi = fN1 / fN
    pair = sub and pj.size > 0 and R == 9
    Rc = (4 if pair else (2 * R) // 3) if sub else R
    Rp = R // 3
    G = _group_nb(Rc)
    k_first = (k_lo // 8) * 8
    for kb in range(k_first, k_hi, batch):
        ke = min(kb + batch, k_hi)
        nvec = (ke - kb + 7) // 8
        cstride = 8 * nvec
        # integer phase: AND + popcount, lanes = 8 consecutive last SNPs
        _count_rows(tables, toff, Rc, G, kb, ke, lanes, W, segs, counts, R, cstride, _ZERO)
        if pair:             # rows (2, g'): the pair (j, k) minus rows (0, g'), (1, g');
            # rows (r', 2): the parent's count minus rows (r', 0), (r', 1) — in one pass
            _derive3_v8(counts, R, cstride, pj, par, kb // 8, nvec)
        elif sub:            # rows (r', 2): the parent's count minus rows (r', 0), (r', 1)
            for c in range(2):
                for rp in range(Rp):
                    for g in range(2):
                        o = ((c * R + 2 * Rp + rp) * 2 + g) * cstride
                        o0 = ((c * R + 2 * rp) * 2 + g) * cstride
                        o1 = ((c * R + 2 * rp + 1) * 2 + g) * cstride
                        op = ((c * Rp + rp) * 2 + g) * npad + kb
                        _sub2_v8(counts, o, o0, o1, par, op, nvec)
        if phases < 3:
            continue
        # floating-point phase: MI from Σ n ln n (lookup table), 8 candidates per vector
        b0 = 0
        b1 = R * 2 * cstride
        for v in range(nvec):
            o = 8 * v
            jlo = max(k_lo - kb - o, 0)
            jhi = min(ke - kb - o, 8)
            w = state[0]
            full = tq[w] >= 0
            # once the top list is full, the MI only of candidates whose χ² bound reaches it: a
            # candidate can enter only if its MI ≥ (tq[w] − 0.5)·1e−11 (less 1e-12 for rounding)
            lim = ((tq[w] - 1) * 1e-11 - 1e-12) * s_scale + s_base
            if full:
                # from order 4 on (R = 27) straight to the Taylor bound: χ² passes too many
                # there (order 4, 100 SNPs × 2000: 5.9 → 6.4 M quads/s; order 2: 59 → 49–54)
                m = -1 if R >= 27 else _chi_rows(counts, b1, b0, cstride, o, pc, R, lim, 0.0,
                                                 acc)
                m &= (1 << jhi) - (1 << jlo)          # the lanes of [k_lo, ke) only
                # ... and then only if the tighter Taylor bound (2·N·MI ≤ Σ t, t within 2**-12)
                # reaches 2·N·MI ≥ 2·N·lim_mi (its floor, less 2**-10 and 1e-6)
                if m == 0:
                    continue
                lim2 = (2.0 * fN * ((tq[w] - 1) * 1e-11 - 1e-12)) * (1.0 - 2.0 ** -10) - 1e-6
                m = _taylor_rows(counts, b1, b0, cstride, o, pc, R, lim2, pi, acc)
                for j in range(jlo, jhi):
                    if (m >> j) & 1:
                        mi = hy + _mi_one(counts, b1, b0, cstride, o + j, pc, R, nlogn) * inv_n
                        _offer(mi, kb + o + j, idx, order, tq, tm, ti, state)
                continue
            _nlogn_rows(counts, b1, b0, cstride, o, pc, R, nlogn, 0.0, acc)
            for j in range(jlo, jhi):
                _offer(hy + acc[j] * inv_n, kb + o + j, idx, order, tq, tm, ti, state)


@njit(cache=True)
def _mi_one(counts, b1, b0, cstride, oj, pc, R, nlogn):
    """Σ_cells T[a] + T[b] − T[a + b] of the one candidate at lane offset ``oj`` (scalar: the
    few candidates that pass the χ² bound)."""
    s = 0.0
    for r in range(R):
        x1 = b1 + 2 * r * cstride + oj
        x0 = b0 + 2 * r * cstride + oj
        a1 = np.int64(counts[x1])        # int64 counts, or float32 (_last_stage16)
        e1 = np.int64(counts[x1 + cstride])
        a0 = np.int64(counts[x0])
        e0 = np.int64(counts[x0 + cstride])
        z1 = pc[r, 1] - a1 - e1
        z0 = pc[r, 0] - a0 - e0
        s += (nlogn[a1] + nlogn[a0] - nlogn[a1 + a0]) + (nlogn[e1] + nlogn[e0] - nlogn[e1 + e0]) \
            + (nlogn[z1] + nlogn[z0] - nlogn[z1 + z0])
    return s


@njit(cache=True)
def _last_stage16(tab32, toff, pc, idx, order, k_lo, k_hi, lanes16, W, segs, countsf, nlogn,
                  inv_n, hy, tq, tm, ti, state, acc, phases, par16, pj16, pcf):
    """``_last_stage`` at order 3 with pair tables and one segment per class (the usual case),
    16 candidates per call in 32-bit lanes: ``_fused3_v16`` counts, derives and bounds them (the
    Taylor bound on 2·N·MI in float32 × 16) and stores their 36 float32 count vectors in
    ``countsf`` (row q of class c, genotype g at ((c·9 + q)·2 + g)·16); once the top list is
    full only the lanes whose bound reaches it get their exact MI (about 1 in 2000 at 400 SNPs ×
    2000), before that every lane, 8 at a time. ``tab32``, ``lanes16``: uint32 views
    (``_lanes16``), ``par16``, ``pj16``: float32 pair-table rows (``_pair_counts``' b16 layout);
    ``pcf``: 24 float32, the worker's buffer for ``fused_params`` (no allocation per call)."""
    s1 = 0 if segs[0, 2] == 1 else 1
    lo1 = 2 * segs[s1, 0]
    nw1 = 2 * segs[s1, 1] - lo1
    lo0 = 2 * segs[1 - s1, 0]
    nw0 = 2 * segs[1 - s1, 1] - lo0
    W2 = 2 * W
    b1 = 18 * 16
    fN = fused_params(pc, pcf)        # N, and the prefix's constants of the float32 bound
    for kb in range((k_lo // 16) * 16, k_hi, 16):
        kblk = kb // 16
        w = state[0]
        full = tq[w] >= 0
        # a candidate can enter only if its MI ≥ (tq[w] − 0.5)·1e−11 (less 1e-12 for rounding):
        # the limit on 2·N·MI the Taylor bound of the 16 lanes must reach (its own float32
        # slack is _fused3_v16's)
        lim = 2.0 * fN * ((tq[w] - 1) * 1e-11 - 1e-12)
        m = _fused3_v16(tab32, 2 * toff + lo1, 2 * toff + lo0, W2, lanes16,
                        (kblk * 2 * W2 + lo1) * 16, (kblk * 2 * W2 + lo0) * 16, W2 * 16, nw1,
                        nw0, pj16, par16, kblk * 192, pcf, lim, countsf, 0, 16, 2 * W2 * 16)
        if phases < 3:
            continue
        jlo = max(k_lo - kb, 0)
        jhi = min(k_hi - kb, 16)
        m &= (1 << jhi) - (1 << jlo)
        if full:             # the exact MI of the few lanes whose bound reaches the list
            while m != 0:
                j = _lowest_bit(m)
                m &= m - 1
                mi = hy + _mi_one(countsf, b1, 0, 16, j, pc, 9, nlogn) * inv_n
                _offer(mi, kb + j, idx, order, tq, tm, ti, state)
            continue
        for h in range(2):
            lo = max(jlo - 8 * h, 0)
            hi = min(jhi - 8 * h, 8)
            if hi <= 0 or lo >= 8:        # no candidate here (pair rows below k_lo unset)
                continue
            _nlogn_rows(countsf, b1, 0, 16, 8 * h, pc, 9, nlogn, 0.0, acc)
            for j in range(lo, hi):
                _offer(hy + acc[j] * inv_n, kb + 8 * h + j, idx, order, tq, tm, ti, state)


@njit(cache=True, inline="always")
def _lowest_bit(m):
    """Index of the lowest set bit of m > 0."""
    j = 0
    while (m >> j) & 1 == 0:
        j += 1
    return j


@njit(cache=True, inline="always")
def _offer(mi, k, idx, order, tq, tm, ti, state):
    """Put candidate (idx[:order−1], k) with MI ``mi`` into the top list if it ranks above the
    worst entry (``state[0]``)."""
    q = np.int64(np.floor(mi * 1e11 + 0.5))
    w = state[0]
    if q < tq[w]:
        return
    if _better(q, idx, k, order, tq, ti, w):
        tq[w] = q
        tm[w] = mi
        for t in range(order - 1):
            ti[w, t] = idx[t]
        ti[w, order - 1] = k
        state[0] = _worst(tq, ti, order)


@njit(cache=True)
def _parent_counts(tables, toff, R, k_lo, n_snps, lanes, W, segs, par, npad):
    """par[((c·R + r)·2 + g)·npad + k]: counts of the parent table's rows with SNP k, every k from
    k_lo rounded down to 8 up to the padded end (the last stage reads whole blocks of 8)."""
    k_first = (k_lo // 8) * 8
    for c in range(2):
        for r in range(R):
            for g in range(2):
                o = ((c * R + r) * 2 + g) * npad
                for k in range(k_first, npad):
                    par[o + k] = 0
    _count_rows(tables, toff, R, _group_nb(R), k_first, npad, lanes, W, segs, par, R, npad,
                k_first)


@njit(cache=True, parallel=True)
def _pair_counts(bits3, lanes4, segs, npad, b16=False):
    """(out, out16); out[j]: SNP j's 3 genotype rows counted with genotypes 0, 1 of every SNP k
    from j + 1 (rounded down to 8): the pair tables an order-3 search derives its first SNP's
    genotype 2 from. Blocked layout: the 12 counts ((c·3 + g_j)·2 + g_k) of the 8 SNPs of block
    k // 8 side by side, at ((k // 8)·12 + (c·3 + g_j)·2 + g_k)·8 + k % 8, so a batch reads one
    stream (``_parent_counts``' layout, 12 rows of npad, made 12 short streams of the 15 MB
    tables). ``b16``: out16 instead (out has 0 rows), float32 in blocks of 16 SNPs, count q of
    SNP k at ((k // 16)·12 + q)·16 + k % 16 (``_last_stage16``)."""
    n = bits3.shape[0]
    W = bits3.shape[2]
    lanes = lanes4.ravel()
    out = np.zeros((0 if b16 else n, 12 * npad), dtype=np.int64)
    out16 = np.zeros((n if b16 else 0, 12 * ((npad + 15) // 16 * 16)), dtype=np.float32)
    for j in prange(n):
        tab = bits3[j].copy().ravel()
        rows = np.zeros(12 * npad, dtype=np.int64)
        _parent_counts(tab, _ZERO, _THREE, j + 1, n, lanes, W, segs, rows, npad)
        for b in range((j + 1) // 8, npad // 8):
            for q in range(12):
                for t in range(8):
                    if b16:
                        out16[j, ((b // 2) * 12 + q) * 16 + (b % 2) * 8 + t] = \
                            rows[q * npad + b * 8 + t]
                    else:
                        out[j, (b * 12 + q) * 8 + t] = rows[q * npad + b * 8 + t]
    return out, out16
