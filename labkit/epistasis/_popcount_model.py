"""Which of lab 04's popcounts is faster per word, from OSACA's reports (the ``popcount_bound``
check's model): the pairs posed, each kernel's bound per word (``per_word``), what two reports
can back (``faster_truth``: the faster one and by how much, or None where a lower bound cannot
tell), the student's statement read and judged, and the measurement beside the model."""
from __future__ import annotations

import numpy as np

from labkit.check import CheckFailure

from .inputs import _bench_popcount_inputs

__all__ = ["popcount_report", "per_word", "faster_truth", "measured_seconds_per_word"]

#: a stated ratio within this fraction of the reports' passes
FASTER_TOLERANCE = 0.10
#: the measured ratio must lie within this factor of the stated one (an "at least": above
#: stated / factor) — OSACA leaves out the front end and every cache level past L1
FASTER_FACTOR = 2.0
#: two kernels whose bounds differ by less than this are a tie: either name passes
FASTER_TIE = 1.05
#: the kernels the pairs are drawn from (report name → attribute of labkit.epistasis)
POP_KERNELS = {"Muła (vpshufb)": "popcount_mula", "ctpop <8 x i64>": "popcount_hw",
               "byte table": "popcount_table"}
#: (core, kernel a, kernel b): this core's pairs, then one drawn from the others (compiled from
#: here, never run); skylake-avx512's Muła vs byte table (both fully modelled) is always posed
POP_HOST = (("Muła (vpshufb)", "ctpop <8 x i64>"), ("Muła (vpshufb)", "byte table"))
POP_FIXED = ("skylake-avx512", "Muła (vpshufb)", "byte table")
POP_FOREIGN = (("haswell", "Muła (vpshufb)", "byte table"),
               ("skylake-avx512", "ctpop <8 x i64>", "Muła (vpshufb)"),
               ("icelake-server", "Muła (vpshufb)", "ctpop <8 x i64>"),
               ("znver4", "ctpop <8 x i64>", "Muła (vpshufb)"),
               ("haswell", "byte table", "ctpop <8 x i64>"))


def popcount_report(name: str, cpu=None, words=None):
    """(LoopReport, Prediction) of one of lab 04's popcounts (``POP_KERNELS``) on ``cpu``."""
    import labkit.epistasis as ep
    from labkit.inspect.loopreport import osaca_report
    if words is None:
        words = _bench_popcount_inputs(1 << 11)[0]
    return osaca_report(getattr(ep, POP_KERNELS[name]), (words,), cpu=cpu, name=name)


def per_word(rep) -> float:
    """The report's bound in cycles per word (the larger of the busiest port and the chain)."""
    return max(max(rep.ports.values(), default=0.0), rep.dependency) / rep.elements


def faster_truth(a, b):
    """What the two reports can back: ``(name of the faster, how many times)`` — an "at least"
    when the slower one's bound is a lower bound (instructions the model lacks count as free) —
    or None when the faster-looking one's bound is a lower bound (the model cannot tell)."""
    ca, cb = per_word(a), per_word(b)
    fast, slow, cf, cs = (a, b, ca, cb) if ca <= cb else (b, a, cb, ca)
    if fast.unknown:
        return None
    return fast.name, cs / cf


def _pop_pair(cpu, na, nb):
    try:
        ra, rb = popcount_report(na, cpu)[0], popcount_report(nb, cpu)[0]
    except (ValueError, ImportError) as e:
        return None, str(e).splitlines()[0][:160]
    if not (ra.elements and rb.elements and ra.ports and rb.ports):
        return None, "the loop's step could not be read"
    return (ra, rb), ""


def _stated_faster(ans, a, b):
    if ans is None:
        return None
    if not isinstance(ans, (tuple, list)) or len(ans) != 2 or not isinstance(ans[0], str):
        raise CheckFailure("wrong", f"returned {ans!r:.60}; expected (name of the faster "
                                    "kernel, how many times faster) — e.g. ('byte table', "
                                    "3.0) — or None when the reports cannot tell")
    name, times = ans
    if name not in (a.name, b.name):
        raise CheckFailure("wrong", f"{name!r} is neither report's name ({a.name!r}, {b.name!r})")
    if isinstance(times, (bool, np.bool_)) or not isinstance(
            times, (int, float, np.integer, np.floating)) or not np.isfinite(times) or times < 1:
        raise CheckFailure("wrong", f"{times!r} times faster: expected a number ≥ 1 (the slower "
                                    "kernel's cycles per word over the faster one's)")
    return name, float(times)


def _faster_error(a, b, ans) -> str | None:
    exp = faster_truth(a, b)
    where = f"{a.name} vs {b.name} on {a.model}"
    lows = [r.name for r in (a, b) if r.unknown]
    low = (f" ({' and '.join(lows)}: {', '.join(str(len(r.unknown)) for r in (a, b) if r.unknown)}"
           " instructions not in the model — a lower bound)") if lows else ""
    if exp is None:
        if ans is not None:
            return (f"{where}: you said {ans[0]} is faster, but its bound is only a lower bound"
                    f"{low}: the model cannot tell which is faster — return None")
        return None
    if ans is None:
        return (f"{where}: you returned None, but the reports can tell{low}: the faster-looking "
                "kernel is fully modelled, and the slower one's cycles can only be more")
    name, times = ans
    if name != exp[0] and exp[1] >= FASTER_TIE:
        return f"{where}: you said {name} is faster; per word it is the other one"
    if abs(times / exp[1] - 1) > FASTER_TOLERANCE:
        return (f"{where}: {exp[0]} is the faster one, but {times:.3g}× is {times / exp[1]:.2f}× "
                f"the reports' ratio (within {FASTER_TOLERANCE:.0%} passes) — compare cycles per "
                "word: each bound per iteration over the words per iteration")
    return None


def measured_seconds_per_word(names, rounds: int = 5) -> dict:
    """CPU seconds per word of the named popcounts on 8192 words (64 KiB), best of ``rounds``
    interleaved repeats: a ratio of two of them is the measured speed-up."""
    import labkit.epistasis as ep
    from labkit import bench
    words = _bench_popcount_inputs(1 << 13, seed=3)[0]
    res = bench.compare({n: getattr(ep, POP_KERNELS[n]) for n in names}, (words,),
                        clock="cpu", stat="best", repeat=rounds, min_time=0.02)
    return {n: res.time(n) / words.size for n in names}
