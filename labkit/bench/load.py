"""Is the host idle enough to measure a thread ratio? Two threads against one only shows what the
code does when both threads have a core; on a machine where other work runs, the ratio measures
that work (measured: docs/bench-hosts.md, 'Thread ratios under load'). :func:`idleness` reads the
host before and after the thread rows; :func:`other_work` says how much of the cores other
processes used in between (the machine's busy CPU time from ``/proc/stat`` less this process's own
CPU time); :func:`judge_threads` marks a thread table ``not measurable now (load …)`` when other
work ran, and :func:`~labkit.bench.targets.ratio_of` then reports its targets as not judged.

``labkit bench`` also reads one core's FMA rate before and after each lab (``cli.host_note``):
that catches a throttled host; this module catches a shared one."""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any, Iterable

__all__ = ["Idleness", "idleness", "other_work", "busy_reason", "judge_threads", "measured_idle",
           "OTHER_WORK_MAX"]

#: other processes may use at most this share of the host's cores while thread rows run (on 2
#: cores 0.1 is a fifth of one core: a shell, the desktop, a short job's start-up)
OTHER_WORK_MAX = 0.10


@dataclass(frozen=True)
class Idleness:
    """One reading of the host: wall time, the machine's busy CPU seconds (all cores, from
    ``/proc/stat``; None where there is none), this process's CPU seconds (all its threads), the
    1-minute load average (None where there is none) and the number of cores."""
    wall: float
    busy_s: float | None
    own_s: float
    load1: float | None
    cores: int


def _machine_busy_s() -> float | None:
    """CPU seconds the whole machine has been busy (user + nice + system + irq + softirq +
    steal) since boot, or None without ``/proc/stat``."""
    try:
        with open("/proc/stat", encoding="ascii") as f:
            first = f.readline().split()
    except OSError:
        return None
    if not first or first[0] != "cpu":
        return None
    v = [int(x) for x in first[1:]]
    # user nice system idle iowait irq softirq steal (guest is counted in user already)
    busy = v[0] + v[1] + v[2] + sum(v[5:8])
    return busy / os.sysconf("SC_CLK_TCK")


def idleness() -> Idleness:
    """The host now (cheap: one read of /proc/stat and of the load average)."""
    try:
        load1 = os.getloadavg()[0]
    except (AttributeError, OSError):
        load1 = None
    return Idleness(time.perf_counter(), _machine_busy_s(), time.process_time(), load1,
                    os.cpu_count() or 1)


def other_work(before: Idleness, after: Idleness) -> float | None:
    """Share of the host's cores other processes kept busy between two readings (0: idle apart
    from this process; 1: every core taken by others), or None when it cannot be read."""
    wall = after.wall - before.wall
    if before.busy_s is None or after.busy_s is None or wall <= 0:
        return None
    others = (after.busy_s - before.busy_s) - (after.own_s - before.own_s)
    return max(0.0, others) / (wall * max(1, after.cores))


def busy_reason(before: Idleness, after: Idleness, limit: float = OTHER_WORK_MAX) -> str | None:
    """Why a thread ratio measured between ``before`` and ``after`` is not measurable now (the
    load averages and the other processes' share of the cores), or None when the host was idle
    enough: other processes used at most ``limit`` of its cores. Without /proc/stat the host
    counts as idle (the ratio is shown, as before this check existed)."""
    share = other_work(before, after)
    if share is None or share <= limit:
        return None
    loads = [x for x in (before.load1, after.load1) if x is not None]
    load = " → ".join(f"{x:.1f}" for x in loads) if loads else "?"
    return (f"load {load} on {after.cores} cores; other processes used "
            f"{share * after.cores:.2f} of them while it ran")


def judge_threads(res: Any, before: Idleness, after: Idleness,
                  rows: Iterable[str] | None = None, limit: float = OTHER_WORK_MAX) -> Any:
    """Mark ``res`` (a BenchResult of thread rows, measured between ``before`` and ``after``):
    when other work ran, its thread rows (``rows``; default: every row but the baseline) show ``not measurable now (load …)`` instead of a ratio, its label says so, and
    ``res.not_measurable`` maps those rows to the reason — :func:`ratio_of` then reports a target
    on them as not judged. An idle host leaves the table as it was (``not_measurable`` empty).
    Returns ``res``."""
    why = busy_reason(before, after, limit)
    share = other_work(before, after)
    res.not_measurable = {}
    if why is None:
        note = ("host idle while it ran" + (f" (other processes used {share:.0%} of the cores)"
                                             if share is not None else " (not checked: no /proc/stat)"))
        res.label = (res.label or "") + f" — {note}"
        return res
    names = ([n for n in res.names if n != res.baseline] if rows is None
             else [n for n in rows if n in res.names])
    text = f"not measurable now ({why})"
    for r in res.rows:
        if r["name"] in names:
            r["ratio_note"] = "not measurable now"
            res.not_measurable[r["name"]] = text
    res.label = (res.label or "") + f" — thread ratio {text}"
    return res


def measured_idle(fn, *args, rows: Iterable[str] | None = None, limit: float = OTHER_WORK_MAX,
                  **kwargs):
    """``judge_threads(fn(*args, **kwargs), …)`` with the host read before and after the call."""
    before = idleness()
    res = fn(*args, **kwargs)
    return judge_threads(res, before, idleness(), rows=rows, limit=limit)
