"""Comparative sentences computed from measured samples: a direction only when the intervals separate.

A lesson's computed prose says "B is 2.3× faster than A" only when this run's samples show it:
the interval of B's repeats lies wholly on one side of A's. Otherwise it says that this run
does not tell them apart, with the ratio's range and the load the machine carried, never the
opposite lesson. The word always fits the sign ("1.4× slower", never "0.7× faster" or "1.0×
slower"), and the ratio printed is the one the word describes (≥ 1).

>>> c = claim(res.times["simd"], res.times["scalar"], "simd", "scalar")      # seconds per call
>>> str(c)
'simd is 4.8× faster than scalar (4.5–5.1× across 5 repeats)'
>>> c.separated, c.word, c.times
(True, 'faster', 4.8)

``BenchResult.claim(name, than)`` does the same on a compare() result; ``kind="rate"`` takes
throughputs (higher is better: "higher"/"lower" instead of "faster"/"slower").

Intervals: with five or more samples, the middle half of each (quartiles); with fewer, all of
them (min to max). Those are the two ends a busy machine moves.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Sequence

import numpy as np

__all__ = ["Claim", "claim", "load_note"]

_WORDS = {"time": ("faster", "slower"), "rate": ("higher", "lower")}


def load_note() -> str:
    """'load 3.1 on 2 cores' (the 1-minute load average), or '' where the OS does not report it."""
    if not hasattr(os, "getloadavg"):
        return ""
    try:
        one = os.getloadavg()[0]
    except OSError:
        return ""
    return f"load {one:.1f} on {os.cpu_count() or '?'} cores"


def _interval(a: np.ndarray) -> tuple[float, float]:
    if a.size >= 5:
        lo, hi = np.percentile(a, [25, 75])
        return float(lo), float(hi)
    return float(a.min()), float(a.max())


def _samples(x, what: str) -> np.ndarray:
    if isinstance(x, (int, float, np.number)):
        x = [x]
    try:
        a = np.asarray(list(x), dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{what} must be a sequence of measured numbers (e.g. res.times['name']), "
                        f"got {type(x).__name__}") from None
    if a.size == 0:
        raise ValueError(f"{what} is empty: give the measured samples (at least one)")
    if not np.all(np.isfinite(a)) or np.any(a <= 0):
        raise ValueError(f"{what} must be positive, finite measurements, got {a.tolist()}")
    return a


def _fmt(r: float) -> str:
    """A ratio ≥ 1 with enough digits that it never reads '1.0×' for a real difference."""
    if r >= 10:
        return f"{r:.0f}×"
    if r >= 1.5:
        return f"{r:.1f}×"
    return f"{r:.2f}×"


@dataclass(frozen=True)
class Claim:
    """How ``subject`` compares with ``other`` on this run's samples.

    ``ratio``: subject's advantage by medians (> 1: subject better — faster, or a higher rate);
    ``low``/``high``: the ratio between the intervals' facing ends (their range across repeats);
    ``separated``: the intervals do not overlap; ``word``: "faster"/"slower" ("higher"/"lower" for
    rates), or None when not separated; ``times``: the ratio the word describes (≥ 1)."""

    subject: str
    other: str
    ratio: float
    low: float
    high: float
    separated: bool
    kind: str = "time"
    n: int = 0
    load: str = ""

    @property
    def better(self) -> bool | None:
        """True/False when the intervals separate (subject better/worse), None when they do not."""
        return (self.ratio > 1) if self.separated else None

    @property
    def word(self) -> str | None:
        if not self.separated:
            return None
        good, bad = _WORDS[self.kind]
        return good if self.ratio > 1 else bad

    @property
    def times(self) -> float:
        return self.ratio if self.ratio >= 1 else 1 / self.ratio

    @property
    def phrase(self) -> str:
        """'2.3× faster', '1.4× slower', or 'not distinguishable on this run (0.92–1.10×)'."""
        if self.separated and self.kind == "rate":
            return f"{_fmt(self.ratio)} the rate"
        if self.separated:
            return f"{_fmt(self.times)} {self.word}"
        return f"not distinguishable on this run ({self.low:.2f}–{self.high:.2f}×)"

    def _range(self) -> str:
        lo, hi = sorted((self.low, self.high) if self.ratio >= 1 else (1 / self.low, 1 / self.high))
        reps = f"{self.n} repeats" if self.n else "the repeats"
        return f"{_fmt(lo).rstrip('×')}–{_fmt(hi)} across {reps}"

    def sentence(self) -> str:
        """The whole comparison as one clause (no final full stop)."""
        if self.separated and self.kind == "rate":
            reps = f"{self.n} repeats" if self.n else "the repeats"
            return (f"{self.subject} runs at {_fmt(self.ratio)} {self.other}'s rate "
                    f"({self.low:.2f}–{self.high:.2f}× across {reps})")
        if self.separated:
            return f"{self.subject} is {_fmt(self.times)} {self.word} than {self.other} ({self._range()})"
        load = f"; {self.load}" if self.load else ""
        what = "speed" if self.kind == "time" else "rate"
        reps = f"{self.n} repeats" if self.n else "the repeats"
        return (f"{self.subject} and {self.other} are not told apart by this run ({self.subject} at "
                f"{self.low:.2f}–{self.high:.2f}× {self.other}'s {what} across {reps}, which "
                f"overlap{load})")

    def __str__(self) -> str:
        return self.sentence()

    def pick(self, better: str, worse: str, unclear: str) -> str:
        """One of three texts by the outcome: subject better, worse, or not separated."""
        return unclear if not self.separated else (better if self.ratio > 1 else worse)


def claim(subject: Sequence[float], other: Sequence[float], subject_name: str = "the first",
          other_name: str = "the second", *, kind: str = "time") -> Claim:
    """Compare two sets of measured samples → :class:`Claim`.

    ``kind="time"``: samples are durations (lower is better); ``kind="rate"``: throughputs
    (higher is better)."""
    if kind not in _WORDS:
        raise ValueError(f"kind must be 'time' (durations) or 'rate' (throughputs), got {kind!r}")
    a, b = _samples(subject, "subject"), _samples(other, "other")
    if kind == "time":                       # advantage = other's time ÷ subject's time
        a, b = 1 / a, 1 / b
    (alo, ahi), (blo, bhi) = _interval(a), _interval(b)
    ratio = float(np.median(a) / np.median(b))
    separated = alo > bhi or ahi < blo
    low, high = alo / bhi, ahi / blo
    if not math.isfinite(ratio):             # pragma: no cover - samples are checked positive
        raise ValueError("samples gave no finite ratio")
    return Claim(subject_name, other_name, ratio, low, high, separated, kind,
                 n=int(min(a.size, b.size)), load="" if separated else load_note())
