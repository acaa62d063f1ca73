"""Gradescope's *Export Submissions* download, mapped to a course's roster.

The export holds one folder per submission (``submission_<id>/``, the files the student
uploaded) and ``submission_metadata.yml``: for each folder, its submitters (``:sid:``,
``:email:``, ``:name:`` — several for a group submission) and when it was handed in
(``:created_at:``). ``labkit grade --course`` reads it when the class folder has one: each
folder counts for every one of its submitters on the roster, matched by student id, then email
(against the roster's login or id), then a name that only one rostered student has; the
submission time is ``:created_at:`` (time source ``submission_metadata.yml``). A submitter who
matches nobody is listed among the gradebook's unknown folders, with the name Gradescope gave.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
from pathlib import Path

__all__ = ["METADATA", "Submitter", "Entry", "read_export", "match"]

METADATA = "submission_metadata.yml"
_MAX_BYTES = 32 << 20


@dataclasses.dataclass(frozen=True)
class Submitter:
    sid: str = ""
    email: str = ""
    name: str = ""

    def label(self) -> str:
        return self.name or self.email or self.sid or "?"


@dataclasses.dataclass
class Entry:
    """One submission folder of the export."""

    folder: str
    submitters: list[Submitter]
    created_at: dt.datetime | None = None


def _key(d: dict, name: str):
    """``d[':name']`` (Gradescope's keys carry a leading colon), or ``d['name']``."""
    for k in (f":{name}", name):
        if k in d:
            return d[k]
    return None


def _text(v) -> str:
    return "" if v is None else str(v).strip()


def _when(v, where: str) -> dt.datetime | None:
    from .coursemodel import UTC
    from .coursetime import parse_time
    if v is None or v == "":
        return None
    if isinstance(v, dt.datetime):
        return v if v.tzinfo else v.replace(tzinfo=UTC)
    return parse_time(str(v), UTC, where)


def read_export(folder) -> dict[str, Entry] | None:
    """The export's entries by folder name, or None when ``folder`` has no metadata file.
    A malformed file is a :class:`~labkit.grade.course.CourseError` naming the entry."""
    import yaml

    from .coursemodel import CourseError
    path = Path(folder) / METADATA
    if not path.is_file():
        return None
    if path.is_symlink():
        raise CourseError(f"{path}: a symbolic link — give the export's own file")
    if path.stat().st_size > _MAX_BYTES:
        raise CourseError(f"{path}: larger than {_MAX_BYTES >> 20} MiB; is it an export's?")
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8", errors="replace"))
    except yaml.YAMLError as e:
        raise CourseError(f"{path}: not YAML ({str(e).splitlines()[0]})") from None
    if not isinstance(doc, dict):
        raise CourseError(f"{path}: expected one entry per submission folder "
                          "(submission_<id>: {:submitters: [...]}), got "
                          f"{type(doc).__name__}")
    out = {}
    for name, rec in doc.items():
        where = f"{path}: {name}"
        if not isinstance(rec, dict):
            raise CourseError(f"{where}: expected a mapping with :submitters:")
        subs = _key(rec, "submitters") or []
        if not isinstance(subs, list) or not all(isinstance(s, dict) for s in subs):
            raise CourseError(f"{where}: :submitters: must be a list of "
                              "{:name:, :sid:, :email:}")
        people = [Submitter(_text(_key(s, "sid")), _text(_key(s, "email")),
                            _text(_key(s, "name"))) for s in subs]
        out[str(name)] = Entry(str(name), people, _when(_key(rec, "created_at"), where))
    return out


def match(entries: dict[str, Entry], students) -> tuple[dict[str, list], list[str]]:
    """Folder → the rostered students among its submitters; notes on submitters matched to
    nobody (``"submission_7: Jane Roe (jroe@…, sid 9) is not on the roster"``)."""
    by_id = {s.id.casefold(): s for s in students}
    by_login = {s.login.casefold(): s for s in students if s.login}
    names: dict[str, list] = {}
    for s in students:
        if s.name:
            names.setdefault(" ".join(s.name.casefold().split()), []).append(s)
    out: dict[str, list] = {}
    notes = []
    for folder, e in sorted(entries.items()):
        found = []
        for p in e.submitters:
            s = (by_id.get(p.sid.casefold()) if p.sid else None) or \
                (by_login.get(p.email.casefold()) or by_id.get(p.email.casefold())
                 if p.email else None)
            if s is None and p.name:
                same = names.get(" ".join(p.name.casefold().split()), [])
                s = same[0] if len(same) == 1 else None
            if s is None:
                notes.append(f"{folder}: {p.label()} ({', '.join(x for x in (p.email, p.sid and f'sid {p.sid}') if x) or 'no email or sid'}) is not on the roster")
            elif not any(x is s for x in found):
                found.append(s)
        if found:
            out[folder] = found
    return out, notes
