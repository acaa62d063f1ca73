"""The native vector width: how wide the SIMD registers are that numba compiles for here
(:func:`native_vector_bits`), how wide the vectors its loop vectoriser really uses, and how many
elements of a type fit in one (:func:`native_lanes`). :mod:`labkit.hardware.probe` re-exports them.
"""
from __future__ import annotations

import functools
import os
import platform
import re

from . import isa

_X86 = isa.X86


def native_vector_bits(*, preferred: bool = False) -> int:
    """Width in bits of the widest SIMD registers numba compiles for on this machine.

    512 with AVX-512 (``avx512f``), 256 with AVX or AVX2, 128 otherwise on x86-64 (SSE2 is the
    baseline) and on ARM (NEON; numba's code for fixed-length vectors is NEON even on SVE
    hardware), 128 on any other architecture.  The CPU is the one numba compiles for
    (:func:`labkit.target.target`): the host, or ``NUMBA_CPU_NAME`` /
    ``NUMBA_CPU_FEATURES`` — ``NUMBA_CPU_NAME=haswell`` says 256 on an AVX-512 host.  ``LABKIT_NATIVE_BITS=128`` (or 256, 512…)
    overrides the answer, e.g. for tests that simulate a 128-bit host.

    This is the *register* width.  LLVM's tuning for Intel AVX-512 server parts (skylake-avx512 …
    sapphirerapids, emeraldrapids) prefers 256-bit vectors, so numba's auto-vectorised loops there
    use ymm registers on a host where this says 512.  ``preferred=True`` answers the question a
    vector-width check needs — how wide numba's loop vectoriser makes a plain loop here — by
    compiling a tiny float32 loop with numba once (never wider than the register width; with
    ``LABKIT_NATIVE_BITS`` set, that value).

    >>> hardware.native_vector_bits(), hardware.native_vector_bits(preferred=True)  # doctest: +SKIP
    (512, 256)
    """
    env = os.environ.get("LABKIT_NATIVE_BITS", "").strip()
    if env:
        try:
            bits = int(env)
        except ValueError:
            bits = 0
        if bits < 64 or bits % 64 or bits > 2048:
            raise ValueError(f"LABKIT_NATIVE_BITS must be a vector width in bits such as 128, 256 "
                             f"or 512, got {env!r}")
        return bits
    if preferred:
        return min(_auto_vector_bits(), native_vector_bits())
    machine = platform.machine().lower()
    if machine in _X86:
        from labkit.target import target   # the CPU numba compiles for: the host or NUMBA_CPU_NAME/…
        return target().vector_bits
    return 128  # NEON (AArch64), and the narrowest common SIMD elsewhere


@functools.lru_cache(maxsize=1)
def _auto_vector_bits() -> int:
    """Widest vector register in numba's code for ``out[i] = a[i] + b[i]`` over float32 arrays."""
    import numba

    def add(a, b, out):
        for i in range(a.shape[0]):
            out[i] = a[i] + b[i]

    arr = numba.float32[::1]
    fn = numba.njit((arr, arr, arr), cache=False)(add)
    text = fn.inspect_asm(fn.signatures[0])
    if re.search(r"%zmm\d", text):
        return 512
    if re.search(r"%ymm\d", text):
        return 256
    return 128  # xmm, NEON v-registers (SVE's scalable z-registers count as their 128-bit minimum)


def native_lanes(dtype, *, preferred: bool = False) -> int:
    """How many elements of ``dtype`` fit in one native vector register:
    ``native_vector_bits() // (8 * itemsize)`` — e.g. 32 int16 lanes with AVX-512, 16 with AVX2,
    8 with SSE2 or NEON.  ``dtype`` is anything ``numpy.dtype`` accepts (``np.int16``, ``"float64"``)
    or a numba scalar type (``numba.int16``).  ``preferred=True``: lanes of the vectors numba's loop
    vectoriser really uses here (see :func:`native_vector_bits`).
    """
    import numpy as np

    try:
        dt = np.dtype(dtype)
    except TypeError:
        try:
            dt = np.dtype(str(dtype))
        except TypeError:
            raise TypeError(f"dtype must be a numpy dtype or scalar type such as np.int16 or "
                            f"'float64', got {dtype!r}") from None
    if dt.itemsize == 0 or dt.kind in "OUSV":
        raise TypeError(f"dtype must be a numeric scalar type such as np.int16, got {dt}")
    return max(1, native_vector_bits(preferred=preferred) // (8 * dt.itemsize))
