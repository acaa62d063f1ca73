"""The ``popcount`` check's technique gates, read from the student's optimised LLVM IR: no
``llvm.ctpop`` (``_no_ctpop_gate``) and the 16-entry table read in a register, a vector shift by
a per-lane amount (``_register_table_gate``)."""
from __future__ import annotations

import re

from labkit.check import CheckFailure, note

__all__: list = []

#: a vector shift of a constant (or loop-invariant) table by a per-lane amount: the 16-entry
#: table read in a register (``vpsrlvq``), the technique numba can vectorise without a shuffle
#: (fixed vectors, ``<8 x i64>``, and SVE's scalable ones, ``<vscale x 2 x i64>``)
_REGISTER_LOOKUP = re.compile(
    r"= lshr <(?:vscale x )?\d+ x i\d+> (?:splat \([^)]*\)|<[^>]*>|%broadcast\.splat[\w.]*), "
    r"%[\w.]+")


def _no_ctpop_gate(student, signature) -> None:
    """No ``llvm.ctpop`` (the hardware popcount, or a bit trick LLVM recognised as one) in the
    student's optimised IR: the exercise is the lookup."""
    from labkit import inspect as lk_inspect
    from labkit.check.gates import judged
    disp, sig = judged(student, signature, "technique missing")    # the code that runs
    ir = lk_inspect.llvm_ir(disp, sig)
    hits = re.findall(r"@llvm\.ctpop\.[\w.]+", ir)
    if hits:
        raise CheckFailure("technique missing",
                           f"your IR calls {hits[0]} — the hardware popcount (ep.popcount64, "
                           "np.bitwise_count, or a bit trick LLVM turned into one); the "
                           "exercise is Muła's lookup: count each nibble from a 16-entry table")


def _register_table_gate(student, signature) -> None:
    """The table is read in a register: the optimised IR (the code that runs, and the student's
    helpers) shifts a constant or loop-invariant vector by a per-lane amount. A table in memory
    — 256 byte entries, or 16 nibble entries indexed per byte or per word (gathers) — does
    not, whatever its speed on this host."""
    from labkit.check.gates import _ir
    if not _REGISTER_LOOKUP.search(_ir(student, signature)):
        raise CheckFailure("technique missing",
                           "no lookup in a register in your compiled loop: the table must be one "
                           "64-bit constant whose entry v is read with a shift by a variable "
                           "amount (LUT >> (4·v)), which LLVM vectorises one lane each; an array "
                           "indexed per byte or per nibble is a table in memory")
    note("table read in a register (a vector shift by a variable amount)")
