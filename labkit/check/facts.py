"""What a challenge reads of the student's code and speed beyond its tier
(:mod:`labkit.check.challenge`): a library doing the work in the compiled code
(:func:`library_gate`), the hot loop's vector width and lanes (:func:`loop_facts`), the share of
the lab's roof, and the student's speed beside a few of the lab's step kernels (best of three,
bounded time) — ``details["challenge"]``, the leaderboard's data and the feedback's.
"""
from __future__ import annotations

import re
from time import perf_counter as _wall

from . import inputs as _inputs
from . import speed as _speed
from .guard import is_dispatcher
from .ratios import _median
from .result import CheckFailure
from .scale import Placement, _share

#: Seconds of CPU a step kernel may take per call to be timed beside the student, and the
#: budget of the whole step comparison.
STEP_CALL_S = 0.5
STEP_BUDGET_S = 3.0


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


def _facts(raw, args, ch, pl: Placement, times, timed, enforce: bool,
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
        "student_s": float(f"{_median(sorted(ts for _, ts, _ in times)):.4g}"),
        "labkit_s": float(f"{_median(sorted(tl for _, _, tl in times)):.4g}"),
        "start_s": float(f"{_median(sorted(t0 for t0, _, _ in times if t0)):.4g}"),
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


def _steps(ch, timed, guard) -> dict:
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


def _first_call(fn, args) -> float:
    """CPU seconds of one call of ``fn`` (the speed gate's clock)."""
    t0 = _speed._clock()
    fn(*args)
    return _speed._clock() - t0
