"""Grading limits and sizes, and the settings one notebook is graded with."""
from __future__ import annotations

import dataclasses
from typing import Any

__all__ = ["GradeSettings", "CSV_FIELDS", "STAMP_FIELDS", "CELL_TIMEOUT", "NOTEBOOK_TIMEOUT",
           "MEMORY_LIMIT", "MAX_NOTEBOOK_BYTES", "REFUSED"]

CELL_TIMEOUT = 120.0
NOTEBOOK_TIMEOUT = 900.0
MEMORY_LIMIT = 8 << 30          # bytes of address space per check worker (0 = no limit)
MAX_NOTEBOOK_BYTES = 20 << 20  # bigger submissions are refused unread (grade(max_notebook_bytes=))
REFUSED = "refused"             # status of a submission the grader will not read (symlink, size)
MAX_MESSAGE = 500               # characters of a message kept in the CSV/JSON
STAMP_FIELDS = ("cpu", "isa", "cores", "numba", "llvmlite", "numpy")
CSV_FIELDS = ("student", "notebook", "exercise", "points", "max_points", "verdict", "message",
              "flags", "review") + STAMP_FIELDS


@dataclasses.dataclass
class GradeSettings:
    """Limits and context for grading one notebook."""

    cell_timeout: float = CELL_TIMEOUT
    notebook_timeout: float = NOTEBOOK_TIMEOUT
    memory_limit: int = MEMORY_LIMIT
    max_notebook_bytes: int = MAX_NOTEBOOK_BYTES
    exercise_modules: tuple = ()
    sandbox: bool = True            # False: --no-sandbox
    extra_paths: tuple = ()         # folders of extra exercise modules (bound into the sandbox)
    numba_cache: str | None = None  # the seed: a warm numba cache each worker copies (seed._build_seed)
    only: tuple = ()                # grade only these exercises (the re-measurement pass)
    seed: str | None = None         # a class seed each check's seed is derived from (--seed)


def _short(text: Any, n: int = MAX_MESSAGE) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1] + "…"
