"""Grade a folder of student notebooks headlessly: ``labkit grade DIR --out grades.csv``.

Each submission is matched to its canonical notebook in ``solutions/`` and the notebook that
actually runs is rebuilt from the canonical copy: every cell comes from the instructor's version
except the exercise cells (nbgrader ``solution: true``), which are the student's cells with the
same ``grade_id``, and the check cells, which are replaced by the grader's own code. That code
drops every ``labkit`` module from ``sys.modules`` and imports ``labkit.check`` afresh from disk
(so in-memory monkeypatching is undone), sets a fresh secret ``LABKIT_SEED``, runs
``check.run(name, fn)`` and prints one line ``<nonce> <hmac> <json>``; the grader reads that
line only from the same cell's outputs and only with that cell's nonce and key. Outputs,
check cells and metadata left in the submission are never trusted.

Every notebook runs in a fresh kernel in its own temporary directory with ``LABKIT_GRADING=1``,
per-cell and per-notebook timeouts and an address-space limit; timeouts interrupt the kernel
(restart if it does not answer), a dead kernel is restarted and the earlier cells replayed, and
the batch always goes on. See ``docs/grading.md`` for what this does and does not protect
against.

The package knows no lab (the lab-module flag is built from :mod:`labkit.registry`). Its parts:
``settings`` (limits, :class:`GradeSettings`), ``notebooks`` (canonical notebooks, submissions,
matching), ``build`` (the notebook that runs, flags), ``checkcell`` (the one place grading calls
``labkit.check``: the check cell's code and reading its signed result), ``kernel`` (the kernel
session), ``integrity`` (tamper hashes), ``run`` (one notebook, the batch), ``report`` (CSV,
JSON, summary), ``cli`` (``labkit grade``).
"""
from __future__ import annotations

from .settings import (CELL_TIMEOUT, CSV_FIELDS, MAX_CELL_OUTPUT, MAX_MESSAGE, MAX_RESTARTS,
                       MEMORY_LIMIT, NOTEBOOK_TIMEOUT, GradeSettings, _short)
from .notebooks import (_NN, Canonical, ExerciseSpec, Submission, _nbg, _read_submission,
                        find_submissions, load_canonical, load_solutions, match_canonical,
                        parse_check_line)
from .checkcell import _check_cell_source, _parse_result, _resolve_modules
from .build import _FLAG_PATTERNS, _LAB_MODULE, _Plan, _code_lines, _flags_for, build_notebook
from .kernel import _make_client_class, _Session
from .integrity import _package_digest
from .run import _execute, _grade_task, _not_run, _row, _verdict_row, grade, grade_notebook
from .report import rows, summary, write_csv, write_json
from .cli import _size, main

__all__ = [
    "ExerciseSpec", "Canonical", "Submission", "GradeSettings", "parse_check_line",
    "load_canonical", "load_solutions", "find_submissions", "match_canonical",
    "build_notebook", "grade_notebook", "grade", "rows", "write_csv", "write_json",
    "summary", "main", "CSV_FIELDS",
]
