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

import numpy as np
from time import perf_counter as _wall
from time import process_time as _clock
from typing import Callable

from .framework import current, note, speed_enforced
from .guard import Guard, unwrap
from .result import CheckFailure
from . import inputs as _inputs
from labkit._common import mismatch as _mismatch

__all__ = ["speed_gate", "measure_ratio", "measure_anchored", "Measurement"]

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
    if isinstance(fn, _Student):
        return fn.time(loops)
    res = [None] * loops            # kept like the student's results: the same work per call
    t0 = _clock()
    for k in range(loops):
        res[k] = fn(*args)
    return (_clock() - t0) / loops


class _Student:
    """The student's side of a timing: its own copies of the inputs, the outputs refilled
    before every sample (outside the timed loop), and after every sample the inputs compared
    byte for byte with the check's pristine arrays and the result of every timed call (and
    the outputs' contents) with the result of a first, untimed call on pristine inputs. A
    kernel that keeps its result in its input to return it on the next call, or that answers
    differently when called again, fails (``wrong``) instead of looking fast."""

    def __init__(self, fn, pristine: tuple, outputs=(), names=None, bound=None,
                 against: str = "labkit's kernel"):
        self.fn, self.pristine, self.outputs = fn, tuple(pristine), tuple(outputs)
        self.names = names or _inputs.arg_names(fn, len(self.pristine))
        self.args = _inputs.hand_over(self.pristine, self.outputs)
        self.args = tuple(_inputs.own_copy(a) if i in self.outputs else a
                          for i, a in enumerate(self.args))
        self.fresh = {i: _inputs.own_copy(self.args[i]) for i in self.outputs
                      if i < len(self.args)}
        first = fn(*self.args)
        self._inputs_unchanged("its first call")
        self.expected = first.copy() if isinstance(first, np.ndarray) else _inputs.own_copy(first)
        self.expected_out = {i: _inputs.own_copy(self.args[i]) for i in self.fresh}
        if bound is not None:
            self._as_reference(bound, against)

    def _as_reference(self, bound, against: str) -> None:
        """The first call's result (and outputs) against ``bound`` = (result, {position: output
        array}) of the reference, computed on copies of the same inputs before the student ran.
        Every timed call is then compared with the first call: each timed result is checked
        against the reference. The tolerance (:data:`REFERENCE_RTOL`) is a summation order's,
        not a lesson's: the check's own cases judge the accuracy."""
        result, outs = bound
        where = "on the timing input (the arrays the speed rounds time)"
        if result is not None:
            msg = _close(self.expected, result, "result")
            if msg:
                raise CheckFailure("wrong", f"{where} your function returned another "
                                            f"result than {against}: {msg} — it must compute "
                                            "the same on every input")
        for i, v in outs.items():
            msg = _close(self.expected_out.get(i), v, self.names[i])
            if msg:
                raise CheckFailure("wrong", f"{where} your function left other values in "
                                            f"{self.names[i]} than {against}: {msg}")

    def __call__(self, *args):
        return self.fn(*self.args)

    def _inputs_unchanged(self, when: str) -> None:
        msg = _inputs.changed_input(self.pristine, self.args, self.outputs, self.names)
        if msg is not None:
            raise CheckFailure("wrong", f"{msg} (seen after {when} in the speed measurement)")

    def time(self, loops: int, clock=None) -> float:
        """Seconds per call over ``loops`` calls (``clock``: CPU time unless a check that
        times threads passes a wall clock); then the inputs and results are verified."""
        clock = clock or _clock
        fn, args = self.fn, self.args
        for i, v in self.fresh.items():          # outputs as the check handed them over
            _inputs.restore((v,), (args[i],))
        res = [None] * loops
        t0 = clock()
        for k in range(loops):
            res[k] = fn(*args)
        t = (clock() - t0) / loops
        self._inputs_unchanged("the timed calls")
        self._results_same(res)
        return t

    def _results_same(self, res: list) -> None:
        exp = self.expected
        for i, v in self.expected_out.items():
            msg = _same(self.args[i], v, self.names[i])
            if msg:
                raise CheckFailure("wrong", f"the timed calls left other values in "
                                            f"{self.names[i]} than the first call: {msg}")
        if res and isinstance(exp, (int, float, complex, np.number, np.bool_)):
            try:
                got = np.asarray(res)
            except Exception:  # noqa: BLE001 - mixed types: compared one by one below
                got = None
            if got is not None and got.dtype != object:
                msg = _same(got, np.full(got.shape, exp), "result")
                if msg:
                    raise CheckFailure("wrong", "a timed call returned another result than the "
                                                f"first call on the same inputs: {msg}")
                return
        seen = set()
        for r in res:
            if id(r) in seen:
                continue
            seen.add(id(r))
            msg = _same(r, exp, "result")
            if msg:
                raise CheckFailure("wrong", "a timed call returned another result than the "
                                            f"first call on the same inputs: {msg}")


def _same(got, exp, name: str) -> str | None:
    """``None`` when a timed call's result equals the first call's (to rounding: a parallel
    reduction may add in another order), else the difference."""
    if exp is None or got is None:
        return None if got is exp else f"{name} is {got!r}, the first call gave {exp!r}"
    if isinstance(exp, tuple):
        if not isinstance(got, tuple) or len(got) != len(exp):
            return f"{name} is a {type(got).__name__}, the first call gave a tuple"
        for k, (g, e) in enumerate(zip(got, exp)):
            msg = _same(g, e, f"{name}[{k}]")
            if msg:
                return msg
        return None
    if isinstance(got, np.ndarray) and isinstance(exp, np.ndarray) and \
            got.shape == exp.shape and got.dtype == exp.dtype and \
            np.array_equal(got, exp, equal_nan=exp.dtype.kind in "fc"):
        return None                 # the usual case, fast: the same values again
    try:
        e = np.asarray(exp)
        scale = float(np.max(np.abs(e))) if e.size and e.dtype.kind in "fc" else 1.0
        if not np.isfinite(scale):
            scale = 1.0
        return _mismatch(got, exp, name=name, rtol=1e-9, atol=1e-12 * scale)
    except Exception:  # noqa: BLE001 - an object numpy cannot compare
        return None if got == exp else f"{name} differs from the first call's"


#: A timed result must match the reference's on the same inputs to this relative tolerance (and
#: ``REFERENCE_RTOL × max(1, largest |value|)`` absolute): another summation order passes, a
#: result computed differently on the timing input (skipped rows, a constant) does not.
REFERENCE_RTOL = 1e-6


def _close(got, exp, name: str) -> str | None:
    """``None`` when ``got`` matches the reference's ``exp`` to :data:`REFERENCE_RTOL`."""
    if isinstance(exp, tuple):
        if not isinstance(got, tuple) or len(got) != len(exp):
            return f"{name} is a {type(got).__name__}, the reference returns a tuple of {len(exp)}"
        for k, (g, e) in enumerate(zip(got, exp)):
            msg = _close(g, e, f"{name}[{k}]")
            if msg:
                return msg
        return None
    try:
        e = np.asarray(exp)
        if e.dtype == object:
            return None         # not an array the reference can be compared as
        scale = float(np.max(np.abs(e))) if e.size and e.dtype.kind in "fc" else 1.0
        if not np.isfinite(scale):
            scale = 1.0
        return _mismatch(got, exp, name=name, rtol=REFERENCE_RTOL,
                         atol=REFERENCE_RTOL * max(1.0, scale))
    except Exception:  # noqa: BLE001 - an object numpy cannot compare: the check's cases judge it
        return None


def _loops_for(fn, args, min_time: float) -> int:
    if not isinstance(fn, _Student):
        fn(*args)                   # compile / warm caches (the student's first call was made)
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
    if not isinstance(student, _Student):
        student = _Student(student, sargs)
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


def measure_anchored(student: "_Student", answer: Callable, start: Callable, aargs, start_args,
                     rounds: int, loops: tuple, guard=None,
                     start_every: int = 1) -> list[tuple[float | None, float, float]]:
    """Per round ``(t_start, t_student, t_answer)`` in seconds per call, for a challenge's scale
    (:mod:`labkit.check.challenge`): the student and labkit's answer ABBA (answer, student,
    student, answer; each the best of its two samples) and one sample of the slow starting
    point — before them in even rounds, after them in odd ones, so a drift in machine speed
    does not favour either end; with ``start_every`` = k only in every k-th round (``None``
    in the others: the start is the slowest of the three by far). ``loops`` = (answer's,
    student's, start's) calls per sample. Only the student's samples run under ``guard``'s
    tracing (labkit's own calls would count as the student's otherwise); each is verified
    (:class:`_Student`) and the guard checked."""
    la, ls, l0 = loops

    def stud():
        if guard is None:
            return student.time(ls)
        with guard.tracing():
            t = student.time(ls)
        guard.verify()
        return t

    out = []
    for k in range(rounds):
        timed = k % max(1, int(start_every)) == 0
        t0 = _time(start, start_args, l0) if timed and k % 2 == 0 else None
        a1 = _time(answer, aargs, la)
        s1 = stud()
        s2 = stud()
        a2 = _time(answer, aargs, la)
        if timed and t0 is None:
            t0 = _time(start, start_args, l0)
        out.append((t0, _min(s1, s2), _min(a1, a2)))
    return out


#: When labkit's own answer misses a gate's target in the same rounds as the student (a loaded
#: or throttled machine, another CPU), the student passes at this share of the answer's speed.
ANSWER_SHARE = 0.85


def _r2(x: float) -> float:
    """``x`` as the messages print it (two decimals): words are chosen from printed numbers."""
    return float(f"{x:.2f}")


def _x(r: float) -> str:
    """A speed ratio as printed: two decimals ('0.96×', '1.30×'), whole numbers from 100×."""
    return f"{r:.0f}×" if r >= 100 else f"{r:.2f}×"


def _clears(x: float, need: float) -> bool:
    """``x ≥ need``, a ratio exactly at the target (to floating-point rounding) included."""
    return x >= need * (1 - 1e-9)


def _at(x: float, need: float) -> str:
    """``x`` to two decimals — to three or four when two would print it on the other side of
    ``need`` (1.197 beside a 1.2× target reads 1.197, not 1.20)."""
    for d in (2, 3, 4):
        txt = f"{x:.{d}f}"
        if _clears(float(txt), need) == _clears(x, need):
            return txt
    return txt


def _same_speed(ratio: float) -> bool:
    """A ratio whose printed value (0.95× … 1.04×) rounds to 1.0×: no direction word fits it."""
    return 0.95 <= _r2(ratio) < 1.05


def _faster(ratio: float, low: float) -> bool:
    """Faster than the baseline in the messages' words: a ratio not reading 1.0× whose
    interval's low end (as printed) is above 1×."""
    return ratio > 1 and not _same_speed(ratio) and _r2(low) > 1


def _verdict(ratio: float, need: float, low: float | None = None,
             high: float | None = None) -> str:
    """The verdict of a student below ``need``, from its ratio and interval (default: the
    ratio alone): ``slower`` only when the whole interval is below 1× and the ratio does not
    read 1.0×; ``no change`` when it is not told apart from the baseline (it reads 1.0×, or its
    interval reaches 1× with a ratio under 1.1×) and the target asks for a gain; else
    ``not fast enough``."""
    low = ratio if low is None else low
    high = ratio if high is None else high
    same = _same_speed(ratio)
    if _r2(high) < 1 and not same:
        return "slower"
    if need > 1.1 and (same or (_r2(low) <= 1 <= _r2(high) and ratio < 1.1)):
        return "no change"
    return "not fast enough"


def _describe(ratio: float, vs: str, low: float | None = None, high: float | None = None) -> str:
    """The student's speed beside ``vs`` in words that agree with the numbers printed: "faster"
    only for a ratio above 1.0× whose interval (``low``–``high``, default the ratio) lies above
    1×, "slower" only for one below 1.0× whose interval lies below 1× (the ratio shown, < 1); a
    ratio reading 1.0× is "the same speed"; otherwise the ratio and that these rounds do not
    tell the two apart."""
    low = ratio if low is None else low
    high = ratio if high is None else high
    if _same_speed(ratio):
        return f"the same speed as {vs} ({_x(ratio)})"
    if _faster(ratio, low):
        return f"{_x(ratio)} faster than {vs}"
    if ratio < 1 and _r2(high) < 1:
        return f"slower than {vs}: {_x(ratio)} its speed"
    return f"{_x(ratio)} the speed of {vs}, not told apart from it"


def _against_target(text: str, m: Measurement, need: float, rounds: str) -> str:
    """``text`` and where the interval lies beside ``need`` — never "below" for a median above
    it: 'below the target' only when the interval's high end is; a median above the target
    whose interval reaches below it says so."""
    iv = f"[{_at(m.low, need)}, {_at(m.high, need)}]× over {rounds}"
    if not _clears(m.high, need):
        return f"{text} (interval {iv}), below the {need:g}× target"
    if _clears(m.ratio, need):
        return f"{text} as a median, but its interval {iv} reaches below the {need:g}× target"
    return f"{text}: its interval {iv} straddles the {need:g}× target"


def speed_gate(student: Callable, reference: Callable, args, *, need: float,
               vs: str = "labkit's kernel", repeat: int = 9, min_time: float = 0.01,
               student_args=None, max_rounds: int = 35, answer: Callable | None = None,
               answer_args=None, outputs=None) -> float:
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
    ≥ ``ANSWER_SHARE`` of its speed — but only when the answer *and the student* beat
    ``reference`` in those rounds (each interval above 1×). An answer no faster than the
    baseline proves nothing about the technique (``inconclusive``, never ``passed``); a student
    at the answer's share but no faster than the baseline (an answer at 1.05× lets 0.9× through
    the share alone) is ``slower`` / ``no change`` when its whole interval is at or below 1×,
    ``inconclusive`` when it straddles 1×. An honest solution never loses points to the
    machine.

    The student is timed on its own copies of ``student_args`` (``outputs``: positions of the
    arrays it writes, default the exercise's ``outputs=``), refilled outside the timed loop;
    after every sample its inputs must still equal the check's byte for byte and every timed
    call's result the first call's (:class:`_Student`), else ``wrong``. When the student gets
    the reference's own arguments (no ``student_args``), the reference's result on copies of
    them is bound before the student's first call, and that first call (so every timed call)
    must match it (:data:`REFERENCE_RTOL`): a kernel that computes something else on the
    timing input is ``wrong``, not fast."""
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
    if outputs is None:
        outputs = getattr(guard, "outputs", None)
        ctx0 = current()
        if outputs is None and ctx0 is not None and ctx0.exercise is not None:
            outputs = getattr(ctx0.exercise, "outputs", ())
    outputs = tuple(outputs or ())
    t0 = _wall()
    # labkit's kernel compiled before any tracer is installed, on copies of the inputs: its
    # result (and outputs) bound before the student's first call
    ref_args = tuple(_inputs.own_copy(a) for a in args)
    ref_result = reference(*ref_args)
    bound = None
    if student_args is None:
        bound = (_inputs.own_copy(ref_result),
                 {i: ref_args[i] for i in outputs if i < len(ref_args)})
    enforce = speed_enforced()
    rounds = max(3, int(repeat)) if enforce else 3

    def guarded(fn, *a, **kw):       # the student's code runs only under the tracer
        if guard is None:
            return fn(*a, **kw)
        with guard.tracing():
            out = fn(*a, **kw)
        guard.verify()
        return out

    names = _inputs.arg_names(raw, len(sargs))
    timed = guarded(_Student, raw, sargs, outputs, names, bound, vs)   # first call: traced

    def measure(n, loops=None):
        return guarded(measure_ratio, timed, reference, args, student_args=sargs, rounds=n,
                       min_time=min_time, loops=loops)

    m, loops = measure(rounds)
    all_ratios = list(m.ratios)
    while enforce and not _clears(m.low, need) and _clears(m.high, need) and \
            len(all_ratios) < max_rounds:
        more, _ = measure(min(rounds, max_rounds - len(all_ratios)), loops)
        all_ratios += more.ratios
        m = Measurement(all_ratios)
    beside = None
    if enforce and answer is not None and not _clears(m.low, need):
        aargs = sargs if answer_args is None else answer_args
        loops3 = loops + (_loops_for(answer, aargs, min_time),)
        ms, ma = guarded(measure_beside, timed, answer, reference, args, sargs, aargs,
                         max(rounds, 9), loops3)
        all_ratios += ms.ratios
        m = Measurement(all_ratios)
        if not _clears(ma.low, need) and not _clears(m.low, need):   # nor does the answer
            beside = (ms.ratio / ma.ratio, ma)
    ratio = m.ratio
    ctx = current()
    if ctx is not None:
        ctx.details.update(speed_ratio=ratio, speed_need=need, speed_low=m.low,
                           speed_high=m.high, speed_rounds=len(all_ratios),
                           speed_seconds=round(_wall() - t0, 3))
        if beside is not None:
            ctx.details.update(speed_answer_ratio=beside[1].ratio, speed_share=beside[0])
    text = _describe(ratio, vs, m.low, m.high)
    rounds_said = f"{len(all_ratios)} interleaved rounds"
    interval = f"[{_at(m.low, need)}, {_at(m.high, need)}]× over {rounds_said}"
    if beside is not None:
        share, ma = beside
        head = _against_target(text, m, need, rounds_said)
        ans = (f"{_describe(ma.ratio, vs, ma.low, ma.high)}, interval "
               f"[{ma.low:.2f}, {ma.high:.2f}]×")
        answer_part = (f"labkit's own answer did not clear it either in the same rounds ({ans}: "
                       "this machine cannot show the whole effect right now, loaded or "
                       "throttled)")
        share_part = f"yours runs at {share:.0%} of the answer's speed"
        if share < ANSWER_SHARE:
            raise CheckFailure(_verdict(ratio, need, m.low, m.high),
                               f"{head} — {answer_part}: {share_part}, need ≥ "
                               f"{ANSWER_SHARE:.0%} of it")
        if not _faster(ma.ratio, ma.low):
            raise CheckFailure("inconclusive",
                               f"{head} — and labkit's own answer was not faster than {vs} "
                               f"beyond the noise in the same rounds ({ans}): here it cannot "
                               "show the technique's effect, so matching it proves nothing; run "
                               "the check again on a quieter machine")
        if _faster(ratio, m.low):
            note(f"{head} — but {answer_part}: {share_part}")
            return ratio
        # at the answer's share, but not shown faster than the baseline itself: a verdict
        # when its interval lies at or below 1× (or reads 1.0×), inconclusive when it straddles
        if not _r2(m.low) <= 1 < _r2(m.high):
            raise CheckFailure(_verdict(ratio, need, m.low, m.high),
                               f"{head} — {answer_part}; {share_part}, but matching the answer "
                               f"counts only for a kernel faster than {vs} itself, and yours "
                               "is not")
        raise CheckFailure("inconclusive",
                           f"{head} — {answer_part}; {share_part}, but your own interval "
                           f"reaches 1× {vs}: these rounds do not show yours faster than it, "
                           "and matching the answer counts only for a kernel that is; run the "
                           "check again on a quieter machine")
    if not enforce:
        if _clears(ratio, need):
            note(text)
        else:
            note(f"{text}, need ≥ {need:g}× — speed reported only (LABKIT_SPEED=report)")
        return ratio
    if _clears(m.low, need):
        note(text)
        return ratio
    if not _clears(m.high, need):
        raise CheckFailure(_verdict(ratio, need, m.low, m.high),
                           f"{text} (interval {interval}), need ≥ {need:g}×")
    raise CheckFailure("inconclusive",
                       f"{text}, interval {interval} straddles the {need:g}× threshold — the "
                       "machine is too noisy to decide; run the check again")
