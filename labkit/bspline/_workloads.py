"""What lab 02's benchmark times: the peer, scipy's ``NdBSpline`` (``ndbspline_of``,
``ndbspline_vgh``), and prepared workloads — a kernel on fixed inputs with its outputs allocated
once (:class:`Workload`), NdBSpline over the same batches (``_ScipyWorkload``), and the entry point
on its natural call (``_EntryWorkload``) — each a zero-argument callable stepping through the
positions batch by batch."""
from __future__ import annotations

import numpy as np

from labkit._common import use_threads

from . import evaluate_vgh
from .engine import _batch_aos
from .inputs import BsplineInputs, _unpack
from .kernels import _batch_tiles, _batch_tiles_blocked, _walker_tiles, prefactors
from .layouts import aligned_empty, stream_stride

__all__ = ["Workload", "ndbspline_vgh", "ndbspline_of"]


# ----------------------------------------------------------------------------- peer: scipy NdBSpline
def ndbspline_vgh(spline, positions):
    """Value, gradient and Hessian by ``scipy.interpolate.NdBSpline`` (10 derivative calls):
    the independent library the kernels are compared with; ``spline`` from :func:`ndbspline_of`."""
    pos = np.asarray(positions, dtype=np.float64)
    out = [spline(pos, nu=nu) for nu in ((0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1), (2, 0, 0),
                                         (1, 1, 0), (1, 0, 1), (0, 2, 0), (0, 1, 1), (0, 0, 2))]
    return out


def ndbspline_of(inputs):
    """The same periodic spline as a ``scipy.interpolate.NdBSpline`` (knots Δ·arange(-3, n+4),
    coefficients extended modulo n): positions must already lie in the box."""
    from scipy.interpolate import NdBSpline

    coefs, lengths = _unpack(inputs)
    grid = coefs.shape[:3]
    knots = tuple((L / n) * np.arange(-3, n + 4) for n, L in zip(grid, lengths))
    ext = coefs[np.ix_(*[np.arange(n + 3) % n for n in grid])].astype(np.float64, copy=False)
    return NdBSpline(knots, ext, 3)


# ----------------------------------------------------------------------------- prepared workloads
class Workload:
    """Prepared arguments for timing one layout on fixed inputs (no allocation inside the call).

    ``batch``: evaluate that many positions per call, stepping through all of ``inputs.positions``
    from call to call (as QMC moves to new random positions). Needed on a big grid: re-using the
    same few positions would re-read the same coefficients, which then sit in cache."""

    def __init__(self, inputs: BsplineInputs, layout: str, tile: int | None = None,
                 threads: int = 1, walker: bool = False, batch: int | None = None,
                 blocked: bool = False):
        self.inputs, self.layout, self.threads, self.walker = inputs, layout, threads, walker
        if blocked and (layout == "aos" or walker):
            raise ValueError("blocked=True is for layout 'soa'/'aosoa' over positions (walker=False)")
        coefs = inputs.coefs
        self.idx, self.pref = prefactors(inputs.positions, inputs.grid, inputs.lengths,
                                         dtype=coefs.dtype)
        P, N = self.idx.shape[0], inputs.n
        self.batch = P if batch is None else max(1, min(int(batch), P))
        self.chunks = P // self.batch
        self.step = 0
        B = self.batch
        if layout == "aos":
            self.outs = (aligned_empty((B, N), coefs.dtype), aligned_empty((B, N, 3), coefs.dtype),
                         aligned_empty((B, N, 3, 3), coefs.dtype))
            self.data = (coefs,)
            self.kernel = _batch_aos
        else:
            tc = coefs.reshape((1,) + coefs.shape) if layout == "soa" else inputs.tiled(tile)
            q = 1 if walker else B
            self.outs = (aligned_empty((q, tc.shape[0], 10,
                                        stream_stride(tc.shape[4], coefs.dtype)), coefs.dtype),)
            self.data = (tc,)
            self.kernel = (_walker_tiles if walker else
                           _batch_tiles_blocked if blocked else _batch_tiles)
        self.work = B * N

    @property
    def args(self) -> tuple:
        """The kernel's arguments for the next call (the next batch of positions)."""
        lo = (self.step % self.chunks) * self.batch
        return self.data + (self.idx[lo:lo + self.batch], self.pref[lo:lo + self.batch]) + self.outs

    def __call__(self):
        """Run the kernel once on the next batch of positions with the chosen number of threads."""
        args = self.args
        self.step += 1
        with use_threads(self.threads, clamp=True):
            self.kernel(*args)


class _ScipyWorkload:
    """scipy NdBSpline VGH over the same rotating batches of positions as Workload.

    ``chunk``: positions per NdBSpline call inside a batch (default: the whole batch in one
    call). NdBSpline makes one pass over the coefficients per derivative (10 for VGH); with a
    few positions per call the 2nd…10th passes find the rows still in L2/L3 — its fastest use on
    a big grid. ``spline``: a prebuilt :func:`ndbspline_of` (its coefficient copy is big)."""

    def __init__(self, inputs: BsplineInputs, batch: int | None = None, chunk: int | None = None,
                 spline=None):
        self.spline = ndbspline_of(inputs) if spline is None else spline
        self.pos = np.mod(inputs.positions, np.asarray(inputs.lengths))
        P = len(self.pos)
        self.batch = P if batch is None else max(1, min(int(batch), P))
        self.chunk = self.batch if chunk is None else max(1, min(int(chunk), self.batch))
        self.chunks, self.step = P // self.batch, 0
        self.work = self.batch * inputs.n

    def __call__(self):
        lo = (self.step % self.chunks) * self.batch
        self.step += 1
        return [ndbspline_vgh(self.spline, self.pos[c:min(c + self.chunk, lo + self.batch)])
                for c in range(lo, lo + self.batch, self.chunk)]


class _EntryWorkload:
    """The friendly entry point on its natural input and output: ``evaluate_vgh(coefs,
    positions, **kw)`` on bare coefficients and the next batch of raw positions, returning the
    canonical arrays (allocated by the call, as a user gets them); numba limited to
    ``threads`` around the call (the kernel rows run on one thread)."""

    def __init__(self, inputs: BsplineInputs, batch: int, threads: int = 1, **kw):
        self.coefs, self.pos, self.kw, self.threads = inputs.coefs, inputs.positions, kw, threads
        self.batch = max(1, min(int(batch), len(self.pos)))
        self.chunks, self.step = len(self.pos) // self.batch, 0

    def __call__(self):
        lo = (self.step % self.chunks) * self.batch
        self.step += 1
        with use_threads(self.threads, clamp=True):
            return evaluate_vgh(self.coefs, self.pos[lo:lo + self.batch], **self.kw)
