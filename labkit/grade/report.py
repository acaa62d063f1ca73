"""Outputs: the CSV (one row per exercise), the wide CSV (one row per student, one column per
exercise, for an LMS), the JSON detail, the text summary. The HTML pages (feedback per student,
the class report) are in :mod:`.pages`."""
from __future__ import annotations

import csv
import json
import re
import time
from pathlib import Path

from .settings import CSV_FIELDS, REFUSED, STAMP_FIELDS, _short

__all__ = ["rows", "write_csv", "write_wide_csv", "write_json", "summary", "counted",
           "review_reason", "needs_review", "mark_review"]

#: A check's message that says it passed without judging speed (one thread, a machine too busy,
#: speed only reported): a human looks at that row, as at an ``inconclusive`` one.
_NOT_JUDGED = re.compile(r"speed (?:was )?not judged|speed reported only", re.IGNORECASE)


def counted(results: list[dict]) -> list[dict]:
    """The results that count (not the extra copies of a lab a student handed in twice)."""
    return [r for r in results if r.get("status") != "duplicate"]


def review_reason(e: dict) -> str | None:
    """Why an exercise row needs an instructor's look, or None: still ``inconclusive`` after the
    batch's re-measurement (the machine could not decide; the row has 0 points), a message
    saying the check did not judge speed, or a pass beside labkit's answer that missed the target
    itself (``speed_share`` in the details: judged against the answer, not the target). Never a
    deduction: the row's points stand."""
    if not e.get("exercise"):
        return None
    if e.get("verdict") == "inconclusive":
        return ("inconclusive: the check could not decide on this machine"
                + (", even re-measured alone after the batch" if e.get("remeasured") else ""))
    if _NOT_JUDGED.search(str(e.get("message", ""))):
        return f"{e.get('verdict')}, but the check says speed was not judged"
    if e.get("verdict") == "passed" and "speed_share" in (e.get("details") or {}):
        return ("passed at a share of labkit's answer, which missed the speed target itself on "
                "this machine")
    return None


def needs_review(e: dict) -> bool:
    """The row's ``review`` mark (:func:`mark_review`), else :func:`review_reason` of it."""
    v = e.get("review")
    return bool(v) if isinstance(v, bool) else review_reason(e) is not None


def mark_review(results: list[dict]) -> list[dict]:
    """Set ``review`` (True/False) on every exercise row of ``results`` (their final rows: after
    the re-measurement of undecided checks); returns ``results``."""
    for r in results:
        for e in r.get("exercises", ()):
            if e.get("exercise"):
                e["review"] = review_reason(e) is not None
    return results


def _notebook_flags(r: dict) -> list[str]:
    fl = list(r.get("flags", {}).get("", []))
    if r.get("status") == "grader error" and r.get("error"):
        fl.append(f"grader error: {r['error']}")
    elif r.get("status") == REFUSED and r.get("error"):
        fl.append(r["error"])
    return fl


def rows(results: list[dict]) -> list[dict]:
    """Flatten notebook results into CSV rows (one per exercise), each with the environment
    stamp of the machine that measured."""
    out = []
    for r in counted(results):
        nb_flags = _notebook_flags(r)
        env = r.get("environment") or {}
        for e in r["exercises"]:
            fl = nb_flags + list(r.get("flags", {}).get(e["exercise"], []))
            out.append({"student": r["student"], "notebook": r["notebook"],
                        "exercise": e["exercise"], "points": f"{float(e['points']):g}",
                        "max_points": f"{float(e['max_points']):g}", "verdict": e["verdict"],
                        "message": e["message"], "flags": _short("; ".join(fl)),
                        "review": "yes" if needs_review(e) else "",
                        **{k: env.get(k, "") for k in STAMP_FIELDS}})
    return out


_FORMULA = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"-?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def _cell(v):
    """A CSV cell a spreadsheet will not run (OWASP's CSV injection advice): text starting with
    ``= + - @``, tab or carriage return gets a leading ``'``; numbers (a negative one too) stay
    numbers."""
    if isinstance(v, str) and v.startswith(_FORMULA) and not _NUMBER.fullmatch(v):
        return "'" + v
    return v


def _write(path, fields, table) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow([_cell(k) for k in fields])
        w.writerows([_cell(row.get(k, "")) for k in fields] for row in table)


def write_csv(results: list[dict], path) -> None:
    """Write the CSV (columns :data:`CSV_FIELDS`; cells as :func:`_cell`)."""
    _write(path, CSV_FIELDS, rows(results))


def wide_rows(results: list[dict]) -> tuple[list[str], list[dict]]:
    """One row per student: total, max, one column per exercise (``lab:exercise`` points)."""
    exercises: list[str] = []
    per: dict[str, dict] = {}
    for r in counted(results):
        s = per.setdefault(r["student"], {"student": r["student"], "notebooks": [], "total": 0.0,
                                          "max": 0.0, "flags": [], "review": [],
                                          **{k: "" for k in STAMP_FIELDS}})
        s["notebooks"].append(r["notebook"])
        env = r.get("environment") or {}
        for k in STAMP_FIELDS:
            s[k] = s[k] or env.get(k, "")
        nfl = sum(len(v) for v in r.get("flags", {}).values())
        if nfl:
            s["flags"].append(f"{r['notebook']}: {nfl} flag(s)")
        for e in r["exercises"]:
            s["total"] += float(e["points"])
            s["max"] += float(e["max_points"])
            if e["exercise"]:
                col = f"{Path(r.get('canonical') or '').stem}:{e['exercise']}"
                if col not in exercises:
                    exercises.append(col)
                s[col] = float(e["points"]) + float(s.get(col) or 0)
                if needs_review(e):
                    s["review"].append(col)
    fields = ["student", "total", "max", *exercises, "notebooks", "flags", "review",
              *STAMP_FIELDS]
    out = []
    for s in sorted(per.values(), key=lambda d: d["student"]):
        row = {k: s.get(k, "") for k in fields}
        row["total"], row["max"] = f"{s['total']:g}", f"{s['max']:g}"
        for col in exercises:
            row[col] = f"{s[col]:g}" if col in s else ""
        row["notebooks"] = "; ".join(s["notebooks"])
        row["flags"] = _short("; ".join(s["flags"]))
        row["review"] = _short("; ".join(s["review"]))
        out.append(row)
    return fields, out


def write_wide_csv(results: list[dict], path) -> None:
    """Write the wide CSV (one row per student, one column per exercise; cells as
    :func:`_cell`)."""
    fields, table = wide_rows(results)
    _write(path, fields, table)


def write_json(results: list[dict], path, settings: dict | None = None) -> None:
    """Write the full detail (verdicts, seeds, timings, flags, environment) as JSON."""
    doc = {"labkit_grade": 2, "generated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "settings": settings or {}, "submissions": results}
    Path(path).write_text(json.dumps(doc, indent=1, default=str) + "\n", encoding="utf-8")


def summary(results: list[dict]) -> str:
    """Text table: per student total / max, then pass counts per exercise."""
    per: dict[str, list[float]] = {}
    flagged: dict[str, int] = {}
    review: dict[str, int] = {}
    ex_stats: dict[str, list[int]] = {}
    for r in counted(results):
        tot = per.setdefault(r["student"], [0.0, 0.0, 0])
        tot[2] += 1
        nfl = sum(len(v) for v in r.get("flags", {}).values())
        if nfl or r.get("status") in ("tampered", "grader error", REFUSED):
            flagged[r["student"]] = flagged.get(r["student"], 0) + max(nfl, 1)
        for e in r["exercises"]:
            tot[0] += float(e["points"])
            tot[1] += float(e["max_points"])
            if needs_review(e):
                review[r["student"]] = review.get(r["student"], 0) + 1
            if e["exercise"]:
                s = ex_stats.setdefault(e["exercise"], [0, 0])
                s[0] += e["verdict"] == "passed"
                s[1] += 1
    w = max([len("student")] + [len(s) for s in per])
    lines = [f"{'student':<{w}}  {'points (%)':>19}  notebooks  review"]
    for s, (p, m, n) in sorted(per.items()):
        pct = f"{100 * p / m:5.1f}%" if m else "    -"
        lines.append(f"{s:<{w}}  {p:5g} / {m:<5g}{pct}  {n:>9}  " + ", ".join(
            ([f"{flagged[s]} flag(s)"] if s in flagged else [])
            + ([f"{review[s]} row(s) to review"] if s in review else [])))
    if ex_stats:
        lines.append("")
        lines.append("exercise: passed / graded")
        lines += [f"  {k}: {v[0]} / {v[1]}" for k, v in ex_stats.items()]
    return "\n".join(ln.rstrip() for ln in lines)
