"""Gradescope's ``results.json`` from labkit's grading: one test per exercise, the score after
scaling and the late penalty, and :func:`validate` against the documented fields.

``results.json`` follows Gradescope's autograder specification
(https://gradescope-autograders.readthedocs.io/en/latest/specs/): a top-level ``score``
(it overrides the sum of the tests), ``output``, ``visibility``, ``execution_time``, and
``tests[]`` — one per exercise — with ``name``, ``number``, ``score``, ``max_score``,
``status``, ``output`` and ``visibility``. :func:`validate` checks a document against those fields.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

from .report import counted, review_notes

VISIBILITY = ("hidden", "after_due_date", "after_published", "visible")
FORMATS = ("text", "html", "simple_format", "md", "ansi")
TOP_FIELDS = {"score", "execution_time", "output", "output_format", "test_output_format",
              "test_name_format", "visibility", "stdout_visibility", "extra_data", "tests",
              "leaderboard"}
TEST_FIELDS = {"score", "max_score", "status", "name", "name_format", "number", "output",
               "output_format", "tags", "visibility", "extra_data"}


def _is_num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def validate(doc) -> list[str]:
    """What in ``doc`` is not a results.json Gradescope documents (``[]``: nothing)."""
    if not isinstance(doc, dict):
        return ["results.json must be a JSON object"]
    bad = [f"unknown top-level field {k!r}" for k in sorted(set(doc) - TOP_FIELDS)]
    tests = doc.get("tests")
    if "score" in doc and not _is_num(doc["score"]):
        bad.append("score must be a number")
    for k in ("visibility", "stdout_visibility"):
        if k in doc and doc[k] not in VISIBILITY:
            bad.append(f"{k} must be one of {', '.join(VISIBILITY)}")
    for k in ("output_format", "test_output_format", "test_name_format"):
        if k in doc and doc[k] not in FORMATS:
            bad.append(f"{k} must be one of {', '.join(FORMATS)}")
    if "output" in doc and not isinstance(doc["output"], str):
        bad.append("output must be text")
    if "execution_time" in doc and not _is_num(doc["execution_time"]):
        bad.append("execution_time must be a number of seconds")
    if "extra_data" in doc and not isinstance(doc["extra_data"], dict):
        bad.append("extra_data must be an object")
    if tests is not None and not isinstance(tests, list):
        return bad + ["tests must be a list"]
    if "score" not in doc and not (tests and all(isinstance(t, dict) and "score" in t
                                                 for t in tests)):
        bad.append("no top-level score and not every test has a score")
    for i, t in enumerate(tests or []):
        where = f"tests[{i}]"
        if not isinstance(t, dict):
            bad.append(f"{where} must be an object")
            continue
        bad += [f"{where}: unknown field {k!r}" for k in sorted(set(t) - TEST_FIELDS)]
        for k in ("score", "max_score"):
            if k in t and not _is_num(t[k]):
                bad.append(f"{where}: {k} must be a number")
        for k in ("name", "number", "output"):
            if k in t and not isinstance(t[k], str):
                bad.append(f"{where}: {k} must be text")
        if "status" in t and t["status"] not in ("passed", "failed"):
            bad.append(f"{where}: status must be passed or failed")
        if "visibility" in t and t["visibility"] not in VISIBILITY:
            bad.append(f"{where}: visibility must be one of {', '.join(VISIBILITY)}")
        for k in ("output_format", "name_format"):
            if k in t and t[k] not in FORMATS:
                bad.append(f"{where}: {k} must be one of {', '.join(FORMATS)}")
        if "tags" in t and not (isinstance(t["tags"], list)
                                and all(isinstance(x, str) for x in t["tags"])):
            bad.append(f"{where}: tags must be a list of text")
        if "extra_data" in t and not isinstance(t["extra_data"], dict):
            bad.append(f"{where}: extra_data must be an object")
    return bad


def _r(x: float) -> float:
    return round(float(x), 2)


def lab_tests(labs, graded: dict[str, dict], lab_max: dict[str, float],
              visibility: str = "visible") -> list[dict]:
    """Gradescope tests for ``labs``: one per exercise of the notebook graded for each lab
    (``graded``: lab stem → that notebook's grade() result); a lab not handed in is one test
    worth its maximum, scored 0; an unreadable notebook is one test with the grader's reason."""
    tests = []
    for i, lab in enumerate(labs, start=1):
        r = graded.get(lab)
        if r is None:
            tests.append({"name": f"{lab}: not handed in", "number": f"{i}", "score": 0.0,
                          "max_score": _r(lab_max.get(lab, 0.0)), "status": "failed",
                          "output": f"No notebook of {lab} was found in this submission.",
                          "visibility": visibility})
            continue
        notes = review_notes(r)            # the gradebook's review column, by exercise
        whole = [n for ex, n in notes if not ex]
        for j, e in enumerate(r["exercises"], start=1):
            name = f"{lab}: {e['exercise']}" if e.get("exercise") else \
                f"{lab}: {r.get('status', 'not graded')}"
            out = f"{e['verdict']}: {e['message']}" if e.get("message") else str(e["verdict"])
            # the notebook's own notes (and an exercise-less row's) on its first test, once
            flags = (whole if j == 1 else []) + [n for ex, n in notes
                                                 if ex and ex == e.get("exercise")]
            if flags:
                out += "\nreview: " + "; ".join(flags)
            tests.append({"name": name, "number": f"{i}.{j}", "score": _r(e["points"]),
                          "max_score": _r(e["max_points"]),
                          "status": "passed" if e.get("verdict") == "passed" else "failed",
                          "output": out + f"\n(notebook: {r['notebook']})",
                          "visibility": visibility})
    return tests


def _doc(tests: list[dict], score: float, output: str, visibility: str,
         seconds: float | None = None) -> dict:
    doc = {"score": _r(score), "output": output, "visibility": visibility, "tests": tests}
    if seconds is not None:
        doc["execution_time"] = round(seconds, 1)
    return doc


def assignment_results(entry: dict, assignment, visibility: str = "visible") -> dict:
    """results.json for one student's assignment from :func:`labkit.grade.course.
    build_gradebook` (the score after scaling and the late penalty)."""
    tests = lab_tests(assignment.labs, entry["graded"], entry["lab_max"], visibility)
    lines = [f"{assignment.name}: {entry['score']:g} / {entry['max']:g} points ({entry['status']})"]
    if entry["raw_max"] != entry["max"]:
        lines.append(f"labs: {entry['raw_points']:g} / {entry['raw_max']:g}, scaled to "
                     f"{entry['max']:g}")
    if entry["submitted"]:
        lines.append(f"submitted {entry['submitted']} ({entry['time_source']})")
    lines += entry["notes"]
    return _doc(tests, entry["score"], "\n".join(lines), visibility)


def submission_results(results: list[dict], labs, lab_max: dict[str, float],
                       points: float | None = None, visibility: str = "visible",
                       note: str = "", seconds: float | None = None) -> dict:
    """results.json for one Gradescope submission (every notebook in it): the labs of the
    assignment, the best copy of each; notebooks of other labs are named in ``output``."""
    graded: dict[str, dict] = {}
    other = []
    for r in counted(results):
        lab = Path(r.get("canonical") or "").stem
        if lab in labs:
            total = lambda x: sum(float(e["points"]) for e in x["exercises"])  # noqa: E731
            if lab not in graded or total(r) > total(graded[lab]):
                graded[lab] = r
        else:
            other.append(f"{r['notebook']}: " + (f"{lab} is not part of this assignment" if lab
                                                 else str(r.get("error") or r.get("status"))))
    tests = lab_tests(labs, graded, lab_max, visibility)
    raw = sum(t["score"] for t in tests)
    raw_max = sum(_r(lab_max.get(lab, 0.0)) for lab in labs)
    score = raw * points / raw_max if points is not None and raw_max else raw
    lines = [f"{_r(score):g} / {_r(points if points is not None else raw_max):g} points"]
    if points is not None:
        lines[0] += f" (labs: {raw:g} / {raw_max:g})"
    lines += [f"not graded: {x}" for x in other] + ([note] if note else [])
    return _doc(tests, score, "\n".join(lines), visibility, seconds)


def write_results(doc: dict, path) -> Path:
    """Write a results.json after :func:`validate` (a ValueError names what is wrong)."""
    bad = validate(doc)
    if bad:
        raise ValueError("results.json would not be valid: " + "; ".join(bad))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path

