"""`labkit bench epistasis`: popcount variants (GB/s), the order-3 search (triples/s), the search's
AND + popcount work against the vector-popcount roof measured here, and the lab's targets."""
from __future__ import annotations

import dataclasses
import math

import numba
from numba import njit

from labkit import bench
from labkit.bench import Target, ratio_of, throughput_of

from ._intrinsics import _popcount_v8

from . import (Encoded, _bench_popcount_inputs, _make_plan, _numpy_popcount, _run_plan, encode,
               make_inputs, popcount_hw, popcount_hw_scalar, popcount_mula, popcount_table, search,
               use_pair_tables, validate)

#: the search benchmark's inputs (``labkit bench epistasis`` without --size)
SEARCH_INPUTS = {"snps": 400, "individuals": 2000, "order": 3}
POPCOUNT_WORDS = 1 << 11     #: 16 KiB of uint64 words: the popcount table fits in L1

#: The lab's performance targets, checked by `labkit bench epistasis`. The 1-thread rows are
#: CPU time (robust to other jobs on the cores); 2 threads vs 1 is wall time, best of interleaved
#: repeats for both (a median on a shared 2-core machine measures the other jobs, not the code).
TARGETS = [
    Target("hardware popcount vs byte table, 16 KiB", 10, ratio_of("popcount", "hw_v8", "byte_table")),
    Target("order-3 search(genotypes, labels), 400 SNPs × 2000, 1 thread, CPU time "
           "(the lab's stretch target)", 30,
           throughput_of("entry point", "search(genotypes, labels)", 1e6), unit=" M triples/s"),
    Target("order-3 search, 2 threads vs 1", 1.8,
           ratio_of("search", "search_2_threads", "search_1_thread")),
    Target("search(genotypes, labels) vs its kernel (encoded, planned), 400 SNPs × 2000, "
           "1 thread, CPU time", 0.8,
           ratio_of("entry point", "search(genotypes, labels)", "kernel _search_kernel")),
    Target("order-3 search, 400 SNPs × 2000, 1 thread, CPU time: its AND + popcount's share of "
           "the vector-popcount roof", 0.6,
           ratio_of("roof", "order-3 search", "vector popcount roof")),
]


def entry_table(inp, repeat: int = 5):
    """BenchResult: the friendly entry point ``search(genotypes, labels)`` on its natural input
    (encoding, plan and selection included) beside the kernel it runs on the encoded, planned
    input (``_run_plan``), one thread, CPU seconds, best of interleaved repeats."""
    enc = encode(inp.genotypes, inp.labels)
    plan = _make_plan(enc, inp.order, inp.top, 1, None, None, False)
    expected = search(enc, None, order=inp.order, top=inp.top, threads=1, progress=False)
    funcs = {"search(genotypes, labels)":
             lambda: search(inp.genotypes, inp.labels, order=inp.order, top=inp.top, threads=1,
                            progress=False),
             "kernel _search_kernel": lambda: _run_plan(plan, False)}
    return bench.compare(funcs, (), clock="cpu", stat="best", repeat=repeat, min_time=0.2,
                         work=math.comb(inp.n_snps, inp.order),
                         unit="triples" if inp.order == 3 else "combos",
                         baseline="kernel _search_kernel",
                         validate=lambda r: validate(r, expected, atol=1e-12),
                         label=f"entry point: order-{inp.order} search, {inp.n_snps} SNPs × "
                               f"{inp.n_individuals} individuals, 1 thread, CPU time")


def popcounts_per_combination(order: int, words: int, pairs: bool = False) -> int:
    """Word ANDs + popcounts the search's last stage does per combination: 2 genotype rows of the
    last SNP (the third by subtraction) × the prefix rows it counts (2/3 of 3**(order−1) from
    order 3 on: the last prefix SNP's genotype 2 comes from the parent's counts; 4 of 9 at order
    3 with ``pairs``, the pair tables of ``use_pair_tables``: the first SNP's genotype 2 comes
    from the pair of the other two) × words."""
    rows = 3 ** (order - 1)
    counted = 2 * rows // 3 if order >= 3 else rows
    if pairs and order == 3:
        counted = 4
    return 2 * counted * words


@njit(cache=True)
def popcount_roof_kernel(words, reps):
    """``reps`` passes of the ``<8 x i64>`` popcount over an L1-resident array (the start moves
    by r & 7 words, so no pass can be hoisted): the vector popcount unit's rate, no call overhead."""
    n8 = words.size // 8 - 1
    t = 0
    for r in range(reps):
        t += _popcount_v8(words, r & 7, n8)
    return t


def popcount_roof(repeat: int = 5) -> float:
    """Word popcounts per CPU second one core sustains with ``<8 x i64>`` vectors in L1 (best of
    ``repeat``): the roof of the search's integer phase."""
    words = _bench_popcount_inputs(512)[0]                   # 4 KiB
    reps = 4000
    res = bench.compare({"roof": (popcount_roof_kernel, (words, reps))}, clock="cpu",
                        stat="best", repeat=repeat, min_time=0.05)
    return reps * (words.size // 8 - 1) * 8 / res.time("roof")


def roof_table(enc, order: int, repeat: int = 3, hz: float | None = None):
    """BenchResult: the vector-popcount roof (measured: vpopcnt per cycle × 8 lanes × the
    measured clock, in word popcounts per second) beside the 1-thread search's word popcounts per
    second (both CPU seconds, best of repeats); the search's ratio is its share of the roof."""
    return roof_by_order({order: enc}, repeat=repeat, hz=hz)


#: the inputs of the roof table's rows by order: as many combinations as the order-3 bench's
#: 10.6 M within a factor 5, so each row takes well under a second per call
ORDER_INPUTS = {2: {"snps": 2000, "individuals": 2000, "order": 2}, 3: SEARCH_INPUTS,
                4: {"snps": 100, "individuals": 2000, "order": 4}}
_UNITS = {1: "SNPs", 2: "pairs", 3: "triples", 4: "quads"}


def _order_row(enc, order: int, seconds: float) -> dict:
    per = popcounts_per_combination(order, enc.words, use_pair_tables(enc.n_snps, order))
    combos = math.comb(enc.n_snps, order)
    unit = _UNITS.get(order, "combinations")
    got = combos * per / seconds
    return {"name": f"order-{order} search, {enc.n_snps} SNPs × {enc.n_cases + enc.n_controls}"
                    f", 1 thread: {combos / seconds / 1e6:.1f} M {unit}/s ({per} word "
                    f"popcounts per {unit[:-1]})",
            "median_s": 1e9 / got, "throughput": got}


def roof_by_order(encs: dict, repeat: int = 3, hz: float | None = None):
    """BenchResult: the vector-popcount roof (word popcounts per CPU second, ``popcount_roof``)
    and, for each order k of ``encs`` ({k: Encoded}), the 1-thread order-k search's AND +
    popcount work per CPU second (``popcounts_per_combination`` × combinations / best time of
    interleaved repeats), its combinations per second in the row's name; a row's ratio to the
    roof is its share of it (the baseline)."""
    from labkit.hardware.clock import measure_clock
    hz = measure_clock() if hz is None else hz
    roof = popcount_roof(repeat)
    funcs = {k: (lambda e=e, k=k: search(e, None, order=k, threads=1, progress=False))
             for k, e in sorted(encs.items())}
    res = bench.compare({f"order {k}": f for k, f in funcs.items()}, (), clock="cpu",
                        stat="best", repeat=repeat, min_time=0.2)
    rows = [{"name": "vector popcount roof (<8 x i64> ctpop, L1)", "median_s": 1e9 / roof,
             "throughput": roof}]
    rows += [_order_row(encs[k], k, res.time(f"order {k}")) for k in funcs]
    shares = ", ".join(f"order {k} at {r['throughput'] / roof:.0%}"
                       for k, r in zip(funcs, rows[1:]))
    return bench.BenchResult(rows, unit="word popcounts", clock="cpu", repeat=repeat,
                             min_time=0.2, stat="best",
                             label=(f"the search's AND + popcount, {shares} of the "
                                    f"vector-popcount roof: {roof / 8 / hz:.2f} vpopcnt × 8 "
                                    f"lanes per cycle at {hz / 1e9:.2f} GHz (measured)"))


def _first(names, key):
    return key if key in names else next(n for n in names if n.startswith(key))



def run_benchmark(size=None, repeat: int = 5, threads=(1, 2)) -> dict:
    """Benchmarks for `labkit bench epistasis`: {"popcount": BenchResult (B/s), "search": BenchResult (triples/s)}."""
    words = _bench_popcount_inputs(POPCOUNT_WORDS)
    variants = {"byte_table": popcount_table, "mula": popcount_mula,
                "hw_scalar": popcount_hw_scalar, "hw_v8": popcount_hw, "numpy": _numpy_popcount}
    pop = bench.compare(variants, words, baseline="byte_table", repeat=repeat,
                        min_time=0.1, work=words[0].nbytes, unit="B",
                        validate=lambda r: int(r) == _numpy_popcount(words[0]),
                        label=f"popcount of {words[0].nbytes // 1024} KiB")
    inp = make_inputs(SEARCH_INPUTS if size is None else size)
    enc = encode(inp.genotypes, inp.labels)
    maxt = numba.config.NUMBA_NUM_THREADS
    funcs = {}
    for t in threads:
        if t <= maxt:
            name = f"search_{t}_thread" + ("s" if t > 1 else "")
            funcs[name] = (lambda t=t: search(enc, None, order=inp.order, top=inp.top, threads=t,
                                              progress=False))
    expected = search(enc, None, order=inp.order, top=inp.top, progress=False)
    # the host read before and after: 2 threads vs 1 while other work ran is "not measurable now"
    srch = bench.measured_idle(bench.compare, funcs, (), repeat=repeat, min_time=0.2, stat="best",
                         work=math.comb(inp.n_snps, inp.order),
                         unit="triples" if inp.order == 3 else "combos",
                         validate=lambda r: validate(r, expected, atol=1e-12),
                         label=f"order-{inp.order} search, {inp.n_snps} SNPs × "
                               f"{inp.n_individuals} individuals")
    out = {"popcount": pop, "search": srch, "entry point": entry_table(inp, repeat)}
    if inp.order >= 2 and any(n.startswith("search_1_thread") for n in srch.names):
        encs = {k: enc if k == inp.order else _encoded(spec) for k, spec in ORDER_INPUTS.items()}
        out["roof"] = roof_by_order(encs, repeat=min(repeat, 3))
    return out


def _encoded(spec):
    inp = make_inputs(spec)
    return encode(inp.genotypes, inp.labels)


def phase_times(genotypes, labels=None, order: int = 3, threads: int = 1, repeat: int = 3,
                min_time: float = 0.05) -> dict:
    """CPU seconds of one order-k search split into its parts, as in the seed's Fig. 8: building
    the prefix tables, counting the last SNP (AND + popcount), MI + top list.

    Measured as three searches stopped after each part (interleaved repeats, ``clock="cpu"``);
    each part is the difference of two of them (never below 0). Returns the seconds per part,
    ``"total"``, ``"cells"`` (combinations × 3**order) and the ``BenchResult``.
    """
    enc = genotypes if isinstance(genotypes, Encoded) else encode(genotypes, labels)
    plan = _make_plan(enc, order, 10, threads, None, None, False)
    funcs = {f"up to {name}": (lambda p=p: _run_plan(dataclasses.replace(plan, phases=p), False))
             for p, name in ((1, "prefix tables"), (2, "counts"), (3, "MI"))}
    res = bench.compare(funcs, (), repeat=repeat, min_time=min_time, clock="cpu",
                        label=f"order-{plan.order} search, {enc.n_snps} SNPs, parts")
    t1, t2, t3 = (res.median(n) for n in funcs)
    return {"prefix tables": t1, "counts": max(t2 - t1, 0.0), "MI and top list": max(t3 - t2, 0.0),
            "total": t3, "cells": plan.combos * 3 ** plan.order, "result": res}


def UARCH_KERNEL():
    """The kernel `labkit bench` puts beside its OSACA prediction (:mod:`labkit.bench.uarch`)."""
    import numpy as np

    from labkit.bench.uarch import KernelSpec
    w = np.random.default_rng(0).integers(0, 2**63, 512, dtype=np.uint64)   # 4 KiB: L1
    reps = 200                      # passes over it in one call: no call cost per element
    return KernelSpec("<8 x i64> ctpop popcount (popcount_roof_kernel)", popcount_roof_kernel,
                      (w, reps), reps * (w.size // 8 - 1) * 8, "word", loop="popcount")
