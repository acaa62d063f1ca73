"""Formatting of measured numbers: durations, SI prefixes, throughputs and speedup ratios."""
from __future__ import annotations

import math

__all__ = ["format_time", "format_si", "format_throughput", "format_ratio"]


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
