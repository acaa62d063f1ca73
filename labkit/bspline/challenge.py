"""Lab 02's open challenge, ``vgh_challenge``: value, gradient and Hessian of N periodic tricubic
B-splines at P positions into the canonical output, graded on a scale between a slow starting
point and ``labkit.bspline.evaluate_vgh`` (:mod:`labkit.check.challenge`, docs/challenges.md).

The student's ``@njit`` function ``vgh_challenge(coefs, positions, value, grad, hess)`` takes
the coefficients ``(nx, ny, nz, N)`` (float64, the unit box ``[0, 1)³``, periodic) and
positions ``(P, 3)`` (any finite coordinates: they wrap) and fills ``value (P, N)``, ``grad (P,
N, 3)`` and ``hess (P, N, 3, 3)`` (the canonical form, float64, every entry). The starting
point (:func:`vgh_challenge`) evaluates spline by spline, the 64 grid points around the
position each, and writes the 13 numbers where they belong. labkit's kernel is
``evaluate_vgh(coefs, positions, threads=1)``: SoA streams register-blocked per x-plane, fused
with the write into the canonical arrays.
"""
from __future__ import annotations

import inspect

import numpy as np
from numba import njit

import labkit.jit  # noqa: F401 - numba's cache key holds labkit's sources (CONTRIBUTING)
from labkit import hints
from labkit.check import exercise
from labkit.check.challenge import Challenge, judge

from . import evaluate_vgh, flops_per_eval, make_inputs, reference

__all__ = ["vgh_challenge", "CHALLENGE", "RULES", "SOLUTION", "start_source",
           "check_vgh_challenge"]

RULES = """\
**The task**: `vgh_challenge(coefs, positions, value, grad, hess)` fills the value, gradient and
Hessian of every spline at every position: `coefs` (nx, ny, nz, N) float64 on the unit box
[0, 1)³, periodic, at least 4 grid points per axis; `positions` (P, 3) float64, any finite coordinates (they wrap into the box);
`value` (P, N), `grad` (P, N, 3) and `hess` (P, N, 3, 3) float64, C-contiguous — the canonical
form of `labkit.bspline.evaluate_vgh`, every entry written (the Hessian is symmetric).

**Allowed**: your own numba code (`@njit`, `prange`, `fastmath`, helpers of your own in this
cell); numpy inside it to allocate scratch arrays and glue. Your function must be `@njit` as a
whole: the check times it as one call.

**Threads**: none — the check runs numba with one thread (the grader runs notebooks side by
side), and labkit's kernel is timed single-threaded too. A `prange` still runs (serially): use
it if you want what it does to the code inside it.

**Not allowed**: labkit's functions and kernels (any of them — `evaluate_vgh`, the lab's
`vgh_*` kernels, `prefactors`), scipy's splines or any library call that evaluates them for you.
The check refuses them (`uses labkit's answer`).

**Grading**: first your outputs on hidden inputs (edge cases included) against an independent
reference (to 1e-9 of each output's largest magnitude); then your speed, timed in the same run
beside this starting point (0 points) and labkit's kernel (full points): ¼, ½, ¾ or all of the
points by your position between them on a log scale (docs/challenges.md)."""


# ---------------------------------------------------------------- the starting point
@njit(cache=True)
def vgh_challenge(coefs, positions, value, grad, hess):
    """Value, gradient and Hessian of the N periodic tricubic B-splines coefs (nx, ny, nz, N)
    on the unit box at every position (P, 3), into value (P, N), grad (P, N, 3) and
    hess (P, N, 3, 3): spline by spline, the 64 grid points around the position each."""
    nx, ny, nz, N = coefs.shape
    grid = (nx, ny, nz)
    w = np.empty((3, 3, 4))                 # [axis, derivative 0/1/2, i]: basis weights
    ix = np.empty((3, 4), np.int64)         # [axis, i]: grid index of the i-th point
    for p in range(positions.shape[0]):
        for a in range(3):
            n = grid[a]
            u = (positions[p, a] % 1.0) * n
            i0 = int(np.floor(u))
            t = u - i0
            s = 1.0 - t
            w[a, 0, 0] = s * s * s / 6.0
            w[a, 0, 1] = (3.0 * t**3 - 6.0 * t**2 + 4.0) / 6.0
            w[a, 0, 2] = (-3.0 * t**3 + 3.0 * t**2 + 3.0 * t + 1.0) / 6.0
            w[a, 0, 3] = t**3 / 6.0
            w[a, 1, 0] = -0.5 * s * s * n
            w[a, 1, 1] = (1.5 * t**2 - 2.0 * t) * n
            w[a, 1, 2] = (-1.5 * t**2 + t + 0.5) * n
            w[a, 1, 3] = 0.5 * t**2 * n
            w[a, 2, 0] = s * n * n
            w[a, 2, 1] = (3.0 * t - 2.0) * n * n
            w[a, 2, 2] = (1.0 - 3.0 * t) * n * n
            w[a, 2, 3] = t * n * n
            for i in range(4):
                ix[a, i] = (i0 + i) % n
        for m in range(N):
            v = gx = gy = gz = hxx = hxy = hxz = hyy = hyz = hzz = 0.0
            for i in range(4):
                for j in range(4):
                    for k in range(4):
                        c = coefs[ix[0, i], ix[1, j], ix[2, k], m]
                        v += w[0, 0, i] * w[1, 0, j] * w[2, 0, k] * c
                        gx += w[0, 1, i] * w[1, 0, j] * w[2, 0, k] * c
                        gy += w[0, 0, i] * w[1, 1, j] * w[2, 0, k] * c
                        gz += w[0, 0, i] * w[1, 0, j] * w[2, 1, k] * c
                        hxx += w[0, 2, i] * w[1, 0, j] * w[2, 0, k] * c
                        hxy += w[0, 1, i] * w[1, 1, j] * w[2, 0, k] * c
                        hxz += w[0, 1, i] * w[1, 0, j] * w[2, 1, k] * c
                        hyy += w[0, 0, i] * w[1, 2, j] * w[2, 0, k] * c
                        hyz += w[0, 0, i] * w[1, 1, j] * w[2, 1, k] * c
                        hzz += w[0, 0, i] * w[1, 0, j] * w[2, 2, k] * c
            value[p, m] = v
            grad[p, m, 0], grad[p, m, 1], grad[p, m, 2] = gx, gy, gz
            hess[p, m, 0, 0], hess[p, m, 0, 1], hess[p, m, 0, 2] = hxx, hxy, hxz
            hess[p, m, 1, 0], hess[p, m, 1, 1], hess[p, m, 1, 2] = hxy, hyy, hyz
            hess[p, m, 2, 0], hess[p, m, 2, 1], hess[p, m, 2, 2] = hxz, hyz, hzz


def start_source() -> str:
    """The starting point as the student copy shows it (``@njit``, no cache)."""
    return inspect.getsource(vgh_challenge).replace("@njit(cache=True)", "@njit", 1)


# ---------------------------------------------------------------- labkit's side, the reference
def labkit_vgh(coefs, positions, value, grad, hess):
    """labkit's kernel on the challenge's input, one thread: its own canonical arrays (a block
    it reuses), the outputs given untouched."""
    return evaluate_vgh(coefs, positions, threads=1)


def _outputs(args, returned):
    return args[2], args[3], args[4]


def _labkit_result(args, returned):
    return returned


def _reference(coefs, positions, value, grad, hess):
    return reference(coefs, positions)


def _compare(got, expected) -> str | None:
    from labkit._common import mismatch
    for name, g, e in zip(("value", "grad", "hess"), got, expected):
        e = np.asarray(e)
        if not isinstance(g, np.ndarray) or g.shape != e.shape:
            return f"{name} has shape {np.shape(g)}, expected {e.shape}"
        scale = float(np.max(np.abs(e))) if e.size else 1.0
        msg = mismatch(g, e, name=name, atol=1e-9 * max(scale, 1e-300))
        if msg is not None:
            return f"{msg} (tolerance 1e-9 of the largest |{name}|)"
    return None


def _step(layout: str, blocked: bool):
    def run(coefs, positions, value, grad, hess):
        return evaluate_vgh(coefs, positions, layout=layout, threads=1, blocked=blocked)
    return run


# ---------------------------------------------------------------- inputs
def _case(g, grid, n, positions) -> tuple:
    coefs = make_inputs({"grid": grid, "n": n, "positions": 1},
                        seed=int(g.integers(1 << 31))).coefs
    pos = np.ascontiguousarray(positions, dtype=np.float64)
    P = pos.shape[0]
    return (np.ascontiguousarray(coefs), pos, np.full((P, n), np.nan),
            np.full((P, n, 3), np.nan), np.full((P, n, 3, 3), np.nan))


def _cases(g: np.random.Generator) -> list:
    nx, ny, nz = 5, 7, 3
    on_grid = np.array([[i / nx, j / ny, k / nz] for i, j, k in ((0, 0, 0), (1, 2, 1),
                                                                 (4, 6, 2))])
    wrapped = np.array([[-1e-17, 1.0, 2.5], [-3.25, 0.999999, -0.5], [7.0, -7.0, 1e-12]])
    return [
        ("one spline at one position", _case(g, (6, 6, 6), 1, g.random((1, 3)))),
        ("37 splines (not a multiple of the vector width) at 9 positions, a 5 x 7 x 3 grid",
         _case(g, (nx, ny, nz), 37, g.random((9, 3)))),
        ("positions on grid points", _case(g, (nx, ny, nz), 16, on_grid)),
        ("positions outside the box and on its edges (they wrap)",
         _case(g, (8, 8, 8), 24, wrapped)),
        ("the smallest grid, 4 x 4 x 4 points", _case(g, (4, 4, 4), 8, g.random((5, 3)))),
        ("64 splines at 40 positions", _case(g, (10, 9, 11), 64, g.random((40, 3)) * 3 - 1)),
    ]


#: The timing input: a 16³ grid, 128 splines, 2048 positions (one labkit call ≈ 6 ms on one
#: core; the canonical outputs are 27 MB; 128 splines: a position's 10 streams, 10 KiB, stay in
#: L1 beside the coefficients, as in labkit's tiles).
TIMING = {"grid": (16, 16, 16), "n": 128, "positions": 2048}


def _timing(g: np.random.Generator) -> tuple:
    inp = make_inputs(TIMING, seed=int(g.integers(1 << 31)))
    P, N = TIMING["positions"], TIMING["n"]
    return (np.ascontiguousarray(inp.coefs), inp.positions, np.full((P, N), np.nan),
            np.full((P, N, 3), np.nan), np.full((P, N, 3, 3), np.nan))


def _roof(seconds: float, args) -> tuple | None:
    """The student's FLOP rate (656 per spline and position) as a share of one core's FMA roof."""
    from labkit.hardware import measure_fma_rate
    P, N = args[1].shape[0], args[0].shape[3]
    rate = measure_fma_rate(repeat=3)                       # GFLOP/s
    return flops_per_eval() * N * P / seconds / 1e9 / rate, "one core's FMA roof"


CHALLENGE = Challenge(
    name="vgh_challenge", start=vgh_challenge, labkit=labkit_vgh, timing_input=_timing,
    cases=_cases, reference=_reference, compare=_compare, outputs=(2, 3, 4), result=_outputs,
    labkit_result=_labkit_result,
    steps={"AoS (vgh_aos)": _step("aos", False), "SoA (vgh_soa)": _step("soa", False)},
    roof=_roof, hot_dtype="double", rules=RULES)


#: What `hints.next('vgh_challenge')` reveals, one tier at a time (a failing check names it).
hints.define(
    'vgh_challenge',
    "The starting point walks spline by spline: for each of the N splines it reads 64 "
    "coefficients N apart in memory and recomputes the position's weights, so no inner loop is "
    "contiguous and nothing is vectorised. The weights depend on the position only (section 1):"
    " compute them once per position, and the loop over splines becomes the contiguous, "
    "independent one — SoA (sections 3–4).",
    "Per position: wrap it into the box, compute the 4 weights per axis and their first and "
    "second derivatives once; then for each of the 64 grid points loop over the splines "
    "innermost, accumulating the 10 independent quantities (value, 3 gradient, 6 Hessian) in "
    "per-spline scratch rows small enough for L1 (section 5); at the end write them, and the "
    "symmetric Hessian entries, into the canonical arrays.",
    "for p in range(P): (weights a, da, d2a per axis); acc = np.zeros((10, N)); for i in "
    "range(4): for j in range(4): for k in range(4): row = coefs[xi[i], yi[j], zi[k]]  # (N,) "
    "contiguous; w = a[i] * b[j] * c[k]; gx = da[i] * b[j] * c[k] …; for n in range(N): acc[0, "
    "n] += w * row[n]; acc[1, n] += gx * row[n] …; then value[p] = acc[0]; grad[p, :, 0] = "
    "acc[1] …",
)


@exercise("vgh_challenge", points=4, outputs=(2, 3, 4),
          answers=("labkit.bspline:evaluate_vgh", "labkit.bspline.engine:_batch_canonical",
                   "labkit.bspline.kernels:_batch_tiles_blocked"))
def check_vgh_challenge(student):
    """VGH of N splines at P positions into the canonical output, as fast as you can: graded on
    a scale from the starting point (0) to labkit's ``evaluate_vgh`` (full points)."""
    return judge(student, CHALLENGE)


#: A reference solution in the student's own style (no labkit): the lab's SoA streams,
#: register-blocked per x-plane, in a prange (numba marks a prange body's arrays noalias), then
#: written out into the canonical arrays. Pasted into the notebook's SOLUTION region;
#: tests/test_challenges.py checks it earns the full points.
SOLUTION = '''\
@njit(fastmath=True)
def weights(x, n):
    """Coordinate x on an axis of n grid points (unit box, periodic): the first grid index and
    the 12 weights (w0 … w3, their first x-derivatives, their second)."""
    u = (x % 1.0) * n
    i0 = int(np.floor(u))
    t = u - i0
    s = 1.0 - t
    t2 = t * t
    t3 = t2 * t
    return i0, (s * s * s / 6.0, (3.0 * t3 - 6.0 * t2 + 4.0) / 6.0,
                (-3.0 * t3 + 3.0 * t2 + 3.0 * t + 1.0) / 6.0, t3 / 6.0,
                -0.5 * s * s * n, (1.5 * t2 - 2.0 * t) * n, (-1.5 * t2 + t + 0.5) * n,
                0.5 * t2 * n,
                s * n * n, (3.0 * t - 2.0) * n * n, (1.0 - 3.0 * t) * n * n, t * n * n)


@njit(fastmath=True, inline="always")
def column(coefs, x, y, zs, wz, k):
    """The z-sums of grid column (x, y) of spline k: value, first and second z-derivative."""
    p0 = coefs[x, y, zs[0], k]
    p1 = coefs[x, y, zs[1], k]
    p2 = coefs[x, y, zs[2], k]
    p3 = coefs[x, y, zs[3], k]
    return (wz[0] * p0 + wz[1] * p1 + wz[2] * p2 + wz[3] * p3,
            wz[4] * p0 + wz[5] * p1 + wz[6] * p2 + wz[7] * p3,
            wz[8] * p0 + wz[9] * p1 + wz[10] * p2 + wz[11] * p3)


@njit(fastmath=True, inline="always")
def plane(coefs, x, ys, zs, wy, wz, k):
    """x-plane x of spline k, register-blocked: its 16 coefficients (y, z) reduced to the six
    sums the 10 outputs need (1, d/dy, d²/dy², d/dz, d²/dydz, d²/dz²)."""
    vz, dz, d2z = column(coefs, x, ys[0], zs, wz, k)
    s00, s10, s20 = wy[0] * vz, wy[4] * vz, wy[8] * vz
    s01, s11, s02 = wy[0] * dz, wy[4] * dz, wy[0] * d2z
    for j in range(1, 4):
        vz, dz, d2z = column(coefs, x, ys[j], zs, wz, k)
        s00, s10, s20 = s00 + wy[j] * vz, s10 + wy[4 + j] * vz, s20 + wy[8 + j] * vz
        s01, s11, s02 = s01 + wy[j] * dz, s11 + wy[4 + j] * dz, s02 + wy[j] * d2z
    return s00, s10, s20, s01, s11, s02


@njit(parallel=True, fastmath=True)
def vgh_challenge(coefs, positions, value, grad, hess):
    """Per position: the 10 SoA streams of every spline (v, gx, gy, gz, hxx, hxy, hxz, hyy,
    hyz, hzz), register-blocked per x-plane, in a scratch block; then written out into the
    canonical arrays. The positions run in a prange: inside its body numba marks the arrays
    noalias, so LLVM vectorises the spline loops without run-time overlap checks (it gives
    up on 26 pointers otherwise)."""
    nx, ny, nz, N = coefs.shape
    P = positions.shape[0]
    # every position's grid indices and weights first: a call inside the prange body would
    # cost the body its noalias marking
    I = np.empty((P, 3, 4), np.int64)
    W = np.empty((P, 3, 12))
    for p in range(P):
        for a, n in enumerate((nx, ny, nz)):
            i0, w = weights(positions[p, a], n)
            for i in range(4):
                I[p, a, i] = (i0 + i) % n
            for i in range(12):
                W[p, a, i] = w[i]
    # one scratch block per thread, allocated out here: then it is one of the prange's arrays
    # (noalias) — a np.empty inside the body would not be
    scratch = np.empty((numba.get_num_threads(), 10, N))
    for p in prange(P):
        q = numba.get_thread_id()
        ys = (I[p, 1, 0], I[p, 1, 1], I[p, 1, 2], I[p, 1, 3])
        zs = (I[p, 2, 0], I[p, 2, 1], I[p, 2, 2], I[p, 2, 3])
        wy = (W[p, 1, 0], W[p, 1, 1], W[p, 1, 2], W[p, 1, 3], W[p, 1, 4], W[p, 1, 5],
              W[p, 1, 6], W[p, 1, 7], W[p, 1, 8], W[p, 1, 9], W[p, 1, 10], W[p, 1, 11])
        wz = (W[p, 2, 0], W[p, 2, 1], W[p, 2, 2], W[p, 2, 3], W[p, 2, 4], W[p, 2, 5],
              W[p, 2, 6], W[p, 2, 7], W[p, 2, 8], W[p, 2, 9], W[p, 2, 10], W[p, 2, 11])
        x = I[p, 0, 0]                      # the first x-plane sets the streams …
        a, da, d2a = W[p, 0, 0], W[p, 0, 4], W[p, 0, 8]
        for k in range(N):
            s00, s10, s20, s01, s11, s02 = plane(coefs, x, ys, zs, wy, wz, k)
            scratch[q, 0, k] = a * s00
            scratch[q, 1, k] = da * s00
            scratch[q, 2, k] = a * s10
            scratch[q, 3, k] = a * s01
            scratch[q, 4, k] = d2a * s00
            scratch[q, 5, k] = da * s10
            scratch[q, 6, k] = da * s01
            scratch[q, 7, k] = a * s20
            scratch[q, 8, k] = a * s11
            scratch[q, 9, k] = a * s02
        for i in range(1, 4):               # … the other three add to them
            x = I[p, 0, i]
            a, da, d2a = W[p, 0, i], W[p, 0, 4 + i], W[p, 0, 8 + i]
            for k in range(N):
                s00, s10, s20, s01, s11, s02 = plane(coefs, x, ys, zs, wy, wz, k)
                scratch[q, 0, k] += a * s00
                scratch[q, 1, k] += da * s00
                scratch[q, 2, k] += a * s10
                scratch[q, 3, k] += a * s01
                scratch[q, 4, k] += d2a * s00
                scratch[q, 5, k] += da * s10
                scratch[q, 6, k] += da * s01
                scratch[q, 7, k] += a * s20
                scratch[q, 8, k] += a * s11
                scratch[q, 9, k] += a * s02
        for k in range(N):
            value[p, k] = scratch[q, 0, k]
            grad[p, k, 0] = scratch[q, 1, k]
            grad[p, k, 1] = scratch[q, 2, k]
            grad[p, k, 2] = scratch[q, 3, k]
            hess[p, k, 0, 0] = scratch[q, 4, k]
            hess[p, k, 0, 1] = scratch[q, 5, k]
            hess[p, k, 0, 2] = scratch[q, 6, k]
            hess[p, k, 1, 0] = scratch[q, 5, k]
            hess[p, k, 1, 1] = scratch[q, 7, k]
            hess[p, k, 1, 2] = scratch[q, 8, k]
            hess[p, k, 2, 0] = scratch[q, 6, k]
            hess[p, k, 2, 1] = scratch[q, 8, k]
            hess[p, k, 2, 2] = scratch[q, 9, k]
'''

#: The imports the solution's cell needs (the notebook's earlier cells give them).
SOLUTION_IMPORTS = "import numpy as np\nimport numba\nfrom numba import njit, prange\n"
