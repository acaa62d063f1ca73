"""Exercise checks of lab 02: ``check.aos_to_soa``, ``check.soa_inner_loop``, ``check.tile_size``."""
from __future__ import annotations

import numba
import numpy as np

from labkit.check import CheckFailure, exercise, mismatch, rng, speed_enforced
from labkit.check import require_njit, speed_gate, vectorized_gate

from . import (STREAMS, Workload, aos_to_soa, make_inputs, new_output, prefactors, tile_sweep,
               time_interleaved, vgh_aos, vgh_soa)

#: A chosen tile passes when its throughput is within this fraction of the best measured tile.
TILE_TOLERANCE = 0.25
#: Tile sizes the tile-choice check measures (plus the student's own choice).
TILE_CHOICES = (16, 32, 64, 128, 256, 512, 1024)
_TILE_CHECK_SIZE = {"grid": (8, 8, 8), "n": 1024, "positions": 64}


@exercise("aos_to_soa", points=1, answers=("labkit.bspline.layouts:aos_to_soa",
                                           "labkit.bspline:aos_to_soa"))
def check_aos_to_soa(student):
    """``student(v, g, h)`` → SoA streams ``(10, N)`` in STREAMS order, from one position's AoS output."""
    r = rng()
    for N in (1, 8, int(r.integers(9, 300))):
        v = r.standard_normal(N)
        g = r.standard_normal((N, 3))
        h = r.standard_normal((N, 3, 3))
        h = h + np.swapaxes(h, 1, 2)
        got = student(v.copy(), g.copy(), h.copy())
        if isinstance(got, (list, tuple)):
            got = np.asarray(got)
        msg = mismatch(got, aos_to_soa(v, g, h), name="soa")
        if msg is not None:
            raise AssertionError(f"{msg} — rows must be {', '.join(STREAMS)}")
    return "all 10 streams right for N = 1, 8 and a random N"


def _soa_case(r, grid, N, dtype=np.float64):
    coefs = r.standard_normal(tuple(grid) + (N,)).astype(dtype)
    pos = r.random((1, 3)) * 2.0 - 0.5
    idx, pref = prefactors(pos, grid, dtype=dtype)
    return coefs, idx[0], pref[0]


@exercise("soa_inner_loop", points=2, answers=("labkit.bspline.kernels:vgh_soa",
                                               "labkit.bspline.kernels:vgh_soa_blocked",
                                               "labkit.bspline.kernels:vgh_aosoa",
                                               "labkit.bspline:evaluate_vgh"))
def check_soa_inner_loop(student):
    """``student(coefs, idx, pref, out)`` fills the SoA streams ``out (10, ≥N)`` like ``vgh_soa``."""
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
    x = make_inputs({"grid": (8, 8, 8), "n": 512, "positions": 1}, seed=1)
    idx, pref = prefactors(x.positions, x.grid)
    aos = new_output(x.n, "aos")
    speed_gate(student, vgh_aos, (x.coefs, idx[0], pref[0]) + aos, need=1.5,
               vs="the AoS kernel", student_args=(x.coefs, idx[0], pref[0], new_output(x.n, "soa")))
    return "matches vgh_soa on 3 random grids"


@exercise("tile_size", points=1, answers=())   # a choice, judged by measurement
def check_tile_size(student):
    """``student(inputs)`` → a tile size Nb whose AoSoA throughput on ``inputs`` is within
    TILE_TOLERANCE of the best tile measured now (8³ grid, N = 1024, one thread, CPU time)."""
    x = make_inputs(_TILE_CHECK_SIZE, seed=int(rng().integers(1 << 30)))
    choice = student(x)
    if isinstance(choice, bool) or not isinstance(choice, (int, np.integer)):
        raise AssertionError(f"return the tile size as an int (splines per tile), got {choice!r}")
    choice = int(choice)
    if not 1 <= choice <= x.n:
        raise AssertionError(f"tile size must be between 1 and N = {x.n}, got {choice}")
    tiles = sorted(set(TILE_CHOICES) | {choice})
    sweep = tile_sweep(x, tiles=tiles, repeat=3, min_time=0.02)
    best = max((t for t in sweep if t != "soa"), key=lambda t: sweep[t])
    if best == choice:
        return f"Nb = {choice} was the fastest tile measured"
    secs = time_interleaved({"best": Workload(x, "aosoa", tile=best),
                             "yours": Workload(x, "aosoa", tile=choice)}, clock="cpu", repeat=5)
    frac = secs["best"] / secs["yours"]
    note = (f"Nb = {choice} ran at {frac:.0%} of the sweep's best tile (Nb = {best}); "
            f"need ≥ {1 - TILE_TOLERANCE:.0%}")
    if frac >= 1 - TILE_TOLERANCE:
        return note
    if speed_enforced():
        raise CheckFailure("not fast enough", note)
    return note + " — speed reported only (LABKIT_SPEED=report)"


#: The exercises this lab registers (``check.<name>``).
CHECKS = {"aos_to_soa": check_aos_to_soa, "soa_inner_loop": check_soa_inner_loop,
          "tile_size": check_tile_size}
