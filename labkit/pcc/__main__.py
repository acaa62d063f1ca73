"""`python -m labkit.pcc` — all-pairs PCC, one process or under `mpiexec -n P` (tile-id ranges).

Examples::

    .venv/bin/mpiexec -n 2 .venv/bin/python -m labkit.pcc --n 2000 --l 500 --check
    .venv/bin/python -m labkit.pcc --size large --threshold 0.8     # bounded memory, peak RSS
"""
from __future__ import annotations

import argparse
import json
import resource
import sys
import time

import numpy as np


def _parser() -> argparse.ArgumentParser:
    """The command line's arguments."""
    p = argparse.ArgumentParser(prog="python -m labkit.pcc", description=__doc__.splitlines()[0])
    p.add_argument("--size", default=None, help="named input size (tiny, small, bench, seed, large)")
    p.add_argument("--n", type=int, default=None, help="variables (rows)")
    p.add_argument("--l", type=int, default=None, help="samples (columns)")
    p.add_argument("--seed", type=int, default=0, help="input seed (every rank builds the same X)")
    p.add_argument("--input", default=None, help="read X from this .npy instead")
    p.add_argument("--tile", type=int, default=None, help="tile side (default 96)")
    p.add_argument("--threshold", type=float, default=None,
                   help="keep pairs with |r| ≥ threshold (edge lists, bounded memory)")
    p.add_argument("--threads", type=int, default=None, help="numba threads per rank")
    p.add_argument("--out", default=None, help="rank 0 saves R (.npy) or i, j, r (.npz) here")
    p.add_argument("--check", action="store_true",
                   help="rank 0 compares with the single-process answer")
    return p


def main(argv=None) -> int:
    """Parse arguments, run distributed_pcc on every rank, print a JSON summary on rank 0."""
    p = _parser()
    ns = p.parse_args(argv)

    from . import DEFAULT_TILE, n_tiles, rank_tile_range
    from labkit._mpi import cli_ranks

    from .mpi import distributed_pcc

    comm, rank, size = cli_ranks(p)
    X = _input(p, ns)
    tile = ns.tile or DEFAULT_TILE
    n = X.shape[0]
    m, T = n_tiles(n, tile)
    if ns.threshold is None and n > 30000:
        p.error(f"n={n}: the full matrix is too big to gather; pass --threshold")
    comm.Barrier()
    t0 = time.perf_counter()
    res = distributed_pcc(X, comm, tile=tile, threshold=ns.threshold, threads=ns.threads)
    seconds = time.perf_counter() - t0
    if rank != 0:
        return 0
    out = {"ranks": size, "n": int(n), "l": int(X.shape[1]), "tile": tile, "tiles": int(T),
           "ranges": [list(rank_tile_range(r, size, T)) for r in range(size)],
           "seconds": round(seconds, 4)}
    if ns.threshold is None:
        out["shape"] = list(res.shape)
    else:
        out["pairs"] = int(len(res[0]))
    if ns.check:
        out.update(_checked(X, res, tile, ns.threshold))
    if ns.out:
        if ns.threshold is None:
            np.save(ns.out, res)
        else:
            np.savez(ns.out, i=res[0], j=res[1], r=res[2])
    out["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    print(json.dumps(out), flush=True)
    return 0


def _input(p, ns) -> np.ndarray:
    """X from --input, or made from --size / --n / --l and --seed (the same on every rank)."""
    from . import make_inputs
    if ns.input:
        return np.load(ns.input)
    if ns.size is None and ns.n is None:
        ns.size = "small"
    spec = ns.size if ns.size is not None else {}
    if isinstance(spec, str):
        from . import SIZES
        if spec not in SIZES:
            p.error(f"--size must be one of {list(SIZES)}")
        spec = dict(SIZES[spec])
    if ns.n is not None:
        spec["n"] = ns.n
    if ns.l is not None:
        spec["l"] = ns.l
    return make_inputs(spec, seed=ns.seed).X


def _checked(X, res, tile, threshold) -> dict:
    """Rank 0's comparison with the single-process answer: the largest difference (and, for
    edge lists, whether the pairs are the same)."""
    from . import correlated_pairs, pearson_allpairs
    out = {}
    n = X.shape[0]
    if threshold is None:
        ref = pearson_allpairs(X, tile=tile)
        out["max_abs_diff"] = float(np.nanmax(np.abs(res - ref))) if n else 0.0
    else:
        ref = correlated_pairs(X, threshold, tile=tile)
        same = all(np.array_equal(a, b) for a, b in zip(res[:2], ref[:2]))
        out["same_pairs"] = bool(same)
        out["max_abs_diff"] = float(np.abs(res[2] - ref[2]).max()) if same and len(ref[2]) else 0.0
    return out


if __name__ == "__main__":
    sys.exit(main())
