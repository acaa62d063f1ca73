"""The grader against hostile *inputs* (files in the class folder, not code that runs): symbolic
links, malformed notebooks, CSV injection through names, feedback pages that would share a
file, oversized notebooks. One batch, graded in this process without the sandbox (only the
honest student's checks run; every other notebook is refused or unreadable before any check).
"""
from __future__ import annotations

import csv
import json
import os
import re
from pathlib import Path

import nbformat
import pytest

from labkit import grade
from labkit.grade import batch as grade_batch, notebooks, pages, report, run, settings
from test_grade import LAB_MODULE, solution_notebook

LIMIT = 1 << 20                                 # the batch's size cap (1 MiB)
INJECT = ("=HYPERLINK(\"x\";\"y\")", "+1+cmd", "-2+3", "@SUM(1;2)", "\tx", "\rx")
TWINS = ["Ann", "ann", "ann!", "a nn", "a_nn"]  # Ann/ann/ann! → ann.html, a nn/a_nn → a_nn.html


class _NoSnapshot:
    """The tests' grader hashes no labkit files (other work edits this checkout meanwhile; the
    real snapshot would restore them without the sandbox)."""

    def __init__(self, *a, **k):
        self.digest = "test"

    def changes(self):
        return []

    def restore(self, changed):
        return []

    def rebase(self):
        pass


def _write(path: Path, nb) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(nb), encoding="utf-8")


def _broken(path: Path, tag: str) -> None:
    """An unreadable notebook (fast: no check runs)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"cells": [ {"source": "' + tag, encoding="utf-8")


def build(root: Path) -> Path:
    (root / "pkg").mkdir()
    (root / "pkg" / "gradefix_lab.py").write_text(LAB_MODULE, encoding="utf-8")
    sols = root / "solutions"
    sols.mkdir()
    sol = solution_notebook()
    nbformat.write(sol, sols / "00_fix.ipynb")
    subs = root / "subs"
    subs.mkdir()
    nbformat.write(sol, subs / "alice.ipynb")                          # the honest student
    # 1. symbolic links: a student's notebook, a student's folder, links inside a folder
    (subs / "mallory.ipynb").symlink_to(sols / "00_fix.ipynb")
    (subs / "mal_dir").symlink_to(sols, target_is_directory=True)
    (subs / "nested" / "deeper").mkdir(parents=True)
    (subs / "nested" / "lab.ipynb").symlink_to(sols / "00_fix.ipynb")
    (subs / "nested" / "deeper" / "sols").symlink_to(sols, target_is_directory=True)
    (subs / "dangling.ipynb").symlink_to(root / "nothing.ipynb")
    (subs / "linkonly").mkdir()
    (subs / "linkonly" / "x.ipynb").symlink_to(subs / "alice.ipynb")
    (subs / "empty").mkdir()
    os.mkfifo(subs / "nested" / "deeper" / "pipe.ipynb")         # would block a plain read
    # 2. malformed notebooks
    depth = 100_000
    (subs / "deep.ipynb").write_text('{"cells": [], "x": ' + "[" * depth + "]" * depth + "}",
                                     encoding="utf-8")
    (subs / "deep_dict.ipynb").write_text('{"cells": [], "x": ' + '{"a":' * depth + "1"
                                          + "}" * depth + "}", encoding="utf-8")
    for name, value in (("lk_int", 5), ("lk_list", ["generated_from", "00_fix.ipynb"]),
                        ("lk_str", "00_fix.ipynb")):
        nb = json.loads(nbformat.writes(sol))
        nb["metadata"]["labkit"] = value
        _write(subs / f"{name}.ipynb", nb)
    for name, gid in (("gid_list", ["ex-gf_add_one"]), ("gid_dict", {"a": 1}), ("gid_int", 7)):
        nb = json.loads(nbformat.writes(sol))
        nb["cells"][2]["metadata"]["nbgrader"]["grade_id"] = gid
        _write(subs / f"{name}.ipynb", nb)
    nb = json.loads(nbformat.writes(sol))
    nb["cells"][3]["metadata"]["nbgrader"] = ["grade", True]
    _write(subs / "nbg_list.ipynb", nb)
    # 3. CSV injection through file names
    for name in INJECT:
        _broken(subs / f"{name}.ipynb", "injection")
    _broken(subs / "-5.ipynb", "negative")
    # 4. names that sanitise to one feedback file
    for i, name in enumerate(TWINS):
        _broken(subs / name / f"twin{i}.ipynb", f"twin{i}")      # the page names its notebook
    # 5. too big (sparse: a read would take memory and time), without reading them
    with open(subs / "big.ipynb", "wb") as f:
        f.truncate(LIMIT + 1)
    with open(subs / "huge.ipynb", "wb") as f:
        f.truncate(8 << 30)
    return root


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    root = build(tmp_path_factory.mktemp("gradeinputs"))
    with pytest.MonkeyPatch.context() as mp:
        mp.syspath_prepend(str(root / "pkg"))
        mp.setenv("PYTHONPATH", os.pathsep.join([str(root / "pkg"),
                                                 os.environ.get("PYTHONPATH", "")]))
        mp.delenv("LABKIT_SPEED", raising=False)
        mp.setattr(grade_batch, "Snapshot", _NoSnapshot)
        mp.setattr(grade_batch, "environment_stamp", lambda: {"cpu": "-test", "numpy": "=1+1"})
        mp.setenv("PYTHONDONTWRITEBYTECODE", "1")           # grade() sets both: undone after
        mp.setattr("sys.dont_write_bytecode", True)
        results = grade.grade(root / "subs", solutions=root / "solutions", sandbox=False,
                              progress=False, exercise_modules=("gradefix_lab",),
                              max_notebook_bytes=LIMIT, cell_timeout=60)
    out = root / "out"
    out.mkdir()
    report.write_csv(results, out / "grades.csv")
    report.write_wide_csv(results, out / "grades-wide.csv")
    report.write_json(results, out / "grades.json")
    pages.write_pages(results, out / "html")
    with open(out / "grades.csv", newline="", encoding="utf-8") as f:
        table = list(csv.reader(f))
    with open(out / "grades-wide.csv", newline="", encoding="utf-8") as f:
        wide = list(csv.reader(f))
    return {"root": root, "results": results, "out": out, "table": table, "wide": wide,
            "by": {r["notebook"]: r for r in results}}


def test_the_honest_student_is_graded_beside_them(batch):
    r = batch["by"]["alice.ipynb"]
    assert r["status"] == "graded", r
    assert [(e["exercise"], e["verdict"], e["points"]) for e in r["exercises"]] == [
        ("gf_add_one", "passed", 1.0), ("gf_double", "passed", 2.0)]
    for name in ("grades.csv", "grades-wide.csv", "grades.json", "html/report.html"):
        assert (batch["out"] / name).is_file()


@pytest.mark.parametrize("rel", ["mallory.ipynb", "mal_dir", "nested/lab.ipynb",
                                 "nested/deeper/sols", "dangling.ipynb", "linkonly/x.ipynb"])
def test_symbolic_links_are_refused_never_followed(batch, rel):
    r = batch["by"][rel]
    assert r["status"] == "refused" and r["error"] == "refused: symbolic link", r
    assert [e["points"] for e in r["exercises"]] == [0.0]
    assert r["exercises"][0]["message"] == "refused: symbolic link"


def test_nothing_behind_a_link_was_read(batch):
    # the solutions behind mal_dir/ and nested/deeper/sols/ are not submissions of anyone
    assert not [r for r in batch["results"] if "00_fix.ipynb" in r["notebook"]]
    assert {r["student"] for r in batch["results"] if r["notebook"].startswith("nested/")} == {
        "nested"}
    assert sum(float(e["points"]) for r in batch["results"] if r["student"] != "alice"
               for e in r["exercises"]) == 0


def test_an_empty_folder_is_still_unreadable(batch):
    r = batch["by"]["empty/"]
    assert r["status"] == "unreadable" and r["error"] == "no notebook (*.ipynb) in folder empty/"


def test_a_fifo_is_refused_not_read(batch):
    r = batch["by"]["nested/deeper/pipe.ipynb"]
    assert r["status"] == "refused" and r["error"] == "refused: not a regular file"


@pytest.mark.parametrize("stem", ["deep", "deep_dict", "lk_int", "lk_list", "lk_str",
                                  "gid_list", "gid_dict", "gid_int", "nbg_list"])
def test_malformed_notebooks_are_one_unreadable_row_each(batch, stem):
    r = batch["by"][f"{stem}.ipynb"]
    assert r["status"] == "unreadable", r
    assert r["error"].startswith("not a notebook: "), r["error"]
    assert [(e["verdict"], e["points"]) for e in r["exercises"]] == [("unreadable", 0.0)]
    assert r["exercises"][0]["message"] == r["error"]


def test_malformed_messages_say_what_is_wrong(batch):
    by = batch["by"]
    assert "nested too deeply" in by["deep.ipynb"]["error"]
    assert "'labkit' is not a mapping" in by["lk_int.ipynb"]["error"]
    assert "text grade_id" in by["gid_list.ipynb"]["error"]


def test_any_exception_while_reading_or_matching_is_that_notebook_s_row(tmp_path, monkeypatch):
    def boom(nb, path, canon):
        if path.name == "b.ipynb":
            raise KeyError("surprise")
        return next(iter(canon.values()))
    monkeypatch.setattr(run, "match_canonical", boom)
    canon = {"00_fix.ipynb": notebooks.Canonical("00_fix.ipynb", tmp_path, None, [])}
    nbformat.write(solution_notebook(), tmp_path / "b.ipynb")
    sub = notebooks.Submission("b", tmp_path / "b.ipynb", "b.ipynb")
    c, err = run._read_and_match(sub, canon, settings.GradeSettings())
    assert err == "cannot read this notebook: KeyError: 'surprise'"
    res = run.grade_notebook(sub, c, settings.GradeSettings(), err)
    assert res["status"] == "unreadable" and res["error"] == err


def _cells(table):
    return [c for row in table for c in row]


def test_no_csv_cell_starts_a_formula(batch):
    for table in (batch["table"], batch["wide"]):
        bad = [c for c in _cells(table) if c[:1] in ("=", "+", "@", "\t", "\r")
               or (c[:1] == "-" and not re.fullmatch(r"-\d+(\.\d*)?", c))]
        assert bad == []


def test_csv_injection_is_neutralised_but_kept_readable(batch):
    for table in (batch["table"], batch["wide"]):
        students = {row[0] for row in table[1:]}
        for name in INJECT:
            assert "'" + name in students, (name, students)
        assert "-5" in students                       # a negative number stays a number
    header = batch["table"][0]
    row = next(r for r in batch["table"] if r[0] == "alice")
    assert row[header.index("cpu")] == "'-test" and row[header.index("numpy")] == "'=1+1"
    assert row[header.index("points")] == "1"
    assert report._cell("-1.5") == "-1.5" and report._cell(-3) == -3
    assert report._cell("-1+1") == "'-1+1" and report._cell("ok=1") == "ok=1"
    # the JSON keeps the names as they are (it is data, not a spreadsheet)
    names = {r["student"] for r in json.loads((batch["out"] / "grades.json").read_text())[
        "submissions"]}
    assert set(INJECT) <= names


def test_each_student_gets_an_own_feedback_page(batch):
    names = pages.page_names(batch["results"])
    files = [n.lower() for n in names.values()]
    assert len(files) == len(set(files)) == len({r["student"] for r in batch["results"]})
    assert names["alice"] == "alice"                   # no collision: the plain name
    assert names == pages.page_names(list(reversed(batch["results"])))   # deterministic
    fb = batch["out"] / "html" / "feedback"
    report_html = (batch["out"] / "html" / "report.html").read_text(encoding="utf-8")
    for i, s in enumerate(TWINS):
        page = fb / f"{names[s]}.html"
        text = page.read_text(encoding="utf-8")
        assert f"twin{i}" in text and all(f"twin{j}" not in text for j in range(len(TWINS))
                                           if j != i), s
        assert f"<a href='feedback/{names[s]}.html'>{pages._e(s)}</a>" in report_html
    assert len(list(fb.iterdir())) == len(names)


def test_a_name_taken_by_a_suffix_gets_another():
    tag = pages.page_names([{"student": s, "exercises": []} for s in ("Ann", "ann")])
    taken = tag["ann"]
    names = pages.page_names([{"student": s, "exercises": []} for s in ("Ann", "ann", taken)])
    assert len({n.lower() for n in names.values()}) == 3
    long = pages.page_names([{"student": "x" * 300, "exercises": []}])
    assert len(long["x" * 300]) <= 100                 # a file name the file system takes


def test_too_big_notebooks_are_refused_unread(batch):
    for rel, mb in (("big.ipynb", "1.0"), ("huge.ipynb", "8192.0")):
        r = batch["by"][rel]
        assert r["status"] == "refused", r
        assert r["error"] == f"refused: notebook is {mb} MB, over the 1 MB limit"


def test_the_default_cap_is_a_setting(tmp_path):
    assert settings.MAX_NOTEBOOK_BYTES == 20 << 20
    assert settings.GradeSettings().max_notebook_bytes == settings.MAX_NOTEBOOK_BYTES
    p = tmp_path / "x.ipynb"
    with open(p, "wb") as f:
        f.truncate((20 << 20) + 1)
    with pytest.raises(notebooks.Refused, match=r"^refused: notebook is 20\.0 MB, over the "
                                                 r"20 MB limit$"):
        notebooks._read_submission(p)
    nbformat.write(solution_notebook(), p)
    assert notebooks._read_submission(p, max_bytes=0).cells          # 0: no limit
    with pytest.raises(ValueError, match="max_notebook_bytes"):
        grade.grade(tmp_path, solutions=tmp_path, max_notebook_bytes=-1, sandbox=False)
