"""Look inside numba functions: LLVM IR, assembly, vector-width reports, cross-CPU compiles,
the vectoriser's own remarks per loop, and source ↔ assembly annotation.

The package, by concern (each module's docstring says how it gets its text):

* :mod:`.ir` — which compiled overload to read (a fresh copy when numba's disk cache hides the
  code); ``llvm_ir`` / ``asm``.
* :mod:`.loops` — one IR function's basic blocks, control-flow graph, natural loops and hot
  loop (what ``own_ir`` and labkit.check's gates read).
* :mod:`.vector` — the SIMD instruction classifier (xmm/ymm/zmm, NEON v, SVE z, RVV v);
  ``vector_report`` / ``vector_report_from_asm``.
* :mod:`.retarget` — ``compile_for`` another CPU (x86-64, AArch64 NEON/SVE, RISC-V V) from
  numba's unoptimised IR; ``known_cpus`` by architecture.
* :mod:`.views` — ``show`` (highlighted listing, hot loop found) and ``diff``.
* :mod:`.remarks` — the loop vectoriser's remarks explained; ``remarks``, ``explain``.
* :mod:`.annotate` — source lines with their loop verdicts and assembly; ``annotate``.
* :mod:`.uarch` — the hot loop's predicted bound (ports or a loop-carried dependency) from
  OSACA's core models; ``predict``. Beneath it: :mod:`.uarch_models` (which core model stands
  for a CPU), :mod:`.uarch_steps` (one x86-64 or AArch64 instruction's effect on the registers)
  and :mod:`.uarch_elements` (elements per loop iteration from the addresses the loop moves).

Everything public is re-exported here: ``from labkit import inspect as lk; lk.vector_report(fn)``.
"""
from __future__ import annotations

from .annotate import Annotation, annotate
from .ir import asm, llvm_ir
from .remarks import EXPLANATIONS, LoopRemark, Remarks, explain, remarks
from .retarget import compile_for, known_cpus
from .vector import VectorReport, vector_report, vector_report_from_asm
from .views import Diff, Listing, diff, show
from .uarch import Prediction, predict

__all__ = [
    "llvm_ir", "asm", "vector_report", "vector_report_from_asm", "VectorReport",
    "compile_for", "show", "Listing", "diff", "predict", "Prediction", "Diff", "remarks", "Remarks", "LoopRemark",
    "annotate", "Annotation", "EXPLANATIONS", "explain", "known_cpus",
]
