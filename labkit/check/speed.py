"""Honest speed verdicts: interleaved repeats against labkit's kernel, a confidence interval
on the ratio, a bounded re-measurement when it straddles the threshold, then ``inconclusive``.

Each *round* times the reference, the student, the student, the reference (ABBA, so a drift in
machine speed cancels), each sample ``loops`` calls long (≥ ``min_time``); a round's ratio is
best-of-two reference / best-of-two student. The estimate is the median of the rounds' ratios
and its interval the distribution-free interval of the median (order statistics, ≈ 90 %).
The clock is the process's CPU time (``time.process_time``: time the scheduler gives another
process on a loaded machine does not count), bound when this module is imported — before any
student code runs in the worker.

:func:`speed_gate` is a pipeline of named steps: the student's numba function and its guard,
the reference's result bound, the first (traced) call, the rounds until the interval decides,
the rounds beside labkit's answer, then the verdict (:mod:`labkit.check.verdicts`). The ratios'
statistics and words are :mod:`labkit.check.ratios`'; whether a timed result agrees with the
first call's and the reference's is :mod:`labkit.check.agree`'s.
"""
from __future__ import annotations

from time import perf_counter as _wall
from time import process_time as _clock
from typing import Callable

import numpy as np

from .framework import current, speed_enforced
from .guard import Guard, unwrap
from .result import CheckFailure
from . import inputs as _inputs
# re-exported: checks, the challenge and the tests read these from here
from .agree import REFERENCE_RTOL, _close, _same  # noqa: F401
from .ratios import (Measurement, _against_target, _at, _clears, _describe,  # noqa: F401
                     _faster, _median, _median_interval, _r2, _same_speed, _verdict, _x)
from .verdicts import ANSWER_SHARE, _judge, _judge_beside_answer  # noqa: F401

__all__ = ["speed_gate", "measure_ratio", "measure_anchored", "Measurement"]

_min = min


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
    guard, raw = _compiled_student(student)
    sargs = args if student_args is None else student_args
    _warm_guard(guard, sargs)
    outputs = _outputs_of(guard, outputs)
    t0 = _wall()
    bound = _bind_reference(reference, args, outputs, bind=student_args is None)
    enforce = speed_enforced()
    rounds = max(3, int(repeat)) if enforce else 3
    timed = _guarded(guard, _Student, raw, sargs, outputs,                  # first call: traced
                     _inputs.arg_names(raw, len(sargs)), bound, vs)
    run = _Rounds(guard, timed, reference, args, sargs, min_time)
    m, loops = run.until_decided(need, rounds, max_rounds, enforce)
    beside = None
    if enforce and answer is not None and not _clears(m.low, need):
        aargs = sargs if answer_args is None else answer_args
        m, beside = run.beside(m, loops, answer, aargs, need, rounds)
    _record(m, need, beside, t0)
    if beside is not None:
        return _judge_beside_answer(m, need, vs, *beside)
    return _judge(m, need, vs, enforce)


def _compiled_student(student) -> tuple[Guard | None, Callable]:
    """(the guard or None, the student's own function); ``technique missing`` for plain Python
    run in a child process (its time would be the pipe's)."""
    guard = student if isinstance(student, Guard) else None
    raw = unwrap(student)
    from .proxy import is_proxy
    if is_proxy(raw):
        raise CheckFailure("technique missing",
                           f"{raw.__name__} is not a numba function (no @njit): the check "
                           "times compiled code — decorate it with @njit")
    return guard, raw


def _warm_guard(guard: Guard | None, sargs) -> None:
    """The guard's snapshot extended to the modules loaded since, and the student's numba
    typing for ``sargs`` compiled and read with labkit's answers untouched."""
    if guard is not None:
        guard.snapshot.extend()
        guard.precompile(sargs)


def _outputs_of(guard: Guard | None, outputs) -> tuple:
    """The positions of the arrays the student writes: ``outputs``, else the function's own
    ``outputs`` attribute, else the running exercise's ``outputs=``."""
    if outputs is None:
        outputs = getattr(guard, "outputs", None)
        ctx0 = current()
        if outputs is None and ctx0 is not None and ctx0.exercise is not None:
            outputs = getattr(ctx0.exercise, "outputs", ())
    return tuple(outputs or ())


def _bind_reference(reference: Callable, args, outputs: tuple, bind: bool):
    """labkit's kernel run (so compiled) before any tracer is installed, on copies of the
    inputs; with ``bind``, its result and outputs — ``(result, {position: array})`` — for the
    student's first call to match (:meth:`_Student._as_reference`), else None."""
    ref_args = tuple(_inputs.own_copy(a) for a in args)
    ref_result = reference(*ref_args)
    if not bind:
        return None
    return (_inputs.own_copy(ref_result),
            {i: ref_args[i] for i in outputs if i < len(ref_args)})


def _guarded(guard: Guard | None, fn, *a, **kw):
    """``fn(*a, **kw)`` with the student's code under the guard's tracing, the guard verified
    after it."""
    if guard is None:
        return fn(*a, **kw)
    with guard.tracing():
        out = fn(*a, **kw)
    guard.verify()
    return out


class _Rounds:
    """The student's timed side beside the reference in interleaved rounds, every measurement
    under the guard (:func:`_guarded`)."""

    def __init__(self, guard: Guard | None, timed: _Student, reference: Callable, args, sargs,
                 min_time: float):
        self.guard, self.timed, self.reference = guard, timed, reference
        self.args, self.sargs, self.min_time = args, sargs, min_time

    def ratio(self, n: int, loops=None) -> tuple[Measurement, tuple]:
        """``n`` ABBA rounds against the reference (:func:`measure_ratio`)."""
        return _guarded(self.guard, measure_ratio, self.timed, self.reference, self.args,
                        student_args=self.sargs, rounds=n, min_time=self.min_time, loops=loops)

    def until_decided(self, need: float, rounds: int, max_rounds: int,
                      enforce: bool) -> tuple[Measurement, tuple]:
        """``rounds`` rounds, then (enforced) more while the interval straddles ``need``, up to
        ``max_rounds`` in all; (the measurement, the loops per sample)."""
        m, loops = self.ratio(rounds)
        while enforce and not _clears(m.low, need) and _clears(m.high, need) and \
                len(m.ratios) < max_rounds:
            more, _ = self.ratio(min(rounds, max_rounds - len(m.ratios)), loops)
            m = Measurement(m.ratios + more.ratios)
        return m, loops

    def beside(self, m: Measurement, loops: tuple, answer: Callable, aargs, need: float,
               rounds: int) -> tuple[Measurement, tuple | None]:
        """The student measured again beside labkit's ``answer`` (:func:`measure_beside`): the
        measurement of all its rounds, and ``(share of the answer's speed, the answer's
        measurement)`` when neither the answer nor the student clears ``need`` (else None)."""
        loops3 = loops + (_loops_for(answer, aargs, self.min_time),)
        ms, ma = _guarded(self.guard, measure_beside, self.timed, answer, self.reference,
                          self.args, self.sargs, aargs, max(rounds, 9), loops3)
        m = Measurement(m.ratios + ms.ratios)
        if not _clears(ma.low, need) and not _clears(m.low, need):   # nor does the answer
            return m, (ms.ratio / ma.ratio, ma)
        return m, None


def _record(m: Measurement, need: float, beside, t0: float) -> None:
    """The measurement in the running check's ``details`` (and the answer's, when judged
    beside it)."""
    ctx = current()
    if ctx is not None:
        ctx.details.update(speed_ratio=m.ratio, speed_need=need, speed_low=m.low,
                           speed_high=m.high, speed_rounds=len(m.ratios),
                           speed_seconds=round(_wall() - t0, 3))
        if beside is not None:
            ctx.details.update(speed_answer_ratio=beside[1].ratio, speed_share=beside[0])
