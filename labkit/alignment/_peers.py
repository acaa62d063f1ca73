"""The peers lab 01 is measured beside: parasail's NW functions (the fastest that gives labkit's
scores, ``parasail_best``) and Opal's global modes (``opal_fn``, ``opal_best``), and the unit they
are compared in, billions of DP cells per second (``gcups``)."""
from __future__ import annotations

import numpy as np

from labkit import bench

from .inputs import Inputs
from .reference import reference
from .scoring import ALPHABET

__all__ = ["PARASAIL_NW", "parasail_variants", "parasail_best", "parasail_label", "OPAL_MISSING",
           "opal_fn", "OPAL_OVERFLOW", "opal_best", "gcups"]


def _parasail_fn(inputs: Inputs):
    """A zero-argument function aligning every pair with parasail nw_scan_16 (None if absent)."""
    try:
        import parasail
    except ImportError:
        return None
    mt, mm, go, ge = inputs.scoring.ints()
    matrix = parasail.matrix_create(ALPHABET, mt, mm)
    s1, s2 = inputs.strings()
    nw = parasail.nw_scan_16

    def run_parasail():
        return np.array([nw(a, b, -go, -ge, matrix).score for a, b in zip(s1, s2)], np.int32)
    return run_parasail


#: parasail's vector families for global (NW) alignment tried by :func:`parasail_best`: striped,
#: scan and diagonal, 16-bit lanes, and the saturation-checked dispatchers (8-bit first, 16-bit
#: for the pairs that overflow) — those the installed parasail has.
PARASAIL_NW = ("nw_striped_16", "nw_scan_16", "nw_diag_16",
               "nw_striped_sat", "nw_scan_sat", "nw_diag_sat")


def parasail_variants(inputs: Inputs, names=PARASAIL_NW) -> dict:
    """name → zero-argument function aligning every pair of ``inputs`` with that parasail NW
    function (scores as int32), for each of ``names`` the installed parasail has ({} without
    parasail). ``_parasail_fn`` (the notebook's) stays ``nw_scan_16``."""
    try:
        import parasail
    except ImportError:
        return {}
    mt, mm, go, ge = inputs.scoring.ints()
    matrix = parasail.matrix_create(ALPHABET, mt, mm)
    s1, s2 = inputs.strings()

    def make(nw):
        def run_parasail():
            return np.array([nw(a, b, -go, -ge, matrix).score for a, b in zip(s1, s2)], np.int32)
        return run_parasail
    out = {}
    for name in names:
        nw = getattr(parasail, name, None)
        if nw is not None:
            out[name] = make(nw)
            out[name].__name__ = f"parasail_{name}"
    return out


def parasail_best(inputs: Inputs, expected=None, repeat: int = 3, min_cpu: float = 0.05,
                  names=PARASAIL_NW):
    """parasail's fastest NW function on ``inputs`` among ``names`` (:data:`PARASAIL_NW`) that
    gives the same scores as ``expected`` (default: labkit's reference), in CPU seconds, best of
    ``repeat`` interleaved repeats (each warmed up first) → ``(name, function, BenchResult of
    the variants that gave the right scores)``, or ``(None, None, None)`` without parasail. A
    variant with other scores is left out (named in the table's label); none right:
    ValueError."""
    variants = parasail_variants(inputs, names)
    if not variants:
        return None, None, None
    expected = reference(inputs) if expected is None else np.asarray(expected)
    wrong = [n for n, f in variants.items() if not np.array_equal(f(), expected)]
    good = {n: f for n, f in variants.items() if n not in wrong}
    if not good:
        raise ValueError(f"no parasail NW function gave labkit's reference scores: {wrong}")
    res = bench.compare(good, (), clock="cpu", stat="best", repeat=repeat, min_time=min_cpu,
                        work=inputs.pairs, unit="alignments",
                        label=f"parasail's NW functions on {inputs.pairs} pairs × "
                              f"{inputs.seqs1.shape[1]}, 1 thread, CPU time, best of {repeat}"
                              + (f"; left out (other scores than labkit's): {', '.join(wrong)}"
                                 if wrong else "; every one gives labkit's scores"))
    best = min(good, key=res.time)
    return best, good[best], res


def parasail_label(name: str, tried: int) -> str:
    """The row name of parasail's fastest variant: ``parasail nw_striped_16 (best of 6)``."""
    return f"parasail {name} (best of {tried})"


#: Why the Opal rows are missing when pyopal is not installed.
OPAL_MISSING = "Opal skipped: pyopal is not installed (pip install pyopal)"


def opal_fn(query: str, targets: list, scoring):
    """A zero-argument function scoring ``query`` against every target with Opal (``pyopal``,
    SIMD across database sequences — this lab's technique — one thread, global alignment), or
    None when pyopal is missing."""
    try:
        import pyopal
        from scoring_matrices import ScoringMatrix
    except ImportError:
        return None
    mt, mm, go, ge = scoring.ints()
    matrix = ScoringMatrix([[mt if i == j else mm for j in range(5)] for i in range(5)],
                           alphabet=ALPHABET)
    n = len(targets)

    def run_opal():
        hits = pyopal.align(query, targets, matrix, gap_open=-go, gap_extend=-ge,
                            algorithm="nw", threads=1, ordered=True)
        return np.fromiter((h.score for h in hits), np.int32, n)
    return run_opal


#: Opal's ways to handle overflow (pyopal's ``overflow=``), tried by :func:`opal_best`; only
#: ``algorithm="nw"`` gives global scores, and ``mode="score"`` (scores only) is its fastest mode
OPAL_OVERFLOW = ("buckets", "simple")


def opal_best(query: str, targets: list, scoring, expected, repeat: int = 3,
              min_cpu: float = 0.05):
    """Opal's fastest global mode on ``query`` × ``targets`` (``algorithm="nw"``, scores only,
    one thread; each of :data:`OPAL_OVERFLOW`) that gives the scores ``expected`` (labkit's), in
    CPU seconds, best of ``repeat`` → ``(row name, function, BenchResult)``, or
    ``(None, None, None)`` without pyopal. ``opal_fn`` (the notebook's) stays as it is."""
    try:
        import pyopal
        from scoring_matrices import ScoringMatrix
    except ImportError:
        return None, None, None
    mt, mm, go, ge = scoring.ints()
    matrix = ScoringMatrix([[mt if i == j else mm for j in range(5)] for i in range(5)],
                           alphabet=ALPHABET)
    n, expected = len(targets), np.asarray(expected)

    def make(overflow):
        def run_opal():
            hits = pyopal.align(query, targets, matrix, gap_open=-go, gap_extend=-ge,
                                algorithm="nw", mode="score", overflow=overflow, threads=1,
                                ordered=True)
            return np.fromiter((h.score for h in hits), np.int32, n)
        return run_opal
    fns = {f"Opal (pyopal, nw, overflow={o})": make(o) for o in OPAL_OVERFLOW}
    wrong = [k for k, f in fns.items() if not np.array_equal(f(), expected)]
    good = {k: f for k, f in fns.items() if k not in wrong}
    if not good:
        raise ValueError(f"no Opal mode gave labkit's scores: {wrong}")
    res = bench.compare(good, (), clock="cpu", stat="best", repeat=repeat, min_time=min_cpu,
                        work=n, unit="alignments")
    best = min(good, key=res.time)
    return f"{best} (best of {len(fns)})", good[best], res


def gcups(res, cells: int) -> dict:
    """Billions of DP cells per second of every row of ``res`` (``cells`` per call)."""
    return {name: cells / res.time(name) / 1e9 for name in res.names}


def _with_gcups(res, cells: int):
    res.label = (res.label or "") + " — GCUPS: " + ", ".join(
        f"{name} {g:.2f}" for name, g in gcups(res, cells).items())
    return res
