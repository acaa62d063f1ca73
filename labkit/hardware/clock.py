"""The core clock, measured: a chain of dependent integer operations of known latency.

``x = (x + a) ^ b`` repeated n times is one chain of 2·n single-cycle integer operations (an add
and an xor each take one cycle on every x86-64 and AArch64 core of the last decade, and the
chain cannot be vectorised, reassociated or computed in closed form). The loop counter runs in
parallel with the chain, so the time per iteration is two cycles: clock = 2·n / seconds.

Seconds are the thread's CPU time (``time.thread_time``), not wall time: on a machine shared with
other jobs the wall clock also counts the moments another process held the core (measured:
docs/bench-hosts.md, 'Roofs in CPU time'). The best of
several repeats is reported, so this is the frequency the core ran at while busy — turbo
included, which is what a kernel's latency reasoning needs.
"""
from __future__ import annotations

import functools

from labkit._common import positive_int

from .roof import _best_seconds


__all__ = ["measure_clock", "CHAIN_OPS_PER_ITERATION"]

#: single-cycle dependent operations per iteration of the chain kernel (one add, one xor)
CHAIN_OPS_PER_ITERATION = 2


def _chain(n, a, b):
    x = a
    for _ in range(n):
        x = (x + a) ^ b
    return x


@functools.lru_cache(maxsize=None)
def _kernel():
    from numba import njit

    import labkit.jit  # noqa: F401 - numba's cache key holds labkit's sources (labkit.jit)
    return njit(cache=True)(_chain)


def measure_clock(iterations: int = 20_000_000, repeat: int = 5) -> float:
    """The core clock in Hz while it runs one dependent chain of integer add + xor
    (best of ``repeat`` timed repeats). Typically within a few per cent of the turbo clock."""
    n = positive_int(iterations, "iterations", hint="chain length per call")
    repeat = positive_int(repeat, "repeat")
    a, b = 0x9E3779B97F4A7C15 >> 2, 0x5BD1E995
    # the roofs' best-of timer, in thread CPU time; one call per repeat (min_time 0)
    seconds = _best_seconds(_kernel(), (n, a, b), repeat, 0.0)
    return CHAIN_OPS_PER_ITERATION * n / seconds
