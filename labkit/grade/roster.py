"""The roster: students read from an LMS export (Canvas, Moodle, Gradescope or a plain CSV) and
written back as a course file's ``[[students]]`` blocks (``labkit course import-roster``)."""
from __future__ import annotations

import csv
import json
from pathlib import Path

from .coursemodel import CourseError, Student


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
    table = _read_table(path)
    col = {h: i for i, h in reversed(list(enumerate(_norm(h) for h in table[0])))}
    fmt = _check_format(path, fmt, col, table[0])
    out: list[Student] = []
    for line, row in enumerate(table[1:], start=2):
        if not any(c.strip() for c in row):
            continue
        s = _student(fmt, _Row(row, col))
        if s is None:
            continue
        if not s.id:
            raise CourseError(f"{path} line {line}: a student without an id ({s.name or row})")
        out.append(s)
    if not out:
        raise CourseError(f"{path}: no students in the roster")
    return out


def _read_table(path: Path) -> list[list[str]]:
    """The roster's rows, the header first (an error if it cannot be read or is empty)."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:
            table = list(csv.reader(f))
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise CourseError(f"{path}: cannot read the roster: {e}") from None
    if not table:
        raise CourseError(f"{path}: the roster is empty")
    return table


def _check_format(path: Path, fmt: str, col: dict[str, int], header: list[str]) -> str:
    """The roster's format: ``fmt``, or told by the header for ``auto``; its columns checked."""
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
                f"{', '.join(header[:8])}). Expected Canvas (Student, ID, SIS User ID, SIS "
                "Login ID), Moodle (First name, Last name, ID number, Username), Gradescope "
                "(First Name, Last Name, SID, Email) or plain (id, name, login)")
    need = {"canvas": ("student", "id"), "moodle": ("first name",), "gradescope": ("sid",),
            "plain": ("id",)}.get(fmt)
    if need is None:
        raise CourseError(f"unknown roster format {fmt!r}; use auto, canvas, moodle, gradescope "
                          "or plain")
    if not has(*need):
        raise CourseError(f"{path}: a {fmt} roster needs the column(s) "
                          f"{', '.join(need)}; this one has {', '.join(header[:8])}")
    return fmt


class _Row:
    """One roster row, read by (normalised) column name."""

    def __init__(self, row: list[str], col: dict[str, int]):
        self.row, self.col = row, col

    def get(self, *names: str) -> str:
        """The first of the columns ``names`` that is present and not blank, else ""."""
        for n in names:
            i = self.col.get(n)
            if i is not None and i < len(self.row) and self.row[i].strip():
                return self.row[i].strip()
        return ""


def _student(fmt: str, r: _Row) -> Student | None:
    """The student of a roster row in format ``fmt``; None for a row that is no student
    (Canvas's "Points Possible" row and test student, Gradescope's other roles)."""
    get = r.get
    if fmt == "canvas":
        who = get("student")
        if who.startswith("Points Possible") or who == "Student, Test" or (
                not get("id") and not get("sis user id")):
            return None                    # Canvas's "Points Possible" row and test student
        return Student(get("sis user id", "id"), who, get("sis login id"))
    if fmt == "gradescope":
        if "role" in r.col and get("role").lower() not in ("", "student"):
            return None
        name = get("name", "full name") or " ".join(
            x for x in (get("first name"), get("last name")) if x)
        return Student(get("sid"), name, get("email"))
    if fmt == "moodle":
        name = " ".join(x for x in (get("first name"), get("last name", "surname")) if x)
        return Student(get("id number", "username", "email address"), name,
                       get("username", "email address"))
    return Student(get("id"), get("name"), get("login"), get("folder"))


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

