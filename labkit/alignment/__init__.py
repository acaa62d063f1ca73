"""Lab 01 — sequence alignment: transpose the batch so the compiler vectorises across pairs.

Global alignment with affine gaps (Gotoh), score only, after the perf-ninja lab
"vectorization_1" (R. Rahn; ``../shared/seeds/002_757dbbfc2fa729e1.txt``): 16 pairs of 200-long
sequences over a 5-letter alphabet, match 6, mismatch −4, gap open −11, gap extension −1, 16-bit
scores. A gap of length k costs ``gap_open + (k - 1) * gap_extend`` (parasail's ``nw`` convention
with open=11, extend=1).

The steps, one kernel each (``labkit.alignment.kernels``):

* ``align_scalar`` — one pair at a time (the seed's starting point);
* ``align_transposed_promoted`` — the batch transposed to length × count so the innermost loop
  runs across pairs; but numba promotes int16 arithmetic to int64, so it vectorises over only
  8 lanes (``vpmaxsq``);
* ``align_transposed`` — the same loop with every intermediate kept int16: 32 lanes per zmm
  register (``vpaddw``/``vpmaxsw``);
* ``align_batched`` — batches of any size and any lengths (padding + reading each score at its
  own cell), four DP columns per sweep, threads over batches (``prange``);
* ``align_shifted`` (``labkit.alignment.fast``) — what ``align`` runs: ``align_batched`` with
  shifted scores (8 vector operations per cell instead of 10), 64-lane tiles without run-time
  alias checks, compiled at the host's full vector width (``labkit.jit``).

``align(seqs1, seqs2)`` is the friendly entry point: it validates, picks the kernel and guards
against int16 overflow. The package: ``scoring`` (alphabet, codes, ``Scoring``, ``fits_int16``),
``kernels``, ``bench`` (``run_benchmark``, ``TARGETS``), ``checks`` (the exercise checks).
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass

import numba
import numpy as np

from labkit._common import int_array, positive_int, raise_mismatch, use_threads
from labkit._sizes import resolve_size

from .scoring import _LOOKUP, ALPHABET, Scoring, _as_scoring, decode, encode, fits_int16

__all__ = [
    "ALPHABET", "Scoring", "SIZES", "Inputs", "encode", "decode", "make_inputs",
    "reference", "parasail_scores", "validate", "align", "fits_int16",
    "align_scalar", "align_transposed_promoted", "align_transposed", "transpose_batch",
    "transpose_ragged",
    "align_batched", "align_batched_serial", "align_shifted", "align_shifted_serial", "fits_shifted",
    "TARGETS", "run_benchmark", "cpu_compare", "throughput", "width_sweep", "thread_rounds",
]


# ---------------------------------------------------------------------------- inputs
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


def reference(inputs: Inputs) -> np.ndarray:
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


def parasail_scores(inputs: Inputs) -> np.ndarray:
    """Scores from parasail ``nw_scan_16`` (an independent library; needs ``parasail``)."""
    import parasail

    mt, mm, go, ge = _as_scoring(inputs.scoring).ints()
    matrix = parasail.matrix_create(ALPHABET, mt, mm)
    s1, s2 = inputs.strings()
    return np.array([parasail.nw_scan_16(a, b, -go, -ge, matrix).score for a, b in zip(s1, s2)],
                    dtype=np.int32)


def validate(result, expected) -> None:
    """Raise AssertionError naming the first differing pairs (``score[3] = 12, expected 14``)."""
    raise_mismatch(result, np.asarray(expected), name="score")


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


def align(seqs1, seqs2, scoring=None, method: str = "auto", *, lanes: int = 64,
          threads: int | None = None) -> np.ndarray:
    """Global affine-gap alignment scores (int32), one per pair seqs1[p] × seqs2[p].

    ``seqs1``/``seqs2``: lists of str ("ACGTN", any case), lists of 1-D code arrays, or 2-D uint8
    code arrays (pairs = rows); lengths may differ. ``method``: "auto" (the batched int16 kernel;
    if the lengths/scores could overflow int16 it **widens automatically** to the int32 scalar
    kernel), "transposed" (the batched int16 kernel; raises ValueError if int16 could overflow),
    or "scalar". The int16 kernel is ``align_shifted`` (tiles of 64 pairs) while its shifted
    values fit (``fits_shifted``), else ``align_batched``. ``lanes``: pairs per batch of
    ``align_batched`` (the shifted kernel's tile is fixed); ``threads``: numba threads
    (default: all).
    """
    sc = _as_scoring(scoring)
    if method not in _METHODS:
        raise ValueError(f"method must be one of {_METHODS}, got {method!r}")
    lanes = positive_int(lanes, "lanes", hint="pairs per batch, e.g. 64")
    if method != "scalar":
        fast = _align_letters(seqs1, seqs2, sc, lanes, threads, method)
        if fast is None:
            fast = _align_arrays(seqs1, seqs2, sc, threads)
        if fast is not None:
            return fast
    c1, l1 = _as_codes(seqs1, "seqs1")
    c2, l2 = _as_codes(seqs2, "seqs2")
    if c1.shape[0] != c2.shape[0]:
        raise ValueError(f"seqs1 has {c1.shape[0]} sequences but seqs2 has {c2.shape[0]}; "
                         f"pairs are seqs1[p] with seqs2[p], so give the same number")
    n = c1.shape[0]
    if n == 0:
        return np.zeros(0, np.int32)
    with use_threads(threads):
        if method == "scalar":
            return _align_scalar_lens(c1, l1, c2, l2, sc)
        many = numba.get_num_threads() > 1
        if fits_shifted(int(l1.max()), int(l2.max()), sc):
            kernel = align_shifted if many and n > TILE else align_shifted_serial
            extra = ()
        elif fits_int16(int(l1.max()), int(l2.max()), sc):
            width = max(32, (lanes + 31) // 32 * 32)
            kernel = align_batched if many and n > width else align_batched_serial
            extra = (lanes,)
        elif method == "transposed":
            raise ValueError(f"sequences up to {int(l1.max())} × {int(l2.max())} with {sc} can "
                             f"overflow int16 scores; use method='auto' (widens to int32) "
                             f"or method='scalar'")
        else:
            return _align_scalar_lens(c1, l1, c2, l2, sc)
        if (l1 == l1[0]).all() and (l2 == l2[0]).all():
            return kernel(c1, l1, c2, l2, sc, *extra)
        order = np.lexsort((l1, l2))             # similar lengths share a batch: less padding
        res = kernel(np.ascontiguousarray(c1[order]), l1[order],
                     np.ascontiguousarray(c2[order]), l2[order], sc, *extra)
        out = np.empty(n, np.int32)
        out[order] = res
        return out


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
        spans[:, 0] = np.arange(0, n * top, top)
    else:
        raw = np.frombuffer("".join(seqs).encode("latin-1", errors="replace"), np.uint8)
        spans[0, 0] = 0
        np.cumsum(lens[:-1], out=spans[1:, 0])
    return raw, spans


def _align_letters(seqs1, seqs2, sc, lanes, threads, method):
    """``align`` on two lists of str in one pass per batch (letters → codes → transposed batch
    → scores, ``kernels._align_ragged_*``): no padded code arrays. None when the input is not
    two non-empty lists of str of the same size, a letter is outside the alphabet, or int16
    could overflow (the general path then validates, reports or widens)."""
    a, b = _letters(seqs1), _letters(seqs2)
    if a is None or b is None or a[1].shape[0] != b[1].shape[0]:
        return None
    (raw1, sp1), (raw2, sp2) = a, b
    l1, l2 = sp1[:, 1], sp2[:, 1]
    if not fits_int16(int(l1.max()), int(l2.max()), sc):
        return None
    n = l1.size
    width = max(32, (lanes + 31) // 32 * 32)
    equal = l1.min() == l1.max() and l2.min() == l2.max()
    order = np.arange(n, dtype=np.int64) if equal else np.lexsort((l1, l2)).astype(np.int64)
    out = np.empty(n, np.int32)
    with use_threads(threads):
        many = numba.get_num_threads() > 1
        if fits_shifted(int(l1.max()), int(l2.max()), sc):
            kernel = _align_spans_parallel if many and n > TILE else _align_spans_serial
            bad = -1 if not kernel(raw1, sp1, raw2, sp2, order, True, sc, out) else 0
        else:
            kernel = _align_ragged_parallel if many and n > width else _align_ragged_serial
            bad = kernel(raw1, sp1, raw2, sp2, order, _LOOKUP, sc, width, out)
    return out if bad == -1 else None


def _align_arrays(seqs1, seqs2, sc, threads):
    """``align`` on two 2-D uint8 code arrays with as many rows, within ``fits_shifted``: one
    kernel call (``fast._align_codes``) that checks the codes tile by tile on the tiles'
    threads, where ``_as_codes`` reads all of them first on one thread. None for any other
    input or if a code is above 4 (the general path then validates and reports)."""
    if not (type(seqs1) is np.ndarray and type(seqs2) is np.ndarray and seqs1.ndim == 2
            and seqs2.ndim == 2 and seqs1.dtype == np.uint8 and seqs2.dtype == np.uint8):
        return None
    (n, len1), (n2, len2) = seqs1.shape, seqs2.shape
    if n != n2 or n == 0 or len1 == 0 or len2 == 0 or not fits_shifted(len1, len2, sc):
        return None
    out = np.empty(n, np.int32)
    with use_threads(threads) as t:
        bad = _align_codes(np.ascontiguousarray(seqs1), np.ascontiguousarray(seqs2), sc,
                           t > 1 and n > TILE, out)
    return None if bad else out


# ---------------------------------------------------------------------------- kernels (re-exported)
from .kernels import (_align_ragged_parallel, _align_ragged_serial,  # noqa: E402
                      _align_scalar_lens, _scalar_pair, align_batched, align_batched_serial,
                      align_scalar, align_transposed, align_transposed_promoted, transpose_batch,
                      transpose_ragged)
from .fast import (TILE, _align_codes, _align_spans_parallel, _align_spans_serial,  # noqa: E402
                   align_shifted, align_shifted_serial, fits_shifted)

#: Names that live in submodules importing this package (imported on first use, so that
#: ``__init__`` → ``bench``/``checks`` → ``__init__`` is no module-level cycle).
_LAZY = {"run_benchmark": "bench", "TARGETS": "bench", "cpu_compare": "bench",
         "throughput": "bench", "thread_rounds": "bench", "width_sweep": "bench", "_seed_args": "bench", "_parasail_fn": "bench",
         "opal_fn": "bench", "gcups": "bench", "OPAL_MISSING": "bench", "roof": "bench",
         "int16_op_rate": "bench", "OPS_PER_CELL": "bench", "tuner_reading": "prose",
         "batch_steps_reading": "prose", "column_kib": "prose"}


def __getattr__(name: str):
    """``run_benchmark``/``TARGETS`` and the peers (from ``.bench``) and the prose readings
    (``.prose``), lazily."""
    if name in _LAZY:
        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
