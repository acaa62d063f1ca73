"""Benchmark of lab 03 (`labkit bench pcc`): labkit vs numpy/BLAS (BLAS held to labkit's thread
count through threadpoolctl, its kernel named; when OPENBLAS_CORETYPE or OPENBLAS_L2_SIZE is set,
a warning and the BLAS peer measured again in a child process without them, the target judged
against that host-default row), the entry point beside its kernel in CPU seconds, the best
kernel against the FMA roof, the
optimisation steps, and (``--size large``) the bounded-memory correlated_pairs run with its peak
RSS.

``run_benchmark(size=None, repeat=5)`` → dict table name → ``bench.BenchResult``; ``TARGETS``
are the lab's performance targets, checked by the CLI after the tables."""
from __future__ import annotations

import json
import resource
import subprocess
import sys
import time

import numba

from labkit import bench
from labkit.bench import Target, ratio_of

from . import (DEFAULT_SCHEDULE, DEFAULT_TILE, blas_pcc, engine_input, make_inputs, panels, pcc_naive, pcc_threads,
               pcc_tiled, pcc_transformed, pearson_allpairs, standardize, validate)
from ._blas import (BLAS_TABLE, HOST_BLAS, OPENBLAS_FORCING, _flops,  # noqa: F401 - re-exported
                    blas_info, blas_kernel, blas_threads, blas_warning, forced_blas,
                    host_blas_child, host_default_env)
from .engine import MR, NR

__all__ = ["TARGETS", "run_benchmark", "large_run", "blas_threads", "blas_info", "ENTRY", "KERNEL",
           "ENTRY_TABLE",
           "OPENBLAS_FORCING", "HOST_BLAS", "BLAS_TABLE", "blas_kernel", "forced_blas",
           "host_default_env", "blas_warning", "host_blas_child", "blas_table"]


def blas_table(res, child: dict, forced: dict, kernel: str | None, work: float):
    """BenchResult: the BLAS row of this process (forced kernels), the child's host-default row
    and labkit's entry point (from ``res``), ratios over the host-default row."""
    what = ", ".join(f"{k}={v}" for k, v in forced.items())
    here = next(r for r in res.rows if r["name"].startswith("numpy BLAS"))
    entry = next(r for r in res.rows if r["name"] == ENTRY)
    host = {"name": f"{HOST_BLAS} ({child.get('architecture') or '?'} kernels; child process "
                    f"without {' and '.join(OPENBLAS_FORCING)})",
            "median_s": child["median_s"], "best_s": child["best_s"], "q1_s": child["q1_s"],
            "q3_s": child["q3_s"], "compile_s": child["compile_s"], "loops": child["loops"],
            "throughput": work / child["median_s"]}
    rows = [host, dict(here, name=f"numpy BLAS, {what} ({kernel or '?'} kernels; this process)"),
            dict(entry)]
    for r in rows:
        r.pop("ratio", None)
        r.pop("spread", None)
    same = child.get("architecture") == kernel
    return bench.BenchResult(
        rows, baseline=host["name"], unit="flop", repeat=res.repeat, min_time=res.min_time,
        times={host["name"]: child["times"], rows[1]["name"]: res.times.get(here["name"], []),
               ENTRY: res.times.get(ENTRY, [])},
        label=f"BLAS as forced here and as the host would choose it ({what} removed in the child "
              f"only; same n, l, threads, wall clock, median of {res.repeat} after a warm-up; "
              f"the child's rows ran after this process's, not interleaved with them; child's "
              f"scores within {child['max_err']:.1e} of numpy's corrcoef on 64 pairs)"
              + (" — the same kernel set: the variable does not lower it on this CPU" if same
                 else f" — {kernel or '?'} kernels forced instead of "
                      f"{child.get('architecture') or '?'}"))


def _pa(schedule):
    def f(X):
        return pearson_allpairs(X, schedule=schedule)
    f.__name__ = f"pearson_allpairs_{schedule}"
    return f


#: OpenBLAS's worker threads spin for about 0.1 s of CPU after each call (measured: docs/pcc.md,
#: 'Static vs dynamic ids'); on 2 cores that spin takes
#: a core from whatever runs next. A pause row after each BLAS row lets them go idle, so the row
#: after the peer in the interleaved rounds is not charged for it; the pause rows are dropped.
#: On a loaded machine those 0.1 s of CPU take longer than 0.1 s of wall time, so the pause lasts
#: until the other threads of this process have burnt (almost) nothing for a 50 ms slice, at
#: least PAUSE_S and at most PAUSE_MAX_S.
PAUSE_S = 0.25
PAUSE_MAX_S = 2.0
_PAUSE = "(pause: BLAS threads go idle)"


def _busy(seconds):
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        pass


def _pause(result):
    def f(*_):      # busy, not asleep: a sleep would count no CPU seconds, and
        t0 = time.perf_counter()       # compare(clock="cpu") would repeat it until it did
        while True:
            p, th = time.process_time(), time.thread_time()
            _busy(0.05)
            others = (time.process_time() - p) - (time.thread_time() - th)   # other threads' CPU
            waited = time.perf_counter() - t0
            if (waited >= PAUSE_S and others < 0.002) or waited >= PAUSE_MAX_S:
                return result
    return f


def _with_pauses(funcs, result):
    """funcs with a pause entry after every BLAS one (named ``numpy …``)."""
    out = {}
    for name, fa in funcs.items():
        out[name] = fa
        if name.startswith("numpy"):
            out[f"{_PAUSE} {len(out)}"] = (_pause(result), ())
    return out


def _without_pauses(res):
    keep = [r for r in res.rows if not r["name"].startswith(_PAUSE)]
    return bench.BenchResult(keep, baseline=res.baseline, unit=res.unit, label=res.label,
                             repeat=res.repeat, min_time=res.min_time, clock=res.clock,
                             stat=res.stat, times={r["name"]: res.times.get(r["name"], [])
                                                   for r in keep})


#: the row of what ``pearson_allpairs(X)`` runs (its default schedule) and of its kernel
ENTRY = f"pearson_allpairs {DEFAULT_SCHEDULE} ids (the default)"
KERNEL = f"kernel pcc_threads {DEFAULT_SCHEDULE} (Z given)"


def _kernel(Z):
    return pcc_threads(Z, schedule=DEFAULT_SCHEDULE)[0]


def _variants(X, Z):
    """Entry points on X (standardisation included): the default first, then the other id
    schedules; beside them the default's kernel on the standardised Z (what the entry point
    costs on top of it)."""
    out = {"numpy BLAS (standardise + Z @ Z.T)": (blas_pcc, (X,)), ENTRY: (pearson_allpairs, (X,))}
    out.update({f"pearson_allpairs {s} ids": (_pa(s), (X,))
                for s in ("static", "dynamic", "cyclic") if s != DEFAULT_SCHEDULE})
    out[KERNEL] = (_kernel, (Z,))
    return out


_STEP_SIZES = {None: {"n": 400, "l": 2000}, "small": {"n": 200, "l": 500},
               "seed": {"n": 400, "l": 5000}}
_MAIN_SIZES = {None: "bench", "small": {"n": 1000, "l": 500}, "seed": "seed"}


def _row(name, seconds, work, base_s, compile_s=float("nan")):
    return {"name": name, "compile_s": compile_s, "median_s": seconds, "q1_s": seconds,
            "q3_s": seconds, "spread": 0.0, "throughput": work / seconds if work else None,
            "ratio": base_s / seconds, "loops": 1}


def _syrk(Z):
    return Z @ Z.T


def _roof_table(X, Z, Zm, work, P, repeat):
    """labkit and the peer against the FMA roof, in CPU seconds (all threads; best of repeats,
    as the roof is): share = work / (CPU seconds × one core's FMA rate at the registers' width,
    ``hardware.measure_fma_rate``, FMA = 2 flops). A wall-time share on this shared machine would
    count the other jobs' turns. The roof of a plain ``@numba.njit`` loop (256-bit on Intel
    AVX-512 cores) is shown beside it; OpenBLAS's SkylakeX kernels use 512-bit FMAs too."""
    from labkit.hardware import measure_fma_rate
    roof = measure_fma_rate() * 1e9
    plain = measure_fma_rate(full_width=False) * 1e9
    with blas_threads(P):
        cpu = _without_pauses(bench.compare(
            _with_pauses({KERNEL: (_kernel, (Zm,)), "numpy Z @ Z.T (syrk, Z given)": (_syrk, (Z,)),
                          ENTRY: (pearson_allpairs, (X,)),
                          "numpy BLAS (standardise + Z @ Z.T)": (blas_pcc, (X,))}, None),
            repeat=repeat, min_time=0.2, work=work, unit="flop", clock="cpu", stat="best"))
    roof_s = work / roof
    rows = [_row("FMA roof: one core's FMA rate at the registers' width", roof_s, work, roof_s),
            _row("plain @numba.njit FMA rate (full_width=False)", work / plain, work, roof_s)]
    rows += [_row(r["name"], r["best_s"], work, roof_s) for r in cpu.rows]
    share = {r["name"]: roof_s / r["best_s"] for r in cpu.rows}
    return bench.BenchResult(rows, baseline=rows[0]["name"], unit="flop", repeat=repeat,
                             min_time=0.2, label=f"share of the FMA roof ({roof / 1e9:.0f} GFLOP/s "
                             f"per core) in CPU seconds of {P} threads, best of {repeat}: labkit's "
                             f"kernel {share[KERNEL]:.0%}, "
                             f"BLAS syrk {share['numpy Z @ Z.T (syrk, Z given)']:.0%}")


def _rss_gb(results):
    res = next((v for k, v in results.items() if str(k).startswith("correlated_pairs")), None)
    rss = getattr(res, "peak_rss_mb", None)
    return None if rss is None else rss / 1024


#: the table of the entry-point target: the entry point and its kernel alone, in CPU seconds
ENTRY_TABLE = "entry point vs its kernel"


def _entry_vs_kernel(X, Zm, work, expected, P, repeat):
    """``pearson_allpairs(X)`` beside its kernel on the standardised panels, interleaved, in
    process CPU seconds (all threads; median), nothing else between them. In wall time the ratio
    of two 2-thread calls measures the other jobs on a shared machine: with one busy process
    beside them the entry point read 0.89× its kernel in wall time and 0.94× in CPU seconds, on
    the idle host 0.95× either way (docs/pcc.md, 'The entry point against its kernel')."""
    return bench.compare({KERNEL: (_kernel, (Zm,)), ENTRY: (pearson_allpairs, (X,))},
                         repeat=repeat, min_time=0.2, work=work, unit="flop", clock="cpu",
                         validate=lambda R: validate(R, expected),
                         label=f"the entry point (X in: standardisation, a fresh R) beside its "
                               f"kernel (Z given as panels, a fresh R), {P} threads, process CPU "
                               f"seconds, median of {repeat} interleaved repeats")


def _vs_blas(results):
    """The entry point over the BLAS peer: the host-default row when the BLAS table has one
    (OPENBLAS_CORETYPE forced here), else numpy's BLAS row of the interleaved rounds."""
    if bench._table(results, BLAS_TABLE) is not None:
        return ratio_of(BLAS_TABLE, ENTRY, HOST_BLAS)(results)
    return ratio_of("vs numpy BLAS", ENTRY)(results)


#: The lab's performance targets, checked by `labkit bench pcc` (and `--size large`).
TARGETS = [
    Target(f"pearson_allpairs (its default, {DEFAULT_SCHEDULE} ids) vs standardise + numpy BLAS "
           "Z @ Z.T, n = 4000, l = 2000, BLAS on labkit's threads (median of interleaved repeats; "
           "the host-default BLAS row when OPENBLAS_CORETYPE is forced)",
           1.1, _vs_blas),
    Target("entry point pearson_allpairs (X in, standardisation included) vs its kernel "
           "pcc_threads on Z, n = 4000, l = 2000, CPU time (all threads)", 0.8,
           ratio_of(ENTRY_TABLE, ENTRY, KERNEL)),
    Target("pearson_allpairs vs the naive pair loop", 20,
           ratio_of("vs naive pair loop", "pearson_allpairs")),
    Target("correlated_pairs, n = 100 000, l = 500: peak RSS", 2, _rss_gb, unit=" GB",
           at_most=True, size="large"),
]


def run_benchmark(size=None, repeat=5):
    """Run the lab's benchmark: dict name → BenchResult (``size="large"``: the RSS run)."""
    if size == "large":
        return {"correlated_pairs n=100000 l=500": large_run()}
    if size not in _MAIN_SIZES:
        raise ValueError(f"size {size!r} unknown; use None, 'small', 'seed' or 'large'")
    inp = make_inputs(_MAIN_SIZES[size])
    sp = make_inputs(_STEP_SIZES[size])
    out = _vs_peer(inp, size, repeat)                              # 1. labkit vs BLAS, the roof
    out.update(_steps(sp, repeat))                                 # 2. the optimisation steps
    out.update(_vs_naive(inp, sp, repeat))                         # 3. the naive loop, scaled
    return out


def _vs_peer(inp, size, repeat) -> dict:
    """labkit's entry points, its kernel and numpy's BLAS interleaved (BLAS held to numba's
    threads); the host-default BLAS from a child process when OPENBLAS_* force other kernels;
    everything against the FMA roof."""
    out = {}
    n, l = inp.X.shape
    work = _flops(inp)
    expected = pearson_allpairs(inp.X)
    P = numba.get_num_threads()
    forced = forced_blas()
    warning = blas_warning()
    if warning:
        print(warning, flush=True)
    with blas_threads(P) as pinned:
        blas = blas_info()
        kernel = blas_kernel()
        Zs = standardize(inp.X)[0]
        Zm = engine_input(Zs)       # in the engine's form: the kernel row times the kernel alone
        res = bench.compare(_with_pauses(_variants(inp.X, Zm), expected), repeat=repeat,
                            min_time=0.2, work=work,
                            unit="flop", validate=lambda R: validate(R, expected),
                            label=f"all-pairs PCC n={n} l={l}, standardisation included, "
                                  f"numba {P} threads, BLAS "
                                  + (f"held to the same {P} (threadpoolctl)" if pinned else
                                     "threads NOT set (threadpoolctl missing)")
                                  + f" — {blas}; BLAS kernel in use: {kernel or '?'} ("
                                  + (f"{', '.join(forced)} set: see the next table" if forced
                                     else "OPENBLAS_CORETYPE unset: the host's default")
                                  + f"); median of interleaved repeats, a "
                                  f"{PAUSE_S} s pause after the BLAS row (its threads spin "
                                  "~0.1 s after a call)")
    out[f"vs numpy BLAS (n={n}, l={l})"] = _without_pauses(res)
    if forced:      # the BLAS the host would choose, measured apart in a child process
        child = host_blas_child(_MAIN_SIZES[size], P, repeat=repeat, min_time=0.2)
        out[f"{BLAS_TABLE} (n={n}, l={l})"] = blas_table(out[f"vs numpy BLAS (n={n}, l={l})"],
                                                         child, forced, kernel, work)
    out[f"{ENTRY_TABLE} (n={n}, l={l})"] = _entry_vs_kernel(inp.X, Zm, work, expected, P, repeat)
    out[f"FMA roof (n={n}, l={l})"] = _roof_table(inp.X, Zs, Zm, work, P, repeat)
    return out


def _steps(sp, repeat) -> dict:
    """The lesson's steps, naive to the entry point, at a size the naive loop can run."""
    ns, ls = sp.X.shape
    exp_s = pearson_allpairs(sp.X)

    def transformed(X):
        return pcc_transformed(standardize(X)[0])

    def tiled(X):
        return pcc_tiled(standardize(X)[0], 96)

    block = (f"8×{8 * panels.NV} panel micro-kernel" if panels.applies(DEFAULT_TILE)
             else f"{MR}×{NR} blocks")
    steps = bench.compare({"pcc_naive (Eq. 1, 1 thread)": pcc_naive,
                           "standardize + pcc_transformed (1 thread)": transformed,
                           "standardize + pcc_tiled (1 thread)": tiled,
                           f"pearson_allpairs ({block}, full width, threads)": pearson_allpairs},
                          (sp.X,), repeat=repeat, min_time=0.2, work=ns * (ns + 1) / 2,
                          unit="pairs", validate=lambda R: validate(R, exp_s),
                          label=f"optimisation steps at n={ns}, l={ls}")
    return {f"steps (n={ns}, l={ls})": steps}


def _vs_naive(inp, sp, repeat) -> dict:
    """The naive loop measured at the small n, interleaved with pearson_allpairs at the big n
    (same moment, same machine load), then scaled by pairs × samples: the naive loop re-reads
    both rows for every pair, so its time per pair·sample does not depend on n."""
    n, l = inp.X.shape
    ns, ls = sp.X.shape
    pairs_small = ns * (ns + 1) / 2
    pairs_big = n * (n + 1) / 2
    both = bench.compare({"naive": (pcc_naive, (sp.X,)), "fast": (pearson_allpairs, (inp.X,))},
                         repeat=repeat, min_time=0.2, unit="pairs",
                         work={"naive": pairs_small, "fast": pairs_big})
    naive_s = both.median("naive") / (pairs_small * ls) * (pairs_big * l)
    fast_s = both.median("fast")
    rows = [_row(f"pcc_naive (1 thread), timed at n={ns} l={ls}, scaled", naive_s, pairs_big, naive_s),
            _row("pearson_allpairs (threads), timed at this size", fast_s, pairs_big, naive_s)]
    return {f"vs naive pair loop (n={n}, l={l})": bench.BenchResult(
        rows, baseline=rows[0]["name"], unit="pairs", repeat=repeat, min_time=0.2,
        label=f"naive: its median time per pair·sample at n={ns}, l={ls} × pairs·samples here "
              f"(interleaved with pearson_allpairs, not re-run at n={n})")}


def large_run(threshold=0.8, n=100_000, l=500, timeout=3600):
    """Run correlated_pairs on n × l in a subprocess; BenchResult with time and peak RSS (MB)."""
    cmd = [sys.executable, "-m", "labkit.pcc", "--n", str(n), "--l", str(l),
           "--threshold", str(threshold)]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stderr[-2000:]}")
    info = json.loads(proc.stdout.strip().splitlines()[-1])
    rss_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    pairs = n * (n - 1) / 2
    row = _row(f"correlated_pairs |r| ≥ {threshold}: {info['pairs']} pairs kept",
               info["seconds"], pairs, info["seconds"])
    row["peak_rss_mb"] = rss_mb
    res = bench.BenchResult([row], baseline=row["name"], unit="pairs", repeat=1, min_time=0.0,
                            label=f"n={n}, l={l}: {info['seconds']:.1f} s compute "
                                  f"({wall:.1f} s with start-up and input generation), "
                                  f"peak RSS {rss_mb:.0f} MB (limit 2048 MB)")
    res.peak_rss_mb = rss_mb
    res.info = info
    return res


def UARCH_KERNEL():
    """The kernel `labkit bench` puts beside its OSACA prediction (:mod:`labkit.bench.uarch`)."""
    import numpy as np

    from labkit.bench.uarch import KernelSpec

    from . import kernels as k
    from . import make_inputs, standardize
    Z = standardize(make_inputs({"n": 64, "l": 256}).X)[0]
    out = np.zeros((64, 64))
    args = (Z, 0, 32, 32, 64, False, Z.shape[1], out, 0, 0)
    return KernelSpec("tile_block (4×4 register block)", k.tile_block, args,
                      (32 // 4) * (32 // 4) * Z.shape[1], "k of a 4×4 block", loop="fma")
