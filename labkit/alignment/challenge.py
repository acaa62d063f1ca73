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
    "stores (section 8). Then read the IR (its found.conflict comparisons): LLVM checks before "
    "every row that the arrays the lane loop writes do not overlap; numba marks them noalias (no"
    " checks) for the arrays of a prange body that makes no view of them (parallel=True; one "
    "thread runs it here).",
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
#: int16 cells, four DP columns per sweep, shifted scores — with the lane loop's arrays
#: `noalias` the one way plain numba offers (a prange body that makes no view of them). Without
#: that it read 0.65–0.77 on a Zen 5 host, on the full tier's boundary; with it ≈ 0.89.
#: Pasted into the notebook's SOLUTION region; tests/test_challenges.py checks it earns the full
#: points.
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


@njit(inline="always")
def sweep4(w, j, rows, A, B, H, E, D0, D1, D2, D3, F0, F1, F2, F3):
    """Four columns j … j+3 over rows 1 … rows of worker w's tile; lane k = pair k."""
    for i in range(1, rows + 1):
        for k in range(LANES):
            a = A[w, i - 1, k]
            d = D0[w, k]
            D0[w, k] = H[w, i, k]
            left, F0[w, k], e = cell(d, F0[w, k], E[w, i, k], a, B[w, j, k])
            d = D1[w, k]
            D1[w, k] = left
            left, F1[w, k], e = cell(d, F1[w, k], e, a, B[w, j + 1, k])
            d = D2[w, k]
            D2[w, k] = left
            left, F2[w, k], e = cell(d, F2[w, k], e, a, B[w, j + 2, k])
            d = D3[w, k]
            D3[w, k] = left
            H[w, i, k], F3[w, k], E[w, i, k] = cell(d, F3[w, k], e, a, B[w, j + 3, k])


@njit(inline="always")
def sweep1(w, j, rows, A, B, H, E, D0, F0):
    """One column j (where some lane's second sequence ends inside a group of four)."""
    for i in range(1, rows + 1):
        for k in range(LANES):
            d = D0[w, k]
            D0[w, k] = H[w, i, k]
            H[w, i, k], F0[w, k], E[w, i, k] = cell(d, F0[w, k], E[w, i, k], A[w, i - 1, k],
                                                    B[w, j, k])


@njit
def codes(seqs):
    """All letters of seqs in one uint8 array, and where each sequence starts in it."""
    start = np.zeros(len(seqs) + 1, np.int64)
    for p in range(len(seqs)):
        start[p + 1] = start[p] + len(seqs[p])
    out = np.empty(start[-1], np.uint8)
    for p in range(len(seqs)):
        s = seqs[p]
        for i in range(len(s)):
            out[start[p] + i] = ord(s[i])
    return out, start


# parallel=True for one reason: LLVM cannot know that the ten rows the lane loop writes never
# overlap each other or the five it reads, so it checks every such pair before each row
# (`found.conflict` in the IR): 2.7× slower. numba tells it (marks the arrays `noalias`) for
# the arrays of a prange body that makes no view of them: every access element-wise, the sweeps
# inlined, a uint8 `ends` (a bool read counts as a view). The check runs one thread, so the
# prange runs serially.
@njit(parallel=True)
def align_challenge(seqs1, seqs2):
    """Scores of seqs1[p] x seqs2[p]: pairs sorted by length, 64 per tile, int16 lanes."""
    n = len(seqs1)
    c1, s1 = codes(seqs1)
    c2, s2 = codes(seqs2)
    len1 = s1[1:] - s1[:-1]
    len2 = s2[1:] - s2[:-1]
    order = np.argsort(len2 * 100_000 + len1)    # similar lengths share a tile
    scores = np.empty(n, np.int32)
    nt = (n + LANES - 1) // LANES                # tiles
    nw = min(nt, numba.get_num_threads())        # workers, each with its own scratch
    L1, L2 = max(1, len1.max()), max(1, len2.max())
    A = np.empty((nw, L1, LANES), np.uint8)      # a tile's letters, pair k down lane k
    B = np.empty((nw, L2, LANES), np.uint8)
    H = np.empty((nw, L1 + 1, LANES), np.int16)  # per row: Ĥ and Ê of the last column done
    E = np.empty((nw, L1 + 1, LANES), np.int16)
    D0 = np.empty((nw, LANES), np.int16)         # per column of a sweep: the diagonal …
    D1 = np.empty((nw, LANES), np.int16)
    D2 = np.empty((nw, LANES), np.int16)
    D3 = np.empty((nw, LANES), np.int16)
    F0 = np.empty((nw, LANES), np.int16)         # … and the vertical gap (separate arrays:
    F1 = np.empty((nw, LANES), np.int16)         # rows of one array would be views)
    F2 = np.empty((nw, LANES), np.int16)
    F3 = np.empty((nw, LANES), np.int16)
    la = np.empty((nw, LANES), np.int64)         # each lane's lengths
    lb = np.empty((nw, LANES), np.int64)
    ends = np.empty((nw, L2 + 1), np.uint8)      # 1: a column where some lane's pair ends
    for w in numba.prange(nw):
        for t in range(w, nt, nw):
            lo = t * LANES
            m = min(LANES, n - lo)
            rows = 1
            cols = 1
            for k in range(m):
                rows = max(rows, len1[order[lo + k]])
                cols = max(cols, len2[order[lo + k]])
            for k in range(LANES):                # padding lanes: read at the corner
                la[w, k] = rows
                lb[w, k] = cols
            for i in range(rows):
                for k in range(LANES):
                    A[w, i, k] = 0
            for i in range(cols):
                for k in range(LANES):
                    B[w, i, k] = 0
            for k in range(m):
                p = order[lo + k]
                la[w, k] = len1[p]
                lb[w, k] = len2[p]
                for i in range(len1[p]):
                    A[w, i, k] = c1[s1[p] + i]
                for i in range(len2[p]):
                    B[w, i, k] = c2[s2[p] + i]
            for j in range(cols + 1):
                ends[w, j] = 0
            for k in range(LANES):
                ends[w, lb[w, k]] = 1
            for i in range(rows + 1):
                for k in range(LANES):
                    H[w, i, k] = G                # Ĥ(i, 0) = GAP_OPEN - GAP_EXTEND
                    E[w, i, k] = 2 * G            # Ê(i, 1)
            j = 0
            while j < cols:
                for k in range(LANES):
                    D0[w, k] = 0 if j == 0 else G     # Ĥ(0, j + c)
                    D1[w, k] = G
                    D2[w, k] = G
                    D3[w, k] = G
                    F0[w, k] = 2 * G
                    F1[w, k] = 2 * G
                    F2[w, k] = 2 * G
                    F3[w, k] = 2 * G
                if j + 4 <= cols and ends[w, j + 1] + ends[w, j + 2] + ends[w, j + 3] == 0:
                    sweep4(w, j, rows, A, B, H, E, D0, D1, D2, D3, F0, F1, F2, F3)
                    j += 4
                else:
                    sweep1(w, j, rows, A, B, H, E, D0, F0)
                    j += 1
                if ends[w, j] != 0:
                    for k in range(m):
                        if lb[w, k] == j:
                            scores[order[lo + k]] = (np.int32(H[w, la[w, k], k])
                                                     + (la[w, k] + j) * GAP_EXTEND)
    return scores
'''

#: The imports the solution's cell needs (the notebook's earlier cells give them).
SOLUTION_IMPORTS = "import numpy as np\nimport numba\nfrom numba import njit\n"
