"""Points in time for a course: due dates and timestamps as written (TOML date-times, ISO 8601,
nbgrader's timestamps) and when a submission was handed in (``timestamp.txt``, else mtime)."""
from __future__ import annotations

import datetime as dt
import os
import re
from pathlib import Path
from typing import Any

from .coursemodel import TIMESTAMP_FILE, UTC, CourseError

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

