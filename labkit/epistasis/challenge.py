"""Lab 04's open challenge, ``epistasis_challenge``: the top-k order-3 interactions from genotypes
and labels, graded on a scale between a slow starting point and ``labkit.epistasis.search``
(:mod:`labkit.check.challenge`, docs/challenges.md).

The student's ``@njit`` function ``epistasis_challenge(genotypes, labels, top)`` takes genotypes
(individuals × SNPs, int8 0/1/2), labels (int8, 0 control / 1 case, both present) and ``top`` and
returns ``(snps, mi)``: the ``min(top, C(n, 3))`` SNP triples a < b < c with the largest mutual
information between their genotype combination and the label, as an int64 array (k, 3) and
their MI in nats (float64, k), MI descending. The starting point (:func:`epistasis_challenge`)
counts every triple's contingency table individual by individual. labkit's kernel is
``search(genotypes, labels, 3, top, threads=1)``: bit-packed genotypes, prefix tables reused
depth-first, popcounts of 8 partner SNPs per vector, the MI from an n·ln n table.
"""
from __future__ import annotations

import inspect

import numpy as np
from numba import njit

import labkit.jit  # noqa: F401 - numba's cache key holds labkit's sources (CONTRIBUTING)
from labkit import hints
from labkit.check import exercise
from labkit.check.challenge import Challenge, judge

from . import make_inputs, reference_mi, reference_search, search

__all__ = ["epistasis_challenge", "CHALLENGE", "RULES", "SOLUTION", "start_source",
           "check_epistasis_challenge", "MI_TOL"]

#: Two MIs closer than this are equal: a tie may be ranked either way, every MI is compared
#: to it.
MI_TOL = 1e-9

RULES = """\
**The task**: `epistasis_challenge(genotypes, labels, top)` returns the `min(top, C(n, 3))` SNP
triples a < b < c with the largest mutual information (plug-in, in nats: H(X) + H(Y) − H(X, Y)
between the triple's 27-cell genotype combination X and the label Y) as `(snps, mi)`: an int64
array (k, 3) and a float64 array (k,), MI descending. `genotypes`: individuals × SNPs, int8 0/1/2;
`labels`: int8, 0 control / 1 case, both present. MIs within 1e-9 are ties: either order.

**Allowed**: your own numba code (`@njit`, helpers of your own in this cell); numpy inside it to
allocate and glue (packing bits, sorting). Your function must be `@njit` as a whole: the check
times it as one call.

**Threads**: none — the check runs numba with one thread (the grader runs notebooks side by
side), and labkit's kernel is timed single-threaded too. A `prange` runs serially here.

**Not allowed**: labkit's functions and kernels (any of them — `labkit.epistasis.search`,
`encode`, the lab's popcount, contingency and MI kernels) or any library call that searches for
you. The check refuses them (`uses labkit's answer`).

**Grading**: first your top list on hidden inputs (edge cases included) against an independent
reference; then your speed, timed in the same run beside this starting point (0 points) and
labkit's kernel (full points): ¼, ½, ¾ or all of the points by your position between them on a
log scale (docs/challenges.md)."""


# ---------------------------------------------------------------- the starting point
@njit(cache=True)
def epistasis_challenge(genotypes, labels, top):
    """The top SNP triples (a < b < c) by mutual information between their genotype combination
    and the label: genotypes (individuals x SNPs, 0/1/2), labels (0 control, 1 case). Returns
    snps (k, 3) and mi (k,) in nats for k = min(top, triples), MI descending."""
    m, n = genotypes.shape
    best_snps = np.zeros((top, 3), np.int64)
    best_mi = np.full(top, -1.0)
    counts = np.zeros((2, 27))
    for a in range(n):
        for b in range(a + 1, n):
            for c in range(b + 1, n):
                counts[:, :] = 0.0
                for i in range(m):
                    cell = genotypes[i, a] * 9 + genotypes[i, b] * 3 + genotypes[i, c]
                    counts[labels[i], cell] += 1.0
                # MI = H(X) + H(Y) - H(X, Y), plug-in estimates; empty cells contribute 0
                mi = 0.0
                for y in range(2):
                    py = counts[y, :].sum() / m
                    if py > 0:
                        mi -= py * np.log(py)
                for x in range(27):
                    px = (counts[0, x] + counts[1, x]) / m
                    if px > 0:
                        mi -= px * np.log(px)
                    for y in range(2):
                        pxy = counts[y, x] / m
                        if pxy > 0:
                            mi += pxy * np.log(pxy)
                # keep the top list sorted: insert if better than its last entry
                if mi > best_mi[top - 1]:
                    k = top - 1
                    while k > 0 and mi > best_mi[k - 1]:
                        best_mi[k] = best_mi[k - 1]
                        best_snps[k] = best_snps[k - 1]
                        k -= 1
                    best_mi[k] = mi
                    best_snps[k, 0], best_snps[k, 1], best_snps[k, 2] = a, b, c
    found = min(top, n * (n - 1) * (n - 2) // 6)
    return best_snps[:found].copy(), best_mi[:found].copy()


def start_source() -> str:
    """The starting point as the student copy shows it (``@njit``, no cache)."""
    return inspect.getsource(epistasis_challenge).replace("@njit(cache=True)", "@njit", 1)


# ---------------------------------------------------------------- labkit's side, the reference
def labkit_search(genotypes, labels, top):
    """labkit's kernel on the challenge's input: ``search`` at order 3 on one thread, its top
    list as the student returns it (``snps``, ``mi`` arrays)."""
    found = search(genotypes, labels, 3, int(top), threads=1, progress=False)
    snps = np.array([s for s, _ in found], np.int64).reshape(-1, 3)
    return snps, np.array([mi for _, mi in found], np.float64)


def _result(args, returned):
    return returned, args[0], args[1]


def _reference(genotypes, labels, top):
    return reference_search(genotypes, labels, 3, int(top))


def _compare(got, expected) -> str | None:
    """The student's top list against the reference's (or labkit's): the same MIs rank by rank
    (to :data:`MI_TOL`), the same triples — where one differs, a tie: its own MI, recomputed
    from the data, equals the rank's."""
    ret, genotypes, labels = got
    if isinstance(expected, tuple):              # labkit's kernel's answer, as the student's
        snps_e, mi_e = expected[0]
        expected = list(zip(snps_e.tolist(), mi_e.tolist()))
    exp = [(tuple(int(v) for v in s), float(mi)) for s, mi in expected]
    if not (isinstance(ret, tuple) and len(ret) == 2):
        return f"returned a {type(ret).__name__}, expected the tuple (snps, mi)"
    snps, mi = ret
    if not (isinstance(snps, np.ndarray) and snps.ndim == 2 and snps.dtype.kind in "iu"
            and snps.shape[1:] == (3,)):
        return (f"snps is {type(snps).__name__} {getattr(snps, 'dtype', '')} of shape "
                f"{getattr(snps, 'shape', '?')}, expected an int64 array (k, 3)")
    if not (isinstance(mi, np.ndarray) and mi.ndim == 1 and mi.dtype.kind == "f"):
        return f"mi is {type(mi).__name__}, expected a float64 array (k,)"
    if snps.shape[0] != len(exp) or mi.shape[0] != len(exp):
        return (f"{snps.shape[0]} triples and {mi.shape[0]} MIs returned, expected "
                f"{len(exp)} (min(top, number of triples))")
    n = genotypes.shape[1]
    seen = set()
    for r in range(len(exp)):
        t = tuple(int(v) for v in snps[r])
        if not (0 <= t[0] < t[1] < t[2] < n):
            return f"rank {r}: SNPs {t} — each triple needs 0 ≤ a < b < c < {n}"
        if t in seen:
            return f"rank {r}: SNPs {t} appear twice"
        seen.add(t)
        want_t, want_mi = exp[r]
        if not abs(float(mi[r]) - want_mi) <= MI_TOL:
            return (f"rank {r}: MI {float(mi[r]):.12g} (SNPs {t}), expected {want_mi:.12g} "
                    f"(SNPs {want_t})")
        if t != want_t:                          # a tie ranked the other way, or a wrong triple
            true = reference_mi(genotypes, labels, t)
            if not abs(true - want_mi) <= MI_TOL:
                return (f"rank {r}: SNPs {t} with MI {float(mi[r]):.12g}, but their MI is "
                        f"{true:.12g}; expected SNPs {want_t}")
    return None


# ---------------------------------------------------------------- inputs
def _data(g, snps: int, individuals: int, **kw) -> tuple:
    inp = make_inputs(dict(snps=snps, individuals=individuals, **kw),
                      seed=int(g.integers(1 << 31)))
    return np.ascontiguousarray(inp.genotypes), np.ascontiguousarray(inp.labels)


def _cases(g: np.random.Generator) -> list:
    gp, yp = _data(g, 24, 301, planted=(3, 11, 19), penetrance=0.9)
    gd, yd = _data(g, 14, 130)
    gd[:, 7] = gd[:, 2]                   # two identical SNPs: their triples tie exactly
    gd[:, 9] = 0                          # a SNP with one genotype only
    g5, y5 = _data(g, 5, 70)
    y1 = y5.copy()
    y1[:] = 0
    y1[3] = 1                             # a single case
    return [
        ("three SNPs: one triple", (*_data(g, 3, 50), 10)),
        ("four SNPs, top 10: all four triples", (*_data(g, 4, 64), 10)),
        ("24 SNPs, 301 individuals (not a multiple of 64), a planted 3-SNP interaction, top 10",
         (gp, yp, 10)),
        ("identical SNPs (exact ties) and a constant SNP, top 25", (gd, yd, 25)),
        ("a single case among 70 individuals, top 3", (g5, y1, 3)),
        ("40 SNPs, 1000 individuals, top 1", (*_data(g, 40, 1000), 1)),
    ]


#: The timing input: 100 SNPs × 2000 individuals (C(100, 3) = 161 700 triples), top 10 (one
#: labkit call ≈ 8 ms on one core).
TIMING = {"snps": 100, "individuals": 2000, "top": 10}


def _timing(g: np.random.Generator) -> tuple:
    return (*_data(g, TIMING["snps"], TIMING["individuals"]), TIMING["top"])


CHALLENGE = Challenge(
    name="epistasis_challenge", start=epistasis_challenge, labkit=labkit_search,
    timing_input=_timing, cases=_cases, reference=_reference, compare=_compare,
    result=_result,
    roof=None, hot_dtype="i64", rules=RULES)


#: What `hints.next('epistasis_challenge')` reveals, one tier at a time (a failing check names it).
hints.define(
    'epistasis_challenge',
    "The starting point counts every triple's table individual by individual: C(n, 3) × m "
    "scalar steps. A count is a population count on bits (sections 2–4): one bit row per SNP, "
    "genotype and class, and a cell's count is popcount(a & b & c) over 64 individuals per "
    "word.",
    "Pack the genotypes once into bit rows (SNP, genotype 0/1, class) × words — genotype 2 is "
    "the rest; for each pair (a, b) AND its 9 row combinations once (the prefix table, section "
    "6) and reuse it for every c > b: two popcounts per row and the third genotype by "
    "subtraction; the MI from the counts with a precomputed c·ln c table (section 5); keep the "
    "top k in a small sorted buffer.",
    "bits[s, g, w] |= 1 << (k % 64) for individual k of a class; for a: for b > a: ab[3 ga + "
    "gb, w] = rows[a][ga][w] & rows[b][gb][w]; for c > b: c0 = sum(popcount(ab[r, w] & bits[c, "
    "0, w])), c1 = …, c2 = n_ab[r] - c0 - c1; popcount(x) as the SWAR count (x - ((x >> 1) & "
    "0x5555…) …), which LLVM turns into the instruction.",
)


@exercise("epistasis_challenge", points=4,
          answers=("labkit.epistasis:search", "labkit.epistasis:encode",
                   "labkit.epistasis.engine:_search_kernel"))
def check_epistasis_challenge(student):
    """The top-k order-3 interactions from genotypes and labels, as fast as you can: graded on a
    scale from the starting point (0) to labkit's ``search`` (full points)."""
    return judge(student, CHALLENGE)


#: A reference solution in the student's own style (no labkit): the lab's bit packing (two bit
#: rows per SNP and class, genotype 2 counted as the rest), the depth-first walk that builds
#: each pair's 9-row table once for every third SNP, popcounts (the SWAR count, which LLVM turns
#: into the popcount instruction, vectorised) and the MI from a c·ln c table. Pasted into the
#: notebook's SOLUTION region; tests/test_challenges.py checks it earns the full points.
SOLUTION = '''\
M1 = np.uint64(0x5555555555555555)
M2 = np.uint64(0x3333333333333333)
M4 = np.uint64(0x0F0F0F0F0F0F0F0F)
H01 = np.uint64(0x0101010101010101)


@njit(inline="always")
def popcount(x):
    """Set bits of a uint64 (the SWAR count: LLVM turns it into the popcount instruction)."""
    x = x - ((x >> np.uint64(1)) & M1)
    x = (x & M2) + ((x >> np.uint64(2)) & M2)
    x = (x + (x >> np.uint64(4))) & M4
    return (x * H01) >> np.uint64(56)


@njit
def pack(genotypes, labels, cls):
    """Bit rows of the individuals of one class: bits[snp, g, word] has bit i set when
    individual i of the class has genotype g (0 or 1) at that SNP; genotype 2 is the rest."""
    m, n = genotypes.shape
    who = np.flatnonzero(labels == cls)
    words = (who.size + 63) // 64
    bits = np.zeros((n, 2, words), np.uint64)
    for k in range(who.size):
        w, b = k // 64, np.uint64(k % 64)
        for s in range(n):
            g = genotypes[who[k], s]
            if g < 2:
                bits[s, g, w] |= np.uint64(1) << b
    return bits, who.size


@njit
def nlogn(m):
    """t[c] = c·ln(c) for c = 0 … m (0·ln 0 = 0): the MI from counts without a log per cell."""
    t = np.zeros(m + 1)
    for c in range(2, m + 1):
        t[c] = c * np.log(c)
    return t


@njit
def pair_table(bits, a, b, size, ab, n_ab):
    """The 9 rows (ga, gb) of the pair a, b in one class — genotype 2 as the complement of the
    other two, the padding bits cut — and their counts."""
    for w in range(bits.shape[2]):
        valid = np.uint64(0xFFFFFFFFFFFFFFFF)
        if (w + 1) * 64 > size:
            valid = (np.uint64(1) << np.uint64(size - w * 64)) - np.uint64(1)
        a0, a1 = bits[a, 0, w], bits[a, 1, w]
        b0, b1 = bits[b, 0, w], bits[b, 1, w]
        ga = (a0, a1, ~(a0 | a1) & valid)
        gb = (b0, b1, ~(b0 | b1) & valid)
        for x in range(3):
            for y in range(3):
                ab[3 * x + y, w] = ga[x] & gb[y]
    for r in range(9):
        c = 0
        for w in range(bits.shape[2]):
            c += popcount(ab[r, w])
        n_ab[r] = c


@njit
def triple_counts(ab, n_ab, bits, c, counts, cls):
    """counts[cls, 3 r + gc] of the triple (pair row r, SNP c): two popcounts per row, the third
    genotype as the rest of the row."""
    for r in range(9):
        c0 = 0
        c1 = 0
        for w in range(bits.shape[2]):
            c0 += popcount(ab[r, w] & bits[c, 0, w])
            c1 += popcount(ab[r, w] & bits[c, 1, w])
        counts[cls, 3 * r] = c0
        counts[cls, 3 * r + 1] = c1
        counts[cls, 3 * r + 2] = n_ab[r] - c0 - c1


@njit
def epistasis_challenge(genotypes, labels, top):
    """Bit-packed genotypes per class, a depth-first walk that reuses each pair's table for
    every third SNP, popcounts, and the MI from a c·ln c table."""
    m, n = genotypes.shape
    cases, n1 = pack(genotypes, labels, 1)
    controls, n0 = pack(genotypes, labels, 0)
    t = nlogn(m)
    # m·MI = m ln m - Σ_y t[n_y] - Σ_x t[n_x] + Σ_xy t[n_xy]  (H(X) + H(Y) - H(X, Y))
    base = t[m] - t[n0] - t[n1]
    ab1 = np.empty((9, cases.shape[2]), np.uint64)
    ab0 = np.empty((9, controls.shape[2]), np.uint64)
    n_ab1 = np.empty(9, np.int64)
    n_ab0 = np.empty(9, np.int64)
    counts = np.empty((2, 27), np.int64)
    best_snps = np.zeros((top, 3), np.int64)
    best_mi = np.full(top, -1.0)
    best_q = np.full(top, -1, np.int64)
    for a in range(n):
        for b in range(a + 1, n):
            pair_table(cases, a, b, n1, ab1, n_ab1)
            pair_table(controls, a, b, n0, ab0, n_ab0)
            for c in range(b + 1, n):
                triple_counts(ab1, n_ab1, cases, c, counts, 1)
                triple_counts(ab0, n_ab0, controls, c, counts, 0)
                s = base
                for x in range(27):
                    s += t[counts[0, x]] + t[counts[1, x]] - t[counts[0, x] + counts[1, x]]
                mi = s / m
                # rank on the MI rounded to 1e-11 nats (equal MIs summed in another order
                # tie), ties by the indices: the walk's order, the earlier triple first
                q = np.int64(np.floor(mi * 1e11 + 0.5))
                if q > best_q[top - 1]:
                    k = top - 1
                    while k > 0 and q > best_q[k - 1]:
                        best_q[k] = best_q[k - 1]
                        best_mi[k] = best_mi[k - 1]
                        best_snps[k] = best_snps[k - 1]
                        k -= 1
                    best_q[k] = q
                    best_mi[k] = mi
                    best_snps[k, 0], best_snps[k, 1], best_snps[k, 2] = a, b, c
    found = min(top, n * (n - 1) * (n - 2) // 6)
    return best_snps[:found].copy(), best_mi[:found].copy()
'''

#: The imports the solution's cell needs (the notebook's earlier cells give them).
SOLUTION_IMPORTS = "import numpy as np\nfrom numba import njit\n"

