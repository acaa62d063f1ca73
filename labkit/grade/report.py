"""Outputs: the CSV (one row per exercise), the wide CSV (one row per student, one column per
exercise, for an LMS), the JSON detail, the text summary. The HTML pages (feedback per student,
the class report) are in :mod:`.pages`."""
from __future__ import annotations

import csv
import dataclasses
import hashlib
import hmac
import json
import re
import time
from pathlib import Path

from .settings import CSV_FIELDS, REFUSED, STAMP_FIELDS, _short

__all__ = ["rows", "write_csv", "write_wide_csv", "write_json", "summary", "counted",
           "review_reason", "needs_review", "mark_review", "review_notes", "is_challenge",
           "leaderboards", "labels", "place_line", "ordinal", "Entry"]


def counted(results: list[dict]) -> list[dict]:
    """The results that count (not the extra copies of a lab a student handed in twice)."""
    return [r for r in results if r.get("status") != "duplicate"]


def review_reason(e: dict) -> str | None:
    """Why an exercise row needs an instructor's look, or None: still ``inconclusive`` after the
    batch's re-measurement (the machine could not decide; the row has 0 points), a cell that did
    not load in time (0 points for labkit's time), a message
    saying the check did not judge speed, or a pass beside labkit's answer that missed the target
    itself (``speed_share`` in the details: judged against the answer, not the target). Never a
    deduction: the row's points stand."""
    if not e.get("exercise"):
        return None
    if e.get("verdict") == "inconclusive":
        return ("inconclusive: the check could not decide on this machine"
                + (", even re-measured alone after the batch" if e.get("remeasured") else ""))
    if (e.get("details") or {}).get("stopped") == "load-timeout":   # labkit.check.runner.stopped_kind
        return (f"{e.get('verdict')}: the cell did not load in time"
                + (", even re-measured alone after the batch" if e.get("remeasured") else "")
                + " — labkit's time, not the student's function's")
    if (e.get("details") or {}).get("speed_not_judged"):   # labkit.check.speed_not_judged
        return f"{e.get('verdict')}, but the check says speed was not judged"
    if e.get("verdict") == "passed" and "speed_share" in (e.get("details") or {}):
        return ("passed at a share of labkit's answer, which missed the speed target itself on "
                "this machine")
    return None


def needs_review(e: dict) -> bool:
    """The row's ``review`` mark (:func:`mark_review`), else :func:`review_reason` of it."""
    v = e.get("review")
    return bool(v) if isinstance(v, bool) else review_reason(e) is not None


def review_notes(r: dict) -> list[tuple[str, str]]:
    """(exercise, note) for everything in the result ``r`` of one notebook an instructor should
    look at: the grader's flags (suspicious cells, honest mishaps; exercise ``""`` for the
    notebook as a whole) and each row that needs review (:func:`needs_review`, with its
    :func:`review_reason`), in the notebook's order."""
    flags = r.get("flags") or {}
    out = [("", f) for f in flags.get("", ())]
    for e in r.get("exercises", ()):
        ex = e.get("exercise") or ""
        if ex:
            out += [(ex, f) for f in flags.get(ex, ())]
        if needs_review(e):
            out.append((ex, review_reason(e) or "flagged by the grader"))
    return out


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


# ------------------------------------------------------------------ the challenges' leaderboard
#: A lab's open challenge is an exercise named ``<something>_challenge`` (docs/challenges.md);
#: a row whose details carry ``challenge`` facts is one too.
CHALLENGE_SUFFIX = "_challenge"
_TIER_NAMES = {0.25: "¼", 0.5: "½", 0.75: "¾", 1.0: "full"}


def is_challenge(e: dict) -> bool:
    """True for a row of an open challenge (ranked on the leaderboard)."""
    d = (e.get("details") or {}).get("challenge") if isinstance(e.get("details"), dict) else None
    return isinstance(d, dict) or str(e.get("exercise") or "").endswith(CHALLENGE_SUFFIX)


def ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 4th, 11th, 12th, 13th, 21st …"""
    if 10 <= n % 100 <= 20:
        return f"{n}th"
    return f"{n}{ {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def _letters(k: int) -> str:
    """0 → A, 25 → Z, 26 → AA, …"""
    out = ""
    k += 1
    while k:
        k, r = divmod(k - 1, 26)
        out = chr(65 + r) + out
    return out


def _key(results: list[dict]) -> bytes:
    """The secret the anonymous labels are drawn with: a digest of the checks' seeds (never
    shown to a student), so the report, leaderboard.html and every feedback page of one grading
    output agree, while no name list and this code give the order back. Rows without seeds
    (fake results) fall back to the students' names."""
    seeds = sorted(f"{r.get('student')}\0{r.get('notebook')}\0{e.get('exercise')}\0{e.get('seed')}"
                   for r in counted(results) for e in r.get("exercises", ())
                   if e.get("seed") not in (None, ""))
    text = "\n".join(seeds) if seeds else "\n".join(sorted({str(r.get("student"))
                                                             for r in counted(results)}))
    return hashlib.sha256(b"labkit-leaderboard\0" + text.encode("utf-8", "surrogateescape")
                          ).digest()


def labels(results: list[dict], names=None, key: bytes | None = None) -> dict[str, str]:
    """What the leaderboard calls each student. ``names`` None/False: anonymised, "student A",
    "student B", … in an order drawn with ``key`` (default :func:`_key` of the results: the same
    labels on every page of one grading output); True: the students' folder names; a dict
    (``course.toml``'s ``leaderboard_names = true``: folder → the roster's name): those, else the
    folder name."""
    students = sorted({str(r["student"]) for r in counted(results)})
    if names:
        return {s: (str(names.get(s) or s) if isinstance(names, dict) else s) for s in students}
    k = _key(results) if key is None else key
    order = sorted(students, key=lambda s: hmac.new(k, s.encode("utf-8", "surrogateescape"),
                                                    "sha256").hexdigest())
    return {s: f"student {_letters(i)}" for i, s in enumerate(order)}


@dataclasses.dataclass
class Entry:
    """One student's row on one challenge's leaderboard."""

    student: str
    label: str
    exercise: str
    notebook: str
    verdict: str
    points: float
    max_points: float
    facts: dict
    cpu: str = ""
    place: int | None = None        # 1-based; None: not ranked
    tied: bool = False
    of: int = 0                     # how many are ranked on this challenge
    why: str = ""                   # why not ranked

    @property
    def ratio(self) -> float | None:
        v = self.facts.get("ratio")
        return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None

    @property
    def tier(self) -> str:
        t = self.facts.get("tier")
        return _TIER_NAMES.get(t, f"{t:g}") if isinstance(t, (int, float)) else "—"


def _num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v == v


def _why_unranked(e: dict, d: dict | None) -> str:
    """Why a challenge row is not ranked, or "" when it is."""
    verdict = str(e.get("verdict") or "")
    if verdict == "inconclusive" or (isinstance(d, dict) and d.get("judged", True)
                                     and (d.get("decided") is False or
                                          ("tier" in d and d.get("tier") is None))):
        return ("undecided: the grading machine was too busy to place the kernel "
                "(inconclusive; a quieter run decides)")
    if verdict != "passed":
        if isinstance(d, dict) and d.get("unchanged"):
            return "not passed: no change (the starting point as given)"
        extra = f" ({d['ratio']:.2f}× labkit's kernel)" if isinstance(d, dict) and _num(
            d.get("ratio")) else ""
        return f"not passed: {verdict}{extra}"
    if not isinstance(d, dict) or not _num(d.get("ratio")):
        return "passed, but no measurement was kept for it"
    if d.get("judged") is False:
        return "passed with speed reported only (not judged): not ranked"
    return ""


def leaderboards(results: list[dict], names=None, key: bytes | None = None
                 ) -> dict[str, list[Entry]]:
    """Per challenge (exercise name, in the order met): every student's :class:`Entry`, the
    ranked ones first — by the ratio to labkit's kernel measured in the student's own check
    (``details["challenge"]["ratio"]``: t_labkit / t_student, labkit's kernel = 1.0×), highest
    first; an equal ratio (as recorded, 3 decimals) shares a place (1, 2, 2, 4) — then the rest
    with why they are not ranked (undecided, not passed). A student with two rows of one
    challenge (two counted notebooks) is placed by the better one. ``names``/``key``: as
    :func:`labels`."""
    lab = labels(results, names, key)
    best: dict[str, dict[str, Entry]] = {}
    for r in counted(results):
        cpu = str((r.get("environment") or {}).get("cpu") or "")
        for e in r.get("exercises", ()):
            if not e.get("exercise") or not is_challenge(e):
                continue
            details = e.get("details") if isinstance(e.get("details"), dict) else {}
            d = details.get("challenge") if isinstance(details.get("challenge"), dict) else None
            ent = Entry(str(r["student"]), lab[str(r["student"])], str(e["exercise"]),
                        str(r.get("notebook") or ""), str(e.get("verdict") or ""),
                        float(e.get("points") or 0), float(e.get("max_points") or 0),
                        dict(d or {}), cpu, why=_why_unranked(e, d))
            per = best.setdefault(ent.exercise, {})
            old = per.get(ent.student)
            rank = lambda x: (not x.why, x.points, x.ratio or 0.0)  # noqa: E731
            if old is None or rank(ent) > rank(old):
                per[ent.student] = ent
    out: dict[str, list[Entry]] = {}
    for ex, per in best.items():
        ranked = sorted((x for x in per.values() if not x.why),
                        key=lambda x: (-x.ratio, x.label))
        for x in ranked:
            x.place = 1 + sum(1 for y in ranked if y.ratio > x.ratio)
            x.tied = sum(1 for y in ranked if y.ratio == x.ratio) > 1
            x.of = len(ranked)
        rest = sorted((x for x in per.values() if x.why), key=lambda x: (x.why, x.label))
        for x in rest:
            x.of = len(ranked)
        out[ex] = ranked + rest
    return out


def place_line(x: Entry) -> str:
    """The feedback page's line: "3rd of 12 on align_challenge, 0.82× labkit's kernel …", or why
    the row is not ranked."""
    if x.place is None:
        return f"not on the {x.exercise} leaderboard — {x.why}"
    f = x.facts
    iv = (f" (interval {f['ratio_low']:.2f}–{f['ratio_high']:.2f}×)"
          if _num(f.get("ratio_low")) and _num(f.get("ratio_high")) else "")
    return (f"{ordinal(x.place)}{' (tied)' if x.tied else ''} of {x.of} on {x.exercise}, "
            f"{x.ratio:.2f}× labkit's kernel{iv}, tier {x.tier}, {x.points:g} / "
            f"{x.max_points:g} points")
