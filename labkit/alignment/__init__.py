"""Lab 01 — sequence alignment: transpose the batch so the compiler vectorises across pairs.

Global alignment with affine gaps (Gotoh), score only, after the perf-ninja lab
"vectorization_1" (R. Rahn): 16 pairs of 200-long sequences over a 5-letter alphabet, match 6,
mismatch −4, gap open −11, gap extension −1, 16-bit scores. A gap of length k costs
``gap_open + (k - 1) * gap_extend`` (parasail's ``nw`` convention with open=11, extend=1).

The steps, one kernel each:

* ``align_scalar`` — one pair at a time (the seed's starting point);
* ``align_transposed_promoted`` — the batch transposed to length × count so the innermost loop
  runs across pairs; but numba promotes int16 arithmetic to int64, so it vectorises over only
  8 lanes (``vpmaxsq``);
* ``align_transposed`` — the same loop with every intermediate kept int16: 32 lanes per zmm
  register (``vpaddw``/``vpmaxsw``);
* ``align_batched`` — the fast kernel: batches of any size and any lengths (padding + reading
  each score at its own cell), four DP columns per sweep, threads over batches (``prange``).

``align(seqs1, seqs2)`` is the friendly entry point: it validates, picks the kernel and guards
against int16 overflow.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import numba
from numba import njit, prange

from labkit._sizes import resolve_size
from labkit.bench import Target, ratio_of
from labkit.check import mismatch

__all__ = [
    "ALPHABET", "Scoring", "AlignmentInputs", "encode", "decode", "make_inputs", "reference",
    "align_scalar", "align_transposed_promoted", "align_transposed", "transpose_batch",
    "align_batched", "align_batched_serial", "align", "fits_int16", "validate", "BENCHMARK", "TARGETS", "run_benchmark",
    "cpu_compare",
    "parasail_scores", "throughput", "check_transpose", "check_transposed_inner",
]

#: The 5 symbols, codes 0..4.
ALPHABET = "ACGTN"
_LOOKUP = np.full(256, 255, dtype=np.uint8)
for _i, _c in enumerate(ALPHABET):
    _LOOKUP[ord(_c)] = _i
    _LOOKUP[ord(_c.lower())] = _i

_I16_MIN, _I16_MAX = -32768, 32767


# ---------------------------------------------------------------------------- scoring
class _ScoringFields(NamedTuple):
    match: np.int16
    mismatch: np.int16
    gap_open: np.int16
    gap_extend: np.int16


class Scoring(_ScoringFields):
    """Scores: match, mismatch, gap_open (first gap position), gap_extend (each further one).

    Stored as ``np.int16`` so numba kernels see 16-bit constants (passing int64 ones lets LLVM
    widen the match/mismatch select to 64-bit lanes). Gap scores must be ≤ 0.
    """

    __slots__ = ()

    def __new__(cls, match=6, mismatch=-4, gap_open=-11, gap_extend=-1):
        """Validate and store the four scores as int16."""
        vals = {"match": match, "mismatch": mismatch, "gap_open": gap_open,
                "gap_extend": gap_extend}
        for name, v in vals.items():
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
                raise TypeError(f"Scoring.{name} must be an integer, got {v!r}")
            if not _I16_MIN <= int(v) <= _I16_MAX:
                raise ValueError(f"Scoring.{name}={int(v)} does not fit in int16; "
                                 f"use a value in [{_I16_MIN}, {_I16_MAX}]")
        if int(gap_open) > 0 or int(gap_extend) > 0:
            raise ValueError(f"gap scores are penalties and must be ≤ 0, got gap_open={int(gap_open)}, "
                             f"gap_extend={int(gap_extend)} (e.g. gap_open=-11, gap_extend=-1)")
        return super().__new__(cls, *(np.int16(int(v)) for v in vals.values()))

    def __repr__(self) -> str:
        return (f"Scoring(match={int(self.match)}, mismatch={int(self.mismatch)}, "
                f"gap_open={int(self.gap_open)}, gap_extend={int(self.gap_extend)})")

    def ints(self) -> tuple[int, int, int, int]:
        """The four scores as Python ints (match, mismatch, gap_open, gap_extend)."""
        return tuple(int(v) for v in self)


def _as_scoring(scoring) -> Scoring:
    if scoring is None:
        return Scoring()
    if isinstance(scoring, Scoring):
        return scoring
    if isinstance(scoring, tuple) and len(scoring) == 4:
        return Scoring(*scoring)
    if isinstance(scoring, dict):
        return Scoring(**scoring)
    raise TypeError(f"scoring must be a labkit.alignment.Scoring (e.g. Scoring(match=6, mismatch=-4, "
                    f"gap_open=-11, gap_extend=-1)), got {type(scoring).__name__}")


def fits_int16(len1: int, len2: int, scoring=None) -> bool:
    """True when every DP value for sequences up to len1 × len2 provably fits in int16."""
    mt, mm, go, ge = _as_scoring(scoring).ints()
    smax, smin = max(mt, mm, 0), min(mt, mm, 0)
    # every H is ≥ the all-gap path and ≤ smax per diagonal step; temporaries add one more
    # score / gap open / gap extension on either side (gap scores are ≤ 0)
    lo = 2 * go + (len1 + len2) * ge + go + ge + smin
    hi = smax * (min(len1, len2) + 1)
    return lo >= _I16_MIN + 8 and hi <= _I16_MAX - 8


# ---------------------------------------------------------------------------- encoding
def encode(seq):
    """Letters "ACGTN" (any case) → uint8 codes 0..4; a str gives 1-D, equal-length strs 2-D."""
    if isinstance(seq, str):
        raw = np.frombuffer(seq.encode("latin-1", errors="replace"), dtype=np.uint8)
        codes = _LOOKUP[raw]
        bad = np.flatnonzero(codes == 255)
        if bad.size:
            i = int(bad[0])
            raise ValueError(f"unknown letter {seq[i]!r} at position {i}; the alphabet is "
                             f"{ALPHABET!r} (upper or lower case)")
        return codes
    if isinstance(seq, (list, tuple)):
        rows = [encode(s) for s in seq]
        lens = {r.size for r in rows}
        if len(lens) > 1:
            raise ValueError("encode() of a list needs equal lengths to build a 2-D array; "
                             "align() accepts lists of different lengths directly")
        return np.stack(rows) if rows else np.zeros((0, 0), np.uint8)
    raise TypeError(f"encode() takes a str or a list of str, got {type(seq).__name__}")


def decode(codes):
    """uint8 codes 0..4 → letters; a 1-D array gives a str, a 2-D array a list of str."""
    a = np.asarray(codes)
    if a.dtype.kind not in "iu":
        raise TypeError(f"decode() needs integer codes, got dtype {a.dtype}")
    if a.size and (a.min() < 0 or a.max() > 4):
        raise ValueError(f"codes must be in 0..4 (alphabet {ALPHABET!r}), got {int(a.min())}..{int(a.max())}")
    if a.ndim == 1:
        return "".join(ALPHABET[int(c)] for c in a)
    if a.ndim == 2:
        return [decode(r) for r in a]
    raise ValueError(f"decode() takes a 1-D or 2-D array, got {a.ndim}-D")


# ---------------------------------------------------------------------------- inputs
SIZES = {
    "small": {"pairs": 64, "length": 100},
    "seed": {"pairs": 16, "length": 200},
    "large": {"pairs": 4096, "length": 200},
}


@dataclass
class AlignmentInputs:
    """A batch of pairs: codes (pairs × max length, uint8, padded with 0), lengths, scoring."""

    seqs1: np.ndarray
    seqs2: np.ndarray
    lens1: np.ndarray
    lens2: np.ndarray
    scoring: Scoring

    @property
    def pairs(self) -> int:
        """Number of pairs."""
        return int(self.seqs1.shape[0])

    @property
    def equal_lengths(self) -> bool:
        """True when every sequence fills its row (no padding)."""
        return bool((self.lens1 == self.seqs1.shape[1]).all() and (self.lens2 == self.seqs2.shape[1]).all())

    def strings(self) -> tuple[list[str], list[str]]:
        """The pairs as two lists of str (for parasail and printing)."""
        s1 = [decode(r[:n]) for r, n in zip(self.seqs1, self.lens1)]
        s2 = [decode(r[:n]) for r, n in zip(self.seqs2, self.lens2)]
        return s1, s2


def make_inputs(size="small", seed: int = 0) -> AlignmentInputs:
    """Random pairs over "ACGTN": size "small" (64×100), "seed" (16×200), "large" (4096×200) or a
    dict with pairs, length, and optionally length2, min_length (lengths vary per pair) and
    alphabet (symbols used, ≤ 5)."""
    spec = resolve_size(size, SIZES, ("pairs", "length", "length2", "min_length", "alphabet"))
    n, L1 = int(spec["pairs"]), int(spec["length"])
    L2 = int(spec.get("length2") or L1)
    lo = spec.get("min_length")
    k = int(spec.get("alphabet", 5))
    if n < 1 or L1 < 1 or L2 < 1:
        raise ValueError(f"pairs and lengths must be ≥ 1, got {spec}")
    if not 1 <= k <= 5:
        raise ValueError(f"alphabet must be 1..5 symbols, got {k}")
    g = np.random.default_rng(seed)
    s1 = g.integers(0, k, size=(n, L1), dtype=np.uint8)
    s2 = g.integers(0, k, size=(n, L2), dtype=np.uint8)
    if lo is None:
        l1 = np.full(n, L1, np.int64)
        l2 = np.full(n, L2, np.int64)
    else:
        lo = int(lo)
        if not 1 <= lo <= min(L1, L2):
            raise ValueError(f"min_length must be in 1..{min(L1, L2)}, got {lo}")
        l1 = g.integers(lo, L1 + 1, size=n).astype(np.int64)
        l2 = g.integers(lo, L2 + 1, size=n).astype(np.int64)
        for r, m in zip(s1, l1):
            r[m:] = 0
        for r, m in zip(s2, l2):
            r[m:] = 0
    return AlignmentInputs(s1, s2, l1, l2, Scoring())


# ---------------------------------------------------------------------------- reference
def _gotoh_scan(a: np.ndarray, b: np.ndarray, mt: int, mm: int, go: int, ge: int) -> int:
    """Row-by-row Gotoh in numpy; the horizontal gaps of a row come from one running maximum."""
    m = b.size
    j = np.arange(m + 1, dtype=np.int64)
    neg = -(1 << 40)
    H = np.where(j == 0, 0, go + (j - 1) * ge).astype(np.int64)   # row 0
    F = np.full(m + 1, neg, np.int64)                              # gaps coming down a column
    E = np.empty(m + 1, np.int64)
    b = b.astype(np.int64)
    for i in range(1, a.size + 1):
        F = np.maximum(F + ge, H + go)
        D = np.empty(m + 1, np.int64)
        D[0] = go + (i - 1) * ge                                   # H[i, 0]
        D[1:] = np.maximum(H[:-1] + np.where(b == a[i - 1], mt, mm), F[1:])
        # E[j] = max_{k<j} H[k] + go + (j-1-k)*ge; since go ≤ ge the E-terms inside H are
        # dominated, so E[j] = go + (j-1)*ge + max_{k<j}(D[k] - k*ge)  (a prefix maximum)
        run = np.maximum.accumulate(D - j * ge)
        E[0] = neg
        E[1:] = go + (j[1:] - 1) * ge + run[:-1]
        H = np.maximum(D, E)
        H[0] = D[0]
    return int(H[m])


def _gotoh_loops(a, b, mt, mm, go, ge) -> int:
    """Textbook three-matrix Gotoh in plain Python (any gap scores)."""
    n, m = len(a), len(b)
    neg = -(1 << 40)
    H = [[neg] * (m + 1) for _ in range(n + 1)]
    E = [[neg] * (m + 1) for _ in range(n + 1)]
    F = [[neg] * (m + 1) for _ in range(n + 1)]
    H[0][0] = 0
    for i in range(1, n + 1):
        H[i][0] = go + (i - 1) * ge
    for j in range(1, m + 1):
        H[0][j] = go + (j - 1) * ge
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            E[i][j] = max(E[i][j - 1] + ge, H[i][j - 1] + go)
            F[i][j] = max(F[i - 1][j] + ge, H[i - 1][j] + go)
            s = mt if a[i - 1] == b[j - 1] else mm
            H[i][j] = max(H[i - 1][j - 1] + s, E[i][j], F[i][j])
    return H[n][m]


def reference(inputs: AlignmentInputs) -> np.ndarray:
    """The oracle: plain numpy Gotoh, one pair at a time (slow, obviously correct) → int32."""
    mt, mm, go, ge = _as_scoring(inputs.scoring).ints()
    out = np.empty(inputs.pairs, np.int64)
    for p in range(inputs.pairs):
        a = inputs.seqs1[p, :inputs.lens1[p]]
        b = inputs.seqs2[p, :inputs.lens2[p]]
        if go <= ge:
            out[p] = _gotoh_scan(a, b, mt, mm, go, ge)
        else:
            out[p] = _gotoh_loops(list(a), list(b), mt, mm, go, ge)
    return out.astype(np.int32)


def parasail_scores(inputs: AlignmentInputs) -> np.ndarray:
    """Scores from parasail ``nw_scan_16`` (an independent library; needs ``parasail``)."""
    import parasail

    mt, mm, go, ge = _as_scoring(inputs.scoring).ints()
    matrix = parasail.matrix_create(ALPHABET, mt, mm)
    s1, s2 = inputs.strings()
    return np.array([parasail.nw_scan_16(a, b, -go, -ge, matrix).score for a, b in zip(s1, s2)],
                    dtype=np.int32)


def validate(result, expected) -> None:
    """Raise AssertionError naming the first differing pairs (``score[3] = 12, expected 14``)."""
    msg = mismatch(result, np.asarray(expected), name="score")
    if msg is not None:
        raise AssertionError(msg)


# ---------------------------------------------------------------------------- kernels
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
    is_end = np.zeros(L2 + 1, np.bool_)
    for k in range(W):
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
def _run_batch(seqs1, lens1, seqs2, lens2, mt, mm, go, ge, start, stop, lanes, out):
    """Transpose pairs start..stop into a (length × lanes) batch, align it, write out[start:stop]."""
    L1 = 1
    L2 = 1
    for p in range(start, stop):
        L1 = max(L1, lens1[p])
        L2 = max(L2, lens2[p])
    s1T = np.zeros((L1, lanes), np.uint8)
    s2T = np.zeros((L2, lanes), np.uint8)
    l1 = np.full(lanes, L1, np.int64)            # padding lanes: full size, never read
    l2 = np.full(lanes, L2, np.int64)
    for p in range(start, stop):
        k = p - start
        l1[k] = lens1[p]
        l2[k] = lens2[p]
        for i in range(lens1[p]):
            s1T[i, k] = seqs1[p, i]
        for i in range(lens2[p]):
            s2T[i, k] = seqs2[p, i]
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


# ---------------------------------------------------------------------------- entry point
_METHODS = ("auto", "transposed", "scalar")


def _as_codes(seqs, which: str):
    """str list / 1-D code arrays / 2-D uint8 array → (padded 2-D uint8 codes, int64 lengths)."""
    if isinstance(seqs, str):
        raise TypeError(f"{which} must be a list of sequences (pairs = items), got a single str; "
                        f"wrap it: [{seqs[:10]!r}…]")
    if isinstance(seqs, np.ndarray):
        if seqs.ndim != 2:
            raise ValueError(f"{which} as an array must be 2-D (pairs × length) uint8 codes, "
                             f"got {seqs.ndim}-D; use a list for sequences of different lengths")
        if seqs.dtype != np.uint8:
            raise TypeError(f"{which} must have dtype uint8 (codes 0..4), got {seqs.dtype}; "
                            f"use encode(...) or .astype(np.uint8)")
        if seqs.shape[0] and seqs.shape[1] == 0:
            raise ValueError(f"{which} holds empty sequences (length 0); every sequence needs ≥ 1 symbol")
        if seqs.size and seqs.max() > 4:
            bad = np.argwhere(seqs > 4)[0]
            raise ValueError(f"{which}[{bad[0]}, {bad[1]}] = {int(seqs[tuple(bad)])} is not a code "
                             f"0..4 (alphabet {ALPHABET!r}); use encode() on letters")
        return np.ascontiguousarray(seqs), np.full(seqs.shape[0], seqs.shape[1], np.int64)
    try:
        items = list(seqs)
    except TypeError:
        raise TypeError(f"{which} must be a list of str, a list of 1-D uint8 arrays or a 2-D uint8 "
                        f"array, got {type(seqs).__name__}") from None
    rows = []
    for p, s in enumerate(items):
        if isinstance(s, str):
            try:
                r = encode(s)
            except ValueError as e:
                raise ValueError(f"{which}[{p}]: {e}") from None
        elif isinstance(s, np.ndarray) and s.ndim == 1:
            if s.dtype.kind not in "iu":
                raise TypeError(f"{which}[{p}] has dtype {s.dtype}; codes must be integers 0..4")
            if s.size and (s.min() < 0 or s.max() > 4):
                raise ValueError(f"{which}[{p}] has codes outside 0..4 (alphabet {ALPHABET!r})")
            r = s.astype(np.uint8)
        else:
            raise TypeError(f"{which}[{p}] is a {type(s).__name__}; give str letters or a 1-D "
                            f"array of codes 0..4")
        if r.size == 0:
            raise ValueError(f"{which}[{p}] is empty; every sequence needs ≥ 1 symbol")
        rows.append(r)
    lens = np.array([r.size for r in rows], np.int64)
    L = int(lens.max()) if rows else 1
    codes = np.zeros((len(rows), L), np.uint8)
    for p, r in enumerate(rows):
        codes[p, :r.size] = r
    return codes, lens


def align(seqs1, seqs2, scoring=None, method: str = "auto", *, lanes: int = 64,
          threads: int | None = None) -> np.ndarray:
    """Global affine-gap alignment scores (int32), one per pair seqs1[p] × seqs2[p].

    ``seqs1``/``seqs2``: lists of str ("ACGTN", any case), lists of 1-D code arrays, or 2-D uint8
    code arrays (pairs = rows); lengths may differ. ``method``: "auto" (the batched int16 kernel;
    if the lengths/scores could overflow int16 it **widens automatically** to the int32 scalar
    kernel), "transposed" (the batched int16 kernel; raises ValueError if int16 could overflow),
    or "scalar". ``lanes``: pairs per batch; ``threads``: numba threads (default: all).
    """
    sc = _as_scoring(scoring)
    if method not in _METHODS:
        raise ValueError(f"method must be one of {_METHODS}, got {method!r}")
    if isinstance(lanes, (bool, np.bool_)) or not isinstance(lanes, (int, np.integer)) or lanes < 1:
        raise ValueError(f"lanes must be a positive int (e.g. 64), got {lanes!r}")
    c1, l1 = _as_codes(seqs1, "seqs1")
    c2, l2 = _as_codes(seqs2, "seqs2")
    if c1.shape[0] != c2.shape[0]:
        raise ValueError(f"seqs1 has {c1.shape[0]} sequences but seqs2 has {c2.shape[0]}; "
                         f"pairs are seqs1[p] with seqs2[p], so give the same number")
    n = c1.shape[0]
    if n == 0:
        return np.zeros(0, np.int32)
    prev = numba.get_num_threads()
    if threads is not None:
        if not isinstance(threads, (int, np.integer)) or not 1 <= threads <= numba.config.NUMBA_NUM_THREADS:
            raise ValueError(f"threads must be in 1..{numba.config.NUMBA_NUM_THREADS}, got {threads!r}")
        numba.set_num_threads(int(threads))
    try:
        if method == "scalar":
            return _align_scalar_lens(c1, l1, c2, l2, sc)
        if not fits_int16(int(l1.max()), int(l2.max()), sc):
            if method == "transposed":
                raise ValueError(f"sequences up to {int(l1.max())} × {int(l2.max())} with {sc} can "
                                 f"overflow int16 scores; use method='auto' (widens to int32) "
                                 f"or method='scalar'")
            return _align_scalar_lens(c1, l1, c2, l2, sc)
        width = max(32, (int(lanes) + 31) // 32 * 32)
        kernel = align_batched if numba.get_num_threads() > 1 and n > width else align_batched_serial
        if (l1 == l1[0]).all() and (l2 == l2[0]).all():
            return kernel(c1, l1, c2, l2, sc, int(lanes))
        order = np.lexsort((l1, l2))             # similar lengths share a batch: less padding
        res = kernel(np.ascontiguousarray(c1[order]), l1[order],
                     np.ascontiguousarray(c2[order]), l2[order], sc, int(lanes))
        out = np.empty(n, np.int32)
        out[order] = res
        return out
    finally:
        if threads is not None:
            numba.set_num_threads(prev)


# ---------------------------------------------------------------------------- benchmark
def _pairs(inputs: AlignmentInputs) -> int:
    return inputs.pairs


def _seed_args(inputs: AlignmentInputs):
    """Arguments for the step kernels: untransposed for scalar, transposed for the others."""
    s1T, s2T = transpose_batch(inputs.seqs1), transpose_batch(inputs.seqs2)
    return {
        "scalar": (align_scalar, (inputs.seqs1, inputs.seqs2, inputs.scoring)),
        "transposed_promoted": (align_transposed_promoted, (s1T, s2T, inputs.scoring)),
        "transposed": (align_transposed, (s1T, s2T, inputs.scoring)),
        "batched": (align_batched_serial, (inputs.seqs1, inputs.lens1, inputs.seqs2, inputs.lens2,
                                    inputs.scoring, max(16, inputs.pairs))),
    }


def _parasail_fn(inputs: AlignmentInputs):
    """A zero-argument function aligning every pair with parasail nw_scan_16 (None if absent)."""
    try:
        import parasail
    except ImportError:
        return None
    mt, mm, go, ge = inputs.scoring.ints()
    matrix = parasail.matrix_create(ALPHABET, mt, mm)
    s1, s2 = inputs.strings()
    nw = parasail.nw_scan_16

    def run_parasail():
        return np.array([nw(a, b, -go, -ge, matrix).score for a, b in zip(s1, s2)], np.int32)
    return run_parasail


BENCHMARK = {
    "inputs": "seed",
    "variants": {"scalar": align_scalar, "transposed_promoted": align_transposed_promoted,
                 "transposed": align_transposed, "batched": align_batched_serial},
    "baseline": "scalar",
    "peers": {"parasail nw_scan_16": _parasail_fn},
    "work": _pairs,
    "unit": "alignments",
}


def cpu_compare(functions: dict, *, work: int, repeat: int = 5, min_cpu: float = 0.1,
                label: str | None = None, baseline: str | None = None):
    """``bench.compare`` of zero-argument functions in *process CPU seconds* per call
    (interleaved repeats, ``clock="cpu"``): robust to other jobs sharing the cores."""
    from labkit import bench

    return bench.compare(functions, (), clock="cpu", work=work, unit="alignments",
                         repeat=repeat, min_time=min_cpu, label=label, baseline=baseline)


#: The lab's performance targets (its issue), checked by `labkit bench alignment`.
TARGETS = [
    Target("align_transposed vs align_scalar, 16 × 200", 8, ratio_of("steps", "transposed", "scalar")),
    Target("align vs parasail nw_scan_16, 4096 × 200, 1 thread, transposition included", 5,
           ratio_of("vs parasail", "labkit align (1 thread)", "parasail nw_scan_16")),
    Target("2 threads vs 1, 4096 × 200", 1.8, ratio_of("threads", "2 threads", "1 thread")),
]


def run_benchmark(size=None, repeat: int = 5):
    """`labkit bench alignment`: the steps on one 16×200 batch (``size`` overrides), the best kernel
    against parasail on 4096 × 200 pairs (1024 × 100 for "small", 10000 × 200 for "large"; single
    thread, transposition included; wall clock and CPU time) and 1 vs 2 threads → dict of BenchResult."""
    from labkit import bench

    steps_in = make_inputs(size or BENCHMARK["inputs"], seed=0)
    expected = reference(steps_in)
    steps = bench.compare(_seed_args(steps_in), baseline="scalar", repeat=repeat,
                          work=steps_in.pairs, unit="alignments",
                          validate=lambda r: validate(r, expected),
                          label=f"steps, {steps_in.pairs} pairs × {steps_in.seqs1.shape[1]} (1 thread)")
    out = {"steps": steps}

    npairs = {"small": 1024, "large": 10000}.get(size, 4096)
    big = make_inputs({"pairs": npairs, "length": 100 if size == "small" else 200}, seed=1)
    s1, s2 = big.seqs1, big.seqs2
    big_expected = None
    fns = {}
    par = _parasail_fn(big)
    if par is not None:
        fns["parasail nw_scan_16"] = par
        big_expected = par()
    fns["labkit align (1 thread)"] = lambda: align(s1, s2, big.scoring, threads=1)
    res = bench.compare(fns, (), repeat=repeat, work=big.pairs, unit="alignments",
                        validate=(lambda r: validate(r, big_expected)) if big_expected is not None else None,
                        label=f"vs parasail, {big.pairs} pairs × {s1.shape[1]}, single thread, "
                              f"transposition included")
    out["vs parasail"] = res
    out["vs parasail, CPU time"] = cpu_compare(
        fns, work=big.pairs, repeat=repeat,
        label="the same, process CPU seconds per call (robust to other jobs on the cores)")
    nthreads = min(2, numba.config.NUMBA_NUM_THREADS)
    if nthreads > 1:
        one = lambda: align(s1, s2, big.scoring, threads=1)            # noqa: E731
        many = lambda: align(s1, s2, big.scoring, threads=nthreads)    # noqa: E731
        out["threads"] = bench.compare(
            {"1 thread": one, f"{nthreads} threads": many}, (), repeat=repeat, work=big.pairs,
            unit="alignments", label=f"threads, {big.pairs} pairs × {s1.shape[1]} (wall clock: "
                                     f"needs idle cores to show the speedup)")
        out["threads, CPU time"] = cpu_compare(
            {"1 thread": one, f"{nthreads} threads": many}, work=big.pairs, repeat=repeat,
            label=f"CPU seconds of all threads: ratio = parallel efficiency; wall-clock speedup on "
                  f"idle cores ≈ {nthreads} × ratio")
    return out


def throughput(lanes: int = 64, threads: int = 1, pairs: int = 1024, length: int = 200,
               repeat: int = 3) -> dict:
    """Alignments/s of ``align`` for one lanes/threads setting (the notebook's tuner calls it)."""
    from labkit import bench

    inp = make_inputs({"pairs": int(pairs), "length": int(length)}, seed=2)
    t = bench.timeit(lambda: align(inp.seqs1, inp.seqs2, inp.scoring, lanes=int(lanes),
                                   threads=int(threads)), repeat=repeat, min_time=0.05)
    return {"throughput": inp.pairs / t.median_s, "µs per pair": t.median_s / inp.pairs * 1e6}


_LAZY = {"check_transpose": "checks", "check_transposed_inner": "checks", "_lanes_note": "checks"}


def __getattr__(name: str):
    """The exercise checks live in ``labkit.alignment.checks`` (imported on first use)."""
    if name in _LAZY:
        import importlib
        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
