"""Speed ratios as the checks report them: the median of the rounds' ratios with its
distribution-free interval (:class:`Measurement`), and the words a message uses for a ratio —
printed to two decimals, "faster" / "slower" / "the same speed" only where the interval agrees,
and the verdict of a student below a target (:func:`_verdict`).

Shared by :mod:`labkit.check.speed` (one gate's ratio to labkit's kernel) and
:mod:`labkit.check.challenge` (a challenge's position between two anchors).
"""
from __future__ import annotations

import math

_sorted = sorted


class Measurement:
    """Per-round ratios, sorted, with their median (``ratio``) and its interval (``low``,
    ``high``)."""

    def __init__(self, ratios: list[float]):
        self.ratios = _sorted(ratios)
        self.ratio = _median(self.ratios)
        self.low, self.high = _median_interval(self.ratios)

    def __repr__(self):
        return f"ratio {self.ratio:.2f} [{self.low:.2f}, {self.high:.2f}] over {len(self.ratios)}"


def _median(xs: list[float]) -> float:
    """The median of sorted ``xs``."""
    n = len(xs)
    return xs[n // 2] if n % 2 else 0.5 * (xs[n // 2 - 1] + xs[n // 2])


def _median_interval(xs: list[float], z: float = 1.645) -> tuple[float, float]:
    """Order-statistic interval of the median (≈ 90 % for z = 1.645), sorted ``xs``."""
    n = len(xs)
    if n < 3:
        return xs[0], xs[-1]
    half = z * math.sqrt(n) / 2
    lo = max(0, int(math.floor(n / 2 - half)))
    hi = min(n - 1, int(math.ceil(n / 2 + half)) - 1)
    return xs[lo], xs[hi]

def _r2(x: float) -> float:
    """``x`` as the messages print it (two decimals): words are chosen from printed numbers."""
    return float(f"{x:.2f}")


def _x(r: float) -> str:
    """A speed ratio as printed: two decimals ('0.96×', '1.30×'), whole numbers from 100×."""
    return f"{r:.0f}×" if r >= 100 else f"{r:.2f}×"


def _clears(x: float, need: float) -> bool:
    """``x ≥ need``, a ratio exactly at the target (to floating-point rounding) included."""
    return x >= need * (1 - 1e-9)


def _at(x: float, need: float) -> str:
    """``x`` to two decimals — to three or four when two would print it on the other side of
    ``need`` (1.197 beside a 1.2× target reads 1.197, not 1.20)."""
    for d in (2, 3, 4):
        txt = f"{x:.{d}f}"
        if _clears(float(txt), need) == _clears(x, need):
            return txt
    return txt


def _same_speed(ratio: float) -> bool:
    """A ratio whose printed value (0.95× … 1.04×) rounds to 1.0×: no direction word fits it."""
    return 0.95 <= _r2(ratio) < 1.05


def _faster(ratio: float, low: float) -> bool:
    """Faster than the baseline in the messages' words: a ratio not reading 1.0× whose
    interval's low end (as printed) is above 1×."""
    return ratio > 1 and not _same_speed(ratio) and _r2(low) > 1


def _verdict(ratio: float, need: float, low: float | None = None,
             high: float | None = None) -> str:
    """The verdict of a student below ``need``, from its ratio and interval (default: the
    ratio alone): ``slower`` only when the whole interval is below 1× and the ratio does not
    read 1.0×; ``no change`` when it is not told apart from the baseline (it reads 1.0×, or its
    interval reaches 1× with a ratio under 1.1×) and the target asks for a gain; else
    ``not fast enough``."""
    low = ratio if low is None else low
    high = ratio if high is None else high
    same = _same_speed(ratio)
    if _r2(high) < 1 and not same:
        return "slower"
    if need > 1.1 and (same or (_r2(low) <= 1 <= _r2(high) and ratio < 1.1)):
        return "no change"
    return "not fast enough"


def _describe(ratio: float, vs: str, low: float | None = None, high: float | None = None) -> str:
    """The student's speed beside ``vs`` in words that agree with the numbers printed: "faster"
    only for a ratio above 1.0× whose interval (``low``–``high``, default the ratio) lies above
    1×, "slower" only for one below 1.0× whose interval lies below 1× (the ratio shown, < 1); a
    ratio reading 1.0× is "the same speed"; otherwise the ratio and that these rounds do not
    tell the two apart."""
    low = ratio if low is None else low
    high = ratio if high is None else high
    if _same_speed(ratio):
        return f"the same speed as {vs} ({_x(ratio)})"
    if _faster(ratio, low):
        return f"{_x(ratio)} faster than {vs}"
    if ratio < 1 and _r2(high) < 1:
        return f"slower than {vs}: {_x(ratio)} its speed"
    return f"{_x(ratio)} the speed of {vs}, not told apart from it"


def _against_target(text: str, m: Measurement, need: float, rounds: str) -> str:
    """``text`` and where the interval lies beside ``need`` — never "below" for a median above
    it: 'below the target' only when the interval's high end is; a median above the target
    whose interval reaches below it says so."""
    iv = f"[{_at(m.low, need)}, {_at(m.high, need)}]× over {rounds}"
    if not _clears(m.high, need):
        return f"{text} (interval {iv}), below the {need:g}× target"
    if _clears(m.ratio, need):
        return f"{text} as a median, but its interval {iv} reaches below the {need:g}× target"
    return f"{text}: its interval {iv} straddles the {need:g}× target"
