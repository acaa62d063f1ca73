"""Lab 04's exercise checks and their hints: ``popcount`` (Muła's idea — a nibble table held in a
register — vectorised, no ``ctpop``), ``fused_count`` (AND + popcount straight into the
contingency counts), ``masked_mi`` (MI with a mask, no branch in the loop), ``prefix_reuse`` (the
depth-first walk that extends a parent's table by one SNP: its ANDs are counted),
``search_time`` (a prediction: an order-3 search over 500 000 SNPs on R ranks) and
``popcount_bound`` (which popcount OSACA's reports say is faster per word, by how much — or that
a lower bound cannot tell)."""
from __future__ import annotations

import math

import numpy as np

from labkit import hints
from labkit.check import (CheckFailure, exercise, mismatch, no_branch_gate, require_njit, rng,
                          speed_gate, vectorized_gate)
from labkit.epistasis import (_bench_popcount_inputs, _entropy, _numpy_popcount,
                              combine_then_popcount, mi_branchy)
from labkit.epistasis.kernels import (combine_popcount, mi_masked, popcount_lut_register,
                                      popcount_nibble)

from ._popcount_model import (FASTER_FACTOR, FASTER_TIE, FASTER_TOLERANCE,  # noqa: F401
                              POP_FIXED, POP_FOREIGN, POP_HOST, POP_KERNELS, _faster_error,
                              _pop_pair, _stated_faster, faster_truth,
                              measured_seconds_per_word, per_word, popcount_report)
from ._popcount_gates import _REGISTER_LOOKUP, _no_ctpop_gate, _register_table_gate  # noqa: F401
from ._prefix_count import _Counter, _expected_table, ands_from_scratch, ands_with_reuse
from ._search_time import (PREDICT_INDIVIDUALS, PREDICT_SNPS, PREDICT_TOLERANCE,  # noqa: F401
                           _duration, expected_seconds, measured_triples_per_second)

#: the nibble table in a register must beat the same table in memory (``popcount_nibble``, two
#: loads per byte) by this much: labkit's answer clears it at 512- and 256-bit widths, while the
#: array table looked up a word at a time (gathers) or the register table unvectorised does not.
#: Not the byte table: its speed is the load ports', no property of the technique, so no target
#: over it holds on every host (measured: docs/epistasis.md, 'Popcount gate').
POPCOUNT_NEED = 1.5


@exercise("popcount", points=2, answers=("labkit.epistasis.kernels:popcount_hw",
                                         "labkit.epistasis.kernels:popcount_hw_scalar",
                                         "labkit.epistasis.kernels:_popcount_mula_avx2",
                                         "labkit.epistasis.kernels:popcount_nibble",
                                         "labkit.epistasis.kernels:popcount_lut_register",
                                         "labkit.epistasis.kernels:popcount_table"))
def check_popcount(student):
    """``student(words)`` → total set bits of a 1-D uint64 array, like
    ``np.bitwise_count(words).sum()``, counted nibble by nibble from a 16-entry table (no
    ``ctpop`` in the IR), vectorised at the host's width, the table read in a register (a vector
    shift by a variable amount), ≥ ``POPCOUNT_NEED``× the same table in memory
    (``popcount_nibble``)."""
    r = rng()
    cases = [np.zeros(0, np.uint64), np.full(3, np.iinfo(np.uint64).max, np.uint64),
             np.array([1, 2**63, 0], dtype=np.uint64)]
    cases += [r.integers(0, 2**64, int(n), dtype=np.uint64, endpoint=False)
              for n in (1, 8, r.integers(9, 3000))]
    for a in cases:
        got = student(a.copy())
        exp = _numpy_popcount(a)
        if got is None or int(got) != exp:
            raise AssertionError(f"popcount of {a.size} words = {got}, expected {exp}")
    big = _bench_popcount_inputs(1 << 14, seed=int(r.integers(1 << 30)))
    _no_ctpop_gate(student, big)
    vectorized_gate(student, big)
    _register_table_gate(student, big)
    # the baseline is the same 16-entry table in memory: what moving it into a register buys
    # (see POPCOUNT_NEED); labkit's answer does the exercise's technique
    speed_gate(student, popcount_nibble, big, need=POPCOUNT_NEED,
               vs="the nibble table in memory (ep.popcount_nibble)", answer=popcount_lut_register)
    return "exact on 6 arrays (empty, all ones, top bit, random lengths), no ctpop"


def _random_tables(r, B: int, cells: int, zero_frac: float = 0.4):
    t = r.integers(0, 60, (B, 2, cells))
    t[r.random(t.shape) < zero_frac] = 0
    t[t.sum(axis=(1, 2)) == 0, 0, 0] = 1
    return t


#: the MI must match the reference this closely (nats)
MI_ATOL = 1e-6


@exercise("masked_mi", points=2, answers=("labkit.epistasis.kernels:mi_masked",
                                          "labkit.epistasis.kernels:mi_table",
                                          "labkit.epistasis.kernels:mi_branchy",
                                          "labkit.epistasis.kernels:mi_batch_masked",
                                          "labkit.epistasis.kernels:mi_batch_table"))
def check_masked_mi(student):
    """``student(counts)`` → MI in nats of a table ``counts[2, cells]`` within 1e-6 of the
    reference; empty cells count 0, no NaN; compiled by numba with no branch in the loop over
    cells (a mask, not an ``if``)."""
    r = rng()
    tables = [np.array([[3, 0, 0], [0, 0, 5]]), np.array([[4, 4, 4], [4, 4, 4]]),
              np.array([[0, 7, 0, 0, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 0, 0, 0, 0]])]
    for cells in (3, 9, 27, 81):
        tables += list(_random_tables(r, 3, cells))
    for t in tables:
        got = student(np.ascontiguousarray(t))
        exp = _table_mi(t)
        if got is None or not np.isfinite(got):
            raise AssertionError(f"MI of {t.tolist()[:2]} is {got} — an empty cell gave log(0); "
                                 "replace zeros by ones before the log (n·log 1 = 0)")
        if abs(float(got) - exp) > MI_ATOL:
            raise AssertionError(f"MI of a {t.shape[1]}-cell table = {float(got):.10g}, "
                                 f"expected {exp:.10g} nats (natural log?)")
    batch = _random_tables(r, 1, 27)[0]
    require_njit(student, "technique missing")
    no_branch_gate(student, (batch,), where=r"llvm\.log|@log",
                   hint="the exercise replaces `if p > 0` by the mask log(p + (p == 0))")
    speed_gate(student, mi_branchy, (batch,), need=0.6, vs="the branchy MI", answer=mi_masked)
    return f"within {MI_ATOL:g} of the reference on {len(tables)} tables with empty cells"


def _table_mi(t: np.ndarray) -> float:
    """Plain-numpy MI (nats) of a table counts[2, cells] (explicit entropies)."""
    p = np.asarray(t, dtype=np.float64)
    p = p / p.sum()
    return float(_entropy(p.sum(axis=0)) + _entropy(p.sum(axis=1)) - _entropy(p))


@exercise("fused_count", points=2, answers=("labkit.epistasis.kernels:combine_popcount",
                                            "labkit.epistasis.kernels:combine_popcount_scalar",
                                            "labkit.epistasis.kernels:contingency_fused",
                                            "labkit.epistasis.kernels:and_popcount"))
def check_fused_count(student):
    """``student(prefix, snp)`` → counts[r*3+g] = Σ_w popcount(prefix[r, w] & snp[g, w]), without storing the AND."""
    r = rng()
    for R, W in ((1, 1), (3, 8), (9, int(r.integers(9, 40))), (27, 16)):
        P = r.integers(0, 2**64, (R, W), dtype=np.uint64, endpoint=False)
        S = r.integers(0, 2**64, (3, W), dtype=np.uint64, endpoint=False)
        exp = np.array([np.bitwise_count(P[i] & S[g]).sum() for i in range(R) for g in range(3)])
        msg = mismatch(student(P.copy(), S.copy()), exp, name="counts")
        if msg is not None:
            raise AssertionError(f"{msg} — counts[r*3 + g] is prefix row r AND genotype row g")
    P = r.integers(0, 2**64, (27, 32), dtype=np.uint64, endpoint=False)
    S = r.integers(0, 2**64, (3, 32), dtype=np.uint64, endpoint=False)
    speed_gate(student, combine_then_popcount, (P, S), need=1.1,
               vs="combine-then-popcount (table stored)", answer=combine_popcount)
    return "exact for 1, 3, 9 and 27 prefix rows"


# ---------------------------------------------------------------- prefix reuse (depth-first)
@exercise("prefix_reuse", points=2, answers=("labkit.epistasis.engine:_search_kernel",
                                             "labkit.epistasis._stages:_build_level",
                                             "labkit.epistasis:search"))
def check_prefix_reuse(student):
    """``student(bits, order, extend, visit)`` calls ``visit(combo, table)`` once for every
    combination of ``order`` SNPs (indices ascending) with its 3**order-row table, built by
    ``extend(parent, bits[j])`` — and the row ANDs that ``extend`` counts are the depth-first
    count (each prefix's table built once), not the from-scratch count."""
    r = rng()
    counted = [_walk_counted(student, r, n, order, W)   # (n, order, ANDs, reuse, from scratch)
               for n, order, W in ((7, 3, 2), (int(r.integers(8, 11)), 3, 1), (7, 4, 1),
                                   (5, 2, 1))]
    n, order, did, reuse, scratch = counted[0]
    same = "the prefix-reuse count" if did == reuse else f"prefix reuse: {reuse}"
    return (f"every combination visited once; your walk did {did} row ANDs for order {order} "
            f"over {n} SNPs ({same}; from scratch {scratch})")


def _walk_counted(student, r, n: int, order: int, W: int) -> tuple:
    """One case of ``prefix_reuse``: the student's walk over n random SNPs (W words) with the
    check's ``extend`` and ``visit``; every combination visited once with its right table, built
    by extend from its prefix's table, at the depth-first count of row ANDs — else
    CheckFailure. (n, order, the student's row ANDs, reuse, from scratch)."""
    bits = r.integers(0, 2**64, (n, 3, W), dtype=np.uint64, endpoint=False)
    seen: dict = {}
    bad: list = []

    def visit(combo, table, _bits=bits, _order=order):
        c = tuple(int(v) for v in combo)
        if len(c) != _order or list(c) != sorted(set(c)) or min(c) < 0 or max(c) >= n:
            bad.append(f"visit({c}, …): a combination is {_order} ascending SNP indices")
            return
        if c in seen:
            bad.append(f"{c} visited twice")
        exp = _expected_table(_bits, c)
        seen[c] = np.array_equal(np.asarray(table), exp)
        if seen[c] and not ext.built(table):
            unbuilt.append(c)

    ext = _Counter(bits)
    unbuilt: list = []
    student(bits.copy(), order, ext, visit)
    if bad:
        raise CheckFailure("wrong", bad[0])
    want = math.comb(n, order)
    if len(seen) != want:
        raise CheckFailure("wrong", f"{len(seen)} of the {want} combinations of {order} "
                                    f"among {n} SNPs visited")
    wrong = [c for c, ok in seen.items() if not ok]
    if wrong:
        raise CheckFailure("wrong", f"the table visited for {wrong[0]} is not row r·3 + g "
                                    "= parent row r AND genotype row g of the last SNP")
    if unbuilt:
        raise CheckFailure("technique missing",
                           f"the table visited for {unbuilt[0]} was not built by extend "
                           "from its prefix's table (itself built by extend, down to the "
                           "first SNP's rows) — extend is where the work is counted; build "
                           "every table with it")
    reuse, scratch = ands_with_reuse(n, order), ands_from_scratch(n, order)
    if ext.ands == scratch and reuse != scratch:
        raise CheckFailure("technique missing",
                           f"{ext.ands} row ANDs for order {order} over {n} SNPs — the "
                           f"from-scratch count; building each prefix's table once takes "
                           f"{reuse}: extend a parent's table, keep it while you walk its "
                           "children")
    if not reuse <= ext.ands <= ands_with_reuse(n, order, prune=False) + 3 * n:
        raise CheckFailure("technique missing",
                           f"{ext.ands} row ANDs counted by extend for order {order} over "
                           f"{n} SNPs; the depth-first walk takes {reuse} (from scratch: "
                           f"{scratch}) — every table must come from extend(parent, "
                           "bits[j]), each prefix's once")
    return n, order, ext.ands, reuse, scratch


# ---------------------------------------------------------------- prediction
@exercise("search_time", points=1)
def check_search_time(student):
    """``student(rate, ranks)`` → the predicted wall seconds of an order-3 search over 500 000
    SNPs × 2000 individuals at ``rate`` triples per second per rank on ``ranks`` ranks, within
    10 % (the rate is measured here, one thread)."""
    rate = measured_triples_per_second()
    lines = []
    for ranks in (1, 8, 256):
        pred = student(rate, ranks)
        if isinstance(pred, (bool, np.bool_)) or not isinstance(pred, (int, float, np.integer,
                                                                      np.floating)):
            raise CheckFailure("wrong", f"returned {type(pred).__name__}, expected a number "
                                        "(seconds)")
        pred = float(pred)
        exp = expected_seconds(rate, ranks)
        if not np.isfinite(pred) or pred <= 0:
            raise CheckFailure("wrong", f"predicted {pred!r} s on {ranks} ranks; a time is a "
                                        "positive number")
        off = abs(pred - exp) / exp
        if off > PREDICT_TOLERANCE:
            raise CheckFailure("wrong",
                               f"on {ranks} rank{'s' * (ranks > 1)} at {rate / 1e6:.1f} M "
                               f"triples/s you predict {_duration(pred)}, off by {off:.0%} "
                               f"(within {PREDICT_TOLERANCE:.0%} passes) — count the triples "
                               "and how the ranks share them")
        lines.append(f"{_duration(pred)} on {ranks} rank{'s' * (ranks > 1)}")
    return f"at {rate / 1e6:.1f} M triples/s per rank (measured here): " + ", ".join(lines)


# ---------------------------------------------------------------- hints (tiers 2–3)
hints.define(
    "popcount",
    "Muła's popcount looks the count of each 4-bit nibble up in a 16-entry table, and keeps "
    "that table in a vector register (vpshufb); numba has no shuffle, but a 64-bit integer holds "
    "sixteen 4-bit entries — how would you read entry v of it?",
    "the counts 0…4 of the nibbles 0…15 fit in one constant LUT = 0x4332322132212110 (entry v in "
    "bits 4v … 4v+3); (LUT >> (4·v)) & 15 is the lookup, a shift by a variable amount that "
    "vectorises (one per lane). For each word add the lookups of its 16 nibbles; keep every "
    "value np.uint64 so numba does not mix signed and unsigned.",
    "LUT = np.uint64(0x4332322132212110); for i: x = words[i]; s = np.uint64(0); for k in "
    "range(16): v = (x >> np.uint64(4 * k)) & np.uint64(15); s += (LUT >> (v << np.uint64(2))) "
    "& np.uint64(15); total += s")
hints.define(
    "fused_count",
    "the store-then-count version writes prefix[r] & snp[g] to memory only to read it back; "
    "what if each AND went straight into a running count?",
    "three loops r, g, w; the innermost accumulates ep.popcount64(prefix[r, w] & snp[g, w]) in a "
    "scalar, which you write to counts[r * 3 + g] once the row is done; allocate the counts once "
    "with np.zeros(R * 3, dtype=np.int64).",
    "out = np.zeros(R * 3, dtype=np.int64); for r in range(R): for g in range(3): s = 0; for w "
    "in range(W): s += ep.popcount64(prefix[r, w] & snp[g, w]); out[r * 3 + g] = s")
hints.define(
    "masked_mi",
    "an empty cell must add 0·ln 0 = 0; instead of skipping it with an if, make its logarithm "
    "harmless: which value p' has ln p' = 0, and how do you get it from p without a branch?",
    "p + (p == 0.0) is p for a filled cell and 1 for an empty one (the comparison is 0 or 1), so "
    "-p·log(p + (p == 0.0)) is the entropy term with no branch. Sum it for the 2·cells joint "
    "probabilities (H(X,Y)), for the cell sums p0 + p1 (H(X)) and for the two class shares (H(Y)); "
    "MI = H(X) + H(Y) − H(X,Y). A conditional expression (a if c else b) compiles to branches.",
    "n0, n1 = row sums; inv = 1.0 / (n0 + n1); for c: p0 = counts[0, c] * inv; p1 = counts[1, c] "
    "* inv; px = p0 + p1; hxy -= p0 * np.log(p0 + (p0 == 0.0)) + p1 * np.log(p1 + (p1 == 0.0)); "
    "hx -= px * np.log(px + (px == 0.0)); then hy from n0 * inv, n1 * inv; return hx + hy - hxy")
hints.define(
    "prefix_reuse",
    "all combinations that start with (i, j) share the table of the pair (i, j); in which order "
    "must you visit the combinations so that this table is built once and used by all of them?",
    "depth first: a recursive walk(table, combo, start) that, for each j ≥ start, extends the "
    "current table by SNP j once and recurses with it before moving to j + 1; at depth order it "
    "calls visit. A single SNP's table is bits[i] itself (no AND); stop j early enough that "
    "order − len(combo) SNPs still fit.",
    "def walk(table, combo, start): if len(combo) == order: visit(combo, table); return; for j "
    "in range(start, n - (order - len(combo)) + 1): walk(bits[j] if not combo else extend(table, "
    "bits[j]), combo + (j,), j + 1) — then walk(None, (), 0)")
hints.define(
    "search_time",
    "the rate is triples per second of one rank; how many triples does an order-3 search over "
    "500 000 SNPs score, and how do R ranks share them?",
    "there are C(n, 3) = n(n−1)(n−2)/6 triples (math.comb); the ranks split the first SNPs into "
    "ranges of equal work, so each does C(n, 3)/R of them at the given rate.",
    "return math.comb(500_000, 3) / rate / ranks")


@exercise("popcount_bound", points=1,
          answers=("labkit.inspect:predict", "labkit.inspect.uarch:predict",
                   "labkit.inspect.loopreport:osaca_report", "labkit.inspect.loopreport:truth",
                   "labkit.epistasis.checks:faster_truth", "labkit.epistasis.checks:per_word"))
def check_popcount_bound(student):
    """``student(a, b)`` → ``(name, times)``: which of two popcounts OSACA's reports say is
    faster per word and by how much (within 10 %), or None when the faster-looking one's bound
    is only a lower bound (the model lacks some of its instructions) — for this core's pairs and
    two compiled for other cores. The readings are the verdict. Then a pair this core's model
    can back is measured here: whether the ratio lands within 2× of the model's, or the machine
    was too busy to tell, is said in the message — the model's fact, never the student's
    verdict. A host whose model backs no pair is judged on the others' reports and says so; no
    AVX2 Muła (ARM) or no OSACA: ``inconclusive``."""
    from labkit.epistasis.kernels import MULA_KIND
    if MULA_KIND != "avx2-pshufb":
        raise CheckFailure("inconclusive", "this machine runs Muła's scalar fallback (no "
                                           "AVX2): there is no vpshufb loop to model — not "
                                           "gradable here")
    g = rng()
    posed, judged, why = _read_pairs(student, g)          # 1. every pair's reading, judged
    if not any(faster_truth(*p) for _, p in posed):
        why = why or "its models lack the instructions"
        raise CheckFailure("inconclusive", f"OSACA could not back any pair here ({why}): not "
                                           "gradable")
    read = f"{len(posed)} pairs right: " + "; ".join(judged)
    return _model_beside_measurement(read, posed, why)   # 2. a pair this core backs, measured


def _read_pairs(student, g) -> tuple:
    """(posed, judged, why): this core's pairs, the fixed one and one drawn from other cores,
    each shown to the student in a random order and its reading judged as soon as it is made
    ("wrong" at the first misreading); ``why``: the first reason a pair could not be built."""
    host = [(None, a, b) for a, b in POP_HOST]
    pool = [POP_FOREIGN[int(g.integers(len(POP_FOREIGN)))]]
    posed, why, judged = [], "", []
    for cpu, na, nb in host + [POP_FIXED] + pool:
        pair, w = _pop_pair(cpu, na, nb)
        if pair is None:
            why = why or w
            continue
        a, b = pair[::-1] if g.random() < 0.5 else pair
        ans = _stated_faster(student(a, b), a, b)     # each pair read as soon as it is built
        msg = _faster_error(a, b, ans)
        if msg:
            raise CheckFailure("wrong", msg)
        posed.append((cpu, (a, b)))
        judged.append(f"{a.name} vs {b.name} on {a.model}"
                      + ("" if faster_truth(a, b) else " (cannot tell)"))
    return posed, judged, why


def _model_beside_measurement(read: str, posed: list, why: str) -> str:
    """The message: a pair this core's model backs, measured here (twice if the first lands
    outside FASTER_FACTOR of the model) — the model's fact, never the student's verdict."""
    backed = [(a, b) for cpu, (a, b) in posed if cpu is None and faster_truth(a, b)]
    if not backed:
        model = next((a.model for cpu, (a, _) in posed if cpu is None), "")
        if not model:
            raise CheckFailure("inconclusive", f"{read} — but there is no model of this core "
                                               f"({why}), so nothing to measure: not gradable here")
        return (f"{read}. This core's model ({model}) lacks instructions of the faster-looking "
                "kernels (a lower bound), so no pair is measured here")
    a, b = backed[0]
    name, times = faster_truth(a, b)
    slow = b.name if name == a.name else a.name
    low = bool((a if slow == a.name else b).unknown)
    for attempt in range(2):
        t = measured_seconds_per_word((name, slow))
        ratio = t[slow] / t[name]
        ok = ratio >= times / FASTER_FACTOR and (low or ratio <= times * FASTER_FACTOR)
        if ok:
            break
    from labkit.check.speed import _describe        # the word that fits the ratio measured
    facts = (f"measured here: {name} {_describe(ratio, slow)} (the model: "
             f"{'at least ' if low else ''}{times:.2f}×)")
    if not ok:
        from labkit.inspect.uarch import _busy
        busy = _busy()
        return (f"{read}; {facts} — not within {FASTER_FACTOR:g}× "
                + (f"on a busy machine ({busy}): run it again to see whether the model holds"
                   if busy else "of the model: OSACA's model does not describe this core here")
                + ". The measurement judges the model, not your reading")
    return f"{read}; {facts}: the model describes this core"


hints.define(
    "popcount_bound",
    "per word, each kernel costs its bound per loop iteration — the larger of its busiest port "
    "and its loop-carried chain — over the words one iteration handles; but a report that lists "
    "instructions the model lacks counted them as free: what does its number promise?",
    "compute c = max(max(r.ports.values()), r.dependency) / r.elements for both; the smaller is "
    "the faster, by c_slow / c_fast. If the faster one has r.unknown instructions its true cost "
    "may be higher than the other's: the reports cannot tell (None). If only the slower one has "
    "them, it can only be slower still: the ratio is an 'at least'.",
    "ca, cb = per-word bounds; fast, slow = (a, b) if ca <= cb else (b, a); if fast.unknown: "
    "return None; return fast.name, max(ca, cb) / min(ca, cb)")


# ---------------------------------------------------------------- answers on the screen
# REVEALS: exercise → a callable returning what would give its graded answer away if a cell
# printed it before the exercise's check has passed — exact strings, computed from the checks'
# own references, or compiled patterns where the answer rests on a rate measured on the student's
# machine. tests/test_notebooks.py runs every student copy unsolved and finds none in any output.
def _popcount_bound_reveals():
    """Each popcount's bound per word on this core's model (what the check's truth compares),
    as the notebook prints it; none where OSACA has no model here."""
    out = []
    for name in POP_KERNELS:
        try:
            rep = popcount_report(name)[0]
        except (ValueError, ImportError):
            continue
        if rep.elements and rep.ports:
            out.append(f"{per_word(rep):.2f} cycles per word")
    return out


def _search_time_reveals():
    """The search's triple count (the answer's numerator) and any duration stated for it on a
    number of ranks (the answer itself, at whatever rate this machine measures)."""
    import re
    return [f"{math.comb(PREDICT_SNPS, 3):.3g}", f"{math.comb(PREDICT_SNPS, 3):,}",
            re.compile(r"\d[\d,.]*\**\s*(?:years|days|hours|minutes|s)\**\s+on\s+\d+\s+ranks?")]


REVEALS = {"popcount_bound": _popcount_bound_reveals, "search_time": _search_time_reveals}
