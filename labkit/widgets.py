"""Tuners: sliders / dropdowns that re-run a small benchmark and redraw one matplotlib figure.

>>> def run(tile, order):
...     res = bench.compare({"k": lambda: kernel(x, tile, order)}, (), min_time=0.05, repeat=3, work=n)
...     return {"throughput": res.throughput("k")}
>>> widgets.tuner(run, {"tile": [8, 16, 32, 64], "order": ["row", "col"]})

`run(**params)` returns a dict of numbers. The tuner runs once at creation (so the figure is never
empty), then again whenever a control changes, debounced. A key ``"<name>_samples"`` beside
``"<name>"`` (a list of the repeats' values, e.g. ``"throughput_samples"``) is the point's spread:
the status line shows its interval and the default plot draws it as an error bar (the middle half
of the samples with five or more, else min to max — the intervals ``labkit.bench.claim`` compares).
Works in JupyterLab (ipywidgets 8); when a
notebook is executed headless (nbclient / nbval) the figure of the first run is also part of the
cell's output as a PNG.
"""
from __future__ import annotations

import base64
import html
import io
import math
import threading
import time
from numbers import Number, Real
from typing import Any, Callable, Iterable, Mapping, Sequence

import ipywidgets as W

from .bench import format_si, format_time
from .plots import compact_number

__all__ = ["tuner", "Tuner", "spread"]


def _is_number(v: Any) -> bool:
    return isinstance(v, Number) and not isinstance(v, bool)


def _fmt_value(key: str, v: Any, items: str | None = None) -> str:
    if _is_number(v) and isinstance(v, Real):
        v = float(v)
        if _is_time(key):
            return format_time(v)
        if key == "throughput" and items:
            return format_si(v, items if items.endswith("/s") else f"{items}/s")
        return format_si(v)
    return str(v)


SAMPLES = "_samples"


def _samples_of(result: Mapping, key: str) -> list[float] | None:
    """The finite numbers of ``result[key + "_samples"]``, or None when there is no such list."""
    v = result.get(key + SAMPLES)
    if v is None or isinstance(v, (str, bytes)) or not isinstance(v, (Sequence, Iterable)):
        return None
    try:
        xs = [float(x) for x in v if _is_number(x)]
    except TypeError:
        return None
    xs = [x for x in xs if math.isfinite(x)]
    return xs or None


def spread(samples: Sequence[float]) -> tuple[float, float]:
    """(low, high) of a point's samples: the quartiles with five or more, else min and max."""
    xs = sorted(float(x) for x in samples)
    if not xs:
        raise ValueError("spread needs at least one sample")
    if len(xs) >= 5:
        import numpy as np

        lo, hi = np.percentile(xs, [25, 75])
        return float(lo), float(hi)
    return xs[0], xs[-1]


def _is_time(key: str) -> bool:
    return key.endswith("_s") or key in ("time", "seconds", "median", "elapsed")


def _axis_scale(metric: str, vmax: float, items: str | None = None) -> tuple[float, str]:
    """(divisor, unit label) so the axis reads '12.3' instead of '1.23e7'."""
    per = f"{items}/s" if items else "/s"
    if _is_time(metric):
        for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns")):
            if vmax >= scale:
                return scale, unit
        return 1e-9, "ns"
    for scale, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if vmax >= scale:
            return scale, (f"{prefix} {per}" if items else f"{prefix}{per}") if metric == "throughput" else f"×{prefix}"
    return 1.0, per if metric == "throughput" else (items or "")


class Tuner(W.VBox):
    """A VBox of parameter controls, a status line and one figure; re-runs `run` on change."""

    def __init__(self, run: Callable[..., Mapping], params: Mapping[str, Sequence], plot: Callable | None = None,
                 history: bool = True, debounce: float = 0.3, title: str | None = None,
                 metric: str | None = None, unit: str | None = None):
        if not callable(run):
            raise TypeError(f"run must be a callable run(**params) -> dict of numbers, got {type(run).__name__}")
        if not isinstance(params, Mapping) or not params:
            raise TypeError("params must be a non-empty dict name -> list of values, e.g. {'tile': [8, 16, 32]}")
        if plot is not None and not callable(plot):
            raise TypeError("plot must be a callable plot(ax, history) or None for the default plot")
        if isinstance(debounce, bool) or not _is_number(debounce) or not (debounce >= 0):
            raise ValueError(f"debounce must be seconds ≥ 0 (e.g. 0.3), got {debounce!r}")
        self._run_fn = run
        self._plot_fn = plot
        self._keep_history = bool(history)
        self._debounce = float(debounce)
        self._title = title
        self._metric = metric
        self._unit = unit
        self.params = {}
        self.controls: dict[str, W.Widget] = {}
        for name, values in params.items():
            if not isinstance(name, str) or not name.isidentifier():
                raise ValueError(f"parameter names must be valid Python identifiers (run is called run(**params)), got {name!r}")
            if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
                raise TypeError(f"params[{name!r}] must be a list of values, e.g. [8, 16, 32], got {values!r}")
            values = list(values)
            if not values:
                raise ValueError(f"params[{name!r}] is empty; give at least one value")
            self.params[name] = values
            self.controls[name] = self._make_control(name, values)

        self.history: list[dict] = []
        self.runs = 0
        self.last_error: BaseException | None = None
        self.status = W.HTML(value="", layout=W.Layout(min_height="1.6em"))
        self.status.add_class("labkit-tuner-status")
        self.output = W.Output(layout=W.Layout(min_height="2em"))
        self.output.add_class("labkit-tuner-output")
        self._figure = None
        self._png: bytes | None = None
        self._lock = threading.Lock()       # protects the timer
        self._run_lock = threading.Lock()   # one run at a time
        self._timer: threading.Timer | None = None

        children = []
        if title:
            children.append(W.HTML(value=f"<b>{html.escape(str(title))}</b>"))
        children += list(self.controls.values()) + [self.status, self.output]
        super().__init__(children=children)
        self.add_class("labkit-tuner")
        for c in self.controls.values():
            c.observe(self._on_change, names="value")
        self.run_now()  # the plot is never empty; errors here are the author's, so they raise

    # -- building
    @staticmethod
    def _make_control(name: str, values: list) -> W.Widget:
        style = {"description_width": "initial"}
        if all(_is_number(v) for v in values):
            w = W.SelectionSlider(options=[(f"{v:g}" if isinstance(v, float) else str(v), v) for v in values],
                                  value=values[0], description=name, continuous_update=False,
                                  style=style, layout=W.Layout(width="min(100%, 28em)"))
        else:
            w = W.Dropdown(options=[(str(v), v) for v in values], value=values[0], description=name,
                           style=style, layout=W.Layout(width="min(100%, 20em)"))
        w.add_class("labkit-tuner-control")
        # SelectionSlider's view lacks the 'jupyter-widgets' class IntSlider has; add it so browser
        # tests (and CSS) find every slider as `.jupyter-widgets.widget-slider`.
        w.add_class("jupyter-widgets")
        if isinstance(w, W.SelectionSlider):
            w.add_class("widget-slider")
        return w

    # -- state
    @property
    def values(self) -> dict:
        """Current parameter values, name -> value."""
        return {n: c.value for n, c in self.controls.items()}

    @property
    def figure(self):
        """The matplotlib Figure redrawn after every run."""
        return self._figure

    # -- running
    def _on_change(self, change=None) -> None:
        if self._debounce <= 0:
            self._guarded_run()
            return
        shown = ", ".join(f"{k}={v}" for k, v in self.values.items())
        self.status.value = f"<span style='color:#b26a00'>⏳ running… {html.escape(shown)}</span>"
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
            self._timer = threading.Timer(self._debounce, self._guarded_run)
            self._timer.daemon = True
            self._timer.start()

    def _guarded_run(self) -> None:
        try:
            self.run_now()
        except Exception:
            pass  # already shown in the status line and kept in .last_error

    def run_now(self) -> dict:
        """Run the benchmark with the current values now (synchronously), update status and figure; returns the result."""
        with self._run_lock:
            params = self.values
            shown = ", ".join(f"{k}={v}" for k, v in params.items())
            self.status.value = f"<span style='color:#b26a00'>⏳ running… {html.escape(shown)}</span>"
            t0 = time.perf_counter()
            try:
                result = self._run_fn(**params)
                if not isinstance(result, Mapping):
                    raise TypeError(f"run(**params) must return a dict of numbers, e.g. "
                                    f"{{'throughput': 1.2e6}}, got {type(result).__name__}")
                clash = sorted(set(result) & set(params))
                if clash:
                    raise ValueError(f"run() returned keys {clash} that are also parameter names; rename them")
            except Exception as e:
                self.last_error = e
                self.status.value = (f"<span style='color:#c62828'>✘ {html.escape(shown)}: "
                                     f"{html.escape(type(e).__name__)}: {html.escape(str(e))}</span>")
                raise
            elapsed = time.perf_counter() - t0
            self.runs += 1
            self.last_error = None
            entry = {**params, **dict(result)}
            if self._keep_history:
                self.history.append(entry)
            else:
                self.history[:] = [entry]
            nums = " · ".join(self._status_item(k, v, result) for k, v in result.items()
                              if not (k.endswith(SAMPLES) and k[:-len(SAMPLES)] in result))
            self.status.value = (f"<span style='color:#2e7d32'>✔</span> {html.escape(shown)} → "
                                 f"<b>{html.escape(nums)}</b> <span style='color:#777'>(run {self.runs}, "
                                 f"{html.escape(format_time(elapsed))})</span>")
            try:
                self._redraw(entry)
            except Exception as e:
                self.last_error = e
                self.status.value += (f"<br><span style='color:#c62828'>✘ plot failed: "
                                      f"{html.escape(type(e).__name__)}: {html.escape(str(e))}</span>")
                raise
            return dict(result)

    def _status_item(self, k: str, v: Any, result: Mapping) -> str:
        text = f"{k} {_fmt_value(k, v, self._unit)}"
        xs = _samples_of(result, k)
        if xs and len(xs) > 1:
            lo, hi = spread(xs)
            lo, hi = (_fmt_value(k, v, self._unit) for v in (lo, hi))
            text += f" ({lo}–{hi}, {len(xs)} repeats)"
        return text

    def wait(self, timeout: float = 30.0) -> None:
        """Block until a pending (debounced) run has finished; for tests and scripts."""
        deadline = time.monotonic() + timeout
        while True:
            with self._lock:
                timer = self._timer
            if timer is not None:
                timer.join(max(0.0, deadline - time.monotonic()))
            if self._run_lock.acquire(timeout=max(0.0, deadline - time.monotonic())):
                self._run_lock.release()
            with self._lock:
                if self._timer is timer and (timer is None or not timer.is_alive()):
                    return
            if time.monotonic() >= deadline:
                return

    # -- drawing
    def _metric_name(self) -> str | None:
        if self._metric is not None:
            return self._metric
        for entry in reversed(self.history):
            for k, v in entry.items():
                if k not in self.params and _is_number(v):
                    return k
        return None

    def _default_plot(self, ax, history: list[dict], current: dict) -> None:
        from .plots import PALETTE, _style

        metric = self._metric_name()
        names = list(self.params)
        xname, others = names[0], names[1:]
        xvals = self.params[xname]
        numeric_x = all(_is_number(v) for v in xvals)
        pos = (lambda v: v) if numeric_x else (lambda v: xvals.index(v))
        if metric is None or metric not in current:
            ax.text(0.5, 0.5, "run() returned no number to plot", ha="center", va="center",
                    transform=ax.transAxes)
            return
        vals = [abs(float(h[metric])) for h in history if metric in h and _is_number(h[metric])]
        scale, unit = _axis_scale(metric, max(vals, default=1.0), self._unit)
        groups: dict[tuple, dict] = {}
        bars: dict[tuple, dict] = {}
        for h in history:
            if metric not in h or not _is_number(h[metric]):
                continue
            key = tuple(h[o] for o in others)
            groups.setdefault(key, {})[h[xname]] = float(h[metric]) / scale  # a re-run replaces the old point
            xs = _samples_of(h, metric)
            if xs and len(xs) > 1:
                bars.setdefault(key, {})[h[xname]] = tuple(v / scale for v in spread(xs))
            else:
                bars.setdefault(key, {}).pop(h[xname], None)
        for i, (key, pts) in enumerate(groups.items()):
            xs = sorted(pts, key=pos)
            label = ", ".join(f"{o}={v}" for o, v in zip(others, key)) or metric
            color = PALETTE[i % len(PALETTE)]
            ax.plot([pos(x) for x in xs], [pts[x] for x in xs], marker="o", markersize=4, linewidth=1.6,
                    color=color, label=label)
            spans = bars.get(key, {})
            for x, (lo, hi) in spans.items():   # the repeats' spread: one vertical bar per point
                ax.vlines(pos(x), lo, hi, colors=color, linewidth=5, alpha=0.35)
        ax.plot([pos(current[xname])], [float(current[metric]) / scale], marker="o", markersize=13,
                markerfacecolor="none", markeredgecolor="#c2504b", markeredgewidth=2, linestyle="none",
                label="current")
        if numeric_x:
            if min(xvals) > 0 and max(xvals) / min(xvals) >= 16:
                ax.set_xscale("log", base=2)
                ax.minorticks_off()
            ax.set_xticks(list(xvals))
            ax.set_xticklabels([compact_number(v) for v in xvals])
        else:
            ax.set_xticks(range(len(xvals)))
            ax.set_xticklabels([str(v) for v in xvals])
        ax.set_xlabel(xname)
        base = metric[:-2] if _is_time(metric) and metric.endswith("_s") else metric
        ax.set_ylabel(base.replace("_", " ") + (f" ({unit})" if unit else ""))
        ax.set_ylim(bottom=0)
        if len(groups) > 1 or others:
            ax.legend(frameon=False, fontsize=8)
        else:
            ax.legend(frameon=False, fontsize=8, handles=ax.lines[-1:])
        if self._title:
            ax.set_title(str(self._title), fontsize=11)
        _style(ax, grid_axis="both")

    def _redraw(self, current: dict) -> None:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        if self._figure is None:
            self._figure = Figure(figsize=(6.0, 3.4), layout="constrained")
            FigureCanvasAgg(self._figure)
        fig = self._figure
        fig.clear()
        ax = fig.add_subplot()
        if self._plot_fn is not None:
            self._plot_fn(ax, list(self.history))
        else:
            self._default_plot(ax, self.history, current)
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=90)
        self._png = buf.getvalue()
        self.output.outputs = ({
            "output_type": "display_data",
            "data": {"image/png": base64.b64encode(self._png).decode("ascii"),
                     "text/plain": f"<tuner figure: {len(self.history)} runs>"},
            "metadata": {},
        },)

    # -- display
    def _text(self) -> str:
        return "tuner(" + ", ".join(f"{k}={v}" for k, v in self.params.items()) + ")"

    def __repr__(self) -> str:
        """Stable text (no timings), also the text/plain of the cell output."""
        return self._text()

    def _repr_mimebundle_(self, **kwargs):
        """Widget view for JupyterLab, plus the current figure as PNG for headless/static viewers."""
        bundle = super()._repr_mimebundle_(**kwargs) or {}
        if isinstance(bundle, tuple):  # (data, metadata)
            data, meta = bundle
        else:
            data, meta = bundle, None
        data = dict(data)
        data["text/plain"] = self._text()
        if self._png:
            data["image/png"] = base64.b64encode(self._png).decode("ascii")
        return (data, meta) if meta is not None else data


def tuner(run: Callable[..., Mapping], params: Mapping[str, Sequence], plot: Callable | None = None,
          history: bool = True, debounce: float = 0.3, title: str | None = None,
          metric: str | None = None, unit: str | None = None) -> Tuner:
    """Controls per parameter that re-run `run(**params)` (a dict of numbers) and redraw a figure."""
    return Tuner(run, params, plot=plot, history=history, debounce=debounce, title=title, metric=metric,
                 unit=unit)
