"""A challenge's scale: the student's position on a log scale between the starting point (0)
and labkit's kernel (1), the tiers of the points along it, and the placement of a run's rounds
(:func:`place`: the median position, its interval, the tier given, whether it is decided).
:mod:`labkit.check.challenge` grades with it; docs/challenges.md has the rules.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from .ratios import Measurement

#: Position from which the full points are earned. Not 1: labkit's kernels use what a plain
#: ``@njit`` cannot (``labkit.jit``'s ``noalias`` and full-width vectors, LLVM intrinsics —
#: lab 01's own tile kernel compiled as plain numba runs well below its speed —, numpy's C glue
#: around the kernel, lab 04's χ² bound), so an honest re-implementation of the lab's
#: technique in the student's own numba code lands at 0.75–1.05 on a busy machine (each
#: lab's reference solution is tested to earn the full points; docs/challenges.md has these
#: figures and lists where each one lands).
FULL_AT = 0.7
#: (position, share of the points), lowest first.
TIERS = ((0.2, 0.25), (0.4, 0.5), (0.55, 0.75), (FULL_AT, 1.0))
#: labkit's kernel must beat the starting point by at least this factor (the lower end of the
#: ratio's interval) in the same rounds, or the scale is unresolved: ``inconclusive``.
MIN_SCALE = 2.0

_NAMES = {0.25: "¼", 0.5: "½", 0.75: "¾", 1.0: "full"}


def position(t_start: float, t_student: float, t_labkit: float) -> float:
    """``log(t_start / t_student) / log(t_start / t_labkit)``: 0 at the starting point's speed,
    1 at labkit's kernel's; NaN when labkit's kernel is not faster than the start."""
    if not (t_start > 0 and t_student > 0 and t_labkit > 0) or t_start <= t_labkit:
        return math.nan
    return math.log(t_start / t_student) / math.log(t_start / t_labkit)


def tier_of(p: float, tiers=TIERS) -> int:
    """How many tier boundaries ``p`` has reached (0 … len(tiers)); exactly at a boundary counts
    (to floating-point rounding)."""
    n = 0
    for at, _ in tiers:
        if p >= at * (1 - 1e-9):
            n += 1
    return n


def _share(k: int, tiers=TIERS) -> float:
    return 0.0 if k <= 0 else tiers[k - 1][1]


def describe_tier(k: int, tiers=TIERS) -> str:
    """'¾', 'full', 'no' (tier 0)."""
    return "no" if k <= 0 else _NAMES.get(tiers[k - 1][1], f"{tiers[k - 1][1]:g}")


def _boundary_name(k: int, tiers=TIERS) -> str:
    """The boundary into tier ``k`` (1-based): '¾ (0.75)'."""
    at, share = tiers[k - 1]
    return f"{_NAMES.get(share, f'{share:g}')} ({at:g})"


@dataclass
class Placement:
    """The outcome of the rounds: the position's, the student's and the scale's statistics."""

    position: Measurement      # p per round
    vs_labkit: Measurement     # t_labkit / t_student per round (> 1: faster than labkit)
    vs_start: Measurement      # t_start / t_student
    scale: Measurement         # t_start / t_labkit
    rounds: int
    tier: int                         # the tier given (the lower one when the interval straddles)
    tier_high: int                    # the tier of the interval's upper end
    decided: bool                     # False: inconclusive
    why: str = ""                     # why not decided

    @property
    def straddles(self) -> bool:
        return self.decided and self.tier_high > self.tier


def place(times: list[tuple], tiers=TIERS, min_scale: float = MIN_SCALE) -> Placement:
    """The :class:`Placement` of per-round ``(t_start, t_student, t_labkit)`` times; a round
    without a sample of the start (``None``) takes the previous round's for its position."""
    filled, last = [], None
    for t0, ts, tl in times:
        last = t0 if t0 is not None else last
        if last is not None:
            filled.append((last, ts, tl))
    sampled = [t for t in times if t[0] is not None] or filled
    scale = Measurement([t0 / max(tl, 1e-12) for t0, _, tl in sampled])
    vs_labkit = Measurement([tl / max(ts, 1e-12) for _, ts, tl in times])
    vs_start = Measurement([t0 / max(ts, 1e-12) for t0, ts, _ in sampled])
    ps = [p for p in (position(*t) for t in filled) if not math.isnan(p)]
    pm = Measurement(ps or [0.0])
    lo, hi = tier_of(pm.low, tiers), tier_of(pm.high, tiers)
    why = ""
    if scale.low < min_scale or len(ps) < max(3, (len(times) + 1) // 2):
        why = (f"labkit's kernel was not clearly faster than the starting point in the same "
               f"rounds ({scale.ratio:.1f}× its speed, interval [{scale.low:.1f}, "
               f"{scale.high:.1f}]×, need ≥ {min_scale:g}× at its low end)")
    elif hi - lo >= 2:
        why = (f"the position's interval [{pm.low:.2f}, {pm.high:.2f}] spans "
               f"{hi - lo} tier boundaries")
    return Placement(pm, vs_labkit, vs_start, scale, len(times), lo, hi, not why, why)
