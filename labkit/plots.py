"""The few plot kinds the labs share: speedup bars, throughput vs a parameter, heatmap, roofline.

Matplotlib only. Every function labels its axes with units and returns the Axes; pass `ax=` to
draw into an existing figure.
"""
from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np

__all__ = ["speedup_bars", "throughput_vs", "heatmap", "roofline", "PALETTE", "new_axes", "compact_number"]

# A calm, colour-blind-friendly palette (blue, orange, green, red, purple, grey, …).
PALETTE = ["#3b6ea8", "#e07b39", "#5a9e6f", "#c2504b", "#8a6bb1", "#8c8c8c", "#c9a227", "#4fa3b5"]
BASELINE_COLOR = "#9e9e9e"

_SI = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""))


def new_axes(figsize=(6.0, 3.6)):
    """A fresh styled Axes on its own figure (pyplot figure, so notebooks display it)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=figsize, layout="constrained")
    return ax


def _axes(ax, figsize):
    if ax is None:
        return new_axes(figsize)
    if not hasattr(ax, "plot") or not hasattr(ax, "figure"):
        raise TypeError(f"ax must be a matplotlib Axes (or None for a new figure), got {type(ax).__name__}")
    return ax


def _style(ax, grid_axis="y"):
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    for side in ("left", "bottom"):
        ax.spines[side].set_color("#555555")
    ax.tick_params(colors="#333333", labelsize=9)
    if grid_axis:
        ax.grid(True, axis=grid_axis, color="#dddddd", linewidth=0.8)
        ax.set_axisbelow(True)
    ax.title.set_fontsize(11)
    ax.xaxis.label.set_fontsize(10)
    ax.yaxis.label.set_fontsize(10)
    return ax


def _numbers(name: str, values, *, positive=False) -> np.ndarray:
    try:
        arr = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{name} must be a sequence of numbers: {e}") from None
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if positive and np.any(~(arr > 0)):
        raise ValueError(f"{name} must be positive numbers (> 0), got {list(values)}")
    return arr


def _ratio_text(r: float) -> str:
    if not math.isfinite(r):
        return "–"
    if r >= 100:
        return f"{r:.0f}×"
    if r >= 0.995:
        return f"{r:.1f}×"
    return f"{r:.2g}×"


def speedup_bars(names: Sequence[str], ratios: Sequence[float], ax=None, title: str | None = None,
                 baseline: str | None = None, xlabel: str | None = None):
    """Horizontal bars of speedup ratios (× vs baseline), each labelled '4.8×'; returns the Axes."""
    names = [str(n) for n in names]
    r = _numbers("ratios", ratios, positive=True)
    if len(names) != len(r):
        raise ValueError(f"names and ratios differ in length ({len(names)} vs {len(r)}); give one ratio per name")
    if not names:
        raise ValueError("nothing to plot: names is empty")
    if baseline is None:
        ones = [n for n, v in zip(names, r) if abs(v - 1.0) < 1e-12]
        baseline = ones[0] if len(ones) == 1 else None
    ax = _axes(ax, (6.0, 0.5 + 0.45 * len(names)))
    y = np.arange(len(names))[::-1]
    colors = [BASELINE_COLOR if n == baseline else PALETTE[0] for n in names]
    ax.barh(y, r, color=colors, height=0.6)
    log = r.max() / r.min() >= 50
    if log:
        ax.set_xscale("log")
    ax.axvline(1.0, color="#555555", linewidth=1, linestyle="--")
    xmax = r.max() * (3.0 if log else 1.18)
    ax.set_xlim(right=xmax, left=(min(r.min(), 1.0) / 2 if log else 0))
    for yi, v in zip(y, r):
        ax.text(v * (1.05 if log else 1.0) + (0 if log else r.max() * 0.015), yi, _ratio_text(v),
                va="center", ha="left", fontsize=9, color="#222222")
    ax.set_yticks(y)
    ax.set_yticklabels(names)
    ax.set_xlabel(xlabel or (f"speedup vs {baseline} (×, higher is faster)" if baseline
                             else "speedup (×, higher is faster)"))
    if title:
        ax.set_title(title)
    return _style(ax, grid_axis="x")


def _si_scale(vmax: float) -> tuple[float, str]:
    for scale, prefix in _SI:
        if vmax >= scale:
            return scale, prefix
    return 1.0, ""


def compact_number(v) -> str:
    """Short tick label: 1024 → '1Ki', 3·2^20 → '3Mi', 1.5e6 → '1.5M', 12 → '12'."""
    v = float(v)
    if v.is_integer() and v >= 1024:
        for div, suffix in ((2 ** 30, "Gi"), (2 ** 20, "Mi"), (2 ** 10, "Ki")):
            if v >= div and v % div == 0:
                return f"{int(v // div)}{suffix}"
    for div, suffix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= div:
            return f"{v / div:.3g}{suffix}"
    return f"{v:g}"


def throughput_vs(x: Sequence, ys: Mapping[str, Sequence[float]], xlabel: str, unit: str = "items",
                  ax=None, logx: bool = False, ylabel: str | None = None, highlight=None,
                  title: str | None = None):
    """Lines of throughput vs a parameter, one per series in ys; y axis in SI units of unit/s; returns the Axes."""
    if not isinstance(ys, Mapping) or not ys:
        raise TypeError("ys must be a non-empty dict name -> list of values, e.g. {'simd': [1e6, 2e6]}")
    if not isinstance(xlabel, str):
        raise TypeError(f"xlabel must be a str (the parameter and its unit), got {xlabel!r}")
    xs = _numbers("x", x)
    series = {}
    for name, v in ys.items():
        arr = _numbers(f"ys[{name!r}]", v)
        if len(arr) != len(xs):
            raise ValueError(f"ys[{name!r}] has {len(arr)} values but x has {len(xs)}; give one per x")
        series[str(name)] = arr
    ax = _axes(ax, (6.0, 3.6))
    finite = np.concatenate([a[np.isfinite(a)] for a in series.values()] or [np.array([1.0])])
    vmax = float(np.max(np.abs(finite))) if finite.size else 1.0
    if ylabel is None:
        scale, prefix = _si_scale(vmax)
        per = unit if unit.endswith("/s") else f"{unit}/s"
        ylabel = f"throughput ({prefix + ' ' if prefix else ''}{per})"
    else:
        scale = 1.0
    for i, (name, arr) in enumerate(series.items()):
        ax.plot(xs, arr / scale, marker="o", markersize=4, linewidth=1.6,
                color=PALETTE[i % len(PALETTE)], label=name)
    if highlight is not None:
        hx, hy = highlight
        ax.plot([hx], [hy / scale], marker="o", markersize=12, markerfacecolor="none",
                markeredgecolor="#c2504b", markeredgewidth=2, linestyle="none", label="current")
    if logx:
        if np.any(xs <= 0):
            raise ValueError("logx=True needs positive x values")
        ax.set_xscale("log", base=2)
        ax.set_xticks(xs)
        ax.set_xticklabels([compact_number(v) for v in xs])
        ax.minorticks_off()
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_ylim(bottom=0)
    if len(series) > 1 or highlight is not None:
        ax.legend(frameon=False, fontsize=9)
    if title:
        ax.set_title(title)
    return _style(ax, grid_axis="both")


def heatmap(matrix, ax=None, xlabels: Sequence | None = None, ylabels: Sequence | None = None,
            xlabel: str = "column", ylabel: str = "row", cbar_label: str = "value",
            title: str | None = None, cmap: str = "viridis", annotate: bool | None = None,
            fmt: str = "{:.3g}", vmin=None, vmax=None):
    """Colour-coded 2-D matrix with a labelled colour bar (annotated when small); returns the Axes."""
    m = np.asarray(matrix)
    if m.ndim != 2:
        raise ValueError(f"heatmap needs a 2-D matrix, got shape {m.shape}")
    if m.size == 0:
        raise ValueError("heatmap got an empty matrix")
    try:
        m = m.astype(float)
    except (TypeError, ValueError):
        raise TypeError(f"heatmap needs numbers, got dtype {m.dtype}") from None
    if xlabels is not None and len(xlabels) != m.shape[1]:
        raise ValueError(f"xlabels has {len(xlabels)} entries but the matrix has {m.shape[1]} columns")
    if ylabels is not None and len(ylabels) != m.shape[0]:
        raise ValueError(f"ylabels has {len(ylabels)} entries but the matrix has {m.shape[0]} rows")
    ax = _axes(ax, (5.0, 4.0))
    im = ax.imshow(m, cmap=cmap, aspect="auto", vmin=vmin, vmax=vmax, interpolation="nearest")
    cbar = ax.figure.colorbar(im, ax=ax)
    cbar.set_label(cbar_label)
    if xlabels is not None:
        ax.set_xticks(range(m.shape[1]))
        ax.set_xticklabels([str(v) for v in xlabels], rotation=45 if m.shape[1] > 8 else 0)
    if ylabels is not None:
        ax.set_yticks(range(m.shape[0]))
        ax.set_yticklabels([str(v) for v in ylabels])
    if annotate is None:
        annotate = m.shape[0] * m.shape[1] <= 144
    if annotate:
        lo, hi = im.get_clim()
        mid = (lo + hi) / 2
        for (i, j), v in np.ndenumerate(m):
            if np.isfinite(v):
                ax.text(j, i, fmt.format(v), ha="center", va="center", fontsize=8,
                        color="white" if v < mid else "black")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    return _style(ax, grid_axis=None)


def roofline(peak_gflops: float, bandwidth_gbs: float, points: Mapping[str, tuple] | None = None,
             ax=None, title: str | None = None):
    """Roofline: min(peak, bandwidth × intensity) on log-log axes, kernels as labelled points; returns the Axes."""
    for name, v in (("peak_gflops", peak_gflops), ("bandwidth_gbs", bandwidth_gbs)):
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
            raise TypeError(f"{name} must be a number, got {v!r}")
        if not (v > 0 and math.isfinite(v)):
            raise ValueError(f"{name} must be > 0, got {v!r}")
    points = dict(points or {})
    for name, p in points.items():
        if not (isinstance(p, (tuple, list)) and len(p) == 2):
            raise TypeError(f"points[{name!r}] must be (arithmetic_intensity, gflops), got {p!r}")
        if not all(isinstance(v, (int, float, np.integer, np.floating)) and v > 0 for v in p):
            raise ValueError(f"points[{name!r}] must be two positive numbers (FLOP/byte, GFLOP/s), got {p!r}")
    ax = _axes(ax, (6.0, 4.0))
    ridge = peak_gflops / bandwidth_gbs
    ais = [p[0] for p in points.values()]
    lo = min([ridge / 64] + [a / 2 for a in ais])
    hi = max([ridge * 64] + [a * 2 for a in ais])
    xs = np.geomspace(lo, hi, 256)
    roof = np.minimum(peak_gflops, bandwidth_gbs * xs)
    ax.plot(xs, roof, color="#333333", linewidth=2)
    ax.axvline(ridge, color="#aaaaaa", linestyle=":", linewidth=1)
    xb = ridge / 8
    ax.text(xb, bandwidth_gbs * xb * 1.6, f"memory {bandwidth_gbs:g} GB/s", fontsize=8, color="#555555",
            ha="right", va="bottom")
    ax.text(hi / 1.1, peak_gflops * 1.08, f"peak {peak_gflops:g} GFLOP/s", fontsize=8,
            color="#555555", ha="right", va="bottom")
    for i, (name, (ai, gf)) in enumerate(points.items()):
        ax.plot([ai], [gf], marker="o", markersize=7, color=PALETTE[i % len(PALETTE)], linestyle="none")
        ax.annotate(str(name), (ai, gf), textcoords="offset points", xytext=(6, -10), fontsize=9,
                    color=PALETTE[i % len(PALETTE)])
    ax.set_xscale("log")
    ax.set_yscale("log")
    ymax = max([peak_gflops] + [p[1] for p in points.values()]) * 2
    ymin = min([bandwidth_gbs * lo] + [p[1] for p in points.values()]) / 2
    ax.set_ylim(ymin, ymax)
    ax.set_xlim(lo, hi)
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("performance (GFLOP/s)")
    if title:
        ax.set_title(title)
    return _style(ax, grid_axis="both")
