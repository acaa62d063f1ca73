"""The result classes of :func:`~labkit.bench.compare` and :func:`~labkit.bench.sweep`: one row
per function (or parameter value) with text, HTML and plot views."""
from __future__ import annotations

import html
import math
from typing import Any, Sequence

import numpy as np

from labkit.timing.formatting import format_ratio, format_throughput, format_time
from labkit.timing.timer import Timing

__all__ = ["BenchResult", "SweepResult"]


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
        self.predictions: dict | None = None   # name → Prediction, once with_predictions ran
        self.hz: float | None = None           # the core clock that turned seconds into cycles
        self._calls: dict = {}                 # name → (fn, args), kept by compare(predict=)

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

    def cycles_per_item(self, name: str, hz: float | None = None) -> float:
        """Clock cycles per work item of `name`: seconds per item × the core clock (``hz``, or
        measured now by ``labkit.hardware.clock.measure_clock``). Needs compare(work=...)."""
        tp = self.throughput(name)
        if not tp:
            raise ValueError(f"{name!r} has no throughput: give compare() work= (items per call) "
                             "to get cycles per item")
        if hz is None:
            from labkit.hardware.clock import measure_clock
            hz = measure_clock()
        if not (isinstance(hz, (int, float)) and hz > 0):
            raise ValueError(f"hz must be a positive clock frequency in Hz, got {hz!r}")
        return float(hz) / tp

    # -- predicted beside measured (labkit.inspect.predict)
    def with_predictions(self, predict: Any = True, *, hz: float | None = None,
                         cpu: str | None = None) -> "BenchResult":
        """Put OSACA's bound for each kernel's hot loop beside its measured cycles per element:
        every row gains ``cycles_per_elem`` (best repeat × the core clock ÷ work, the work
        counting the hot loop's elements per call) and ``predicted_cycles_per_elem`` (a positive
        number, or None with the reason in ``prediction_note``); the tables show both columns.

        ``predict``: True (every row :func:`compare` timed, with its own arguments), a list of
        row names, or a dict row name → function, ``(function, args)``, ``(function, args,
        options)`` (options: predict()'s ``elements_per_iteration``, ``loop``, ``cpu``) or a
        ready :class:`~labkit.inspect.uarch.Prediction`. ``hz``: the clock (default: measured
        now by :func:`labkit.hardware.clock.measure_clock`). A row without a model, a loop or
        OSACA gets a note, never an exception. Returns this result."""
        from .uarch import _clock_hz
        predict = self._prediction_specs(predict)
        self.hz = _clock_hz(hz)
        self.predictions = dict(self.predictions or {})
        for r in self.rows:
            self._predict_row(r, predict, cpu)
        return self

    def _prediction_specs(self, predict: Any) -> dict:
        """``predict`` as a dict row name → spec, True and a list of names read from the
        functions :func:`compare` kept; every name checked to be a row."""
        if predict is True:
            if not self._calls:
                raise ValueError("this result kept no functions (compare() keeps them only with "
                                 "predict=): give a dict name → (function, args)")
            predict = {n: self._calls[n] for n in self.names if n in self._calls}
        elif isinstance(predict, (list, tuple)) and all(isinstance(n, str) for n in predict):
            missing = [n for n in predict if n not in self._calls]
            if missing:
                raise ValueError(f"no function and arguments kept for {missing}: give a dict "
                                 "name → (function, args) instead")
            predict = {n: self._calls[n] for n in predict}
        if not isinstance(predict, dict):
            raise TypeError("predict must be True, a list of row names or a dict name → "
                            f"function / (function, args) / Prediction; got {type(predict).__name__}")
        for n in predict:
            self._row(n)
        return predict

    def _predict_row(self, r: dict, predict: dict, cpu: str | None) -> None:
        """One row's measured and predicted cycles per element, and why a prediction is
        missing; its Prediction kept in :attr:`predictions`."""
        name = r["name"]
        work = r.get("work")
        if work is None and r.get("throughput"):
            work = r["throughput"] * (r["median_s"] if self.stat == "median" else r["best_s"])
        r["cycles_per_elem"] = (self.hz * r["best_s"] / work) if work else None
        if name not in predict:
            r.setdefault("predicted_cycles_per_elem", None)
            r.setdefault("prediction_note", "not predicted")
            return
        p, why = self._prediction(name, predict[name], cpu)
        per = p.cycles_per_element if p is not None else None
        if p is not None and per is None:
            why = ("the loop's step could not be read: predict it with "
                   f"elements_per_iteration= ({p.cycles_per_iteration:.2f} cycles per "
                   "loop iteration)")
        if work is None:
            why = "; ".join(w for w in (why, "no work= given: cycles per element need the "
                                             "elements per call") if w)
        if p is not None:
            self.predictions[name] = p
        else:
            self.predictions.pop(name, None)
        r["predicted_cycles_per_elem"] = per
        r["prediction_note"] = why

    def _prediction(self, name: str, spec: Any, cpu: str | None) -> tuple[Any, str]:
        """(Prediction or None, why not) for one row's spec: a ready Prediction, or predicted
        from a function with the row's arguments or its own, and options."""
        from .uarch import prediction_for
        from labkit.inspect.uarch import Prediction
        if isinstance(spec, Prediction):
            return spec, ""
        fn, args, opts = spec, self._calls.get(name, (None, ()))[1], {}
        if isinstance(spec, tuple):
            fn, args, opts = (tuple(spec) + ({},))[:3] if len(spec) == 2 else spec
        return prediction_for(fn, args, **{"cpu": cpu, **dict(opts)})

    def predicted(self, name: str) -> float | None:
        """OSACA's cycles per element for `name` (None: see :meth:`explain`)."""
        return self._row(name).get("predicted_cycles_per_elem")

    def cycles_per_elem(self, name: str) -> float | None:
        """Measured cycles per element of `name` (after :meth:`with_predictions`)."""
        return self._row(name).get("cycles_per_elem")

    def explain(self, name: str) -> str:
        """One computed sentence: `name`'s bound and how close its measurement runs to it
        (:meth:`~labkit.inspect.uarch.Prediction.explain`), or why there is no prediction."""
        r = self._row(name)
        if "predicted_cycles_per_elem" not in r:
            raise ValueError("no predictions in this result: call with_predictions() or "
                             "compare(..., predict=...) first")
        p = (self.predictions or {}).get(name)
        note = r.get("prediction_note") or ""
        note = note.rstrip(".")
        if p is None:
            return f"{name}: no prediction — {note}."
        measured = r.get("cycles_per_elem")
        usable = measured is not None and p.cycles_per_element is not None
        text = p.explain(measured if usable else None)
        return f"{name}: {text}" + (f" ({note})" if note and not usable else "")

    def ratio(self, name: str, baseline: str | None = None) -> float:
        """Speedup of `name` over `baseline` (default: the result's baseline): >1 means faster."""
        base = self.baseline if baseline is None else baseline
        return self.time(base) / self.time(name)

    def claim(self, name: str, than: str | None = None):
        """How `name` compares with `than` (default: the baseline) on this result's repeats →
        :class:`~labkit.bench.claims.Claim`: "2.3× faster" only when their repeats separate,
        otherwise a sentence saying this run cannot tell them apart."""
        from .claims import claim
        other = self.baseline if than is None else than
        for n in (name, other):
            self._row(n)
            if not self.times.get(n):
                raise ValueError(f"{n!r} has no per-repeat times in this result (hand-made rows): "
                                 "a claim needs the measured repeats")
        return claim(self.times[name], self.times[other], name, other)

    def to_dict(self) -> dict:
        """Plain-data copy (JSON-serialisable): label, unit, baseline, repeat, min_time, rows, times."""
        return {
            "label": self.label, "unit": self.unit, "baseline": self.baseline,
            "repeat": self.repeat, "min_time": self.min_time, "clock": self.clock,
            "stat": self.stat, "hz": self.hz,
            "rows": [dict(r) for r in self.rows],
            "times": {k: list(v) for k, v in self.times.items()},
        }

    # -- views
    @property
    def _predicted(self) -> bool:
        return self.predictions is not None

    def _columns(self) -> list[tuple[str, list[str]]]:
        """(heading, one cell per row) for the columns shown: throughput only when some row has
        one, the two cycle columns only after :meth:`with_predictions`; the ratio is last."""
        def cyc(v):
            return f"{v:.2f}" if isinstance(v, (int, float)) and math.isfinite(v) else "–"
        t = "median_s" if self.stat == "median" else "best_s"
        cols = [("name", [r["name"] for r in self.rows]),
                ("first call", [format_time(r["compile_s"]) for r in self.rows]),
                ("best" if self.stat == "best" else "median", [format_time(r[t]) for r in self.rows]),
                ("spread", [f"{r['spread'] * 100:.1f} %" if math.isfinite(r["spread"]) else "–"
                            for r in self.rows])]
        if any(r["throughput"] is not None for r in self.rows):
            cols.append(("throughput", [format_throughput(r["throughput"], self.unit)
                                        if r["throughput"] is not None else "–" for r in self.rows]))
        if self._predicted:
            cols.append(("cycles/elem", [cyc(r.get("cycles_per_elem")) for r in self.rows]))
            cols.append(("predicted cycles/elem",
                         [cyc(r.get("predicted_cycles_per_elem")) for r in self.rows]))
        cols.append(("ratio", [(r.get("ratio_note") or format_ratio(r["ratio"]))
                               + (" (baseline)" if r["name"] == self.baseline else "")
                               for r in self.rows]))
        return cols

    def _cells(self) -> list[list[str]]:
        cols = self._columns()
        return [[c[1][i] for c in cols] for i in range(len(self.rows))]

    _HEAD = ["name", "first call", "median", "spread", "throughput", "ratio"]

    @property
    def _head(self) -> list[str]:
        return [h for h, _ in self._columns()]

    def _footer(self) -> str:
        what = "process CPU seconds (all threads), " if self.clock == "cpu" else ""
        what += "median of" if self.stat == "median" else "best of"
        text = (f"{what} {self.repeat} interleaved repeats (≥ {format_time(self.min_time)} "
                f"each); spread = IQR/median; ratio = time of {self.baseline} ÷ time (higher is faster)")
        if self._predicted:
            from .uarch import CLOCK_NOTE
            models = sorted({p.model + " model" + (f" for {p.cpu}" if p.approximation else "")
                             for p in (self.predictions or {}).values()})
            text += (f"\ncycles/elem = best repeat × {self.hz / 1e9:.2f} GHz ({CLOCK_NOTE}) ÷ "
                     "elements per call; predicted = OSACA's bound for the hot loop "
                     "(labkit.inspect.predict" + (f"; OSACA's {', '.join(models)}"
                                                  if models else "")
                     + "; every load from L1, a perfect front end)")
            for r in self.rows:
                note = r.get("prediction_note")
                if note and note != "not predicted":
                    text += f"\n{r['name']}: {note}"
        return text

    def __str__(self) -> str:
        """Text table for terminals."""
        cells = self._cells()
        head = list(self._head)
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
        head = self._head
        maxr = max((r["ratio"] for r in self.rows if math.isfinite(r["ratio"])), default=1.0)
        th = "".join(f"<th style='text-align:{'left' if i == 0 else 'right'};padding:2px 10px'>"
                     f"{html.escape(h)}</th>" for i, h in enumerate(head))
        body = []
        for r, c in zip(self.rows, self._cells()):
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
        foot = "<br>".join(html.escape(ln) for ln in self._footer().splitlines())
        return (f"<table class='labkit-bench' style='border-collapse:collapse'>{cap}"
                f"<thead><tr>{th}</tr></thead><tbody>{''.join(body)}</tbody></table>"
                f"<div style='font-size:smaller;color:#666'>{foot}</div>")

    def plot(self, ax=None):
        """Speedup bars (ratio vs baseline) via labkit.plots.speedup_bars; returns the Axes."""
        from .. import plots
        return plots.speedup_bars(self.names, [r["ratio"] for r in self.rows], ax=ax,
                                  title=self.label, baseline=self.baseline)


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
        from .. import plots
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
