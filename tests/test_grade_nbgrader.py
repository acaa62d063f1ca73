"""Real nbgrader (``generate_assignment``, ``autograde``, ``export``) on labkit notebooks.

nbgrader is run as a subprocess with the venv's ``bin/`` first on PATH (its
``generate_assignment`` starts ``alembic`` by name: without that, ``FileNotFoundError``).
On the fixture lesson: the solution scores full, labkit's student copy (the stub) zero, and
autograde warns neither about checksums nor about outputs that "cannot be converted to a
float". On every real lab: each locked cell of labkit's student copy has the checksum nbgrader
records for it (a submission made from ``notebooks/`` raises no checksum warning).
"""
from __future__ import annotations

import copy
import csv
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from test_grade import LAB_MODULE, solution_notebook

pytest.importorskip("nbgrader", reason="nbgrader is not installed (pip install nbgrader)")

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def _nbgrader(course: Path, *args, env=None, timeout=600) -> subprocess.CompletedProcess:
    env = dict(env or os.environ)
    env["PATH"] = str(BIN) + os.pathsep + env.get("PATH", "")       # the PATH quirk
    return subprocess.run([str(BIN / "nbgrader"), *args], cwd=str(course), env=env,
                          capture_output=True, text=True, timeout=timeout)


def _course(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "nbgrader_config.py").write_text(
        "c = get_config()\nc.CourseDirectory.course_id = 'labkit'\n"
        f"c.CourseDirectory.root = {str(root)!r}\n", encoding="utf-8")
    return root


def _fill(student_copy, solution):
    """The student copy with the solution's exercise cells (an honest, complete student)."""
    nb = copy.deepcopy(student_copy)
    sols = {(c.metadata.get("nbgrader") or {}).get("grade_id"): c.source
            for c in solution.cells if (c.metadata.get("nbgrader") or {}).get("solution")}
    for c in nb.cells:
        gid = (c.metadata.get("nbgrader") or {}).get("grade_id")
        if gid in sols:
            c.source = sols[gid]
    return nb


def _text_plain_is_points() -> bool:
    from labkit.check import CheckResult
    r = CheckResult("x", True, 2.0, 2.0, "passed", "ok")
    os.environ["NBGRADER_EXECUTION"] = "autograde"
    try:
        bundle = r._repr_mimebundle_() if hasattr(r, "_repr_mimebundle_") else {}
    finally:
        del os.environ["NBGRADER_EXECUTION"]
    return isinstance(bundle, dict) and str(bundle.get("text/plain", "")).strip() in ("2", "2.0")


def test_generate_autograde_export_on_a_lab(tmp_path):
    from labkit.release import release_notebook

    course = _course(tmp_path / "course")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "gradefix_lab.py").write_text(LAB_MODULE, encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path / "pkg"), str(ROOT)]))
    sol = solution_notebook()
    (course / "source" / "lab").mkdir(parents=True)
    nbformat.write(sol, course / "source" / "lab" / "00_fix.ipynb")
    gen = _nbgrader(course, "generate_assignment", "lab", "--force", env=env)
    assert gen.returncode == 0, gen.stdout + gen.stderr
    assert (course / "release" / "lab" / "00_fix.ipynb").is_file()
    stub = release_notebook(sol, "00_fix.ipynb")                      # labkit's student copy
    for student, nb in (("alice", _fill(stub, sol)), ("bob", stub)):
        d = course / "submitted" / student / "lab"
        d.mkdir(parents=True)
        nbformat.write(nb, d / "00_fix.ipynb")
    auto = _nbgrader(course, "autograde", "lab", "--force", env=env)
    log = auto.stdout + auto.stderr
    assert auto.returncode == 0, log
    assert "checksum" not in log.lower(), log
    exp = _nbgrader(course, "export", env=env)
    assert exp.returncode == 0, exp.stdout + exp.stderr
    with open(course / "grades.csv", newline="", encoding="utf-8") as f:
        scores = {r["student_id"]: (float(r["score"]), float(r["max_score"]))
                  for r in csv.DictReader(f)}
    assert scores == {"alice": (3.0, 3.0), "bob": (0.0, 3.0)}
    assert _text_plain_is_points()          # nbgrader reads a grade cell's output as its points
    assert "cannot be converted to a float" not in log, log


def test_student_copies_match_nbgrader_checksums(tmp_path):
    """Every locked cell of labkit's student copy of each real lab has the checksum nbgrader
    generates for it, so autograde sees no changed cell in an untouched submission."""
    from nbgrader.utils import compute_checksum

    from labkit.release import release_notebook

    paths = sorted((ROOT / "solutions").glob("*.ipynb"))
    if not paths:
        pytest.skip("no solutions/*.ipynb yet")
    course = _course(tmp_path / "course")
    (course / "source" / "lab").mkdir(parents=True)
    for p in paths:
        nbformat.write(nbformat.read(p, as_version=4), course / "source" / "lab" / p.name)
    gen = _nbgrader(course, "generate_assignment", "lab", "--force")
    assert gen.returncode == 0, gen.stdout + gen.stderr
    bad = []
    for p in paths:
        theirs = nbformat.read(course / "release" / "lab" / p.name, as_version=4)
        want = {(c.metadata.get("nbgrader") or {}).get("grade_id"):
                c.metadata["nbgrader"].get("checksum") for c in theirs.cells
                if (c.metadata.get("nbgrader") or {}).get("locked")
                or (c.metadata.get("nbgrader") or {}).get("grade")}
        mine = release_notebook(nbformat.read(p, as_version=4), p.name)
        for c in mine.cells:
            gid = (c.metadata.get("nbgrader") or {}).get("grade_id")
            if gid in want and want[gid] and compute_checksum(c) != want[gid]:
                bad.append(f"{p.name}:{gid}")
    assert bad == [], f"labkit's student copy differs from nbgrader's release in: {bad}"
