"""Exercise checks of lab 01: ``check.transpose``, ``check.transposed_inner``."""
from __future__ import annotations

import numba
import numpy as np

from labkit.check import (exercise, lanes_gate, mismatch, require_njit, rng, speed_gate,
                          vectorized_gate)

from . import AlignmentInputs, Scoring, align_scalar, make_inputs, reference, transpose_batch

__all__ = ["check_transpose", "check_transposed_inner"]


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


@exercise("transposed_inner", points=3, answers=_ALIGN_ANSWERS)
def check_transposed_inner(student):
    """student(seqs1T, seqs2T, scoring) gives exact Gotoh scores, is compiled by numba,
    vectorises across pairs in int16 lanes at the host's native width, and beats the scalar
    kernel by ≥ 5× on a 16×200 batch (a margin for AVX2 laptops and busy machines)."""
    g = rng()
    batches = _hidden_batches(g)
    for s1, s2, sc in batches:
        n = s1.shape[0]
        inp = AlignmentInputs(s1, s2, np.full(n, s1.shape[1], np.int64), np.full(n, s2.shape[1], np.int64), sc)
        got = student(transpose_batch(s1), transpose_batch(s2), sc)
        msg = mismatch(got, reference(inp), name="score")
        assert msg is None, f"{msg} ({n} pairs, lengths {s1.shape[1]} × {s2.shape[1]}, {sc})"
    seed = make_inputs({"pairs": 16, "length": 200}, seed=int(g.integers(1 << 30)))
    s1T, s2T = transpose_batch(seed.seqs1), transpose_batch(seed.seqs2)
    got = student(s1T, s2T, seed.scoring)
    msg = mismatch(got, align_scalar(seed.seqs1, seed.seqs2, seed.scoring), name="score")
    assert msg is None, f"{msg} (16 pairs × 200)"
    args = (s1T, s2T, seed.scoring)
    require_njit(student)
    vectorized_gate(student, args)
    lanes_gate(student, args, "int16",
               hint="numba widened the int16 arithmetic: cast each add/max back with np.int16(...)")
    speed_gate(student, align_scalar, (seed.seqs1, seed.seqs2, seed.scoring), need=5.0,
               vs="align_scalar", student_args=args)
    return f"exact on {len(batches) + 1} hidden batches"
