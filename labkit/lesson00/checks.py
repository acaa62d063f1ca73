"""Lesson 00's exercise checks and their hints: ``colsum`` (loop order), ``softsign`` (a loop
LLVM refuses, for the reason its remark gives), ``latency`` (a prediction from the core's facts)
``dot_partials`` (breaking the latency chain) and ``loop_bound`` (reading OSACA's report: which
resource bounds a loop, and how many cycles per element)."""
from __future__ import annotations

import numpy as np

from labkit.check import (CheckFailure, accumulators_gate, exercise, mismatch, no_fastmath_gate,
                          require_njit, rng, speed_enforced, speed_gate, vectorized_gate)
from labkit import hints
from labkit.lesson00 import colsum_reference, softsign_reference
from labkit.lesson00.kernels import colsum_naive, colsum_rows, dot_partials, dot_plain


def _as_2d_args(g: np.random.Generator):
    shapes = [(1, 1), (3, 17), (int(g.integers(20, 60)), int(g.integers(20, 60)))]
    return [g.random(s) for s in shapes]


@exercise("colsum", points=2, answers=("labkit.lesson00.kernels:colsum_rows",))
def check_colsum(student):
    """Column sums equal numpy's (same summation order), vectorised at the host's native width,
    ≥ 2× the naive kernel."""
    g = rng()
    for a in _as_2d_args(g):
        exp = colsum_reference(a)           # bound before the call (the student gets a copy)
        got = student(a)
        msg = mismatch(got, exp, name="out", rtol=1e-12, atol=1e-12)
        assert msg is None, f"{msg} (input {a.shape[0]}×{a.shape[1]})"
    a = g.random((600, 600))
    vectorized_gate(student, (a,))
    speed_gate(student, colsum_naive, (a,), need=2.0, vs="colsum_naive", answer=colsum_rows)
    return "column sums exact on 3 random matrices"


#: Independent partial sums the dot-product exercise asks for.
PARTIALS = 8


@exercise("dot_partials", points=2, answers=("labkit.lesson00.kernels:dot_partials",
                                             "labkit.lesson00.kernels:dot_fastmath"))
def check_dot_partials(student):
    """Dot products correct (to rounding) for every length, written as eight independent sums
    (no fastmath, no np.dot: the loop's phi nodes are counted), ≥ 1.5× the one-accumulator loop."""
    g = rng()
    lengths = [0, 1, 7, 8, 9, int(g.integers(100, 1000))]
    for n in lengths:
        x, y = g.random(n), g.random(n)
        exp = float(np.dot(x, y)) if n else 0.0    # bound before the call
        got = student(x, y)
        if not isinstance(got, (float, np.floating)):
            raise CheckFailure("wrong", f"returned {type(got).__name__}, expected a float")
        msg = mismatch(got, exp, name=f"dot(length {n})", rtol=1e-10, atol=1e-12)
        assert msg is None, msg
    # 2048 elements: x and y (32 KiB) stay in L1, where the add latency is what limits
    # dot_plain (at 16 K elements the L2 loads blur it: 1.5× instead of 1.9× here)
    x, y = g.random(1 << 11), g.random(1 << 11)
    require_njit(student, "technique missing")
    no_fastmath_gate(student, (x, y), hint="write the eight partial sums s0 … s7 yourself")
    accumulators_gate(student, (x, y), PARTIALS,
                      hint="keep s0 … s7 as separate variables updated in one loop")
    speed_gate(student, dot_plain, (x, y), need=1.5, vs="dot_plain", answer=dot_partials)
    return f"correct for lengths {', '.join(map(str, lengths))}"


@exercise("softsign", points=2, answers=("labkit.lesson00.kernels:softsign_numpy_errors",),
          outputs=(1,))
def check_softsign(student):
    """x / (1 + |x|) to rounding for any length, in out (returned), and the loop vectorised at the
    host's native width: what LLVM refused in ``softsign_checked`` it now accepts."""
    g = rng()
    lengths = [0, 1, 7, int(g.integers(100, 2000))]
    for n in lengths:
        x = g.standard_normal(n) * 10.0
        out = np.full(n, np.nan)
        exp = softsign_reference(x)          # bound before the call
        got = student(x, out)
        msg = mismatch(got, exp, name="out", rtol=1e-12, atol=1e-300)
        assert msg is None, f"{msg} (length {n})"
        if n and not np.array_equal(out, np.asarray(got)):
            raise CheckFailure("wrong", "softsign must fill out and return it; out holds "
                                        "other values than the returned array")
    x = g.standard_normal(4096)
    vectorized_gate(student, (x, np.empty_like(x)))
    return f"x / (1 + |x|) exact to rounding for lengths {', '.join(map(str, lengths))}"


#: a prediction within this fraction of the measured cycles per element passes
LATENCY_TOLERANCE = 0.25


def core_reading(rounds: list) -> tuple[float, float, float]:
    """(cycles per element, ns per element, clock Hz) that shows the core, from
    :func:`measured_cycle_rounds`: the fastest kernel time of all rounds at the fastest clock of
    all rounds. Each is disturbed only one way — load, an interrupt or a frequency step makes the
    kernel slower and the clock chain slower (a lower Hz), never faster — but not always in the
    same round: a sibling hardware thread busy with integer work slows the clock's integer chain
    and not the kernel's floating-point chain, so one round's own ratio can read *below* the
    chain's latency (2.3 cycles for Zen 4's 3-cycle add on a loaded CI host). The two extremes
    read apart can only err upward."""
    ns = min(r[1] for r in rounds)
    hz = max(r[2] for r in rounds)
    return ns * 1e-9 * hz, ns, hz


def rounds_against(pred: float) -> tuple[list, tuple, float, bool]:
    """``dot_plain``'s measured rounds (:func:`measured_cycle_rounds`, fastest first), the core's
    reading (:func:`core_reading`), how far ``pred`` is off it (a fraction), and whether the
    rounds disagree (the slowest over 1.1 × the reading: a busy host) — measured again, once,
    when ``pred`` is off on a busy host."""
    def judged(r):
        core = core_reading(r)
        return core, abs(pred - core[0]) / core[0], r[-1][0] > 1.1 * core[0]

    rounds = measured_cycle_rounds()
    core, off, busy = judged(rounds)
    if off > LATENCY_TOLERANCE and busy:
        rounds = sorted(rounds + measured_cycle_rounds())   # more rounds, once
        core, off, busy = judged(rounds)
    return rounds, core, off, busy


def measured_cycle_rounds(n: int = 1 << 14, rounds: int = 9,
                          kernel=None) -> list[tuple[float, float, float]]:
    """``rounds`` measurements of ``dot_plain`` (or ``kernel(x, y)``) on this core, each (cycles
    per element, ns per element, clock Hz): in each round the clock chain
    (``labkit.hardware.clock``) and the kernel are timed one right after the other in this
    thread's CPU time (best of 3 each), and the round's cycles per element is their ratio. A
    clock measured once and a kernel timed later disagree whenever the host slows down in
    between (a shared or throttled machine); back-to-back, both see the same speed. Sorted by
    cycles per element: a dependency chain cannot run faster than its latency, and every
    disturbance (another process on the core, an interrupt, a frequency step) makes a round
    slower — on a busy host the median round read 2.9 cycles where the quiet rounds read 2.1.
    Which reading shows the core: :func:`core_reading`."""
    from labkit.bench import timeit
    from labkit.hardware.clock import measure_clock

    g = np.random.default_rng(12345)
    x, y = g.random(n), g.random(n)
    kernel = dot_plain if kernel is None else kernel
    per = []
    for _ in range(rounds):
        hz = measure_clock(iterations=1_000_000, repeat=3)
        s_dot = min(timeit(kernel, x, y, repeat=3, min_time=0.01, clock="thread").times)
        per.append((s_dot / n * hz, s_dot / n * 1e9, hz))
    return sorted(per)


@exercise("latency", points=1, allowed=("labkit.hardware:info",))
def check_latency(student):
    """The predicted cycles per element of ``dot_plain`` within 25 % of the measured value (9
    back-to-back clock + kernel rounds in CPU time, read by :func:`core_reading`; 9 more when
    the rounds disagree and the prediction misses). The measurement is the verdict, so it is
    judged like a speed gate: under ``LABKIT_SPEED=report`` (the test suite) a miss is reported
    in the message and the check passes on a well-formed prediction; grading and the false-fail
    benchmark under load (``make test-load``) always judge it."""
    pred = student()
    if isinstance(pred, (bool, np.bool_)) or not isinstance(pred, (int, float, np.integer,
                                                                  np.floating)):
        raise CheckFailure("wrong", f"returned {type(pred).__name__}, expected a number "
                                    "(clock cycles per element)")
    pred = float(pred)
    if not np.isfinite(pred) or pred <= 0:
        raise CheckFailure("wrong", f"predicted {pred!r} cycles per element; a time per "
                                    "element is a positive number")
    rounds, (cycles, ns, hz), off, busy = rounds_against(pred)
    spread = (f"; its {len(rounds)} rounds read {rounds[0][0]:.1f}–{rounds[-1][0]:.1f}, their "
              "fastest time at their fastest clock shows the core" if busy else "")
    facts = (f"measured {cycles:.1f} cycles per element ({ns:.2f} ns at {hz / 1e9:.2f} GHz"
             f"{spread})")
    if off > LATENCY_TOLERANCE:
        miss = (f"predicted {pred:.3g} cycles per element, {facts}: off by {off:.0%} (within "
                f"{LATENCY_TOLERANCE:.0%} passes)")
        if not speed_enforced():
            return f"{miss} — measurement reported only (LABKIT_SPEED=report)"
        raise CheckFailure("wrong", miss)
    return f"predicted {pred:.3g} cycles per element, {facts}"


hints.define(
    "colsum",
    "the vectoriser wants an inner loop whose iterations are independent and touch "
    "neighbouring memory; which of the two loops has that, for a C-ordered matrix?",
    "make the loop over rows (i) the outer one and the loop over columns (j) the inner one: "
    "a[i, 0], a[i, 1], … are neighbours, and out[0], out[1], … are separate sums, so the inner "
    "loop has no chain and no stride.",
    "for i in range(n): for j in range(m): out[j] += a[i, j]  — each column is still summed "
    "top to bottom, so the result is bit-for-bit the same.")
hints.define(
    "softsign",
    "the remark says the loop can stop early; which part of out[i] = x[i] / (1 + |x[i]|) can "
    "stop a numba loop, although it never does here?",
    "numba keeps Python's semantics: every float division checks for a zero divisor and may "
    "raise ZeroDivisionError, which leaves the loop. LLVM cannot prove that 1 + |x| is never "
    "zero. Either tell numba not to raise (an option of @njit: its error model), or make the "
    "raise unreachable in a way LLVM can see.",
    "@njit(error_model='numpy') on the function, or in the loop: d = 1.0 + abs(x[i]); "
    "out[i] = x[i] / d if d != 0.0 else 0.0 (a select LLVM can vectorise).")
hints.define(
    "latency",
    "one element = one multiply (independent of the others) and one add into the single "
    "accumulator; which of the two can only start when the previous element's one has finished?",
    "the additions form one dependency chain, so each element costs one add *latency* (not its "
    "throughput). Find your core's name in hardware.info().host_cpu (the core that runs the "
    "code; numba_cpu is what numba compiles for) and look up the latency of a double-precision "
    "add (addsd / fadd d) for it.",
    "latency tables (uops.info, Agner Fog; the vendors' optimisation manuals): Haswell and "
    "Broadwell 3 cycles; Skylake … Ice "
    "Lake / Tiger Lake 4 cycles; Golden Cove and later Intel cores (Alder Lake, Sapphire / "
    "Emerald Rapids) 2 (their fast adders); AMD Zen 1–4 3, Zen 5 2; Apple M1–M4 3; Neoverse "
    "N1/V1/V2 2. Return that number.")
hints.define(
    "dot_partials",
    "each accumulator is its own dependency chain; how do you split one sum into eight sums "
    "that never wait for each other, and what about the n % 8 elements left over?",
    "step i by 8 over the first n - n % 8 elements and update eight separate accumulators "
    "s0 … s7 from x[i] … x[i + 7]; then sum the remaining elements in a second, scalar loop "
    "and return the total of all nine.",
    "nb = n - n % 8; s0 = … = s7 = 0.0; for i in range(0, nb, 8): s0 += x[i]*y[i]; … "
    "s7 += x[i+7]*y[i+7]; then tail over range(nb, n); return ((s0+s1)+(s2+s3))+((s4+s5)+"
    "(s6+s7))+tail")


# ---------------------------------------------------------------- reading OSACA's report
#: a stated bound within this fraction of the report's (the same numbers, rounded) passes
READ_TOLERANCE = 0.10
#: the loops the check hands the student: this core's model, then two of the others' (compiled
#: from here, never run), drawn at random from these
BOUND_KERNELS = ("dot_plain", "dot_partials", "dot_fastmath")
BOUND_FOREIGN = (("haswell", "dot_plain"), ("haswell", "dot_fastmath"), ("znver4", "dot_plain"),
                 ("znver4", "dot_fastmath"), ("apple-m1", "dot_fastmath"),
                 ("neoverse-v2", "dot_fastmath"), ("skylake-avx512", "dot_plain"))


def bound_reports(cpu=None, kernels=BOUND_KERNELS, n: int = 2048):
    """``{kernel: (LoopReport, Prediction)}`` of lesson 00's dot products on ``cpu`` (default:
    this core's model); a kernel OSACA cannot analyse there is left out, with its reason in
    ``"_why"``."""
    from labkit import lesson00
    from labkit.inspect.loopreport import osaca_report
    g = np.random.default_rng(1)
    x, y = g.random(n), g.random(n)
    out: dict = {}
    for name in kernels:
        try:
            out[name] = osaca_report(getattr(lesson00, name), (x, y), cpu=cpu, name=name)
        except (ValueError, ImportError) as e:
            out.setdefault("_why", str(e).splitlines()[0][:160])
    return out


def _posable(rep) -> bool:
    """A report the reading can be judged on: its step known and every instruction modelled."""
    return bool(rep.elements) and not rep.unknown and bool(rep.ports)


#: labkit's own readings of a report: calling one is handing in labkit's answer
PREDICTORS = ("labkit.inspect:predict", "labkit.inspect.uarch:predict",
              "labkit.inspect.loopreport:osaca_report", "labkit.inspect.loopreport:truth")


@exercise("loop_bound", points=1, answers=PREDICTORS)
def check_loop_bound(student):
    """``student(report)`` → ``(resource, cycles per element)`` read off OSACA's report of a loop:
    ``"dependency"`` or the busiest port, and the bound per element, within 10 % — for the three
    dot products on this core's model and two loops compiled for other cores. The readings are
    the verdict. Then this core's ``dot_plain`` bound is put beside its measured cycles per
    element (9 back-to-back rounds read by :func:`core_reading`): whether the model describes
    this core, or this run was too busy to tell, is the machine's fact and the model's, said in
    the message — never the student's verdict. No report at all (no OSACA): ``inconclusive``."""
    from labkit.check.bounds import reading_error, stated
    g = rng()
    host = bound_reports()
    why = host.pop("_why", "")
    posed, said = [], {}

    def judge(kernel, rep):          # the student reads each report as soon as it is built
        ans = stated(student(rep))
        msg = reading_error(rep, ans, READ_TOLERANCE)
        if msg:
            raise CheckFailure("wrong", msg)
        posed.append((kernel, rep))
        said.setdefault(kernel, (ans, rep))

    for kernel, (rep, _) in host.items():
        if _posable(rep):
            judge(kernel, rep)
    for i in g.choice(len(BOUND_FOREIGN), 2, replace=False):
        cpu, kernel = BOUND_FOREIGN[i]
        rep = bound_reports(cpu, (kernel,)).get(kernel)
        if rep is not None and _posable(rep[0]):
            judge(kernel, rep[0])
    if not posed:
        raise CheckFailure("inconclusive", "OSACA could not give a report here "
                                           f"({why or 'no model'}): nothing to read, not gradable "
                                           "on this machine")
    read = (f"read {len(posed)} reports right ("
            + ", ".join(f"{r.name} on {r.model}" for _, r in posed) + ")")
    return f"{read}; {_beside_measurement(host, said, why)}"


def _beside_measurement(host: dict, said: dict, why: str) -> str:
    """The student's ``dot_plain`` bound on this core's model beside its measured cycles per
    element, in words: confirmed, off (the model's or a busy run's), or not measurable."""
    plain = host.get("dot_plain")
    if plain is None or not _posable(plain[0]) or "dot_plain" not in said:
        model = (plain[0].model if plain else "") or "no model"
        return (f"this core's model ({model}{': ' + why if why else ''}) cannot back a bound "
                "for dot_plain here, so nothing is measured beside your reading")
    (resource, pred), rep = said["dot_plain"]
    if resource != "dependency":        # a port-bound chain on some model: a lower bound only
        return (f"this core's model bounds dot_plain by port {resource}, which a measurement "
                "could only confirm as a lower bound: not measured")
    rounds, (cycles, ns, hz), off, busy = rounds_against(pred)
    facts = (f"dot_plain: your bound {pred:.3g} cycles per element (the chain), measured "
             f"{cycles:.2f} ({ns:.2f} ns at {hz / 1e9:.2f} GHz, best of {len(rounds)} rounds"
             + (f" reading {rounds[0][0]:.1f}–{rounds[-1][0]:.1f}" if busy else "") + ")")
    if off <= LATENCY_TOLERANCE:
        return f"{facts}: the model describes this core"
    cause = ("this run was too busy to tell whether the model describes this core — run the "
             "check again when the machine is quieter to see" if busy else
             f"OSACA's {rep.model} model does not describe this core's chain (a virtual "
             "machine's model number, or another core)")
    return (f"{facts}: off by {off:.0%} — {cause}. The measurement judges the model, not your "
            "reading")


hints.define(
    "loop_bound",
    "a loop runs no faster than its busiest port allows (the port-pressure sums at the foot of "
    "the table) and no faster than its longest loop-carried chain (each iteration waits for the "
    "last); which of the two is larger, and are the report's cycles per element or per iteration?",
    "compare the busiest port's cycles (max of report.ports) with report.dependency — not the "
    "critical path, which is one iteration's latency and overlaps the next iteration's; the "
    "larger is the bound. Both are per loop iteration: divide by report.elements.",
    "port, busy = max(report.ports.items(), key=lambda kv: kv[1]); if report.dependency > busy: "
    "return 'dependency', report.dependency / report.elements; else return port, busy / "
    "report.elements")


# ---------------------------------------------------------------- answers on the screen
# REVEALS: exercise → a callable returning what would give its graded answer away if a cell
# printed it before the exercise's check has passed — exact strings, computed from the check's
# own reference, or compiled patterns where the answer is measured on the student's machine.
# tests/test_notebooks.py runs every student copy unsolved and finds none of them in any output.
def _softsign_reveals():
    """The error model of labkit's own answer kernel, as code would spell it."""
    from labkit.lesson00.kernels import softsign_numpy_errors
    model = softsign_numpy_errors.targetoptions["error_model"]
    return [f"error_model='{model}'", f'error_model="{model}"']


def _latency_reveals():
    """dot_plain's cycles per element is measured (the check's reference): any figure in that
    unit, and the sentence that names it the latency of one addition."""
    import re
    return [re.compile(r"\d+(?:\.\d+)?\**\s*cycles per element"),
            re.compile(r"\d+(?:\.\d+)?\**\s*cycles\**\s*—\s*the latency")]


def _loop_bound_reveals():
    """The bound per element of each dot product on this core's model (what the check's truth
    reads off the reports), as Prediction.explain prints it; none without a model."""
    from labkit.inspect.loopreport import truth
    return [f"{truth(rep)[1]:.2f} cycles per element"
            for name, (rep, _) in bound_reports().items() if name != "_why" and _posable(rep)]


REVEALS = {"softsign": _softsign_reveals, "latency": _latency_reveals,
           "loop_bound": _loop_bound_reveals}
