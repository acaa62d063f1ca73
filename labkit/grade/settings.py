"""Grading limits and sizes, and the settings one notebook is graded with."""
from __future__ import annotations

import dataclasses
from typing import Any

__all__ = ["GradeSettings", "CSV_FIELDS", "CELL_TIMEOUT", "NOTEBOOK_TIMEOUT", "MEMORY_LIMIT"]

CELL_TIMEOUT = 120.0
NOTEBOOK_TIMEOUT = 900.0
MEMORY_LIMIT = 8 << 30          # bytes of address space per kernel (0 = no limit)
MAX_MESSAGE = 500               # characters of a message kept in the CSV/JSON
MAX_CELL_OUTPUT = 200_000       # characters of output kept per cell (the rest is dropped)
MAX_RESTARTS = 3                # kernel restarts per notebook before the rest is "not run"
CSV_FIELDS = ("student", "notebook", "exercise", "points", "max_points", "verdict", "message",
              "flags")


@dataclasses.dataclass
class GradeSettings:
    """Execution limits for one notebook."""

    cell_timeout: float = CELL_TIMEOUT
    notebook_timeout: float = NOTEBOOK_TIMEOUT
    memory_limit: int = MEMORY_LIMIT
    skip_tags: tuple = ()
    exercise_modules: tuple = ()
    digest: dict | None = None
    digest_modules: tuple = ()


def _short(text: Any, n: int = MAX_MESSAGE) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1] + "…"
