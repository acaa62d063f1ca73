"""Lesson 00 — how to measure and how to look: small kernels that each differ in one idea.

Kernels come in pairs that differ in one idea each:

* ``add_arrays`` — element-wise, vectorises at full width (the easy case);
* ``sum_plain`` / ``sum_fastmath`` — a float reduction, which LLVM may only vectorise when it is
  allowed to reorder the additions;
* ``prefix_sum`` — a recurrence (each step needs the previous one): never vectorises;
* ``colsum_naive`` / ``colsum_rows`` — the same sums with the loops swapped: strided and
  reduction-bound versus contiguous and independent across columns (exercise ``colsum``);
* ``dot_plain`` / ``dot_partials`` — one accumulator (latency-bound) versus eight
  independent ones (exercise ``dot_partials``);
* ``loop_report`` — OSACA's report of a kernel's hot loop (port pressure, loop-carried chain,
  elements per iteration) without the bound: exercise ``loop_bound`` reads it.

The lab follows the template of ``labkit.registry``: ``inputs`` (``SIZES``, ``Inputs``,
``make_inputs``), ``reference`` (column sums by numpy, ``validate``), ``kernels`` (the pairs above),
``engine`` (the kernel the entry point runs: ``colsum_rows``), ``bench`` (``run_benchmark``,
``TARGETS``, the widget's ``stream_add``) and ``checks`` (the exercise checks). This module is the
public face: the entry point ``colsum(a)`` (validates, runs the engine) and the names above.
"""
from __future__ import annotations

import importlib

import numpy as np

from labkit.inspect.loopreport import LoopReport, loop_report

from . import engine
from .inputs import SIZES, Inputs, make_inputs
from .kernels import (add_arrays, add_arrays_repeat, colsum_naive, colsum_rows, dot_fastmath,
                      dot_partials, dot_plain, prefix_sum, softsign_checked, softsign_numpy_errors,
                      sum_fastmath, sum_plain)
from .reference import colsum_reference, reference, softsign_reference, validate

__all__ = [
    "SIZES", "Inputs", "make_inputs", "reference", "validate", "colsum",
    "add_arrays", "sum_plain", "sum_fastmath", "prefix_sum",
    "colsum_naive", "colsum_rows", "dot_plain", "dot_partials", "colsum_reference",
    "add_arrays_repeat", "dot_fastmath", "softsign_checked", "softsign_numpy_errors",
    "softsign_reference", "stream_add", "run_benchmark", "TARGETS", "loop_report", "LoopReport",
]


def colsum(a) -> np.ndarray:
    """Column sums of a 2-D real array with the fast (row-walking, vectorised) kernel."""
    arr = np.asarray(a)
    # 1. a matrix
    if arr.ndim != 2:
        raise ValueError(f"a must be a 2-D array (rows × cols), got shape {arr.shape}")
    # 2. of real numbers
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"a must hold real numbers, got dtype {arr.dtype}")
    # 3. the engine, on C-contiguous float64 rows
    out = engine.colsum_rows(np.ascontiguousarray(arr, dtype=np.float64))
    # 4. a NaN or inf in a column makes its sum NaN or inf: test the m sums, not the n × m inputs
    # (a second pass over a would cost more than the sums themselves)
    if arr.dtype.kind == "f" and not np.isfinite(out).all() and not np.isfinite(arr).all():
        raise ValueError("a contains NaN or inf; column sums would be NaN/inf")
    return out


#: Names that live in ``bench`` (which imports this package): imported on first use.
_LAZY = {"run_benchmark": "bench", "TARGETS": "bench", "stream_add": "bench"}


def __getattr__(name):
    if name in _LAZY:
        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'labkit.lesson00' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
