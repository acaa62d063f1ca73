"""The timing core: a function's time per call (first call apart, autoscaled loops, garbage
collector paused, wall or CPU clock) and measured numbers as text.

It sits below both :mod:`labkit.hardware` (its roofs and core clock are timed with
:func:`timeit`) and :mod:`labkit.bench` (``compare``, ``sweep``, its reports), and imports no
other part of labkit. Its parts: ``timer`` (:func:`timeit`, :class:`Timing`, the loop
primitives, :func:`single_loop`) and ``formatting`` (durations, SI prefixes, throughputs,
ratios). ``labkit.bench`` re-exports the public names; notebooks use them from there.
"""
from __future__ import annotations

from .formatting import format_ratio, format_si, format_throughput, format_time
from .timer import Timing, is_jitted, single_loop, timeit

__all__ = ["timeit", "Timing", "is_jitted", "single_loop", "format_time", "format_si",
           "format_throughput", "format_ratio"]
