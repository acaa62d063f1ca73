"""An atomic counter for numba's threads: ``claim(counter)`` returns ``counter[0]`` and adds 1 to
it in one atomic step (LLVM ``atomicrmw add``: ``lock xadd`` on x86-64, ``ldadd`` or an
exclusive load/store loop on AArch64 — generic IR, every target numba runs on).

``engine._align_spans_parallel`` hands its tiles out with it: each thread takes the next tile
when it finishes one (dynamic scheduling), where numba's ``prange`` over OpenMP splits the
iterations into one fixed block per thread before any runs.
"""
from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.extending import intrinsic

__all__ = ["claim"]


@intrinsic
def claim(typingctx, counter):
    """``old = counter[0]; counter[0] += 1`` atomically (sequentially consistent) → old;
    ``counter`` a 1-D int64 array shared by the threads (use inside @njit)."""
    if not (isinstance(counter, types.Array) and counter.dtype == types.int64
            and counter.ndim == 1):
        return None
    sig = types.int64(counter)

    def codegen(context, builder, signature, args):
        arr = context.make_array(signature.args[0])(context, builder, args[0])
        one = ir.Constant(ir.IntType(64), 1)
        return builder.atomic_rmw("add", arr.data, one, "seq_cst")
    return sig, codegen
