"""The gradebook: which copy of each lab counts for a rostered student (the best score after
the late penalty), each assignment's score, status and notes, and the folders of nobody."""
from __future__ import annotations

import datetime as dt
import math
from pathlib import Path

from .coursemodel import UTC, Assignment, Course, Student
from .coursetime import submission_time
from .report import counted, review_notes


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

