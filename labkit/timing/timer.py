"""Timing primitives: JIT warm-up timed apart, autoscaled loops with the garbage collector
paused, wall or CPU clock; :func:`timeit` and its :class:`Timing`; :func:`single_loop`."""
from __future__ import annotations

import contextlib
import gc
import html
import math
import os
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from .formatting import format_time

__all__ = ["is_jitted", "Timing", "timeit", "single_loop"]

_clock = time.perf_counter  # tests may not patch it; timings are never asserted
_SINGLE: list[bool] = []    # one entry per open single_loop() block


def is_jitted(fn: Any) -> bool:
    """True if fn is a numba dispatcher (its first call may compile)."""
    try:
        from numba.core.dispatcher import Dispatcher
    except Exception:  # pragma: no cover - numba is a hard dependency
        return False
    return isinstance(fn, Dispatcher)


def _check_positive(name: str, value: Any, *, integer: bool = False, allow_zero: bool = False) -> None:
    kind = "an int" if integer else "a number"
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) or (
        integer and not isinstance(value, (int, np.integer))
    ):
        raise TypeError(f"{name} must be {kind}, got {type(value).__name__} {value!r}")
    ok = value >= 0 if allow_zero else value > 0
    if not ok or not math.isfinite(float(value)):
        raise ValueError(f"{name} must be {'≥ 0' if allow_zero else '> 0'}, got {value!r}")


def _resolve_args(args: Any, what: str) -> tuple:
    """Turn args (tuple, None, or zero-argument callable returning a tuple) into a tuple."""
    if args is None:
        return ()
    if callable(args) and not isinstance(args, tuple):
        args = args()
        what = f"{what} (returned by the args callable)"
    if isinstance(args, list):
        args = tuple(args)
    if not isinstance(args, tuple):
        raise TypeError(
            f"{what} must be a tuple of arguments (each function is called f(*args)), got "
            f"{type(args).__name__}; wrap a single argument as (x,)"
        )
    return args


def _now(clock: str) -> Callable[[], float]:
    """The timer of a clock name: "wall" (elapsed), "cpu" (this process's CPU seconds, all
    threads) or "thread" (the calling thread's CPU seconds: a single-threaded kernel's own time,
    without what idle pool threads of the same process spend)."""
    if clock == "wall":
        return _clock
    return time.thread_time if clock == "thread" else time.process_time


def _time_loops(fn: Callable, args: tuple, loops: int, clock: str = "wall") -> float:
    """Seconds for `loops` back-to-back calls, garbage collector paused."""
    now = _now(clock)
    gc_was = gc.isenabled()
    gc.disable()
    try:
        t0 = now()
        for _ in range(loops):
            fn(*args)
        return now() - t0
    finally:
        if gc_was:
            gc.enable()


@contextlib.contextmanager
def single_loop():
    """Within the block every autoscaled repeat is one call: :func:`timeit`,
    ``labkit.bench.compare`` / ``sweep`` (and whatever else sizes its loops with them) call each
    function once per repeat instead of growing the loop to ``min_time``. For ``labkit warm``,
    which runs a lab's benchmark to get numba's compilation, not a measurement::

        with single_loop():
            lab.run_benchmark("small", repeat=1)

    ``LABKIT_TIMING=once`` in the environment does the same for a whole process and its children:
    the test suite sets it (conftest.py), where a notebook's timing cells prove that they run,
    not how fast — speed is measured by ``labkit bench`` and ``make test-load``.
    """
    _SINGLE.append(True)
    try:
        yield
    finally:
        _SINGLE.pop()


def _autoscale(fn: Callable, args: tuple, min_time: float, clock: str = "wall") -> int:
    """Number of loops so one repeat of `fn(*args)` lasts at least min_time seconds. Scaled from
    a second call, not the first: a first call that took long may have been JIT compilation —
    also inside a plain wrapper (a lambda or object calling a jitted kernel), which is_jitted
    cannot see. 1, without a call, inside :func:`single_loop` (or under ``LABKIT_TIMING=once``)."""
    if _SINGLE or os.environ.get("LABKIT_TIMING") == "once":
        return 1
    # A CPU clock can stay far below min_time while the calls wait (a sleep, a kernel whose
    # threads do the work under clock="thread"): the elapsed time of a repeat is capped too.
    wall_cap = max(_WALL_CAP, 10 * min_time)
    loops = 1
    t, wall = _time_loops_wall(fn, args, 1, clock)
    for _ in range(12):
        if t >= min_time or wall >= wall_cap:
            return loops
        per = max(t / loops, 1e-9)
        # aim 20 % above min_time; grow at most 100× per step so one slow outlier can't explode it
        target = min(int(math.ceil(min_time * 1.2 / per)), loops * 100)
        if wall > 0:
            target = min(target, int(loops * wall_cap / wall) + 1)
        loops = max(loops + 1, target)
        t, wall = _time_loops_wall(fn, args, loops, clock)
    return loops


#: Seconds of elapsed time from which :func:`_autoscale` stops growing a repeat (or 10 × min_time).
_WALL_CAP = 1.0


def _time_loops_wall(fn: Callable, args: tuple, loops: int, clock: str) -> tuple[float, float]:
    """:func:`_time_loops` on ``clock`` and the elapsed seconds of the same calls."""
    w0 = _clock()
    t = _time_loops(fn, args, loops, clock)
    return t, _clock() - w0


def _first_call(name: str, fn: Callable, args: tuple, validate: Callable | None,
                clock: str = "wall") -> float:
    """Time the first (JIT-compiling) call and validate its result."""
    now = _now(clock)
    t0 = now()
    out = fn(*args)
    compile_s = now() - t0
    if validate is not None:
        try:
            ok = validate(out)
        except AssertionError as e:
            raise AssertionError(f"{name}: {e}") from e
        if ok is False:
            raise AssertionError(f"{name}: validate(result) returned False")
    return compile_s


def _stats(times: Sequence[float]) -> tuple[float, float, float]:
    a = np.asarray(times, dtype=float)
    q1, med, q3 = np.percentile(a, [25, 50, 75])
    return float(med), float(q1), float(q3)


# --------------------------------------------------------------------------- timeit

@dataclass(frozen=True)
class Timing:
    """Timing of one function: compile (first call), median and quartiles per call, loops per repeat."""

    compile_s: float
    median_s: float
    q1_s: float
    q3_s: float
    loops: int
    times: tuple = field(default=(), repr=False, compare=False)

    @property
    def spread(self) -> float:
        """Interquartile range relative to the median (0.03 = 3 %)."""
        return (self.q3_s - self.q1_s) / self.median_s if self.median_s > 0 else float("nan")

    def __str__(self) -> str:
        """One line: '1.23 ms per call (spread 2.1 %, 5 × 163 loops; first call 0.41 s)'."""
        return (f"{format_time(self.median_s)} per call (spread {self.spread * 100:.1f} %, "
                f"{len(self.times)} × {self.loops} loops; first call {format_time(self.compile_s)})")

    def _repr_html_(self) -> str:
        """HTML rendering for Jupyter."""
        return f"<code>{html.escape(str(self))}</code>"


def timeit(f: Callable, *args: Any, repeat: int = 5, min_time: float = 0.2,
           clock: str = "wall") -> Timing:
    """Time f(*args): first call apart (compile), then `repeat` autoscaled repeats → Timing
    (``min(t.times)`` is the best repeat). ``clock``: "wall", "cpu" (process CPU seconds) or
    "thread" (this thread's CPU seconds, for single-threaded code on a shared machine)."""
    if not callable(f):
        raise TypeError(f"timeit needs a callable, got {type(f).__name__}")
    _check_positive("repeat", repeat, integer=True)
    _check_positive("min_time", min_time, allow_zero=True)
    if clock not in ("wall", "cpu", "thread"):
        raise ValueError(f"clock must be 'wall', 'cpu' or 'thread', got {clock!r}")
    compile_s = _first_call(getattr(f, "__name__", "f"), f, args, None, clock)
    loops = _autoscale(f, args, min_time, clock)
    times = tuple(_time_loops(f, args, loops, clock) / loops for _ in range(repeat))
    med, q1, q3 = _stats(times)
    return Timing(compile_s, med, q1, q3, loops, times)
