"""The course's data: its error, the rostered students, the assignments and the course file
read and checked (:mod:`.coursefile` builds them, the gradebook reads them)."""
from __future__ import annotations

import dataclasses
import datetime as dt
from pathlib import Path

UTC = dt.timezone.utc
LATE_POLICIES = ("none", "zero", "per-day")
TIME_SOURCES = ("auto", "timestamp", "mtime")
TIMESTAMP_FILE = "timestamp.txt"     # what nbgrader's exchange writes beside a submission


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

