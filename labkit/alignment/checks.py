"""Exercise checks of lab 01 and their hints: ``ragged_transpose`` (the layout: a ragged batch
to length × padded pairs, with the lengths), ``transposed_inner`` (the lane loop across pairs),
``int16_lanes`` (keep every intermediate int16: the lanes in the hot loop), ``int16_length`` (a
prediction: the longest sequences int16 scores survive). ``transpose`` (the plain transpose) is
kept for older notebooks."""
from __future__ import annotations

import re

import numba
import numpy as np

from labkit import hints
from labkit.check import (CheckFailure, exercise, mismatch, native_lanes, note, require_njit,
                          rng, speed_gate, vectorized_gate)
from labkit.check.gates import hot_loop

from . import Inputs, Scoring, align_scalar, make_inputs, reference, transpose_batch
from .kernels import align_batched_serial, align_transposed

__all__ = ["check_transpose", "check_ragged_transpose", "check_transposed_inner",
           "check_int16_lanes", "check_int16_length", "int16_limit"]


def _lanes_note(fn, args) -> str:
    """'32 int16 lanes' / '8 int64 lanes' from the IR of ``fn`` compiled for ``args``."""
    import re

    from labkit import inspect as lk_inspect

    try:
        rep = lk_inspect.vector_report(fn, tuple(numba.typeof(a) for a in args))
    except Exception:  # noqa: BLE001 - the note is a bonus
        return ""
    elems = [int(m.group(1)) for op in rep.ir_vector_ops
             for m in [re.search(r"smax <\d+ x i(\d+)>", op)] if m]
    if not elems or not rep.max_width_bits:
        return ""
    bits = max(elems)
    lanes = rep.max_width_bits // bits
    if bits <= 16:
        return f"max over {lanes} int{bits} lanes per instruction"
    return (f"max over only {lanes} int{bits} lanes per instruction — numba widened the int16 "
            f"arithmetic; cast each add/max result back with np.int16(...) to get "
            f"{rep.max_width_bits // 16} lanes")


@exercise("transpose", points=1, answers=("labkit.alignment.kernels:transpose_batch",))
def check_transpose(student):
    """transpose(codes) returns the C-contiguous (length × pairs) copy of (pairs × length) codes."""
    g = rng()
    shapes = [(1, 1), (16, 200), (int(g.integers(2, 40)), int(g.integers(1, 90)))]
    for n, L in shapes:
        codes = g.integers(0, 5, size=(n, L), dtype=np.uint8)
        got = student(codes)
        if not isinstance(got, np.ndarray):
            raise AssertionError(f"returned a {type(got).__name__}, expected a numpy array")
        msg = mismatch(got, codes.T, name="out")
        assert msg is None, f"{msg} (input {n} pairs × {L})"
        if got.dtype != codes.dtype:
            raise AssertionError(f"dtype {got.dtype}, expected {codes.dtype} (keep the uint8 codes)")
        if n > 1 and L > 1 and not got.flags.c_contiguous:
            raise AssertionError("the result is a strided view (like codes.T): the point is the new "
                                 "memory layout — build a C-contiguous copy, one row per position")
    return f"exact on {len(shapes)} random batches, C-contiguous"


def _hidden_batches(g: np.random.Generator):
    """(inputs, scoring) for the transposed-kernel check: odd sizes, equal lengths per batch."""
    out = []
    for n, L1, L2 in [(1, 1, 1), (int(g.integers(2, 20)), int(g.integers(1, 60)), int(g.integers(1, 60))),
                      (33, 50, 47)]:
        s1 = g.integers(0, 5, size=(n, L1), dtype=np.uint8)
        s2 = g.integers(0, 5, size=(n, L2), dtype=np.uint8)
        out.append((s1, s2, Scoring()))
    s = g.integers(0, 5, size=(8, 40), dtype=np.uint8)
    out.append((s, s.copy(), Scoring()))                                 # identical pairs
    s1 = g.integers(0, 5, size=(20, 30), dtype=np.uint8)
    s2 = g.integers(0, 5, size=(20, 25), dtype=np.uint8)
    out.append((s1, s2, Scoring(match=2, mismatch=-3, gap_open=-5, gap_extend=-2)))
    return out


#: labkit's own kernels that compute a whole batch's scores (not to be handed in).
_ALIGN_ANSWERS = ("labkit.alignment.kernels:align_transposed",
                  "labkit.alignment.kernels:align_transposed_promoted",
                  "labkit.alignment.kernels:align_batched",
                  "labkit.alignment.kernels:align_batched_serial",
                  "labkit.alignment:align")


def _exact_on_hidden(student, g):
    """Scores of student(seqs1T, seqs2T, scoring) equal the reference on hidden batches and on a
    seed-sized one; returns (number of batches, the seed batch's arguments)."""
    batches = _hidden_batches(g)
    for s1, s2, sc in batches:
        n = s1.shape[0]
        inp = Inputs(s1, s2, np.full(n, s1.shape[1], np.int64),
                     np.full(n, s2.shape[1], np.int64), sc)
        got = student(transpose_batch(s1), transpose_batch(s2), sc)
        msg = mismatch(got, reference(inp), name="score")
        assert msg is None, f"{msg} ({n} pairs, lengths {s1.shape[1]} × {s2.shape[1]}, {sc})"
    seed = make_inputs({"pairs": 16, "length": 200}, seed=int(g.integers(1 << 30)))
    s1T, s2T = transpose_batch(seed.seqs1), transpose_batch(seed.seqs2)
    got = student(s1T, s2T, seed.scoring)
    msg = mismatch(got, align_scalar(seed.seqs1, seed.seqs2, seed.scoring), name="score")
    assert msg is None, f"{msg} (16 pairs × 200)"
    return len(batches) + 1, seed, (s1T, s2T, seed.scoring)


@exercise("transposed_inner", points=2, answers=_ALIGN_ANSWERS)
def check_transposed_inner(student):
    """student(seqs1T, seqs2T, scoring) gives exact Gotoh scores, is compiled by numba,
    vectorises across pairs at the host's native width (any element type: that is the next
    exercise), and beats the scalar kernel by ≥ 4× on a 16×200 batch."""
    count, seed, args = _exact_on_hidden(student, rng())
    require_njit(student)
    vectorized_gate(student, args)
    lanes = _lanes_note(student, args)
    speed_gate(student, align_scalar, (seed.seqs1, seed.seqs2, seed.scoring), need=4.0,
               vs="align_scalar", student_args=args, answer=align_transposed)
    return f"exact on {count} hidden batches" + (f"; {lanes}" if lanes else "")


@exercise("int16_lanes", points=2, answers=_ALIGN_ANSWERS)
def check_int16_lanes(student):
    """The transposed kernel with every intermediate int16: exact, compiled, and its hot loop
    computes on int16 vectors with at least the host's native lane count (``<16 x i16>`` at 256
    bits, ``<8 x i16>`` on 128-bit NEON) — an int64-lane kernel fails here."""
    count, _, args = _exact_on_hidden(student, rng())
    require_njit(student)
    vectorized_gate(student, args)
    int16_max_gate(student, args)
    return f"exact on {count} hidden batches"


_WIDENED = ("numba widened the int16 arithmetic: find the i64 values in lk.llvm_ir(...) and "
            "bring each sum and maximum back to int16")


def _max_ops(fn, args) -> list[tuple[int, int]]:
    """(lanes, bits) of every vector maximum (``llvm.smax`` or compare) in ``fn``'s hot loop."""
    lp, _ = hot_loop(fn, args, where=r"@llvm\.smax\.v|icmp s[gl][te] <")
    text = "\n".join(lp.lines) if lp is not None else ""
    ops = [(int(n), int(b)) for n, b in re.findall(r"@llvm\.smax\.v(\d+)i(\d+)\(", text)]
    ops += [(int(n), int(b)) for n, b in re.findall(r"icmp s[gl][te] <(\d+) x i(\d+)>", text)]
    return ops


def int16_max_gate(fn, args) -> int:
    """The DP maxima of the hot loop (``llvm.smax`` or compare + select) are int16 vectors with
    at least the host's native int16 lane count; returns the lanes. (``lanes_gate`` alone would
    accept an int64 kernel: its int16 arrays are loaded and stored as ``<N x i16>`` too.)"""
    ops = _max_ops(fn, args)
    # LLVM may pack fewer int16 lanes than the registers hold (AArch64: <4 x i16> maxima on
    # 128-bit NEON); labkit's own int16 kernel, compiled here for the same arguments, sets the bar
    own = [n for n, b in _max_ops(align_transposed, args) if b == 16]
    need = min(native_lanes("int16"), max(own)) if own else native_lanes("int16")
    if not ops:
        raise CheckFailure("technique missing", "no vector maxima in the hot loop — "
                                                "write each maximum on two int16 values")
    wide = sorted({(n, b) for n, b in ops if b > 16}, key=lambda t: -t[1])
    if wide:
        n, b = wide[0]
        raise CheckFailure("technique missing", f"the hot loop's maxima work on <{n} x i{b}> "
                                                f"vectors (int{b}: {n} pairs per vector instead of "
                                                f"int16's) — {_WIDENED}")
    lanes = max(n for n, _ in ops)
    if lanes < need:
        raise CheckFailure("technique missing", f"only {lanes} int16 lanes per maximum in the "
                                                f"hot loop, need {need} (what labkit's int16 kernel "
                                                f"gets at this host's native width)")
    note(f"maxima on {lanes} int16 lanes")
    return lanes


# ---------------------------------------------------------------------------- ragged transpose
def _ragged_batches(g: np.random.Generator):
    """(flat, offsets, lanes, sequences) batches with lengths that differ within a batch."""
    out = []
    for n, lanes, lo, hi in [(1, 8, 1, 1), (int(g.integers(2, 40)), 16, 1, 60), (32, 32, 5, 90),
                             (int(g.integers(33, 70)), 32, 1, 120), (7, 4, 30, 30)]:
        lens = g.integers(lo, hi + 1, size=n)
        seqs = [g.integers(0, 5, size=int(m), dtype=np.uint8) for m in lens]
        offsets = np.zeros(n + 1, np.int64)
        offsets[1:] = np.cumsum(lens)
        out.append((np.concatenate(seqs), offsets, lanes, seqs))
    return out


@exercise("ragged_transpose", points=2, answers=("labkit.alignment.kernels:transpose_ragged",
                                                 "labkit.alignment.kernels:transpose_batch"))
def check_ragged_transpose(student):
    """student(flat, offsets, lanes) → (T, lens): T C-contiguous uint8, longest length × pairs
    rounded up to a multiple of ``lanes``, T[i, k] = code i of sequence k and 0 past its end and
    in the padding lanes; lens (integers, one per lane) the lengths, 0 for padding lanes."""
    batches = _ragged_batches(rng())
    for flat, offsets, lanes, seqs in batches:
        n = len(seqs)
        where = f"({n} sequences of lengths {min(map(len, seqs))}…{max(map(len, seqs))}, lanes={lanes})"
        got = student(flat, offsets, lanes)
        if not isinstance(got, tuple) or len(got) != 2:
            raise CheckFailure("wrong", f"returned {type(got).__name__}, expected a tuple "
                                        f"(T, lens) {where}")
        T, lens = got
        if not isinstance(T, np.ndarray) or not isinstance(lens, np.ndarray):
            raise CheckFailure("wrong", f"T and lens must be numpy arrays {where}")
        w = -(-n // lanes) * lanes
        L = max(len(s) for s in seqs)
        exp = np.zeros((L, w), np.uint8)
        exp_lens = np.zeros(w, np.int64)
        for k, s in enumerate(seqs):
            exp[:s.size, k] = s
            exp_lens[k] = s.size
        if T.shape != exp.shape:
            raise CheckFailure("wrong", f"T has shape {T.shape}, expected {exp.shape}: longest "
                                        f"length × pairs rounded up to a multiple of lanes {where}")
        if T.dtype != np.uint8:
            raise CheckFailure("wrong", f"T has dtype {T.dtype}, expected uint8 (keep the codes' type)")
        msg = mismatch(T, exp, name="T")
        assert msg is None, f"{msg} {where}"
        if not T.flags.c_contiguous:
            raise CheckFailure("wrong", "T is a strided view: the point is the new memory "
                                        "layout — one C-contiguous row per position")
        if lens.dtype.kind not in "iu":
            raise CheckFailure("wrong", f"lens has dtype {lens.dtype}, expected integers")
        msg = mismatch(lens, exp_lens, name="lens")
        assert msg is None, f"{msg} (0 for padding lanes) {where}"
    return f"exact on {len(batches)} hidden ragged batches, C-contiguous, lanes padded"


# ---------------------------------------------------------------------------- int16_length
_I16_MAX, _I16_MIN = 32767, -32768


def int16_limit(scoring=None) -> int:
    """The longest length L such that aligning two sequences of length L with ``scoring``
    keeps every DP value in int16: the highest value is L matches (identical sequences); the
    lowest stays above two leading gaps of L plus a gap opening, extension and mismatch."""
    sc = Scoring() if scoring is None else scoring
    mt, mm, go, ge = sc.ints()
    best = 1
    hi = 1 << 16
    while best < hi:                                       # largest L with both bounds (monotone)
        mid = (best + hi + 1) // 2
        top = max(mt, 0) * mid
        low = 2 * go + 2 * (mid - 1) * ge + go + ge + min(mm, 0)
        if top <= _I16_MAX and low >= _I16_MIN:
            best = mid
        else:
            hi = mid - 1
    return best


def _wraps_at(length: int) -> tuple[int, int]:
    """labkit's int16 batch kernel on identical all-'A' pairs of ``length`` and ``length + 1``."""
    lens = np.array([length, length + 1], np.int64)
    seqs = np.zeros((2, length + 1), np.uint8)
    got = align_batched_serial(seqs, lens, seqs, lens, Scoring(), 32)
    return int(got[0]), int(got[1])


@exercise("int16_length", points=1, answers=("labkit.alignment.scoring:fits_int16",))
def check_int16_length(student):
    """The predicted longest sequence length (both sequences) whose alignment under the seed's
    scoring keeps every int16 DP value exact — graded exactly; the check computes it from the
    scores and runs labkit's int16 kernel at that length and one more."""
    pred = student()
    if isinstance(pred, (bool, np.bool_)) or not isinstance(pred, (int, np.integer, float,
                                                                  np.floating)):
        raise CheckFailure("wrong", f"returned {type(pred).__name__}, expected a whole number "
                                    "(a sequence length)")
    if float(pred) != int(pred):
        raise CheckFailure("wrong", f"predicted {pred!r}: a length is a whole number")
    pred = int(pred)
    sc = Scoring()
    limit = int16_limit(sc)
    mt = int(sc.match)
    if pred > limit:
        raise CheckFailure("wrong", f"predicted {pred}: too long — two identical sequences of "
                                    f"length {pred} score {mt} × {pred} = {mt * pred}, above int16's "
                                    f"{_I16_MAX}")
    if pred < limit:
        raise CheckFailure("wrong", f"predicted {pred}: too short — at length {pred + 1} the highest "
                                    f"score is {mt} × {pred + 1} = {mt * (pred + 1)} and the lowest "
                                    f"value stays far above {_I16_MIN}: still int16")
    ok, wrapped = _wraps_at(limit)
    return (f"predicted {pred}: identical sequences score {ok} at length {limit}; at "
            f"{limit + 1} the int16 kernel returns {wrapped} instead of {mt * (limit + 1)}")


# ---------------------------------------------------------------------------- hints
hints.define(
    "ragged_transpose",
    "the lane loop reads position i of every pair as one contiguous row, so the new array is "
    "indexed [position, pair]; sequences of different lengths all get the longest one's rows, "
    "and the row length must be whole registers — what fills the gaps, and how does the kernel "
    "later tell a real position from padding?",
    "one pass to find the longest length L and n pairs, rounded up to w = lanes × ⌈n / lanes⌉; "
    "allocate a zeroed (L, w) uint8 array and a zeroed (w,) length array; then for each "
    "sequence p copy its codes flat[offsets[p]:offsets[p + 1]] down column p and store its "
    "length.",
    "w = -(-n // lanes) * lanes; T = np.zeros((L, w), np.uint8); lens = np.zeros(w, np.int64); "
    "for p in range(n): o = offsets[p]; m = offsets[p + 1] - o; lens[p] = m; "
    "for i in range(m): T[i, p] = flat[o + i]  — return T, lens")
hints.define(
    "transposed_inner",
    "the lane loop is the scalar kernel's inner-loop body (A._scalar_pair) for pair k: every "
    "value that belongs to one pair — the diagonal, the vertical gap F, the row's H and E — "
    "becomes its entry k of an array, so the iterations over k never touch each other's data.",
    "for pair k at cell (i, j): the diagonal plus the match/mismatch score of a[k] and b[k], "
    "then the maximum with the two gaps; the old H[i, k] becomes the next row's diagonal before "
    "H[i, k] takes the new value; finally both gaps either extend (+ ge) or open from the new H "
    "(+ go), whichever is larger.",
    "best = max(diag[k] + (mt if a[k] == b[k] else mm), F[k], E[i, k]); diag[k] = H[i, k]; "
    "H[i, k] = best; F[k] = max(F[k] + ge, best + go); E[i, k] = max(E[i, k] + ge, best + go)")
hints.define(
    "int16_lanes",
    "numba's integer typing widens (NumPy 2 would not): int16 + int16, int16 + a Python int "
    "and max() of them are int64 — the <N x i64> vectors in lk.llvm_ir(my_align_transposed). "
    "Which values in the lane loop are i64, and how do you bring each back to int16?",
    "wrap every sum in np.int16(...) (the score, the gap opened from H, each extension); keep "
    "the scores int16 (A.Scoring's fields already are); write each maximum as a conditional "
    "expression on two int16 values instead of max(); re-read the IR until the hot loop shows "
    "<N x i16> maxima.",
    "s = mt if a[k] == b[k] else mm; best = np.int16(diag[k] + s); best = best if best > f else "
    "f; … opened = np.int16(best + go); f = np.int16(f + ge); F[k] = f if f > opened else opened")
hints.define(
    "int16_length",
    "which alignment of two sequences of length L scores highest, what is its score, and how "
    "large may an int16 get? Then check the other end: can the lowest value get below −32768 "
    "first?",
    "the highest value is L matches in a row (identical sequences): 6·L must stay ≤ 32767. The "
    "lowest values are the borders and gap-only paths: two leading gaps of about L each, plus "
    "one opening and extension — about 2·11 + 2·L, far from −32768 at the same L.",
    "return 32767 // 6 (the match score) — after checking 2·11 + 2·(L − 1) + 11 + 1 + 4 < 32768 "
    "at that L")


# ---------------------------------------------------------------- answers on the screen
# REVEALS: exercise → a callable returning what would give its graded answer away if a cell
# printed it before the exercise's check has passed (exact strings, computed from the check's
# own reference). tests/test_notebooks.py runs every student copy unsolved and finds none of
# them in any output.
def _int16_length_reveals():
    """The longest int16-exact length under the seed's scoring, as a cell would print it."""
    n = int16_limit()
    return [str(n), f"{n:,}", f"{n:_}"]


REVEALS = {"int16_length": _int16_length_reveals}
