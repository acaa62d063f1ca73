"""A course around the grader: the roster, the assignments (labs, points, due date, late policy)
and the gradebook built from :func:`labkit.grade.grade`'s results (``labkit grade --course``).

The course file (``course.toml``, documented in ``docs/course.md``, an example in
``examples/course.toml``)::

    [course]
    name = "CPU performance with numba"
    timezone = "Europe/Berlin"        # for due dates written without an offset
    leaderboard_names = false         # true: the challenges' leaderboard shows roster names

    [roster]
    file = "roster.csv"               # optional: a Canvas / Moodle / Gradescope export
    folder = "login"                  # a student's submission folder is named by: id | login

    [[students]]                      # and/or students listed here
    id = "1001"
    name = "Ada Lovelace"
    login = "ada"

    [submissions]
    dir = "submitted"                 # default DIR of `labkit grade --course course.toml`
    time = "auto"                     # auto (timestamp.txt, else mtime) | timestamp | mtime

    [gradebook]
    id_column = "student_id"          # header names of the LMS gradebook CSV
    login_column = "login"            # "" leaves the column out

    [[assignments]]
    name = "lab1"
    labs = ["01_alignment"]           # canonical notebook stems (solutions/<stem>.ipynb)
    points = 10                       # optional: the labs' points scaled to this many
    due = 2026-10-16T23:59:00         # TOML date-time; no offset = [course] timezone
    late = "per-day"                  # none | zero | per-day
    penalty_per_day = 0.1             # per-day: fraction of the points per started day late
    grace_minutes = 10
    max_days_late = 7                 # per-day: later than this scores 0

Every rostered student gets one row (missing work: 0 of its maximum); folders that belong to no
rostered student are listed (``gradebook-unknown.csv``, and on stderr), never counted. Written
beside ``--out``: ``gradebook.csv`` (for the LMS), ``gradebook-detail.csv``,
``gradebook-environment.json``, ``gradebook-unknown.csv``, ``gradescope/…/results.json`` and
``handback/<student id>.zip`` (:func:`write_course`).

Parts: ``coursemodel`` (the error, students, assignments, the course), ``coursetime`` (due dates
and submission times), ``roster`` (LMS roster exports), ``coursefile`` (reading and checking
``course.toml``), ``gradebook`` (the copies that count and the scores); this module writes the
gradebook's files and is ``labkit course``. Every name above is importable from here.
"""
from __future__ import annotations

import csv
import json
import re
import time
from pathlib import Path

# the course's parts, importable from here as before (some only re-exported)
from .coursemodel import Assignment, Course, CourseError, Student
from .coursetime import parse_time, submission_time
from .roster import read_roster_csv, roster_toml
from .coursefile import lab_max_points, load_course
from .gradebook import _fmt, build_gradebook, choose_copies
from .report import _cell

__all__ = ["CourseError", "Student", "Assignment", "Course", "load_course", "read_roster_csv",
           "roster_toml", "parse_time", "submission_time", "build_gradebook", "write_course",
           "lab_max_points", "prepare", "grade_course", "choose_copies", "leaderboard_names",
           "main"]


DETAIL_FIELDS = ("student_id", "name", "login", "folder", "assignment", "score", "max",
                 "raw_points", "raw_max", "status", "submitted", "time_source", "days_late",
                 "penalty", "notebooks", "notes", "review")


def _write_csv(path: Path, head: list[str], rows: list[list]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow([_cell(h) for h in head])
        w.writerows([_cell(v) for v in row] for row in rows)


def _grades_text(course: Course, s: dict) -> str:
    lines = [f"{course.name or 'Course'}: grades of {s['name'] or s['id']} ({s['id']})", ""]
    for a in course.assignments:
        g = s["assignments"][a.name]
        lines.append(f"{a.name}: {_fmt(g['score'])} / {_fmt(g['max'])} ({g['status']})"
                     + (f", submitted {g['submitted']}" if g["submitted"] else ""))
        lines += [f"  {n}" for n in g["notes"]]
    lines += [f"note: {n}" for n in s["notes"]]
    return "\n".join(lines) + "\n"


def leaderboard_names(course: Course | None) -> dict[str, str] | None:
    """What the leaderboard calls each submission folder when the course file opts names in
    (``[course] leaderboard_names = true``): the roster's name (else the folder); None —
    anonymised — without a course file or without the opt-in."""
    if course is None or not course.leaderboard_names:
        return None
    return {course.folder_of(s): (s.name or course.folder_of(s)) for s in course.students}


def write_handback(course: Course, book: dict, results: list[dict], outdir) -> list[Path]:
    """``outdir/handback/<student id>.zip`` for every rostered student: ``grades.txt`` (each
    assignment's score, status, submission time, notes) and the feedback page of each of their
    submission folders — ready to hand back through the LMS."""
    import zipfile
    from .pages import feedback_html
    d = Path(outdir) / "handback"
    d.mkdir(parents=True, exist_ok=True)
    out = []
    for s in book["students"]:
        p = d / f"{_safe(s['id'])}.zip"
        with zipfile.ZipFile(p, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("grades.txt", _grades_text(course, s))
            for f in s["folders"]:
                z.writestr(f"feedback-{_safe(f)}.html",
                           feedback_html(f, results, leaderboard_names(course)))
        out.append(p)
    return out


def write_course(course: Course, book: dict, outdir, results: list[dict] | None = None
                 ) -> list[Path]:
    """Write the gradebook files into ``outdir``: ``gradebook.csv`` (for the LMS: the id
    column(s) and one column per assignment, nothing else), ``gradebook-detail.csv`` (one row
    per student and assignment: status, submission time and its source, days late, penalty,
    notebooks, notes, review), ``gradebook-environment.json`` (the machine that measured),
    ``gradebook-unknown.csv`` (folders of nobody on the roster, not counted),
    ``gradescope/<assignment>/<student id>/results.json`` and, given the ``results``,
    ``handback/<student id>.zip`` (:func:`write_handback`)."""
    from .gsresults import assignment_results, write_results
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    ids = [course.id_column] + ([course.login_column] if course.login_column else [])
    names = [a.name for a in course.assignments]
    table = []
    for s in book["students"]:
        table.append([s["id"]] + ([s["login"]] if course.login_column else [])
                     + [_fmt(s["assignments"][n]["score"]) for n in names])
    files = [out / "gradebook.csv", out / "gradebook-detail.csv",
             out / "gradebook-environment.json", out / "gradebook-unknown.csv"]
    _write_csv(files[0], ids + names, table)
    detail = []
    for s in book["students"]:
        for n in names:
            g = s["assignments"][n]
            detail.append([s["id"], s["name"], s["login"], s["folder"], n, _fmt(g["score"]),
                           _fmt(g["max"]), _fmt(g["raw_points"]), _fmt(g["raw_max"]),
                           g["status"], g["submitted"], g["time_source"], g["days_late"],
                           _fmt(g["penalty"]), "; ".join(g["notebooks"]),
                           "; ".join(g["notes"] + (s["notes"] if n == names[0] else [])),
                           "; ".join(g["review"])])
    _write_csv(files[1], list(DETAIL_FIELDS), detail)
    from labkit import __version__
    files[2].write_text(json.dumps({
        "labkit": __version__, "course": course.name, "course_file": str(course.path),
        "generated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "environment": book["environment"]}, indent=1) + "\n", encoding="utf-8")
    _write_csv(files[3], ["folder", "notebooks", "note"],
               [[u["folder"], "; ".join(u["notebooks"]),
                 ("Gradescope's submitters: " + "; ".join(u["submitters"]) + " — "
                  if u.get("submitters") else "") +
                 "not on the roster: not counted (add the student, or `folder = \"…\"` to "
                 "their [[students]] entry, and grade again)"] for u in book["unknown"]])
    for a in course.assignments:
        for s in book["students"]:
            p = out / "gradescope" / _safe(a.name) / _safe(s["id"]) / "results.json"
            write_results(assignment_results(s["assignments"][a.name], a), p)
    files.append(out / "gradescope")
    if results is not None:
        write_handback(course, book, results, out)
        files.append(out / "handback")
    return files


def _safe(name: str) -> str:
    """A file name from an id or assignment name (no separators, no leading dot)."""
    s = re.sub(r"[^A-Za-z0-9._@+-]", "_", name).lstrip(".")
    return s or "_"


def prepare(path, solutions=None) -> Course:
    """Read the course file and check its labs against the solution notebooks — before any
    grading starts (``labkit grade --course``)."""
    course = load_course(path)
    course.lab_max = lab_max_points(course, solutions)
    return course


def grade_course(course: Course, results: list[dict], folder, outdir, solutions=None
                 ) -> tuple[dict, list[Path]]:
    """Build and write the gradebook (``labkit grade --course``)."""
    lab_max = course.lab_max if course.lab_max is not None else lab_max_points(course,
                                                                               solutions)
    book = build_gradebook(course, results, folder, lab_max)
    return book, write_course(course, book, outdir, results)


def describe(book: dict, files: list[Path]) -> tuple[str, str]:
    """(what to print on stdout, what to print on stderr) after ``labkit grade --course``."""
    n = len(book["students"])
    missing = sum(g["status"] == "missing" for s in book["students"]
                  for g in s["assignments"].values())
    late = sum(bool(g["days_late"]) for s in book["students"] for g in s["assignments"].values())
    out = (f"course {book['course'] or ''}: {n} rostered students, {missing} assignment(s) not "
           f"handed in (0 points), {late} late; wrote " + ", ".join(str(f) for f in files))
    err = ""
    if book["unknown"]:
        err = ("labkit grade: NOT COUNTED — folder(s) of nobody on the roster: "
               + "; ".join(f"{u['folder']} ({len(u['notebooks'])} notebook(s))"
                           for u in book["unknown"])
               + f". Listed in {files[3]}; add them to the roster (or a `folder =` to a "
               "student's entry) and grade again.")
    return out, err


# ------------------------------------------------------------------ `labkit course`
def main(argv: list[str] | None = None) -> int:
    """``labkit course import-roster FILE.csv [--format F] [--out F]`` | ``labkit course check
    course.toml``."""
    import argparse
    import sys
    p = argparse.ArgumentParser(prog="labkit course", description="The course file: roster, "
                                "assignments, due dates (docs/course.md).")
    sub = p.add_subparsers(dest="cmd", required=True)
    imp = sub.add_parser("import-roster", help="[[students]] blocks for course.toml from a "
                         "Canvas, Moodle or Gradescope CSV export")
    imp.add_argument("csv")
    imp.add_argument("--format", default="auto",
                     choices=("auto", "canvas", "moodle", "gradescope", "plain"))
    imp.add_argument("--out", default=None, help="write here (refuses to overwrite) instead of "
                     "printing")
    chk = sub.add_parser("check", help="read a course file and print what it says")
    chk.add_argument("course")
    chk.add_argument("--solutions", default=None, help="canonical notebooks (default "
                     "solutions/)")
    a = p.parse_args(argv)
    try:
        if a.cmd == "import-roster":
            text = roster_toml(read_roster_csv(a.csv, a.format))
            if a.out:
                if Path(a.out).exists():
                    raise CourseError(f"{a.out} exists; not overwritten")
                Path(a.out).write_text(text, encoding="utf-8")
                print(f"wrote {text.count('[[students]]')} students to {a.out}")
            else:
                print(text, end="")
            return 0
        c = load_course(a.course)
        lab_max = lab_max_points(c, a.solutions)
    except (CourseError, FileNotFoundError) as e:
        print(f"labkit course: {e}", file=sys.stderr)
        return 2
    print(f"{c.path}: {c.name or '(no name)'}, {len(c.students)} students (folders named by "
          f"{c.folder_key}), submission times from {c.time_source}; leaderboard: "
          + ("the roster's names" if c.leaderboard_names else "anonymised"))
    for x in c.assignments:
        raw = sum(lab_max[lab] for lab in x.labs)
        print(f"  {x.name}: {', '.join(x.labs)} ({_fmt(raw)} points"
              + (f" scaled to {_fmt(x.points)}" if x.points is not None else "") + "), due "
              + (x.due.isoformat(" ", "minutes") if x.due else "—") + f", late: {x.late}"
              + (f" −{x.penalty_per_day:g} per day" if x.late == "per-day" else ""))
    return 0
