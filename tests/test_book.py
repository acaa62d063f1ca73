"""The course book's two builds (tools/build_book.py): the instructors' site of the executed
solutions, and the student book — the student copies only, safe to publish during term."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from labkit import registry
from tooling import load_tool

ROOT = Path(__file__).resolve().parent.parent


def _tool():
    return load_tool("build_book")


def _solution_lines(stem: str) -> set[str]:
    """The code lines that exist only in the solution (its solution regions, its outputs)."""
    sol = json.loads((ROOT / "solutions" / f"{stem}.ipynb").read_text(encoding="utf-8"))
    stu = json.loads((ROOT / "notebooks" / f"{stem}.ipynb").read_text(encoding="utf-8"))
    theirs = {ln.strip() for c in stu["cells"] for ln in "".join(c["source"]).splitlines()}
    return {ln.strip() for c in sol["cells"] if c["cell_type"] == "code"
            for ln in "".join(c["source"]).splitlines()
            if len(ln.strip()) > 25 and ln.strip() not in theirs}


def test_student_book_stages_only_student_copies(tmp_path):
    book = _tool()
    src = tmp_path / "src"
    book.stage(ROOT, src, student=True)
    index = (src / "index.md").read_text(encoding="utf-8")
    assert "student copies" in index and "executed solution" not in index
    assert "no solutions" in (src / "_config.yml").read_text(encoding="utf-8")
    for lab in registry.LABS:
        page = json.loads((src / f"{lab.notebook}.ipynb").read_text(encoding="utf-8"))
        assert page["metadata"]["labkit"]["generated_from"].startswith("solutions/")
        assert not any(c.get("outputs") for c in page["cells"]), lab.notebook
        lines = {ln.strip() for c in page["cells"] for ln in "".join(c["source"]).splitlines()}
        leaked = sorted(_solution_lines(lab.notebook) & lines)
        assert not leaked, f"{lab.notebook}: solution lines in the student book: {leaked[:3]}"
        assert (src / "student" / f"{lab.notebook}.ipynb").is_file()
        assert f"{lab.notebook}.ipynb <student/" in index


def test_student_book_folds_each_exercises_hints_after_it(tmp_path):
    """Each exercise cell (grade_id ex-NAME) is followed by one markdown cell: labkit.hints'
    tiers of NAME, in order, as nested closed <details> (tier k+1 inside tier k), text escaped;
    the download is the student copy unchanged."""
    import html
    import re

    from labkit import hints

    book = _tool()
    src = tmp_path / "src"
    assert not book.stage(ROOT, src, student=True)      # no warning: every exercise has hints
    for lab in registry.LABS:
        page = json.loads((src / f"{lab.notebook}.ipynb").read_text(encoding="utf-8"))
        cells = page["cells"]
        exercises = [i for i, c in enumerate(cells)
                     if c.get("metadata", {}).get("nbgrader", {}).get("solution")]
        assert exercises, lab.notebook
        for i in exercises:
            name = cells[i]["metadata"]["nbgrader"]["grade_id"].removeprefix("ex-")
            toggle = cells[i + 1]
            assert toggle["cell_type"] == "markdown", (lab.notebook, name)
            assert toggle["metadata"]["labkit"]["hints"] == name
            text = "".join(toggle["source"])
            assert "\n\n" not in text.strip()         # one HTML block: no blank line inside
            tiers = re.findall(r'<details class="labkit-hint" data-exercise="(\w+)" '
                               r'data-tier="(\d+)">', text)
            want = hints.get(name).texts
            assert tiers == [(name, str(k)) for k in range(1, len(want) + 1)], (lab.notebook, name)
            assert not re.search(r"<details[^>]* open", text)   # closed until opened
            # nested: every tier's </details> comes after the last tier's opening tag
            assert text.rstrip().endswith("</details>" * len(want))
            bodies = re.findall(r'<div class="labkit-hint-text">(.*?)</div>', text)
            assert [html.unescape(b) for b in bodies] == [" ".join(t.split()) for t in want]
        hint_cells = [c for c in cells if c.get("metadata", {}).get("labkit", {}).get("hints")]
        assert len(hint_cells) == len(exercises), lab.notebook
        assert ((src / "student" / f"{lab.notebook}.ipynb").read_bytes()
                == (ROOT / "notebooks" / f"{lab.notebook}.ipynb").read_bytes())


def test_hint_toggles_escape_html_and_warn_without_hints():
    import re

    from labkit import hints

    book = _tool()
    hints.define("toy_book_ex", "a < b & c", "use `x >> 2`", "y = x >> 2")
    text = book.hint_toggles("toy_book_ex")
    assert "a &lt; b &amp; c" in text and "<code>x &gt;&gt; 2</code>" in text
    assert "y = x &gt;&gt; 2" in text and not re.search(r"<(?!/?(details|summary|div|code))", text)
    nb = {"cells": [{"cell_type": "code", "source": "raise NotImplementedError",
                     "metadata": {"nbgrader": {"solution": True, "grade_id": "ex-no_such_ex"}}}]}
    page, warnings = book.with_hint_toggles(nb, "x.ipynb")
    assert page["cells"] == nb["cells"] and "no_such_ex" in warnings[0]


def test_student_book_refuses_a_solution_in_place_of_a_student_copy(tmp_path):
    book = _tool()
    root = tmp_path / "repo"
    (root / "notebooks").mkdir(parents=True)
    for lab in registry.LABS:
        shutil.copy(ROOT / "notebooks" / f"{lab.notebook}.ipynb", root / "notebooks")
    first = registry.LABS[0].notebook
    shutil.copy(ROOT / "solutions" / f"{first}.ipynb", root / "notebooks" / f"{first}.ipynb")
    with pytest.raises(SystemExit, match="not a student copy|has outputs"):
        book.stage(root, tmp_path / "src", student=True)


def test_instructor_book_stages_the_executed_solutions(tmp_path):
    book = _tool()
    src = tmp_path / "src"
    book.stage(ROOT, src)
    for lab in registry.LABS:
        page = json.loads((src / f"{lab.notebook}.ipynb").read_text(encoding="utf-8"))
        assert any(c.get("outputs") for c in page["cells"]), lab.notebook
        assert not any("labkit-hint" in "".join(c["source"]) for c in page["cells"]), (
            "the instructor book has the solutions: no hint toggles")
    assert "executed solution" in (src / "index.md").read_text(encoding="utf-8")


@pytest.mark.full       # sphinx builds the whole site (≈ 20 s); the staging above is the logic
def test_student_book_builds(tmp_path):
    index = _tool().build(ROOT, tmp_path / "book-student", student=True)
    html = index.read_text(encoding="utf-8")
    assert "student copies" in html
    for lab in registry.LABS:
        assert (index.parent / f"{lab.notebook}.html").is_file()
