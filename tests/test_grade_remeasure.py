"""Checks the machine could not decide (``inconclusive``: a speed interval straddled its target
while other work shared the cores) are graded again after the batch, one at a time, and only
those; an undecided result is never cached. The fixture course of test_grade, graded in this
process (jobs=1) with the check call replaced by a scripted one."""
from __future__ import annotations

import sys

import nbformat
import pytest

from labkit.grade import batch, run
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


class _Calls(list):
    """The exercises run_exercise was called for, in order; ``lasts``: its ``last`` flags."""

    def __init__(self):
        super().__init__()
        self.lasts = []


def _scripted(monkeypatch, verdicts):
    """run_exercise answering from ``verdicts[exercise]``: verdicts in call order, the last repeated."""
    calls = _Calls()

    def fake(ex, cell, timeout, last=False):
        calls.append(ex.name)
        calls.lasts.append(last)
        queue = verdicts.get(ex.name, ["passed"])
        v = queue.pop(0) if len(queue) > 1 else queue[0]
        return {"verdict": v, "passed": v == "passed", "points": ex.points if v == "passed" else 0.0,
                "message": f"scripted {v}", "details": {}}, 7

    monkeypatch.setattr(run, "run_exercise", fake)
    return calls


def _grade(course, **kw):
    return batch.grade(course / "subs", solutions=course / "solutions", jobs=1, progress=False,
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
    # each worker's last check is told so (it starts no spare process for a next one)
    assert calls.lasts == [False, True] * 2 + [True]


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

    def slow_first(ex, cell, timeout, last=False):
        if ex.name == "gf_add_one":
            now[0] += 100.0
        return fake(ex, cell, timeout, last)

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


def test_a_cell_that_did_not_load_in_time_runs_alone_after_the_batch(course, monkeypatch):
    """Loading the cell is labkit's time, not the student's function's: a check whose checker ran
    out of time loading the cell (a machine far too busy) is run again alone after the batch —
    even in a batch graded one at a time — and, if it still cannot load, stays 0 with a review
    note instead of a silent error."""
    from labkit.check.runner import _why
    from labkit.grade.report import review_reason
    calls = []
    stuck = _why("gf_double", 2.0, "load-timeout", 30).to_dict()     # what the worker returns

    def fake(ex, cell, timeout, last=False):
        calls.append(ex.name)
        if ex.name == "gf_double" and calls.count(ex.name) <= 2:      # both students' first run
            return dict(stuck), 7
        return {"verdict": "passed", "passed": True, "points": ex.points, "message": "ok",
                "details": {}}, 7

    monkeypatch.setattr(run, "run_exercise", fake)
    rows = _rows(_grade(course))
    doubles = [e for e in rows.values() if e["exercise"] == "gf_double"]
    assert len(doubles) == 2 and calls.count("gf_double") == 4, calls
    assert all(e["verdict"] == "passed" and e["points"] == 2 and e.get("remeasured")
               for e in doubles), doubles
    assert all("the first run was timed out" in e["message"] for e in doubles)
    from types import SimpleNamespace
    row = run._verdict_row(SimpleNamespace(name="gf_double", points=2.0), dict(stuck), 7, 30.0)
    assert (row["verdict"], row.get("never_ran")) == ("timed out", True)
    # the wording alone (a student's exception may say anything) decides nothing
    said = run._verdict_row(SimpleNamespace(name="gf_double", points=2.0),
                            {"verdict": "error", "message": stuck["message"] + "; did not return "
                             "within 1 s; crashed the checker"}, 7, 30.0)
    assert said["verdict"] == "error" and not said.get("never_ran")
    assert review_reason(said) is None
    assert review_reason(dict(row, remeasured=True)).startswith(
        "timed out: the cell did not load in time, even re-measured alone")


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


def test_still_undecided_rows_are_flagged_for_review_in_every_output(course, monkeypatch, tmp_path):
    """Speed that cannot be judged is not a pass: a check still ``inconclusive`` after its
    re-measurement carries ``review`` (JSON True, CSV ``yes``, the wide CSV names it, report.html's
    "Needs review" section, the student's page says an instructor will look); a passed row does not
    — nor one that passed on re-measurement."""
    import csv

    from labkit.grade import pages, report
    _scripted(monkeypatch, {"gf_double": ["inconclusive", "inconclusive", "inconclusive",
                                          "passed"]})
    results = _grade(course)
    rows = _rows(results)
    undecided = [e for e in rows.values() if e["verdict"] == "inconclusive"]
    assert len(undecided) == 1 and undecided[0]["remeasured"] and undecided[0]["review"] is True
    again = [e for e in rows.values() if e["exercise"] == "gf_double" and e["verdict"] == "passed"]
    assert len(again) == 1 and again[0]["remeasured"] and again[0]["review"] is False
    assert all(e["review"] is False for e in rows.values() if e["exercise"] == "gf_add_one")
    who = next(s for (s, x), e in rows.items() if e is undecided[0])
    out = tmp_path / "out"
    out.mkdir()
    report.write_csv(results, out / "grades.csv")
    report.write_wide_csv(results, out / "grades-wide.csv")
    with open(out / "grades.csv", newline="", encoding="utf-8") as f:
        table = {(r["student"], r["exercise"]): r for r in csv.DictReader(f)}
    assert {k for k, r in table.items() if r["review"] == "yes"} == {(who, "gf_double")}
    with open(out / "grades-wide.csv", newline="", encoding="utf-8") as f:
        wide = {r["student"]: r for r in csv.DictReader(f)}
    assert wide[who]["review"] == "00_fix:gf_double"
    assert all(not r["review"] for s, r in wide.items() if s != who)
    assert "1 row(s) to review" in report.summary(results)
    html_report, feedback = pages.write_pages(results, out)
    text = html_report.read_text()
    section = text.split("Needs review", 1)[1].split("<h2>", 1)[0]
    assert who in section and "gf_double" in section and "scripted inconclusive" in section
    assert "gf_add_one" not in section
    mine = next(p for p in feedback if p.stem == who).read_text()
    assert mine.count(pages.REVIEW_NOTE) == 1
    other = next(p for p in feedback if p.stem != who).read_text()
    assert pages.REVIEW_NOTE not in other


def test_which_rows_need_review():
    from labkit.grade import report
    row = {"exercise": "flat_tiles", "points": 2.0, "max_points": 2, "verdict": "passed"}
    assert report.review_reason(dict(row, message="every position × tile right")) is None
    # a pass on other proof while speed could not be judged: marked by the check, not worded
    assert report.review_reason(dict(row, message="right", details={"speed_not_judged": "busy"}))
    assert report.review_reason(dict(row, message="one thread only: speed not judged")) is None
    assert report.review_reason(dict(row, verdict="inconclusive", points=0.0, message="?"))
    # re-measured and passed: the first run's verdict in its message is no reason
    assert report.review_reason(dict(row, remeasured=True, message=(
        "ok (re-measured after the batch, alone on the machine: the first run was "
        "inconclusive)"))) is None
    assert report.review_reason({"exercise": "", "verdict": "inconclusive", "message": ""}) is None
    # passed beside labkit's answer, which itself missed the target here: judged, but not fully
    assert report.review_reason(dict(row, message="0.9× … yours runs at 96% of the answer's speed",
                                     details={"speed_ratio": 0.9, "speed_share": 0.96}))
    assert report.review_reason(dict(row, message="3.3× faster", details={"speed_ratio": 3.3})) \
        is None
    # a message that a spreadsheet would run stays text in the review rows too
    results = [{"student": "=cmd", "notebook": "n.ipynb", "canonical": "00_fix.ipynb",
                "status": "graded", "flags": {}, "exercises": [
                    dict(row, verdict="inconclusive", points=0.0, message="=1+1 <b>")]}]
    report.mark_review(results)
    (r,) = report.rows(results)
    assert r["review"] == "yes"
    assert report._cell(r["student"]) == "'=cmd" and report._cell(r["message"]) == "'=1+1 <b>"
    from labkit.grade import pages
    assert "=1+1 &lt;b&gt;" in pages._review_section(results)


def _tiered(share, straddles, verdict="passed"):
    """A challenge's result as the worker returns it: ``share`` of gf_double's 2 points, the
    position interval straddling the boundary above (``details["challenge"]``, as
    labkit.check.facts writes it)."""
    return {"verdict": verdict, "passed": verdict == "passed", "points": 2 * share,
            "max_points": 2, "message": f"scripted tier {share}",
            "details": {"challenge": {"straddles": straddles, "decided": verdict != "inconclusive",
                                      "judged": True, "position": 0.69}}}


@pytest.mark.parametrize("second, points, said", [
    (_tiered(1.0, False), 2.0, "the first run was passed, 1.5 of 2 points"),   # the quiet run earns
    (_tiered(0.5, False), 1.5, "the better measurement stands"),                # a busier one: kept
    (_tiered(0.0, False, "inconclusive"), 1.5, "inconclusive, 0 of 2 points"),  # cannot decide: kept
    (_tiered(0.75, True), 1.5, "first run was passed, 1.5 of 2 points, its interval straddling"),
    # right on the first run's inputs only: the second run's verdict on the code stands
    (dict(_tiered(0.0, False, "wrong"), message="out[3] differs"), 0.0, "out[3] differs"),
])
def test_a_challenge_given_the_lower_tier_on_a_straddle_is_measured_again(course, monkeypatch,
                                                                           second, points, said):
    """An honest student near a tier boundary on a busy grading machine: the check gives the lower
    tier while the interval straddles, the grader measures that challenge once more alone after
    the batch and the better of the two measurements stands (load only slows code down). A
    decided tier below full is not measured again, nor a straddle that already earned full."""
    calls = []
    answers = {"alice": [_tiered(0.75, True), second], "bob": [_tiered(0.75, False)]}

    def fake(ex, cell, timeout, last=False):
        calls.append(ex.name)
        if ex.name != "gf_double":
            return {"verdict": "passed", "passed": True, "points": 1, "message": "ok",
                    "details": {}}, 7
        who = "alice" if calls.count("gf_double") in (1, 3) else "bob"
        q = answers[who]
        return dict(q.pop(0) if len(q) > 1 else q[0]), 7

    monkeypatch.setattr(run, "run_exercise", fake)
    rows = _rows(_grade(course))
    assert calls == ["gf_add_one", "gf_double"] * 2 + ["gf_double"]      # alice's, once more
    alice, bob = rows[("alice", "gf_double")], rows[("bob", "gf_double")]
    assert alice["remeasured"] and alice["points"] == points and said in alice["message"], alice
    assert (bob["points"], bob.get("remeasured")) == (1.5, None)           # decided ¾: stands
    assert run._undecided({"status": "graded", "exercises": [alice]}) == []   # once only
    row = {"exercise": "gf_double", "verdict": "passed", "points": 1.5, "max_points": 2,
           "details": _tiered(0.75, True)["details"]}
    assert run.straddled(row) and not run.straddled(dict(row, points=2.0))   # full: nothing to gain
    assert not run.straddled(dict(row, details={}))                          # not a challenge


def test_a_long_challenge_row_keeps_what_the_remeasurement_reads():
    from types import SimpleNamespace
    r = _tiered(0.75, True)
    r["details"]["challenge"]["steps"] = ["x" * 100] * 40             # far past the kept length
    row = run._verdict_row(SimpleNamespace(name="gf_double", points=2.0), r, 7, 30.0)
    assert "truncated" in row["details"] and run.straddled(row), row["details"]
