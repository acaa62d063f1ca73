"""What ``import labkit`` does to the environment before anything compiles (no numba import).

:func:`apply`: with ``NUMBA_CPU_NAME`` set and ``NUMBA_CPU_FEATURES`` not, numba would hand LLVM
the host's features with the other CPU's name (haswell-tuned AVX-512 code on an AVX-512 host);
an empty ``NUMBA_CPU_FEATURES`` makes LLVM use the named CPU's own features instead, so the code
is what numba emits on that CPU. Child processes (the check worker, the grader's sandbox) inherit
it. See :mod:`labkit.target`.
"""
from __future__ import annotations

import os
import sys

__all__ = ["apply", "numba_compiled_before"]

_CHANGED_BEFORE_COMPILE = False


def apply() -> None:
    """Make ``NUMBA_CPU_NAME`` alone mean that CPU's own features (see the module docstring).

    Called by ``import labkit`` — before numba compiles anything, as numba reads the features
    once, at its first compilation; cheap (no numba or LLVM import)."""
    global _CHANGED_BEFORE_COMPILE
    name = os.environ.get("NUMBA_CPU_NAME", "").strip()
    if not name or name.lower() in ("host", "native") or "NUMBA_CPU_FEATURES" in os.environ:
        return
    os.environ["NUMBA_CPU_FEATURES"] = ""
    numba = sys.modules.get("numba")
    if numba is not None and getattr(numba, "config", None) is not None:
        numba.config.CPU_FEATURES = ""
        reg = sys.modules.get("numba.core.registry")
        if reg is not None and "_toplevel_target_context" in vars(reg.cpu_target):
            _CHANGED_BEFORE_COMPILE = True   # numba already compiled with the host's features


def numba_compiled_before() -> bool:
    """True when numba had compiled with the host's features before :func:`apply` changed them."""
    return _CHANGED_BEFORE_COMPILE
