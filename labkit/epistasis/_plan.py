"""Lab 04's search plan in plain Python: when the order-3 pair tables are kept, segment and batch
sizes from the caches, first-SNP tasks dealt to threads by their triangular work, the first-SNP
ranges of MPI ranks, the operation counts of the search (``search_stats``), and the plan itself
(``_Plan``, made from the search's arguments by ``_make_plan``). Never imports the package.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from labkit import hardware
from labkit._common import check_threads, positive_int

from .inputs import Encoded, _check_order
from .kernels import nlogn_table


#: the pair tables (``_pair_counts``: 12 int64 per SNP pair) are used up to this many bytes
PAIR_TABLE_BYTES = 256 << 20


def use_pair_tables(n_snps: int, order: int) -> bool:
    """Does an order-``order`` search over ``n_snps`` SNPs keep the pair tables (order 3, within
    :data:`PAIR_TABLE_BYTES`)?"""
    npad = (n_snps + 7) // 8 * 8
    return order == 3 and n_snps * 12 * npad * 8 <= PAIR_TABLE_BYTES


def _l1_l2() -> tuple[int, int]:
    try:
        hw = hardware.info()
        return int(hw.get("l1d") or 32768), int(hw.get("l2") or 1 << 20)
    except Exception:            # pragma: no cover - hardware module missing/broken
        return 32768, 1 << 20


def default_block(order: int) -> int:
    """Individuals per segment so one prefix-table segment fills about half of L1d (multiple of 512)."""
    l1, _ = _l1_l2()
    rows = 3 ** (order - 1) + 2
    words = max(8, (l1 // 2) // (8 * rows) // 8 * 8)
    return words * 64


def default_batch(order: int) -> int:
    """Contingency tables per integer→MI phase so the batch of counts (4·3**(order−1) int64 per
    table) fits in about 1/4 of L1d, beside the prefix table: the MI phase reads them back from
    L1 (order 3 here, 400 SNPs × 2000: 18.2 M triples per CPU second with the batch in L2,
    20.8 M with 32 tables)."""
    l1, _ = _l1_l2()
    return int(min(4096, max(16, (l1 // 4) // (32 * 3 ** (order - 1)) // 8 * 8)))


def _segments(case_words: int, control_words: int, block_words: int) -> np.ndarray:
    segs = []
    for start, nwords, cls in ((0, case_words, 1), (case_words, control_words, 0)):
        for lo in range(0, nwords, block_words):
            segs.append((start + lo, start + min(nwords, lo + block_words), cls))
    return np.array(segs, dtype=np.int64)


def _task_work(n: int, order: int) -> np.ndarray:
    i = np.arange(n)
    if order == 1:
        return np.ones(n)
    return np.array([math.comb(n - 1 - int(x), order - 1) for x in i], dtype=np.float64)


def _assign(task_ids: np.ndarray, T: int) -> tuple[np.ndarray, np.ndarray]:
    """Snake (boustrophedon) assignment of tasks sorted by work to T workers: balanced triangles."""
    per = [[] for _ in range(T)]
    for p, t in enumerate(task_ids):
        rnd, pos = divmod(p, T)
        per[pos if rnd % 2 == 0 else T - 1 - pos].append(int(t))
    L = max(1, max(len(x) for x in per))
    tasks = np.full((T, L), -1, dtype=np.int64)
    for w, lst in enumerate(per):
        tasks[w, :len(lst)] = lst
    return tasks, np.array([len(x) for x in per], dtype=np.int64)


def first_snp_work(n_snps: int, order: int) -> np.ndarray:
    """Combinations that start with first SNP i, for i = 0 … n − order: C(n − 1 − i, order − 1)
    (float64; exact while the values stay below 2**53)."""
    m = np.arange(n_snps - 1, order - 2, -1, dtype=np.float64)     # n − 1 − i
    w = np.ones_like(m)
    for t in range(order - 1):
        w *= (m - t) / (t + 1)
    return np.rint(w)


@lru_cache(maxsize=8)
def _work_cumsum(n_snps: int, order: int) -> np.ndarray:
    return np.concatenate([[0.0], np.cumsum(first_snp_work(n_snps, order))])


def rank_snp_range(rank: int, size: int, n_snps: int, order: int) -> tuple[int, int]:
    """First-SNP range ``[lo, hi)`` of MPI rank ``rank`` of ``size``: contiguous ranges of equal
    triangular work (rank 0 gets few first SNPs, each starting many combinations; the last rank
    many that start few)."""
    cum = _work_cumsum(int(n_snps), int(order))
    nw = cum.size - 1
    if nw <= 0:
        return (0, 0)

    def edge(r):                 # the boundary whose work before it is nearest r/size
        if r <= 0:
            return 0
        if r >= size:
            return nw
        goal = cum[-1] * r / size
        e = int(np.searchsorted(cum, goal))
        if e > 0 and (e > nw or goal - cum[e - 1] <= cum[e] - goal):
            e -= 1
        return e
    lo = edge(rank)
    hi = max(lo, edge(rank + 1))
    return int(lo), int(hi)


def search_stats(n_snps: int, order: int) -> dict:
    """Operation counts of an exhaustive search with and without depth-first prefix reuse (row ANDs)."""
    combos = math.comb(n_snps, order)
    # without reuse: every combination ANDs k rows for each of its 3**k cells
    naive = combos * 3 ** order * max(order - 1, 0)
    # with reuse: level d+1 tables built once per (d+1)-prefix (3**(d+1) row ANDs), last level fused
    reuse = sum(math.comb(n_snps, d + 1) * 3 ** (d + 1) for d in range(1, order - 1))
    reuse += combos * 3 ** order
    # the subtraction trick: only 2 of the 3 rows of the last SNP are counted
    reuse_sub = reuse - combos * 3 ** (order - 1)
    # ... and from order 3 on, the prefix rows with the last prefix SNP's genotype 2 come from the
    # parent's counts with SNP k (counted once per parent: C(n, order−2) parents × n SNPs ×
    # 3**(order−2) rows × 2); at order 3 also the first SNP's genotype 2, from pair tables
    # (``use_pair_tables``): what the search kernel does
    reuse_parent = reuse_sub
    if order >= 3:
        reuse_parent -= combos * 2 * 3 ** (order - 2)
        reuse_parent += math.comb(n_snps, order - 2) * n_snps * 2 * 3 ** (order - 2)
    if use_pair_tables(n_snps, order):
        # order 3 with the pair tables: the prefix rows (2, g') come from the pair (j, k) too, so
        # 4 of the 9 rows are counted (× 2 genotypes of k); the tables: 3 rows × 2 per pair
        reuse_parent = (math.comb(n_snps, 2) * 9 + combos * 2 * 4
                        + math.comb(n_snps, 2) * 3 * 2)
    return {"combinations": combos, "row_ands_naive": naive, "row_ands_dfs": reuse,
            "row_ands_dfs_subtract": reuse_sub, "row_ands_search": reuse_parent}


def _lanes16(lanes4):
    """``lanes4`` (blocks of 8 SNPs, 64-bit words: (nb, 2, W, 8)) as uint32 blocks of 16 SNPs
    with 32-bit words, (ceil(nb/2), 2, 2W, 16) raveled: word w of genotype row g of SNP 16b + t
    at ((b·2 + g)·2W + w)·16 + t (a zero block pads an odd nb)."""
    nb, _, W, _ = lanes4.shape
    L = np.zeros((nb + nb % 2, 2, W, 8), dtype=np.uint64)
    L[:nb] = lanes4
    h = L.view(np.uint32).reshape(-1, 2, 2, W, 8, 2)           # (b, half-block, g, W, t, lo/hi)
    return np.ascontiguousarray(h.transpose(0, 2, 3, 5, 1, 4)).reshape(-1)


@dataclass
class _Plan:
    """A search ready to run: the table, its arguments checked, segments, the MI table, the
    first-SNP tasks in chunks (progress steps) dealt to the threads."""

    enc: object               # the Encoded table
    order: int
    top: int
    threads: int
    block: int
    batch: int
    segs: np.ndarray
    nlogn: np.ndarray
    combos: int
    chunks: list = field(default_factory=list)
    phases: int = 3           # 1 = prefix tables, 2 = + counts, 3 = + MI (see _search_kernel)
    pairs: bool = False       # order 3: pair tables of every SNP with every later one (_pair_counts)


def _make_plan(enc: Encoded, order, top, threads, block, batch, progress, first=None) -> _Plan:
    """Validate the search arguments; split the first-SNP tasks (all, or the range ``first`` =
    (lo, hi) of one MPI rank) over threads (and progress steps)."""
    order = _check_order(order, enc.n_snps)
    top = positive_int(top, "top", hint="combinations to return")
    threads = check_threads(threads)
    block = positive_int(default_block(order) if block is None else block, "block",
                         hint="individuals per segment")
    block_words = max(8, -(-block // 512) * 8)
    batch = positive_int(default_batch(order) if batch is None else batch, "batch",
                         hint="tables per MI phase")
    batch = -(-batch // 8) * 8
    rows = (3 ** order - 1) // 2
    mem = rows * enc.words * 8 + int(batch) * 4 * 3 ** (order - 1) * 8
    if mem * threads > (1 << 30):
        raise ValueError(f"order {order} needs {mem * threads / 2**30:.1f} GiB of prefix tables "
                         "for this many individuals; lower the order or the batch")
    n = enc.n_snps
    combos = math.comb(n, order)
    work = _task_work(n, order)
    ids = np.arange(n) if order > 1 else np.arange(n)
    if order > 1:
        ids = ids[: n - order + 1]
    if first is not None:
        ids = ids[(ids >= first[0]) & (ids < first[1])]
        combos = int(work[ids].sum()) if order > 1 else int(ids.size)
    if progress is None:
        progress = combos * 3 ** order * enc.words > 5e10
    nchunks = 1 if not progress else min(50, max(1, len(ids) // (4 * threads)))
    # contiguous chunks of roughly equal work (progress bar steps)
    cum = np.cumsum(work[ids])
    edges = (np.searchsorted(cum, np.linspace(0, cum[-1], nchunks + 1)[1:-1]) if ids.size
             else [])
    parts = [p for p in np.split(ids, edges) if p.size]
    chunks = [(_assign(p, int(threads)), int(sum(math.comb(n - 1 - int(x), order - 1)
                                                for x in p)) if order > 1 else p.size)
              for p in parts]
    return _Plan(enc, order, int(top), int(threads), block_words * 64, int(batch),
                 _segments(enc.case_words, enc.control_words, block_words),
                 nlogn_table(enc.n_cases + enc.n_controls), combos, chunks,
                 pairs=use_pair_tables(enc.n_snps, order))
