"""Measuring several functions (:func:`compare`, interleaved repeats) or one function over a
parameter (:func:`sweep`)."""
from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from labkit.timing.timer import (_autoscale, _check_positive, _first_call, _resolve_args,
                                 _stats, _time_loops, timeit)

from .results import BenchResult, SweepResult

__all__ = ["compare", "sweep"]


def _normalise_functions(functions: Any, args: Any) -> list[tuple[str, Callable, Any]]:
    if not isinstance(functions, Mapping):
        raise TypeError(
            "compare() needs a dict of name -> function, e.g. compare({'scalar': f, 'simd': g}, args); "
            f"got {type(functions).__name__}"
        )
    if not functions:
        raise ValueError("compare() needs at least one function: compare({'name': f}, args)")
    out = []
    for name, spec in functions.items():
        if not isinstance(name, str):
            raise TypeError(f"function names must be str, got {name!r}")
        if isinstance(spec, tuple):
            if len(spec) != 2 or not callable(spec[0]):
                raise TypeError(
                    f"{name!r}: give either a callable or (callable, args_tuple), got a tuple of "
                    f"{len(spec)} items"
                )
            out.append((name, spec[0], spec[1]))
        elif callable(spec):
            out.append((name, spec, args))
        else:
            raise TypeError(f"{name!r} is not callable (got {type(spec).__name__}); pass the function itself")
    return out


def compare(functions: Mapping[str, Any], args: Any = (), *, baseline: str | None = None,
            repeat: int = 5, min_time: float = 0.2, work: Any = None, unit: str = "items",
            validate: Callable | None = None, label: str | None = None,
            clock: str = "wall", stat: str = "median", predict: Any = None) -> BenchResult:
    """Time several functions on the same inputs with interleaved repeats → BenchResult.

    ``clock="cpu"`` times this process's CPU seconds (all its threads) instead of elapsed time:
    for one thread on a machine shared with other jobs it leaves out the moments another job
    held the core; for several threads the ratio becomes their parallel efficiency.
    ``stat="best"`` rates each function by its fastest repeat instead of the median (robust when
    other jobs come and go: the best repeat is the one where all our threads had a core).

    ``predict`` (opt-in): put OSACA's bound for each kernel's hot loop beside its measured
    cycles per element — True (every function, on its own arguments), a list of names, or a
    dict name → function / (function, args[, options]) / Prediction; see
    :meth:`BenchResult.with_predictions`. ``work`` must count the hot loop's elements per call."""
    entries = _normalise_functions(functions, args)
    names = [e[0] for e in entries]
    baseline = _check_options(names, baseline, repeat=repeat, min_time=min_time, work=work,
                              unit=unit, validate=validate, clock=clock, stat=stat)
    resolved = _resolve_entries(entries, args)
    compile_s, loops, times = _measure(resolved, repeat, min_time, validate, clock)
    rows = [_row(name, compile_s[name], loops[name], times[name], stat,
                 work[name] if isinstance(work, Mapping) else work) for name in names]
    _set_ratios(rows, baseline, stat)
    res = BenchResult(rows, baseline=baseline, unit=unit, label=label, repeat=repeat,
                      min_time=min_time, times=times, clock=clock, stat=stat)
    if predict is not None and predict is not False:
        res._calls = {name: (fn, a) for name, fn, a in resolved}   # kept only when asked
        res.with_predictions(predict)
    return res


def _check_options(names: list[str], baseline: str | None, *, repeat, min_time, work, unit,
                   validate, clock, stat) -> str:
    """:func:`compare`'s options checked, with a clear error for each; the baseline's name."""
    _check_positive("repeat", repeat, integer=True)
    _check_positive("min_time", min_time, allow_zero=True)
    if not isinstance(unit, str) or not unit:
        raise TypeError(f"unit must be a non-empty str naming the work items (e.g. 'alignments'), got {unit!r}")
    if validate is not None and not callable(validate):
        raise TypeError(f"validate must be a callable taking the result, got {type(validate).__name__}")
    if clock not in ("wall", "cpu"):
        raise ValueError(f"clock must be 'wall' or 'cpu', got {clock!r}")
    if stat not in ("median", "best"):
        raise ValueError(f"stat must be 'median' or 'best', got {stat!r}")
    if baseline is None:
        baseline = names[0]
    elif baseline not in names:
        raise ValueError(f"baseline {baseline!r} is not one of the functions {names}")
    if work is not None:
        _check_work(names, work)
    return baseline


def _check_work(names: list[str], work: Any) -> None:
    """``work``: one positive number, or a dict with one per function."""
    if isinstance(work, Mapping):
        missing = [n for n in names if n not in work]
        if missing:
            raise ValueError(f"work dict lacks entries for {missing}; give one number per function")
        for n in names:
            _check_positive(f"work[{n!r}]", work[n])
    else:
        _check_positive("work", work)


def _resolve_entries(entries: list[tuple[str, Callable, Any]],
                     args: Any) -> list[tuple[str, Callable, tuple]]:
    """Each function's arguments resolved once (a shared callable is called once; per-function
    ones separately)."""
    shared = None
    resolved = []
    for name, fn, a in entries:
        if a is args:
            if shared is None:
                shared = _resolve_args(args, "args")
            resolved.append((name, fn, shared))
        else:
            resolved.append((name, fn, _resolve_args(a, f"arguments of {name!r}")))
    return resolved


def _measure(resolved: list[tuple[str, Callable, tuple]], repeat: int, min_time: float,
             validate: Callable | None, clock: str) -> tuple[dict, dict, dict]:
    """(compile seconds, loops per timing, seconds per call of each repeat) by name: each
    function called once (compiled, validated), its loop count scaled, then the repeats."""
    compile_s = {name: _first_call(name, fn, a, validate, clock) for name, fn, a in resolved}
    loops = {name: _autoscale(fn, a, min_time, clock) for name, fn, a in resolved}
    times: dict[str, list[float]] = {name: [] for name, _, _ in resolved}
    for _ in range(repeat):  # interleaved: f, g, f, g, … so slow drifts hit everyone alike
        for name, fn, a in resolved:
            times[name].append(_time_loops(fn, a, loops[name], clock) / loops[name])
    return compile_s, loops, times


def _row(name: str, compile_s: float, loops: int, times: list[float], stat: str, w) -> dict:
    """One function's row of the result (its ratio filled in by :func:`_set_ratios`)."""
    med, q1, q3 = _stats(times)
    best = float(min(times))
    t = med if stat == "median" else best
    return {
        "name": name, "compile_s": compile_s, "median_s": med, "best_s": best,
        "q1_s": q1, "q3_s": q3, "spread": (q3 - q1) / med if med > 0 else float("nan"),
        "throughput": (float(w) / t if t > 0 else float("inf")) if w is not None else None,
        "ratio": float("nan"), "loops": loops,
        **({"work": float(w)} if w is not None else {}),
    }


def _set_ratios(rows: list[dict], baseline: str, stat: str) -> None:
    """Each row's speed-up over the baseline's, by the median or the best repeat."""
    key = "median_s" if stat == "median" else "best_s"
    base_t = next(r[key] for r in rows if r["name"] == baseline)
    for r in rows:
        r["ratio"] = base_t / r[key] if r[key] > 0 else float("inf")


def sweep(fn: Callable, param: str, values: Sequence, args_for: Callable | None = None,
          work_for: Callable | None = None, unit: str = "items", repeat: int = 3,
          min_time: float = 0.05, progress: bool = True) -> SweepResult:
    """Time fn(value, *args_for(value)) for each value (with a tqdm progress bar) → SweepResult."""
    if not callable(fn):
        raise TypeError(f"sweep needs a callable fn(value, *args), got {type(fn).__name__}")
    if not isinstance(param, str) or not param:
        raise TypeError(f"param must be the parameter's name as a str (e.g. 'tile'), got {param!r}")
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise TypeError(f"values must be a list of parameter values, e.g. [8, 16, 32], got {values!r}")
    values = list(values)
    if not values:
        raise ValueError("values is empty; give at least one parameter value, e.g. [8, 16, 32]")
    if args_for is not None and not callable(args_for):
        raise TypeError("args_for must be a callable value -> tuple of arguments (or None)")
    if work_for is not None and not callable(work_for):
        raise TypeError("work_for must be a callable value -> number of work items (or None)")
    _check_positive("repeat", repeat, integer=True)
    _check_positive("min_time", min_time, allow_zero=True)
    name = getattr(fn, "__name__", "fn")

    it = values
    bar = None
    if progress:
        from tqdm.auto import tqdm
        bar = tqdm(values, desc=f"{name}: {param}", leave=False)
        it = bar
    timings, work = [], ([] if work_for is not None else None)
    try:
        for v in it:
            if bar is not None:
                bar.set_postfix_str(f"{param}={v}")
            a = _resolve_args(args_for(v) if args_for is not None else (), f"args_for({v!r})")
            timings.append(timeit(fn, v, *a, repeat=repeat, min_time=min_time))
            if work is not None:
                w = work_for(v)
                _check_positive(f"work_for({v!r})", w)
                work.append(float(w))
    finally:
        if bar is not None:
            bar.close()
    return SweepResult(name, param, values, timings, work, unit)
