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
"""
from __future__ import annotations

import csv
import dataclasses
import datetime as dt
import json
import math
import os
import re
import time
from pathlib import Path
from typing import Any

from .report import _cell, counted, review_notes

__all__ = ["CourseError", "Student", "Assignment", "Course", "load_course", "read_roster_csv",
           "roster_toml", "parse_time", "submission_time", "build_gradebook", "write_course",
           "lab_max_points", "prepare", "grade_course", "choose_copies", "leaderboard_names",
           "main"]

UTC = dt.timezone.utc
LATE_POLICIES = ("none", "zero", "per-day")
TIME_SOURCES = ("auto", "timestamp", "mtime")
TIMESTAMP_FILE = "timestamp.txt"     # what nbgrader's exchange writes beside a submission
_LAB = re.compile(r"^\d\d_[A-Za-z0-9_]+$")


class CourseError(ValueError):
    """A course file or roster that cannot be used; the message says where and why."""


@dataclasses.dataclass
class Student:
    """One rostered student."""

    id: str
    name: str = ""
    login: str = ""
    folder: str = ""        # the submission folder's name, when it is neither id nor login


@dataclasses.dataclass
class Assignment:
    """One assignment: the labs it is made of, its points, due date and late policy."""

    name: str
    labs: tuple[str, ...]
    points: float | None = None
    due: dt.datetime | None = None
    late: str = "none"
    penalty_per_day: float = 0.0
    grace: dt.timedelta = dt.timedelta(0)
    max_days_late: int | None = None


@dataclasses.dataclass
class Course:
    """A course file, read and checked."""

    path: Path
    name: str
    timezone: dt.tzinfo | None
    students: list[Student]
    assignments: list[Assignment]
    submissions: Path | None = None
    folder_key: str = "id"
    time_source: str = "auto"
    id_column: str = "student_id"
    login_column: str = "login"
    lab_max: dict[str, float] | None = None     # set by prepare(): the labs' maximum points
    leaderboard_names: bool = False             # [course] leaderboard_names: names, not labels

    def folder_of(self, s: Student) -> str:
        """The name of ``s``'s submission folder (or notebook stem)."""
        return s.folder or (s.login if self.folder_key == "login" else s.id)


# ------------------------------------------------------------------ times
_TIME = re.compile(r"(\d{4}-\d\d-\d\d)[ T](\d\d:\d\d(?::\d\d(?:\.\d+)?)?)\s*(.*)")


def _zone(name: str, where: str) -> dt.tzinfo:
    if name in ("UTC", "Z", "GMT", "utc", "z"):
        return UTC
    m = re.fullmatch(r"([+-])(\d\d):?(\d\d)", name)
    if m:
        delta = dt.timedelta(hours=int(m.group(2)), minutes=int(m.group(3)))
        return dt.timezone(-delta if m.group(1) == "-" else delta)
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise CourseError(f"{where}: unknown time zone {name!r} (write e.g. UTC, +02:00 or "
                          "Europe/Berlin)") from None


def parse_time(value: Any, tz: dt.tzinfo | None, where: str) -> dt.datetime:
    """A point in time (aware) from a TOML date-time or a text such as nbgrader's timestamp
    (``2026-10-16 23:59:00.123456 UTC``), ISO 8601 (``2026-10-16T23:59:00+02:00``) or
    ``2026-10-16 23:59 Europe/Berlin``; without a zone ``tz`` is used (``None``: an error)."""
    if isinstance(value, dt.datetime):
        t = value
    elif isinstance(value, dt.date):
        raise CourseError(f"{where}: {value} is a date without a time of day; write e.g. "
                          f"{value}T23:59:00")
    elif isinstance(value, str):
        m = _TIME.fullmatch(value.strip())
        if not m:
            raise CourseError(f"{where}: cannot read the time {value!r}; write e.g. "
                              "2026-10-16T23:59:00+02:00")
        try:
            t = dt.datetime.fromisoformat(f"{m.group(1)}T{m.group(2)}")
        except ValueError as e:
            raise CourseError(f"{where}: cannot read the time {value!r}: {e}") from None
        if m.group(3):
            t = t.replace(tzinfo=_zone(m.group(3).strip(), where))
    else:
        raise CourseError(f"{where}: expected a date-time, got {type(value).__name__} "
                          f"{value!r}")
    if t.tzinfo is None:
        if tz is None:
            raise CourseError(f"{where}: {t.isoformat(' ')} has no time zone; add an offset "
                              "(…+02:00) or set `timezone` in [course]")
        t = t.replace(tzinfo=tz)
    return t


def submission_time(notebook: Path, top: Path | None, source: str = "auto"
                    ) -> tuple[dt.datetime | None, str]:
    """When ``notebook`` was handed in, and how that is known: ``timestamp.txt`` (the nearest
    one in the notebook's folder or a parent up to the student's folder ``top``, as nbgrader's
    exchange writes it; ``top=None``: a notebook not in a student folder has none), ``mtime``
    (the file's modification time) or why it is unknown."""
    notes = []
    if source in ("auto", "timestamp") and top is not None:
        d = notebook if notebook.is_dir() else notebook.parent
        top = top.resolve()
        while d.resolve() == top or top in d.resolve().parents:
            f = d / TIMESTAMP_FILE
            if f.is_file() and not f.is_symlink():
                try:
                    with open(f, encoding="utf-8", errors="replace") as fh:
                        text = fh.read(200)
                    return parse_time(text.strip(), UTC, str(f)), TIMESTAMP_FILE
                except CourseError as e:
                    notes.append(f"unreadable {TIMESTAMP_FILE} ({e})")
                    break
            if d.resolve() == top:
                break
            d = d.parent
    if source == "timestamp":
        return None, "unknown: " + (notes[0] if notes else f"no {TIMESTAMP_FILE}")
    try:
        st = os.stat(notebook, follow_symlinks=False)
    except OSError as e:
        return None, f"unknown: {e.strerror}"
    return (dt.datetime.fromtimestamp(st.st_mtime, UTC),
            "mtime" + (f" ({notes[0]})" if notes else ""))


# ------------------------------------------------------------------ the roster
def _norm(h: str) -> str:
    return " ".join(h.replace("\ufeff", "").strip().lower().split())


def read_roster_csv(path, fmt: str = "auto") -> list[Student]:
    """Students from an LMS export: Canvas (gradebook export: ``Student``, ``ID``, ``SIS User
    ID``, ``SIS Login ID``; its "Points Possible" row and test student are skipped), Moodle
    (``First name``, ``Last name``/``Surname``, ``ID number``, ``Username`` or ``Email
    address``), Gradescope (roster or grades export: ``First Name``/``Last Name`` or ``Name``,
    ``SID``, ``Email``; only the ``Student`` role) or plain (``id``, ``name``, ``login``).
    ``fmt``: ``auto`` (told by the header), ``canvas``, ``moodle``, ``gradescope``, ``plain``."""
    path = Path(path)
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:
            table = list(csv.reader(f))
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise CourseError(f"{path}: cannot read the roster: {e}") from None
    if not table:
        raise CourseError(f"{path}: the roster is empty")
    head = [_norm(h) for h in table[0]]
    col = {h: i for i, h in reversed(list(enumerate(head)))}
    has = lambda *names: all(n in col for n in names)  # noqa: E731
    if fmt == "auto":
        fmt = ("canvas" if has("student", "id") and ("sis user id" in col or "sis login id"
                                                      in col)
               else "gradescope" if has("sid")
               else "moodle" if has("first name") and ("id number" in col or "username" in col)
               else "plain" if has("id")
               else "")
        if not fmt:
            raise CourseError(
                f"{path}: cannot tell which LMS exported this roster (columns: "
                f"{', '.join(table[0][:8])}). Expected Canvas (Student, ID, SIS User ID, SIS "
                "Login ID), Moodle (First name, Last name, ID number, Username), Gradescope "
                "(First Name, Last Name, SID, Email) or plain (id, name, login)")
    need = {"canvas": ("student", "id"), "moodle": ("first name",), "gradescope": ("sid",),
            "plain": ("id",)}.get(fmt)
    if need is None:
        raise CourseError(f"unknown roster format {fmt!r}; use auto, canvas, moodle, gradescope "
                          "or plain")
    if not has(*need):
        raise CourseError(f"{path}: a {fmt} roster needs the column(s) "
                          f"{', '.join(need)}; this one has {', '.join(table[0][:8])}")

    def get(row, *names):
        for n in names:
            i = col.get(n)
            if i is not None and i < len(row) and row[i].strip():
                return row[i].strip()
        return ""

    out: list[Student] = []
    for line, row in enumerate(table[1:], start=2):
        if not any(c.strip() for c in row):
            continue
        if fmt == "canvas":
            who = get(row, "student")
            if who.startswith("Points Possible") or who == "Student, Test" or (
                    not get(row, "id") and not get(row, "sis user id")):
                continue                   # Canvas's "Points Possible" row and test student
            s = Student(get(row, "sis user id", "id"), who, get(row, "sis login id"))
        elif fmt == "gradescope":
            if "role" in col and get(row, "role").lower() not in ("", "student"):
                continue
            name = get(row, "name", "full name") or " ".join(
                x for x in (get(row, "first name"), get(row, "last name")) if x)
            s = Student(get(row, "sid"), name, get(row, "email"))
        elif fmt == "moodle":
            name = " ".join(x for x in (get(row, "first name"),
                                        get(row, "last name", "surname")) if x)
            s = Student(get(row, "id number", "username", "email address"), name,
                        get(row, "username", "email address"))
        else:
            s = Student(get(row, "id"), get(row, "name"), get(row, "login"),
                        get(row, "folder"))
        if not s.id:
            raise CourseError(f"{path} line {line}: a student without an id ({s.name or row})")
        out.append(s)
    if not out:
        raise CourseError(f"{path}: no students in the roster")
    return out


def roster_toml(students: list[Student]) -> str:
    """``[[students]]`` blocks for a course file."""
    q = lambda s: json.dumps(s, ensure_ascii=False)  # noqa: E731 - a TOML basic string
    blocks = []
    for s in students:
        lines = ["[[students]]", f"id = {q(s.id)}", f"name = {q(s.name)}", f"login = {q(s.login)}"]
        if s.folder:
            lines.append(f"folder = {q(s.folder)}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n"


# ------------------------------------------------------------------ the course file
def _table(doc: dict, key: str, where: str) -> dict:
    v = doc.get(key, {})
    if not isinstance(v, dict):
        raise CourseError(f"{where}: [{key}] must be a table")
    return v


def _str(t: dict, key: str, where: str, default: str = "") -> str:
    v = t.get(key, default)
    if isinstance(v, bool) or not isinstance(v, (str, int)):
        raise CourseError(f"{where}: `{key}` must be text, got {v!r}")
    return str(v).strip()


def _num(t: dict, key: str, where: str, default=None, minimum: float = 0.0):
    v = t.get(key, default)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) \
            or v < minimum:
        raise CourseError(f"{where}: `{key}` must be a number ≥ {minimum:g}, got {v!r}")
    return float(v)


def _known(t: dict, keys: set, where: str) -> None:
    extra = sorted(set(t) - keys)
    if extra:
        raise CourseError(f"{where}: unknown key(s) {', '.join(extra)}; known: "
                          f"{', '.join(sorted(keys))}")


def _assignment(t: Any, i: int, tz, path: Path) -> Assignment:
    where = f"{path.name}: [[assignments]] #{i + 1}"
    if not isinstance(t, dict):
        raise CourseError(f"{where} must be a table")
    _known(t, {"name", "labs", "points", "due", "late", "penalty_per_day", "grace_minutes",
               "max_days_late"}, where)
    name = _str(t, "name", where)
    if not name:
        raise CourseError(f"{where}: needs a `name` (its gradebook column)")
    where = f"{path.name}: assignment {name!r}"
    labs = t.get("labs")
    if isinstance(labs, str):
        labs = [labs]
    if not isinstance(labs, list) or not labs or not all(isinstance(x, str) for x in labs):
        raise CourseError(f"{where}: `labs` must be a list of lab notebooks, e.g. "
                          "[\"01_alignment\"]")
    labs = [x.strip().removesuffix(".ipynb") for x in labs]
    bad = [x for x in labs if not _LAB.match(x)]
    if bad:
        raise CourseError(f"{where}: {', '.join(map(repr, bad))} is not a lab notebook's stem "
                          "(NN_name, as in solutions/: e.g. 01_alignment)")
    if len(set(labs)) != len(labs):
        raise CourseError(f"{where}: a lab is listed twice in `labs`")
    late = _str(t, "late", where, "none")
    if late not in LATE_POLICIES:
        raise CourseError(f"{where}: `late` must be one of {', '.join(LATE_POLICIES)}, got "
                          f"{late!r}")
    due = parse_time(t["due"], tz, f"{where}: due") if "due" in t else None
    if late != "none" and due is None:
        raise CourseError(f"{where}: late = {late!r} needs a `due` date")
    per_day = _num(t, "penalty_per_day", where, 0.0)
    if late == "per-day" and not 0 < per_day <= 1:
        raise CourseError(f"{where}: late = \"per-day\" needs `penalty_per_day` between 0 and "
                          "1 (the fraction of the points taken per started day late, e.g. 0.1)")
    if late != "per-day" and ("penalty_per_day" in t or "max_days_late" in t):
        raise CourseError(f"{where}: `penalty_per_day` and `max_days_late` are for late = "
                          "\"per-day\"")
    max_days = t.get("max_days_late")
    if max_days is not None and (isinstance(max_days, bool) or not isinstance(max_days, int)
                                 or max_days < 0):
        raise CourseError(f"{where}: `max_days_late` must be a whole number of days ≥ 0")
    points = _num(t, "points", where)
    if points is not None and points <= 0:
        raise CourseError(f"{where}: `points` must be > 0 (or left out: the labs' own points)")
    return Assignment(name=name, labs=tuple(labs), points=points, due=due, late=late,
                      penalty_per_day=per_day,
                      grace=dt.timedelta(minutes=_num(t, "grace_minutes", where, 0.0)),
                      max_days_late=max_days)


def load_course(path) -> Course:
    """Read and check a course file (TOML); :class:`CourseError` says what is wrong."""
    try:
        import tomllib
    except ImportError:                      # Python 3.10
        try:
            import tomli as tomllib          # type: ignore[no-redef]
        except ImportError:
            raise CourseError("reading a course file needs Python ≥ 3.11 (tomllib) or the "
                              "tomli package (pip install tomli)") from None
    path = Path(path)
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise CourseError(f"cannot read the course file {path}: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise CourseError(f"{path}: not UTF-8 text ({e})") from None
    except tomllib.TOMLDecodeError as e:
        raise CourseError(f"{path}: not valid TOML: {e}") from None
    _known(doc, {"course", "roster", "students", "submissions", "gradebook", "assignments"},
           path.name)
    base = path.parent
    c = _table(doc, "course", path.name)
    _known(c, {"name", "timezone", "leaderboard_names"}, f"{path.name}: [course]")
    names_opt = c.get("leaderboard_names", False)
    if not isinstance(names_opt, bool):
        raise CourseError(f"{path.name}: [course] leaderboard_names must be true or false (true: "
                          "the challenges' leaderboard shows the students' names; default false: "
                          f"anonymised), got {names_opt!r}")
    tz = _zone(_str(c, "timezone", f"{path.name}: [course]"), f"{path.name}: [course] "
               "timezone") if c.get("timezone") else None
    r = _table(doc, "roster", path.name)
    _known(r, {"file", "format", "folder"}, f"{path.name}: [roster]")
    folder_key = _str(r, "folder", f"{path.name}: [roster]", "id")
    if folder_key not in ("id", "login"):
        raise CourseError(f"{path.name}: [roster] folder must be \"id\" or \"login\" (what a "
                          f"student's submission folder is named by), got {folder_key!r}")
    students: list[Student] = []
    if r.get("file"):
        students += read_roster_csv(base / _str(r, "file", f"{path.name}: [roster]"),
                                    _str(r, "format", f"{path.name}: [roster]", "auto"))
    listed = doc.get("students", [])
    if not isinstance(listed, list):
        raise CourseError(f"{path.name}: students must be [[students]] tables")
    for i, t in enumerate(listed):
        where = f"{path.name}: [[students]] #{i + 1}"
        if not isinstance(t, dict):
            raise CourseError(f"{where} must be a table")
        _known(t, {"id", "name", "login", "folder"}, where)
        s = Student(*(_str(t, k, where) for k in ("id", "name", "login", "folder")))
        if not s.id:
            raise CourseError(f"{where}: needs an `id`")
        students.append(s)
    if not students:
        raise CourseError(f"{path.name}: no students: add [[students]] or [roster] file = "
                          "\"roster.csv\" (labkit course import-roster makes the former)")
    sub = _table(doc, "submissions", path.name)
    _known(sub, {"dir", "time"}, f"{path.name}: [submissions]")
    time_source = _str(sub, "time", f"{path.name}: [submissions]", "auto")
    if time_source not in TIME_SOURCES:
        raise CourseError(f"{path.name}: [submissions] time must be one of "
                          f"{', '.join(TIME_SOURCES)}, got {time_source!r}")
    g = _table(doc, "gradebook", path.name)
    _known(g, {"id_column", "login_column"}, f"{path.name}: [gradebook]")
    assignments = doc.get("assignments", [])
    if not isinstance(assignments, list) or not assignments:
        raise CourseError(f"{path.name}: no [[assignments]]: each names its labs, e.g. "
                          "labs = [\"01_alignment\"]")
    course = Course(
        path=path, name=_str(c, "name", f"{path.name}: [course]"), timezone=tz,
        students=students,
        assignments=[_assignment(t, i, tz, path) for i, t in enumerate(assignments)],
        submissions=(base / _str(sub, "dir", "")) if sub.get("dir") else None,
        folder_key=folder_key, time_source=time_source,
        id_column=_str(g, "id_column", f"{path.name}: [gradebook]", "student_id") or
        "student_id",
        login_column=_str(g, "login_column", f"{path.name}: [gradebook]", "login"),
        leaderboard_names=names_opt)
    _check_unique(course)
    return course


def _check_unique(course: Course) -> None:
    where = course.path.name
    for what, key in (("id", lambda s: s.id), ("submission folder", course.folder_of)):
        seen: dict[str, Student] = {}
        for s in course.students:
            k = key(s)
            if what != "id" and not k:
                raise CourseError(f"{where}: student {s.id} has no {course.folder_key} to name "
                                  "their submission folder; add `folder = \"…\"` or a login")
            if k in seen:
                raise CourseError(f"{where}: two students with the {what} {k!r} ({seen[k].id}, "
                                  f"{s.id})")
            seen[k] = s
    names = [a.name for a in course.assignments]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise CourseError(f"{where}: assignment name(s) used twice: {', '.join(dup)}")
    head = [course.id_column] + ([course.login_column] if course.login_column else [])
    clash = sorted(set(head) & set(names))
    if clash:
        raise CourseError(f"{where}: assignment {clash[0]!r} has the name of a gradebook id "
                          "column; rename one")
    labs = [lab for a in course.assignments for lab in a.labs]
    twice = sorted({x for x in labs if labs.count(x) > 1})
    if twice:
        raise CourseError(f"{where}: lab(s) {', '.join(twice)} in more than one assignment; "
                          "each lab counts for one assignment")


def lab_max_points(course: Course, solutions=None) -> dict[str, float]:
    """The maximum points of every lab the course uses, from the canonical notebooks; an error
    names a lab that is not among them."""
    from .notebooks import load_solutions
    canon = load_solutions(solutions)
    have = {Path(k).stem: v.max_points for k, v in canon.items()}
    for a in course.assignments:
        for lab in a.labs:
            if lab not in have:
                raise CourseError(f"{course.path.name}: assignment {a.name!r} names lab {lab!r}, "
                                  f"which is not a solution notebook (have: "
                                  f"{', '.join(sorted(have))})")
    return have


# ------------------------------------------------------------------ the gradebook
def _fmt(x: float) -> str:
    return f"{round(x, 2):g}"


def _late(a: Assignment, when: dt.datetime | None, score: float, maximum: float
          ) -> tuple[int, float, str]:
    """(days late — started days, the penalty in points, a note)."""
    if a.due is None or when is None:
        return 0, 0.0, ""
    over = (when - a.due - a.grace).total_seconds()
    if over <= 0:
        return 0, 0.0, ""
    days = math.ceil(over / 86400)
    if a.late == "none":
        return days, 0.0, f"{days} day(s) late, no penalty"
    if a.late == "zero" or (a.max_days_late is not None and days > a.max_days_late):
        return days, score, f"{days} day(s) late: scored 0"
    pen = min(score, a.penalty_per_day * maximum * days)
    return days, pen, (f"{days} day(s) late: −{_fmt(pen)} ({a.penalty_per_day:g} × "
                       f"{_fmt(maximum)} per day)")


def _student_map(course: Course, folders: set[str], export: dict | None = None
                 ) -> tuple[dict[str, list[Student]], list[str]]:
    """Submission folder (or notebook stem) → its rostered students (one; a Gradescope export's
    group submission: each submitter on the roster); the folders of nobody."""
    by = {course.folder_of(s): s for s in course.students}
    folded: dict[str, list[Student]] = {}
    for k, s in by.items():
        folded.setdefault(k.casefold(), []).append(s)
    exported: dict[str, list[Student]] = {}
    if export:
        from .gsexport import match
        exported, _ = match({f: e for f, e in export.items() if f in folders}, course.students)
    out, unknown = {}, []
    for f in sorted(folders):
        if export and f in export:
            if f in exported:
                out[f] = exported[f]
            else:
                unknown.append(f)
            continue
        s = by.get(f)
        if s is None and len(folded.get(f.casefold(), [])) == 1:
            s = folded[f.casefold()][0]           # Ada/ for ada: same student
        if s is None:
            unknown.append(f)
        else:
            out[f] = [s]
    return out, unknown


def _lab(r: dict) -> str:
    return Path(r.get("canonical") or "").stem


def _points(r: dict) -> float:
    return sum(float(e["points"]) for e in r["exercises"])


def _earlier(when: dt.datetime | None) -> float:
    """Larger for an earlier time (a key to maximise); an unknown time is never 'earlier'."""
    return -when.timestamp() if when is not None else -math.inf


def _penalised(a: Assignment, pick: dict[str, dict], lab_max: dict[str, float], when_of
               ) -> dict:
    """The assignment's score from the copies in ``pick`` (lab → result): raw points, scaled to
    ``points``, the late penalty from the latest known time of them (``when_of(r)`` → (time or
    None, its source)), and what is left (``final``)."""
    raw_max = sum(float(lab_max.get(lab, 0.0)) for lab in a.labs)
    maximum = a.points if a.points is not None else raw_max
    raw = sum(_points(r) for r in pick.values())
    times = [when_of(r) for r in pick.values()]
    known = [t for t in times if t[0] is not None]
    when, how = max(known, key=lambda t: t[0]) if known else (None, "")
    if times and not known:
        how = times[0][1]
    score = raw * maximum / raw_max if a.points is not None and raw_max else raw
    days, penalty, note = _late(a, when, score, maximum)
    return {"raw": raw, "raw_max": raw_max, "max": maximum, "score": score, "when": when,
            "how": how, "unknown_time": bool(times) and not known, "days": days,
            "penalty": penalty, "late_note": note, "final": max(0.0, score - penalty)}


def _best_copies(a: Assignment, copies: dict[str, list[dict]], lab_max: dict[str, float],
                 when_of) -> dict[str, dict]:
    """The copy of each lab that counts for ``a``: the choice whose score **after the late
    penalty** is the largest (a late 7/7 does not beat an on-time 5/7 under ``zero``); of equal
    ones, the one with more of the assignment's labs, then the earlier. The penalty depends only
    on the latest of the chosen copies' times, so each copy's time is tried as that latest
    time T, with each lab's best copy handed in by T (a copy of unknown time fits any T)."""
    if not any(copies.values()):
        return {}
    ts = sorted({t for rs in copies.values() for r in rs if (t := when_of(r)[0]) is not None})
    best, best_key = {}, None
    for limit in [None, *ts]:
        pick = {}
        for lab, rs in copies.items():
            ok = [r for r in rs if when_of(r)[0] is None
                  or (limit is not None and when_of(r)[0] <= limit)]
            if ok:
                pick[lab] = max(ok, key=lambda r: (_points(r), r.get("status") == "graded",
                                                   _earlier(when_of(r)[0]),
                                                   -len(r["notebook"])))
        if not pick:
            continue
        v = _penalised(a, pick, lab_max, when_of)
        key = (round(v["final"], 6), len(pick), _earlier(v["when"]))
        if best_key is None or key > best_key:
            best, best_key = pick, key
    return best


def _context(course: Course, results: list[dict], folder: Path) -> dict:
    """What choosing and grading share: the Gradescope export (if the folder is one), the
    folder → rostered students map, the folders of nobody, and each copy's submission time."""
    from .gsexport import read_export
    export = read_export(folder)
    smap, unknown = _student_map(course, {r["student"] for r in results}, export)
    handed = {f: (e.created_at, "submission_metadata.yml") for f, e in (export or {}).items()
              if e.created_at is not None}
    memo: dict[int, tuple] = {}

    def when_of(r: dict) -> tuple[dt.datetime | None, str]:
        if id(r) not in memo:
            if r["student"] in handed:          # a Gradescope export's :created_at:
                memo[id(r)] = handed[r["student"]]
            else:
                top = folder / r["student"]
                memo[id(r)] = submission_time(
                    folder / r["notebook"], top if top.is_dir() and not top.is_symlink() else None,
                    course.time_source)
        return memo[id(r)]

    return {"export": export, "smap": smap, "unknown": unknown, "when_of": when_of}


def _choose(course: Course, results: list[dict], folder: Path, lab_max: dict[str, float]
            ) -> tuple[dict, dict, dict]:
    from .batch import _dedupe, _undo_dedupe
    _undo_dedupe(results)           # every copy, whichever grade() set aside by raw points
    ctx = _context(course, results, folder)
    per: dict[str, list[dict]] = {}     # rostered student id → all their copies
    for r in results:
        if r.get("status") == "duplicate":      # set aside by an older run: no status of its own
            continue
        for s in ctx["smap"].get(r["student"], ()):
            per.setdefault(s.id, []).append(r)
    picks: dict[str, dict[str, dict[str, dict]]] = {}
    chosen: set[int] = set()
    copies_of: dict[tuple[str, str], dict[str, list[dict]]] = {}
    for s in course.students:
        rows = per.get(s.id, [])
        picks[s.id] = {}
        for a in course.assignments:
            copies = {lab: [r for r in rows if _lab(r) == lab] for lab in a.labs}
            copies_of[s.id, a.name] = copies
            picks[s.id][a.name] = _best_copies(a, copies, lab_max, ctx["when_of"])
            chosen |= {id(r) for r in picks[s.id][a.name].values()}
    lab_of = {lab: a for a in course.assignments for lab in a.labs}

    def alone(r: dict) -> float:        # a copy no rostered student's choice names
        a = lab_of.get(_lab(r))
        return (_points(r) if a is None else
                _penalised(a, {_lab(r): r}, lab_max, ctx["when_of"])["final"])

    # within a folder, the copy the gradebook counts is the one grades.csv and the pages show
    _dedupe(results, key=lambda r: (id(r) in chosen, round(alone(r), 6),
                                    _earlier(ctx["when_of"](r)[0]),
                                    r.get("status") == "graded", -len(r["notebook"])),
            why="the best score after the late penalty; of equal ones the earlier")
    ctx["per"], ctx["copies"] = per, copies_of
    return picks, ctx, lab_of


def choose_copies(course: Course, results: list[dict], folder,
                  lab_max: dict[str, float] | None = None) -> dict[str, dict[str, dict[str, dict]]]:
    """The copy of each lab that counts, for every rostered student and assignment: ``{student
    id: {assignment: {lab: result}}}`` — the student's best score **after** the late penalty
    (:func:`_best_copies`), not before it. ``results`` are re-marked in place to agree: in each
    submission folder the counted copy of a lab is this one, the others ``duplicate``
    (:func:`labkit.grade.batch._dedupe`, which grade() ran by points alone)."""
    lab_max = lab_max if lab_max is not None else (course.lab_max or {})
    return _choose(course, results, Path(folder), lab_max)[0]


def build_gradebook(course: Course, results: list[dict], folder, lab_max: dict[str, float],
                    now: dt.datetime | None = None) -> dict:
    """The gradebook of ``results`` (:func:`labkit.grade.grade` on ``folder``) against the
    course: ``{"students": [...one per rostered student, in roster order...], "unknown":
    [...folders of nobody...], "unassigned": [...notebooks of labs in no assignment...],
    "environment": [...stamps...]}``. Each student has one entry per assignment (score, max,
    status, submitted, time source, days late, penalty, notebooks, notes, review: the grader's
    flags and the rows that need an instructor's look in the copies that count). The copy of a lab
    that counts is chosen after the late penalty (:func:`choose_copies`; ``results`` are
    re-marked in place to agree)."""
    folder = Path(folder)
    now = now or dt.datetime.now(UTC)
    picks, ctx, lab_of = _choose(course, results, folder, lab_max)
    export, smap, unknown = ctx["export"], ctx["smap"], ctx["unknown"]
    unassigned = []
    students = []
    for s in course.students:
        entry = {"id": s.id, "name": s.name, "login": s.login, "folder": course.folder_of(s),
                 "folders": sorted(f for f, xs in smap.items() if any(x is s for x in xs)),
                 "assignments": {}, "notes": []}
        for r in counted(ctx["per"].get(s.id, [])):
            stem = _lab(r)
            if not stem:
                entry["notes"].append(f"{r['notebook']}: {r.get('status')}"
                                      + (f" ({r['error']})" if r.get("error") else ""))
            elif stem not in lab_of:
                entry["notes"].append(f"{r['notebook']}: {stem} is in no assignment")
                unassigned.append({"student": s.id, "notebook": r["notebook"], "lab": stem})
        for a in course.assignments:
            entry["assignments"][a.name] = _grade_assignment(
                a, ctx["copies"][s.id, a.name], picks[s.id][a.name], lab_max, now,
                ctx["when_of"])
        students.append(entry)
    unknown_rows = [{"folder": f, "notebooks": sorted(r["notebook"] for r in results
                                                      if r["student"] == f)}
                    for f in unknown]
    if export:                      # who Gradescope says handed them in, when nobody matched
        from .gsexport import match
        _, notes = match(export, course.students)
        for row in unknown_rows:
            row["submitters"] = [n.split(": ", 1)[1] for n in notes
                                 if n.startswith(row["folder"] + ": ")]
    stamps = []
    for r in counted(results):
        env = r.get("environment")
        if env and env not in stamps:
            stamps.append(env)
    return {"course": course.name, "students": students, "unknown": unknown_rows,
            "unassigned": unassigned, "environment": stamps}


def _grade_assignment(a: Assignment, copies: dict[str, list[dict]], pick: dict[str, dict],
                      lab_max: dict[str, float], now: dt.datetime, when_of) -> dict:
    notebooks, notes, exercises = [], [], {}
    for lab in a.labs:
        best = pick.get(lab)
        if best is None:
            notes.append(f"{lab}: not handed in" if not copies.get(lab) else
                         f"{lab}: left out — with it the assignment scores less after the late "
                         "penalty")
            continue
        n = len(copies[lab])
        if n > 1:
            notes.append(f"{lab}: {n} copies from this student; {best['notebook']} counts (the "
                         "best score after the late penalty)")
        exercises[lab] = best
        notebooks.append(best["notebook"])
        status = best.get("duplicate_status", best.get("status"))
        if status not in ("graded", None):
            notes.append(f"{lab}: {status}" + (f" ({best['error']})" if best.get("error") else ""))
        when, how = when_of(best)
        if when is not None and when > now + dt.timedelta(hours=1):
            notes.append(f"{lab}: its time ({how}, {when.isoformat(timespec='seconds')}) is "
                         "after the grading time; check it")
    review = [f"{lab}: {ex + ': ' if ex else ''}{note}" for lab, best in exercises.items()
              for ex, note in review_notes(best)]
    v = _penalised(a, pick, lab_max, when_of)
    when = v["when"]
    if v["unknown_time"]:
        notes.append(f"submission time {v['how']}; no late penalty applied")
    if v["late_note"]:
        notes.append(v["late_note"])
    status = ("missing" if not notebooks else
              "partial" if len(notebooks) < len(a.labs) else "late" if v["days"] else "on time"
              if a.due else "handed in")
    return {"score": round(v["final"], 2), "max": round(v["max"], 2),
            "raw_points": round(v["raw"], 2), "raw_max": round(v["raw_max"], 2),
            "status": status,
            "submitted": when.astimezone(UTC).isoformat(timespec="seconds") if when else "",
            "time_source": v["how"], "days_late": v["days"], "penalty": round(v["penalty"], 2),
            "notebooks": notebooks, "notes": notes, "review": review, "graded": exercises,
            "lab_max": {lab: float(lab_max.get(lab, 0.0)) for lab in a.labs}}


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
    from .gradescope import assignment_results, write_results
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
