"""A lab's performance targets (the speeds it promises), checked against what its
``run_benchmark()`` returned."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from .results import BenchResult

__all__ = ["Target", "NotJudged", "ratio_of", "throughput_of", "check_targets"]


class NotJudged(str):
    """What a target's measure returns when the run measured the rows but they cannot be judged
    (a thread ratio while other work ran: :func:`labkit.bench.load.judge_threads`); the text
    says why. The target then reads "not judged", neither met nor missed."""


@dataclass(frozen=True)
class Target:
    """One performance target of a lab (a speed it promises), checked against the dict that the
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
        return self.judge(self.measure(results))

    def judge(self, value: Any) -> tuple[float | None, bool | None]:
        """(value, met?) of a measured value — (None, None) for None, NaN or :class:`NotJudged`."""
        if value is None or isinstance(value, NotJudged) or not math.isfinite(value):
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
        if n is None or b is None:
            return None
        why = getattr(res, "not_measurable", None) or {}
        if n in why or b in why:          # a thread ratio measured while other work ran
            return NotJudged(why.get(n) or why[b])
        return res.ratio(n, b)
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
        got = t.measure(results)
        why = str(got) if isinstance(got, NotJudged) else None
        value, ok = t.judge(got)
        out.append({"claim": t.claim, "need": t.need, "unit": t.unit, "at_most": t.at_most,
                    "value": value, "met": ok, **({"not_judged": why} if why else {})})
    return out


def _format_target(row: dict) -> str:
    def num(v):
        return f"{v:.3g}" if abs(v) < 100 else f"{v:.0f}"
    need = f"{'<' if row['at_most'] else '≥'} {num(row['need'])}{row['unit']}"
    if row["met"] is None and row.get("not_judged"):
        return f"  –  {row['claim']}: {need}; not judged: {row['not_judged']}"
    if row["met"] is None:
        return f"  –  {row['claim']}: {need}; not measured in this run"
    mark = "✔" if row["met"] else "✘"
    got = num(row["value"])
    if got == num(row["need"]):              # e.g. 1.7996 vs 1.8: show the digits that decide
        got = f"{row['value']:.4f}"
    return f"  {mark}  {row['claim']}: {need}, measured {got}{row['unit']}"
