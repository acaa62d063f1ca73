"""Reading a course file (``course.toml``, ``docs/course.md``): every table and key checked,
with a :class:`~.coursemodel.CourseError` that says where and why, and the labs' maximum points
from the canonical notebooks."""
from __future__ import annotations

import datetime as dt
import math
import re
from pathlib import Path
from typing import Any

from .coursemodel import LATE_POLICIES, TIME_SOURCES, Assignment, Course, CourseError, Student
from .coursetime import _zone, parse_time
from .roster import read_roster_csv

_LAB = re.compile(r"^\d\d_[A-Za-z0-9_]+$")


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
    path = Path(path)
    doc = _read_toml(path)
    _known(doc, {"course", "roster", "students", "submissions", "gradebook", "assignments"},
           path.name)
    c, tz, names_opt = _course_table(doc, path.name)
    folder_key, students = _roster(doc, path)
    time_source, sub = _submissions_table(doc, path.name)
    g = _table(doc, "gradebook", path.name)
    _known(g, {"id_column", "login_column"}, f"{path.name}: [gradebook]")
    assignments = _assignment_tables(doc, path.name)
    base = path.parent
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


def _read_toml(path: Path) -> dict:
    """The course file's TOML document (tomllib, or tomli on Python 3.10)."""
    try:
        import tomllib
    except ImportError:                      # Python 3.10
        try:
            import tomli as tomllib          # type: ignore[no-redef]
        except ImportError:
            raise CourseError("reading a course file needs Python ≥ 3.11 (tomllib) or the "
                              "tomli package (pip install tomli)") from None
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise CourseError(f"cannot read the course file {path}: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise CourseError(f"{path}: not UTF-8 text ({e})") from None
    except tomllib.TOMLDecodeError as e:
        raise CourseError(f"{path}: not valid TOML: {e}") from None


def _course_table(doc: dict, name: str) -> tuple[dict, dt.tzinfo | None, bool]:
    """``[course]``: the table, its time zone (None: none set) and ``leaderboard_names``."""
    c = _table(doc, "course", name)
    _known(c, {"name", "timezone", "leaderboard_names"}, f"{name}: [course]")
    names_opt = c.get("leaderboard_names", False)
    if not isinstance(names_opt, bool):
        raise CourseError(f"{name}: [course] leaderboard_names must be true or false (true: "
                          "the challenges' leaderboard shows the students' names; default false: "
                          f"anonymised), got {names_opt!r}")
    tz = _zone(_str(c, "timezone", f"{name}: [course]"), f"{name}: [course] "
               "timezone") if c.get("timezone") else None
    return c, tz, names_opt


def _roster(doc: dict, path: Path) -> tuple[str, list[Student]]:
    """``[roster]`` and ``[[students]]``: what names a submission folder, and the students
    (the roster file's first, then the listed ones)."""
    r = _table(doc, "roster", path.name)
    _known(r, {"file", "format", "folder"}, f"{path.name}: [roster]")
    folder_key = _str(r, "folder", f"{path.name}: [roster]", "id")
    if folder_key not in ("id", "login"):
        raise CourseError(f"{path.name}: [roster] folder must be \"id\" or \"login\" (what a "
                          f"student's submission folder is named by), got {folder_key!r}")
    students: list[Student] = []
    if r.get("file"):
        students += read_roster_csv(path.parent / _str(r, "file", f"{path.name}: [roster]"),
                                    _str(r, "format", f"{path.name}: [roster]", "auto"))
    students += _listed_students(doc, path.name)
    if not students:
        raise CourseError(f"{path.name}: no students: add [[students]] or [roster] file = "
                          "\"roster.csv\" (labkit course import-roster makes the former)")
    return folder_key, students


def _listed_students(doc: dict, name: str) -> list[Student]:
    """The students of the ``[[students]]`` tables."""
    listed = doc.get("students", [])
    if not isinstance(listed, list):
        raise CourseError(f"{name}: students must be [[students]] tables")
    students = []
    for i, t in enumerate(listed):
        where = f"{name}: [[students]] #{i + 1}"
        if not isinstance(t, dict):
            raise CourseError(f"{where} must be a table")
        _known(t, {"id", "name", "login", "folder"}, where)
        s = Student(*(_str(t, k, where) for k in ("id", "name", "login", "folder")))
        if not s.id:
            raise CourseError(f"{where}: needs an `id`")
        students.append(s)
    return students


def _submissions_table(doc: dict, name: str) -> tuple[str, dict]:
    """``[submissions]``: where submission times come from, and the table."""
    sub = _table(doc, "submissions", name)
    _known(sub, {"dir", "time"}, f"{name}: [submissions]")
    time_source = _str(sub, "time", f"{name}: [submissions]", "auto")
    if time_source not in TIME_SOURCES:
        raise CourseError(f"{name}: [submissions] time must be one of "
                          f"{', '.join(TIME_SOURCES)}, got {time_source!r}")
    return time_source, sub


def _assignment_tables(doc: dict, name: str) -> list:
    """The ``[[assignments]]`` tables (at least one), each checked by :func:`_assignment`."""
    assignments = doc.get("assignments", [])
    if not isinstance(assignments, list) or not assignments:
        raise CourseError(f"{name}: no [[assignments]]: each names its labs, e.g. "
                          "labs = [\"01_alignment\"]")
    return assignments


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

