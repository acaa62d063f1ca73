"""Predicted beside measured: OSACA's bound for a kernel's hot loop
(:func:`labkit.inspect.predict`) next to the cycles per element the kernel takes on this core.

Cycles come from the core clock labkit measures, :func:`labkit.hardware.clock.measure_clock`: a
chain of dependent integer add + xor (one cycle each on every x86-64 and AArch64 core of the
last decade) timed in this thread's CPU time — the frequency the core runs at while busy, turbo
included. ``cycles per element = seconds per call × clock ÷ elements per call``, where the
elements are what the hot loop steps over (an array element, a DP cell, a sample of a 4×4 block).

:func:`prediction_for` never raises: a host without an OSACA model, a missing ``osaca``, a
function without a loop or OSACA's own failure give ``(None, why)``. :func:`measured_cycles`
times the clock and the kernel back to back, a few rounds, and keeps the fastest round (a shared
or throttled host only ever makes a round slower). From the lab's :data:`UARCH_KERNEL` hook (see
:func:`lab_kernel`), :func:`lab_table` is the one-row table ``labkit bench <lab>`` prints after
the lab's own tables (measured and predicted cycles per element as columns) and
:func:`lab_line` the line per lab at the end of the run (``--uarch``: the lines alone).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

__all__ = ["CLOCK_NOTE", "KernelSpec", "prediction_for", "measure_hz", "measured_cycles",
           "lab_kernel", "lab_table", "lab_line", "verdict"]

#: which clock turns seconds into cycles (said in every table and line that shows cycles)
CLOCK_NOTE = ("core clock measured by labkit.hardware.clock.measure_clock: a dependent "
              "add + xor chain, thread CPU time, best of 3")


def prediction_for(fn: Callable, args: Any = None, *, cpu: str | None = None,
                   elements_per_iteration: int | None = None, loop: str | None = None):
    """``(Prediction, "")``, or ``(None, why)`` when no prediction can be made — never raises."""
    from labkit.inspect.uarch import predict
    try:
        return predict(fn, args, cpu=cpu, elements_per_iteration=elements_per_iteration,
                       loop=loop), ""
    except ImportError as e:
        return None, str(e) or "OSACA is not installed (pip install osaca)"
    except ValueError as e:                       # no model, no loop, OSACA could not analyse it
        return None, str(e).splitlines()[0] if str(e) else "no prediction"
    except Exception as e:  # noqa: BLE001 - a note, never a traceback
        return None, f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}".rstrip(": ")


def measure_hz() -> float:
    """The core clock now (Hz): :func:`~labkit.hardware.clock.measure_clock` on a short chain
    (1 M iterations, best of 3: a few milliseconds)."""
    from labkit.hardware.clock import measure_clock
    return measure_clock(iterations=1_000_000, repeat=3)


def _clock_hz(hz: float | None) -> float:
    """The core clock in Hz: ``hz`` checked, or :func:`measure_hz` now when None."""
    if hz is None:
        hz = measure_hz()
    if not (isinstance(hz, (int, float)) and hz > 0):
        raise ValueError(f"hz must be a positive clock frequency in Hz, got {hz!r}")
    return float(hz)


def measured_cycles(fn: Callable, args: tuple, elements: float, *, rounds: int = 3,
                    min_time: float = 0.01) -> tuple[float, float]:
    """(cycles per element, clock Hz) of ``fn(*args)`` on this core: in each of ``rounds`` rounds
    the clock and the kernel (best of 3 autoscaled repeats, thread CPU time) are timed one right
    after the other; the kernel's fastest time of all rounds is read at the fastest clock of all
    rounds. Every disturbance — another process, an interrupt, a frequency step — makes either
    reading slower, never faster, but not always both in one round (a busy sibling hardware
    thread slows the clock's integer chain more than a floating-point kernel), so the extremes
    are taken apart and can only err upward."""
    from labkit.timing.timer import timeit
    if not (elements and elements > 0):
        raise ValueError(f"elements must be a positive count per call, got {elements!r}")
    best_s, best_hz = float("inf"), 0.0
    for _ in range(max(1, int(rounds))):
        best_hz = max(best_hz, measure_hz())
        best_s = min(best_s, min(timeit(fn, *args, repeat=3, min_time=min_time,
                                        clock="thread").times))
    return best_s * best_hz / elements, best_hz


def verdict(ratio: float, bound: str = "ports", unknown: int = 0) -> str:
    """A few words for measured ÷ predicted (the words :meth:`Prediction.explain` uses)."""
    from labkit.inspect.uarch import _verdict
    return _verdict(ratio, bound, unknown)


# --------------------------------------------------------------------------- per lab

@dataclass
class KernelSpec:
    """One kernel to put beside its prediction: ``fn(*args)`` steps its hot loop over
    ``elements`` elements per call (what one "element" is: ``element``)."""

    label: str                       # the kernel's name as the lab's tables and notebook say it
    fn: Callable
    args: tuple
    elements: float                  # hot-loop elements per call
    element: str = "element"         # what one element is ("DP cell", "k of a 4×4 block", …)
    elements_per_iteration: int | None = None   # when the loop's step cannot be read
    loop: str | None = None          # predict()'s loop=: the innermost loop richest in this kind


def lab_kernel(lab: str) -> KernelSpec | None:
    """The kernel ``labkit bench`` predicts for ``lab``: the lab's own hook (a function
    ``UARCH_KERNEL() -> KernelSpec`` in its package or its ``bench`` module), else None."""
    import importlib

    from labkit import registry

    mod = registry.get(lab).module
    for name in (mod, mod + ".bench"):
        try:
            hook = getattr(importlib.import_module(name), "UARCH_KERNEL", None)
        except ImportError:
            hook = None
        if callable(hook):
            return hook()
    return None


def _opts(spec: KernelSpec) -> dict:
    return {k: v for k, v in (("elements_per_iteration", spec.elements_per_iteration),
                              ("loop", spec.loop)) if v is not None}


def _unit(spec: KernelSpec) -> str:
    """'elements', 'cells', 'spline terms'; a phrase with "of" as it is ('k of a 4×4 block')."""
    return spec.element if " of " in spec.element else spec.element + "s"


def lab_table(lab: str, *, repeat: int = 3, min_time: float = 0.05):
    """``(BenchResult, "")``: the lab's key kernel (its :data:`UARCH_KERNEL`) as a
    :mod:`labkit.bench` table of one row — timed on its elements per call (``compare``, process
    CPU time, best repeat), with measured and predicted cycles per element beside the time; no
    prediction (no OSACA, no model for this core, no loop) shows a dash and the reason under the
    table. ``(None, why)`` when the lab names no kernel or it fails to run. Never raises."""
    from .measure import compare
    try:
        spec = lab_kernel(lab)
    except Exception as e:  # noqa: BLE001
        return None, f"no kernel to measure ({type(e).__name__}: {e})"
    if spec is None:
        return None, "no kernel named for a prediction (the lab has no UARCH_KERNEL)"
    try:
        res = compare({spec.label: (spec.fn, spec.args)}, clock="cpu", stat="best",
                      repeat=repeat, min_time=min_time, work=spec.elements, unit=_unit(spec),
                      label=(f"the lab's key kernel (UARCH_KERNEL), {spec.elements:g} "
                             f"{_unit(spec)} per call: measured beside OSACA's bound"),
                      predict={spec.label: (spec.fn, spec.args, _opts(spec))})
    except Exception as e:  # noqa: BLE001
        return None, f"{spec.label}: not measured ({type(e).__name__}: {e})"
    p = (res.predictions or {}).get(spec.label)
    if p is not None and p.unknown and not res.rows[0].get("prediction_note"):
        res.rows[0]["prediction_note"] = (
            f"predicted is a lower bound: {len(p.unknown)} of the loop's {p.instructions} "
            f"instructions (e.g. {p.unknown[0].split()[0]}) are not in OSACA's {p.model} tables")
    res.spec = spec
    return res, ""


def lab_line(lab: str, *, rounds: int = 3, table=None) -> str:
    """One computed line: the lab's key kernel, measured and predicted cycles per element, their
    ratio and what it suggests — or why there is no prediction or no measurement. ``table``: the
    lab's :func:`lab_table` already measured in this run (its numbers, not a second
    measurement). Never raises."""
    from labkit import registry
    head = f"{registry.get(lab).number:02d} {lab}"
    spec = getattr(table, "spec", None)
    if spec is not None:
        row = table.rows[0]
        cyc, hz = row.get("cycles_per_elem"), table.hz
        p = (table.predictions or {}).get(spec.label)
        why = row.get("prediction_note") or "no prediction"
        if cyc is None or not hz:
            return f"{head} {spec.label}: not measured (no cycles per element in its table)"
        return _line(head, spec, cyc, hz, p, why)
    try:
        spec = lab_kernel(lab)
    except Exception as e:  # noqa: BLE001
        return f"{head}: no kernel to measure ({type(e).__name__}: {e})"
    if spec is None:
        return f"{head}: no kernel named for a prediction (the lab has no UARCH_KERNEL)"
    try:
        spec.fn(*spec.args)                        # compile (and fail) before predicting
        cyc, hz = measured_cycles(spec.fn, spec.args, spec.elements, rounds=rounds)
    except Exception as e:  # noqa: BLE001
        return f"{head} {spec.label}: not measured ({type(e).__name__}: {e})"
    p, why = prediction_for(spec.fn, spec.args, **_opts(spec))
    return _line(head, spec, cyc, hz, p, why)


def _line(head, spec, cyc, hz, p, why) -> str:
    meas = f"measured {cyc:.2f} cycles per {spec.element} at {hz / 1e9:.2f} GHz"
    if p is None:
        return f"{head} {spec.label}: {meas}; no prediction — {why}"
    per = p.cycles_per_element
    if per is None:
        return (f"{head} {spec.label}: {meas}; predicted {p.cycles_per_iteration:.2f} cycles per "
                f"loop iteration ({p.summary().split(',')[0]}, {p.model} model) — the loop's step "
                "could not be read, so no per-element ratio")
    r = cyc / per
    low = (f", {len(p.unknown)} of {p.instructions} instructions not in its tables"
           if p.unknown else "")
    what = "a loop-carried dependency" if p.bound == "dependency" else f"port {p.port}"
    return (f"{head} {spec.label}: {meas}, predicted {'≥ ' if p.unknown else ''}{per:.2f} "
            f"({what}; OSACA {p.model}{low}): {r:.2f}× the bound — "
            f"{verdict(r, p.bound, len(p.unknown))}")
