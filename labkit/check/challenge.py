"""Open challenges: a make-it-fast problem graded on a scale between two anchors.

Each lab ends with one (``labkit/<lab>/challenge.py``, registered with ``@exercise`` like any
check): the seed's whole task from the lab's natural input, a correct but slow **starting
point** (0 points) and labkit's own kernel (full points). :func:`judge` grades a student's
function in two stages:

1. **Correctness** on hidden inputs built fresh by the check (edge cases included), against the
   lab's independent reference bound before the student's call; the student gets copies
   (:mod:`labkit.check.inputs`), a changed input is ``wrong``.
2. **Speed**, in one process, on one timing input: the starting point, the student and labkit's
   kernel interleaved in rounds after a warm-up (:func:`labkit.check.speed.measure_anchored`:
   labkit / student ABBA, the start once per round, before or after them), every timed result
   of the student verified and its inputs compared byte for byte after every sample
   (:class:`labkit.check.speed._Student`). Process CPU time; numba runs **one thread** for all
   three (the grader runs notebooks side by side: threads would measure the neighbours).

Per round the student's **position** on a log scale between the anchors::

    p = log(t_start / t_student) / log(t_start / t_labkit)

0 = the starting point's speed, 1 = labkit's kernel's, above 1 = faster than labkit's kernel.
The tier comes from the median of the rounds' positions and its order-statistic interval
(≈ 90 %, as :func:`~labkit.check.speed.speed_gate`): ¼ of the points from p ≥ 0.2, ½ from
0.4, ¾ from 0.55, all from :data:`FULL_AT` (0.7). While the interval straddles a tier boundary the
rounds go on (up to :data:`MAX_ROUNDS`); one that still straddles gets the **lower** tier and
the message says so. ``inconclusive`` — never a guessed tier — when the machine is too busy to
tell: labkit's kernel not at least :data:`MIN_SCALE` × faster than the start in the same rounds
(the lower end of that ratio's interval), or the position's interval spanning two or more tier
boundaries. The grader re-runs inconclusive checks alone after its batch, and once a challenge
given the lower tier on a straddle, keeping the better of the two measurements
(:func:`labkit.grade.run.straddled`).

A passed challenge earns its tier's share of the points (:func:`labkit.check.framework.award`:
``CheckResult.points`` is fractional, the verdict ``passed``); below ¼ the verdict is
``not fast enough`` (``no change`` / ``slower`` beside the starting point). Under
``LABKIT_SPEED=report`` (tests, CI, nbval) the speed is measured in three rounds and reported,
not judged: a correct function gets the full points.

``details["challenge"]`` carries the leaderboard's data and the feedback: the ratio to labkit's
kernel (median and interval), to the start, the scale, the position and tier, the hot loop's
vector width and lanes, the threads used, the share of the lab's roof where it has one cheaply,
and the student's speed beside a few of the lab's step kernels (best of three, bounded time).
docs/challenges.md has the rules, the scoring and how to add a challenge.

The scale and the tiers are :mod:`labkit.check.scale`'s, the feedback facts
:mod:`labkit.check.facts`', the notebook's feedback cell :mod:`labkit.check.feedback`'s (all
importable from here); this module defines a challenge, grades it and words the verdict.
"""
from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass, field
from time import perf_counter as _wall
from typing import Any, Callable

import numpy as np

from . import inputs as _inputs
from . import speed as _speed
from .facts import STEP_BUDGET_S, STEP_CALL_S, _facts, _first_call, library_gate  # noqa: F401
from .facts import loop_facts  # noqa: F401 - re-exported
from .feedback import Feedback, feedback, feedback_text  # noqa: F401 - re-exported
from .framework import award, current, rng, speed_enforced
from .guard import Guard, is_dispatcher, unwrap
from .result import CheckFailure
from .scale import (FULL_AT, MIN_SCALE, TIERS, Placement, _boundary_name, _share,  # noqa: F401
                    describe_tier, place, position, tier_of)

__all__ = ["Challenge", "judge", "TIERS", "FULL_AT", "MIN_SCALE", "tier_of", "position",
           "Placement", "place", "describe_tier", "is_start", "feedback", "Feedback"]

#: Rounds measured first (enforced), and the bound while the position straddles a boundary
#: (the start is sampled in every other one of the extra rounds).
ROUNDS = 7
MAX_ROUNDS = 15
#: Rounds under ``LABKIT_SPEED=report``.
REPORT_ROUNDS = 3


# ---------------------------------------------------------------- a lab's challenge
@dataclass
class Challenge:
    """One lab's challenge (see docs/challenges.md, "Adding a challenge").

    ``start`` and ``labkit`` take the student's arguments and return what the student returns
    (``labkit`` may wrap the lab's entry point: it is labkit's own code, run outside the
    student's tracing). ``timing_input(rng)`` → the arguments the rounds time (fresh per check;
    sized so one labkit call takes ~5–50 ms); ``cases(rng)`` → ``[(label, args), …]`` hidden
    inputs, edge cases included; ``reference(*args)`` → the lab's independent reference's
    answer; ``compare(got, expected)`` → a mismatch message or None; ``outputs``: positions of
    arguments the function fills (their contents are the result, read by ``result(args,
    returned)``; ``labkit_result`` reads labkit's, when it returns arrays of its own instead).
    ``steps``: ``{name: callable(*args)}`` step kernels of the lab timed beside the student
    (feedback only). ``roof(seconds_per_call, args)`` → ``(share, text)`` or None.
    ``hot_dtype``: the element type the lab's hot loop should run on (lanes are counted for
    it). ``library``: a regex of symbols in the compiled code that mean a library does the work
    (lab 03: BLAS) — ``technique missing`` when the student's code calls one."""

    name: str
    start: Callable
    labkit: Callable
    timing_input: Callable[[np.random.Generator], tuple]
    cases: Callable[[np.random.Generator], list]
    reference: Callable
    compare: Callable[[Any, Any], str | None]
    outputs: tuple = ()
    result: Callable[[tuple, Any], Any] | None = None
    labkit_result: Callable[[tuple, Any], Any] | None = None
    steps: dict = field(default_factory=dict)
    roof: Callable[[float, tuple], tuple | None] | None = None
    hot_dtype: str = "double"
    library: str | None = None
    rules: str = ""
    tiers: tuple = TIERS
    rounds: int = ROUNDS
    max_rounds: int = MAX_ROUNDS
    min_time: float = 0.02

    def result_of(self, args: tuple, returned):
        """The student's (and the start's) result: what it returned, or read from ``args``."""
        return returned if self.result is None else self.result(args, returned)

    def labkit_result_of(self, args: tuple, returned):
        """labkit's kernel's result (``labkit_result``, default as the student's)."""
        if self.labkit_result is not None:
            return self.labkit_result(args, returned)
        return self.result_of(args, returned)


@contextlib.contextmanager
def one_thread():
    """numba's thread count set to 1 for the duration (restored after)."""
    try:
        import numba
        before = numba.get_num_threads()
    except Exception:  # noqa: BLE001 - numba missing: nothing to set
        yield
        return
    numba.set_num_threads(1)
    try:
        yield
    finally:
        numba.set_num_threads(before)


def _require_timed(student) -> None:
    from .proxy import is_proxy
    raw = unwrap(student)
    if is_proxy(raw):
        raise CheckFailure("technique missing",
                           f"{raw.__name__} is not a numba function (no @njit): the challenge "
                           "times your function as a whole — decorate it with @njit and do the "
                           "glue (allocation, sorting, conversions) inside it with numpy")


def _correct(student, ch: Challenge, g: np.random.Generator) -> int:
    """Every hidden case against the reference bound before the student's call; ``wrong`` on
    the first mismatch. Returns the number of cases."""
    cases = ch.cases(g)
    for label, args in cases:
        expected = ch.reference(*tuple(_inputs.own_copy(a) for a in args))
        returned = student(*args)           # the guard hands over copies, checks the inputs
        got = ch.result_of(args, returned)
        msg = ch.compare(got, expected)
        if msg:
            raise AssertionError(f"{label}: {msg}")
    return len(cases)


def _definition(fn) -> str | None:
    """The AST of ``fn``'s ``def`` (decorators left out; no comments, blank lines or line
    numbers), or None when its source cannot be read."""
    import ast
    import inspect
    import textwrap
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError, IndentationError):
        return None
    node = tree.body[0] if tree.body else None
    if not isinstance(node, ast.FunctionDef):
        return None
    node.decorator_list = []
    return ast.dump(node)


def _global(fn, name: str):
    g = getattr(fn, "__globals__", {})
    if name in g:
        return g[name]
    import builtins
    return getattr(builtins, name, _MISSING)


_MISSING = object()


def is_start(fn, start) -> bool:
    """True when ``fn`` is ``start`` unchanged: two numba dispatchers of the same ``def`` (its
    syntax tree: comments, blank lines and where it was written aside), compiled with the same
    options (``cache`` aside), whose global names are the same objects. A changed docstring,
    variable or option is a change (timed as any other function)."""
    if not (is_dispatcher(fn) and is_dispatcher(start)):
        return False
    a, b = getattr(fn, "py_func", None), getattr(start, "py_func", None)
    if a is None or b is None:
        return False
    if a is b:
        return True
    opts = lambda d: {k: v for k, v in dict(getattr(d, "targetoptions", {})).items()  # noqa: E731
                      if k != "cache"}
    if opts(fn) != opts(start):
        return False
    mine = _definition(a)
    if mine is None or mine != _definition(b):
        return False
    for name in a.__code__.co_names:
        x, y = _global(a, name), _global(b, name)
        if x is not y and not (getattr(x, "__name__", 1) == getattr(y, "__name__", 2)
                               and type(x).__name__ == type(y).__name__ == "module"):
            return False
    return True


def _loops(fn, args, min_time: float) -> int:
    return _speed._loops_for(fn, args, min_time)


def judge(student, ch: Challenge) -> str:
    """Grade ``student`` on ``ch``: correctness, then its tier (see the module's docstring).
    Returns the message of a passed check (its share set with :func:`award`); raises
    :class:`CheckFailure` / ``AssertionError`` otherwise. The starting point as the student copy
    gives it (:func:`is_start`) is ``no change`` at once, in every mode: nothing to time (and
    ``LABKIT_SPEED=report``, which gives a correct function the points, gives it none)."""
    _require_timed(student)
    if is_start(unwrap(student), ch.start):
        ctx = current()
        if ctx is not None:
            ctx.details["challenge"] = {"unchanged": True, "judged": speed_enforced()}
        raise CheckFailure("no change", "this is the starting point as the notebook gives it "
                                        "(the same code and @njit options): 0 points — make it "
                                        "faster (the challenge's rules say what is allowed; the "
                                        "lab's sections are the steps)")
    t_begin = _wall()
    g = rng()
    with one_thread():
        n_cases = _correct(student, ch, g)
        return _timed(student, ch, g, n_cases, t_begin)


def _timed(student, ch: Challenge, g, n_cases: int, t_begin: float) -> str:
    guard = student if isinstance(student, Guard) else None
    raw = unwrap(student)
    args = ch.timing_input(g)
    outputs = tuple(ch.outputs)
    # labkit's kernel and the start on their own copies, compiled and warm before the student
    largs = tuple(_inputs.own_copy(a) for a in args)
    sargs0 = tuple(_inputs.own_copy(a) for a in args)
    bound = ch.labkit_result_of(largs, ch.labkit(*largs))
    bound = _inputs.own_copy(bound)
    if guard is not None:
        guard.snapshot.extend()
        guard.precompile(args)
    names = _inputs.arg_names(raw, len(args))

    def traced(fn, *a):
        if guard is None:
            return fn(*a)
        with guard.tracing():
            out = fn(*a)
        guard.verify()
        return out

    timed = traced(_speed._Student, raw, args, outputs, names)
    after = tuple(timed.expected_out.get(i, a) for i, a in enumerate(timed.args))
    msg = ch.compare(ch.result_of(after, timed.expected), bound)
    if msg:
        raise CheckFailure("wrong", f"on the timing input your function's result differs from "
                                    f"labkit's kernel's: {msg} — it must compute the same on "
                                    "every input")
    if ch.library:
        library_gate(raw, args, ch.library)
    enforce = speed_enforced()
    t_start_call = _first_call(ch.start, sargs0)
    loops = (_loops(ch.labkit, largs, ch.min_time), _loops(timed, args, ch.min_time), 1)
    n = ch.rounds if enforce else REPORT_ROUNDS
    times = _speed.measure_anchored(timed, ch.labkit, ch.start, largs, sargs0, n, loops, guard)
    pl = place(times, ch.tiers)
    while enforce and pl.decided and pl.straddles and len(times) < ch.max_rounds:
        # more rounds, the start in every other one: its scale is settled, the student beside
        # labkit's kernel is what decides a straddling position
        times += _speed.measure_anchored(timed, ch.labkit, ch.start, largs, sargs0,
                                         min(ch.rounds, ch.max_rounds - len(times)), loops,
                                         guard, start_every=2)
        pl = place(times, ch.tiers)
    facts = _facts(raw, args, ch, pl, times, timed, enforce, guard)
    facts.update(cases=n_cases, seconds=round(_wall() - t_begin, 2),
                 start_call_s=round(t_start_call, 4))
    ctx = current()
    if ctx is not None:
        ctx.details["challenge"] = facts
    return _verdict(ch, pl, facts, enforce)


# ---------------------------------------------------------------- the verdict
def _f(x: float, d: int = 2) -> str:
    """``x`` to ``d`` decimals, never '-0.00'."""
    text = f"{x:.{d}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def _iv(m: _speed.Measurement, d: int = 2) -> str:
    return f"[{_f(m.low, d)}, {_f(m.high, d)}]"


def _speed_words(pl: Placement) -> str:
    """The student beside both anchors, in words that agree with the numbers."""
    lab = _speed._describe(pl.vs_labkit.ratio, "labkit's kernel", pl.vs_labkit.low,
                           pl.vs_labkit.high)
    st = _speed._describe(pl.vs_start.ratio, "the starting point", pl.vs_start.low,
                          pl.vs_start.high)
    return f"{st}, {lab} (interval {_iv(pl.vs_labkit)}×)"


def _verdict(ch: Challenge, pl: Placement, facts: dict, enforce: bool) -> str:
    tiers = ch.tiers
    where = (f"position {_f(pl.position.ratio)} on the log scale from the starting point (0) to "
             f"labkit's kernel (1), interval {_iv(pl.position)} over {pl.rounds} interleaved "
             "rounds")
    feedback = _feedback_words(facts)
    if not enforce:
        k = pl.tier
        award(1.0)
        said = "no tier" if k == 0 else f"tier {describe_tier(k, tiers)}"
        if pl.decided and pl.straddles and k < len(tiers):   # three rounds: say how unsettled
            said += f" (its interval reaches {describe_tier(k + 1, tiers)})"
        return (f"correct on {facts['cases']} hidden inputs; {where}: {said} on this run — "
                f"speed reported only "
                f"(LABKIT_SPEED=report); {_speed_words(pl)}{feedback}")
    if not pl.decided:
        raise CheckFailure("inconclusive",
                           f"correct on {facts['cases']} hidden inputs, but this run cannot "
                           f"place your kernel: {pl.why} — the machine is too busy; run the "
                           f"check again on a quieter machine ({where})")
    k = pl.tier
    fast = _speed._faster(pl.vs_labkit.ratio, pl.vs_labkit.low)
    head = "faster than labkit's kernel! " if fast else ""
    straddle = ""
    if pl.straddles:
        straddle = (f" — its interval straddles the {_boundary_name(k + 1, tiers)} boundary, so "
                    f"the lower tier is given; a quieter run may earn "
                    f"{describe_tier(k + 1, tiers)}")
    nxt = ""
    if k < len(tiers) and not pl.straddles:
        nxt = f"; {describe_tier(k + 1, tiers)} from {tiers[k][0]:g}"
    if k == 0:
        need = math.exp(tiers[0][0] * math.log(max(pl.scale.ratio, 1.0 + 1e-9)))
        verdict = _speed._verdict(pl.vs_start.ratio, need, pl.vs_start.low, pl.vs_start.high)
        raise CheckFailure(verdict, f"correct on {facts['cases']} hidden inputs, but no tier "
                                    f"yet: {where}{straddle}{nxt} — {_speed_words(pl)}"
                                    f"{feedback}")
    award(_share(k, tiers))
    return (f"{head}tier {describe_tier(k, tiers)} ({_share(k, tiers):.0%} of the points): "
            f"{where}{straddle}{nxt} — {_speed_words(pl)}{feedback}; correct on "
            f"{facts['cases']} hidden inputs")


def _feedback_words(facts: dict) -> str:
    parts = []
    v = facts.get("vector_bits")
    if v:
        lanes = facts.get("lanes")
        parts.append(f"hot loop {v}-bit vectors" + (f", {lanes} {facts.get('lane_type')} lanes"
                                                    if lanes else ""))
    elif v == 0:
        parts.append("hot loop scalar (no vector instructions)")
    roof = facts.get("roof_share")
    if roof is not None:
        parts.append(f"{roof:.0%} of {facts.get('roof', 'the roof')}")
    th = facts.get("threads")
    if th:
        parts.append(f"{th} thread")
    return ("; " + ", ".join(parts)) if parts else ""
