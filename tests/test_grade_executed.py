"""Gates on the code that runs, and delegation beyond ``answers=``, as the grader sees them:
lesson 00 submissions graded sandboxed — one whose colsum hides its vector loop behind a branch
the hidden inputs never take, one whose colsum calls the check's own comparator (imported in a
plain cell), and an honest one. The cheats get 0 for colsum and keep the rest; the honest
student keeps full marks."""
from __future__ import annotations

import csv
import inspect
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from test_grade import require_sandbox

from tests.fakes import colsum_dead_vector

ROOT = Path(__file__).resolve().parent.parent

# the cell text of the student whose colsum hides its vector loop behind a branch never taken
DEAD_BRANCH = inspect.getsource(colsum_dead_vector.py_func).replace(
    "def colsum_dead_vector(", "def colsum(").rstrip("\n")

COMPARATOR = '''def colsum(a):
    """Column sums of a 2-D float64 array."""
    return their_reference(a)'''


def _with_colsum(nb, source, extra_cell=None):
    nb = nbformat.from_dict(nb)
    for i, c in enumerate(nb.cells):
        if c.metadata.get("nbgrader", {}).get("grade_id") == "ex-colsum":
            c.source = source
            if extra_cell:
                nb.cells.insert(i, nbformat.v4.new_code_cell(extra_cell))
            return nb
    raise KeyError("ex-colsum")


@pytest.mark.full      # grades three lesson-00 notebooks in the sandbox (~1 min)
def test_gates_on_executed_code_and_off_limits_labkit_functions_when_grading(tmp_path):
    require_sandbox()
    sol = nbformat.read(ROOT / "solutions" / "00_tools.ipynb", as_version=4)
    subs = tmp_path / "subs"
    for who in ("honest", "deadbranch", "comparator"):
        (subs / who).mkdir(parents=True)
    shutil.copy(ROOT / "solutions" / "00_tools.ipynb", subs / "honest" / "00_tools.ipynb")
    nbformat.write(_with_colsum(sol, DEAD_BRANCH), subs / "deadbranch" / "00_tools.ipynb")
    nbformat.write(_with_colsum(sol, COMPARATOR,
                                "from labkit.lesson00 import colsum_reference as their_reference"),
                   subs / "comparator" / "00_tools.ipynb")
    out = tmp_path / "grades.csv"
    proc = subprocess.run([sys.executable, "-m", "labkit", "grade", str(subs), "--out", str(out),
                           "--no-progress", "--no-cache"], capture_output=True, text=True,
                          timeout=1200, cwd=str(tmp_path))
    assert out.exists(), proc.stdout[-2000:] + proc.stderr[-2000:]
    rows = {(r["student"], r["exercise"]): r for r in csv.DictReader(out.open())}
    assert rows[("deadbranch", "colsum")]["verdict"] == "not vectorised", rows[("deadbranch", "colsum")]
    assert "never ran" in rows[("deadbranch", "colsum")]["message"]
    assert rows[("comparator", "colsum")]["verdict"] == "uses labkit's answer"
    assert "colsum_reference" in rows[("comparator", "colsum")]["message"]
    for who in ("deadbranch", "comparator"):
        assert float(rows[(who, "colsum")]["points"]) == 0
    honest = {ex: r for (s, ex), r in rows.items() if s == "honest"}
    for ex in ("colsum", "softsign", "dot_partials"):
        assert honest[ex]["verdict"] in ("passed", "inconclusive"), honest[ex]
    for who in ("deadbranch", "comparator"):          # the rest of their work keeps its points
        assert rows[(who, "softsign")]["verdict"] == "passed", rows[(who, "softsign")]
