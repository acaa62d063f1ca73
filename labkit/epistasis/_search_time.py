"""The ``search_time`` check's yardstick: the search it asks about (``PREDICT_SNPS``,
``PREDICT_INDIVIDUALS``), the rate this machine searches order-3 triples at on one thread
(``measured_triples_per_second``), the wall time on R ranks balanced by ``rank_snp_range``
(``expected_seconds``), and durations as the check writes them."""
from __future__ import annotations

import math

import numpy as np

__all__ = ["PREDICT_SNPS", "PREDICT_INDIVIDUALS", "PREDICT_TOLERANCE",
           "measured_triples_per_second", "expected_seconds"]

#: the search whose wall time the prediction exercise asks for
PREDICT_SNPS = 500_000
PREDICT_INDIVIDUALS = 2000
#: a prediction within this fraction of the expected time passes
PREDICT_TOLERANCE = 0.10


def measured_triples_per_second(snps: int = 160, individuals: int = PREDICT_INDIVIDUALS) -> float:
    """Order-3 triples per CPU second of ``ep.search`` on one thread here (best of repeats)."""
    from labkit import bench
    from labkit.epistasis import encode, make_inputs, search
    inp = make_inputs({"snps": snps, "individuals": individuals, "order": 3}, seed=7)
    enc = encode(inp.genotypes, inp.labels)
    res = bench.compare({"search": lambda: search(enc, None, order=3, threads=1,
                                                  progress=False)},
                        (), clock="cpu", stat="best", repeat=3, min_time=0.05,
                        work=math.comb(snps, 3), unit="triples")
    return res.throughput("search")


def expected_seconds(rate: float, ranks: int, snps: int = PREDICT_SNPS) -> float:
    """Wall seconds of the order-3 search over ``snps`` SNPs at ``rate`` triples/s per rank, on
    ``ranks`` ranks balanced by rank_snp_range (the busiest rank's share)."""
    from labkit.epistasis import first_snp_work, rank_snp_range
    cum = np.concatenate([[0.0], np.cumsum(first_snp_work(snps, 3))])
    busiest = max(cum[hi] - cum[lo] for lo, hi in (rank_snp_range(q, ranks, snps, 3)
                                                   for q in range(ranks)))
    return float(busiest) / rate


def _duration(s: float) -> str:
    for unit, sec in (("years", 365.25 * 86400), ("days", 86400), ("hours", 3600),
                      ("minutes", 60)):
        if s >= 2 * sec:
            return f"{s / sec:.3g} {unit}"
    return f"{s:.3g} s"
