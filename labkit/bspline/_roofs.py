"""Lab 02's roofs by precision (``labkit bench bspline``'s table "roofs by precision"): the
register-blocked SoA kernel in float64 and float32 on the seed's grid, each as a share of one
core's measured read bandwidth and of its FMA roof, side by side, with two measured bounds
beside them that say where the kernel's time goes:

* **its coefficient loads alone** (``read_rows``): the same 64 rows per position read in the
  kernel's order (x-plane, then the 16 (y, z) rows across the splines) and summed, no other
  arithmetic — the fastest the kernel's own access pattern reads memory (short 16 KiB runs at
  random places, not one long stream as the read-bandwidth sum);
* **the kernel with its coefficients in cache** (the 8³ grid, 2 MiB): its rate when memory
  costs nothing — the in-core bound (FMAs, loads and stores of the 10 output streams).

Bytes per VGH: 64 coefficients read + 10 outputs (74 values: 592 B in float64, 296 B in
float32). FLOPs per VGH: ``kernels.flops_per_eval()`` (656, FMA = 2). The FMA roof is
``hardware.measure_fma_rate()`` (float64, the registers' width); float32's is derived from it,
twice as many lanes per vector FMA (the same instructions, ``vfmadd…ps`` for ``…pd``).
Everything in CPU seconds of one thread, interleaved, median."""
from __future__ import annotations

import numpy as np

from labkit import bench
from labkit.jit import njit as wide_njit

from .kernels import flops_per_eval, prefactors

__all__ = ["read_rows", "RowReader", "precision_roofs", "VALUES_PER_VGH"]

#: values moved per VGH: 64 coefficients read, 10 outputs written
VALUES_PER_VGH = 64 + 10


@wide_njit(cache=True, fastmath=True)
def read_rows(tcoefs, idx, sink):
    """Sum the coefficient rows the VGH kernel reads for each position in ``idx``, in its order:
    per x-plane, the 16 rows (4 y × 4 z) side by side across the splines; ``sink[p % len]``
    gets each plane's sum (so nothing is optimised away)."""
    N = tcoefs.shape[4]
    c = tcoefs[0]
    for p in range(idx.shape[0]):
        k0, k1, k2, k3 = idx[p, 2, 0], idx[p, 2, 1], idx[p, 2, 2], idx[p, 2, 3]
        y0, y1, y2, y3 = idx[p, 1, 0], idx[p, 1, 1], idx[p, 1, 2], idx[p, 1, 3]
        for i in range(4):
            ix = idx[p, 0, i]
            a0, a1, a2, a3 = c[ix, y0, k0], c[ix, y0, k1], c[ix, y0, k2], c[ix, y0, k3]
            b0, b1, b2, b3 = c[ix, y1, k0], c[ix, y1, k1], c[ix, y1, k2], c[ix, y1, k3]
            d0, d1, d2, d3 = c[ix, y2, k0], c[ix, y2, k1], c[ix, y2, k2], c[ix, y2, k3]
            e0, e1, e2, e3 = c[ix, y3, k0], c[ix, y3, k1], c[ix, y3, k2], c[ix, y3, k3]
            s = c[0, 0, 0, 0] * 0          # the coefficients' type: no conversions in the loop
            for n in range(N):
                s += (((a0[n] + a1[n]) + (a2[n] + a3[n])) + ((b0[n] + b1[n]) + (b2[n] + b3[n]))
                      + ((d0[n] + d1[n]) + (d2[n] + d3[n])) + ((e0[n] + e1[n]) + (e2[n] + e3[n])))
            sink[p % sink.shape[0]] += s


class RowReader:
    """``read_rows`` over the same rotating batches of positions as ``Workload(batch=B)``."""

    def __init__(self, inputs, batch: int):
        self.tc = inputs.coefs.reshape((1,) + inputs.coefs.shape)
        self.idx, _ = prefactors(inputs.positions, inputs.grid, inputs.lengths,
                                 dtype=inputs.coefs.dtype)
        self.batch = max(1, min(int(batch), self.idx.shape[0]))
        self.chunks = self.idx.shape[0] // self.batch
        self.step = 0
        self.sink = np.zeros(8)

    def __call__(self):
        lo = (self.step % self.chunks) * self.batch
        self.step += 1
        read_rows(self.tc, self.idx[lo:lo + self.batch], self.sink)


def precision_roofs(seed: dict, cache: dict, batch: int, kw: dict):
    """The table: per precision, the kernel on the seed grid, its loads alone, the kernel on the
    cache-resident grid, and the two roofs — all as seconds for the same work (VGH of the seed
    batch), ratios over the float64 read-bandwidth roof; shares in the label."""
    from labkit.hardware import measure_bandwidth, measure_fma_rate

    from ._workloads import Workload

    work = seed["x"].n * batch
    funcs, works = {}, {}
    for p, x, xs in (("float64", seed["x"], cache["x"]), ("float32", seed["x32"], cache["x32"])):
        funcs[f"soa blocked kernel {p}"] = Workload(x, "soa", batch=batch, blocked=True)
        funcs[f"its coefficient loads alone {p}"] = RowReader(x, batch)
        funcs[f"soa blocked kernel {p}, coefficients in cache"] = Workload(
            xs, "soa", batch=cache["batch"], blocked=True)
        works.update({f"soa blocked kernel {p}": work, f"its coefficient loads alone {p}": work,
                      f"soa blocked kernel {p}, coefficients in cache": xs.n * cache["batch"]})
    res = bench.compare(funcs, (), work=works, clock="cpu", **dict(kw, unit="VGH"))
    bw = measure_bandwidth(kind="read") * 1e9
    fma = measure_fma_rate() * 1e9
    rows, share = [], {}
    for p, item in (("float64", 8), ("float32", 4)):
        mem_s = work * VALUES_PER_VGH * item / bw
        fma_s = work * flops_per_eval() / (fma * 8 / item)
        rows += [_row(f"read-bandwidth roof {p}: {bw / 1e9:.1f} GB/s ÷ {VALUES_PER_VGH * item} B "
                      "per VGH", mem_s, work),
                 _row(f"FMA roof {p}: {fma * 8 / item / 1e9:.0f} GFLOP/s ÷ {flops_per_eval()} "
                      "flop per VGH" + (" (derived: 2 × float64's lanes)" if item == 4 else ""),
                      fma_s, work)]
        for name in (f"soa blocked kernel {p}", f"its coefficient loads alone {p}",
                     f"soa blocked kernel {p}, coefficients in cache"):
            rows.append(_row(name, work / res.throughput(name), work))
        kern = work / res.throughput(f"soa blocked kernel {p}")
        share[p] = (mem_s / kern, fma_s / kern)
    base = rows[0]["median_s"]
    for r in rows:
        r["ratio"] = base / r["median_s"]
    g = "×".join(map(str, seed["x"].grid))
    label = (f"{g} grid, N={seed['x'].n}, 1 thread, CPU time, median of {kw['repeat']} "
             "interleaved; the kernel's share of the read-bandwidth / FMA roof: "
             + "; ".join(f"{p} {m:.0%} / {f:.0%}" for p, (m, f) in share.items()))
    return bench.BenchResult(rows, baseline=rows[0]["name"], unit="VGH", repeat=kw["repeat"],
                             min_time=kw.get("min_time", 0.2), label=label, clock="cpu")


def _row(name, seconds, work):
    return {"name": name, "compile_s": float("nan"), "median_s": seconds, "q1_s": seconds,
            "q3_s": seconds, "spread": 0.0, "throughput": work / seconds, "ratio": 1.0, "loops": 1}
