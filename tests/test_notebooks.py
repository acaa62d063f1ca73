"""Notebook structure and the student copies.

nbval runs solutions/*.ipynb (strict checks: every check must pass there). Here: the exercise/
check structure of each solution, and every student copy executed end to end — each check
fails with "not implemented" and the hint, and no other cell shows an error.
"""
import json
import os
import re
from pathlib import Path

import nbformat
import pytest

from labkit import check

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = sorted((ROOT / "solutions").glob("*.ipynb"))
STUDENT = sorted((ROOT / "notebooks").glob("*.ipynb"))
CHECK_LINE = re.compile(r"^check\.(\w+)\((\w+)\)\s*$")


def _nbgrader(cell):
    return cell.get("metadata", {}).get("nbgrader", {})


def test_lesson00_exists():
    assert (ROOT / "solutions" / "00_tools.ipynb").exists()


@pytest.mark.parametrize("path", SOLUTIONS, ids=[p.name for p in SOLUTIONS])
def test_solution_structure(path):
    nb = nbformat.read(path, as_version=4)
    first = nb.cells[0]
    assert first.cell_type == "markdown" and first.source.startswith("# "), "starts with a title"
    ex = {_nbgrader(c)["grade_id"][3:] for c in nb.cells
          if _nbgrader(c).get("solution") and _nbgrader(c).get("grade_id", "").startswith("ex-")}
    checks = {}
    for c in nb.cells:
        g = _nbgrader(c)
        if g.get("grade") and not g.get("solution"):
            last = c.source.strip().splitlines()[-1]
            m = CHECK_LINE.match(last)
            assert m, f"{path.name}: check cell {g.get('grade_id')} must end in check.<name>(fn)"
            assert g["grade_id"] == f"check-{m.group(1)}"
            assert g.get("points", 0) > 0 and g.get("locked")
            checks[m.group(1)] = g["points"]
    assert len(checks) >= 2, f"{path.name}: at least two exercises with checks"
    assert ex <= set(checks), f"{path.name}: exercises without a check: {sorted(ex - set(checks))}"
    registered = set(check.names())
    assert set(checks) <= registered, f"unregistered checks: {sorted(set(checks) - registered)}"
    for c in nb.cells:
        if c.cell_type == "code":
            assert c.get("outputs") is not None
    assert any(c.cell_type == "code" and c.outputs for c in nb.cells), "committed with outputs"


def _run(path, tmp_path):
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    env_strict = os.environ.pop("LABKIT_CHECK_STRICT", None)
    try:
        NotebookClient(nb, timeout=300, kernel_name="python3", allow_errors=True,
                       resources={"metadata": {"path": str(tmp_path)}}).execute()
    finally:
        if env_strict is not None:
            os.environ["LABKIT_CHECK_STRICT"] = env_strict
    return nb


@pytest.mark.parametrize("path", STUDENT, ids=[p.name for p in STUDENT])
def test_student_copy_checks_fail_with_hint(path, tmp_path):
    nb = _run(path, tmp_path)
    seen = 0
    for i, c in enumerate(nb.cells):
        if c.cell_type != "code":
            continue
        errors = [o for o in c.outputs if o.output_type == "error"]
        tags = c.metadata.get("tags", [])
        if errors and "raises-exception" not in tags:
            pytest.fail(f"{path.name} cell {i} raised {errors[0].ename}: {errors[0].evalue}\n{c.source}")
        g = _nbgrader(c)
        if g.get("grade") and not g.get("solution"):
            text = "".join(o.get("data", {}).get("text/plain", "") for o in c.outputs
                           if o.output_type in ("execute_result", "display_data"))
            assert text.startswith("✘"), f"{path.name} {g['grade_id']} should fail on the stub: {text!r}"
            assert "not implemented" in text, text
            seen += 1
    assert seen >= 2
