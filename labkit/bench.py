"""Timing numba kernels honestly: JIT warm-up timed apart, autoscaled loops, interleaved repeats.

>>> res = compare({"scalar": f, "simd": g}, (a, b), work=len(a), unit="alignments")
>>> res            # HTML table in Jupyter; print(res) gives the text table
>>> res.ratio("simd")
4.8

Ratios are speedups (baseline median / variant median), shown as "4.8×", never as "speedup %".
"""
from __future__ import annotations

import gc
import html
import math
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

__all__ = [
    "compare", "BenchResult", "sweep", "SweepResult", "timeit", "Timing",
    "format_time", "format_si", "format_ratio", "format_throughput", "is_jitted", "main",
    "Target", "ratio_of", "throughput_of", "check_targets",
]

LABS = ("alignment", "bspline", "pcc", "epistasis")

_clock = time.perf_counter  # tests may not patch it; timings are never asserted


# --------------------------------------------------------------------------- formatting

def format_time(seconds: float) -> str:
    """Format a duration with 3 significant digits and a unit: '412 ns', '1.23 ms', '2.50 s'."""
    if seconds is None or not math.isfinite(seconds):
        return "–"
    s = abs(seconds)
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns")):
        if s >= scale or unit == "ns":
            v = seconds / scale
            return f"{_sig3(v)} {unit}"
    return f"{seconds} s"  # pragma: no cover


def _sig3(v: float) -> str:
    """Three significant digits without exponent for 0.001 ≤ |v| < 1e6."""
    a = abs(v)
    if a >= 100:
        return f"{v:.0f}"
    if a >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


_SI = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""))


def format_si(value: float, unit: str = "") -> str:
    """Format a number with an SI prefix: format_si(12.3e6, 'items/s') -> '12.3 M items/s'."""
    if value is None or not math.isfinite(value):
        return "–"
    a = abs(value)
    if a < 1.0 and a > 0:
        num = f"{value:.3g}"
        return f"{num} {unit}".rstrip()
    for scale, prefix in _SI:
        if a >= scale * 0.9995 or scale == 1.0:
            num = _sig3(value / scale)
            if prefix:
                return f"{num} {prefix} {unit}".rstrip() if unit else f"{num} {prefix}"
            return f"{num} {unit}".rstrip()
    return f"{value} {unit}"  # pragma: no cover


def format_throughput(value: float, unit: str = "items") -> str:
    """Format work per second: format_throughput(12.3e6, 'alignments') -> '12.3 M alignments/s'."""
    return format_si(value, unit if unit.endswith("/s") else f"{unit}/s")


def format_ratio(ratio: float) -> str:
    """Format a speedup ratio: 4.83 -> '4.8×', 123.4 -> '123×', 0.052 -> '0.052×'."""
    if ratio is None or not math.isfinite(ratio):
        return "–"
    if ratio >= 100:
        return f"{ratio:.0f}×"
    if ratio >= 0.995:
        return f"{ratio:.1f}×"
    return f"{ratio:.2g}×"


# --------------------------------------------------------------------------- helpers

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
    """The timer of a clock name: "wall" (elapsed) or "cpu" (this process's CPU seconds, all threads)."""
    return _clock if clock == "wall" else time.process_time


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


def _autoscale(fn: Callable, args: tuple, min_time: float, clock: str = "wall") -> int:
    """Number of loops so one repeat of `fn(*args)` lasts at least min_time seconds. Scaled from
    a second call, not the first: a first call that took long may have been JIT compilation —
    also inside a plain wrapper (a lambda or object calling a jitted kernel), which is_jitted
    cannot see."""
    loops = 1
    t = _time_loops(fn, args, 1, clock)
    for _ in range(12):
        if t >= min_time:
            return loops
        per = max(t / loops, 1e-9)
        # aim 20 % above min_time; grow at most 100× per step so one slow outlier can't explode it
        target = int(math.ceil(min_time * 1.2 / per))
        loops = max(loops + 1, min(target, loops * 100))
        t = _time_loops(fn, args, loops, clock)
    return loops


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


def timeit(f: Callable, *args: Any, repeat: int = 5, min_time: float = 0.2) -> Timing:
    """Time f(*args): first call apart (compile), then `repeat` autoscaled repeats → Timing."""
    if not callable(f):
        raise TypeError(f"timeit needs a callable, got {type(f).__name__}")
    _check_positive("repeat", repeat, integer=True)
    _check_positive("min_time", min_time, allow_zero=True)
    compile_s = _first_call(getattr(f, "__name__", "f"), f, args, None)
    loops = _autoscale(f, args, min_time)
    times = tuple(_time_loops(f, args, loops) / loops for _ in range(repeat))
    med, q1, q3 = _stats(times)
    return Timing(compile_s, med, q1, q3, loops, times)


# --------------------------------------------------------------------------- compare

class BenchResult:
    """Result of bench.compare: one row per function, ratios vs a baseline, text/HTML/plot views."""

    def __init__(self, rows: list[dict], *, baseline: str | None = None, unit: str = "items",
                 label: str | None = None, repeat: int = 1, min_time: float = 0.0,
                 times: dict[str, list[float]] | None = None, clock: str = "wall",
                 stat: str = "median"):
        if stat not in ("median", "best"):
            raise ValueError(f"stat must be 'median' or 'best', got {stat!r}")
        if not isinstance(rows, list) or not rows or not all(
                isinstance(r, dict) and "name" in r and "median_s" in r for r in rows):
            raise TypeError("rows must be a non-empty list of dicts with at least 'name' and 'median_s'")
        names = [r["name"] for r in rows]
        baseline = names[0] if baseline is None else baseline
        if baseline not in names:
            raise ValueError(f"baseline {baseline!r} is not one of the rows {names}")
        for r in rows:  # hand-made rows (e.g. scaled estimates) may leave the derived fields out
            r.setdefault("best_s", r["median_s"])
        key = "median_s" if stat == "median" else "best_s"
        base_med = rows[names.index(baseline)][key]
        for r in rows:
            med = r[key]
            r.setdefault("compile_s", float("nan"))
            r.setdefault("q1_s", med)
            r.setdefault("q3_s", med)
            r.setdefault("spread", (r["q3_s"] - r["q1_s"]) / r["median_s"] if r["median_s"] > 0
                         else float("nan"))
            r.setdefault("throughput", None)
            r.setdefault("ratio", base_med / med if med > 0 else float("inf"))
        self.rows = rows
        self.baseline = baseline
        self.unit = unit
        self.label = label
        self.repeat = repeat
        self.min_time = min_time
        self.times = times or {}
        self.clock = clock
        self.stat = stat

    # -- access
    @property
    def names(self) -> list[str]:
        """Function names in the order they were given."""
        return [r["name"] for r in self.rows]

    def _row(self, name: str) -> dict:
        for r in self.rows:
            if r["name"] == name:
                return r
        raise KeyError(f"no function named {name!r} in this result; names are {self.names}")

    def median(self, name: str) -> float:
        """Median seconds per call of `name`."""
        return self._row(name)["median_s"]

    def time(self, name: str) -> float:
        """Seconds per call of `name` by the result's statistic (median, or best repeat) — what
        its throughput and ratios use."""
        return self._row(name)["median_s" if self.stat == "median" else "best_s"]

    def throughput(self, name: str) -> float | None:
        """Work items per second of `name` (None if compare() had no work=)."""
        return self._row(name)["throughput"]

    def ratio(self, name: str, baseline: str | None = None) -> float:
        """Speedup of `name` over `baseline` (default: the result's baseline): >1 means faster."""
        base = self.baseline if baseline is None else baseline
        return self.time(base) / self.time(name)

    def to_dict(self) -> dict:
        """Plain-data copy (JSON-serialisable): label, unit, baseline, repeat, min_time, rows, times."""
        return {
            "label": self.label, "unit": self.unit, "baseline": self.baseline,
            "repeat": self.repeat, "min_time": self.min_time, "clock": self.clock,
            "stat": self.stat,
            "rows": [dict(r) for r in self.rows],
            "times": {k: list(v) for k, v in self.times.items()},
        }

    # -- views
    def _cells(self) -> list[list[str]]:
        out = []
        for r in self.rows:
            ratio = format_ratio(r["ratio"]) + (" (baseline)" if r["name"] == self.baseline else "")
            out.append([
                r["name"],
                format_time(r["compile_s"]),
                format_time(r["median_s" if self.stat == "median" else "best_s"]),
                f"{r['spread'] * 100:.1f} %" if math.isfinite(r["spread"]) else "–",
                format_throughput(r["throughput"], self.unit) if r["throughput"] is not None else "–",
                ratio,
            ])
        return out

    _HEAD = ["name", "first call", "median", "spread", "throughput", "ratio"]

    @property
    def _head(self) -> list[str]:
        return [("best" if h == "median" and self.stat == "best" else h) for h in self._HEAD]

    def _footer(self) -> str:
        what = "process CPU seconds (all threads), " if self.clock == "cpu" else ""
        what += "median of" if self.stat == "median" else "best of"
        return (f"{what} {self.repeat} interleaved repeats (≥ {format_time(self.min_time)} "
                f"each); spread = IQR/median; ratio = time of {self.baseline} ÷ time (higher is faster)")

    def __str__(self) -> str:
        """Text table for terminals."""
        cells = self._cells()
        head = list(self._head)
        has_tp = any(r["throughput"] is not None for r in self.rows)
        if not has_tp:
            head.pop(4)
            cells = [c[:4] + c[5:] for c in cells]
        widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(head)]

        def line(vals):
            parts = [vals[0].ljust(widths[0])] + [v.rjust(w) for v, w in zip(vals[1:-1], widths[1:-1])]
            parts.append(vals[-1].ljust(widths[-1]))
            return "  ".join(parts).rstrip()

        lines = []
        if self.label:
            lines.append(self.label)
        lines.append(line(head))
        lines.append("  ".join("-" * w for w in widths))
        lines.extend(line(c) for c in cells)
        lines.append(self._footer())
        return "\n".join(lines)

    def __repr__(self) -> str:
        """Text table (same as str)."""
        return str(self)

    def _repr_html_(self) -> str:
        """HTML table for Jupyter, with a bar per ratio."""
        has_tp = any(r["throughput"] is not None for r in self.rows)
        head = [h for h in self._head if has_tp or h != "throughput"]
        maxr = max((r["ratio"] for r in self.rows if math.isfinite(r["ratio"])), default=1.0)
        th = "".join(f"<th style='text-align:{'left' if i == 0 else 'right'};padding:2px 10px'>"
                     f"{html.escape(h)}</th>" for i, h in enumerate(head))
        body = []
        for r, c in zip(self.rows, self._cells()):
            if not has_tp:
                c = c[:4] + c[5:]
            width = 0 if not math.isfinite(r["ratio"]) else max(2, int(80 * r["ratio"] / maxr))
            color = "#8c8c8c" if r["name"] == self.baseline else "#3b6ea8"
            bar = (f"<span style='display:inline-block;width:{width}px;height:0.8em;"
                   f"background:{color};margin-right:6px;vertical-align:middle'></span>")
            tds = [f"<td style='text-align:left;padding:2px 10px'><b>{html.escape(c[0])}</b></td>"]
            tds += [f"<td style='text-align:right;padding:2px 10px'>{html.escape(v)}</td>" for v in c[1:-1]]
            tds.append(f"<td style='text-align:left;padding:2px 10px'>{bar}{html.escape(c[-1])}</td>")
            body.append("<tr>" + "".join(tds) + "</tr>")
        cap = (f"<caption style='text-align:left;font-weight:bold'>{html.escape(self.label)}</caption>"
               if self.label else "")
        return (f"<table class='labkit-bench' style='border-collapse:collapse'>{cap}"
                f"<thead><tr>{th}</tr></thead><tbody>{''.join(body)}</tbody></table>"
                f"<div style='font-size:smaller;color:#666'>{html.escape(self._footer())}</div>")

    def plot(self, ax=None):
        """Speedup bars (ratio vs baseline) via labkit.plots.speedup_bars; returns the Axes."""
        from . import plots
        return plots.speedup_bars(self.names, [r["ratio"] for r in self.rows], ax=ax,
                                  title=self.label, baseline=self.baseline)


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
            clock: str = "wall", stat: str = "median") -> BenchResult:
    """Time several functions on the same inputs with interleaved repeats → BenchResult.

    ``clock="cpu"`` times this process's CPU seconds (all its threads) instead of elapsed time:
    for one thread on a machine shared with other jobs it leaves out the moments another job
    held the core; for several threads the ratio becomes their parallel efficiency.
    ``stat="best"`` rates each function by its fastest repeat instead of the median (robust when
    other jobs come and go: the best repeat is the one where all our threads had a core)."""
    entries = _normalise_functions(functions, args)
    names = [e[0] for e in entries]
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
        if isinstance(work, Mapping):
            missing = [n for n in names if n not in work]
            if missing:
                raise ValueError(f"work dict lacks entries for {missing}; give one number per function")
            for n in names:
                _check_positive(f"work[{n!r}]", work[n])
        else:
            _check_positive("work", work)

    # resolve arguments once (a shared callable is called once; per-function ones separately)
    shared = None
    resolved = []
    for name, fn, a in entries:
        if a is args:
            if shared is None:
                shared = _resolve_args(args, "args")
            resolved.append((name, fn, shared))
        else:
            resolved.append((name, fn, _resolve_args(a, f"arguments of {name!r}")))

    compile_s = {name: _first_call(name, fn, a, validate, clock) for name, fn, a in resolved}
    loops = {name: _autoscale(fn, a, min_time, clock) for name, fn, a in resolved}
    times: dict[str, list[float]] = {name: [] for name in names}
    for _ in range(repeat):  # interleaved: f, g, f, g, … so slow drifts hit everyone alike
        for name, fn, a in resolved:
            times[name].append(_time_loops(fn, a, loops[name], clock) / loops[name])

    rows = []
    for name in names:
        med, q1, q3 = _stats(times[name])
        best = float(min(times[name]))
        t = med if stat == "median" else best
        w = work[name] if isinstance(work, Mapping) else work
        rows.append({
            "name": name, "compile_s": compile_s[name], "median_s": med, "best_s": best,
            "q1_s": q1, "q3_s": q3, "spread": (q3 - q1) / med if med > 0 else float("nan"),
            "throughput": (float(w) / t if t > 0 else float("inf")) if w is not None else None,
            "ratio": float("nan"), "loops": loops[name],
        })
    key = "median_s" if stat == "median" else "best_s"
    base_t = next(r[key] for r in rows if r["name"] == baseline)
    for r in rows:
        r["ratio"] = base_t / r[key] if r[key] > 0 else float("inf")
    return BenchResult(rows, baseline=baseline, unit=unit, label=label, repeat=repeat,
                       min_time=min_time, times=times, clock=clock, stat=stat)


# --------------------------------------------------------------------------- sweep

class SweepResult:
    """Result of bench.sweep: time (and throughput) per parameter value, with text/HTML/plot views."""

    def __init__(self, name: str, param: str, values: list, timings: list[Timing],
                 work: list[float] | None, unit: str):
        self.name = name
        self.param = param
        self.values = list(values)
        self.timings = timings
        self.compile_s = [t.compile_s for t in timings]
        self.median_s = [t.median_s for t in timings]
        self.q1_s = [t.q1_s for t in timings]
        self.q3_s = [t.q3_s for t in timings]
        self.work = work
        self.unit = unit
        self.throughput = ([w / m if m > 0 else float("inf") for w, m in zip(work, self.median_s)]
                           if work is not None else None)

    @property
    def best(self):
        """Parameter value with the lowest median time per call (or highest throughput if work given)."""
        if self.throughput is not None:
            return self.values[int(np.argmax(self.throughput))]
        return self.values[int(np.argmin(self.median_s))]

    def to_dict(self) -> dict:
        """Plain-data copy: param, values, median_s, q1_s, q3_s, compile_s, throughput, unit."""
        return {"name": self.name, "param": self.param, "values": list(self.values),
                "median_s": self.median_s, "q1_s": self.q1_s, "q3_s": self.q3_s,
                "compile_s": self.compile_s, "throughput": self.throughput, "unit": self.unit}

    def _cells(self) -> list[list[str]]:
        rows = []
        for i, v in enumerate(self.values):
            t = self.timings[i]
            row = [str(v), format_time(t.median_s),
                   f"{t.spread * 100:.1f} %" if math.isfinite(t.spread) else "–"]
            if self.throughput is not None:
                row.append(format_throughput(self.throughput[i], self.unit))
            row.append("◀ best" if v == self.best else "")
            rows.append(row)
        return rows

    def _head(self) -> list[str]:
        h = [self.param, "median", "spread"]
        if self.throughput is not None:
            h.append("throughput")
        return h + [""]

    def __str__(self) -> str:
        """Text table for terminals."""
        head, cells = self._head(), self._cells()
        widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(head)]
        fmt = lambda vals: "  ".join(  # noqa: E731
            [vals[0].rjust(widths[0])] + [v.rjust(w) for v, w in zip(vals[1:-1], widths[1:-1])] + [vals[-1]]
        ).rstrip()
        lines = [f"sweep of {self.name} over {self.param}", fmt(head),
                 "  ".join("-" * w for w in widths[:-1])]
        lines += [fmt(c) for c in cells]
        return "\n".join(lines)

    def __repr__(self) -> str:
        """Text table (same as str)."""
        return str(self)

    def _repr_html_(self) -> str:
        """HTML table for Jupyter."""
        head, cells = self._head(), self._cells()
        th = "".join(f"<th style='text-align:right;padding:2px 10px'>{html.escape(h)}</th>" for h in head)
        trs = "".join("<tr>" + "".join(f"<td style='text-align:right;padding:2px 10px'>{html.escape(c)}</td>"
                                       for c in row) + "</tr>" for row in cells)
        cap = f"<caption style='text-align:left;font-weight:bold'>sweep of {html.escape(self.name)} over {html.escape(self.param)}</caption>"
        return f"<table class='labkit-sweep' style='border-collapse:collapse'>{cap}<thead><tr>{th}</tr></thead><tbody>{trs}</tbody></table>"

    def plot(self, ax=None):
        """Throughput (or time per call) vs the parameter via labkit.plots; returns the Axes."""
        from . import plots
        numeric = all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)
                      for v in self.values)
        x = self.values if numeric else list(range(len(self.values)))
        if self.throughput is not None:
            ax = plots.throughput_vs(x, {self.name: self.throughput}, xlabel=self.param, unit=self.unit,
                                     ax=ax, logx=numeric and _looks_geometric(self.values))
        else:
            ax = plots.throughput_vs(x, {self.name: self.median_s}, xlabel=self.param, unit="s",
                                     ax=ax, logx=numeric and _looks_geometric(self.values),
                                     ylabel="time per call (s)")
        if not numeric:
            ax.set_xticks(x)
            ax.set_xticklabels([str(v) for v in self.values])
        return ax


def _looks_geometric(values: Sequence) -> bool:
    v = [float(x) for x in values]
    if len(v) < 3 or min(v) <= 0:
        return False
    return max(v) / min(v) >= 16


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


# --------------------------------------------------------------------------- targets

@dataclass(frozen=True)
class Target:
    """One performance target of a lab (its issue's number), checked against the dict that the
    lab's ``run_benchmark()`` returns: ``measure(results)`` → the measured value, or None when
    that run did not measure it (a missing peer). ``at_most``: the value must stay below
    ``need`` (memory, time) instead of reaching it. ``size``: the ``labkit bench --size`` the
    target is stated for (None: the lab's default)."""

    claim: str
    need: float
    measure: Callable[[Mapping[str, Any]], float | None]
    unit: str = "×"
    at_most: bool = False
    size: str | None = None

    def check(self, results: Mapping[str, Any]) -> tuple[float | None, bool | None]:
        """(measured value, met?) — (None, None) when not measured."""
        value = self.measure(results)
        if value is None or not math.isfinite(value):
            return None, None
        return float(value), (value < self.need if self.at_most else value >= self.need)


def _pick(items: Sequence[str], key: str) -> str | None:
    """``key`` itself if present, else the first item starting with it."""
    if key in items:
        return key
    return next((k for k in items if isinstance(k, str) and k.startswith(key)), None)


def _table(results: Mapping[str, Any], table: str) -> BenchResult | None:
    """The BenchResult whose key is (or starts with) ``table``, or None."""
    k = _pick(list(results), table)
    return results[k] if k is not None and isinstance(results[k], BenchResult) else None


def ratio_of(table: str, name: str, baseline: str | None = None) -> Callable:
    """Target measure: ``name``'s ratio over ``baseline`` (default: the table's baseline) in the
    table whose key is (or starts with) ``table``; row names may be given by prefix too."""
    def measure(results):
        res = _table(results, table)
        if res is None:
            return None
        n = _pick(res.names, name)
        b = res.baseline if baseline is None else _pick(res.names, baseline)
        return None if n is None or b is None else res.ratio(n, b)
    return measure


def throughput_of(table: str, name: str, scale: float = 1.0) -> Callable:
    """Target measure: ``name``'s throughput (work items per second) ÷ ``scale``."""
    def measure(results):
        res = _table(results, table)
        if res is None:
            return None
        n = _pick(res.names, name)
        t = None if n is None else res.throughput(n)
        return None if t is None else t / scale
    return measure


def check_targets(targets: Sequence[Target], results: Mapping[str, Any]) -> list[dict]:
    """Each target's claim, need, measured value and verdict (True / False / None = not measured)."""
    out = []
    for t in targets:
        value, ok = t.check(results)
        out.append({"claim": t.claim, "need": t.need, "unit": t.unit, "at_most": t.at_most,
                    "value": value, "met": ok})
    return out


def _format_target(row: dict) -> str:
    def num(v):
        return f"{v:.3g}" if abs(v) < 100 else f"{v:.0f}"
    need = f"{'<' if row['at_most'] else '≥'} {num(row['need'])}{row['unit']}"
    if row["met"] is None:
        return f"  –  {row['claim']}: {need}; not measured in this run"
    mark = "✔" if row["met"] else "✘"
    got = num(row["value"])
    if got == num(row["need"]):              # e.g. 1.7996 vs 1.8: show the digits that decide
        got = f"{row['value']:.4f}"
    return f"  {mark}  {row['claim']}: {need}, measured {got}{row['unit']}"


# --------------------------------------------------------------------------- CLI

def _as_results(obj: Any) -> list[tuple[str | None, BenchResult]]:
    if isinstance(obj, BenchResult):
        return [(None, obj)]
    if isinstance(obj, Mapping):
        return [(str(k), v) for k, v in obj.items()]
    if isinstance(obj, (list, tuple)):
        return [(None, v) for v in obj]
    raise TypeError(f"run_benchmark returned {type(obj).__name__}; expected a BenchResult, a list or a dict of them")


def main(argv: Sequence[str] | None = None) -> int:
    """CLI `labkit bench <lab|all> [--size small|seed|large] [--repeat N]`; returns the exit code."""
    import argparse
    import importlib
    import traceback

    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "bench":
        argv = argv[1:]
    p = argparse.ArgumentParser(prog="labkit bench",
                                description="Run a lab's benchmark and print its table.")
    p.add_argument("lab", nargs="?", default="all", choices=list(LABS) + ["all"],
                   help="which lab to benchmark (default: all)")
    p.add_argument("--size", choices=["small", "seed", "large"], default=None,
                   help="input size (default: the lab's own default)")
    p.add_argument("--repeat", type=int, default=5, help="interleaved repeats (default 5)")
    ns = p.parse_args(argv)
    if ns.repeat < 1:
        p.error("--repeat must be ≥ 1")

    from . import hardware
    print(hardware.summary())
    labs = LABS if ns.lab == "all" else (ns.lab,)
    failed = []
    summary: list[tuple[str, dict]] = []
    for lab in labs:
        modname = f"labkit.{lab}"
        try:
            mod = importlib.import_module(modname)
        except ModuleNotFoundError as e:
            if e.name == modname:
                print(f"\n== {lab} ==\nlab {lab} not available yet")
                continue
            if (e.name or "").startswith(modname + "."):  # a lab package still being written
                print(f"\n== {lab} ==\nlab {lab} not available yet ({e})")
                continue
            print(f"\n== {lab} ==\nlab {lab} could not be imported: {e} (run `labkit doctor`)")
            failed.append(lab)
            continue
        except Exception as e:
            traceback.print_exc()
            print(f"\n== {lab} ==\nlab {lab} could not be imported: {type(e).__name__}: {e}")
            failed.append(lab)
            continue
        run = getattr(mod, "run_benchmark", None)
        if run is None:
            print(f"\n== {lab} ==\nlab {lab} not available yet (no run_benchmark)")
            continue
        print(f"\n== {lab} ==", flush=True)
        try:
            results = _as_results(run(size=ns.size, repeat=ns.repeat))
        except Exception as e:  # report and carry on with the other labs
            traceback.print_exc()
            print(f"lab {lab}: benchmark failed: {type(e).__name__}: {e}")
            failed.append(lab)
            continue
        for key, res in results:
            if key:
                print(f"-- {key}")
            print(res)
            print()
        targets = [t for t in getattr(mod, "TARGETS", ()) if t.size == ns.size]
        if targets:
            rows = check_targets(targets, dict(results))
            print("-- targets (the lab's issue; a miss is a measurement on this machine, "
                  "not a test failure)")
            print("\n".join(_format_target(r) for r in rows) + "\n")
            summary.extend((lab, r) for r in rows)
        elif getattr(mod, "TARGETS", None):
            sizes = sorted({t.size or "default" for t in mod.TARGETS})
            print(f"-- targets: stated for size {', '.join(sizes)}, not --size {ns.size}\n")
    if len(labs) > 1 and summary:
        met = sum(1 for _, r in summary if r["met"])
        measured = sum(1 for _, r in summary if r["met"] is not None)
        print(f"targets met: {met} of {measured} measured ({len(summary)} stated)")
        for lab, r in summary:
            if r["met"] is False:
                print(f"  ✘ {lab}: {r['claim']}")
    if failed:
        print(f"benchmark failed for: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
