"""Exercise checks: honest, one-line verdicts on a student's function.

A lab registers each exercise in ``labkit/<lab>/checks.py`` with :func:`exercise`; a notebook
calls ``check.<name>(fn)``::

    from labkit import check
    check.transpose(transpose)          # -> CheckResult, shown as ✔ / ✘ and why

The package, by concern:

* :mod:`.result` — the fixed :data:`VERDICTS`, :class:`CheckResult`, :class:`CheckFailure`.
* :mod:`.framework` — ``@exercise(name, points, answers=…)``, the registry (found through
  :mod:`labkit.registry`), seeds (``LABKIT_SEED``), notes, verdict mapping, strict mode.
* :mod:`.guard` — the student's function as the check sees it: delegation (``uses labkit's
  answer``) and tamper detection.
* :mod:`.gates` — technique gates from the compiled code (vector width vs the host's native
  width, lanes, branches, FMA, fastmath, accumulators, BLAS, access order).
* :mod:`.speed` — interleaved timing with a confidence interval; ``inconclusive``.
* :mod:`.challenge` — the labs' open challenges: correctness, then a tier on a log scale
  between a slow starting point and labkit's kernel (fractional points, :func:`award`).
* :mod:`.runner` / :mod:`.worker` — the trusted worker process; :func:`run_source`.
* :mod:`.falsefail` — ``python -m labkit.check.falsefail``: false-fail counts of the
  reference solutions.

Verdicts are a small fixed set (see :data:`VERDICTS`). Correctness uses fresh random inputs
(seed from ``LABKIT_SEED`` when set, random otherwise). Speed is a ratio against labkit's own
kernel measured at the same moment; it fails a check unless ``LABKIT_SPEED=report`` (tests and
CI set that, since shared machines are noisy — there the speed is reported, not judged);
``LABKIT_GRADING`` always judges it. ``LABKIT_CHECK_STRICT=1`` makes every check raise on
failure (the test suite sets it while nbval runs the solutions); so does nbgrader's
``NBGRADER_EXECUTION``. Checks write nothing to stderr. ``LABKIT_CHECK_INPROCESS=1`` runs
checks in this process (debugging only: nothing is protected then). ``LABKIT_CHECK_LAST=1``
(the grader sets it for a notebook's last exercise) tells the worker that no check follows:
a plain-Python check then starts no spare process for the next one.
"""
from __future__ import annotations

from labkit._common import mismatch

from .framework import (Exercise, award, current, earned, exercise, get, last, locked, names,
                        note, rng, run, seed, speed_enforced, speed_not_judged)
from .gates import (accumulators_gate, fma_gate, lanes_gate, native_bits, native_lanes,
                    no_branch_gate, no_fastmath_gate, not_blas_gate, record_order,
                    require_njit, vectorized_gate)
from .result import VERDICTS, CheckFailure, CheckResult
from .runner import restart as restart_worker
from .runner import run_source
from .speed import speed_gate

__all__ = [
    "CheckResult", "VERDICTS", "exercise", "run", "run_source", "names", "mismatch", "rng",
    "seed", "speed_gate", "vectorized_gate", "lanes_gate", "no_branch_gate", "fma_gate",
    "no_fastmath_gate", "accumulators_gate", "not_blas_gate", "record_order", "require_njit",
    "native_bits", "native_lanes", "CheckFailure", "speed_enforced", "speed_not_judged", "note",
    "get", "current",
    "restart_worker", "Exercise", "earned", "locked", "award", "last",
]

_note = note


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    return get(name)
