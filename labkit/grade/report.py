"""Outputs: CSV rows (one per exercise), the JSON detail, the text summary."""
from __future__ import annotations

import csv
import json
import time
from pathlib import Path

from .settings import CSV_FIELDS, _short

__all__ = ["rows", "write_csv", "write_json", "summary"]


def rows(results: list[dict]) -> list[dict]:
    """Flatten notebook results into CSV rows (one per exercise)."""
    out = []
    for r in results:
        nb_flags = list(r.get("flags", {}).get("", []))
        if r.get("status") in ("tampered", "grader error") and r.get("error"):
            nb_flags.append(f"{r['status']}: {r['error']}")
        for e in r["exercises"]:
            fl = nb_flags + list(r.get("flags", {}).get(e["exercise"], []))
            out.append({"student": r["student"], "notebook": r["notebook"],
                        "exercise": e["exercise"], "points": f"{float(e['points']):g}",
                        "max_points": f"{float(e['max_points']):g}", "verdict": e["verdict"],
                        "message": e["message"], "flags": _short("; ".join(fl))})
    return out


def write_csv(results: list[dict], path) -> None:
    """Write the CSV (columns :data:`CSV_FIELDS`)."""
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=CSV_FIELDS)
        w.writeheader()
        w.writerows(rows(results))


def write_json(results: list[dict], path, settings: dict | None = None) -> None:
    """Write the full detail (cells, seeds, flags, restarts) as JSON."""
    doc = {"labkit_grade": 1, "generated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "settings": settings or {}, "submissions": results}
    Path(path).write_text(json.dumps(doc, indent=1, default=str) + "\n", encoding="utf-8")


def summary(results: list[dict]) -> str:
    """Text table: per student total / max, then pass counts per exercise."""
    per: dict[str, list[float]] = {}
    flagged: dict[str, int] = {}
    ex_stats: dict[str, list[int]] = {}
    for r in results:
        tot = per.setdefault(r["student"], [0.0, 0.0, 0])
        tot[2] += 1
        nfl = sum(len(v) for v in r.get("flags", {}).values())
        if nfl or r.get("status") in ("tampered", "grader error"):
            flagged[r["student"]] = flagged.get(r["student"], 0) + max(nfl, 1)
        for e in r["exercises"]:
            tot[0] += float(e["points"])
            tot[1] += float(e["max_points"])
            if e["exercise"]:
                s = ex_stats.setdefault(e["exercise"], [0, 0])
                s[0] += e["verdict"] == "passed"
                s[1] += 1
    w = max([len("student")] + [len(s) for s in per])
    lines = [f"{'student':<{w}}  {'points (%)':>19}  notebooks  review"]
    for s, (p, m, n) in sorted(per.items()):
        pct = f"{100 * p / m:5.1f}%" if m else "    -"
        lines.append(f"{s:<{w}}  {p:5g} / {m:<5g}{pct}  {n:>9}  "
                     + (f"{flagged[s]} flag(s)" if s in flagged else ""))
    if ex_stats:
        lines.append("")
        lines.append("exercise: passed / graded")
        lines += [f"  {k}: {v[0]} / {v[1]}" for k, v in ex_stats.items()]
    return "\n".join(ln.rstrip() for ln in lines)
