"""Grade a folder of student notebooks headlessly: ``labkit grade DIR --out grades.csv``.

Nothing of a student's notebook runs in the grader, and no notebook is executed. Each
submission is matched to its lab by content (grade ids, exercise function names, headings —
never the file name); for each exercise the grader reads the student's exercise cell (by
``grade_id``; with stripped metadata, the cell defining the exercise's function — flagged), the
import statements of the notebook's other code cells and the plain constants the cell reads,
and hands them to :func:`labkit.check.run_source`: labkit's trusted check worker loads only the
cell's definitions, runs the check with fresh secret inputs and answers over its pipe. The
worker is started once per submission inside a bubblewrap sandbox (:mod:`.sandbox`:
unprivileged uid, no network, private /tmp and HOME, labkit and the venv read-only, solutions
and other submissions absent, a PID namespace, resource limits). Every file of the installed
labkit is hashed before and after each submission; a change zeroes that submission, is
flagged, is undone from the snapshot, and the batch goes on. See ``docs/grading.md`` for what
this does and does not protect against.

Parts: ``settings`` (limits, :class:`GradeSettings`), ``notebooks`` (canonical notebooks,
submissions, matching by content), ``build`` (reading a submission statically: exercise
cells, imports, constants, flags), ``checkcell`` (the one place grading calls
``labkit.check``), ``sandbox`` (bwrap), ``integrity`` (the snapshot of labkit), ``run`` (one
notebook, the batch: cache, duplicates, progress), ``report`` (CSV, wide CSV, JSON, summary),
``pages`` (feedback and class report HTML), ``cli`` (``labkit grade``).
"""
from __future__ import annotations

from .settings import (CELL_TIMEOUT, CSV_FIELDS, MAX_MESSAGE, MEMORY_LIMIT, NOTEBOOK_TIMEOUT,
                       STAMP_FIELDS, GradeSettings, _short)
from .notebooks import (_NN, Canonical, ExerciseSpec, Submission, _nbg, _read_submission,
                        find_submissions, load_canonical, load_solutions, match_canonical,
                        parse_check_line)
from .build import _FLAG_PATTERNS, _LAB_MODULE, FoundCell, _code_lines, _flags_for, read_exercises
from .checkcell import _resolve_modules, run_exercise
from .integrity import Snapshot
from .run import (SandboxUnavailable, _grade_task, _not_run, _row, _verdict_row,
                  environment_stamp, grade_notebook)
from .batch import grade
from .report import rows, summary, wide_rows, write_csv, write_json, write_wide_csv
from .pages import write_feedback, write_pages, write_report
from .cli import _size, main

__all__ = [
    "ExerciseSpec", "Canonical", "Submission", "GradeSettings", "parse_check_line",
    "load_canonical", "load_solutions", "find_submissions", "match_canonical",
    "read_exercises", "FoundCell", "grade_notebook", "grade", "rows", "write_csv",
    "write_wide_csv", "write_json", "write_pages", "write_report", "write_feedback",
    "summary", "main", "CSV_FIELDS", "STAMP_FIELDS", "SandboxUnavailable", "Snapshot",
    "environment_stamp",
]
