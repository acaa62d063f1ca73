"""Tests for labkit.grade: a tiny fixture course, a class of adversarial submissions, nbgrader.

The fixture course (one solution notebook, two cheap exercises registered by a test-only module
``gradefix_lab`` put on PYTHONPATH for the grader and its kernels) is written by the tests, so
grading the whole class takes a few kernel starts rather than real lab notebooks.
"""
from __future__ import annotations

import copy
import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from labkit import grade
from labkit.release import release_notebook

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable

LAB_MODULE = '''"""Test-only exercises for tests/test_grade.py."""
import numpy as np
from labkit.check import exercise, mismatch, rng


@exercise("gf_add_one", points=1)
def check_add_one(student):
    x = rng().integers(0, 1000, size=50)
    msg = mismatch(student(x.copy()), x + 1, name="out")
    assert msg is None, msg
    return "exact on 50 random values"


@exercise("gf_double", points=2)
def check_double(student):
    x = rng().integers(0, 1000, size=50)
    msg = mismatch(student(x.copy()), 2 * x, name="out")
    assert msg is None, msg
    return "exact on 50 random values"
'''


def _sol(name, body, hint):
    src = (f"def {name}(x):\n    \"\"\"{name.replace('_', ' ')} of an integer array.\"\"\"\n"
           f"    # Hint: {hint}\n    ### BEGIN SOLUTION\n    {body}\n    ### END SOLUTION")
    c = nbformat.v4.new_code_cell(src)
    c.metadata["nbgrader"] = {"grade_id": f"ex-gf_{name}", "solution": True, "grade": False,
                              "locked": False, "schema_version": 3}
    return c


def _chk(name, fn, points):
    c = nbformat.v4.new_code_cell(f"check.gf_{name}({fn})")
    c.metadata["nbgrader"] = {"grade_id": f"check-gf_{name}", "solution": False, "grade": True,
                              "points": points, "locked": True, "schema_version": 3}
    c.metadata["deletable"] = False
    c.metadata["editable"] = False
    return c


def solution_notebook():
    """The fixture course's canonical notebook."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Fixture lesson\nTwo tiny exercises."),
        nbformat.v4.new_code_cell("import numpy as np\nfrom labkit import check\n"
                                  "import gradefix_lab"),
        _sol("add_one", "return x + 1", "add one to every element"),
        _chk("add_one", "add_one", 1),
        nbformat.v4.new_code_cell("print(add_one(np.arange(3)))"),
        _sol("double", "return 2 * x", "multiply by two"),
        _chk("double", "double", 2),
    ]
    return nb


def _set(nb, gid, source):
    nb = copy.deepcopy(nb)
    for c in nb.cells:
        if c.metadata.get("nbgrader", {}).get("grade_id") == gid:
            c.source = source
            return nb
    raise KeyError(gid)


def _fn(name, body):
    return f"def {name}(x):\n    " + body.replace("\n", "\n    ")


# Expected rows: student → {exercise: (points, verdict)}
EXPECTED = {
    "alice": {"gf_add_one": (1, "passed"), "gf_double": (2, "passed")},
    "bob": {"gf_add_one": (0, "not implemented"), "gf_double": (0, "not implemented")},
    "carol": {"gf_add_one": (1, "passed"), "gf_double": (0, "wrong")},
    "dave": {"gf_add_one": (0, "not implemented"), "gf_double": (0, "wrong")},
    "erin": {"gf_add_one": (0, "wrong"), "gf_double": (0, "wrong")},
    "frank": {"gf_add_one": (0, "timed out"), "gf_double": (2, "passed")},
    "gina": {"gf_add_one": (0, "timed out"), "gf_double": (2, "passed")},
    "hank": {"gf_add_one": (0, "crashed"), "gf_double": (2, "passed")},
    "ivan": {"": (0, "unreadable")},
    "judy": {"gf_add_one": (0, "missing"), "gf_double": (2, "passed")},
    "kim": {"": (0, "unreadable")},
    "lena": {"gf_add_one": (0, "error"), "gf_double": (0, "error")},
    "omar": {"gf_add_one": (0, "no result"), "gf_double": (2, "passed")},
    "pete": {"gf_add_one": (0, "wrong"), "gf_double": (2, "passed")},
}


def build_class(root: Path) -> dict:
    """Write the fixture course (solutions/, lab module) and the class of submissions."""
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "gradefix_lab.py").write_text(LAB_MODULE, encoding="utf-8")
    sol = solution_notebook()
    (root / "solutions").mkdir()
    nbformat.write(sol, root / "solutions" / "00_fix.ipynb")
    stub = release_notebook(sol, "00_fix.ipynb")
    subs = root / "subs"
    subs.mkdir()

    def put(name, nb):
        path = subs / name
        path.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, path)

    put("alice.ipynb", sol)                                       # complete
    put("bob.ipynb", stub)                                        # stubs only
    put("carol.ipynb", _set(sol, "ex-gf_double", _fn("double", "return 3 * x")))
    # hard-coded: a stub, check cells rewritten to print ✔ (with fake ✔ outputs, 100 points),
    # and a "solution" that returns a stored array
    dave = _set(stub, "ex-gf_double", _fn("double", "return np.array([0, 2, 4])"))
    for c in dave.cells:
        gid = c.metadata.get("nbgrader", {}).get("grade_id", "")
        if gid.startswith("check-"):
            c.source = f'print("✔ {gid[6:]}: passed — all good")'
            c.metadata["nbgrader"]["points"] = 100
            c.outputs = [nbformat.v4.new_output("stream", name="stdout",
                                                text=f"✔ {gid[6:]}: passed — all good\n")]
    put("dave.ipynb", dave)
    # monkeypatched labkit.check (in memory) + wrong functions
    patch = ("import labkit.check as _c\nfrom labkit.check import CheckResult\n"
             "def _win(self, student=None, *a, **k):\n"
             "    return CheckResult(self.name, True, self.points, self.points, 'passed', 'ok')\n"
             "_c.Exercise.__call__ = _win\n"
             "_c.run = lambda name, student, **k: _win(_c.get(name), student)\n"
             "check.run = _c.run\n")
    erin = _set(sol, "ex-gf_add_one", patch + _fn("add_one", "return x"))
    put("erin.ipynb", _set(erin, "ex-gf_double", _fn("double", "return x")))
    # infinite loop (interruptible) in the first exercise; the second is right
    put("frank.ipynb", _set(sol, "ex-gf_add_one", _fn("add_one", "while True:\n    pass")))
    # a loop that ignores the interrupt: the kernel must be restarted and earlier cells replayed
    put("gina.ipynb", _set(sol, "ex-gf_add_one", _fn(
        "add_one", "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                   "while True:\n    pass")))
    # the kernel dies in the first check
    put("hank.ipynb", _set(sol, "ex-gf_add_one", _fn("add_one", "import os\nos._exit(3)")))
    (subs / "ivan.ipynb").write_text('{"cells": [ {"source": "oops"', encoding="utf-8")
    # one folder per student: the exercise cell renamed (missing), file named like the lesson
    judy = copy.deepcopy(sol)
    for c in judy.cells:
        if c.metadata.get("nbgrader", {}).get("grade_id") == "ex-gf_add_one":
            c.metadata["nbgrader"]["grade_id"] = "ex-my_own_name"
    put("judy/00_fix.ipynb", judy)
    (subs / "kim").mkdir()                                        # a folder with no notebook
    # a memory blow-up, stopped by the kernel's address-space limit (a MemoryError, no swap
    # storm); and a syntax error in the other exercise cell
    lena = _set(sol, "ex-gf_add_one", _fn("add_one", "big = bytearray(3 << 30)\nreturn x + 1"))
    put("lena.ipynb", _set(lena, "ex-gf_double", "def double(x):\n    return x +"))
    # a syntax error in the exercise cell
    # rewrites the grader's result line on its way out: the HMAC no longer matches
    forge = ("import sys\n"
             "class _Forge:\n"
             "    def __init__(self, w):\n        self.w = w\n"
             "    def write(self, t):\n"
             "        return self.w.write(t.replace('\"passed\": false', '\"passed\": true')\n"
             "                            .replace('\"verdict\": \"wrong\"', "
             "'\"verdict\": \"passed\"'))\n"
             "    def __getattr__(self, k):\n        return getattr(self.w, k)\n"
             "sys.stdout = _Forge(sys.stdout)\n")
    # tries to make the grader's check raise instead of returning its verdict, and to pin the seed
    pete = ("import os\nos.environ['LABKIT_CHECK_STRICT'] = '1'\n"
            "os.environ['LABKIT_SEED'] = '0'\n" + _fn("add_one", "return x + 2"))
    put("pete.ipynb", _set(sol, "ex-gf_add_one", pete))
    omar = _set(sol, "ex-gf_add_one", forge + _fn("add_one", "return x"))
    # ~2 MB printed during the check: the report keeps the verdict, drops the flood
    put("omar.ipynb", _set(omar, "ex-gf_double", _fn(
        "double", "for _ in range(2000):\n    print('y' * 1000)\nreturn 2 * x")))
    return {"solutions": root / "solutions", "subs": subs, "pkg": root / "pkg"}


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """The fixture course and class on disk."""
    return build_class(tmp_path_factory.mktemp("gradecourse"))


@pytest.fixture(scope="module")
def graded(course):
    """Grade the class once, end to end through `python -m labkit grade`."""
    out = course["subs"].parent / "grades.csv"
    js = course["subs"].parent / "grades.json"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(course["pkg"]), str(ROOT)]))
    proc = subprocess.run(
        [PY, "-m", "labkit", "grade", str(course["subs"]), "--out", str(out), "--json", str(js),
         "--jobs", "2", "--memory-limit", "2G", "--cell-timeout", "5", "--notebook-timeout", "120",
         "--solutions", str(course["solutions"]), "--exercise-module", "gradefix_lab",
         "--no-progress"],
        capture_output=True, text=True, env=env, timeout=600, cwd=str(course["subs"].parent))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with open(out, newline="", encoding="utf-8") as f:
        table = list(csv.DictReader(f))
    return {"rows": table, "json": json.loads(js.read_text()), "stdout": proc.stdout}


def test_every_submission_gets_the_expected_rows(graded):
    got: dict = {}
    for r in graded["rows"]:
        got.setdefault(r["student"], {})[r["exercise"]] = (float(r["points"]), r["verdict"])
    assert got == {s: {k: (float(p), v) for k, (p, v) in ex.items()}
                   for s, ex in EXPECTED.items()}


def test_rows_carry_max_points_and_clear_messages(graded):
    by = {(r["student"], r["exercise"]): r for r in graded["rows"]}
    assert by[("alice", "gf_double")]["max_points"] == "2"
    assert by[("dave", "gf_add_one")]["max_points"] == "1"          # not the forged 100
    assert "out[" in by[("carol", "gf_double")]["message"]
    assert "add one to every element" in by[("bob", "gf_add_one")]["message"]
    assert "within 5 s" in by[("frank", "gf_add_one")]["message"]
    assert "kernel died" in by[("hank", "gf_add_one")]["message"]
    assert "invalid JSON" in by[("ivan", "")]["message"]
    assert by[("ivan", "")]["max_points"] == "3"                     # matched by single course
    assert "ex-gf_add_one" in by[("judy", "gf_add_one")]["message"]
    assert "no notebook" in by[("kim", "")]["message"]
    assert "MemoryError" in by[("lena", "gf_add_one")]["message"]
    assert "SyntaxError" in by[("lena", "gf_double")]["message"]
    assert set(graded["rows"][0]) == set(grade.CSV_FIELDS)


def test_flags_point_the_instructor_at_suspicious_cells(graded):
    by = {(r["student"], r["exercise"]): r for r in graded["rows"]}
    assert "touches labkit.check" in by[("erin", "gf_add_one")]["flags"]
    assert "was edited" in by[("dave", "gf_add_one")]["flags"]
    assert "points changed to 100" in by[("dave", "gf_add_one")]["flags"]
    assert by[("alice", "gf_add_one")]["flags"] == ""


def test_json_has_full_detail_and_summary_prints_totals(graded):
    subs = {(s["student"], s["notebook"]): s for s in graded["json"]["submissions"]}
    gina = subs[("gina", "gina.ipynb")]
    assert gina["kernel_restarts"] >= 1
    assert any(c.get("status") == "stuck" for c in gina["cells"])
    frank = subs[("frank", "frank.ipynb")]
    assert [c["status"] for c in frank["cells"] if c["cell"] == 4] == ["skipped"]
    assert 6 in subs[("omar", "omar.ipynb")]["truncated_output_cells"]
    assert len(json.dumps(graded["json"])) < 200_000 * 4
    hank = subs[("hank", "hank.ipynb")]
    assert hank["kernel_restarts"] >= 1
    assert subs[("judy", "judy/00_fix.ipynb")]["canonical"] == "00_fix.ipynb"
    seeds = [e["seed"] for s in subs.values() for e in s["exercises"] if e.get("seed")]
    assert len(set(seeds)) == len(seeds) > 5                         # a fresh seed per check
    out = graded["stdout"]
    assert "alice" in out and "3 / 3" in out and "kim" in out
    assert "gf_double: " in out


def test_editing_labkit_on_disk_stops_the_batch(tmp_path):
    course = build_class(tmp_path)
    subs = tmp_path / "tamper"
    subs.mkdir()
    sol = solution_notebook()
    evil = _set(sol, "ex-gf_add_one", "import gradefix_lab, pathlib\n"
                "_p = pathlib.Path(gradefix_lab.__file__)\n"
                "_p.write_text(_p.read_text() + '\\n# changed\\n')\n"
                + _fn("add_one", "return x + 1"))
    nbformat.write(evil, subs / "a_evil.ipynb")
    nbformat.write(sol, subs / "b_fine.ipynb")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(course["pkg"]), str(ROOT)]))
    out = tmp_path / "g.csv"
    proc = subprocess.run(
        [PY, "-m", "labkit", "grade", str(subs), "--out", str(out), "--solutions",
         str(course["solutions"]), "--exercise-module", "gradefix_lab", "--no-progress"],
        capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "STOPPED" in proc.stderr and "a_evil" in proc.stderr
    with open(out, newline="", encoding="utf-8") as f:
        table = list(csv.DictReader(f))
    assert {r["student"] for r in table} == {"a_evil"}
    assert all("tampered" in r["flags"] for r in table)


# ------------------------------------------------------------------ no kernel needed
def test_parse_check_line_forms():
    assert grade.parse_check_line("x = 1\ncheck.colsum(colsum)") == ("colsum", "colsum", [])
    assert grade.parse_check_line("labkit.check.dot(f, 3)\n# end") == ("dot", "f", ["3"])
    assert grade.parse_check_line('check.run("dot", mod.f)') == ("dot", "mod.f", [])
    for bad in ("print(1)", "check.dot()", "", "check.dot(f"):
        with pytest.raises(ValueError, match="check"):
            grade.parse_check_line(bad)


def test_built_notebook_takes_only_solution_cells_from_the_student(course):
    canon = grade.load_canonical(course["solutions"] / "00_fix.ipynb")
    canon.exercises[0].module = canon.exercises[1].module = "gradefix_lab"
    student = _set(solution_notebook(), "ex-gf_double", "def double(x):\n    return x")
    student.cells[1].source = "import labkit.check; FAKE = 1"      # a canonical cell, edited
    student.cells[3].source = "print('✔')"                          # the check cell, edited
    nb, plan, pre = grade.build_notebook(canon, student)
    assert nb.cells[1].source == canon.nb.cells[1].source
    assert nb.cells[5].source == "def double(x):\n    return x"
    assert [p.kind for p in plan] == ["skip", "code", "solution", "check", "code", "solution",
                                      "check"]
    chk = nb.cells[3].source
    assert plan[3].nonce in chk and "check.run('gf_add_one', _fn)" in chk
    assert str(plan[3].seed) in chk and plan[3].seed != plan[6].seed
    assert "print('✔')" not in chk
    assert pre["missing"] == {} and "edited" in pre["flags"]["gf_add_one"][0]
    student.cells[3].source = "# NBVAL_IGNORE_OUTPUT\n\ncheck.gf_add_one(add_one)  # mine"
    assert "gf_add_one" not in grade.build_notebook(canon, student)[2]["flags"]
    canon.nb.cells[4].metadata["tags"] = ["slow-demo"]
    _, plan, _ = grade.build_notebook(canon, student, skip_tags=["slow-demo"])
    assert plan[4].kind == "skip"


def test_result_line_needs_nonce_and_key():
    plan = grade._Plan("check", "ex", nonce="n" * 32, key="k" * 64, seed=1)
    import hashlib
    import hmac
    payload = json.dumps({"name": "ex", "passed": True, "points": 1, "max_points": 1})
    good = hmac.new(plan.key.encode(), payload.encode(), hashlib.sha256).hexdigest()
    cell = {"outputs": [{"output_type": "stream", "name": "stdout",
                         "text": f"{plan.nonce} {'0' * 64} {payload}\n"}]}
    assert grade._parse_result(cell, plan) is None                   # forged mac
    cell["outputs"][0]["text"] = f"{plan.nonce} {good} {payload}\n"
    assert grade._parse_result(cell, plan)["passed"] is True


def test_matching_and_discovery(course, tmp_path):
    canon = grade.load_solutions(course["solutions"])
    nb = solution_notebook()
    assert grade.match_canonical(nb, Path("whatever.ipynb"), canon).name == "00_fix.ipynb"
    assert grade.match_canonical(None, Path("x/00_other.ipynb"), canon).name == "00_fix.ipynb"
    empty = nbformat.v4.new_notebook()
    two = {**canon, "01_b.ipynb": canon["00_fix.ipynb"]}
    assert grade.match_canonical(empty, Path("zz.ipynb"), two) is None
    assert grade.match_canonical(empty, Path("student01_x.ipynb"), two) is None  # NN_ = prefix
    subs = grade.find_submissions(course["subs"])
    assert {s.student for s in subs} == set(EXPECTED)
    with pytest.raises(FileNotFoundError, match="not a folder"):
        grade.find_submissions(tmp_path / "nope")


def test_cli_usage_errors(tmp_path, capsys):
    assert grade.main([str(tmp_path / "nope"), "--solutions", str(tmp_path)]) == 2
    assert "labkit grade:" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        grade.main([str(tmp_path), "--memory-limit", "lots"])


def test_repo_solutions_are_gradable():
    """Every solutions/*.ipynb parses for the grader: check lines, registered exercises, stubs."""
    paths = sorted((ROOT / "solutions").glob("*.ipynb"))
    if not paths:
        pytest.skip("no solutions/*.ipynb in the repo yet")
    for path in paths:
        canon = grade.load_canonical(path)
        grade._resolve_modules(canon)                                # each exercise registered
        released = release_notebook(canon.nb, path.name)
        assert grade.match_canonical(released, Path("alice.ipynb"),
                                     grade.load_solutions(ROOT / "solutions")) is not None
        nb, plan, pre = grade.build_notebook(canon, released)
        assert pre["missing"] == {}, f"{path.name}: {pre['missing']}"
        assert sum(p.kind == "check" for p in plan) == len(canon.exercises)
        for ex in canon.exercises:
            assert ex.solution_id, f"{path.name}: check-{ex.name} has no cell ex-{ex.name}"


# ------------------------------------------------------------------ nbgrader compatibility
def test_nbgrader_metadata_schema_accepts_released_and_solution(course):
    pytest.importorskip("nbgrader", reason="nbgrader is not installed (pip install nbgrader)")
    from nbgrader.nbgraderformat import MetadataValidator

    sol = nbformat.read(course["solutions"] / "00_fix.ipynb", as_version=4)
    released = release_notebook(sol, "00_fix.ipynb")
    real = sorted((ROOT / "solutions").glob("*.ipynb"))
    for nb in [sol, released] + [nbformat.read(p, as_version=4) for p in real]:
        MetadataValidator().validate_nb(nb)                          # raises on bad metadata


def test_nbgrader_validate_runs_solution_and_released(course, tmp_path, monkeypatch):
    pytest.importorskip("nbgrader", reason="nbgrader is not installed (pip install nbgrader)")
    from nbgrader.validator import Validator

    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(course["pkg"]), str(ROOT)]))
    # nbgrader scores a test cell by whether it raises: LABKIT_CHECK_STRICT=1 makes checks raise
    monkeypatch.setenv("LABKIT_CHECK_STRICT", "1")
    sol = nbformat.read(course["solutions"] / "00_fix.ipynb", as_version=4)
    nbformat.write(sol, tmp_path / "solution.ipynb")
    nbformat.write(release_notebook(sol, "00_fix.ipynb"), tmp_path / "released.ipynb")
    v = Validator()
    assert v.validate(str(tmp_path / "solution.ipynb")) == {}        # every check cell passes
    res = v.validate(str(tmp_path / "released.ipynb"))
    assert "type_changed" not in res and "changed" not in res
    assert len(res["failed"]) == 2                                    # both stubs fail
    assert "not implemented" in res["failed"][0]["raw_error"]
