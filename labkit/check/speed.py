"""Honest speed verdicts: interleaved repeats against labkit's kernel, a confidence interval
on the ratio, a bounded re-measurement when it straddles the threshold, then ``inconclusive``.

Each *round* times the reference, the student, the student, the reference (ABBA, so a drift in
machine speed cancels), each sample ``loops`` calls long (≥ ``min_time``); a round's ratio is
best-of-two reference / best-of-two student. The estimate is the median of the rounds' ratios
and its interval the distribution-free interval of the median (order statistics, ≈ 90 %).
The clock is the process's CPU time (``time.process_time``: time the scheduler gives another
process on a loaded machine does not count), bound when this module is imported — before any
student code runs in the worker.
"""
from __future__ import annotations

import math
from time import perf_counter as _wall
from time import process_time as _clock
from typing import Callable

from .framework import current, note, speed_enforced
from .guard import Guard, unwrap
from .result import CheckFailure

__all__ = ["speed_gate", "measure_ratio", "Measurement"]

_sorted = sorted
_min = min


class Measurement:
    def __init__(self, ratios: list[float]):
        self.ratios = _sorted(ratios)
        self.ratio = _median(self.ratios)
        self.low, self.high = _median_interval(self.ratios)

    def __repr__(self):
        return f"ratio {self.ratio:.2f} [{self.low:.2f}, {self.high:.2f}] over {len(self.ratios)}"


def _median(xs: list[float]) -> float:
    n = len(xs)
    return xs[n // 2] if n % 2 else 0.5 * (xs[n // 2 - 1] + xs[n // 2])


def _median_interval(xs: list[float], z: float = 1.645) -> tuple[float, float]:
    """Order-statistic interval of the median (≈ 90 % for z = 1.645), sorted ``xs``."""
    n = len(xs)
    if n < 3:
        return xs[0], xs[-1]
    half = z * math.sqrt(n) / 2
    lo = max(0, int(math.floor(n / 2 - half)))
    hi = min(n - 1, int(math.ceil(n / 2 + half)) - 1)
    return xs[lo], xs[hi]


def _time(fn, args, loops: int) -> float:
    t0 = _clock()
    for _ in range(loops):
        fn(*args)
    return (_clock() - t0) / loops


def _loops_for(fn, args, min_time: float) -> int:
    fn(*args)                       # compile / warm caches
    t = _time(fn, args, 1)
    if t <= 0:
        t = 1e-7
    loops = max(1, int(min_time / t))
    if loops > 1:                   # a second estimate: the first call may still be warming up
        t2 = _time(fn, args, min(loops, 1000))
        loops = max(1, int(min_time / max(t2, 1e-9)))
    return min(loops, 1_000_000)


def measure_ratio(student: Callable, reference: Callable, args, *, student_args=None,
                  rounds: int = 7, min_time: float = 0.01, loops=None) -> tuple[Measurement, tuple]:
    """Interleaved (ABBA) rounds: ratio = reference time / student time per round."""
    sargs = args if student_args is None else student_args
    if loops is None:
        loops = (_loops_for(reference, args, min_time), _loops_for(student, sargs, min_time))
    lr, ls = loops
    ratios = []
    for _ in range(rounds):
        r1 = _time(reference, args, lr)
        s1 = _time(student, sargs, ls)
        s2 = _time(student, sargs, ls)
        r2 = _time(reference, args, lr)
        ratios.append(_min(r1, r2) / max(_min(s1, s2), 1e-12))
    return Measurement(ratios), loops


def measure_beside(student: Callable, answer: Callable, reference: Callable, args, sargs, aargs,
                   rounds: int, loops: tuple) -> tuple[Measurement, Measurement]:
    """Student and labkit's answer in the same interleaved rounds (reference, student, answer,
    answer, student, reference): their ratios to the reference, each best-of-two per round."""
    lr, ls, la = loops
    rs, ra = [], []
    for _ in range(rounds):
        r1 = _time(reference, args, lr)
        s1 = _time(student, sargs, ls)
        a1 = _time(answer, aargs, la)
        a2 = _time(answer, aargs, la)
        s2 = _time(student, sargs, ls)
        r2 = _time(reference, args, lr)
        ref = _min(r1, r2)
        rs.append(ref / max(_min(s1, s2), 1e-12))
        ra.append(ref / max(_min(a1, a2), 1e-12))
    return Measurement(rs), Measurement(ra)


#: When labkit's own answer misses a gate's target in the same rounds as the student (a loaded
#: or throttled machine, another CPU), the student passes at this share of the answer's speed.
ANSWER_SHARE = 0.85


def _verdict(ratio: float, need: float) -> str:
    if ratio < 0.9:
        return "slower"
    if ratio < 1.1 and need > 1.1:
        return "no change"
    return "not fast enough"


def _describe(ratio: float, vs: str) -> str:
    return (f"{ratio:.1f}× faster than {vs}" if ratio >= 1
            else f"{1 / ratio:.1f}× slower than {vs}")


def speed_gate(student: Callable, reference: Callable, args, *, need: float,
               vs: str = "labkit's kernel", repeat: int = 9, min_time: float = 0.01,
               student_args=None, max_rounds: int = 35, answer: Callable | None = None,
               answer_args=None) -> float:
    """Time ``student`` against ``reference`` (same moment, interleaved) and require
    ``ratio ≥ need`` with confidence; returns the median ratio and notes it in the message.

    Passes when the interval's low end is ≥ ``need``, fails (``slower`` / ``no change`` /
    ``not fast enough``) when its high end is below, re-measures while it straddles (up to
    ``max_rounds`` rounds), then says ``inconclusive`` with the interval. Under
    ``LABKIT_SPEED=report`` the ratio is reported, never judged.

    ``answer``: labkit's own kernel for the exercise (called with ``answer_args``, default the
    student's arguments). A student below ``need`` is measured again beside it; when the
    answer itself does not clear ``need`` in those rounds (the machine is loaded, throttled or
    cannot show the whole effect), the student is judged against the answer instead: passed at
    ≥ ``ANSWER_SHARE`` of its speed. An honest solution never loses points to the machine."""
    guard = student if isinstance(student, Guard) else None
    raw = unwrap(student)
    from .proxy import is_proxy
    if is_proxy(raw):            # plain Python in a child process: its time is the pipe's
        raise CheckFailure("technique missing",
                           f"{raw.__name__} is not a numba function (no @njit): the check "
                           "times compiled code — decorate it with @njit")
    sargs = args if student_args is None else student_args
    if guard is not None:
        guard.snapshot.extend()
        guard.precompile(sargs)
    t0 = _wall()
    reference(*args)               # compile labkit's kernel before any tracer is installed
    enforce = speed_enforced()
    rounds = max(3, int(repeat)) if enforce else 3

    def guarded(fn, *a, **kw):       # the student's code runs only under the tracer
        if guard is None:
            return fn(*a, **kw)
        with guard.tracing():
            out = fn(*a, **kw)
        guard.verify()
        return out

    def measure(n, loops=None):
        return guarded(measure_ratio, raw, reference, args, student_args=sargs, rounds=n,
                       min_time=min_time, loops=loops)

    m, loops = measure(rounds)
    all_ratios = list(m.ratios)
    while enforce and m.low < need <= m.high and len(all_ratios) < max_rounds:
        more, _ = measure(min(rounds, max_rounds - len(all_ratios)), loops)
        all_ratios += more.ratios
        m = Measurement(all_ratios)
    beside = None
    if enforce and answer is not None and m.low < need:
        aargs = sargs if answer_args is None else answer_args
        loops3 = loops + (_loops_for(answer, aargs, min_time),)
        ms, ma = guarded(measure_beside, raw, answer, reference, args, sargs, aargs,
                         max(rounds, 9), loops3)
        all_ratios += ms.ratios
        m = Measurement(all_ratios)
        if ma.low < need and m.low < need:      # the answer does not clear the target either
            beside = (ms.ratio / ma.ratio, ma)
    ratio = m.ratio
    ctx = current()
    if ctx is not None:
        ctx.details.update(speed_ratio=ratio, speed_need=need, speed_low=m.low,
                           speed_high=m.high, speed_rounds=len(all_ratios),
                           speed_seconds=round(_wall() - t0, 3))
        if beside is not None:
            ctx.details.update(speed_answer_ratio=beside[1].ratio, speed_share=beside[0])
    text = _describe(ratio, vs)
    interval = f"[{m.low:.2f}, {m.high:.2f}]× over {len(all_ratios)} interleaved rounds"
    if beside is not None:
        share, ma = beside
        said = (f"{text} {interval}, below the {need:g}× target — but labkit's own answer "
                f"did not clear it either in the same rounds ({ma.ratio:.2f}×, interval "
                f"[{ma.low:.2f}, {ma.high:.2f}]: this machine cannot show the whole effect right "
                f"now, loaded or throttled): yours runs at {share:.0%} of the answer's speed")
        if share >= ANSWER_SHARE:
            note(said)
            return ratio
        raise CheckFailure(_verdict(ratio, need),
                           f"{said}, need ≥ {ANSWER_SHARE:.0%} of it")
    if not enforce:
        if ratio >= need:
            note(text)
        else:
            note(f"{text}, need ≥ {need:g}× — speed reported only (LABKIT_SPEED=report)")
        return ratio
    if m.low >= need:
        note(text)
        return ratio
    if m.high < need:
        raise CheckFailure(_verdict(ratio, need), f"{text} {interval}, need ≥ {need:g}×")
    raise CheckFailure("inconclusive",
                       f"{text}, interval {interval} straddles the {need:g}× threshold — the "
                       "machine is too noisy to decide; run the check again")
