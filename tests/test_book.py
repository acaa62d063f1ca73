"""The course book's two builds (tools/build_book.py): the instructors' site of the executed
solutions, and the student book — the student copies only, safe to publish during term."""
from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest

from labkit import registry

ROOT = Path(__file__).resolve().parent.parent


def _tool():
    spec = importlib.util.spec_from_file_location("build_book", ROOT / "tools" / "build_book.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


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
    assert "executed solution" in (src / "index.md").read_text(encoding="utf-8")


@pytest.mark.full       # sphinx builds the whole site (≈ 20 s); the staging above is the logic
def test_student_book_builds(tmp_path):
    index = _tool().build(ROOT, tmp_path / "book-student", student=True)
    html = index.read_text(encoding="utf-8")
    assert "student copies" in html
    for lab in registry.LABS:
        assert (index.parent / f"{lab.notebook}.html").is_file()
