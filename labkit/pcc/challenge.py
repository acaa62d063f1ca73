"""Lab 03's open challenge, ``pcc_challenge``: every pair of variables with |r| ≥ t from the data
matrix X, graded on a scale between a slow starting point and ``labkit.pcc.correlated_pairs``
(:mod:`labkit.check.challenge`, docs/challenges.md).

The student's ``@njit`` function ``pcc_challenge(X, threshold)`` takes X (n variables × l
samples, float64) and a threshold in (0, 1] and returns ``(i, j, r)``: int64, int64 and float64
arrays of every pair i < j with |r(i, j)| ≥ threshold, in the order of (i, j); a constant row
has no r and is in no pair. The starting point (:func:`pcc_challenge`) is Eq. 1 for every pair,
means recomputed. labkit's kernel is ``correlated_pairs(X, threshold, threads=1)``: rows
standardised once, tiles of the upper triangle by id, a 6×4 register-blocked micro-kernel.
"""
from __future__ import annotations

import inspect

import numpy as np
from numba import njit

import labkit.jit  # noqa: F401 - numba's cache key holds labkit's sources (CONTRIBUTING)
from labkit import hints
from labkit.check import exercise
from labkit.check.challenge import Challenge, judge

from . import correlated_pairs, gflops, make_inputs, pcc_tiled, pcc_transformed, reference
from . import standardize as _standardize

__all__ = ["pcc_challenge", "CHALLENGE", "RULES", "SOLUTION", "start_source",
           "check_pcc_challenge", "BORDER"]

#: A pair whose reference |r| lies within this of the threshold may be in the answer or not
#: (two correct summation orders can put it on either side); every r is compared to it too.
BORDER = 1e-9

RULES = """\
**The task**: `pcc_challenge(X, threshold)` returns every pair of rows i < j of `X` (n
variables × l samples, float64, l ≥ 2) whose Pearson correlation has |r| ≥ `threshold` (a
float in (0, 1]), as three arrays `(i, j, r)` — int64, int64, float64 — in the order of
(i, j). A constant row has no r: it is in no pair. Pairs within 1e-9 of the threshold may be
in or out; every r is compared to 1e-9.

**Allowed**: your own numba code (`@njit`, helpers of your own in this cell, `fastmath`); numpy
inside it to allocate and glue (sorting the pairs, building the output arrays). Your function
must be `@njit` as a whole: the check times it as one call.

**Threads**: none — the check runs numba with one thread (the grader runs notebooks side by
side), and labkit's kernel is timed single-threaded too. A `prange` runs serially here.

**Not allowed**: labkit's functions and kernels (any of them — `correlated_pairs`,
`pearson_allpairs`, the lab's `pcc_*` and tile kernels), BLAS (`@`, `np.dot`, `np.corrcoef`) or
any library call that correlates for you. The check refuses them (`uses labkit's answer`).

**Grading**: first your pairs on hidden inputs (edge cases included) against an independent
reference; then your speed, timed in the same run beside this starting point (0 points) and
labkit's kernel (full points): ¼, ½, ¾ or all of the points by your position between them on a
log scale (docs/challenges.md)."""


# ---------------------------------------------------------------- the starting point
@njit(cache=True)
def pcc_challenge(X, threshold):
    """Every pair of rows i < j of X (n variables x l samples) whose Pearson correlation r has
    |r| >= threshold, as arrays (i, j, r) in the order of (i, j). Constant rows have no r."""
    n, l = X.shape
    pairs_i = []
    pairs_j = []
    pairs_r = []
    for i in range(n):
        for j in range(i + 1, n):
            mu = 0.0
            mv = 0.0
            for k in range(l):
                mu += X[i, k]
                mv += X[j, k]
            mu /= l
            mv /= l
            num = 0.0
            su = 0.0
            sv = 0.0
            for k in range(l):
                du = X[i, k] - mu
                dv = X[j, k] - mv
                num += du * dv
                su += du * du
                sv += dv * dv
            if su == 0.0 or sv == 0.0:          # a constant row: r is undefined
                continue
            r = num / np.sqrt(su * sv)
            if abs(r) >= threshold:
                pairs_i.append(i)
                pairs_j.append(j)
                pairs_r.append(r)
    return (np.array(pairs_i, dtype=np.int64), np.array(pairs_j, dtype=np.int64),
            np.array(pairs_r, dtype=np.float64))


def start_source() -> str:
    """The starting point as the student copy shows it (``@njit``, no cache)."""
    return inspect.getsource(pcc_challenge).replace("@njit(cache=True)", "@njit", 1)


# ---------------------------------------------------------------- labkit's side, the reference
def labkit_pairs(X, threshold):
    """labkit's kernel on the challenge's input: ``correlated_pairs`` on one thread."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)          # "constant row(s) in X"
        return correlated_pairs(X, threshold, threads=1)


def _result(args, returned):
    return returned, float(args[1])


def _reference(X, threshold):
    """The lab's independent reference: Eq. 1 in numpy (constant rows NaN), thresholded with
    the border band."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        R = reference(np.asarray(X, dtype=np.float64))
    n = R.shape[0]
    iu, ju = np.triu_indices(n, 1)
    r = R[iu, ju]
    keep = np.isfinite(r) & (np.abs(r) >= threshold - BORDER)
    return (iu[keep].astype(np.int64), ju[keep].astype(np.int64), r[keep]), float(threshold)


def _pairs(got) -> tuple | str:
    if not (isinstance(got, tuple) and len(got) == 3):
        return f"returned a {type(got).__name__}, expected the tuple (i, j, r) of three arrays"
    i, j, r = got
    for name, a, kind in (("i", i, "i"), ("j", j, "i"), ("r", r, "f")):
        if not isinstance(a, np.ndarray) or a.ndim != 1 or a.dtype.kind != kind:
            want = "int64" if kind == "i" else "float64"
            return (f"{name} is {type(a).__name__}"
                    f"{' ' + str(a.dtype) if isinstance(a, np.ndarray) else ''} of "
                    f"{getattr(a, 'ndim', '?')} dimension(s), expected a 1-D {want} array")
    if not (i.size == j.size == r.size):
        return f"i, j and r have {i.size}, {j.size} and {r.size} entries: one per pair each"
    return i.astype(np.int64), j.astype(np.int64), r.astype(np.float64)


def _compare(got, expected) -> str | None:
    """The student's pairs against the reference's (or labkit's): the same pairs, each pair
    within ``BORDER`` of the threshold optional, sorted by (i, j), r to ``BORDER``."""
    (got, t), (exp, _) = got, expected
    g = _pairs(got)
    if isinstance(g, str):
        return g
    e = _pairs(exp)
    if isinstance(e, str):           # labkit's or the reference's own form: a labkit bug
        return f"the check's own answer is malformed ({e}) — a labkit bug"
    gi, gj, gr = g
    ei, ej, er = e
    if gi.size and (np.any(gi >= gj) or np.any(gi < 0)):
        k = int(np.flatnonzero((gi >= gj) | (gi < 0))[0])
        return f"pair {k} is (i, j) = ({gi[k]}, {gj[k]}): every pair needs 0 ≤ i < j"
    key = gi * (1 << 32) + gj
    if key.size > 1 and np.any(np.diff(key) <= 0):
        k = int(np.flatnonzero(np.diff(key) <= 0)[0])
        return (f"pairs {k} and {k + 1} are ({gi[k]}, {gj[k]}) then ({gi[k + 1]}, {gj[k + 1]}): "
                "give each pair once, in the order of (i, j)")
    ekey = ei * (1 << 32) + ej
    ref = dict(zip(ekey.tolist(), er.tolist()))
    must = {k for k, v in ref.items() if abs(v) >= t + BORDER}
    have = dict(zip(key.tolist(), gr.tolist()))
    missing = sorted(must - set(have))
    if missing:
        k = missing[0]
        return (f"{len(missing)} pair(s) missing, the first ({k >> 32}, {k & 0xFFFFFFFF}) with "
                f"r = {ref[k]:.6f} (threshold {t:g})")
    extra = sorted(set(have) - set(ref))
    if extra:
        k = extra[0]
        return (f"{len(extra)} pair(s) too many, the first ({k >> 32}, {k & 0xFFFFFFFF}) with "
                f"your r = {have[k]:.6f} (threshold {t:g}; a constant row is in no pair)")
    for k, v in have.items():
        if not abs(v - ref[k]) <= BORDER:
            return (f"r of pair ({k >> 32}, {k & 0xFFFFFFFF}) is {v!r}, expected {ref[k]!r} "
                    f"(to {BORDER:g})")
    return None


def _full_matrix_step(kernel):
    """A lab step that computes the full matrix, then keeps the pairs at or above the threshold
    (numpy): its time beside the student's."""
    def run(X, threshold):
        if kernel == "tiled":
            Z, _ = _standardize(X)
            R = pcc_tiled(Z, 96)
        else:
            Z, _ = _standardize(X)
            R = pcc_transformed(Z)
        iu, ju = np.nonzero(np.triu(np.abs(R) >= threshold, 1))
        return iu, ju, R[iu, ju]
    return run


# ---------------------------------------------------------------- inputs
def _cases(g: np.random.Generator) -> list:
    X = make_inputs({"n": 61, "l": 23, "planted": 12}, seed=int(g.integers(1 << 31))).X
    X[4] = 0.25                                  # a constant row: in no pair
    X[9] = -X[2]                                 # r = -1
    X[17] = 3.0 * X[11] + 1.0                    # r = +1
    Y = make_inputs({"n": 130, "l": 300, "planted": 30}, seed=int(g.integers(1 << 31))).X
    two = g.random((2, 2))
    while two[0, 0] == two[0, 1] or two[1, 0] == two[1, 1]:
        two = g.random((2, 2))
    return [
        ("two variables of two samples", (two, 0.5)),
        ("61 variables (not a multiple of a block), a constant row, r = ±1, threshold 0.6",
         (X, 0.6)),
        ("the same data, threshold 1.0 (only |r| = 1, to rounding)", (X, 1.0)),
        ("130 variables, 300 samples, threshold 0.8", (Y, 0.8)),
        ("130 variables, a low threshold (0.15: many pairs)", (Y, 0.15)),
        ("one variable: no pair", (g.random((1, 8)), 0.5)),
    ]


#: The timing input: 1200 variables × 400 samples, planted pairs, threshold 0.8 (one labkit call
#: ≈ 15 ms on one core; ~0.6 GFLOP).
TIMING = {"n": 1200, "l": 400, "threshold": 0.8}


def _timing(g: np.random.Generator) -> tuple:
    X = make_inputs({"n": TIMING["n"], "l": TIMING["l"]}, seed=int(g.integers(1 << 31))).X
    return np.ascontiguousarray(X), TIMING["threshold"]


def _roof(seconds: float, args) -> tuple | None:
    """The student's GFLOP/s (2·l per pair of the upper triangle) as a share of one core's FMA
    roof."""
    from labkit.hardware import measure_fma_rate
    n, l = args[0].shape
    return gflops(n, l, seconds) / measure_fma_rate(repeat=3), "one core's FMA roof"


CHALLENGE = Challenge(
    name="pcc_challenge", start=pcc_challenge, labkit=labkit_pairs, timing_input=_timing,
    cases=_cases, reference=_reference, compare=_compare, result=_result,
    steps={"transformed (pcc_transformed)": _full_matrix_step("transformed"),
           "tiled (pcc_tiled)": _full_matrix_step("tiled")},
    roof=_roof, hot_dtype="double", library=r"xxgemm|xxgemv|xxdot|cblas_|dgemm|dsyrk|ddot",
    rules=RULES)


#: What `hints.next('pcc_challenge')` reveals, one tier at a time (a failing check names it).
hints.define(
    'pcc_challenge',
    "The starting point recomputes both rows' means and spreads for every pair and walks the "
    "samples in one chain: O(n² l) with several reductions per pair. Standardise every row once"
    " (section 2) and r(i, j) is the dot product of two unit rows — the pairs are the upper "
    "triangle of a matrix product, which tiles and a register block make fast (sections 4, 6).",
    "Z = each row centred and scaled to unit norm (a constant row flagged: in no pair); walk "
    "the upper triangle in tiles and compute a block of dot products at once inside a tile (4 ×"
    " 4: 8 row loads feed 16 accumulators), the loop over samples innermost so the sums "
    "vectorise (fastmath lets LLVM reorder them); keep the pairs with |r| ≥ t in growing arrays"
    " and order them by (i, j) at the end (section 9).",
    "for i0 in range(0, n, 4): for j0 in range(i0, n, 4): s00 = s01 = … = s33 = 0.0; for k in "
    "range(l): a0 = Z[i0, k]; …; b0 = Z[j0, k]; …; s00 += a0 * b0; …; then for each (i, j) of "
    "the block with i < j, both rows not constant and abs(s) >= threshold: append (i, j, s).",
)


@exercise("pcc_challenge", points=4,
          answers=("labkit.pcc:correlated_pairs", "labkit.pcc:pearson_allpairs",
                   "labkit.pcc.engine:tiles_to_buffer", "labkit.pcc.engine:extract_pairs"))
def check_pcc_challenge(student):
    """Every pair with |r| ≥ t from X, as fast as you can: graded on a scale from the starting
    point (0) to labkit's ``correlated_pairs`` (full points)."""
    return judge(student, CHALLENGE)


#: A reference solution in the student's own style (no labkit): the lab's transformation (rows
#: standardised once: every r a dot product) and its 4×4 register block over the upper
#: triangle, fastmath for the vector sums. Pasted into the notebook's SOLUTION region;
#: tests/test_challenges.py checks it earns the full points.
SOLUTION = '''\
B = 4           # the register block: 4 x 4 dot products at once, 16 accumulators


@njit(fastmath=True)
def standardize(X):
    """Rows centred and scaled to unit norm (Eq. 4), padded with zero rows to a multiple of B:
    then r(i, j) = <Z_i, Z_j>. A constant row stays zero (it correlates with nothing)."""
    n, l = X.shape
    Z = np.zeros(((n + B - 1) // B * B, l))
    for i in range(n):
        mu = 0.0
        for k in range(l):
            mu += X[i, k]
        mu /= l
        ss = 0.0
        for k in range(l):
            d = X[i, k] - mu
            Z[i, k] = d
            ss += d * d
        if ss > 0.0:
            inv = 1.0 / np.sqrt(ss)
            for k in range(l):
                Z[i, k] *= inv
        else:
            Z[i, :] = 0.0
    return Z


@njit(fastmath=True)
def block(Z, i, j, S):
    """S[a, b] = <Z_{i+a}, Z_{j+b}> for a, b < 4: 16 dot products in one pass over k."""
    l = Z.shape[1]
    a0, a1, a2, a3 = Z[i], Z[i + 1], Z[i + 2], Z[i + 3]
    b0, b1, b2, b3 = Z[j], Z[j + 1], Z[j + 2], Z[j + 3]
    s00 = s01 = s02 = s03 = 0.0
    s10 = s11 = s12 = s13 = 0.0
    s20 = s21 = s22 = s23 = 0.0
    s30 = s31 = s32 = s33 = 0.0
    for k in range(l):
        x0, x1, x2, x3 = a0[k], a1[k], a2[k], a3[k]
        y0, y1, y2, y3 = b0[k], b1[k], b2[k], b3[k]
        s00 += x0 * y0
        s01 += x0 * y1
        s02 += x0 * y2
        s03 += x0 * y3
        s10 += x1 * y0
        s11 += x1 * y1
        s12 += x1 * y2
        s13 += x1 * y3
        s20 += x2 * y0
        s21 += x2 * y1
        s22 += x2 * y2
        s23 += x2 * y3
        s30 += x3 * y0
        s31 += x3 * y1
        s32 += x3 * y2
        s33 += x3 * y3
    S[0, 0], S[0, 1], S[0, 2], S[0, 3] = s00, s01, s02, s03
    S[1, 0], S[1, 1], S[1, 2], S[1, 3] = s10, s11, s12, s13
    S[2, 0], S[2, 1], S[2, 2], S[2, 3] = s20, s21, s22, s23
    S[3, 0], S[3, 1], S[3, 2], S[3, 3] = s30, s31, s32, s33


@njit
def pcc_challenge(X, threshold):
    """Standardise once, then every 4 x 4 block of the upper triangle as 16 dot products; keep
    the pairs at or above the threshold, sorted by (i, j) at the end."""
    n = X.shape[0]
    Z = standardize(X)
    S = np.empty((B, B))
    found_i = []
    found_j = []
    found_r = []
    for i in range(0, n, B):
        for j in range(i, n, B):
            block(Z, i, j, S)
            for a in range(B):
                for b in range(B):
                    r = min(1.0, max(-1.0, S[a, b]))
                    if abs(r) >= threshold and i + a < j + b < n:
                        found_i.append(i + a)
                        found_j.append(j + b)
                        found_r.append(r)
    I = np.array(found_i, dtype=np.int64)
    J = np.array(found_j, dtype=np.int64)
    R = np.array(found_r, dtype=np.float64)
    order = np.argsort(I * n + J)
    return I[order], J[order], R[order]
'''

#: The imports the solution's cell needs (the notebook's earlier cells give them).
SOLUTION_IMPORTS = "import numpy as np\nfrom numba import njit\n"
