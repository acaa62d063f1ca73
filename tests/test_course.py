"""``labkit grade --course``: a roster, assignments with due dates and late policies, the LMS
gradebook, Gradescope's results.json and autograder bundle, the Binder recipe.

No notebook runs here: ``grade()`` is replaced by the rows it would return for a class of eight
rostered students (one absent, one late by a day, one with an unknown extra folder, …), so the
course logic is checked cell by cell in a few seconds. The grading itself is tested in
tests/test_grade*.py.
"""
from __future__ import annotations

import csv
import datetime as dt
import json
import os
import shutil
import stat
import subprocess
import sys
import tomllib
import warnings
import zipfile
from pathlib import Path

import pytest

from labkit.cli import main as labkit_main
from labkit.grade import cli as grade_cli
from labkit.grade import course as C
from labkit.grade import gradescope as G
from labkit.grade import coursetime, gsresults
from tooling import full_but_for_noise

ROOT = Path(__file__).resolve().parent.parent
UTC = dt.timezone.utc
EXERCISES = {"01_alignment": [("ragged_transpose", 2), ("transposed_inner", 2),
                              ("int16_lanes", 2), ("int16_length", 1)],
             "02_bspline": [("soa_inner_loop", 2), ("spill_n", 1), ("vgh_cost", 1),
                            ("aosoa_driver", 2), ("flat_tiles", 2)],
             "00_tools": [("colsum", 2), ("softsign", 2), ("latency", 1), ("dot_partials", 2)]}
LAB_MAX = {"00_tools": 7.0, "01_alignment": 7.0, "02_bspline": 8.0}
ENV = {"cpu": "Test CPU [x86_64]", "isa": "avx2", "cores": 4, "numba": "0.62.0",
       "llvmlite": "0.45.0", "numpy": "2.0.0"}

COURSE = '''
[course]
name = "test course"
timezone = "Europe/Berlin"

[roster]
folder = "login"

[submissions]
time = "auto"

[gradebook]
id_column = "SIS User ID"
login_column = "SIS Login ID"

[[assignments]]
name = "lab1"
labs = ["01_alignment"]
due = 2026-10-16T23:59:00          # Berlin summer time: 21:59 UTC
late = "per-day"
penalty_per_day = 0.1
grace_minutes = 10
max_days_late = 3

[[assignments]]
name = "lab2"
labs = ["02_bspline"]
points = 10
due = 2026-10-30T23:59:00+01:00    # 22:59 UTC
late = "zero"
'''
ROSTER = [("1001", "Ada Lovelace", "ada"), ("1002", "Bob Absent", "bob"),
          ("1003", "Cy Late", "cy"), ("1004", "Dee Extra", "dee"),
          ("1005", "Eve Zero", "eve"), ("1006", "Fay Mtime", "fay"),
          ("1007", "Gus Broken", "gus"), ("1008", "Hal Case", "hal")]


def _row(student, rel, lab, points, status="graded"):
    ex = [{"exercise": name, "points": float(p), "max_points": float(m),
           "verdict": "passed" if p == m else "wrong" if p == 0 else "slower",
           "message": "ok" if p == m else "=HYPERLINK(\"x\") slower than labkit's"}
          for (name, m), p in zip(EXERCISES[lab], points)]
    return {"student": student, "notebook": rel, "canonical": f"{lab}.ipynb", "status": status,
            "exercises": ex, "environment": dict(ENV), "flags": {}}


def _ts(path: Path, when: str) -> None:
    """A timestamp.txt as nbgrader's exchange writes it ("%Y-%m-%d %H:%M:%S.%f %Z")."""
    path.mkdir(parents=True, exist_ok=True)
    (path / "timestamp.txt").write_text(when)


def _nb(path: Path, mtime: dt.datetime | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}')
    if mtime is not None:
        os.utime(path, (mtime.timestamp(), mtime.timestamp()))


@pytest.fixture(scope="module")
def klass(tmp_path_factory):
    """The class on disk (files for the submission times) and the rows grade() returns."""
    top = tmp_path_factory.mktemp("course")
    sub = top / "submitted"
    students = "".join(f'\n[[students]]\nid = "{i}"\nname = "{n}"\nlogin = "{lg}"\n'
                       for i, n, lg in ROSTER)
    (top / "course.toml").write_text(COURSE + students)
    rows = []
    on_time = "2026-10-16 20:00:00.000000 UTC"
    # ada: everything, on time (nbgrader layout: student/assignment/timestamp.txt), and lesson 00
    _ts(sub / "ada" / "lab1", on_time)
    _nb(sub / "ada" / "lab1" / "01_alignment.ipynb")
    _ts(sub / "ada" / "lab2", "2026-10-30 12:00:00.000000 UTC")
    _nb(sub / "ada" / "lab2" / "02_bspline.ipynb")
    _nb(sub / "ada" / "00_tools.ipynb")
    rows += [_row("ada", "ada/lab1/01_alignment.ipynb", "01_alignment", [2, 2, 2, 1]),
             _row("ada", "ada/lab2/02_bspline.ipynb", "02_bspline", [2, 1, 1, 2, 2]),
             _row("ada", "ada/00_tools.ipynb", "00_tools", [2, 2, 1, 2])]
    # bob: absent (no folder at all)
    # cy: lab1 late by a day (22 h after the due time, past the 10 minutes' grace), lab2 6/8
    _ts(sub / "cy" / "lab1", "2026-10-17 20:00:00.123456 UTC")
    _nb(sub / "cy" / "lab1" / "01_alignment.ipynb")
    _ts(sub / "cy" / "lab2", "2026-10-30 23:30:00.000000 CET")       # 22:30 UTC: on time
    _nb(sub / "cy" / "lab2" / "02_bspline.ipynb")
    rows += [_row("cy", "cy/lab1/01_alignment.ipynb", "01_alignment", [2, 2, 2, 1]),
             _row("cy", "cy/lab2/02_bspline.ipynb", "02_bspline", [2, 0, 1, 2, 1])]
    # dee: lab1 4/7; an extra folder nobody on the roster owns, with a full-marks lab1
    _ts(sub / "dee", on_time)
    _nb(sub / "dee" / "01_alignment.ipynb")
    _nb(sub / "dee_backup" / "01_alignment.ipynb")
    rows += [_row("dee", "dee/01_alignment.ipynb", "01_alignment", [2, 2, 0, 0]),
             _row("dee_backup", "dee_backup/01_alignment.ipynb", "01_alignment", [2, 2, 2, 1])]
    # eve: only lab2, two days late under late = "zero"
    _ts(sub / "eve", "2026-11-01 22:00:00.000000 UTC")
    _nb(sub / "eve" / "02_bspline.ipynb")
    rows += [_row("eve", "eve/02_bspline.ipynb", "02_bspline", [2, 1, 1, 2, 2])]
    # fay: lab1 with no timestamp.txt: the file's time (on time) counts
    _nb(sub / "fay" / "01_alignment.ipynb", dt.datetime(2026, 10, 15, 12, 0, tzinfo=UTC))
    rows += [_row("fay", "fay/01_alignment.ipynb", "01_alignment", [2, 2, 1, 0])]
    # what needs an instructor's look: a grader's flag (fay), a pass whose speed the check could
    # not judge (ada's lab2), a row still inconclusive after the re-measurement (dee)
    rows[-1]["flags"] = {"int16_lanes": ["the check cell was edited"]}
    ada2 = next(r for r in rows if r["notebook"] == "ada/lab2/02_bspline.ipynb")
    ada2["exercises"][-1].update(message="right answer; speed not judged: other work ran",
                                 details={"speed_not_judged": "other work ran"})
    dee = next(r for r in rows if r["notebook"] == "dee/01_alignment.ipynb")
    dee["exercises"][2].update(verdict="inconclusive", message="could not decide")
    # gus: a notebook the grader cannot read
    (sub / "gus").mkdir(parents=True)
    (sub / "gus" / "lab1.ipynb").write_text("{not json")
    rows += [{"student": "gus", "notebook": "gus/lab1.ipynb", "canonical": None,
              "status": "unreadable", "error": "not a notebook: invalid JSON",
              "exercises": [{"exercise": "", "points": 0.0, "max_points": 0.0,
                             "verdict": "unreadable", "message": "not a notebook"}],
              "flags": {}}]
    # hal: folder "Hal" (his login is "hal"); lab1 four days late (over max_days_late = 3) with
    # a duplicate copy grade() already set aside; lab2 3/8 on time
    late4 = dt.datetime(2026, 10, 20, 21, 0, tzinfo=UTC)
    _nb(sub / "Hal" / "01_alignment.ipynb", late4)
    _nb(sub / "Hal" / "01_alignment-Copy1.ipynb", late4)
    _nb(sub / "Hal" / "02_bspline.ipynb", dt.datetime(2026, 10, 29, tzinfo=UTC))
    dup = _row("Hal", "Hal/01_alignment-Copy1.ipynb", "01_alignment", [0, 0, 0, 0], "duplicate")
    rows += [_row("Hal", "Hal/01_alignment.ipynb", "01_alignment", [2, 2, 1, 0]), dup,
             _row("Hal", "Hal/02_bspline.ipynb", "02_bspline", [2, 1, 0, 0, 0])]
    return top, sub, rows


def _read(path: Path) -> list[list[str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.reader(f))


@pytest.fixture(scope="module")
def graded(klass, tmp_path_factory):
    """``labkit grade --course course.toml DIR`` with grade() faked; its output folder."""
    top, sub, rows = klass
    out = tmp_path_factory.mktemp("out")
    seen = {}

    def fake_grade(folder, **kw):
        seen["folder"], seen["kw"] = folder, kw
        return [json.loads(json.dumps(r)) for r in rows]

    mp = pytest.MonkeyPatch()
    mp.setattr(grade_cli, "grade", fake_grade)
    # the labs' maximum points as solutions/ has them (read for real in the error test below)
    mp.setattr(C, "lab_max_points", lambda course, solutions=None: dict(LAB_MAX))
    try:
        rc = labkit_main(["grade", "--course", str(top / "course.toml"), str(sub), "--out",
                          str(out / "grades.csv"), "--no-progress", "--no-cache"])
    finally:
        mp.undo()
    assert rc == 0
    assert Path(seen["folder"]) == sub
    return out


def test_gradebook_cell_by_cell(graded):
    """One row per rostered student in roster order, ids + one column per assignment, nothing
    else: missing work 0, the per-day penalty, zero for late under `zero`, scaled points."""
    assert _read(graded / "gradebook.csv") == [
        ["SIS User ID", "SIS Login ID", "lab1", "lab2"],
        ["1001", "ada", "7", "10"],        # everything on time; lab2 8/8 scaled to 10
        ["1002", "bob", "0", "0"],         # absent
        ["1003", "cy", "6.3", "7.5"],      # 7 − 0.1 × 7 for one day late; 6/8 → 7.5
        ["1004", "dee", "4", "0"],         # dee_backup's 7 points are not hers
        ["1005", "eve", "0", "0"],         # lab1 missing; lab2 late under "zero"
        ["1006", "fay", "5", "0"],         # on time by the file's mtime
        ["1007", "gus", "0", "0"],         # unreadable notebook
        ["1008", "hal", "0", "3.75"],      # 4 days late > max_days_late; 3/8 → 3.75
    ]


def test_detail_late_column_and_time_source(graded):
    rows = _read(graded / "gradebook-detail.csv")
    head, body = rows[0], rows[1:]
    assert head == list(C.DETAIL_FIELDS)
    assert len(body) == 8 * 2
    d = {(r[0], r[4]): dict(zip(head, r)) for r in body}
    cy = d["1003", "lab1"]
    assert (cy["score"], cy["max"], cy["status"], cy["days_late"], cy["penalty"]) == \
        ("6.3", "7", "late", "1", "0.7")
    assert cy["submitted"] == "2026-10-17T20:00:00+00:00"
    assert cy["time_source"] == "timestamp.txt"
    assert "1 day(s) late" in cy["notes"]
    assert d["1003", "lab2"]["status"] == "on time"          # 23:30 CET = 22:30 UTC
    assert d["1003", "lab2"]["submitted"] == "2026-10-30T22:30:00+00:00"
    assert (d["1003", "lab2"]["raw_points"], d["1003", "lab2"]["raw_max"]) == ("6", "8")
    bob = d["1002", "lab1"]
    assert (bob["score"], bob["max"], bob["status"], bob["submitted"], bob["days_late"],
            bob["penalty"], bob["time_source"]) == ("0", "7", "missing", "", "0", "0", "")
    assert "not handed in" in bob["notes"]
    assert d["1002", "lab2"]["max"] == "10"
    fay = d["1006", "lab1"]
    assert (fay["time_source"], fay["status"], fay["submitted"]) == \
        ("mtime", "on time", "2026-10-15T12:00:00+00:00")
    eve = d["1005", "lab2"]
    assert (eve["score"], eve["raw_points"], eve["days_late"], eve["penalty"]) == \
        ("0", "8", "2", "10")
    hal = d["1008", "lab1"]
    assert (hal["folder"], hal["notebooks"], hal["days_late"], hal["score"]) == \
        ("hal", "Hal/01_alignment.ipynb", "4", "0")         # the duplicate is not counted
    assert "scored 0" in hal["notes"]
    gus = d["1007", "lab1"]
    assert gus["status"] == "missing" and "unreadable" in gus["notes"]
    ada = d["1001", "lab1"]
    assert "00_tools is in no assignment" in ada["notes"]
    assert d["1001", "lab2"]["status"] == "on time"


LATE_COPIES = """
[course]
timezone = "UTC"
[roster]
folder = "login"
[[students]]
id = "1001"
login = "ada"
[[assignments]]
name = "lab1"
labs = ["01_alignment"]
due = 2026-10-16T21:59:00
"""


def _two_copies(tmp_path: Path, late_ts: str, first=(2, 2, 1, 0), second=(2, 2, 2, 1)):
    """ada's folder with two copies of lab 01 (each with its own timestamp.txt): on time
    ``first`` (5/7), handed in again at ``late_ts`` with ``second`` (7/7); the rows grade()
    returns — its _dedupe, by points alone, set the on-time copy aside."""
    from labkit.grade.batch import _dedupe
    sub = tmp_path / "submitted"
    _ts(sub / "ada" / "on-time", "2026-10-16 20:00:00.000000 UTC")
    _nb(sub / "ada" / "on-time" / "01_alignment.ipynb")
    _ts(sub / "ada" / "again", late_ts)
    _nb(sub / "ada" / "again" / "01_alignment.ipynb")
    rows = [_row("ada", "ada/on-time/01_alignment.ipynb", "01_alignment", list(first)),
            _row("ada", "ada/again/01_alignment.ipynb", "01_alignment", list(second))]
    _dedupe(rows)
    return sub, rows


@pytest.mark.parametrize("policy, late_ts, score, counts, days", [
    # zero: the late 7/7 scores 0, the on-time 5/7 scores 5
    ('late = "zero"', "2026-10-17 20:00:00.000000 UTC", 5, "on-time", 0),
    # per-day, one day late: 7 − 0.1 × 7 = 6.3 beats the on-time 5
    ('late = "per-day"\npenalty_per_day = 0.1', "2026-10-17 20:00:00.000000 UTC", 6.3, "again",
     1),
    # per-day, three days late: 7 − 3 × 0.7 = 4.9 loses to the on-time 5
    ('late = "per-day"\npenalty_per_day = 0.1', "2026-10-19 20:00:00.000000 UTC", 5, "on-time",
     0),
    # per-day, beyond max_days_late: 0, the on-time copy counts
    ('late = "per-day"\npenalty_per_day = 0.1\nmax_days_late = 2',
     "2026-10-19 20:00:00.000000 UTC", 5, "on-time", 0),
    # none: no penalty, 7 beats 5 though late (its lateness recorded)
    ('late = "none"', "2026-10-17 20:00:00.000000 UTC", 7, "again", 1),
])
def test_late_copy_counts_only_when_it_scores_more_after_the_penalty(tmp_path, policy, late_ts,
                                                                      score, counts, days):
    """Two copies of one lab, an on-time 5/7 and a late 7/7: the copy that counts is the one
    with the student's best score *after* the late penalty (grade() chose by points alone, so
    the late copy first); grades.csv and the JSON agree with the gradebook."""
    sub, rows = _two_copies(tmp_path, late_ts)
    assert rows[0]["status"] == "duplicate"            # grade()'s choice, by raw points
    (tmp_path / "course.toml").write_text(LATE_COPIES + policy + "\n")
    course = C.load_course(tmp_path / "course.toml")
    book = C.build_gradebook(course, rows, sub, {"01_alignment": 7.0})
    g = book["students"][0]["assignments"]["lab1"]
    assert g["score"] == score and g["days_late"] == days, g
    assert g["notebooks"] == [f"ada/{counts}/01_alignment.ipynb"], g
    assert g["status"] == ("late" if days else "on time")
    assert "2 copies from this student" in " ".join(g["notes"])
    # results re-marked: the counted copy is the gradebook's, the other one set aside
    by = {r["notebook"].split("/")[1]: r for r in rows}
    other = "again" if counts == "on-time" else "on-time"
    assert by[counts]["status"] == "graded" and by[other]["status"] == "duplicate"
    assert by[other]["duplicate_of"] == f"ada/{counts}/01_alignment.ipynb"
    flags = by[counts]["flags"][""]
    assert len(flags) == 1 and "after the late penalty" in flags[0], flags
    assert not by[other]["flags"].get("")                 # grade()'s flag went with its choice
    # the command: grades.csv counts the same copy
    out = tmp_path / "out"
    mp = pytest.MonkeyPatch()
    mp.setattr(grade_cli, "grade", lambda folder, **kw: json.loads(json.dumps(rows)))
    mp.setattr(C, "lab_max_points", lambda course, solutions=None: {"01_alignment": 7.0})
    try:
        assert labkit_main(["grade", "--course", str(tmp_path / "course.toml"), str(sub),
                            "--out", str(out / "grades.csv"), "--json", str(out / "g.json"),
                            "--no-progress", "--no-cache"]) == 0
    finally:
        mp.undo()
    assert {r[1] for r in _read(out / "grades.csv")[1:]} == {f"ada/{counts}/01_alignment.ipynb"}
    assert _read(out / "gradebook.csv")[1][-1] == f"{score:g}"
    doc = json.loads((out / "g.json").read_text())
    assert {r["notebook"]: r["status"] for r in doc["submissions"]} == {
        f"ada/{counts}/01_alignment.ipynb": "graded",
        f"ada/{other}/01_alignment.ipynb": "duplicate"}


def test_equal_scores_after_the_penalty_count_the_earlier_copy(tmp_path):
    """Ties go to the earlier submission: two 7/7 copies under `none` (no penalty), and under
    `zero` an on-time 0/7 against a late 7/7 (both 0)."""
    for policy, first in (('late = "none"', (2, 2, 2, 1)), ('late = "zero"', (0, 0, 0, 0))):
        d = tmp_path / policy.split('"')[1]
        sub, rows = _two_copies(d, "2026-10-17 20:00:00.000000 UTC", first=first)
        (d / "course.toml").write_text(LATE_COPIES + policy + "\n")
        book = C.build_gradebook(C.load_course(d / "course.toml"), rows, sub,
                                 {"01_alignment": 7.0})
        g = book["students"][0]["assignments"]["lab1"]
        assert g["notebooks"] == ["ada/on-time/01_alignment.ipynb"], (policy, g)
        assert g["status"] == "on time" and g["days_late"] == 0, (policy, g)


def test_late_lab_left_out_of_a_two_lab_assignment_when_that_scores_more(tmp_path):
    """An assignment of two labs takes the latest of its notebooks' times: under `zero`, a
    late second lab would zero the on-time first one, so it is left out (partial, not 0)."""
    sub = tmp_path / "submitted"
    _ts(sub / "ada" / "a", "2026-10-16 20:00:00.000000 UTC")
    _nb(sub / "ada" / "a" / "01_alignment.ipynb")
    _ts(sub / "ada" / "b", "2026-10-18 20:00:00.000000 UTC")
    _nb(sub / "ada" / "b" / "02_bspline.ipynb")
    rows = [_row("ada", "ada/a/01_alignment.ipynb", "01_alignment", [2, 2, 1, 0]),
            _row("ada", "ada/b/02_bspline.ipynb", "02_bspline", [2, 1, 1, 2, 2])]
    (tmp_path / "course.toml").write_text(LATE_COPIES.replace(
        'labs = ["01_alignment"]', 'labs = ["01_alignment", "02_bspline"]') + 'late = "zero"\n')
    book = C.build_gradebook(C.load_course(tmp_path / "course.toml"), rows, sub,
                             {"01_alignment": 7.0, "02_bspline": 8.0})
    g = book["students"][0]["assignments"]["lab1"]
    assert (g["score"], g["status"], g["notebooks"]) == (5, "partial", ["ada/a/01_alignment.ipynb"])
    assert any("02_bspline" in n and "left out" in n for n in g["notes"]), g["notes"]


def test_detail_and_gradescope_name_what_needs_review(graded):
    """gradebook-detail.csv's review column lists, for the copies that count, the grader's flags
    and the rows that need an instructor's look; Gradescope's test output says the same."""
    rows = _read(graded / "gradebook-detail.csv")
    d = {(r[0], r[4]): dict(zip(rows[0], r)) for r in rows[1:]}
    assert d["1006", "lab1"]["review"] == "01_alignment: int16_lanes: the check cell was edited"
    assert d["1001", "lab2"]["review"] == \
        "02_bspline: flat_tiles: passed, but the check says speed was not judged"
    assert d["1004", "lab1"]["review"].startswith("01_alignment: int16_lanes: inconclusive")
    assert d["1001", "lab1"]["review"] == d["1002", "lab1"]["review"] == ""
    ada = json.loads((graded / "gradescope" / "lab2" / "1001" / "results.json").read_text())
    out = {t["name"]: t["output"] for t in ada["tests"]}
    assert "review: passed, but the check says speed was not judged" in \
        out["02_bspline: flat_tiles"]
    assert "review:" not in out["02_bspline: soa_inner_loop"]


def test_gradescope_output_carries_each_review_note_once():
    """lab_tests reads report.review_notes: the notebook's flags on its first test only, an
    exercise's flags and review reason on that exercise's test — and an unreadable notebook's
    single, exercise-less row shows its flag once (it used to show it twice)."""
    from labkit.grade.gradescope import lab_tests
    ok = {"notebook": "a/01_alignment.ipynb", "status": "graded",
          "flags": {"": ["renamed file"], "colsum": ["the check cell was edited"]},
          "exercises": [{"exercise": "colsum", "verdict": "passed", "message": "ok",
                         "points": 1, "max_points": 1},
                        {"exercise": "softsign", "verdict": "passed", "message": "ok",
                         "points": 1, "max_points": 1}]}
    bad = {"notebook": "b/02_bspline.ipynb", "status": "grader error",
           "flags": {"": ["not valid JSON"]},
           "exercises": [{"exercise": "", "verdict": "not run", "message": "unreadable",
                          "points": 0, "max_points": 0}]}
    out = {t["name"]: t["output"] for t in
           lab_tests(["01_alignment", "02_bspline"], {"01_alignment": ok, "02_bspline": bad},
                     {"01_alignment": 2.0, "02_bspline": 3.0})}
    assert "review: renamed file; the check cell was edited" in out["01_alignment: colsum"]
    assert "review:" not in out["01_alignment: softsign"]
    assert out["02_bspline: grader error"].count("not valid JSON") == 1, out


def test_unknown_folder_listed_not_counted(graded, capsys):
    assert _read(graded / "gradebook-unknown.csv")[1:] == [
        ["dee_backup", "dee_backup/01_alignment.ipynb",
         "not on the roster: not counted (add the student, or `folder = \"…\"` to their "
         "[[students]] entry, and grade again)"]]


def test_environment_stamp_in_its_own_file(graded):
    env = json.loads((graded / "gradebook-environment.json").read_text())
    assert env["course"] == "test course" and env["environment"] == [ENV]
    text = (graded / "gradebook.csv").read_text()
    assert "avx2" not in text and "Test CPU" not in text


def test_gradescope_results_per_submission(graded):
    """results.json per student and assignment, valid against Gradescope's documented fields."""
    files = sorted((graded / "gradescope").rglob("results.json"))
    assert len(files) == 16
    for f in files:
        doc = json.loads(f.read_text())
        assert G.validate(doc) == [], f
        assert set(doc) <= gsresults.TOP_FIELDS
        for t in doc["tests"]:
            assert set(t) <= gsresults.TEST_FIELDS
            assert {"name", "score", "max_score", "output", "visibility"} <= set(t)
            assert isinstance(t["name"], str) and isinstance(t["output"], str)
            assert isinstance(t["score"], float) and isinstance(t["max_score"], float)
            assert t["visibility"] in G.VISIBILITY and 0 <= t["score"] <= t["max_score"]
    cy = json.loads((graded / "gradescope" / "lab1" / "1003" / "results.json").read_text())
    assert cy["score"] == 6.3                              # after the late penalty
    assert [t["name"] for t in cy["tests"]] == [f"01_alignment: {n}" for n, _ in
                                                EXERCISES["01_alignment"]]
    assert sum(t["max_score"] for t in cy["tests"]) == 7
    assert sum(t["score"] for t in cy["tests"]) == 7
    assert "1 day(s) late" in cy["output"]
    bob = json.loads((graded / "gradescope" / "lab2" / "1002" / "results.json").read_text())
    assert bob["score"] == 0 and bob["tests"] == [
        {"name": "02_bspline: not handed in", "number": "1", "score": 0.0, "max_score": 8.0,
         "status": "failed", "output": "No notebook of 02_bspline was found in this "
         "submission.", "visibility": "visible"}]
    ada = json.loads((graded / "gradescope" / "lab2" / "1001" / "results.json").read_text())
    assert ada["score"] == 10 and all(t["status"] == "passed" for t in ada["tests"])


def test_handback_archive_per_student(graded):
    """One zip per rostered student: grades.txt and the feedback page of each of their folders."""
    zips = sorted(p.name for p in (graded / "handback").iterdir())
    assert zips == [f"{i}.zip" for i, _, _ in ROSTER]
    with zipfile.ZipFile(graded / "handback" / "1003.zip") as z:
        assert sorted(z.namelist()) == ["feedback-cy.html", "grades.txt"]
        text = z.read("grades.txt").decode()
        page = z.read("feedback-cy.html").decode()
    assert "lab1: 6.3 / 7 (late), submitted 2026-10-17T20:00:00+00:00" in text
    assert "1 day(s) late" in text and "lab2: 7.5 / 10 (on time)" in text
    assert "ragged_transpose" in page and "dee" not in page
    with zipfile.ZipFile(graded / "handback" / "1002.zip") as z:
        assert z.namelist() == ["grades.txt"]
        assert "lab1: 0 / 7 (missing)" in z.read("grades.txt").decode()
    with zipfile.ZipFile(graded / "handback" / "1008.zip") as z:
        assert "feedback-Hal.html" in z.namelist()


def test_validate_catches_what_gradescope_does_not_document():
    assert G.validate({"score": 1, "tests": []}) == []
    assert G.validate({"tests": [{"score": 1.0, "max_score": 1.0, "name": "a"}]}) == []
    assert G.validate({"tests": [{"max_score": 1.0}]}) == [
        "no top-level score and not every test has a score"]
    bad = G.validate({"score": "5", "visibility": "sometimes", "grade": 3,
                      "tests": [{"score": 1, "points": 2, "status": "ok", "output": 3}]})
    assert "score must be a number" in bad
    assert "unknown top-level field 'grade'" in bad
    assert any("visibility must be one of" in b for b in bad)
    assert "tests[0]: unknown field 'points'" in bad
    assert "tests[0]: status must be passed or failed" in bad
    assert "tests[0]: output must be text" in bad
    with pytest.raises(ValueError, match="would not be valid"):
        G.write_results({"score": float("nan")}, "/nonexistent/results.json")


def test_csv_cells_are_injection_safe(klass, tmp_path):
    top, sub, rows = klass
    text = (top / "course.toml").read_text().replace('login = "ada"', 'login = "=cmd|calc"')
    (tmp_path / "course.toml").write_text(text)
    course = C.load_course(tmp_path / "course.toml")
    book = C.build_gradebook(course, rows, sub, LAB_MAX)
    C.write_course(course, book, tmp_path / "out")
    table = _read(tmp_path / "out" / "gradebook.csv")
    assert table[1] == ["1001", "'=cmd|calc", "0", "0"]    # her folder is "ada": not hers now
    assert ["ada", "ada/00_tools.ipynb; ada/lab1/01_alignment.ipynb; "
            "ada/lab2/02_bspline.ipynb"] == _read(tmp_path / "out" / "gradebook-unknown.csv")[
        1][:2]


def test_timestamp_formats_and_sources(tmp_path):
    berlin = coursetime._zone("Europe/Berlin", "t")
    t = C.parse_time("2026-10-17 20:00:00.123456 UTC", None, "t")
    assert t == dt.datetime(2026, 10, 17, 20, 0, 0, 123456, tzinfo=UTC)
    assert C.parse_time("2026-10-17T22:00:00+02:00", None, "t") == \
        dt.datetime(2026, 10, 17, 20, tzinfo=UTC)
    assert C.parse_time("2026-10-17 22:00 Europe/Berlin", None, "t").utcoffset() == \
        dt.timedelta(hours=2)
    assert C.parse_time("2026-10-17 20:00 +0100", None, "t").utcoffset() == dt.timedelta(hours=1)
    assert C.parse_time(dt.datetime(2026, 1, 1), berlin, "t").tzinfo is berlin
    with pytest.raises(C.CourseError, match="has no time zone"):
        C.parse_time(dt.datetime(2026, 1, 1), None, "lab1: due")
    with pytest.raises(C.CourseError, match="unknown time zone 'Mars/Olympus'"):
        C.parse_time("2026-10-17 20:00 Mars/Olympus", None, "t")
    with pytest.raises(C.CourseError, match="without a time of day"):
        C.parse_time(dt.date(2026, 1, 1), UTC, "t")
    with pytest.raises(C.CourseError, match="cannot read the time"):
        C.parse_time("next tuesday", UTC, "t")
    # sources: the nearest timestamp.txt up to the student folder; a broken one → mtime
    nb = tmp_path / "ann" / "lab1" / "x.ipynb"
    _nb(nb, dt.datetime(2026, 1, 2, tzinfo=UTC))
    assert C.submission_time(nb, tmp_path / "ann") == (dt.datetime(2026, 1, 2, tzinfo=UTC),
                                                       "mtime")
    _ts(tmp_path / "ann", "2026-01-03 00:00:00.000000 UTC")
    assert C.submission_time(nb, tmp_path / "ann")[1] == "timestamp.txt"
    _ts(tmp_path / "ann" / "lab1", "garbage")
    when, how = C.submission_time(nb, tmp_path / "ann")
    assert when == dt.datetime(2026, 1, 2, tzinfo=UTC) and how.startswith("mtime (unreadable")
    assert C.submission_time(nb, tmp_path / "ann", "timestamp")[0] is None
    assert C.submission_time(nb, None)[1] == "mtime"        # a notebook not in a folder
    _ts(tmp_path, "2020-01-01 00:00:00 UTC")                 # above the student folder: ignored
    (tmp_path / "ann" / "timestamp.txt").unlink()
    (tmp_path / "ann" / "lab1" / "timestamp.txt").unlink()
    assert C.submission_time(nb, tmp_path / "ann")[1] == "mtime"


CANVAS = '''Student,ID,SIS User ID,SIS Login ID,Section,Lab 1 (123)
    Points Possible,,,,,7
"Lovelace, Ada",11,1001,ada,S1,
"Student, Test",99,,,S1,
"Babbage, Charles",12,1002,cbabbage,S1,
'''
MOODLE = '''\ufeffFirst name,Last name,ID number,Institution,Department,Email address,Username
Ada,Lovelace,1001,,,ada@uni.example,ada
Charles,Babbage,1002,,,cb@uni.example,cbabbage
'''
GRADESCOPE = '''First Name,Last Name,SID,Email,Role,Sections
Ada,Lovelace,1001,ada@uni.example,Student,
Tim,Ta,,ta@uni.example,TA,
Charles,Babbage,1002,cb@uni.example,Student,
'''


@pytest.mark.parametrize("text,fmt,logins", [
    (CANVAS, "canvas", ["ada", "cbabbage"]), (MOODLE, "moodle", ["ada", "cbabbage"]),
    (GRADESCOPE, "gradescope", ["ada@uni.example", "cb@uni.example"])])
def test_roster_import(tmp_path, capsys, text, fmt, logins):
    f = tmp_path / f"{fmt}.csv"
    f.write_text(text, encoding="utf-8")
    students = C.read_roster_csv(f)                       # told by the header
    assert [s.id for s in students] == ["1001", "1002"]
    assert [s.login for s in students] == logins
    assert "Lovelace" in students[0].name and "Ada" in students[0].name
    assert C.read_roster_csv(f, fmt) == students
    assert labkit_main(["course", "import-roster", str(f)]) == 0
    blocks = tomllib.loads(capsys.readouterr().out)["students"]
    assert [b["id"] for b in blocks] == ["1001", "1002"] and blocks[0]["login"] == logins[0]
    # a course file that reads the export itself
    (tmp_path / "c.toml").write_text(f'[roster]\nfile = "{f.name}"\nfolder = "login"\n'
                                     '[[assignments]]\nname = "a"\nlabs = ["01_alignment"]\n')
    assert [s.login for s in C.load_course(tmp_path / "c.toml").students] == logins
    assert labkit_main(["course", "import-roster", str(f), "--out", str(tmp_path / "r.toml")]) \
        == 0
    assert labkit_main(["course", "import-roster", str(f), "--out", str(tmp_path / "r.toml")]) \
        == 2
    assert "exists; not overwritten" in capsys.readouterr().err


def test_roster_errors(tmp_path):
    f = tmp_path / "x.csv"
    f.write_text("Foo,Bar\n1,2\n")
    with pytest.raises(C.CourseError, match="cannot tell which LMS"):
        C.read_roster_csv(f)
    f.write_text("id,name\n,Nobody\n")
    with pytest.raises(C.CourseError, match="line 2: a student without an id"):
        C.read_roster_csv(f)
    with pytest.raises(C.CourseError, match="cannot read the roster"):
        C.read_roster_csv(tmp_path / "missing.csv")
    f.write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(C.CourseError, match="cannot read the roster"):
        C.read_roster_csv(f)


BASE = '[[students]]\nid = "1"\nlogin = "a"\n'
ASSIGN = '[[assignments]]\nname = "lab1"\nlabs = ["01_alignment"]\n'


@pytest.mark.parametrize("text,message", [
    ("not toml [", "not valid TOML"),
    (BASE, "no [[assignments]]"),
    (ASSIGN, "no students"),
    (BASE + ASSIGN + "[course]\nnmae = 'x'\n", "unknown key(s) nmae"),
    (BASE + ASSIGN.replace('["01_alignment"]', '["alignment"]'), "is not a lab notebook's stem"),
    (BASE + ASSIGN + 'due = 2026-10-16T23:59:00\n', "has no time zone"),
    (BASE + ASSIGN + 'due = 2026-10-16\n', "without a time of day"),
    (BASE + ASSIGN + 'late = "half"\n', "`late` must be one of none, zero, per-day"),
    (BASE + ASSIGN + 'late = "zero"\n', "needs a `due` date"),
    (BASE + ASSIGN + 'due = 2026-10-16T23:59:00Z\nlate = "per-day"\n', "penalty_per_day"),
    (BASE + ASSIGN + 'points = -1\n', "`points` must be a number"),
    (BASE + BASE + ASSIGN, "two students with the id '1'"),
    (BASE + ASSIGN + ASSIGN, "assignment name(s) used twice: lab1"),
    (BASE + ASSIGN + ASSIGN.replace('"lab1"', '"lab2"'), "in more than one assignment"),
    (BASE + ASSIGN + '[roster]\nfolder = "login"\n[[students]]\nid = "2"\n',
     "has no login to name their submission folder"),
    (BASE + ASSIGN + '[submissions]\ntime = "ctime"\n', "time must be one of"),
])
def test_course_file_errors(tmp_path, text, message):
    (tmp_path / "course.toml").write_text(text)
    with pytest.raises(C.CourseError) as e:
        C.load_course(tmp_path / "course.toml")
    assert message in str(e.value)


def test_grade_course_bad_input_is_a_message(tmp_path, capsys, monkeypatch):
    """No traceback, exit 2, and nothing graded when the course file is wrong."""
    monkeypatch.setattr(grade_cli, "grade", lambda *a, **k: pytest.fail("graded anyway"))
    (tmp_path / "course.toml").write_text(BASE + ASSIGN.replace("01_alignment", "09_nothing"))
    assert labkit_main(["grade", "--course", str(tmp_path / "course.toml"), str(tmp_path),
                        "--out", str(tmp_path / "g.csv")]) == 2
    err = capsys.readouterr().err
    assert "names lab '09_nothing', which is not a solution notebook" in err
    assert "Traceback" not in err
    assert labkit_main(["grade", "--course", str(tmp_path / "nope.toml"), str(tmp_path)]) == 2
    assert "cannot read the course file" in capsys.readouterr().err
    (tmp_path / "c2.toml").write_text(BASE + ASSIGN)
    assert labkit_main(["grade", "--course", str(tmp_path / "c2.toml")]) == 2
    assert "name the folder of submissions" in capsys.readouterr().err


def test_example_course_file_reads(capsys):
    assert labkit_main(["course", "check", str(ROOT / "examples" / "course.toml")]) == 0
    out = capsys.readouterr().out
    assert "lab2_bspline: 02_bspline (12 points scaled to 10)" in out
    c = C.load_course(ROOT / "examples" / "course.toml")
    assert c.folder_of(c.students[2]) == "grace"
    assert c.assignments[0].due == dt.datetime(2026, 10, 16, 21, 59, tzinfo=UTC)


# ------------------------------------------------------------------ Gradescope's bundle
def test_gradescope_bundle(tmp_path):
    assert labkit_main(["gradescope", "build", str(tmp_path / "ag"), "--course",
                        str(ROOT / "examples" / "course.toml"), "--assignment",
                        "lab2_bspline"]) == 0
    ag = tmp_path / "ag"
    for f in ("setup.sh", "run_autograder"):
        assert (ag / f).stat().st_mode & stat.S_IXUSR
        assert (ag / f).read_text().startswith("#!/usr/bin/env bash")
    assert "labkit gradescope run" in (ag / "run_autograder").read_text()
    setup = (ag / "setup.sh").read_text()
    assert "pip install /autograder/source/labkit-src" in setup and "labkit warm 2" in setup
    assert "NUMBA_CACHE_DIR=/opt/labkit-cache" in setup
    assert "chown -R labkit: /opt/labkit-cache" in setup
    cfg = json.loads((ag / G.CONFIG).read_text())
    assert (cfg["labs"], cfg["points"], cfg["lab_max"]) == (["02_bspline"], 10.0,
                                                            {"02_bspline": 12.0})
    with zipfile.ZipFile(ag / "autograder.zip") as z:
        names = set(z.namelist())
        assert z.getinfo("run_autograder").external_attr >> 16 & stat.S_IXUSR
    assert {"setup.sh", "run_autograder", G.CONFIG, "solutions/02_bspline.ipynb",
            "solutions/02_bspline.md", "labkit-src/pyproject.toml",
            "labkit-src/labkit/grade/gradescope.py"} <= names
    assert not any("__pycache__" in n or n.startswith("solutions/01") for n in names)
    assert labkit_main(["gradescope", "build", str(ag), "--lab", "02_bspline"]) == 2
    assert labkit_main(["gradescope", "build", str(tmp_path / "x"), "--lab", "07_none"]) == 2


FAKE_GRADE = '''import json, sys
args = sys.argv[1:]
out = args[args.index("--json") + 1]
rows = json.loads(open(sys.argv[0][:-3] + ".json").read())
json.dump({"labkit_grade": 2, "submissions": rows}, open(out, "w"))
print("graded", args[0], "no-sandbox" if "--no-sandbox" in args else "sandboxed")
'''


def test_gradescope_run_writes_results(tmp_path, klass):
    """``labkit gradescope run`` as in the container: grade, then a valid results.json."""
    _, _, rows = klass
    ag = tmp_path / "ag"
    G.build_bundle(ag, ["01_alignment"], points=10)
    (tmp_path / "submission").mkdir()
    (tmp_path / "submission" / "mine.ipynb").write_text("{}")
    script = tmp_path / "fake_grade.py"
    script.write_text(FAKE_GRADE)
    mine = [dict(r, student="mine") for r in rows if r["student"] in ("cy", "ada")]
    (tmp_path / "fake_grade.json").write_text(json.dumps(mine))
    res = tmp_path / "results" / "results.json"
    assert G.run(ag, tmp_path / "submission", res, grade_cmd=[sys.executable, str(script)]) == 0
    doc = json.loads(res.read_text())
    assert G.validate(doc) == []
    # 7 points of 01_alignment (its 4 guided exercises: the fake rows; its challenge not
    # handed in) scaled to 10 by the lab's maximum in the real solution notebook
    lab_max = json.loads((ag / G.CONFIG).read_text())["lab_max"]["01_alignment"]
    assert doc["score"] == pytest.approx(10 * 7 / lab_max, abs=0.01)
    assert len(doc["tests"]) == 4
    assert "02_bspline is not part of this assignment" in doc["output"]
    assert "00_tools is not part of this assignment" in doc["output"]


# ------------------------------------------------------------------ Binder
def test_binder_recipe():
    binder = ROOT / "binder"
    post = binder / "postBuild"
    assert post.stat().st_mode & stat.S_IXUSR, "binder/postBuild must be executable"
    text = post.read_text()
    assert text.startswith("#!") and "labkit warm" in text
    env = [p for p in (binder / "environment.yml", binder / "requirements.txt") if p.exists()]
    assert env, "binder/ needs environment.yml or requirements.txt"
    for p in env:
        body = "\n".join(ln.split("#")[0] for ln in p.read_text().lower().splitlines())
        for banned in ("playwright", "nbgrader", "jupyter-book", "jupyter_book"):
            assert banned not in body, f"{p.name} lists {banned}"
        assert "numba" in body and "jupyterlab" in body


def test_binder_environment_is_pyprojects_runtime():
    """binder/environment.yml: exactly pyproject.toml's runtime dependencies, same bounds."""
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    want = {d.replace(" ", "") for d in deps}
    got, section = set(), ""
    for ln in (ROOT / "binder" / "environment.yml").read_text().splitlines():
        ln = ln.split("#")[0].rstrip()
        if ln and not ln.startswith(" "):
            section = ln.split(":")[0]
        item = ln.strip()[2:] if ln.strip().startswith("- ") else ""
        if section == "dependencies" and item and item.rstrip(":") != "pip" \
                and not item.startswith("python"):
            got.add(item.replace(" ", ""))
    assert got == want


def test_gradescope_run_without_sandbox(tmp_path, klass, monkeypatch, capsys):
    """No bubblewrap in the container: `fallback` grades with --no-sandbox and says so in the
    output; `required` fails the autograder (no results.json). (Dropping to the bundle's user
    is not exercised here: `kill -9 -1` as a shared uid would reach other graders' workers.)"""
    import labkit.grade.sandbox as sandbox
    _, _, rows = klass
    monkeypatch.setattr(sandbox, "probe", lambda: (False, "bwrap: No permissions to create a "
                                                          "new namespace"))
    monkeypatch.setattr(G, "_as_user", lambda user: [])
    ag = tmp_path / "ag"
    G.build_bundle(ag, ["02_bspline"])
    (tmp_path / "submission").mkdir()
    script = tmp_path / "fake_grade.py"
    script.write_text(FAKE_GRADE)
    (tmp_path / "fake_grade.json").write_text(json.dumps([r for r in rows
                                                          if r["student"] == "cy"]))
    res = tmp_path / "results.json"
    assert G.run(ag, tmp_path / "submission", res, grade_cmd=[sys.executable, str(script)]) == 0
    assert "no-sandbox" in capsys.readouterr().out
    doc = json.loads(res.read_text())
    assert G.validate(doc) == [] and doc["score"] == 6.0
    assert "graded WITHOUT the bubblewrap sandbox (bwrap: No permissions" in doc["output"]
    cfg = json.loads((ag / G.CONFIG).read_text())
    (ag / G.CONFIG).write_text(json.dumps(dict(cfg, sandbox="required")))
    res.unlink()
    assert G.run(ag, tmp_path / "submission", res, grade_cmd=[sys.executable, str(script)]) == 4
    assert not res.exists()
    assert "requires one" in capsys.readouterr().err


def test_gradescope_cli_bad_input(tmp_path, capsys):
    assert labkit_main(["gradescope", "run", "--source", str(tmp_path)]) == 2
    assert "cannot read" in capsys.readouterr().err
    (tmp_path / "g.json").write_text("[1, 2]")
    assert labkit_main(["gradescope", "results", str(tmp_path / "g.json"), "--lab",
                        "01_alignment", "--out", str(tmp_path / "r.json")]) == 2
    assert "is not labkit grade --json output" in capsys.readouterr().err
    assert labkit_main(["gradescope", "build", str(tmp_path / "b"), "--course",
                        str(ROOT / "examples" / "course.toml"), "--assignment", "nope"]) == 2
    assert "'nope' is not an assignment" in capsys.readouterr().err


@pytest.mark.full       # real grading in the sandbox (≈ 30 s); the course logic is proven above
def test_course_with_real_grading(tmp_path, capsys):
    """`labkit grade --course` on real notebooks: the solution scores 11 (7 guided + the
    challenge's 4), the student copy 0, the absent student 0, an unrostered folder is listed."""
    from labkit.grade.sandbox import probe
    ok, why = probe()
    if not ok:
        pytest.skip(f"no sandbox: {why}")
    sub = tmp_path / "submitted"
    _nb(sub / "ada" / "x.ipynb")
    (sub / "ada" / "x.ipynb").write_bytes((ROOT / "solutions" / "01_alignment.ipynb").read_bytes())
    _ts(sub / "ada", "2026-10-16 20:00:00.000000 UTC")
    _nb(sub / "cy" / "01_alignment.ipynb")
    (sub / "cy" / "01_alignment.ipynb").write_bytes(
        (ROOT / "notebooks" / "01_alignment.ipynb").read_bytes())
    _ts(sub / "cy", "2026-10-17 20:00:00.000000 UTC")
    _nb(sub / "zed" / "01_alignment.ipynb")
    (sub / "zed" / "01_alignment.ipynb").write_bytes(
        (ROOT / "solutions" / "01_alignment.ipynb").read_bytes())
    students = "".join(f'\n[[students]]\nid = "{i}"\nname = "{n}"\nlogin = "{lg}"\n'
                       for i, n, lg in ROSTER[:3])
    course = COURSE.split("[[assignments]]\nname = \"lab2\"")[0]
    (tmp_path / "course.toml").write_text(course + students)
    out = tmp_path / "out"
    rc = labkit_main(["grade", "--course", str(tmp_path / "course.toml"), str(sub), "--out",
                      str(out / "grades.csv"), "--json", str(out / "grades.json"),
                      "--no-progress", "--no-cache"])
    assert rc == 0
    # the challenge's speed is measured for real: on a busy machine the check may give ¾ while
    # its interval straddles the full tier's boundary (measured twice, the better kept) — then
    # every output says the same lower score; a solution slower than full fails
    ada = next(r for r in json.loads((out / "grades.json").read_text())["submissions"]
               if r["student"] == "ada")
    lost = [e for e in ada["exercises"] if e["points"] < e["max_points"]]
    assert all(e["exercise"] == "align_challenge" and full_but_for_noise(e["verdict"],
                                                                          e.get("details"))
               for e in lost), lost
    score = f"{sum(e['points'] for e in ada['exercises']):g}"
    if lost:
        warnings.warn(f"a busy run's interval cost the challenge its full tier: {lost}")
    assert score in ("11", "10") and _read(out / "gradebook.csv") == [
        ["SIS User ID", "SIS Login ID", "lab1"], ["1001", "ada", score], ["1002", "bob", "0"],
        ["1003", "cy", "0"]]
    assert _read(out / "gradebook-unknown.csv")[1][0] == "zed"
    assert "NOT COUNTED" in capsys.readouterr().err
    doc = json.loads((out / "gradescope" / "lab1" / "1001" / "results.json").read_text())
    assert G.validate(doc) == [] and doc["score"] == float(score)   # 7 guided + 4 of the challenge


GS_METADATA = '''\
submission_101:
  :submitters:
  - :name: Ada Lovelace
    :sid: '1001'
    :email: ada.l@example.edu
  - :name: Someone Else
    :sid: ''
    :email: cy
  :created_at: 2026-10-16 21:30:00.000000000 +00:00
  :score: 0.0
submission_102:
  :submitters:
  - :name: Jane Roe
    :sid: '9999'
    :email: jroe@example.edu
  :created_at: 2026-10-16 20:00:00.000000000 +00:00
submission_103:
  :submitters:
  - :name: Fay Mtime
    :email: nobody@example.edu
  :created_at: 2026-10-18 21:59:00.000000000 +00:00
'''


def test_gradescope_export_folders_map_to_the_roster(tmp_path):
    """Gradescope's "Export Submissions": folders submission_<id>/ and submission_metadata.yml.
    A group submission counts for each submitter on the roster (sid, then email against login,
    then a unique name); :created_at: is the submission time; a submitter on no roster is
    listed with the name Gradescope gives, never counted."""
    (tmp_path / "course.toml").write_text(COURSE + "".join(
        f'\n[[students]]\nid = "{i}"\nname = "{n}"\nlogin = "{lg}"\n' for i, n, lg in ROSTER))
    sub = tmp_path / "export"
    sub.mkdir()
    (sub / "submission_metadata.yml").write_text(GS_METADATA)
    rows = []
    for folder, points in (("submission_101", [2, 2, 2, 1]), ("submission_102", [2, 2, 2, 1]),
                           ("submission_103", [2, 0, 0, 0])):
        _nb(sub / folder / "01_alignment.ipynb")
        rows.append(_row(folder, f"{folder}/01_alignment.ipynb", "01_alignment", points))
    course = C.load_course(tmp_path / "course.toml")
    book = C.build_gradebook(course, rows, sub, LAB_MAX,
                             now=dt.datetime(2026, 11, 1, tzinfo=UTC))
    by = {s["id"]: s for s in book["students"]}
    ada, cy, fay = (by[i]["assignments"]["lab1"] for i in ("1001", "1003", "1006"))
    assert ada["score"] == cy["score"] == 7 and ada["status"] == "on time", ada
    assert ada["time_source"] == "submission_metadata.yml"
    assert by["1001"]["folders"] == by["1003"]["folders"] == ["submission_101"]
    assert fay["raw_points"] == 2 and fay["status"] == "late" and fay["days_late"] == 2, fay
    assert by["1002"]["assignments"]["lab1"]["status"] == "missing"
    unknown = {u["folder"]: u for u in book["unknown"]}
    assert list(unknown) == ["submission_102"]
    assert "Jane Roe" in unknown["submission_102"]["submitters"][0]
    (sub / "submission_metadata.yml").write_text("submission_1: [1, 2]\n")
    with pytest.raises(C.CourseError, match="submission_1"):
        C.build_gradebook(course, rows, sub, LAB_MAX)


def test_makefile_instructor_targets_never_install_and_keep_course_state_out(tmp_path):
    """make book / book-student / grade / nbgrader use the venv as it is (no install step, a
    clear message without one); make nbgrader runs in COURSE, refused when that is the checkout
    or inside it; make grade writes into OUT. Run on a copy of the Makefile with a fake venv
    whose programs only say how they were called."""
    make = shutil.which("make")
    if make is None:
        pytest.skip("no make on this machine")
    repo, course = tmp_path / "repo", tmp_path / "course"
    (repo / ".venv" / "bin").mkdir(parents=True)
    (repo / "sub").mkdir()
    course.mkdir()
    shutil.copy(ROOT / "Makefile", repo / "Makefile")
    (repo / "pyproject.toml").write_text("")          # newer than any stamp: install would run
    for tool in ("python", "nbgrader", "labkit"):
        f = repo / ".venv" / "bin" / tool
        f.write_text(f'#!/bin/sh\necho "RAN {tool} $* IN $(pwd)"\n')
        f.chmod(0o755)

    def run(*args):
        p = subprocess.run([make, "--no-print-directory", *args], cwd=repo, text=True,
                           capture_output=True, timeout=60)
        return p.returncode, p.stdout + p.stderr

    for target in ("book", "book-student", "grade"):
        rc, out = run("-n", target)
        assert rc == 0 and "pip install" not in out and ".installed" not in out, out
    rc, out = run("nbgrader", f"COURSE={course}", "ARGS=autograde lab1")
    assert rc == 0 and f"RAN nbgrader autograde lab1 IN {course.resolve()}" in out, out
    assert "pip" not in out
    for bad in (".", "sub", str(repo / "sub" / "..")):
        rc, out = run("nbgrader", f"COURSE={bad}", "ARGS=autograde lab1")
        assert rc != 0 and "is this checkout or a folder in it" in out and "RAN" not in out, out
    rc, out = run("nbgrader", "ARGS=autograde lab1")
    assert rc != 0 and "name the nbgrader course folder" in out and "RAN" not in out, out
    rc, out = run("grade", "DIR=subs", f"OUT={course / 'grades'}")
    assert rc == 0 and f"--out {course / 'grades'}/grades.csv" in out, out
    (repo / ".venv" / "bin" / "python").unlink()
    for target in ("book", "book-student", "grade", "nbgrader"):
        rc, out = run(target, f"COURSE={course}")
        assert rc != 0 and "run make install first" in out and "RAN" not in out, out
    assert sorted(p.name for p in repo.iterdir()) == [".venv", "Makefile", "pyproject.toml",
                                                      "sub"]     # nothing written in the checkout
