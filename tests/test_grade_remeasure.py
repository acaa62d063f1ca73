"""Checks the machine could not decide (``inconclusive``: a speed interval straddled its target
while other work shared the cores) are graded again after the batch, one at a time, and only
those; an undecided result is never cached. The fixture course of test_grade, graded in this
process (jobs=1) with the check call replaced by a scripted one."""
from __future__ import annotations

import sys

import nbformat
import pytest

from labkit.grade import run
from test_grade import LAB_MODULE, solution_notebook


@pytest.fixture()
def course(tmp_path, monkeypatch):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "gradefix_lab.py").write_text(LAB_MODULE, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path / "pkg"))
    (tmp_path / "solutions").mkdir()
    nbformat.write(solution_notebook(), tmp_path / "solutions" / "00_fix.ipynb")
    (tmp_path / "subs").mkdir()
    for who in ("alice", "bob"):
        nbformat.write(solution_notebook(), tmp_path / "subs" / f"{who}.ipynb")
    import gradefix_lab  # noqa: F401 - registers the exercises
    yield tmp_path
    sys.modules.pop("gradefix_lab", None)


def _scripted(monkeypatch, verdicts):
    """run_exercise answering from ``verdicts[exercise]``: verdicts in call order, the last repeated."""
    calls = []

    def fake(ex, cell, timeout):
        calls.append(ex.name)
        queue = verdicts.get(ex.name, ["passed"])
        v = queue.pop(0) if len(queue) > 1 else queue[0]
        return {"verdict": v, "passed": v == "passed", "points": ex.points if v == "passed" else 0.0,
                "message": f"scripted {v}", "details": {}}, 7

    monkeypatch.setattr(run, "run_exercise", fake)
    return calls


def _grade(course, **kw):
    return run.grade(course / "subs", solutions=course / "solutions", jobs=1, progress=False,
                     sandbox=False, exercise_modules=("gradefix_lab",),
                     cache_dir=course / "cache", **kw)


def _rows(results):
    return {(r["student"], e["exercise"]): e for r in results for e in r["exercises"]}


def test_an_inconclusive_check_is_measured_again_alone(course, monkeypatch):
    calls = _scripted(monkeypatch, {"gf_double": ["inconclusive", "passed", "passed", "passed"]})
    rows = _rows(_grade(course))
    first = [k for k, e in rows.items() if e["exercise"] == "gf_double"]
    assert all(rows[k]["verdict"] == "passed" and rows[k]["points"] == 2 for k in first)
    assert sum(bool(rows[k].get("remeasured")) for k in first) == 1
    again = next(rows[k] for k in first if rows[k].get("remeasured"))
    assert "re-measured after the batch" in again["message"] and "was inconclusive" in again["message"]
    # 2 notebooks × 2 exercises, then the one undecided check once more (not its notebook)
    assert calls == ["gf_add_one", "gf_double"] * 2 + ["gf_double"]


def test_still_undecided_is_kept_and_not_cached(course, monkeypatch):
    _scripted(monkeypatch, {"gf_double": ["inconclusive"]})
    rows = _rows(_grade(course))
    assert {e["verdict"] for e in rows.values() if e["exercise"] == "gf_double"} == {"inconclusive"}
    assert not list((course / "cache").glob("*.json"))             # regrading measures again
    calls = _scripted(monkeypatch, {})
    rows = _rows(_grade(course))
    assert {e["verdict"] for e in rows.values()} == {"passed"} and calls


def test_a_tampered_notebook_is_not_measured_again():
    # its points are withheld: a re-measured row must not bring them back
    rows = [{"exercise": "gf_double", "verdict": "inconclusive", "points": 0.0}]
    assert run._undecided({"status": "tampered", "exercises": rows}) == []
    assert run._undecided({"status": "graded", "exercises": rows}) == ["gf_double"]


def test_a_check_that_never_ran_for_lack_of_time_runs_alone_after_the_batch(course, monkeypatch):
    # gf_add_one uses up the notebook's time: gf_double "never ran" — then gets its own turn.
    # The notebook's time runs on a virtual clock (gf_add_one takes 100 of its 100.5 s), so a
    # busy machine's slow worker start cannot use up the second run's time as well
    import time
    now = [0.0]

    class _VirtualTime:                  # the grader's `time`, monotonic() virtual
        def __getattr__(self, name):
            return getattr(time, name)

        @staticmethod
        def monotonic():
            return now[0]

    monkeypatch.setattr(run, "time", _VirtualTime())
    calls = _scripted(monkeypatch, {})
    fake = run.run_exercise

    def slow_first(ex, cell, timeout):
        if ex.name == "gf_add_one":
            now[0] += 100.0
        return fake(ex, cell, timeout)

    monkeypatch.setattr(run, "run_exercise", slow_first)
    rows = _rows(_grade(course, notebook_timeout=100.5))
    doubles = [e for e in rows.values() if e["exercise"] == "gf_double"]
    assert all(e["verdict"] == "passed" and e.get("remeasured") for e in doubles)
    assert all("the first run was timed out" in e["message"] for e in doubles)
    assert calls == ["gf_add_one", "gf_add_one", "gf_double", "gf_double"]


def test_which_timeouts_run_again():
    ran = {"exercise": "gf_double", "verdict": "timed out", "message": "did not return within 120 s"}
    never = {"exercise": "gf_add_one", "verdict": "timed out",
             "message": "the notebook's checks did not finish within 900 s; this one never ran",
             "never_ran": True}
    res = {"status": "graded", "exercises": [ran, never]}
    assert run._undecided(res) == ["gf_add_one"]                   # graded one at a time
    assert run._undecided(res, shared=True) == ["gf_double", "gf_add_one"]   # beside others
    again = {"status": "graded", "exercises": [dict(ran, remeasured=True)]}
    assert run._undecided(again, shared=True) == []                # once only


def test_a_grader_error_in_the_second_run_touches_only_the_checks_run_again():
    first = {"status": "graded", "exercises": [
        {"exercise": "gf_add_one", "verdict": "passed", "points": 1.0, "message": "ok"},
        {"exercise": "gf_double", "verdict": "inconclusive", "points": 0.0, "message": "?"}]}
    again = {"status": "grader error", "exercises": [
        {"exercise": "gf_add_one", "verdict": "not run", "points": 0.0, "message": "grader error"},
        {"exercise": "gf_double", "verdict": "not run", "points": 0.0, "message": "grader error"}]}
    got = run._merge_remeasured(first, again, ("gf_double",))
    assert [e["verdict"] for e in got["exercises"]] == ["passed", "inconclusive"]
    assert got["exercises"][0]["points"] == 1.0
    again["exercises"][1] = {"exercise": "gf_double", "verdict": "passed", "points": 2.0,
                             "message": "scripted"}
    got = run._merge_remeasured(first, again, ("gf_double",))
    assert [e["verdict"] for e in got["exercises"]] == ["passed", "passed"]
    assert got["exercises"][1]["remeasured"] and "was inconclusive" in got["exercises"][1]["message"]
