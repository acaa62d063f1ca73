"""`labkit bench epistasis`: popcount variants (GB/s) and the order-3 search (triples/s), and the
lab's performance targets."""
from __future__ import annotations

import math

import numba

from labkit import bench
from labkit.bench import Target, ratio_of, throughput_of

from . import (_bench_popcount_inputs, _numpy_popcount, encode, make_inputs, popcount_hw,
               popcount_hw_scalar, popcount_mula, popcount_table, search, validate)

#: the search benchmark's inputs (``labkit bench epistasis`` without --size)
SEARCH_INPUTS = {"snps": 400, "individuals": 2000, "order": 3}
POPCOUNT_WORDS = 1 << 11     #: 16 KiB of uint64 words: the popcount table fits in L1

#: The lab's performance targets (its issue), checked by `labkit bench epistasis`.
TARGETS = [
    Target("hardware popcount vs byte table, 16 KiB", 10, ratio_of("popcount", "hw_v8", "byte_table")),
    Target("order-3 search, 400 SNPs × 2000, 1 thread", 10,
           throughput_of("search", "search_1_thread", 1e6), unit=" M triples/s"),
    Target("order-3 search, 2 threads vs 1", 1.8,
           ratio_of("search", "search_2_threads", "search_1_thread")),
]



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
    srch = bench.compare(funcs, (), repeat=repeat, min_time=0.2,
                         work=math.comb(inp.n_snps, inp.order),
                         unit="triples" if inp.order == 3 else "combos",
                         validate=lambda r: validate(r, expected, atol=1e-12),
                         label=f"order-{inp.order} search, {inp.n_snps} SNPs × "
                               f"{inp.n_individuals} individuals")
    return {"popcount": pop, "search": srch}
