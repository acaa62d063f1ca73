"""Lab 04's inputs: the sizes, ``Inputs`` (alias ``EpistasisInputs``), ``make_inputs``, the checks
of genotypes, labels and order, and their bit-packed form (``Encoded``, ``encode``) the kernels
read; the popcount benchmark's random words (``_bench_popcount_inputs``)."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from labkit._common import int_array
from labkit._sizes import resolve_size

from .kernels import _WORD_CHUNK, MAX_ORDER

__all__ = ["SIZES", "Inputs", "EpistasisInputs", "make_inputs", "Encoded", "encode"]

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
