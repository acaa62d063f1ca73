"""Lab 02's exercise checks and their hints: ``soa_inner_loop`` (the SoA loop over splines,
vectorised with FMAs), ``spill_n`` (predict from the cache sizes where one position's working set
leaves L1 and L2), ``aosoa_driver`` (tiles of Nb splines over threads, per-thread scratch, ragged
last tile, no allocation per tile), ``flat_tiles`` (positions × tiles in one ``prange``, two
threads judged by wall time) and ``vgh_cost`` (FLOP and DRAM bytes per VGH for the roofline)."""
from __future__ import annotations

import numba
import numpy as np

from labkit import hints
from labkit.check import (CheckFailure, exercise, fma_gate, mismatch, note, require_njit, rng,
                          speed_enforced, speed_gate, speed_not_judged, vectorized_gate)
from labkit.check.guard import Guard, unwrap
from labkit.check.speed import _Student

from . import STREAMS, flops_per_eval, make_inputs, new_output, prefactors, to_aosoa
from ._threading import _no_nested_prange, _thread_ratios, _threads_used, parallel_gate
from .kernels import _batch_tiles, vgh_aos, vgh_soa

#: labkit's own tile drivers: handing one of them in (or calling it) is "uses labkit's answer".
_TILE_ANSWERS = ("labkit.bspline.kernels:vgh_aosoa", "labkit.bspline.kernels:_batch_tiles",
                 "labkit.bspline.kernels:_batch_tiles_blocked", "labkit.bspline.kernels:_walker_tiles",
                 "labkit.bspline:evaluate_vgh", "labkit.bspline:walker_tiles")


# ----------------------------------------------------------------------------- 1. the SoA loop
#: splines in the SoA gate's timing (not a power of two: see check_soa_inner_loop)
SOA_GATE_N = 496

def _soa_case(r, grid, N, dtype=np.float64):
    coefs = r.standard_normal(tuple(grid) + (N,)).astype(dtype)
    pos = r.random((1, 3)) * 2.0 - 0.5
    idx, pref = prefactors(pos, grid, dtype=dtype)
    return coefs, idx[0], pref[0]


@exercise("soa_inner_loop", points=2, answers=("labkit.bspline.kernels:vgh_soa",
                                               "labkit.bspline.kernels:vgh_soa_blocked",
                                               "labkit.bspline.kernels:vgh_aosoa",
                                               "labkit.bspline:evaluate_vgh"), outputs=(3,))
def check_soa_inner_loop(student):
    """``student(coefs, idx, pref, out)`` fills the SoA streams ``out (10, ≥N)`` like ``vgh_soa``;
    compiled, vectorised at the host's native width, with FMAs, ≥ 1.5× the AoS kernel."""
    r = rng()
    for grid, N in (((4, 5, 6), 1), ((7, 4, 5), 8), ((5, 6, 4), int(r.integers(9, 90)))):
        coefs, idx, pref = _soa_case(r, grid, N)
        out = new_output(N, "soa")
        out[:] = np.nan                         # a kernel must overwrite, not add to, old values
        student(coefs, idx, pref, out)
        exp = new_output(N, "soa")
        vgh_soa(coefs, idx, pref, exp)
        scale = float(np.max(np.abs(exp[:, :N]))) or 1.0
        msg = mismatch(out[:, :N], exp[:, :N], name="out", rtol=1e-9, atol=1e-12 * scale)
        if msg is not None:
            raise AssertionError(f"{msg} — rows are {', '.join(STREAMS)}")
    require_njit(student)
    sig = tuple(numba.typeof(a) for a in (coefs, idx, pref, out))
    vectorized_gate(student, sig)
    fma_gate(student, sig)
    # N = 496 splines, not 512: rows of 512 float64 are 4 KiB apart, so a column's 4
    # coefficient rows and the 10 output streams share L1 sets and alias by 4 KiB, and the SoA
    # loop's speed then hung on where the allocator put the outputs; at 496 it is steady over
    # layouts (measured: docs/bspline.md, 'SoA gate size')
    x = make_inputs({"grid": (8, 8, 8), "n": SOA_GATE_N, "positions": 1}, seed=1)
    idx, pref = prefactors(x.positions, x.grid)
    aos = new_output(x.n, "aos")
    speed_gate(student, vgh_aos, (x.coefs, idx[0], pref[0]) + aos, need=1.5,
               vs="the AoS kernel", student_args=(x.coefs, idx[0], pref[0], new_output(x.n, "soa")),
               answer=vgh_soa)
    return "matches vgh_soa on 3 random grids"


# ----------------------------------------------------------------------------- 2. a prediction
#: Bytes per spline of one position's working set, in units of the element size: the 10 SoA
#: output streams plus the 64 coefficients (4 × 4 × 4 grid points) the position reads.
WORKING_SET_ITEMS = 10 + 64
#: A prediction of the spill point within this fraction of the count passes.
SPILL_TOLERANCE = 0.10


def spill_points(l1: int, l2: int, itemsize: int = 8) -> tuple[int, int]:
    """The N at which one position's working set (``WORKING_SET_ITEMS · itemsize · N`` bytes)
    no longer fits ``l1`` and ``l2`` bytes — what ``spill_n`` asks students to predict."""
    per = WORKING_SET_ITEMS * int(itemsize)
    return int(l1) // per, int(l2) // per


@exercise("spill_n", points=1, answers=("labkit.bspline.checks:spill_points",))
def check_spill_n(student):
    """``student(l1, l2, itemsize)`` → (N_L1, N_L2), each within 10 % of the spill point of one
    position's working set (10 output streams + 64 coefficients per spline), for this machine's
    caches (``labkit.hardware``) and for two other machines' caches, float64 and float32."""
    from labkit import hardware

    hw = hardware.info()
    r = rng()
    cases = [(int(hw["l1d"]), int(hw["l2"]), 8),
             (int(r.choice([32, 48, 64])) << 10, int(r.choice([256, 512, 1024, 1280])) << 10, 4),
             (int(r.choice([16, 32, 128])) << 10, int(r.choice([2048, 4096])) << 10, 8)]
    for l1, l2, item in cases:
        got = student(l1, l2, item)
        if not isinstance(got, (tuple, list, np.ndarray)) or len(got) != 2:
            raise CheckFailure("wrong", f"return the pair (N_L1, N_L2), got {got!r}")
        want = spill_points(l1, l2, item)
        for level, g, w in zip(("L1", "L2"), got, want):
            if isinstance(g, (bool, np.bool_)) or not isinstance(g, (int, float, np.integer,
                                                                     np.floating)):
                raise CheckFailure("wrong", f"N_{level} must be a number, got {g!r}")
            if not abs(float(g) - w) <= SPILL_TOLERANCE * w:
                raise CheckFailure(
                    "wrong", f"{l1 >> 10} KiB L1, {l2 >> 10} KiB L2, {item}-byte elements: "
                             f"N_{level} = {float(g):.0f} is {float(g) / max(w, 1):.2f}× the "
                             f"spill point (within {SPILL_TOLERANCE:.0%} passes)")
    n1, n2 = spill_points(*cases[0])
    return (f"this machine: N_L1 ≈ {n1}, N_L2 ≈ {n2} in float64; right for 2 other cache "
            "sizes too")


# ----------------------------------------------------------------------------- 3. the AoSoA driver
def _alloc_count() -> int:
    from numba.core.runtime import _nrt_python
    from numba.core.runtime import rtsys

    try:
        return int(rtsys.get_allocation_stats().alloc)
    except RuntimeError:                       # stats are off unless switched on
        _nrt_python.memsys_enable_stats()
        return int(rtsys.get_allocation_stats().alloc)


def _tile_case(r, grid, N, Nb):
    coefs = r.standard_normal(tuple(grid) + (N,))
    pos = r.random((1, 3))
    idx, pref = prefactors(pos, grid)
    return to_aosoa(coefs, Nb), coefs, idx[0], pref[0]


@exercise("aosoa_driver", points=2, answers=_TILE_ANSWERS, outputs=(4,),
          allowed=("labkit.bspline:vgh_soa",))   # the per-tile SoA kernel: the lab's building block
def check_aosoa_driver(student):
    """``student(tcoefs, n, idx, pref, out)`` fills ``out[:, :n]`` (SoA, 10 streams) from the
    AoSoA tiles ``tcoefs (M, nx, ny, nz, Nb)`` at one position; right on ragged last tiles and
    leaves ``out[:, n:]`` alone; a parallel loop; allocations per call do not grow with the
    number of tiles (numba's allocation counter)."""
    r = rng()
    for grid, N, Nb in (((4, 5, 6), 8, 8), ((6, 4, 5), int(r.integers(17, 40)), 8),
                        ((5, 5, 4), int(r.integers(65, 130)), 16), ((4, 4, 4), 3, 4)):
        tc, coefs, idx, pref = _tile_case(r, grid, N, Nb)
        out = np.full((10, N + 5), -7.0)
        student(tc, N, idx, pref, out)
        exp = new_output(N, "soa")
        vgh_soa(coefs, idx, pref, exp)
        scale = float(np.max(np.abs(exp[:, :N]))) or 1.0
        msg = mismatch(out[:, :N], exp[:, :N], name="out", rtol=1e-9, atol=1e-12 * scale)
        if msg is not None:
            raise AssertionError(f"{msg} (N = {N}, Nb = {Nb}: {tc.shape[0]} tiles, the last "
                                 f"with {N - (tc.shape[0] - 1) * Nb} splines)")
        if not np.all(out[:, N:] == -7.0):
            col = int(np.argwhere(out[:, N:] != -7.0)[0][1]) + N
            raise CheckFailure("wrong", f"out[:, {col}] was written: N = {N}, so the last tile "
                                        f"(zero-padded to Nb = {Nb}) must copy only its first "
                                        f"{N - (tc.shape[0] - 1) * Nb} splines")
    sig = tuple(numba.typeof(a) for a in (tc, N, idx, pref, out))
    parallel_gate(student, sig)
    # the allocation counter: one call with 2 tiles, one with 32 (same Nb)
    counts = []
    for N in (16, 256):
        tc, coefs, idx, pref = _tile_case(r, (4, 4, 4), N, 8)
        out = np.zeros((10, N))
        student(tc, N, idx, pref, out)          # compiled and warm
        a0 = _alloc_count()
        student(tc, N, idx, pref, out)
        counts.append(_alloc_count() - a0)
    if counts[1] > counts[0]:
        raise CheckFailure("technique missing",
                           f"{counts[0]} allocations per call with 2 tiles, {counts[1]} with 32: "
                           "something is allocated per tile inside the prange — allocate the "
                           "per-thread scratch once, before the loop")
    note(f"{counts[1]} allocations per call, whatever the number of tiles")
    return "right on 4 tile layouts, ragged last tiles included"


# ----------------------------------------------------------------------------- 4. one flat prange
#: Two threads must beat one by this factor (wall time, median interval) in both shapes.
FLAT_NEED = 0.75
#: below this 2-thread gain of labkit's own flat driver, measured at the same moment, the machine
#: cannot show a second thread's worth now (other jobs hold the cores): speed is not judged
FLAT_MACHINE_MIN = 1.2
#: an interval on the gain ratio wider than this means other jobs decided the timings: not judged
FLAT_NOISE = 0.5


@exercise("flat_tiles", points=2, answers=_TILE_ANSWERS, outputs=(3,),
          allowed=("labkit.bspline:vgh_soa",))
def check_flat_tiles(student):
    """``student(tcoefs, idx, pref, out)`` fills ``out (P, M, 10, ≥Nb)`` with every position ×
    tile (like ``_batch_tiles``), in one parallel loop (no prange inside a prange); on 2 threads
    its gain over 1 thread must reach FLAT_NEED × the gain of labkit's own flat driver measured
    at the same moment (wall time, interval of the median, else ``inconclusive``), both for one
    walker with 16 tiles and for 16 walkers with one tile — which only one flat prange does.
    When labkit's own driver cannot gain FLAT_MACHINE_MIN× now (a busy machine), speed is not
    judged: an honest student does not lose points to other jobs — it passes on the threads
    counted per block (one walker's 16 tiles and 16 walkers each on ≥ 2 threads), and without
    that count it is ``inconclusive``. With one thread (``NUMBA_NUM_THREADS=1``) nothing can show
    the threading: ``inconclusive``, never ``passed``."""
    r = rng()
    sig = _flat_outputs_right(student, r)                      # 1. every position × tile right
    parallel_gate(student, sig)                                # 2. one parallel loop, not nested
    _no_nested_prange(student)
    spread = _flat_threads_counted(student, r)                 # 3. threads counted per block
    enforce = speed_enforced()                                 # 4. the gain beside labkit's
    verdicts = _flat_gains(student, enforce)
    return _flat_verdict(verdicts, spread, enforce)


def _flat_outputs_right(student, r) -> tuple:
    """The student's outputs against ``vgh_soa`` position by position on three ragged shapes;
    the numba signature of the last call."""
    for grid, N, Nb, P in (((4, 5, 6), 8, 8, 1), ((6, 4, 5), int(r.integers(17, 40)), 8, 3),
                           ((5, 5, 4), 32, 32, int(r.integers(2, 6)))):
        coefs = r.standard_normal(grid + (N,))
        idx, pref = prefactors(r.random((P, 3)), grid)
        tc = to_aosoa(coefs, Nb)
        out = np.full((P, tc.shape[0], 10, Nb), np.nan)
        student(tc, idx, pref, out)
        for p in range(P):
            exp = new_output(N, "soa")
            vgh_soa(coefs, idx[p], pref[p], exp)
            got = np.moveaxis(out[p], 0, 1).reshape(10, -1)[:, :N]
            scale = float(np.max(np.abs(exp[:, :N]))) or 1.0
            msg = mismatch(got, exp[:, :N], name=f"position {p}", rtol=1e-9, atol=1e-12 * scale)
            if msg is not None:
                raise AssertionError(f"{msg} (P = {P} positions, {tc.shape[0]} tiles of {Nb})")
    return tuple(numba.typeof(a) for a in (tc, idx, pref, out))


def _flat_threads_counted(student, r) -> dict | None:
    """The threads that ran one walker's 16 tiles and 16 walkers' one tile each, on every thread
    numba has (a proof that does not depend on the load); None when the probe cannot count.
    Inconclusive with one thread, "technique missing" when a shape ran on one."""
    threads = numba.config.NUMBA_NUM_THREADS
    if threads < 2:                  # no second thread to count or to time: never a pass
        raise CheckFailure("inconclusive",
                           f"one thread here (NUMBA_NUM_THREADS={threads}): the tiles' threading "
                           "cannot be shown — every position × tile is right and the loop is one "
                           "parallel loop, but whether one walker's tiles share the threads needs "
                           "≥ 2 threads; run the check on a machine (or NUMBA_NUM_THREADS) with 2")
    prev = numba.get_num_threads()
    try:                             # every thread numba has, whatever a caller set before
        numba.set_num_threads(threads)
        spread = _threads_used(student, r)      # proof that does not depend on the load
    finally:
        numba.set_num_threads(prev)
    if spread is not None:
        one = [label for label, n in spread.items() if n < 2]
        if one:
            raise CheckFailure("technique missing",
                               f"{' and '.join(one)}: every block of your code ran on one thread "
                               "(counted per block and thread) — your parallel loop has a single "
                               "iteration there and a serial loop inside it; one flat prange over "
                               "positions × tiles shares the work whatever P and M are")
        note("one walker × 16 tiles and 16 walkers × 1 tile each spread over "
             f"{min(spread.values())} threads (counted)")
    return spread


def _flat_gains(student, enforce: bool) -> list:
    """[(shape, the student's 2-thread gain ÷ labkit's, labkit's gain)] for one walker × 16
    tiles and 16 walkers × one tile, timed round by round beside ``_batch_tiles``."""
    raw = unwrap(student)
    guard = student if isinstance(student, Guard) else None
    shapes = {"one walker, 16 tiles": (1, 16), "16 walkers, one tile": (16, 1)}
    verdicts = []
    kw = dict(rounds=9, min_time=0.01) if enforce else dict(rounds=2, min_time=0.003)
    for label, (P, M) in shapes.items():
        Nb = 256
        x = make_inputs({"grid": (8, 8, 8), "n": M * Nb, "positions": P}, seed=2)
        idx, pref = prefactors(x.positions, x.grid)
        tc = to_aosoa(x.coefs, Nb)
        args = (tc, idx, pref, np.empty((P, M, 10, Nb)))
        if guard is not None:
            guard.snapshot.extend()
            guard.precompile(args)
            with guard.tracing():
                timed = _Student(raw, args, (3,))
            rel, ref = _thread_ratios(timed, _batch_tiles, args, around=guard.tracing, **kw)
            guard.verify()
        else:
            rel, ref = _thread_ratios(_Student(raw, args, (3,)), _batch_tiles, args, **kw)
        verdicts.append((label, rel, ref))
    return verdicts


def _flat_verdict(verdicts: list, spread: dict | None, enforce: bool) -> str:
    """The speed verdict: reported only, not judged on a busy machine (a pass only with the
    threads counted), not fast enough, inconclusive, or passed."""
    text = "; ".join(f"{label}: your 2-thread gain {rel.ratio:.2f}× labkit's "
                     f"[{rel.low:.2f}, {rel.high:.2f}] (labkit's own: {ref.ratio:.2f}×)"
                     for label, rel, ref in verdicts)
    if not enforce:
        note(text + " (wall time) — speed reported only (LABKIT_SPEED=report)")
        return "every position × tile right"
    busy = [label for label, rel, ref in verdicts
            if ref.low < FLAT_MACHINE_MIN or rel.high - rel.low > FLAT_NOISE]
    if busy:
        why = (f"{text} — the machine is too busy to judge a second thread's gain now (labkit's "
               f"flat driver below {FLAT_MACHINE_MIN:g}× or the ratio's interval wider than "
               f"{FLAT_NOISE:g} in {', '.join(busy)})")
        if spread is None:              # no proof without the timing: never a pass
            raise CheckFailure("inconclusive", why + "; run the check again on a quieter machine")
        speed_not_judged(why + ": speed not judged, the threads counted above prove the flat loop")
        return "every position × tile right, in one parallel loop"
    if any(rel.high < FLAT_NEED for _, rel, _ in verdicts):
        slow = [label for label, rel, _ in verdicts if rel.high < FLAT_NEED]
        raise CheckFailure("not fast enough",
                           f"{text}; need ≥ {FLAT_NEED:g}× labkit's gain in both — "
                           f"{', '.join(slow)} did not gain like one flat prange over positions "
                           "× tiles does")
    if any(rel.low < FLAT_NEED for _, rel, _ in verdicts):
        raise CheckFailure("inconclusive", f"{text} straddles {FLAT_NEED:g}× — the machine is "
                                           "too busy to decide; run the check again")
    note(text)
    return "every position × tile right"


# ----------------------------------------------------------------------------- 5. the roofline's numbers
def vgh_cost(itemsize: int = 8) -> tuple[int, int]:
    """FLOP and DRAM bytes per spline per position (what ``vgh_cost`` asks students to count):
    656 FLOP; 64 coefficients read and 10 outputs written, ``itemsize`` bytes each."""
    return flops_per_eval(), WORKING_SET_ITEMS * int(itemsize)


@exercise("vgh_cost", points=1, answers=("labkit.bspline:flops_per_eval",
                                         "labkit.bspline:traffic_per_eval",
                                         "labkit.bspline.checks:vgh_cost"))
def check_vgh_cost(student):
    """``student(itemsize)`` → (FLOP, bytes) per spline per position, exactly: the kernel's
    operations (FMA = 2, per-column weights not counted) and the bytes from/to DRAM."""
    for item in (8, 4):
        got = student(item)
        if not isinstance(got, (tuple, list)) or len(got) != 2:
            raise CheckFailure("wrong", f"return the pair (flops, bytes), got {got!r}")
        flops, nbytes = vgh_cost(item)
        if got[0] != flops:
            raise CheckFailure("wrong", f"FLOP per spline per position: got {got[0]!r} — count, "
                                        "for each of the 16 (x, y) columns, the three z-sums and "
                                        "the ten output updates")
        if got[1] != nbytes:
            raise CheckFailure("wrong", f"bytes per spline per position with {item}-byte "
                                        f"elements: got {got[1]!r} — what each position must "
                                        "read from and write to memory once")
    return f"{flops} FLOP and {vgh_cost(8)[1]} B (float64) per spline per position"


# ----------------------------------------------------------------------------- hints
# Tier 1 (the concept) is the exercise stub's `# Hint:` line in solutions/02_bspline.md.
hints.define(
    "soa_inner_loop",
    "each output of spline n adds an x·y weight times a z-sum of this column's 4 "
    "coefficients; a derivative along an axis takes that axis's derivative weight",
    "in the loop over n: load the 4 z-coefficients of spline n, form the three z-sums (value, "
    "∂z, ∂²z) with c, d, e, then add each stream's x·y weight × z-sum into out[s, n]; the "
    "x-derivative lives in a′ (dab, dadb, d2ab), the y-derivative in b′ (adb, dadb, ad2b), "
    "the z-derivative in the z-sum (dz, d2z)",
    "p0 = coefs[ix, iy, k0, n] … p3; vz = c0*p0 + … + c3*p3; dz (d0..d3); d2z (e0..e3); "
    "out[0, n] += ab*vz; out[1, n] += dab*vz; out[2, n] += adb*vz; out[3, n] += ab*dz; then "
    "hxx d2ab*vz, hxy dadb*vz, hxz dab*dz, hyy ad2b*vz, hyz adb*dz, hzz ab*d2z")
hints.define(
    "spill_n",
    "for one position, which bytes must stay close while its 16 column passes run: the "
    "outputs it updates, and the coefficients it reads?",
    "per spline that is 10 output values and 4 × 4 × 4 = 64 coefficients, itemsize bytes "
    "each; the working set grows linearly with N, so divide the cache size by the bytes per "
    "spline",
    "per = (10 + 64) * itemsize; return l1 // per, l2 // per")
hints.define(
    "aosoa_driver",
    "every tile is an independent SoA problem; what may the threads share, what must each "
    "have for itself — and what does np.empty inside a prange cost per tile?",
    "allocate scratch = np.empty((numba.get_num_threads(), 10, Nb)) before the loop; in "
    "prange(M) take t = numba.get_thread_id(), run bs.vgh_soa(tcoefs[m], idx, pref, "
    "scratch[t]) and copy the first min(Nb, n − m·Nb) splines into out[:, m·Nb:]",
    "for m in prange(M): t = numba.get_thread_id(); bs.vgh_soa(tcoefs[m], idx, pref, "
    "scratch[t]); lo = m * Nb; for s in range(10): for k in range(min(Nb, n - lo)): "
    "out[s, lo + k] = scratch[t, s, k]")
hints.define(
    "flat_tiles",
    "numba runs a prange nested in another prange serially; how do P positions × M tiles "
    "become one loop both threads can share, however small P or M is?",
    "one prange over P·M tasks; task t is position t // M and tile t % M, and each writes "
    "its own out[p, m] block, so no two threads touch the same data",
    "for t in prange(P * M): p = t // M; m = t - p * M; "
    "bs.vgh_soa(tcoefs[m], idx[p], pref[p], out[p, m])")
hints.define(
    "vgh_cost",
    "count what the kernel does per spline for one (x, y) column, then multiply by the 16 "
    "columns; for the bytes, what must come from (and go to) DRAM at least once",
    "a four-term sum is 4 multiplies and 3 adds; there are 3 z-sums per column and 10 "
    "multiply-adds into the outputs (2 FLOP each). Bytes: the 64 coefficients each position "
    "reads, plus the 10 outputs written once",
    "flops = 16 * (3 * 7 + 10 * 2); nbytes = (64 + 10) * itemsize; return flops, nbytes")


# ---------------------------------------------------------------- answers on the screen
# REVEALS: exercise → a callable returning what would give its graded answer away if a cell
# printed it before the exercise's check has passed (exact strings, computed from the checks'
# own references on this machine). tests/test_notebooks.py runs every student copy unsolved and
# finds none of them in any output.
def _spill_n_reveals():
    """This machine's spill points (float64), in the forms the notebook writes an N."""
    from labkit import hardware
    hw = hardware.info()
    n1, n2 = spill_points(int(hw["l1d"]), int(hw["l2"]), 8)
    return [f"N ≈ {n1}", f"N ≈ {n2}", f"N = {n1}", f"N = {n2}", f"N_L1 ≈ {n1}", f"N_L2 ≈ {n2}"]


def _vgh_cost_reveals():
    """The FLOP and byte counts (float64 and float32), their intensity, and the byte count's
    two terms (coefficients read, outputs written) that add up to it."""
    from . import traffic_per_eval
    flops, b8 = vgh_cost(8)
    _, b4 = vgh_cost(4)
    t = traffic_per_eval("soa")
    import re
    return [f"{flops} FLOP", f"{flops} / ", f"{b8} B", f"{b8} bytes", f"{b4} B", f"{b4} bytes",
            f"{flops / b8:.2f} FLOP", f"{t['coef_reads']} B", f"{t['out_writes']} B",
            re.compile(rf"\bFLOP\b[^\n]{{0,40}}(?<![\d.,]){flops}(?![\d]|[.,]\d)")]


REVEALS = {"spill_n": _spill_n_reveals, "vgh_cost": _vgh_cost_reveals}
