"""Lab 04 — epistasis detection: bit-packed genotype tables, popcount, masked mutual information.

Reproduces the ideas of "A SIMD algorithm for the detection of epistatic interactions of any
order" (bit-packed genotype tables with 3 rows per SNP for cases and controls, combine by AND,
popcount — hardware vs Muła's nibble lookup —, fused combine-and-popcount into contingency
tables, mutual information with masking instead of branches, depth-first search reusing prefix
tables, segmented evaluation) with numba. Seed: ``../shared/seeds/003_e45b70debb7ae58d.txt``.

Files (the lab template, ``labkit.registry``): ``__init__`` (the entry points ``search``,
``contingency``, ``mi_combinations`` and the re-exports), ``inputs`` (sizes, ``Inputs``,
``make_inputs``, the checks of genotypes and labels, ``encode``), ``reference`` (the plain-numpy
oracles, ``validate``), ``kernels`` (popcount, combine + popcount, contingency, MI), ``engine``
(the depth-first search kernel and running it; its stages in ``_stages``, its plan — segments,
batches, tasks, MPI ranges — in ``_plan``, its LLVM vector intrinsics in ``_intrinsics`` and
``_fused``), ``bench`` (``run_benchmark``, ``TARGETS``), ``checks`` (the exercise checks and
hints), ``challenge``, ``__main__`` (``python -m labkit.epistasis``, also under ``mpiexec -n R``:
``search(..., comm=…)`` splits the first SNPs over ranks by ``rank_snp_range``).

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

import numpy as np

from . import engine
from ._intrinsics import popcount64
from ._plan import (_assign, _l1_l2, _make_plan, _Plan, _segments,  # noqa: F401
                    _task_work, default_batch, default_block, first_snp_work, rank_snp_range,
                    search_stats, use_pair_tables)
from ._stages import _last_stage  # noqa: F401 - the notebook compiles it for another CPU
from .engine import (_as_list, _candidates, _run_plan, _search_kernel,  # noqa: F401
                     _select)
from .inputs import (SIZES, Encoded, EpistasisInputs, Inputs,  # noqa: F401
                     _bench_popcount_inputs, _check_data, _check_order, encode, make_inputs)
from .kernels import (_HAS_AVX2, _MI_SCALE, _WORD_CHUNK, MAX_ORDER, MULA_KIND,  # noqa: F401
                      _mi_combinations, and_popcount, combine_popcount, combine_popcount_scalar,
                      combine_then_popcount, contingency_fused, mi_batch_branchy,
                      mi_batch_masked, mi_batch_table, mi_branchy, mi_masked, mi_table,
                      nlogn_table, popcount_hw, popcount_hw_scalar, popcount_lut_register,
                      popcount_mula, popcount_nibble, popcount_table)
from .reference import (_entropy, _numpy_popcount, reference, reference_counts,  # noqa: F401
                        reference_mi, reference_search, validate)

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


def search(genotypes, labels, order: int = 2, top: int = 10, threads: int | None = None,
           block: int | None = None, batch: int | None = None, progress: bool | None = None,
           comm=None):
    """Exhaustive order-k search: the ``top`` SNP combinations by MI as [(indices, mi_nats), …].

    ``comm`` (an mpi4py communicator, e.g. ``MPI.COMM_WORLD``): every rank searches the
    first-SNP range ``rank_snp_range(rank, size, n, order)`` (equal triangular work), the ranks'
    top lists are merged exactly (same ranking keys) and every rank returns the list one process
    would. Every rank must pass the same data."""
    # 1. the data, bit-packed (an Encoded table as it is)
    enc = genotypes if isinstance(genotypes, Encoded) else encode(genotypes, labels)
    # 2. the engine: the plan (order, top, threads, block and batch checked there), the search
    return engine.run_search(enc, order, top, threads, block, batch, progress, comm)


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
