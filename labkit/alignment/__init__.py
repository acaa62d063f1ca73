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
* ``align_shifted`` (``labkit.alignment.engine``) — ``align_batched`` with shifted scores (8
  vector operations per cell instead of 10), 64-lane tiles without run-time alias checks,
  compiled at the host's full vector width (``labkit.jit``);
* ``align_int8`` (``engine``, cells in ``_int8``) — what ``align`` runs: the same tiles on int8
  *differences* of the DP (Suzuki–Kasahara), which stay small whatever the lengths: 64 lanes per
  512-bit vector, 11 operations per cell; exact within ``fits_int8`` (a bound on the scoring
  only), else ``align`` keeps ``align_shifted``.

``align(seqs1, seqs2)`` is the friendly entry point: it validates, then the engine picks the kernel
and guards against int16 overflow. The package follows the lab template (``labkit.registry``):
``inputs`` (``SIZES``, ``Inputs``, ``make_inputs``, sequences → codes), ``reference`` (Gotoh in
numpy, parasail, ``validate``), ``kernels`` (the steps above), ``engine`` (what ``align`` runs; its
helpers ``_tiles``, ``_ragged``, ``_atomic``), ``bench`` (``run_benchmark``, ``TARGETS``, the
peers), ``checks`` (the exercise checks), ``challenge``; and two topics: ``scoring`` (alphabet,
codes, ``Scoring``, ``fits_int16``) and ``prose`` (the notebook's readings of its measurements).
"""
from __future__ import annotations

import importlib

import numpy as np

from labkit._common import positive_int

from . import engine
from .engine import (TILE, align_int8, align_int8_serial, align_shifted,  # noqa: F401
                     align_shifted_serial, fits_int8, fits_shifted)
from .inputs import SIZES, Inputs, _as_codes, make_inputs
from .kernels import (_scalar_pair, align_batched,  # _scalar_pair: the notebook inspects it
                      align_batched_serial, align_scalar, align_transposed,
                      align_transposed_promoted, transpose_batch, transpose_ragged)
from .reference import parasail_scores, reference, validate
from .scoring import ALPHABET, Scoring, _as_scoring, decode, encode, fits_int16

__all__ = [
    "ALPHABET", "Scoring", "SIZES", "Inputs", "encode", "decode", "make_inputs",
    "reference", "parasail_scores", "validate", "align", "fits_int16",
    "align_scalar", "align_transposed_promoted", "align_transposed", "transpose_batch",
    "transpose_ragged",
    "align_batched", "align_batched_serial", "align_shifted", "align_shifted_serial", "fits_shifted",
    "align_int8", "align_int8_serial", "fits_int8",
    "TARGETS", "run_benchmark", "cpu_compare", "throughput", "width_sweep", "thread_rounds",
]


_METHODS = ("auto", "transposed", "scalar")


def align(seqs1, seqs2, scoring=None, method: str = "auto", *, lanes: int = 64,
          threads: int | None = None) -> np.ndarray:
    """Global affine-gap alignment scores (int32), one per pair seqs1[p] × seqs2[p].

    ``seqs1``/``seqs2``: lists of str ("ACGTN", any case), lists of 1-D code arrays, or 2-D uint8
    code arrays (pairs = rows); lengths may differ. ``method``: "auto" (the batched int16 kernel;
    if the lengths/scores could overflow int16 it **widens automatically** to the int32 scalar
    kernel), "transposed" (the batched int16 kernel; raises ValueError if int16 could overflow),
    or "scalar". The batched kernel is ``align_int8`` (tiles of 64 pairs on int8 differences)
    where the scoring allows it (``fits_int8``) and the lengths ``fits_shifted``, else
    ``align_shifted`` (int16) within ``fits_shifted``, else ``align_batched``; all give the
    same scores. ``lanes``: pairs per batch of
    ``align_batched`` (the shifted kernel's tile is fixed); ``threads``: numba threads
    (default: all).
    """
    # 1. the scoring, the method and the batch width
    sc = _as_scoring(scoring)
    if method not in _METHODS:
        raise ValueError(f"method must be one of {_METHODS}, got {method!r}")
    lanes = positive_int(lanes, "lanes", hint="pairs per batch, e.g. 64")
    # 2. two lists of str or two code arrays: the engine reads them as they are (None: go on)
    if method != "scalar":
        out = engine.align_direct(seqs1, seqs2, sc, lanes, threads)
        if out is not None:
            return out
    # 3. any other input: coded and padded sequence by sequence, each one checked
    c1, l1 = _as_codes(seqs1, "seqs1")
    c2, l2 = _as_codes(seqs2, "seqs2")
    # 4. as many sequences on both sides
    if c1.shape[0] != c2.shape[0]:
        raise ValueError(f"seqs1 has {c1.shape[0]} sequences but seqs2 has {c2.shape[0]}; "
                         f"pairs are seqs1[p] with seqs2[p], so give the same number")
    # 5. the engine: the kernel that fits the lengths and the scores
    return engine.align_codes(c1, l1, c2, l2, sc, method, lanes, threads)


#: Names that live in submodules importing this package (imported on first use, so that
#: ``__init__`` → ``bench``/``checks`` → ``__init__`` is no module-level cycle).
_LAZY = {"run_benchmark": "bench", "TARGETS": "bench", "cpu_compare": "bench",
         "throughput": "bench", "thread_rounds": "bench", "width_sweep": "bench", "_seed_args": "bench", "_parasail_fn": "bench",
         "opal_fn": "bench", "gcups": "bench", "OPAL_MISSING": "bench", "roof": "bench",
         "int16_op_rate": "bench", "OPS_PER_CELL": "bench", "int8_op_rate": "bench",
         "OPS_PER_CELL_INT8": "bench", "tuner_reading": "prose",
         "batch_steps_reading": "prose", "column_kib": "prose"}


def __getattr__(name: str):
    """``run_benchmark``/``TARGETS`` and the peers (from ``.bench``) and the prose readings
    (``.prose``), lazily."""
    if name in _LAZY:
        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
