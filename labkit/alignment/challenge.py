"""Lab 01's open challenge, ``align_challenge``: the Gotoh scores of a batch of unequal-length
``str`` pairs, graded on a scale between a slow starting point and ``labkit.alignment.align``
(:mod:`labkit.check.challenge`, docs/challenges.md).

The student's ``@njit`` function takes two lists of str (letters ``ACGTN``, upper case, 1 …
2000 of them; pair p is ``seqs1[p]`` × ``seqs2[p]``) and returns the int32 scores with the
seed's scoring (match 6, mismatch −4, a gap of length k costs −11 − (k − 1)). The starting
point (:func:`align_challenge`, its source in the student copy) aligns one pair at a time in
int64. labkit's kernel is ``align``'s path from str on one thread with its int16 tiles
(:func:`labkit_align`): letters to tiles of 64 pairs sorted by length, int16 lanes across pairs,
four DP columns per sweep, shifted scores — the lab's technique done by labkit. ``align`` itself
runs int8 differences where the scoring allows (``_int8``; faster than the int16 tiles on
``labkit bench``'s equal pairs, less so on this challenge's ragged pairs from str): beyond the
lab, and with it as the anchor the reference solution (the lab's technique, in plain numba) sat
on the full tier's boundary, so a busy run cost it a tier.
"""
from __future__ import annotations

import inspect

import numpy as np
from numba import njit

import labkit.jit  # noqa: F401 - numba's cache key holds labkit's sources (CONTRIBUTING)
from labkit import hints
from labkit.check import exercise
from labkit.check.challenge import Challenge, judge

from . import ALPHABET, Inputs, Scoring, align, encode, reference
from .engine import TILE, _align_letters
from .kernels import align_batched_serial

__all__ = ["align_challenge", "CHALLENGE", "RULES", "SOLUTION", "start_source",
           "check_align_challenge", "MAX_LENGTH"]

#: The longest sequence of the hidden inputs: int16 DP cells hold every score up to it.
MAX_LENGTH = 2000

RULES = """\
**The task**: `align_challenge(seqs1, seqs2)` returns the global alignment scores (Gotoh,
affine gaps, the seed's scoring: match 6, mismatch −4, a gap of length k costs −11 − (k − 1))
of the pairs `seqs1[p]` × `seqs2[p]`, as an int32 array. Both arguments are lists of `str` of
the letters ACGTN (upper case), 1 … 2000 letters each; lengths differ from pair to pair.

**Allowed**: your own numba code (`@njit`, helpers of your own in this cell); numpy inside it to
allocate and glue (sorting, copies). Your function must be `@njit` as a whole: the check times it
as one call.

**Threads**: none — the check runs numba with one thread (the grader runs notebooks side by
side), and labkit's kernel is timed single-threaded too. A `prange` runs serially here.

**Not allowed**: labkit's functions and kernels (any of them — `labkit.alignment.align`, the
lab's step kernels), parasail, Opal or any library call that aligns for you. The check refuses
them (`uses labkit's answer`).

**Grading**: first your scores on hidden batches (edge cases included) against an independent
reference; then your speed, timed in the same run beside this starting point (0 points) and
labkit's kernel (full points): ¼, ½, ¾ or all of the points by your position between them on a
log scale (docs/challenges.md)."""


# ---------------------------------------------------------------- the starting point
@njit(cache=True)
def align_challenge(seqs1, seqs2):
    """Global alignment scores with affine gaps (Gotoh) of seqs1[p] x seqs2[p], one pair at a
    time: match 6, mismatch -4, a gap of length k costs -11 - (k - 1)."""
    match, mismatch, gap_open, gap_extend = 6, -4, -11, -1
    n = len(seqs1)
    scores = np.empty(n, np.int32)
    for p in range(n):
        la, lb = len(seqs1[p]), len(seqs2[p])
        a = np.empty(la, np.uint8)       # the letters as numbers: comparing two str is slow
        b = np.empty(lb, np.uint8)
        for i in range(la):
            a[i] = ord(seqs1[p][i])
        for i in range(lb):
            b[i] = ord(seqs2[p][i])
        H = np.empty(la + 1, np.int64)   # column j of the DP matrix (best score ending at i, j)
        E = np.empty(la + 1, np.int64)   # best score ending with a gap along b
        H[0] = 0
        for i in range(1, la + 1):
            H[i] = gap_open + (i - 1) * gap_extend
            E[i] = H[i] + gap_open
        for j in range(1, lb + 1):
            diag = H[0]
            H[0] = gap_open + (j - 1) * gap_extend
            F = H[0] + gap_open          # best score ending with a gap along a
            for i in range(1, la + 1):
                E[i] = max(E[i] + gap_extend, H[i] + gap_open)
                F = max(F + gap_extend, H[i - 1] + gap_open)
                s = match if a[i - 1] == b[j - 1] else mismatch
                best = max(diag + s, E[i], F)
                diag = H[i]
                H[i] = best
        scores[p] = H[la]
    return scores


def start_source() -> str:
    """The starting point as the student copy shows it (``@njit``, no cache)."""
    src = inspect.getsource(align_challenge)
    return src.replace("@njit(cache=True)", "@njit", 1)


# ---------------------------------------------------------------- labkit's side
def labkit_align(seqs1, seqs2):
    """labkit's kernel on the challenge's input: ``align``'s str path on one thread with the
    shifted int16 tiles (its int8 kernel off); ``align`` itself where that path declines."""
    out = _align_letters(seqs1, seqs2, Scoring(), TILE, 1, "auto", int8=False)
    return align(seqs1, seqs2, threads=1) if out is None else out


def _codes(seqs) -> tuple[np.ndarray, np.ndarray]:
    lens = np.array([len(s) for s in seqs], np.int64)
    codes = np.zeros((len(seqs), max(1, int(lens.max()))), np.uint8)
    for p, s in enumerate(seqs):
        codes[p, :len(s)] = encode(s)
    return codes, lens


def _reference(seqs1, seqs2) -> np.ndarray:
    """The lab's independent reference (plain numpy Gotoh, one pair at a time)."""
    c1, l1 = _codes(seqs1)
    c2, l2 = _codes(seqs2)
    return reference(Inputs(c1, c2, l1, l2, Scoring()))


def _batched_step(seqs1, seqs2):
    """Lab §8's ``align_batched`` (plain numba: int16 lanes across pairs in batches of 64, four
    columns per sweep, pairs in their given order) on the letters turned into codes."""
    c1, l1 = _codes(seqs1)
    c2, l2 = _codes(seqs2)
    return align_batched_serial(c1, l1, c2, l2, Scoring(), 64)


def _compare(got, expected) -> str | None:
    from labkit._common import mismatch
    if not isinstance(got, np.ndarray):
        return f"returned a {type(got).__name__}, expected a numpy array of int32 scores"
    if got.shape != np.shape(expected):
        return f"returned shape {got.shape}, expected {np.shape(expected)} (one score per pair)"
    return mismatch(got.astype(np.int64), np.asarray(expected, np.int64), name="score")


# ---------------------------------------------------------------- inputs
def _letters(g: np.random.Generator, n: int, alphabet: str = ALPHABET) -> str:
    idx = g.integers(0, len(alphabet), n)
    return "".join(alphabet[int(i)] for i in idx)


def _batch(g, pairs: int, lo: int, hi: int) -> tuple[list, list]:
    l1 = g.integers(lo, hi + 1, pairs)
    l2 = g.integers(lo, hi + 1, pairs)
    return ([_letters(g, int(k)) for k in l1], [_letters(g, int(k)) for k in l2])


def _cases(g: np.random.Generator) -> list:
    s = _letters(g, 150)
    near = list(s)
    for i in g.choice(150, 12, replace=False):          # a few substitutions
        near[int(i)] = ALPHABET[(ALPHABET.index(near[int(i)]) + 1) % 5]
    longest = _letters(g, MAX_LENGTH)
    cases = [
        ("one pair of one letter each", (["A"], ["N"])),
        ("one letter against 300", ([_letters(g, 1)], [_letters(g, 300)])),
        ("a random batch of 37 pairs (not a multiple of the lanes), lengths 1–120",
         _batch(g, 37, 1, 120)),
        ("identical and nearly identical pairs", ([s, s, "".join(near), "N" * 40],
                                                  [s, "".join(near), s, "N" * 40])),
        ("a batch of 70 pairs of equal lengths 64 × 96", _batch(g, 70, 64, 64)[:1]
         + _batch(g, 70, 96, 96)[1:]),
        (f"lengths spread 1–{MAX_LENGTH} in one batch of 24 pairs", _batch(g, 24, 1, MAX_LENGTH)),
        (f"the longest pairs: {MAX_LENGTH} letters (the largest scores int16 must hold)",
         ([longest, longest, "A" * MAX_LENGTH, _letters(g, 5)],
          [longest, _letters(g, MAX_LENGTH), "C" * MAX_LENGTH, _letters(g, MAX_LENGTH)])),
    ]
    return cases


#: The timing input: 160 pairs of 300–1600 letters (one labkit call ≈ 10–20 ms on one core).
TIMING = {"pairs": 160, "min_length": 300, "max_length": 1600}


def _timing(g: np.random.Generator) -> tuple:
    return _batch(g, TIMING["pairs"], TIMING["min_length"], TIMING["max_length"])


def _roof(seconds: float, args) -> tuple | None:
    """The student's DP cells per second as a share of the int16 ALU roof (lab §7)."""
    from .bench import OPS_PER_CELL, int16_op_rate
    cells = sum(len(a) * len(b) for a, b in zip(*args))
    rate = int16_op_rate(repeat=3) / OPS_PER_CELL
    return cells / seconds / rate, "the int16 ALU roof"


CHALLENGE = Challenge(
    name="align_challenge", start=align_challenge, labkit=labkit_align, timing_input=_timing,
    cases=_cases, reference=_reference, compare=_compare,
    steps={"align_batched": _batched_step}, roof=_roof, hot_dtype="i16", rules=RULES)


#: What `hints.next('align_challenge')` reveals, one tier at a time (a failing check names it).
hints.define(
    'align_challenge',
    "The starting point aligns one pair at a time: every DP cell waits for its left, upper and "
    "diagonal neighbours, so its inner loop is one chain the compiler cannot vectorise, and its"
    " int64 cells would fill only 8 lanes of a 512-bit register anyway. The independent work "
    "lies across pairs (sections 4–5), and every score of these lengths fits int16 (section 6).",
    "Sort the pairs by length so the pairs of one group are alike; per group of 64 pairs copy "
    "the letters into (length, 64) arrays — one pair per lane, zero-padded — and run the DP "
    "with the loop over the 64 lanes innermost, every value and constant np.int16; read each "
    "pair's score at its own (len1, len2) cell. Several DP columns per sweep save loads and "
    "stores (section 8).",
    "for t in range(0, n, 64): A = np.zeros((L1, 64), np.uint8); B = np.zeros((L2, 64), "
    "np.uint8) (pair k's letters down column k); for j in range(L2): for i in range(1, L1 + 1):"
    " for k in range(64): e = max(E[i, k] + ge, H[i, k] + go); f = max(F[k] + ge, H[i - 1, k] +"
    " go) … all int16; out[k] = H[len1[k], k] once j + 1 == len2[k].",
)


@exercise("align_challenge", points=4,
          answers=("labkit.alignment:align", "labkit.alignment.engine:align_shifted_serial",
                   "labkit.alignment.kernels:align_batched_serial"))
def check_align_challenge(student):
    """Scores of a batch of unequal-length str pairs, as fast as you can: graded on a scale from
    the starting point (0) to labkit's ``align`` (full points)."""
    return judge(student, CHALLENGE)


#: A reference solution in the student's own style (no labkit): the lab's technique — pairs
#: sorted by length into tiles of 64, the letters transposed so the lanes run across pairs,
#: int16 cells, four DP columns per sweep, shifted scores. Pasted into the notebook's SOLUTION
#: region; tests/test_challenges.py checks it earns the full points.
SOLUTION = '''\
MATCH, MISMATCH, GAP_OPEN, GAP_EXTEND = 6, -4, -11, -1
LANES = 64          # pairs per tile: two 512-bit registers of int16 lanes
# Shifted scores: Ĥ(i, j) = H(i, j) - (i + j)·GAP_EXTEND. Extending a gap then costs 0 and a
# cell needs 8 int16 operations instead of 10; the scores grow by at most 4000 for sequences
# of 2000 letters, which int16 still holds.
G = GAP_OPEN - GAP_EXTEND
MT = MATCH - 2 * GAP_EXTEND
MM = MISMATCH - 2 * GAP_EXTEND


@njit(inline="always")
def cell(d, f, e, a, b):
    """One shifted DP cell in int16: diagonal d, vertical gap f, horizontal gap e
    -> (Ĥ, f', e')."""
    h = np.int16(d + (np.int16(MT) if a == b else np.int16(MM)))
    h = h if h > f else f
    h = h if h > e else e
    o = np.int16(h + np.int16(G))
    return h, (f if f > o else o), (e if e > o else o)


@njit
def sweep4(A, b0, b1, b2, b3, H, E, D0, D1, D2, D3, F0, F1, F2, F3):
    """Four columns over every row of the tile; lane k = pair k of the tile."""
    for i in range(1, A.shape[0] + 1):
        a, h, e_ = A[i - 1], H[i], E[i]
        for k in range(LANES):
            d = D0[k]
            D0[k] = h[k]
            left, F0[k], e = cell(d, F0[k], e_[k], a[k], b0[k])
            d = D1[k]
            D1[k] = left
            left, F1[k], e = cell(d, F1[k], e, a[k], b1[k])
            d = D2[k]
            D2[k] = left
            left, F2[k], e = cell(d, F2[k], e, a[k], b2[k])
            d = D3[k]
            D3[k] = left
            h[k], F3[k], e_[k] = cell(d, F3[k], e, a[k], b3[k])


@njit
def sweep1(A, b0, H, E, D0, F0):
    """One column over every row (where some lane's second sequence ends)."""
    for i in range(1, A.shape[0] + 1):
        a, h, e_ = A[i - 1], H[i], E[i]
        for k in range(LANES):
            d = D0[k]
            D0[k] = h[k]
            h[k], F0[k], e_[k] = cell(d, F0[k], e_[k], a[k], b0[k])


@njit
def align_tile(A, B, la, lb, out):
    """A (L1 x LANES), B (L2 x LANES): the letters of 64 pairs, one pair per lane;
    out[k] = the score of lane k, read at its own cell (la[k], lb[k])."""
    L1, L2 = A.shape[0], B.shape[0]
    H = np.full((L1 + 1, LANES), np.int16(G))         # Ĥ(i, 0) = GAP_OPEN - GAP_EXTEND
    E = np.full((L1 + 1, LANES), np.int16(2 * G))     # Ê(i, 1)
    S = np.empty((8, LANES), np.int16)                # per column of a sweep: diagonal, gap
    ends = np.zeros(L2 + 1, np.bool_)
    for k in range(LANES):
        ends[lb[k]] = True
    j = 0
    while j < L2:
        S[:4] = np.int16(G)                           # Ĥ(0, j + c)
        if j == 0:
            S[0] = 0
        S[4:] = np.int16(2 * G)
        if j + 4 <= L2 and not (ends[j + 1] or ends[j + 2] or ends[j + 3]):
            sweep4(A, B[j], B[j + 1], B[j + 2], B[j + 3], H, E, S[0], S[1], S[2], S[3],
                   S[4], S[5], S[6], S[7])
            j += 4
        else:
            sweep1(A, B[j], H, E, S[0], S[4])
            j += 1
        if ends[j]:
            for k in range(LANES):
                if lb[k] == j:
                    out[k] = np.int32(H[la[k], k]) + (la[k] + j) * GAP_EXTEND


@njit
def align_challenge(seqs1, seqs2):
    """Scores of seqs1[p] x seqs2[p]: pairs sorted by length, 64 per tile, int16 lanes."""
    n = len(seqs1)
    len1 = np.empty(n, np.int64)
    len2 = np.empty(n, np.int64)
    for p in range(n):
        len1[p] = len(seqs1[p])
        len2[p] = len(seqs2[p])
    order = np.argsort(len2 * 100_000 + len1)    # similar lengths share a tile
    scores = np.empty(n, np.int32)
    res = np.empty(LANES, np.int32)
    for t in range(0, n, LANES):
        m = min(LANES, n - t)
        L1 = 1
        L2 = 1
        for k in range(m):
            L1 = max(L1, len1[order[t + k]])
            L2 = max(L2, len2[order[t + k]])
        A = np.zeros((L1, LANES), np.uint8)
        B = np.zeros((L2, LANES), np.uint8)
        la = np.full(LANES, L1, np.int64)           # padding lanes: read at the corner
        lb = np.full(LANES, L2, np.int64)
        for k in range(m):
            p = order[t + k]
            a, b = seqs1[p], seqs2[p]
            la[k], lb[k] = len(a), len(b)
            for i in range(len(a)):
                A[i, k] = ord(a[i])
            for i in range(len(b)):
                B[i, k] = ord(b[i])
        align_tile(A, B, la, lb, res)
        for k in range(m):
            scores[order[t + k]] = res[k]
    return scores
'''

#: The imports the solution's cell needs (the notebook's earlier cells give them).
SOLUTION_IMPORTS = "import numpy as np\nfrom numba import njit\n"
