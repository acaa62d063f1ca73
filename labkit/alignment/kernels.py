"""Lab 01's kernels, one per optimisation step (numba, int16 DP cells unless stated).

* ``align_scalar`` — one pair at a time (the seed's starting point);
* ``transpose_batch`` — (pairs × length) codes → the (length × pairs) layout the next steps read;
* ``align_transposed_promoted`` — the lane loop across pairs, but numba does the arithmetic in int64;
* ``align_transposed`` — the same loop with every intermediate kept int16;
* ``align_batched`` / ``align_batched_serial`` — any batch size and lengths, four DP columns per
  sweep, threads over batches.

Kernels take a ``Scoring`` (int16 fields ``match``, ``mismatch``, ``gap_open``, ``gap_extend``)
and never import the package ``__init__``.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

__all__ = ["align_scalar", "transpose_batch", "transpose_ragged", "align_transposed_promoted",
           "align_transposed",
           "align_batched", "align_batched_serial"]


@njit(cache=True)
def _scalar_pair(a, la, b, lb, mt, mm, go, ge, H, E):
    """Score of one pair: the DP column H (and its horizontal gaps E) swept along b."""
    H[0] = 0
    E[0] = go
    for i in range(1, la + 1):
        H[i] = go + (i - 1) * ge
        E[i] = H[i] + go
    for j in range(1, lb + 1):
        diag = H[0]
        H[0] = E[0]
        F = E[0] + go
        E[0] += ge
        bj = b[j - 1]
        for i in range(1, la + 1):
            best = diag + (mt if a[i - 1] == bj else mm)
            best = max(best, F)
            best = max(best, E[i])
            diag = H[i]
            H[i] = best
            best += go
            F = max(F + ge, best)
            E[i] = max(E[i] + ge, best)
    return H[la]


@njit(cache=True)
def align_scalar(seqs1, seqs2, scoring):
    """One pair at a time (the seed's baseline): rows of seqs1 (n×L1) against rows of seqs2."""
    n, L1 = seqs1.shape
    L2 = seqs2.shape[1]
    mt, mm = np.int32(scoring.match), np.int32(scoring.mismatch)
    go, ge = np.int32(scoring.gap_open), np.int32(scoring.gap_extend)
    H = np.empty(L1 + 1, np.int32)
    E = np.empty(L1 + 1, np.int32)
    out = np.empty(n, np.int32)
    for p in range(n):
        out[p] = _scalar_pair(seqs1[p], L1, seqs2[p], L2, mt, mm, go, ge, H, E)
    return out


@njit(cache=True, parallel=True)
def _align_scalar_lens(seqs1, lens1, seqs2, lens2, scoring):
    """Scalar kernel with per-pair lengths and int32 DP cells, pairs spread over threads."""
    n = seqs1.shape[0]
    L1 = seqs1.shape[1]
    mt, mm = np.int32(scoring.match), np.int32(scoring.mismatch)
    go, ge = np.int32(scoring.gap_open), np.int32(scoring.gap_extend)
    out = np.empty(n, np.int32)
    for p in prange(n):
        H = np.empty(L1 + 1, np.int32)
        E = np.empty(L1 + 1, np.int32)
        out[p] = _scalar_pair(seqs1[p], lens1[p], seqs2[p], lens2[p], mt, mm, go, ge, H, E)
    return out


@njit(cache=True)
def transpose_batch(codes):
    """(pairs × length) codes → a C-contiguous (length × pairs) copy: out[i, k] = codes[k, i]."""
    n, L = codes.shape
    out = np.empty((L, n), codes.dtype)
    for k in range(n):
        for i in range(L):
            out[i, k] = codes[k, i]
    return out


@njit(cache=True)
def align_transposed_promoted(seqs1T, seqs2T, scoring):
    """The seed's transposition written plainly: int16 arrays, but numba does the arithmetic in
    int64, so the lane loop vectorises over only 8 pairs per 512-bit register."""
    L1, n = seqs1T.shape
    L2 = seqs2T.shape[0]
    mt, mm = scoring.match, scoring.mismatch
    go, ge = scoring.gap_open, scoring.gap_extend
    H = np.empty((L1 + 1, n), np.int16)
    E = np.empty((L1 + 1, n), np.int16)
    diag = np.empty(n, np.int16)
    F = np.empty(n, np.int16)
    for i in range(L1 + 1):
        for k in range(n):
            H[i, k] = 0 if i == 0 else go + (i - 1) * ge
            E[i, k] = H[i, k] + go
    for j in range(L2):
        b = seqs2T[j]
        for k in range(n):
            diag[k] = H[0, k]
            H[0, k] = E[0, k]
            F[k] = E[0, k] + go
            E[0, k] += ge
        for i in range(1, L1 + 1):
            a = seqs1T[i - 1]
            for k in range(n):
                best = diag[k] + (mt if a[k] == b[k] else mm)
                best = max(best, F[k])
                best = max(best, E[i, k])
                diag[k] = H[i, k]
                H[i, k] = best
                best += go
                F[k] = max(F[k] + ge, best)
                E[i, k] = max(E[i, k] + ge, best)
    out = np.empty(n, np.int32)
    for k in range(n):
        out[k] = H[L1, k]
    return out


@njit(cache=True)
def align_transposed(seqs1T, seqs2T, scoring):
    """Transposed batch (length × pairs), every intermediate kept int16: the lane loop becomes
    32-lane ``vpaddw``/``vpmaxsw``. Equal lengths within the batch; use ``align`` otherwise."""
    L1, n = seqs1T.shape
    L2 = seqs2T.shape[0]
    mt, mm = scoring.match, scoring.mismatch          # int16 (see Scoring)
    go, ge = scoring.gap_open, scoring.gap_extend
    H = np.empty((L1 + 1, n), np.int16)
    E = np.empty((L1 + 1, n), np.int16)
    diag = np.empty(n, np.int16)
    F = np.empty(n, np.int16)
    for i in range(L1 + 1):
        v = np.int16(0) if i == 0 else np.int16(go + np.int16(i - 1) * ge)
        for k in range(n):
            H[i, k] = v
            E[i, k] = np.int16(v + go)
    for j in range(L2):
        b = seqs2T[j]
        for k in range(n):
            diag[k] = H[0, k]
            H[0, k] = E[0, k]
            F[k] = np.int16(E[0, k] + go)
            E[0, k] = np.int16(E[0, k] + ge)
        for i in range(1, L1 + 1):
            a = seqs1T[i - 1]
            Hi = H[i]
            Ei = E[i]
            for k in range(n):
                s = mt if a[k] == b[k] else mm
                best = np.int16(diag[k] + s)
                f = F[k]
                e = Ei[k]
                best = best if best > f else f
                best = best if best > e else e
                diag[k] = Hi[k]
                Hi[k] = best
                opened = np.int16(best + go)
                f = np.int16(f + ge)
                e = np.int16(e + ge)
                F[k] = f if f > opened else opened
                Ei[k] = e if e > opened else opened
    out = np.empty(n, np.int32)
    for k in range(n):
        out[k] = H[L1, k]
    return out


@njit(cache=True)
def _boundary(c, go, ge):
    """H[0, c] = H[c, 0]: a leading gap of length c (int16)."""
    if c == 0:
        return np.int16(0)
    return np.int16(go + np.int16(c - 1) * ge)


@njit(cache=True, inline="always")
def _cell(d, f, e, a, b, mt, mm, go, ge):
    """One DP cell (int16): from the diagonal H ``d``, the gaps ``f`` (along seqs1, from above)
    and ``e`` (along seqs2, from the left) and the two residues → (H, next f, next e)."""
    h = np.int16(d + (mt if a == b else mm))
    h = h if h > f else f
    h = h if h > e else e
    o = np.int16(h + go)
    f = np.int16(f + ge)
    e = np.int16(e + ge)
    return h, (f if f > o else o), (e if e > o else o)


@njit(cache=True)
def _ends(lens2, L2):
    """is_end[j]: some lane's second sequence ends at column j (its score is read there)."""
    is_end = np.zeros(L2 + 1, np.bool_)
    for k in range(lens2.size):
        is_end[lens2[k]] = True
    return is_end


@njit(cache=True)
def _batch_kernel(s1T, s2T, lens1, lens2, mt, mm, go, ge, out):
    """One transposed batch (L1 × W, L2 × W): four DP columns per sweep over the rows, each
    lane's score read at its own cell (lens1[k], lens2[k]); writes out[k]."""
    L1, W = s1T.shape
    L2 = s2T.shape[0]
    HE = np.empty((L1 + 1, 2, W), np.int16)      # per row: H of the last column, its E
    D0 = np.empty(W, np.int16)
    D1 = np.empty(W, np.int16)
    D2 = np.empty(W, np.int16)
    D3 = np.empty(W, np.int16)
    F0 = np.empty(W, np.int16)
    F1 = np.empty(W, np.int16)
    F2 = np.empty(W, np.int16)
    F3 = np.empty(W, np.int16)
    is_end = np.zeros(L2 + 1, np.bool_)     # built here: from a call (_ends) this kernel ran
    for k in range(W):                      # far slower (measured: docs/alignment.md, 'is_end')
        is_end[lens2[k]] = True
    for i in range(L1 + 1):
        v = _boundary(i, go, ge)
        for k in range(W):
            HE[i, 0, k] = v
            HE[i, 1, k] = np.int16(v + go)
    j = 0                                           # columns done
    while j < L2:
        if j + 4 <= L2 and not (is_end[j + 1] or is_end[j + 2] or is_end[j + 3]):
            b0 = s2T[j]
            b1 = s2T[j + 1]
            b2 = s2T[j + 2]
            b3 = s2T[j + 3]
            h0 = _boundary(j, go, ge)
            h1 = _boundary(j + 1, go, ge)
            h2 = _boundary(j + 2, go, ge)
            h3 = _boundary(j + 3, go, ge)
            h4 = _boundary(j + 4, go, ge)
            for k in range(W):
                D0[k] = h0
                D1[k] = h1
                D2[k] = h2
                D3[k] = h3
                F0[k] = np.int16(h1 + go)
                F1[k] = np.int16(h2 + go)
                F2[k] = np.int16(h3 + go)
                F3[k] = np.int16(h4 + go)
            for i in range(1, L1 + 1):
                a = s1T[i - 1]
                row = HE[i]
                for k in range(W):
                    ak = a[k]
                    # four columns j+1 … j+4 of lane k: H flows left to right through `left`,
                    # E (gap along seqs2) through `e`; D holds each column's diagonal, F its gap
                    d = D0[k]
                    D0[k] = row[0, k]
                    left, F0[k], e = _cell(d, F0[k], row[1, k], ak, b0[k], mt, mm, go, ge)
                    d = D1[k]
                    D1[k] = left
                    left, F1[k], e = _cell(d, F1[k], e, ak, b1[k], mt, mm, go, ge)
                    d = D2[k]
                    D2[k] = left
                    left, F2[k], e = _cell(d, F2[k], e, ak, b2[k], mt, mm, go, ge)
                    d = D3[k]
                    D3[k] = left
                    row[0, k], F3[k], row[1, k] = _cell(d, F3[k], e, ak, b3[k], mt, mm, go, ge)
            j += 4
        else:
            b0 = s2T[j]
            h0 = _boundary(j, go, ge)
            h1 = _boundary(j + 1, go, ge)
            for k in range(W):
                D0[k] = h0
                F0[k] = np.int16(h1 + go)
            for i in range(1, L1 + 1):
                a = s1T[i - 1]
                row = HE[i]
                for k in range(W):
                    d = D0[k]
                    D0[k] = row[0, k]
                    row[0, k], F0[k], row[1, k] = _cell(d, F0[k], row[1, k], a[k], b0[k],
                                                        mt, mm, go, ge)
            j += 1
        if is_end[j]:
            for k in range(W):
                if lens2[k] == j:
                    out[k] = HE[lens1[k], 0, k]
    # column 0 never occurs (lengths ≥ 1)


@njit(cache=True)
def _transpose_pairs(seqs1, lens1, seqs2, lens2, start, stop, lanes):
    """Pairs start..stop of padded codes → (s1T, s2T, l1, l2): a (length × lanes) batch each,
    zeros past the ends; padding lanes get the full size (never read out)."""
    L1 = 1
    L2 = 1
    for p in range(start, stop):
        L1 = max(L1, lens1[p])
        L2 = max(L2, lens2[p])
    s1T = np.zeros((L1, lanes), np.uint8)
    s2T = np.zeros((L2, lanes), np.uint8)
    l1 = np.full(lanes, L1, np.int64)
    l2 = np.full(lanes, L2, np.int64)
    for p in range(start, stop):
        k = p - start
        l1[k] = lens1[p]
        l2[k] = lens2[p]
        for i in range(lens1[p]):
            s1T[i, k] = seqs1[p, i]
        for i in range(lens2[p]):
            s2T[i, k] = seqs2[p, i]
    return s1T, s2T, l1, l2


@njit(cache=True)
def _run_batch(seqs1, lens1, seqs2, lens2, mt, mm, go, ge, start, stop, lanes, out):
    """Transpose pairs start..stop into a (length × lanes) batch, align it, write out[start:stop]."""
    s1T, s2T, l1, l2 = _transpose_pairs(seqs1, lens1, seqs2, lens2, start, stop, lanes)
    res = np.empty(lanes, np.int32)
    _batch_kernel(s1T, s2T, l1, l2, mt, mm, go, ge, res)
    for p in range(start, stop):
        out[p] = res[p - start]


@njit(cache=True, parallel=True)
def align_batched(seqs1, lens1, seqs2, lens2, scoring, lanes=64):
    """The fast kernel: pairs in batches of ``lanes`` (rounded up to a multiple of 32; transposed
    here, the last batch padded), any lengths ≥ 1 (each score read at its own cell), 4 columns per
    sweep, threads over batches (``prange``). Assumes validated input whose scores fit int16
    (see ``align`` / ``fits_int16``)."""
    n = seqs1.shape[0]
    out = np.empty(n, np.int32)
    lanes = max(32, (lanes + 31) // 32 * 32)       # whole 512-bit registers of int16, no scalar tail
    nb = (n + lanes - 1) // lanes
    for bi in prange(nb):
        start = bi * lanes
        _run_batch(seqs1, lens1, seqs2, lens2, scoring.match, scoring.mismatch, scoring.gap_open,
                   scoring.gap_extend, start, min(start + lanes, n), lanes, out)
    return out


@njit(cache=True)
def align_batched_serial(seqs1, lens1, seqs2, lens2, scoring, lanes=64):
    """``align_batched`` on the calling thread only (no parallel region: no thread start-up or
    join, which matters for one batch or on a busy machine)."""
    n = seqs1.shape[0]
    out = np.empty(n, np.int32)
    lanes = max(32, (lanes + 31) // 32 * 32)
    nb = (n + lanes - 1) // lanes
    for bi in range(nb):
        start = bi * lanes
        _run_batch(seqs1, lens1, seqs2, lens2, scoring.match, scoring.mismatch, scoring.gap_open,
                   scoring.gap_extend, start, min(start + lanes, n), lanes, out)
    return out


# ---------------------------------------------------------------------------- ragged batches
@njit(cache=True)
def transpose_ragged(flat, offsets, lanes):
    """A ragged batch → the padded transposed layout the lane loop reads.

    ``flat``: every sequence's codes concatenated (uint8), sequence p = ``flat[offsets[p]:
    offsets[p + 1]]``. Returns ``(T, lens)``: ``T`` C-contiguous uint8 (longest length ×
    pairs rounded up to a multiple of ``lanes``), ``T[i, k]`` = code i of sequence k, 0 past its
    end and in the padding lanes; ``lens`` int64 (one per lane, 0 for padding lanes)."""
    n = offsets.size - 1
    w = max(1, (n + lanes - 1) // lanes) * lanes
    L = 1
    for p in range(n):
        L = max(L, offsets[p + 1] - offsets[p])
    T = np.zeros((L, w), np.uint8)
    lens = np.zeros(w, np.int64)
    for p in range(n):
        o = offsets[p]
        m = offsets[p + 1] - o
        lens[p] = m
        for i in range(m):
            T[i, p] = flat[o + i]
    return T, lens
