"""Lab 04 — epistasis detection: bit-packed genotype tables, popcount, masked mutual information.

Reproduces the ideas of "A SIMD algorithm for the detection of epistatic interactions of any
order" (bit-packed genotype tables with 3 rows per SNP for cases and controls, combine by AND,
popcount — hardware vs Muła's nibble lookup —, fused combine-and-popcount into contingency
tables, mutual information with masking instead of branches, depth-first search reusing prefix
tables, segmented evaluation) with numba. Seed: ``../shared/seeds/003_e45b70debb7ae58d.txt``.

Files: ``__init__`` (inputs, plain-numpy reference, validation, ``encode`` / ``search``),
``kernels`` (popcount, combine + popcount, contingency, MI), ``dfs`` (the depth-first search
kernel), ``plan`` (its plan: segments, batches, tasks, MPI ranges), ``_intrinsics`` (LLVM vector
intrinsics), ``bench`` (``run_benchmark``,
``TARGETS``), ``checks`` (the exercise checks and hints), ``__main__`` (``python -m
labkit.epistasis``, also under ``mpiexec -n R``: ``search(..., comm=…)`` splits the first SNPs
over ranks by ``rank_snp_range``).

Conventions
-----------
* ``genotypes`` is an integer array *individuals × SNPs* with values 0/1/2; ``labels`` holds
  0 = control, 1 = case, in any order (cases and controls interleaved).
* Contingency tables are ``counts[class, cell]`` with class 0 = controls, 1 = cases and
  ``cell = Σ_t g_t · 3**(k-1-t)`` (the first SNP is the most significant digit).
* MI is the plug-in mutual information ``H(X) + H(Y) − H(X, Y)`` in nats between the 3**k-cell
  genotype combination X and the phenotype Y; empty cells contribute 0.
* Ranking: MI descending, ties by SNP indices ascending. Values are compared after rounding
  to 1e-11 nats, so that mathematically equal MIs computed in a different summation order tie.
"""
from __future__ import annotations

import importlib
import math
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from labkit._common import check_threads, int_array, positive_int
from labkit._sizes import resolve_size

__all__ = [
    "MAX_ORDER", "Encoded", "Inputs", "EpistasisInputs", "SIZES", "encode", "make_inputs",
    "reference", "reference_counts", "reference_mi", "reference_search", "validate", "search",
    "popcount64", "popcount_table", "popcount_nibble", "popcount_lut_register", "popcount_mula",
    "popcount_hw_scalar",
    "popcount_hw", "and_popcount", "combine_then_popcount", "combine_popcount",
    "combine_popcount_scalar", "contingency", "contingency_fused", "mi_combinations",
    "mi_branchy", "mi_masked", "mi_table", "mi_batch_branchy", "mi_batch_masked",
    "mi_batch_table", "nlogn_table", "search_stats", "default_block", "default_batch",
    "TARGETS", "run_benchmark", "phase_times", "MULA_KIND", "rank_snp_range",
    "first_snp_work",
]

#: named sizes for make_inputs (a dict overrides any key)
SIZES = {
    "small": dict(snps=40, individuals=301, order=3),
    "seed": dict(snps=1000, individuals=2000, order=3),     # Table 3 of the seed
    "large": dict(snps=4000, individuals=2000, order=3),
}


@dataclass(frozen=True)
class Inputs:
    """Genotypes (individuals × SNPs, int8 0/1/2), interleaved labels, search order/top, planted SNPs."""

    genotypes: np.ndarray
    labels: np.ndarray
    order: int = 3
    top: int = 10
    planted: tuple | None = None

    @property
    def n_snps(self) -> int:
        """Number of SNPs."""
        return self.genotypes.shape[1]

    @property
    def n_individuals(self) -> int:
        """Number of individuals."""
        return self.genotypes.shape[0]

    @property
    def combinations(self) -> int:
        """Number of SNP combinations of the search order."""
        return math.comb(self.n_snps, self.order)


EpistasisInputs = Inputs     #: the class's name before the lab contract


def make_inputs(size="small", seed: int = 0) -> Inputs:
    """Random case/control data: size "small" | "seed" | "large" | dict(snps, individuals, order, top, planted, penetrance)."""
    spec = resolve_size(size, SIZES, ("snps", "individuals", "order", "top", "planted",
                                       "penetrance", "maf"))
    rng = np.random.default_rng(seed)
    n, m = int(spec["snps"]), int(spec["individuals"])
    lo, hi = spec.get("maf", (0.1, 0.5))
    maf = rng.uniform(lo, hi, n)
    # Hardy–Weinberg genotype frequencies per SNP
    u = rng.random((m, n))
    g = (u < maf ** 2).astype(np.int8) + (u < maf ** 2 + 2 * maf * (1 - maf)).astype(np.int8)
    g = (g * 1).astype(np.int8)
    planted = spec.get("planted")
    if planted:
        planted = tuple(sorted(int(x) for x in planted))
        pen = float(spec.get("penetrance", 0.8))
        for s in planted:        # common SNPs make the parity balanced
            u2 = rng.random(m)
            g[:, s] = (u2 < 0.25).astype(np.int8) + (u2 < 0.75).astype(np.int8)
        parity = g[:, list(planted)].sum(axis=1) % 2
        p_case = np.where(parity == 1, pen, 1 - pen)
        labels = (rng.random(m) < p_case).astype(np.int8)
    else:
        planted = None
        labels = rng.integers(0, 2, m).astype(np.int8)
    # make sure both classes exist even on tiny inputs
    if labels.min() == labels.max():
        labels[0] = 1 - labels[0]
    return Inputs(g, labels, int(spec.get("order", 3)), int(spec.get("top", 10)), planted)


def _bench_popcount_inputs(words: int = 1 << 15, seed: int = 0):
    r = np.random.default_rng(seed)
    return (r.integers(0, 2**64, words, dtype=np.uint64, endpoint=False),)


def _numpy_popcount(words):
    return int(np.bitwise_count(words).sum())


# ---------------------------------------------------------------------------------------------
# Reference (plain numpy, independent of every kernel) and validation
# ---------------------------------------------------------------------------------------------

def reference_counts(genotypes, labels, snps) -> np.ndarray:
    """counts[class, cell] by np.add.at over individuals (plain numpy)."""
    g, y = _check_data(genotypes, labels)
    cell = np.zeros(g.shape[0], dtype=np.int64)
    for s in snps:
        cell = cell * 3 + g[:, int(s)]
    out = np.zeros((2, 3 ** len(snps)), dtype=np.int64)
    np.add.at(out, (y.astype(np.int64), cell), 1)
    return out


def _entropy(p: np.ndarray, axis=None) -> np.ndarray:
    logp = np.log(np.where(p > 0, p, 1.0))
    return -(p * logp).sum(axis=axis)


def reference_mi(genotypes, labels, snps) -> float:
    """MI (nats) = H(X) + H(Y) − H(X,Y) of one SNP combination, explicit formulas (plain numpy)."""
    t = reference_counts(genotypes, labels, snps).astype(np.float64)
    p = t / t.sum()
    return float(_entropy(p.sum(axis=0)) + _entropy(p.sum(axis=1)) - _entropy(p))


def reference_search(genotypes, labels, order: int = 2, top: int = 10) -> list:
    """Exhaustive search by bincount over all combinations (plain numpy; small inputs only)."""
    g, y = _check_data(genotypes, labels)
    order = _check_order(order, g.shape[1])
    n = g.shape[1]
    C = 3 ** order
    combos = np.array(list(combinations(range(n), order)), dtype=np.int64).reshape(-1, order)
    g64 = g.astype(np.int64)
    y64 = y.astype(np.int64)
    mis = np.empty(len(combos))
    step = max(1, 2_000_000 // (g.shape[0] + 1))
    for a in range(0, len(combos), step):
        cb = combos[a:a + step]
        cell = np.zeros((g.shape[0], len(cb)), dtype=np.int64)
        for t in range(order):
            cell = cell * 3 + g64[:, cb[:, t]]
        key = (np.arange(len(cb))[None, :] * 2 + y64[:, None]) * C + cell
        t = np.bincount(key.ravel(), minlength=len(cb) * 2 * C).reshape(len(cb), 2, C)
        p = t / g.shape[0]
        mis[a:a + step] = (_entropy(p.sum(axis=1), axis=1) + _entropy(p.sum(axis=2), axis=1)
                           - _entropy(p.reshape(len(cb), -1), axis=1))
    q = np.floor(mis * _MI_SCALE + 0.5).astype(np.int64)
    sel = np.lexsort([combos[:, t] for t in range(order - 1, -1, -1)] + [-q])[:top]
    return [(tuple(int(v) for v in combos[s]), float(mis[s])) for s in sel]


def reference(inputs: Inputs) -> list:
    """Top list of an exhaustive search of ``inputs`` computed with plain numpy."""
    return reference_search(inputs.genotypes, inputs.labels, inputs.order, inputs.top)


def validate(result, expected, atol: float = 1e-9) -> None:
    """Raise AssertionError at the first rank where two top lists differ (indices, or MI beyond atol)."""
    result, expected = list(result), list(expected)
    for rank, (got, exp) in enumerate(zip(result, expected)):
        if tuple(got[0]) != tuple(exp[0]) or abs(got[1] - exp[1]) > atol:
            raise AssertionError(f"rank {rank}: got SNPs {tuple(got[0])} MI {got[1]:.6g}, "
                                 f"expected {tuple(exp[0])} MI {exp[1]:.6g}")
    if len(result) != len(expected):
        raise AssertionError(f"top list has {len(result)} entries, expected {len(expected)}")


# ---------------------------------------------------------------------------------------------
# Entry point: input validation, encoding, search
# ---------------------------------------------------------------------------------------------

def _first_bad(a: np.ndarray, allowed_max: int):
    bad = (a < 0) | (a > allowed_max)
    if not bad.any():
        return None
    pos = np.unravel_index(int(np.argmax(bad.ravel())), a.shape)
    return pos, a[pos], int(bad.sum())


def _check_data(genotypes, labels):
    g = int_array(genotypes, "genotypes", ndim=2, shape_hint="individuals × SNPs")
    y = int_array(labels, "labels", ndim=1, shape_hint="one entry per individual")
    if g.shape[0] != y.shape[0]:
        hint = (" — genotypes looks like SNPs × individuals: pass genotypes.T"
                if g.shape[1] == y.shape[0] else "")
        raise ValueError(f"genotypes has {g.shape[0]} rows (individuals) but labels has "
                         f"{y.shape[0]} entries; genotypes must be individuals × SNPs{hint}")
    if g.shape[1] == 0:
        raise ValueError("genotypes has no SNP columns; pass an individuals × SNPs array")
    bad = _first_bad(g, 2)
    if bad is not None:
        pos, val, n = bad
        raise ValueError(f"genotypes[{pos[0]}, {pos[1]}] = {val} ({n} bad values): genotypes "
                         "must be 0, 1 or 2 (minor-allele counts); recode or drop missing calls "
                         "(e.g. -1 or 3) before the search")
    bad = _first_bad(y, 1)
    if bad is not None:
        pos, val, n = bad
        raise ValueError(f"labels[{pos[0]}] = {val} ({n} bad values): labels must be 0 "
                         "(control) or 1 (case)")
    n_cases = int(np.count_nonzero(y))
    n_controls = y.shape[0] - n_cases
    if n_cases == 0 or n_controls == 0:
        which = "cases (label 1)" if n_cases == 0 else "controls (label 0)"
        raise ValueError(f"there are no {which}: MI needs both classes; check the label coding")
    return g, y


def _check_order(order, n_snps: int) -> int:
    if isinstance(order, bool) or not isinstance(order, (int, np.integer)):
        raise TypeError(f"order must be an int (1 … {MAX_ORDER}); got {order!r}")
    order = int(order)
    if not 1 <= order <= MAX_ORDER:
        raise ValueError(f"order must be between 1 and {MAX_ORDER}; got {order}")
    if order > n_snps:
        raise ValueError(f"order {order} needs at least {order} SNPs, but genotypes has only "
                         f"{n_snps} columns")
    return order


@dataclass
class Encoded:
    """Bit-packed genotype tables: ``bits[snp, genotype, word]``, case words first, then controls."""

    bits: np.ndarray          # (n_snps, 3, case_words + control_words) uint64, padding bits 0
    n_cases: int
    n_controls: int
    case_words: int
    control_words: int
    lanes: np.ndarray | None = None   # (ceil(n_snps/8), 2, words, 8): genotype rows 0, 1 of 8 SNPs per vector

    def __post_init__(self):
        if self.lanes is None:
            n, _, W = self.bits.shape
            npad = -(-n // 8) * 8
            b = np.zeros((npad, 2, W), dtype=np.uint64)
            b[:n] = self.bits[:, :2, :]
            self.lanes = np.ascontiguousarray(b.reshape(npad // 8, 8, 2, W).transpose(0, 2, 3, 1))

    @property
    def n_snps(self) -> int:
        """Number of SNPs."""
        return self.bits.shape[0]

    @property
    def words(self) -> int:
        """Words per genotype row (cases + controls, both padded to 8-word chunks)."""
        return self.bits.shape[2]

    @property
    def cases(self) -> np.ndarray:
        """Case sub-table view ``(n_snps, 3, case_words)``."""
        return self.bits[:, :, :self.case_words]

    @property
    def controls(self) -> np.ndarray:
        """Control sub-table view ``(n_snps, 3, control_words)``."""
        return self.bits[:, :, self.case_words:]

    @property
    def nbytes(self) -> int:
        """Bytes of packed data."""
        return self.bits.nbytes


def _pack_class(g: np.ndarray) -> np.ndarray:
    """(m individuals × n SNPs) → (n, 3, words) uint64 with bit i of the row = individual i."""
    m, n = g.shape
    words = max(_WORD_CHUNK, -(-m // (64 * _WORD_CHUNK)) * _WORD_CHUNK)
    out = np.zeros((n, 3, words * 8), dtype=np.uint8)
    gt = np.ascontiguousarray(g.T)
    for v in range(3):
        packed = np.packbits(gt == v, axis=1, bitorder="little")      # (n, ceil(m/8))
        out[:, v, :packed.shape[1]] = packed
    return out.view("<u8").astype(np.uint64, copy=False)


def encode(genotypes, labels) -> Encoded:
    """Pack genotypes (individuals × SNPs, 0/1/2) into 3 bit rows per SNP for cases and controls."""
    g, y = _check_data(genotypes, labels)
    cases = _pack_class(g[y == 1])
    controls = _pack_class(g[y == 0])
    bits = np.ascontiguousarray(np.concatenate([cases, controls], axis=2))
    return Encoded(bits, int(np.count_nonzero(y)), int(np.count_nonzero(y == 0)),
                   cases.shape[2], controls.shape[2])



def contingency(enc: Encoded, snps) -> np.ndarray:
    """Contingency table ``counts[class, cell]`` (class 0 = controls, 1 = cases) of a SNP combination."""
    if not isinstance(enc, Encoded):
        raise TypeError("contingency needs an Encoded table: enc = epistasis.encode(genotypes, labels)")
    s = np.asarray(snps, dtype=np.int64).ravel()
    if s.size == 0 or s.size > MAX_ORDER:
        raise ValueError(f"give 1 … {MAX_ORDER} SNP indices; got {s.size}")
    if s.min() < 0 or s.max() >= enc.n_snps:
        raise ValueError(f"SNP indices must be in 0 … {enc.n_snps - 1}; got {s.tolist()}")
    return contingency_fused(enc.bits, enc.case_words, s)


def mi_combinations(enc: Encoded, combos) -> np.ndarray:
    """MI (nats) of each given SNP combination, every table built from scratch (no prefix reuse)."""
    if not isinstance(enc, Encoded):
        raise TypeError("mi_combinations needs an Encoded table: enc = epistasis.encode(genotypes, labels)")
    c = np.ascontiguousarray(np.asarray(combos, dtype=np.int64))
    if c.ndim != 2 or c.shape[1] < 1 or c.shape[1] > MAX_ORDER:
        raise ValueError(f"combos must be a 2-D array (combinations × 1…{MAX_ORDER} SNP indices)")
    if c.size and (c.min() < 0 or c.max() >= enc.n_snps):
        raise ValueError(f"SNP indices must be in 0 … {enc.n_snps - 1}")
    return _mi_combinations(enc.bits, enc.case_words, c, nlogn_table(enc.n_cases + enc.n_controls))


def _plan(enc: Encoded, order, top, threads, block, batch, progress, first=None) -> _Plan:
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


def search(genotypes, labels, order: int = 2, top: int = 10, threads: int | None = None,
           block: int | None = None, batch: int | None = None, progress: bool | None = None,
           comm=None):
    """Exhaustive order-k search: the ``top`` SNP combinations by MI as [(indices, mi_nats), …].

    ``comm`` (an mpi4py communicator, e.g. ``MPI.COMM_WORLD``): every rank searches the
    first-SNP range ``rank_snp_range(rank, size, n, order)`` (equal triangular work), the ranks'
    top lists are merged exactly (same ranking keys) and every rank returns the list one process
    would. Every rank must pass the same data."""
    enc = genotypes if isinstance(genotypes, Encoded) else encode(genotypes, labels)
    size = 1 if comm is None else int(comm.Get_size())
    if size == 1:
        plan = _plan(enc, order, top, threads, block, batch, progress)
        return _run_plan(plan, progress is not False and len(plan.chunks) > 1)
    rank = int(comm.Get_rank())
    o = _check_order(order, enc.n_snps)
    first = rank_snp_range(rank, size, enc.n_snps, o)
    show = bool(progress) and rank == 0
    plan = _plan(enc, o, top, threads, block, batch, show, first=first)
    mine = _select(*_candidates(plan, show), plan.order, plan.top)
    parts = comm.allgather(mine)
    q, m, idx = (np.concatenate([p[t] for p in parts]) for t in range(3))
    q, m, idx = _select(q, m, idx.reshape(-1, plan.order), plan.order, plan.top)
    return _as_list(m, idx)


# ---------------------------------------------------------------------------------------------
# The kernels by step (re-exported: ``labkit.epistasis.popcount_hw`` etc.)
# ---------------------------------------------------------------------------------------------

from ._intrinsics import popcount64  # noqa: E402
from .dfs import (_as_list, _candidates, _last_stage, _Plan,  # noqa: E402
                  _run_plan, _search_kernel, _select)
from .plan import (_assign, _l1_l2, _segments, _task_work, default_batch,  # noqa: E402
                   default_block, first_snp_work, rank_snp_range, search_stats, use_pair_tables)
from .kernels import (_HAS_AVX2, _MI_SCALE, _WORD_CHUNK, MAX_ORDER, MULA_KIND,  # noqa: E402
                      _mi_combinations, and_popcount, combine_popcount, combine_popcount_scalar,
                      combine_then_popcount, contingency_fused, mi_batch_branchy,
                      mi_batch_masked, mi_batch_table, mi_branchy, mi_masked, mi_table,
                      nlogn_table, popcount_hw, popcount_hw_scalar, popcount_lut_register,
                      popcount_mula, popcount_nibble, popcount_table)


#: names that live in ``.bench`` / ``.checks``, imported on first use (so ``__init__`` → ``bench``
#: / ``checks`` → ``__init__`` is no module-level cycle)
_LAZY = {"run_benchmark": "bench", "TARGETS": "bench", "phase_times": "bench",
         "check_popcount": "checks", "check_prefix_reuse": "checks",
         "check_search_time": "checks",
         "check_masked_mi": "checks", "check_fused_count": "checks", "_random_tables": "checks",
         "_table_mi": "checks"}


def __getattr__(name: str):
    """``run_benchmark`` / ``TARGETS`` / ``phase_times`` (``.bench``) and the exercise checks
    (``.checks``), lazily."""
    if name in _LAZY:
        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
