"""The ``prefix_reuse`` check's accounting of a depth-first walk: the row ANDs of building every
prefix's table once (``ands_with_reuse``) or every combination's afresh (``ands_from_scratch``),
and ``extend`` as the check hands it to the student (``_Counter``): it counts the ANDs and records
which table it built from which parent, so the work is judged, not the calls."""
from __future__ import annotations

import math

import numpy as np

from labkit.check import CheckFailure

__all__ = ["ands_with_reuse", "ands_from_scratch"]


def ands_with_reuse(n: int, order: int, prune: bool = True) -> int:
    """Row ANDs of a depth-first walk that builds every prefix table once: the table of a
    d-prefix (3**d rows, d ≥ 2) costs 3**d row ANDs; a single SNP's table is its own 3 rows.
    ``prune``: only the d-prefixes that still have order − d SNPs after them are built
    (C(n − order + d, d) of them); without it every d-prefix is."""
    return sum(math.comb(n - (order - d) * prune, d) * 3 ** d for d in range(2, order + 1))


def ands_from_scratch(n: int, order: int) -> int:
    """Row ANDs when every combination builds its tables 2 … order afresh."""
    return math.comb(n, order) * sum(3 ** d for d in range(2, order + 1))


def _table_key(a) -> tuple:
    a = np.ascontiguousarray(a)
    return (a.shape, str(a.dtype), a.tobytes())


class _Counter:
    """``extend(parent, snp)`` for the check: the child table, its row ANDs counted — and which
    tables it built from which parents, so the work is judged, not the calls: a visited table
    must be one extend built, from a chain of extend's tables rooted at a SNP's rows (a table
    computed elsewhere, with calls on other arrays padding the count, is not)."""

    def __init__(self, bits=None):
        self.ands = 0
        self.calls = 0
        self._snps = set() if bits is None else {_table_key(b) for b in np.asarray(bits)}
        self._made: dict = {}           # table key -> parent key (the first build)

    def __call__(self, parent, snp):
        parent = np.asarray(parent)
        snp = np.asarray(snp)
        if parent.ndim != 2 or snp.ndim != 2 or snp.shape[0] != 3 or parent.shape[1] != snp.shape[1]:
            raise CheckFailure("wrong", f"extend(parent, snp) takes a parent table (R, W) and "
                                        f"one SNP's 3 rows (3, W); got {parent.shape} and "
                                        f"{snp.shape}")
        self.ands += 3 * parent.shape[0]
        self.calls += 1
        W = parent.shape[1]
        child = (parent[:, None, :] & snp[None, :, :]).reshape(-1, W)
        if self._snps and _table_key(snp) in self._snps:
            self._made.setdefault(_table_key(child), _table_key(parent))
        return child

    def built(self, table) -> bool:
        """True when extend built ``table`` from a chain of its own tables that starts at a
        SNP's 3 rows."""
        key, hops = _table_key(table), 0
        while key in self._made and hops < 64:
            key, hops = self._made[key], hops + 1
            if key in self._snps:
                return True
        return False


def _expected_table(bits, combo):
    t = bits[combo[0]]
    for j in combo[1:]:
        t = (t[:, None, :] & bits[j][None, :, :]).reshape(-1, bits.shape[2])
    return t
