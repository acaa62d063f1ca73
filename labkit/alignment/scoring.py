"""The alphabet and the scores of lab 01: ``ALPHABET``, ``encode``/``decode`` (letters ↔ uint8
codes 0..4), ``Scoring`` (four int16 scores) and ``fits_int16`` (the overflow bound the int16
kernels rely on)."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from labkit._common import is_int

__all__ = ["ALPHABET", "Scoring", "fits_int16", "encode", "decode"]

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
            if not is_int(v):
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
