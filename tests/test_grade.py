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
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from labkit import grade
from labkit.release import release_notebook
from tooling import load_tool

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable

LAB_MODULE = '''"""Test-only exercises for tests/test_grade.py."""
import numpy as np
from labkit.check import exercise, mismatch, rng


def ref_add_one(x):
    """The lab's own answer (a student delegating to it gets `uses labkit's answer`)."""
    return x + 1


@exercise("gf_add_one", points=1, answers=("gradefix_lab:ref_add_one",))
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


def require_sandbox():
    """Fail when bubblewrap cannot sandbox here (grading without it is refused), or skip where
    LABKIT_ALLOW_NO_SANDBOX=1 says the machine cannot run it."""
    from labkit.grade import sandbox
    ok, why = sandbox.probe()
    if not ok:
        if os.environ.get("LABKIT_ALLOW_NO_SANDBOX") == "1":
            pytest.skip(f"no sandbox here: {why}")
        pytest.fail(f"the grading sandbox does not work on this machine: {why}")


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
    "judy": {"gf_add_one": (1, "passed"), "gf_double": (2, "passed")},
    "kim": {"": (0, "unreadable")},
    "lena": {"gf_add_one": (0, "error"), "gf_double": (0, "error")},
    "omar": {"gf_add_one": (0, "wrong"), "gf_double": (2, "passed")},
    "pete": {"gf_add_one": (0, "wrong"), "gf_double": (2, "passed")},
    "quin": {"gf_add_one": (1, "passed"), "gf_double": (2, "passed")},
    "rosa": {"gf_add_one": (1, "passed"), "gf_double": (2, "passed")},
    "sam": {"gf_add_one": (1, "passed"), "gf_double": (2, "passed")},
}


def _strip_metadata(nb):
    nb = copy.deepcopy(nb)
    for c in nb.cells:
        c.metadata = {}
    return nb


#: tools/grade_demo_class.py's kinds of student that this class has no student of its own for
#: (the others: alice complete — kept, the classmate cheat looks for a "complete" notebook —,
#: quin stripped metadata, rosa renamed file + -Copy1, judy renamed grade id, dave hard-coded,
#: erin monkeypatch, frank loop, hank exit, ivan malformed)
DEMO_KINDS = ("complete", "edited-checks", "answer-key", "classmate", "tamper-disk",
              "tamper-restore", "detached", "network", "root", "delegate-wrapper",
              "delegate-alias", "delegate-getattr", "forge-json", "forge-clock", "forge-hook")


def demo_tool():
    """tools/grade_demo_class.py as a module."""
    return load_tool("grade_demo_class")


def build_class(root: Path, demo: bool = False) -> dict:
    """Write the fixture course (solutions/ beside a private copy of labkit — the grader
    hashes and may restore every labkit file: a copy keeps that away from the working tree —
    and the lab module) and the class of submissions; with ``demo``, tools/grade_demo_class.py's
    students of :data:`DEMO_KINDS` join the class (their expectations in ``"demo"``)."""
    (root / "pkg").mkdir(parents=True)
    shutil.copytree(ROOT / "labkit", root / "lk" / "labkit",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (root / "pkg" / "gradefix_lab.py").write_text(LAB_MODULE, encoding="utf-8")
    sol = solution_notebook()
    sols = root / "lk" / "solutions"          # beside labkit, as in a checkout (answer-key cheat)
    sols.mkdir()
    nbformat.write(sol, sols / "00_fix.ipynb")
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
    # infinite loop in the first exercise; the second is right
    put("frank.ipynb", _set(sol, "ex-gf_add_one", _fn("add_one", "while True:\n    pass")))
    # a loop that ignores SIGINT: the worker is killed, not interrupted (it sleeps: frank
    # already spins a core for the whole timeout)
    put("gina.ipynb", _set(sol, "ex-gf_add_one", _fn(
        "add_one", "import signal\nimport time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                   "while True:\n    time.sleep(0.5)")))
    # the worker dies in the first check
    put("hank.ipynb", _set(sol, "ex-gf_add_one", _fn("add_one", "import os\nos._exit(3)")))
    (subs / "ivan.ipynb").write_text('{"cells": [ {"source": "oops"', encoding="utf-8")
    # one folder per student: the exercise cell's grade_id renamed → found by its function
    # name, graded, flagged
    judy = copy.deepcopy(sol)
    for c in judy.cells:
        if c.metadata.get("nbgrader", {}).get("grade_id") == "ex-gf_add_one":
            c.metadata["nbgrader"]["grade_id"] = "ex-my_own_name"
    put("judy/00_fix.ipynb", judy)
    (subs / "kim").mkdir()                                        # a folder with no notebook
    # a memory blow-up, stopped by the worker's address-space limit (a MemoryError, no swap
    # storm); and a syntax error in the other exercise cell
    lena = _set(sol, "ex-gf_add_one", _fn("add_one", "big = bytearray(3 << 30)\nreturn x + 1"))
    put("lena.ipynb", _set(lena, "ex-gf_double", "def double(x):\n    return x +"))
    # rewrites stdout (the old grader's result line): irrelevant now, the verdict never passes
    # through a student's output
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
    # ~2 MB printed during the check: discarded, the verdict stands
    put("omar.ipynb", _set(omar, "ex-gf_double", _fn(
        "double", "for _ in range(2000):\n    print('y' * 1000)\nreturn 2 * x")))
    # honest mishaps: stripped cell metadata; a lab saved under another name beside a stub copy
    put("quin.ipynb", _strip_metadata(sol))
    put("rosa/99_other_lab.ipynb", sol)
    put("rosa/99_other_lab-Copy1.ipynb", stub)
    # honest mishaps: the kernel renamed (and the check call edited to match); a helper
    # written in an earlier cell that the exercise calls
    sam = _set(sol, "ex-gf_add_one", _fn("add_one_v2", "return x + 1"))
    sam = _set(sam, "check-gf_add_one", "check.gf_add_one(add_one_v2)")
    sam.cells[4].source = "def _times(x, k):\n    return k * x"
    put("sam.ipynb", _set(sam, "ex-gf_double", _fn("double", "return _times(x, 2)")))
    pairs = []
    if demo:
        sys.path.insert(0, str(root / "pkg"))
        try:
            import gradefix_lab  # noqa: F401 - registers the exercises the tool asks about
            pairs = demo_tool().make(sols / "00_fix.ipynb", subs, kinds=DEMO_KINDS)
        finally:
            sys.path.remove(str(root / "pkg"))
    return {"solutions": sols, "subs": subs, "pkg": root / "pkg", "labkit": root / "lk",
            "demo": pairs}


def _env(course) -> dict:
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(course["pkg"]),
                                                        str(course["labkit"])]))


def _grade_cli(course, subs, out, *extra, timeout=600):
    env = _env(course)
    env.pop("LABKIT_SPEED", None)
    return subprocess.run(
        [PY, "-m", "labkit", "grade", str(subs), "--out", str(out), "--solutions",
         str(course["solutions"]), "--exercise-module", "gradefix_lab", "--no-progress", *extra],
        capture_output=True, text=True, env=env, timeout=timeout, cwd=str(out.parent))


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """The fixture course and class on disk."""
    return build_class(tmp_path_factory.mktemp("gradecourse"), demo=True)


@pytest.fixture(scope="module")
def graded(course):
    """Grade the class once, end to end through `python -m labkit grade` (sandboxed)."""
    require_sandbox()
    out = course["subs"].parent / "grades.csv"
    js = course["subs"].parent / "grades.json"
    proc = _grade_cli(course, course["subs"], out, "--json", str(js), "--jobs", "2",
                      "--memory-limit", "2G", "--cell-timeout", "5", "--notebook-timeout", "120")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with open(out, newline="", encoding="utf-8") as f:
        table = list(csv.DictReader(f))
    with open(out.with_name("grades-wide.csv"), newline="", encoding="utf-8") as f:
        wide = list(csv.DictReader(f))
    return {"rows": table, "wide": wide, "json": json.loads(js.read_text()),
            "stdout": proc.stdout, "out": out}


def test_every_submission_gets_the_expected_rows(course, graded):
    got: dict = {}
    for r in graded["rows"]:
        got.setdefault(r["student"], {})[r["exercise"]] = (float(r["points"]), r["verdict"])
    assert set(got) == set(EXPECTED) | {s for s, _ in course["demo"]}
    assert {s: v for s, v in got.items() if s in EXPECTED} == \
        {s: {k: (float(p), v) for k, (p, v) in ex.items()} for s, ex in EXPECTED.items()}


def test_the_synthetic_class_is_graded_fairly(course, graded):
    """tools/grade_demo_class.py's students in the same run: every honest one (edited check
    cells, the complete notebook) full marks; every cheat (answer key, classmate, tampering,
    detached process, network, root, delegation, json/clock/IPython-hook forgeries) zero or a
    flag; labkit's files untouched."""
    kinds = {s.split("_", 1)[1] for s, _ in course["demo"]}
    assert {"delegate-wrapper", "delegate-alias", "delegate-getattr", "answer-key",
            "classmate", "detached", "complete"} <= kinds
    results = graded["json"]["submissions"]
    assert demo_tool().judge(results, course["demo"]) == []
    by = {r["student"]: r for r in results if r.get("status") != "duplicate"}
    for s, _ in course["demo"]:
        v = {e["exercise"]: e["verdict"] for e in by[s]["exercises"]}
        # (a computed getattr is traced only inside labkit's own modules; this fixture lab is
        # not one, so that student is caught by the zero-or-flag rule above)
        if "delegate-wrapper" in s or "delegate-alias" in s:
            assert v["gf_add_one"] == "uses labkit's answer", (s, v)
    for name in ("bench/__init__.py", "timing/timer.py"):      # read-only in the sandbox
        assert (course["labkit"] / "labkit" / name).read_bytes() == \
            (ROOT / "labkit" / name).read_bytes(), name


def test_rows_carry_max_points_clear_messages_and_the_stamp(graded):
    by = {(r["student"], r["exercise"]): r for r in graded["rows"]}
    assert by[("alice", "gf_double")]["max_points"] == "2"
    assert by[("dave", "gf_add_one")]["max_points"] == "1"          # not the forged 100
    assert "out[" in by[("carol", "gf_double")]["message"]
    assert "add one to every element" in by[("bob", "gf_add_one")]["message"]
    assert "within 5 s" in by[("frank", "gf_add_one")]["message"]
    assert "crashed the checker" in by[("hank", "gf_add_one")]["message"] or \
        "ended the checker" in by[("hank", "gf_add_one")]["message"]
    assert "invalid JSON" in by[("ivan", "")]["message"]
    assert by[("ivan", "")]["max_points"] == "3"                     # matched by single course
    assert "no notebook" in by[("kim", "")]["message"]
    assert "MemoryError" in by[("lena", "gf_add_one")]["message"]
    assert "parse" in by[("lena", "gf_double")]["message"]
    assert set(graded["rows"][0]) == set(grade.CSV_FIELDS)
    import labkit.hardware as hw
    assert all(r["numba"] == hw.info().numba and r["cores"] for r in graded["rows"])
    assert all("avx" in r["isa"] or "neon" in r["isa"] or r["isa"] for r in graded["rows"])


def test_flags_point_the_instructor_at_suspicious_cells_and_mishaps(graded):
    by = {(r["student"], r["exercise"]): r for r in graded["rows"]}
    assert "touches labkit.check" in by[("erin", "gf_add_one")]["flags"]
    assert "was edited" in by[("dave", "gf_add_one")]["flags"]
    assert "points changed to 100" in by[("dave", "gf_add_one")]["flags"]
    assert by[("alice", "gf_add_one")]["flags"] == ""
    assert "cell metadata is missing" in by[("quin", "gf_add_one")]["flags"]
    assert "found by its function" in by[("judy", "gf_add_one")]["flags"]
    assert "2 copies" in by[("rosa", "gf_add_one")]["flags"]
    assert "graded add_one_v2(), the function its check cell names" in \
        by[("sam", "gf_add_one")]["flags"]
    assert "functions from other cells it calls were graded with it: _times" in \
        by[("sam", "gf_double")]["flags"]
    assert {r["notebook"] for r in graded["rows"] if r["student"] == "rosa"} == \
        {"rosa/99_other_lab.ipynb"}                                  # the best copy counts


def test_wide_csv_json_and_summary(course, graded):
    wide = {r["student"]: r for r in graded["wide"]}
    assert wide["alice"]["total"] == "3" and wide["alice"]["00_fix:gf_double"] == "2"
    assert wide["rosa"]["total"] == "3" and wide["carol"]["00_fix:gf_double"] == "0"
    assert set(wide) == set(EXPECTED) | {s for s, _ in course["demo"]}
    subs = {(s["student"], s["notebook"]): s for s in graded["json"]["submissions"]}
    assert subs[("judy", "judy/00_fix.ipynb")]["canonical"] == "00_fix.ipynb"
    assert subs[("rosa", "rosa/99_other_lab-Copy1.ipynb")]["status"] == "duplicate"
    seeds = [e["seed"] for s in subs.values() for e in s["exercises"] if e.get("seed")]
    assert len(set(seeds)) == len(seeds) > 5                         # a fresh seed per check
    assert len(json.dumps(graded["json"])) < 400_000
    out = graded["stdout"]
    assert "alice" in out and "3 / 3" in out and "kim" in out
    assert "gf_double: " in out


def test_feedback_and_report_pages(graded):
    folder = graded["out"].parent
    report = (folder / "report.html").read_text()
    assert "Pass rate per exercise" in report and "data:image/png;base64," in report
    assert "cell metadata is missing" in report                     # flags listed
    bob = (folder / "feedback" / "bob.html").read_text()
    assert "not implemented" in bob and "0 / 3 points" in bob
    carol = (folder / "feedback" / "carol.html").read_text()
    subs = {s["student"]: s for s in graded["json"]["submissions"]}
    for e in subs["carol"]["exercises"]:
        assert str(e["seed"]) not in carol                          # hidden inputs never shown


def test_regrading_reuses_unchanged_results(course, graded, tmp_path):
    out = graded["out"]
    proc = _grade_cli(course, course["subs"], out, "--cell-timeout", "5",
                      "--memory-limit", "2G", "--notebook-timeout", "120", "--json",
                      str(tmp_path / "again.json"))
    assert proc.returncode == 0, proc.stderr
    again = json.loads((tmp_path / "again.json").read_text())["submissions"]
    cached = {s["student"] for s in again if s.get("cached")}
    assert {"alice", "bob", "carol", "quin"} <= cached
    assert "unchanged since the last run" in proc.stdout


def test_editing_labkit_on_disk_zeroes_that_student_and_the_batch_goes_on(tmp_path):
    """Without the sandbox (where labkit is read-only) a submission can edit an exercise
    module on disk: its points are withheld, labkit is restored, the next student is graded."""
    course = build_class(tmp_path)
    subs = tmp_path / "tamper"
    subs.mkdir()
    sol = solution_notebook()
    evil = _set(sol, "ex-gf_add_one", "import gradefix_lab, pathlib\n" + _fn(
        "add_one", "_p = pathlib.Path(gradefix_lab.__file__)\n"
                   "_p.write_text(_p.read_text() + '\\n# changed\\n')\nreturn x + 1"))
    nbformat.write(evil, subs / "a_evil.ipynb")
    nbformat.write(sol, subs / "b_fine.ipynb")
    before = (course["pkg"] / "gradefix_lab.py").read_text()
    proc = _grade_cli(course, subs, tmp_path / "g.csv", "--no-sandbox", "--no-cache")
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "TAMPERING" in proc.stderr and "a_evil" in proc.stderr
    assert "WITHOUT a sandbox" in proc.stderr
    with open(tmp_path / "g.csv", newline="", encoding="utf-8") as f:
        table = list(csv.DictReader(f))
    assert {r["student"] for r in table} == {"a_evil", "b_fine"}
    evil_rows = [r for r in table if r["student"] == "a_evil"]
    assert all(float(r["points"]) == 0 and "tampered" in r["flags"] for r in evil_rows)
    assert sum(float(r["points"]) for r in table if r["student"] == "b_fine") == 3
    assert (course["pkg"] / "gradefix_lab.py").read_text() == before   # restored


# ------------------------------------------------------------------ no kernel needed
def test_parse_check_line_forms():
    assert grade.parse_check_line("x = 1\ncheck.colsum(colsum)") == ("colsum", "colsum", [])
    assert grade.parse_check_line("labkit.check.dot(f, 3)\n# end") == ("dot", "f", ["3"])
    assert grade.parse_check_line('check.run("dot", mod.f)') == ("dot", "mod.f", [])
    for bad in ("print(1)", "check.dot()", "", "check.dot(f"):
        with pytest.raises(ValueError, match="check"):
            grade.parse_check_line(bad)


def test_exercise_cells_are_read_statically_from_the_student(course):
    canon = grade.load_canonical(course["solutions"] / "00_fix.ipynb")
    student = _set(solution_notebook(), "ex-gf_double", "def double(x):\n    return x")
    student.cells[1].source = "import labkit.check; FAKE = 1\nimport numpy as np"
    student.cells[3].source = "print('✔')"                          # the check cell, edited
    student.cells.insert(2, nbformat.v4.new_code_cell("%matplotlib inline\nimport math\n"
                                                      "LIMIT = 7\nBIG = list(range(3))"))
    found, missing, flags = grade.read_exercises(canon, student)
    assert missing == {} and set(found) == {"gf_add_one", "gf_double"}
    assert found["gf_double"].source == "def double(x):\n    return x"
    assert found["gf_double"].how == "grade_id"
    assert "import math" in found["gf_add_one"].imports              # other cells' imports
    assert "import numpy as np" in found["gf_add_one"].imports
    assert "edited" in flags["gf_add_one"][0]
    student.cells[4].source = "# NBVAL_IGNORE_OUTPUT\n\ncheck.gf_add_one(add_one)  # mine"
    assert "gf_add_one" not in grade.read_exercises(canon, student)[2]
    # a constant the exercise reads from an earlier cell travels with it
    student.cells[3].source = "def add_one(x):\n    return x + LIMIT - 6"
    assert grade.read_exercises(canon, student)[0]["gf_add_one"].constants == {"LIMIT": 7}
    # a helper the exercise calls, written in an earlier cell, travels with it (and the
    # functions that helper calls); a later cell after the check cell does not
    student.cells[3].source = "def add_one(x):\n    return _plus(x, LIMIT - 6)"
    student.cells.insert(3, nbformat.v4.new_code_cell(
        "def _plus(x, k):\n    return _id(x) + k\n\ndef _id(x):\n    return x\n\n"
        "def unused():\n    return 0"))
    student.cells.append(nbformat.v4.new_code_cell("def _id(x):\n    return -x"))
    found, _, flags = grade.read_exercises(canon, student)
    src = found["gf_add_one"].source
    assert src.startswith("def add_one(x):\n    return _plus(x, LIMIT - 6)\n")
    assert "def _plus(x, k)" in src and "return x\n" in src and "-x" not in src
    assert "unused" not in src and found["gf_add_one"].constants == {"LIMIT": 7}
    assert any("other cells it calls were graded with it: _id, _plus" in f
               for f in flags["gf_add_one"])
    # a renamed kernel with the check call edited to match, metadata stripped: still graded
    renamed = _set(solution_notebook(), "ex-gf_double", _fn("double2", "return 2 * x"))
    renamed = _strip_metadata(_set(renamed, "check-gf_double", "check.gf_double(double2)"))
    renamed.cells[5].source = "def double2(x):\n    return 2 * x\n\ndef double(x):\n    pass"
    found, _, flags = grade.read_exercises(canon, renamed)
    assert found["gf_double"].function is None          # the exercise's own name is defined
    renamed.cells[5].source = "def double2(x):\n    return 2 * x"
    found, missing, flags = grade.read_exercises(canon, renamed)
    assert missing == {} and found["gf_double"].function == "double2"
    assert "found by its function double2()" in flags["gf_double"][0]
    assert "graded double2(), the function its check cell names" in flags["gf_double"][-1]
    # stripped metadata: found by the function the stub defines, flagged
    bare = _strip_metadata(solution_notebook())
    found, missing, flags = grade.read_exercises(canon, bare)
    assert missing == {} and found["gf_add_one"].how == "function name"
    assert "metadata is missing" in flags["gf_add_one"][0]
    bare.cells = [c for c in bare.cells if "def double" not in c.source]
    assert "gf_double" in grade.read_exercises(canon, bare)[1]


def test_matching_is_by_content_not_file_name(course, tmp_path):
    canon = grade.load_solutions(course["solutions"])
    other = nbformat.v4.new_notebook()
    other.cells = [nbformat.v4.new_markdown_cell("# Another lesson"),
                   nbformat.v4.new_code_cell("def triple(x):\n    return 3 * x"),
                   _chk("triple", "triple", 1)]
    other.cells[1].metadata["nbgrader"] = {"grade_id": "ex-gf_triple", "solution": True,
                                           "grade": False, "locked": False,
                                           "schema_version": 3}
    nbformat.write(other, tmp_path / "01_other.ipynb")
    two = {**canon, "01_other.ipynb": grade.load_canonical(tmp_path / "01_other.ipynb")}
    sol = solution_notebook()
    assert grade.match_canonical(sol, Path("01_other.ipynb"), two).name == "00_fix.ipynb"
    assert grade.match_canonical(_strip_metadata(sol), Path("01_other.ipynb"),
                                 two).name == "00_fix.ipynb"
    assert grade.match_canonical(other, Path("00_fix.ipynb"), two).name == "01_other.ipynb"


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
    assert {s.student for s in subs} == set(EXPECTED) | {s for s, _ in course["demo"]}
    with pytest.raises(FileNotFoundError, match="not a folder"):
        grade.find_submissions(tmp_path / "nope")


def test_cli_usage_errors(tmp_path, capsys):
    assert grade.main([str(tmp_path / "nope"), "--solutions", str(tmp_path)]) == 2
    assert "labkit grade:" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        grade.main([str(tmp_path), "--memory-limit", "lots"])


def test_repo_solutions_are_gradable():
    """Every solutions/*.ipynb parses for the grader: check lines, registered exercises, stubs;
    its released copy (and that copy with stripped metadata) matches it by content and every
    exercise cell is found."""
    paths = sorted((ROOT / "solutions").glob("*.ipynb"))
    if not paths:
        pytest.skip("no solutions/*.ipynb in the repo yet")
    allc = grade.load_solutions(ROOT / "solutions")
    for path in paths:
        canon = grade.load_canonical(path)
        grade._resolve_modules(canon)                                # each exercise registered
        released = release_notebook(canon.nb, path.name)
        for nb in (released, _strip_metadata(released)):
            assert grade.match_canonical(nb, Path("00_tools.ipynb"), allc).name == path.name
            found, missing, _ = grade.read_exercises(canon, nb)
            assert missing == {}, f"{path.name}: {missing}"
            assert set(found) == {ex.name for ex in canon.exercises}
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
