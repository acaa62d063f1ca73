"""The kernel lesson 00's entry point ``colsum`` runs: the last teaching step, ``colsum_rows``
(row order: contiguous loads, the columns independent → SIMD), as the notebook shows it in
``kernels``; no faster engine lies behind it."""
from __future__ import annotations

from .kernels import colsum_rows

__all__ = ["colsum_rows"]
