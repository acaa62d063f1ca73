"""`labkit bench alignment`: ``run_benchmark`` (the steps on one 16 × 200 batch; the entry
point ``align`` from str and from uint8 arrays beside its kernel; against parasail's fastest NW
function and Opal's fastest global mode, with GCUPS; 1 vs 2 threads, "not measurable now" while
other work runs) and ``TARGETS``; ``throughput``, ``cpu_compare``, ``opal_fn`` and
``gcups`` for the notebook."""
from __future__ import annotations

import dataclasses

import numba
import numpy as np

from labkit import bench
from labkit._common import use_threads
from labkit.bench import Target, ratio_of

from . import Inputs, align, make_inputs, reference, validate
from ._peers import (OPAL_MISSING, OPAL_OVERFLOW, PARASAIL_NW, _parasail_fn,  # noqa: F401
                     _with_gcups, gcups, opal_best, opal_fn, parasail_best, parasail_label,
                     parasail_variants)
from .engine import align_int8_serial, align_shifted_serial
from .kernels import (align_batched, align_batched_serial, align_scalar, align_transposed,
                      align_transposed_promoted, transpose_batch)

__all__ = ["run_benchmark", "TARGETS", "cpu_compare", "throughput", "width_sweep", "thread_rounds",
           "opal_fn", "gcups", "OPAL_MISSING", "PARASAIL_NW", "parasail_variants", "parasail_best",
           "parasail_label", "OPAL_OVERFLOW", "opal_best", "OPS_PER_CELL", "int16_op_rate", "roof",
           "OPS_PER_CELL_INT8", "int8_op_rate"]


def _seed_args(inputs: Inputs):
    """Arguments for the step kernels: untransposed for scalar, transposed for the others."""
    s1T, s2T = transpose_batch(inputs.seqs1), transpose_batch(inputs.seqs2)
    return {
        "scalar": (align_scalar, (inputs.seqs1, inputs.seqs2, inputs.scoring)),
        "transposed_promoted": (align_transposed_promoted, (s1T, s2T, inputs.scoring)),
        "transposed": (align_transposed, (s1T, s2T, inputs.scoring)),
        "batched": (align_batched_serial, (inputs.seqs1, inputs.lens1, inputs.seqs2, inputs.lens2,
                                    inputs.scoring, max(16, inputs.pairs))),
    }


#: Vector ALU operations per DP cell of the kernel ``align`` runs (``engine._cell``, shifted
#: scores): the match compare and select, the diagonal add, two maxima for H, the gap opening,
#: two maxima for the new gaps (the unshifted ``kernels._cell`` adds two extensions: 10).
OPS_PER_CELL = 8

#: Vector ALU operations per DP cell of the int8 kernel (``_int8._cell8``, int8 differences): the
#: match compare and select, two maxima for z, the gap opening, two maxima for the gaps, four
#: differences (each operation covers 64 lanes of a 512-bit vector, twice the int16 kernel's).
OPS_PER_CELL_INT8 = 11


def _int16_chains(y, x, reps):
    # the DP kernels' shape: an outer loop, an inner loop across int16 lanes (vectorised), here
    # four independent chains per element (the rows of y) of 8 steps t = max(t + v, c): 64 int16
    # ALU ops per 5 loads and 4 stores. Independent chains side by side keep every vector ALU
    # busy: one chain per element leaves the host's out-of-order window to overlap elements, which
    # on a Zen 5 core capped the int8 loop at ~2 vector ops per cycle (its int8 kernel then read
    # 108 % of this "roof").
    c = np.int16(-7)
    for _ in range(reps):
        for i in range(y.shape[1]):
            v = x[i]
            a, b, d, e = y[0, i], y[1, i], y[2, i], y[3, i]
            for _k in range(8):
                a = np.int16(a + v)
                a = a if a > c else c
                b = np.int16(b + v)
                b = b if b > c else c
                d = np.int16(d + v)
                d = d if d > c else c
                e = np.int16(e + v)
                e = e if e > c else c
            y[0, i], y[1, i], y[2, i], y[3, i] = a, b, d, e


def _int8_chains(y, x, reps):
    # _int16_chains on int8 lanes: 64 int8 add/max ops per 5 loads and 4 stores, 64 lanes per zmm
    c = np.int8(-7)
    for _ in range(reps):
        for i in range(y.shape[1]):
            v = x[i]
            a, b, d, e = y[0, i], y[1, i], y[2, i], y[3, i]
            for _k in range(8):
                a = np.int8(a + v)
                a = a if a > c else c
                b = np.int8(b + v)
                b = b if b > c else c
                d = np.int8(d + v)
                d = d if d > c else c
                e = np.int8(e + v)
                e = e if e > c else c
            y[0, i], y[1, i], y[2, i], y[3, i] = a, b, d, e


#: independent chains per element in ``_int16_chains`` / ``_int8_chains``, add/max ops per chain
_CHAINS, _OPS_PER_CHAIN = 4, 16


def _op_rate(chains, dtype, repeat: int) -> float:
    """add/max operations per second of ``chains`` on L1-resident arrays of 512 ``dtype``
    elements (four rows of them for the chains), one core, CPU time, best of repeats."""
    from labkit.jit import njit

    kern = njit(cache=True)(chains)
    y = np.zeros((_CHAINS, 512), dtype)
    x = np.full(512, -1, dtype)
    reps = 500
    res = bench.compare({"chains": (kern, (y, x, reps))}, clock="cpu", stat="best",
                        repeat=repeat, min_time=0.05)
    return _CHAINS * _OPS_PER_CHAIN * y.shape[1] * reps / res.time("chains")


def int16_op_rate(repeat: int = 5) -> float:
    """int16 add/max operations per second one core sustains (vectorised across elements, data
    in L1; CPU time, best of repeats), compiled like the fast kernels (``labkit.jit.njit``: the
    host's full vector width) — the ALU roof of the int16 DP kernels."""
    return _op_rate(_int16_chains, np.int16, repeat)


def int8_op_rate(repeat: int = 5) -> float:
    """``int16_op_rate`` on int8 lanes (twice the lanes per vector) — the ALU roof of the int8
    kernel ``align_int8``."""
    return _op_rate(_int8_chains, np.int8, repeat)


def roof(kernel_res, name: str, cells_per_call: int, work: int, repeat: int = 5, *,
         bits: int = 16):
    """BenchResult: the int16 ALU roof (measured op rate ÷ OPS_PER_CELL) beside ``name`` of
    ``kernel_res``; the kernel's ratio is its fraction of the roof. ``bits=8``: the int8 roof
    (``int8_op_rate`` ÷ OPS_PER_CELL_INT8), for the int8 kernel."""
    if bits not in (8, 16):
        raise ValueError(f"bits must be 8 or 16 (the kernel's lanes), got {bits!r}")
    ops = OPS_PER_CELL if bits == 16 else OPS_PER_CELL_INT8
    rate = (int16_op_rate if bits == 16 else int8_op_rate)(repeat) / ops   # cells/s at the roof
    t_roof = cells_per_call / rate
    t = kernel_res.time(name)
    rows = [{"name": f"int{bits} ALU roof", "median_s": t_roof, "throughput": work / t_roof},
            {"name": name, "median_s": t, "throughput": work / t}]
    return bench.BenchResult(rows, unit=kernel_res.unit, clock="cpu", repeat=repeat, min_time=0.05, label=(
        f"{name} at {t_roof / t:.0%} of the int{bits} ALU roof: {rate / 1e9:.1f} GCUPS = measured "
        f"{rate * ops / 1e9:.0f} G int{bits} add/max per s (one core, vectorised) ÷ "
        f"{ops} ops per cell"))


def cpu_compare(functions: dict, *, work: int, repeat: int = 5, min_cpu: float = 0.1,
                label: str | None = None, baseline: str | None = None):
    """``bench.compare`` of zero-argument functions in *process CPU seconds* per call
    (interleaved repeats, ``clock="cpu"``): robust to other jobs sharing the cores."""
    return bench.compare(functions, (), clock="cpu", work=work, unit="alignments",
                         repeat=repeat, min_time=min_cpu, label=label, baseline=baseline)


#: the kernels' rows in the "8-bit lanes" table
INT16_ROW = "kernel align_shifted_serial (int16 lanes)"
INT8_ROW = "kernel align_int8_serial (int8 lanes)"

#: The lab's performance targets, checked by `labkit bench alignment`.
TARGETS = [
    Target("align_transposed vs align_scalar, 16 × 200", 8, ratio_of("steps", "transposed", "scalar")),
    Target("align vs parasail's fastest NW function (named in the table), 4096 × 200, 1 thread, "
           "transposition included", 5, ratio_of("vs parasail", "labkit align (1 thread)", "parasail")),
    Target("2 threads vs 1, 4096 × 200", 1.8, ratio_of("threads", "2 threads", "1 thread")),
    Target("align(list of str) vs its kernel (uint8, padded), 4096 × 200, 1 thread, CPU time", 0.8,
           ratio_of("entry point", "align(list of str)", "kernel align_int8_serial")),
    Target("align_int8_serial vs align_shifted_serial (8-bit vs 16-bit lanes), 4096 × 200, "
           "1 thread, CPU time", 1.5, ratio_of("8-bit lanes", INT8_ROW, INT16_ROW)),
    Target("align(list of str) vs parasail's fastest NW function, 4096 × 200, 1 thread, CPU time",
           7, ratio_of("vs parasail, CPU time", "labkit align(list of str)", "parasail")),
    Target("align(list of str) vs Opal, 1 query × 4000 targets of 200, 1 thread, CPU time", 3,
           ratio_of("vs Opal, length 200", "labkit align(list of str)", "Opal")),
    Target("align(list of str) vs Opal, 1 query × 800 targets of 1000, 1 thread, CPU time", 2,
           ratio_of("vs Opal, length 1000", "labkit align(list of str)", "Opal")),
]


def run_benchmark(size=None, repeat: int = 5):
    """`labkit bench alignment`: the steps on one 16×200 batch (``size`` overrides), the best kernel
    against parasail on 4096 × 200 pairs (1024 × 100 for "small", 10000 × 200 for "large"; single
    thread, transposition included; wall clock and CPU time) and 1 vs 2 threads → dict of BenchResult."""
    out = {"steps": _steps(size, repeat)}
    npairs = {"small": 1024, "large": 10000}.get(size, 4096)
    big = make_inputs({"pairs": npairs, "length": 100 if size == "small" else 200}, seed=1)
    out.update(_entry_point(big, repeat))
    out.update(_vs_parasail(big, repeat))
    out.update(_vs_opal(size, repeat))
    out.update(_threads(big, repeat))
    return out


def _steps(size, repeat: int):
    """The lesson's steps on one batch (the seed's 16 × 200 unless ``size``), 1 thread."""
    steps_in = make_inputs(size or "seed", seed=0)
    expected = reference(steps_in)
    steps = bench.compare(_seed_args(steps_in), baseline="scalar", repeat=repeat,
                          work=steps_in.pairs, unit="alignments",
                          validate=lambda r: validate(r, expected),
                          label=f"steps, {steps_in.pairs} pairs × {steps_in.seqs1.shape[1]} (1 thread)")
    return steps


def _entry_point(big, repeat: int) -> dict:
    """The int8 kernel beside the int16 one and each against its ALU roof; ``align`` on str
    lists and on code arrays beside the kernel it runs (CPU time)."""
    out = {}
    s1, s2 = big.seqs1, big.seqs2
    t1, t2 = big.strings()
    cells = int((big.lens1 * big.lens2).sum())
    args = (s1, big.lens1, s2, big.lens2, big.scoring)
    validate(align_int8_serial(*args), align_shifted_serial(*args))
    out["8-bit lanes"] = _with_gcups(cpu_compare(
        {INT16_ROW: lambda: align_shifted_serial(*args),
         INT8_ROW: lambda: align_int8_serial(*args)},
        work=big.pairs, repeat=repeat, baseline=INT16_ROW,
        label=f"8-bit lanes: the int8 difference kernel beside the shifted int16 one, "
              f"{big.pairs} pairs × {s1.shape[1]}, 1 thread, CPU time"), cells)
    out["roof"] = roof(out["8-bit lanes"], INT16_ROW, cells, big.pairs, repeat)
    out["roof, int8"] = roof(out["8-bit lanes"], INT8_ROW, cells, big.pairs, repeat, bits=8)
    out["entry point"] = _with_gcups(cpu_compare(
        {"kernel align_int8_serial (uint8, padded)": lambda: align_int8_serial(*args),
         "align(list of str)": lambda: align(t1, t2, big.scoring, threads=1),
         "align(uint8 arrays)": lambda: align(s1, s2, big.scoring, threads=1)},
        work=big.pairs, repeat=repeat,
        label=f"entry point beside its kernel, {big.pairs} pairs × {s1.shape[1]}, 1 thread, "
              f"CPU time"), cells)
    return out


def _vs_parasail(big, repeat: int) -> dict:
    """labkit's ``align`` against parasail's fastest NW function that gives its scores, wall
    clock and CPU time, 1 thread."""
    out = {}
    s1, s2 = big.seqs1, big.seqs2
    t1, t2 = big.strings()
    cells = int((big.lens1 * big.lens2).sum())
    big_expected = None
    fns = {}
    # parasail at its best: the fastest of its NW functions that gives labkit's scores (align's
    # on all pairs, after align matched the numpy reference on the first 64: the reference takes
    # ~3 ms a pair), named in the row
    lab_scores = align(s1, s2, big.scoring, threads=1)
    head = dataclasses.replace(big, seqs1=s1[:64], seqs2=s2[:64], lens1=big.lens1[:64],
                               lens2=big.lens2[:64])
    validate(lab_scores[:64], reference(head))
    name, par, variants = parasail_best(big, lab_scores, repeat=min(repeat, 3))
    if par is not None:
        out["parasail variants"] = variants
        fns[parasail_label(name, len(variants.names))] = par
        big_expected = par()
    fns["labkit align (1 thread)"] = lambda: align(s1, s2, big.scoring, threads=1)
    fns["labkit align(list of str)"] = lambda: align(t1, t2, big.scoring, threads=1)
    res = bench.compare(fns, (), repeat=repeat, work=big.pairs, unit="alignments",
                        validate=(lambda r: validate(r, big_expected)) if big_expected is not None else None,
                        label=f"vs parasail, {big.pairs} pairs × {s1.shape[1]}, single thread, "
                              f"transposition included")
    out["vs parasail"] = res
    out["vs parasail, CPU time"] = _with_gcups(cpu_compare(
        fns, work=big.pairs, repeat=repeat,
        label="the same, process CPU seconds per call (robust to other jobs on the cores)"), cells)
    return out


def _vs_opal(size, repeat: int) -> dict:
    """One query against many targets, labkit beside Opal (when pyopal is installed)."""
    out = {}
    for length, count in ((200, 1000 if size == "small" else 4000), (1000, 200 if size == "small" else 800)):
        db = make_inputs({"pairs": count, "length": length}, seed=5)
        query, targets = db.strings()[0][0], db.strings()[1]
        queries = [query] * count
        lab = lambda q=queries, t=targets: align(q, t, db.scoring, threads=1)   # noqa: E731
        opal_name, opal, _ = opal_best(query, targets, db.scoring, lab())
        fns = {"labkit align(list of str)": lab}
        label = f"vs Opal, length {length}: 1 query × {count} targets, 1 thread, CPU time"
        if opal is None:
            label += f" — {OPAL_MISSING}"
        else:
            validate(opal(), lab())
            fns = {opal_name: opal, **fns}
        out[f"vs Opal, length {length}"] = _with_gcups(
            cpu_compare(fns, work=count, repeat=repeat, label=label), length * length * count)
    return out


def _threads(big, repeat: int) -> dict:
    """1 vs 2 threads on the big batch, wall clock and CPU seconds (none with one thread)."""
    out = {}
    s1, s2 = big.seqs1, big.seqs2
    nthreads = min(2, numba.config.NUMBA_NUM_THREADS)
    if nthreads > 1:
        one = lambda: align(s1, s2, big.scoring, threads=1)            # noqa: E731
        many = lambda: align(s1, s2, big.scoring, threads=nthreads)    # noqa: E731
        # the host read before and after each thread table: a ratio measured while other
        # processes took a core is printed as "not measurable now" and its target not judged
        out["threads"] = bench.measured_idle(
            bench.compare, {"1 thread": one, f"{nthreads} threads": many}, (), repeat=repeat,
            work=big.pairs, unit="alignments",
            label=f"threads, {big.pairs} pairs × {s1.shape[1]} (wall clock: needs idle cores to "
                  f"show the speedup)")
        out["threads, CPU time"] = bench.measured_idle(
            cpu_compare, {"1 thread": one, f"{nthreads} threads": many}, work=big.pairs,
            repeat=repeat,
            label=f"CPU seconds of all threads: ratio = parallel efficiency; wall-clock speedup on "
                  f"idle cores ≈ {nthreads} × ratio (OpenMP's idle threads spin: waits count as "
                  f"CPU time, so other jobs on the cores lower it)")
    return out


def _batched_call(lanes: int, threads: int, pairs: int, length: int):
    inp = make_inputs({"pairs": int(pairs), "length": int(length)}, seed=2)
    lanes, threads = int(lanes), int(threads)

    def run():
        with use_threads(threads):
            kernel = align_batched if threads > 1 else align_batched_serial
            return kernel(inp.seqs1, inp.lens1, inp.seqs2, inp.lens2, inp.scoring, lanes)
    return inp, run


def throughput(lanes: int = 64, threads: int = 1, pairs: int = 1024, length: int = 200,
               repeat: int = 3, clock: str | None = None) -> dict:
    """Alignments/s of the batch-width kernel ``align_batched`` (``align``'s int16 kernel where
    the shifted one does not fit; ``align`` itself runs fixed tiles of 64 pairs) for one
    lanes/threads setting (the notebook's tuner calls it).

    ``clock``: ``"thread"`` (this thread's CPU seconds: what one core does, whatever else runs
    on the machine) by default for one thread, ``"wall"`` for more (their CPU times add up).
    Returns the median's ``"throughput"`` and ``"µs per pair"`` and ``"throughput_samples"``,
    each repeat's alignments/s (the tuner draws their spread; ``labkit.bench.claim`` compares
    them)."""
    inp, run = _batched_call(lanes, threads, pairs, length)
    clock = clock or ("thread" if int(threads) == 1 else "wall")
    t = bench.timeit(run, repeat=repeat, min_time=0.05, clock=clock)
    return {"throughput": inp.pairs / t.median_s, "µs per pair": t.median_s / inp.pairs * 1e6,
            "throughput_samples": [inp.pairs / s for s in t.times]}


def width_sweep(widths=(32, 64, 128, 256), pairs: int = 512, length: int = 200, repeat: int = 5,
                min_time: float = 0.05) -> dict:
    """One-thread alignments/s of ``align_batched`` for each batch width, the widths' repeats
    interleaved (32, 64, 128, 256, 32, 64, … so that a change in the machine's speed during the
    sweep hits every width alike), in this thread's CPU seconds. Returns ``{lanes: [alignments/s
    of each repeat]}`` — for ``labkit.bench.claim`` (``kind="rate"``) and
    :func:`~labkit.alignment.prose.tuner_reading`."""
    from labkit.timing.timer import _autoscale, _time_loops

    runs = {}
    for w in sorted({int(w) for w in widths}):
        inp, run = _batched_call(w, 1, pairs, length)
        run()                                                  # compile / warm
        runs[w] = (run, _autoscale(run, (), min_time, "thread"))
    out = {w: [] for w in runs}
    for _ in range(int(repeat)):
        for w, (run, loops) in runs.items():
            out[w].append(inp.pairs * loops / _time_loops(run, (), loops, "thread"))
    return out


def thread_rounds(lanes: int = 64, threads: int = 2, pairs: int = 512, length: int = 200,
                  rounds: int = 9, min_time: float = 0.02) -> dict:
    """One thread against ``threads`` threads on the same ``align_batched`` call, wall time, in
    paired rounds: each round times one thread, then ``threads`` threads back to back, so both
    see the same load. Returns ``{"one": [alignments/s per round], "many": [...],
    "ratios": [many ÷ one per round]}`` — for ``labkit.bench.claim`` (``kind="rate"``)."""
    inp, one = _batched_call(lanes, 1, pairs, length)
    _, many = _batched_call(lanes, threads, pairs, length)
    res = bench.compare({"one": one, "many": many}, (), clock="wall", repeat=int(rounds),
                        min_time=min_time)
    t1, tn = res.times["one"], res.times["many"]
    return {"one": [inp.pairs / t for t in t1], "many": [inp.pairs / t for t in tn],
            "ratios": [a / b for a, b in zip(t1, tn)]}


def UARCH_KERNEL():
    """The kernel `labkit bench` puts beside its OSACA prediction (:mod:`labkit.bench.uarch`)."""
    from labkit.bench.uarch import KernelSpec

    from . import kernels as k
    from . import make_inputs
    inp = make_inputs({"pairs": 64, "length": 64}, seed=0)
    s1T, s2T = k.transpose_batch(inp.seqs1), k.transpose_batch(inp.seqs2)
    cells = s1T.shape[0] * s2T.shape[0] * s1T.shape[1]
    return KernelSpec("align_transposed (int16 lanes)", k.align_transposed,
                      (s1T, s2T, inp.scoring), cells, "cell")
