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
boundaries. The grader re-runs inconclusive checks alone after its batch.

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
"""
from __future__ import annotations

import contextlib
import math
import re
from dataclasses import dataclass, field
from time import perf_counter as _wall
from typing import Any, Callable

import numpy as np

from . import inputs as _inputs
from . import speed as _speed
from .framework import award, current, rng, speed_enforced
from .guard import Guard, is_dispatcher, unwrap
from .result import CheckFailure

__all__ = ["Challenge", "judge", "TIERS", "FULL_AT", "MIN_SCALE", "tier_of", "position",
           "Placement", "place", "describe_tier", "is_start", "feedback", "Feedback"]

#: Position from which the full points are earned. Not 1: labkit's kernels use what a plain
#: ``@njit`` cannot (``labkit.jit``'s ``noalias`` and full-width vectors, LLVM intrinsics —
#: lab 01's own tile kernel compiled as plain numba runs well below its speed —, numpy's C glue
#: around the kernel, lab 04's χ² bound), so an honest re-implementation of the lab's
#: technique in the student's own numba code lands at 0.75–1.05 on a busy machine (each
#: lab's reference solution is tested to earn the full points; docs/challenges.md has these
#: figures and lists where each one lands).
FULL_AT = 0.7
#: (position, share of the points), lowest first.
TIERS = ((0.2, 0.25), (0.4, 0.5), (0.55, 0.75), (FULL_AT, 1.0))
#: labkit's kernel must beat the starting point by at least this factor (the lower end of the
#: ratio's interval) in the same rounds, or the scale is unresolved: ``inconclusive``.
MIN_SCALE = 2.0
#: Rounds measured first (enforced), and the bound while the position straddles a boundary
#: (the start is sampled in every other one of the extra rounds).
ROUNDS = 7
MAX_ROUNDS = 15
#: Rounds under ``LABKIT_SPEED=report``.
REPORT_ROUNDS = 3
#: Seconds of CPU a step kernel may take per call to be timed beside the student, and the
#: budget of the whole step comparison.
STEP_CALL_S = 0.5
STEP_BUDGET_S = 3.0

_NAMES = {0.25: "¼", 0.5: "½", 0.75: "¾", 1.0: "full"}


# ---------------------------------------------------------------- the scale
def position(t_start: float, t_student: float, t_labkit: float) -> float:
    """``log(t_start / t_student) / log(t_start / t_labkit)``: 0 at the starting point's speed,
    1 at labkit's kernel's; NaN when labkit's kernel is not faster than the start."""
    if not (t_start > 0 and t_student > 0 and t_labkit > 0) or t_start <= t_labkit:
        return math.nan
    return math.log(t_start / t_student) / math.log(t_start / t_labkit)


def tier_of(p: float, tiers=TIERS) -> int:
    """How many tier boundaries ``p`` has reached (0 … len(tiers)); exactly at a boundary counts
    (to floating-point rounding)."""
    n = 0
    for at, _ in tiers:
        if p >= at * (1 - 1e-9):
            n += 1
    return n


def _share(k: int, tiers=TIERS) -> float:
    return 0.0 if k <= 0 else tiers[k - 1][1]


def describe_tier(k: int, tiers=TIERS) -> str:
    """'¾', 'full', 'no' (tier 0)."""
    return "no" if k <= 0 else _NAMES.get(tiers[k - 1][1], f"{tiers[k - 1][1]:g}")


def _boundary_name(k: int, tiers=TIERS) -> str:
    """The boundary into tier ``k`` (1-based): '¾ (0.75)'."""
    at, share = tiers[k - 1]
    return f"{_NAMES.get(share, f'{share:g}')} ({at:g})"


@dataclass
class Placement:
    """The outcome of the rounds: the position's, the student's and the scale's statistics."""

    position: _speed.Measurement      # p per round
    vs_labkit: _speed.Measurement     # t_labkit / t_student per round (> 1: faster than labkit)
    vs_start: _speed.Measurement      # t_start / t_student
    scale: _speed.Measurement         # t_start / t_labkit
    rounds: int
    tier: int                         # the tier given (the lower one when the interval straddles)
    tier_high: int                    # the tier of the interval's upper end
    decided: bool                     # False: inconclusive
    why: str = ""                     # why not decided

    @property
    def straddles(self) -> bool:
        return self.decided and self.tier_high > self.tier


def place(times: list[tuple], tiers=TIERS, min_scale: float = MIN_SCALE) -> Placement:
    """The :class:`Placement` of per-round ``(t_start, t_student, t_labkit)`` times; a round
    without a sample of the start (``None``) takes the previous round's for its position."""
    filled, last = [], None
    for t0, ts, tl in times:
        last = t0 if t0 is not None else last
        if last is not None:
            filled.append((last, ts, tl))
    sampled = [t for t in times if t[0] is not None] or filled
    scale = _speed.Measurement([t0 / max(tl, 1e-12) for t0, _, tl in sampled])
    vs_labkit = _speed.Measurement([tl / max(ts, 1e-12) for _, ts, tl in times])
    vs_start = _speed.Measurement([t0 / max(ts, 1e-12) for t0, ts, _ in sampled])
    ps = [p for p in (position(*t) for t in filled) if not math.isnan(p)]
    pm = _speed.Measurement(ps or [0.0])
    lo, hi = tier_of(pm.low, tiers), tier_of(pm.high, tiers)
    why = ""
    if scale.low < min_scale or len(ps) < max(3, (len(times) + 1) // 2):
        why = (f"labkit's kernel was not clearly faster than the starting point in the same "
               f"rounds ({scale.ratio:.1f}× its speed, interval [{scale.low:.1f}, "
               f"{scale.high:.1f}]×, need ≥ {min_scale:g}× at its low end)")
    elif hi - lo >= 2:
        why = (f"the position's interval [{pm.low:.2f}, {pm.high:.2f}] spans "
               f"{hi - lo} tier boundaries")
    return Placement(pm, vs_labkit, vs_start, scale, len(times), lo, hi, not why, why)


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


def _first_call(fn, args) -> float:
    t0 = _speed._clock()
    fn(*args)
    return _speed._clock() - t0


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


def library_gate(fn, args, pattern: str) -> None:
    """``technique missing`` when ``fn``'s compiled code for ``args`` (its whole module: helpers
    too) calls a symbol matching ``pattern`` — a library doing the work (BLAS's ``xxgemm``)."""
    if not is_dispatcher(fn):
        return
    import numba

    from labkit.inspect.ir import llvm_ir
    sig = tuple(numba.typeof(a) for a in args)
    if sig not in fn.overloads:
        return
    calls = re.findall(r"call [^@\n]*@\"?([\w.$]+)", llvm_ir(fn, sig, full=True))
    hit = next((c for c in calls if re.search(pattern, c)), None)
    if hit is not None:
        raise CheckFailure("technique missing",
                           f"your compiled code calls {hit}: a library does the work (a matrix "
                           "product through BLAS) — the challenge is to write it yourself")


# ---------------------------------------------------------------- feedback facts
_VEC = re.compile(r"<(\d+) x (i8|i16|i32|i64|float|double)>")
_BITS = {"i8": 8, "i16": 16, "i32": 32, "i64": 64, "float": 32, "double": 64}
_NP_TYPE = {"i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64", "float": "float32",
            "double": "float64"}


_OP = re.compile(r"= (?:(?:add|sub|mul|shl|lshr|ashr|and|or|xor|icmp|select|fadd|fsub|fmul|"
                 r"fdiv|fneg|fcmp)\b|(?:tail )?call [^@]*@llvm\.(?:[su]?(?:max|min)|fma|fmuladd|"
                 r"ctpop))")


def _ops(lines) -> int:
    return sum(1 for ln in lines if _OP.search(ln))


def loop_facts(fn, args, dtype: str | None = None) -> dict:
    """The hot loop of ``fn``'s compiled code for ``args`` (its whole module: the student's
    helpers too): ``vector_bits`` (widest vector in it, 0 if scalar), ``lanes`` and
    ``lane_type`` (elements per vector of ``dtype``, else of the widest element type in it).
    The compiled code is read as it is (not the executed-block probe the gates use: these are
    feedback, not a verdict). Empty when ``fn`` is no numba function or the IR cannot be read."""
    if not is_dispatcher(fn):
        return {}
    try:
        import numba

        from labkit.inspect import loops as _loops
        from labkit.inspect.ir import llvm_ir
        sig = tuple(numba.typeof(a) for a in args)
        if sig not in fn.overloads:
            return {}
        text = llvm_ir(fn, sig, full=True)
        inner = [lp for lp in _loops.loops(text) if lp.inner]
    except Exception:  # noqa: BLE001 - feedback only
        return {}
    if not inner:
        return {"vector_bits": 0}
    # among the innermost loops with at least half the arithmetic of the busiest one (a DP or
    # dot-product body, not a vectorised fill loop beside it), the one with the most vector
    # code (a vector body, not its scalar twin: LLVM's fallback when its alias check fails)
    top = max(_ops(x.lines) for x in inner)
    lp = max((x for x in inner if 2 * _ops(x.lines) >= top),
             key=lambda x: (_loops.vector_count(x.lines), _ops(x.lines)))
    found = [(int(n), t) for ln in lp.lines for n, t in _VEC.findall(ln.split("=", 1)[-1])]
    if not found:
        return {"vector_bits": 0}
    bits = max(n * _BITS[t] for n, t in found)
    want = [n for n, t in found if t == dtype] if dtype else []
    if want:
        return {"vector_bits": bits, "lanes": max(want), "lane_type": _NP_TYPE[dtype]}
    n, t = max(found, key=lambda x: (x[0] * _BITS[x[1]], x[0]))
    return {"vector_bits": bits, "lanes": n, "lane_type": _NP_TYPE[t]}


def _facts(raw, args, ch: Challenge, pl: Placement, times, timed, enforce: bool,
           guard) -> dict:
    """``details["challenge"]``: the leaderboard's numbers and the feedback."""
    r3 = lambda x: round(float(x), 3)  # noqa: E731
    facts: dict = {
        "ratio": r3(pl.vs_labkit.ratio), "ratio_low": r3(pl.vs_labkit.low),
        "ratio_high": r3(pl.vs_labkit.high),
        "vs_start": r3(pl.vs_start.ratio), "vs_start_low": r3(pl.vs_start.low),
        "vs_start_high": r3(pl.vs_start.high),
        "scale": r3(pl.scale.ratio), "scale_low": r3(pl.scale.low),
        "scale_high": r3(pl.scale.high),
        "position": r3(pl.position.ratio), "position_low": r3(pl.position.low),
        "position_high": r3(pl.position.high),
        "tier": _share(pl.tier, ch.tiers) if pl.decided else None,
        "straddles": pl.straddles, "decided": pl.decided, "rounds": pl.rounds,
        "judged": enforce,
        "student_s": float(f"{_speed._median(sorted(ts for _, ts, _ in times)):.4g}"),
        "labkit_s": float(f"{_speed._median(sorted(tl for _, _, tl in times)):.4g}"),
        "start_s": float(f"{_speed._median(sorted(t0 for t0, _, _ in times if t0)):.4g}"),
    }
    facts.update(loop_facts(raw, timed.args, ch.hot_dtype))
    par = bool(getattr(raw, "targetoptions", {}).get("parallel")) if is_dispatcher(raw) else False
    facts["threads"] = 1
    if par:
        facts["threads_note"] = "parallel=True: your prange loops ran on one thread here"
    if ch.roof is not None:
        try:
            roof = ch.roof(facts["student_s"], args)
        except Exception:  # noqa: BLE001 - feedback only
            roof = None
        if roof:
            facts["roof_share"], facts["roof"] = round(float(roof[0]), 3), str(roof[1])
    if enforce and ch.steps:
        facts["steps"] = _steps(ch, timed, guard)
    return facts


def _steps(ch: Challenge, timed, guard) -> dict:
    """``{step: t_step / t_student}`` (> 1: the student is faster than that step), best of three
    samples each, interleaved with the student's; a step whose single call takes more than
    :data:`STEP_CALL_S`, or once :data:`STEP_BUDGET_S` is spent, is left out."""
    out: dict = {}
    t_end = _wall() + STEP_BUDGET_S

    def stud():
        if guard is None:
            return timed.time(1)
        with guard.tracing():
            t = timed.time(1)
        guard.verify()
        return t

    for name, fn in ch.steps.items():
        if _wall() > t_end:
            break
        sargs = tuple(_inputs.own_copy(a) for a in timed.pristine)
        try:
            fn(*sargs)                          # compiles or loads it: not its speed
            if _wall() > t_end or _first_call(fn, sargs) > STEP_CALL_S:
                continue
            ts, tk = [], []
            for _ in range(3):
                tk.append(_speed._time(fn, sargs, 1))
                ts.append(stud())
        except CheckFailure:
            raise
        except Exception:  # noqa: BLE001 - a step that cannot run here is left out
            continue
        out[name] = round(min(tk) / max(min(ts), 1e-12), 3)
    return out


# ---------------------------------------------------------------- the notebook's feedback cell
class Feedback:
    """What :func:`feedback` shows: Markdown in a notebook, the same text elsewhere."""

    def __init__(self, text: str):
        self.text = text

    def _repr_markdown_(self) -> str:
        return self.text

    def __str__(self) -> str:
        return self.text

    __repr__ = __str__


def _x(v) -> str:
    return f"{float(v):.2f}×" if isinstance(v, (int, float)) else "—"


def feedback(name: str) -> Feedback:
    """The feedback of the latest ``check.<name>(…)`` in this kernel (a challenge): the facts of
    ``details["challenge"]`` — the speed beside both anchors and the lab's steps, the position
    and tier, the hot loop's vector width and lanes, the share of the lab's roof, the threads —
    and where to look next. Before the check ran: one locked line saying so."""
    from .framework import last
    r = last(name)
    if r is None:
        return Feedback(f"🔒 This cell shows your kernel's feedback once `check.{name}` has run "
                        "in this notebook: run the check cell above, then this cell again.")
    return Feedback(feedback_text(r))


def feedback_text(r) -> str:
    """Markdown of one challenge result (a :class:`~labkit.check.result.CheckResult`)."""
    mark = "✔" if r.passed else "✘"
    head = f"**{mark} `{r.name}`: {r.verdict} — {r.points:g} / {r.max_points:g} points.**"
    d = (r.details or {}).get("challenge")
    if not isinstance(d, dict):
        return (f"{head} The check stopped before timing your function: the message above says "
                "why. Fix that first; the speed feedback follows once it is correct and your "
                "own code.")
    if d.get("unchanged"):
        return (f"{head} This is still the starting point as the notebook gives it: change it, "
                "then run the check again (the rules above say what is allowed; the lab's "
                "sections are the steps).")
    rows = [("your speed ÷ labkit's kernel's (the leaderboard's number)",
             f"{_x(d.get('ratio'))} (interval {_x(d.get('ratio_low'))} – "
             f"{_x(d.get('ratio_high'))})"),
            ("your speed ÷ the starting point's", _x(d.get("vs_start"))),
            ("labkit's kernel ÷ the starting point (the scale)", _x(d.get("scale"))),
            ("position: 0 = the starting point, 1 = labkit's kernel",
             f"{d.get('position', float('nan')):.2f} (interval {d.get('position_low', 0):.2f} – "
             f"{d.get('position_high', 0):.2f}, {d.get('rounds', 0)} rounds)")]
    tier = d.get("tier")
    if tier is None:
        rows.append(("tier", "undecided: the machine was too busy to place your kernel"))
    else:
        k = sum(1 for _, share in TIERS if share <= tier + 1e-9)
        nxt = (f"; {describe_tier(k + 1)} from position {TIERS[k][0]:g}"
               if k < len(TIERS) else "")
        said = "" if d.get("judged", True) else (
            " on this run — reported only (LABKIT_SPEED=report): the points do not depend on it")
        rows.append(("tier", f"{describe_tier(k)}{said}{nxt}"))
    bits = d.get("vector_bits")
    if bits is not None:
        lanes = d.get("lanes")
        rows.append(("the hot loop", "scalar (no vector instructions)" if not bits else
                     f"{bits}-bit vectors" + (f", {lanes} {d.get('lane_type')} lanes"
                                              if lanes else "")))
    if d.get("roof_share") is not None:
        rows.append((f"share of {d.get('roof', 'the roof')}", f"{d['roof_share']:.0%}"))
    rows.append(("threads", f"{d.get('threads', 1)}" + (f" ({d['threads_note']})"
                                                         if d.get("threads_note") else "")))
    for step, ratio in (d.get("steps") or {}).items():
        rows.append((f"the lab's `{step}`: its time ÷ yours (best of three)", _x(ratio)))
    table = "| | |\n|---|---|\n" + "\n".join(f"| {k} | {v} |" for k, v in rows)
    nxt = _next_steps(d)
    return head + "\n\n" + table + ("\n\n" + "\n".join(f"* {t}" for t in nxt) if nxt else "")


def _next_steps(d: dict) -> list[str]:
    """Where to look next, from facts that are not measured (the code's vectors, this CPU's)."""
    out = []
    bits, lanes, lane_type = d.get("vector_bits"), d.get("lanes"), d.get("lane_type")
    try:
        from .gates import native_bits, native_lanes
        native = native_bits()
        most = native_lanes(lane_type) if lane_type else None
    except Exception:  # noqa: BLE001 - feedback only
        native, most = None, None
    if bits == 0:
        out.append("Your hot loop is scalar: the lab's steps that put independent work into "
                   "SIMD lanes are the next thing to apply.")
    elif bits and native and bits < native:
        out.append(f"Your hot loop's widest vectors are {bits}-bit; numba emits {native}-bit "
                   "vectors for plain loops on this CPU: a loop it can vectorise whole (no "
                   "branch, no call, unit stride) fills them.")
    elif lanes and most and lanes < most:
        out.append(f"Your hot loop holds {lanes} {lane_type} lanes per vector; this CPU's "
                   f"{native}-bit vectors hold {most}: a narrower element type gives more.")
    if d.get("threads_note"):
        out.append("Threads do not count here: the check runs one thread (the rules above).")
    return out
