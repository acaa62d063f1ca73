"""`python -m labkit.epistasis` — the exhaustive search, one process or under `mpiexec -n R`
(first-SNP ranges of equal triangular work per rank, top lists merged exactly).

Examples::

    .venv/bin/mpiexec -n 2 .venv/bin/python -m labkit.epistasis --snps 200 --individuals 1000 --check
    .venv/bin/python -m labkit.epistasis --size seed --threads 2
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time

from labkit._mpi import cli_ranks


def main(argv=None) -> int:
    """Parse arguments, search on every rank, print a JSON summary on rank 0."""
    p = argparse.ArgumentParser(prog="python -m labkit.epistasis",
                                description=__doc__.splitlines()[0])
    p.add_argument("--size", default=None, help="named input size (small, seed, large)")
    p.add_argument("--snps", type=int, default=None, help="SNPs")
    p.add_argument("--individuals", type=int, default=None, help="individuals")
    p.add_argument("--order", type=int, default=None, help="combination order (default 3)")
    p.add_argument("--top", type=int, default=None, help="combinations to report (default 10)")
    p.add_argument("--seed", type=int, default=0, help="input seed (every rank builds the same data)")
    p.add_argument("--threads", type=int, default=None, help="numba threads per rank")
    p.add_argument("--out", default=None, help="rank 0 writes the top list here (JSON)")
    p.add_argument("--check", action="store_true",
                   help="rank 0 compares with the single-process search")
    ns = p.parse_args(argv)

    from . import SIZES, encode, make_inputs, rank_snp_range, search

    comm, rank, size = cli_ranks(p)
    if ns.size is not None and ns.size not in SIZES:
        p.error(f"--size must be one of {list(SIZES)}")
    spec = dict(SIZES[ns.size or "small"])
    for key in ("snps", "individuals", "order", "top"):
        if getattr(ns, key) is not None:
            spec[key] = getattr(ns, key)
    inp = make_inputs(spec, seed=ns.seed)
    enc = encode(inp.genotypes, inp.labels)
    comm.Barrier()
    t0 = time.perf_counter()
    top = search(enc, None, order=inp.order, top=inp.top, threads=ns.threads, progress=False,
                 comm=comm)
    seconds = time.perf_counter() - t0
    if rank != 0:
        return 0
    n = enc.n_snps
    ranges = [list(rank_snp_range(r, size, n, inp.order)) for r in range(size)]
    work = [sum(math.comb(n - 1 - i, inp.order - 1) for i in range(lo, hi)) for lo, hi in ranges]
    out = {"ranks": size, "snps": n, "individuals": inp.n_individuals, "order": inp.order,
           "combinations": math.comb(n, inp.order), "ranges": ranges, "work": work,
           "seconds": round(seconds, 4), "top": [[list(c), mi] for c, mi in top]}
    if ns.check:
        ref = search(enc, None, order=inp.order, top=inp.top, threads=ns.threads, progress=False)
        out["same_as_one_process"] = ref == top
    if ns.out:
        with open(ns.out, "w") as f:
            json.dump(out["top"], f)
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
