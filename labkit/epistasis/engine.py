"""What ``search`` runs — lab 04's exhaustive depth-first search: prefix tables built once per
prefix, the last SNP counted 8 candidates per vector (lane counters), genotype 2 by subtraction
(pair tables at order 3), the MI from an n·ln n table where a χ² bound says a candidate can
enter, per-worker top lists (the stages: ``_stages.py``); running a plan (``_plan.py``: segments,
batches, tasks) and merging the top lists of threads and MPI ranks (``run_search``). Never
imports the package.
"""
from __future__ import annotations

import numpy as np
from numba import prange

from labkit._common import use_threads
from labkit.jit import njit

from ._plan import _lanes16, _make_plan, _Plan, rank_snp_range
from ._stages import (_NO, _ONE, _THREE, _ZERO, _build_level, _last_stage, _last_stage16,
                      _pair_counts, _parent_counts)
from .inputs import _check_order

@njit(cache=True, parallel=True)
def _search_kernel(bits3, lanes4, case_words, order, segs, tasks, ntasks, nlogn, n_cases,
                   n_controls, top, batch, phases=3, pairs=np.zeros((0, 0), dtype=np.int64),
                   lanes16=np.zeros(0, dtype=np.uint32),
                   pairs16=np.zeros((0, 0), dtype=np.float32)):
    """Each worker (prange row) runs its first-index tasks depth-first; returns per-worker top lists.

    ``phases`` (for timing the parts): 1 = prefix tables only, 2 = + the last SNP's counts,
    3 = + MI and the top list (the search). ``pairs`` (order 3; ``_pair_counts``, or 0 rows):
    each first SNP's parent counts are its row of ``pairs``, and the last stage counts 4 of
    the 9 prefix rows instead of 6; with ``lanes16`` and ``pairs16`` too (``_lanes16``,
    ``_pair_counts(..., b16=True)``; one segment per class) the last stage is ``_last_stage16``."""
    n_snps = bits3.shape[0]
    use_pairs = order == 3 and pairs.shape[0] == n_snps
    use16 = order == 3 and pairs16.shape[0] == n_snps and lanes16.size > 0
    W = bits3.shape[2]
    bits = bits3.ravel()
    lanes = lanes4.ravel()
    T = tasks.shape[0]
    N = n_cases + n_controls
    inv_n = 1.0 / N
    hy = (nlogn[N] - nlogn[n_cases] - nlogn[n_controls]) * inv_n
    out_q = np.full((T, top), -1, dtype=np.int64)
    out_m = np.zeros((T, top))
    out_i = np.full((T, top, order), n_snps, dtype=np.int64)
    # level offsets of the prefix tables: level d has 3**d rows
    lvl_off = np.zeros(order + 1, dtype=np.int64)
    for d in range(order):
        lvl_off[d + 1] = lvl_off[d] + (3 ** d) * W
    Rmax = 3 ** (order - 1)
    for wk in prange(T):
        tables = np.zeros(lvl_off[order], dtype=np.uint64)
        pcs = np.zeros((order, Rmax, 2), dtype=np.int64)
        counts = np.zeros(batch * 4 * Rmax + 8, dtype=np.int64)
        countsf = np.zeros(36 * 16 + 16, dtype=np.float32)
        pcf = np.zeros(24, dtype=np.float32)     # _fused.fused_params' constants of a prefix
        tab32 = tables.view(np.uint32)
        idx = np.zeros(order, dtype=np.int64)
        nxt = np.zeros(order + 1, dtype=np.int64)
        state = np.zeros(1, dtype=np.int64)
        acc = np.zeros(8)
        npad = (n_snps + 7) // 8 * 8      # the SNPs of lanes4, in blocks of 8
        par = np.zeros(4 * (3 ** (order - 2)) * npad if order >= 3 else 0, dtype=np.int64)
        pj = np.zeros(0, dtype=np.int64)
        tq = out_q[wk]
        tm = out_m[wk]
        ti = out_i[wk]
        # level 0: the "all individuals" mask row
        for w in range(W):
            tables[w] = 0
        for i in range(n_cases):
            tables[i // 64] |= np.uint64(1) << np.uint64(i % 64)
        for i in range(n_controls):
            tables[case_words + i // 64] |= np.uint64(1) << np.uint64(i % 64)
        pcs[0, 0, 1] = n_cases
        pcs[0, 0, 0] = n_controls
        for ti_ in range(ntasks[wk]):
            i = tasks[wk, ti_]
            if order == 1:
                if phases >= 2:
                    _last_stage(tables, lvl_off[0], _ONE, pcs[0], idx, order, i, i + 1, lanes, W,
                                segs, counts, batch, nlogn, inv_n, hy, tq, tm, ti, state, acc,
                                phases, par, npad, pj)
                continue
            idx[0] = i
            _build_level(tables, pcs, lvl_off, _ZERO, bits, W, case_words, i, _NO)
            if use_pairs:
                par = pairs[i]
            elif order == 3 and phases >= 2 and not use16:
                _parent_counts(tables, lvl_off[1], _THREE, i + 1, n_snps, lanes, W, segs, par, npad)
            d = _ONE                   # prefix length; table of level d holds idx[:d]
            nxt[1] = i + 1
            while d >= 1:
                if d == order - 1:
                    if phases >= 2 and use16:
                        _last_stage16(tab32, lvl_off[d], pcs[d], idx, order, idx[d - 1] + 1,
                                      n_snps, lanes16, W, segs, countsf, nlogn, inv_n, hy, tq,
                                      tm, ti, state, acc, phases, pairs16[idx[0]],
                                      pairs16[idx[1]], pcf)
                    elif phases >= 2:
                        if use_pairs:
                            pj = pairs[idx[1]]
                        _last_stage(tables, lvl_off[d], 3 ** d, pcs[d], idx, order,
                                    idx[d - 1] + 1, n_snps, lanes, W, segs, counts, batch, nlogn,
                                    inv_n, hy, tq, tm, ti, state, acc, phases, par, npad, pj)
                    d -= 1
                    continue
                j = nxt[d]
                if j > n_snps - (order - d):
                    d -= 1
                    continue
                nxt[d] = j + 1
                idx[d] = j
                _build_level(tables, pcs, lvl_off, d, bits, W, case_words, j,
                             order >= 3 and d + 1 == order - 1)
                if d + 1 == order - 2 and phases >= 2:
                    _parent_counts(tables, lvl_off[d + 1], 3 ** (d + 1), j + 1, n_snps, lanes, W,
                                   segs, par, npad)
                d += 1
                nxt[d] = j + 1
    return out_q, out_m, out_i


def _candidates(plan: _Plan, progress: bool):
    """Run the plan: (q, mi, indices) of every worker's top list, filled entries only (q is the
    MI rounded to 1e-11 nats, the ranking key)."""
    enc = plan.enc
    bar = None
    if progress and len(plan.chunks) > 1:
        from tqdm.auto import tqdm
        bar = tqdm(total=plan.combos, unit="comb", unit_scale=True,
                   desc=f"order-{plan.order} search")
    qs, ms, ids = [np.zeros(0, np.int64)], [np.zeros(0)], [np.zeros((0, plan.order), np.int64)]
    try:
        with use_threads(plan.threads):
            pairs = np.zeros((0, 0), dtype=np.int64)
            lanes16 = np.zeros(0, dtype=np.uint32)
            pairs16 = np.zeros((0, 0), dtype=np.float32)
            if plan.pairs and plan.phases >= 2:
                segs = plan.segs
                b16 = bool(segs.shape[0] == 2 and segs[0, 2] != segs[1, 2])  # _last_stage16
                pairs, pairs16 = _pair_counts(enc.bits, enc.lanes, segs, enc.lanes.shape[0] * 8,
                                              b16)
                if b16:
                    lanes16 = _lanes16(enc.lanes)
            for (tasks, ntasks), ncomb in plan.chunks:
                q, m, i = _search_kernel(enc.bits, enc.lanes, enc.case_words, plan.order,
                                         plan.segs, tasks, ntasks, plan.nlogn, enc.n_cases,
                                         enc.n_controls, plan.top, plan.batch, plan.phases,
                                         pairs, lanes16, pairs16)
                qs.append(q.reshape(-1))
                ms.append(m.reshape(-1))
                ids.append(i.reshape(-1, plan.order))
                if bar is not None:
                    bar.update(ncomb)
    finally:
        if bar is not None:
            bar.close()
    q = np.concatenate(qs)
    m = np.concatenate(ms)
    idx = np.concatenate(ids)
    keep = q >= 0
    return q[keep], m[keep], idx[keep]


def _select(q, m, idx, order: int, top: int):
    """The ``top`` best of the candidates (q descending, then indices ascending): (q, m, idx)."""
    order_keys = [idx[:, t] for t in range(order - 1, -1, -1)] + [-q]
    sel = np.lexsort(order_keys)[:top]
    return q[sel], m[sel], idx[sel]


def _as_list(m, idx) -> list:
    return [(tuple(int(v) for v in idx[s]), float(m[s])) for s in range(len(m))]


def _run_plan(plan: _Plan, progress: bool) -> list:
    q, m, idx = _select(*_candidates(plan, progress), plan.order, plan.top)
    return _as_list(m, idx)


def run_search(enc, order, top, threads, block, batch, progress, comm) -> list:
    """``search`` on an encoded table: one process (threads over first-SNP tasks), or with
    ``comm`` every rank its first-SNP range, the ranks' top lists merged exactly."""
    size = 1 if comm is None else int(comm.Get_size())
    if size == 1:
        plan = _make_plan(enc, order, top, threads, block, batch, progress)
        return _run_plan(plan, progress is not False and len(plan.chunks) > 1)
    rank = int(comm.Get_rank())
    o = _check_order(order, enc.n_snps)
    first = rank_snp_range(rank, size, enc.n_snps, o)
    show = bool(progress) and rank == 0
    plan = _make_plan(enc, o, top, threads, block, batch, show, first=first)
    mine = _select(*_candidates(plan, show), plan.order, plan.top)
    parts = comm.allgather(mine)
    q, m, idx = (np.concatenate([p[t] for p in parts]) for t in range(3))
    q, m, idx = _select(q, m, idx.reshape(-1, plan.order), plan.order, plan.top)
    return _as_list(m, idx)
