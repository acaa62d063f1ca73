"""Timing numba kernels honestly: JIT warm-up timed apart, autoscaled loops, interleaved repeats.

>>> res = compare({"scalar": f, "simd": g}, (a, b), work=len(a), unit="alignments")
>>> res            # HTML table in Jupyter; print(res) gives the text table
>>> res.ratio("simd")
4.8

Ratios are speedups (baseline median / variant median), shown as "4.8×", never as "speedup %".

The package knows no lab. Its timing core is :mod:`labkit.timing` (below this package and
:mod:`labkit.hardware`, which both time with it): ``formatting`` (numbers as text) and ``timer``
(clock, loops, :func:`timeit`, :func:`single_loop`), re-exported here. Its parts: ``results``
(:class:`BenchResult`, :class:`SweepResult` and their views), ``measure`` (:func:`compare`,
:func:`sweep`), ``load`` (is the host idle enough for a thread ratio: :func:`judge_threads`),
``claims`` (:func:`claim`: a direction word only
when the repeats separate), ``targets`` (:class:`Target` and its measures), ``uarch`` (measured
cycles per element beside OSACA's bound: ``compare(..., predict=...)``,
:meth:`BenchResult.with_predictions`, the per-lab line of ``labkit bench``),
``cli`` (``labkit bench``, which finds the labs through :mod:`labkit.registry`).
"""
from __future__ import annotations

from labkit.timing.formatting import (_SI, _sig3, format_ratio, format_si, format_throughput,
                                      format_time)
from labkit.timing.timer import (Timing, _autoscale, _check_positive, _clock, _first_call, _now,
                                 _resolve_args, _stats, _time_loops, is_jitted, single_loop,
                                 timeit)
from .results import BenchResult, SweepResult, _looks_geometric
from .measure import _normalise_functions, compare, sweep
from .targets import (NotJudged, Target, _format_target, _pick, _table, check_targets, ratio_of,
                      throughput_of)
from .load import idleness, judge_threads, measured_idle
from .claims import Claim, claim, load_note
from .cli import _as_results, lab_names, main

__all__ = [
    "compare", "BenchResult", "sweep", "SweepResult", "timeit", "Timing",
    "format_time", "format_si", "format_ratio", "format_throughput", "is_jitted", "single_loop",
    "main",
    "Target", "NotJudged", "ratio_of", "throughput_of", "check_targets", "claim", "Claim", "load_note",
]
