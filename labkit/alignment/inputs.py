"""Lab 01's inputs: the sizes, the ``Inputs`` batch, ``make_inputs``, and what ``align`` accepts
as sequences turned into codes (``_as_codes``) or raw letters (``_letters``)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from labkit._common import int_array
from labkit._sizes import resolve_size

from .scoring import ALPHABET, Scoring, decode, encode

__all__ = ["SIZES", "Inputs", "make_inputs"]

SIZES = {
    "small": {"pairs": 64, "length": 100},
    "seed": {"pairs": 16, "length": 200},
    "large": {"pairs": 4096, "length": 200},
}


@dataclass(frozen=True)
class Inputs:
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


def make_inputs(size="small", seed: int = 0) -> Inputs:
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
    return Inputs(s1, s2, l1, l2, Scoring())


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
            s = int_array(s, f"{which}[{p}]", ndim=1, shape_hint="codes 0..4")
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


def _letters(seqs):
    """(raw letters as uint8, int64 spans: sequence p = raw[spans[p, 0]:][:spans[p, 1]]) of a
    list/tuple of str, or None (not all str, empty list, an empty sequence, a letter beyond
    ASCII: the general path handles and reports those)."""
    if not isinstance(seqs, (list, tuple)) or not seqs:
        return None
    n = len(seqs)
    first = seqs[0]
    for s in seqs:
        if type(s) is not str:
            return None
    spans = np.empty((n, 2), np.int64)
    if seqs[-1] == first and seqs.count(first) == n:  # one query against many targets
        if not first:
            return None
        spans[:, 0] = 0
        spans[:, 1] = len(first)
        return np.frombuffer(first.encode("latin-1", errors="replace"), np.uint8), spans
    lens = np.fromiter(map(len, seqs), np.int64, count=n)
    if lens.min() == 0:
        return None
    spans[:, 1] = lens
    top = int(lens.max())
    if top * n <= 2 * int(lens.sum()):                # little padding: one C-level pass to rows
        try:
            raw = np.array(seqs, dtype=f"S{top}").view(np.uint8)
        except UnicodeEncodeError:
            return None
        raw.flags.writeable = False      # read-only as frombuffer's below: one kernel signature
        spans[:, 0] = np.arange(0, n * top, top)
    else:
        raw = np.frombuffer("".join(seqs).encode("latin-1", errors="replace"), np.uint8)
        spans[0, 0] = 0
        np.cumsum(lens[:-1], out=spans[1:, 0])
    return raw, spans
