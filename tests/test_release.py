"""labkit.release: markers → stubs, outputs cleared, metadata kept, sync check, hard errors."""
import json

import nbformat
import pytest

from labkit import release as rel
from labkit.cli import main as cli_main


def _nb(cells):
    nb = nbformat.v4.new_notebook()
    nb.cells = cells
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


def _ex(source, gid="ex-a"):
    c = nbformat.v4.new_code_cell(source)
    c.metadata["nbgrader"] = {"grade_id": gid, "solution": True, "grade": False,
                              "locked": False, "schema_version": 3}
    c.outputs = [nbformat.v4.new_output("stream", text="solution output\n")]
    c.execution_count = 3
    return c


def _check(source, gid="check-a"):
    c = nbformat.v4.new_code_cell(source)
    c.metadata["nbgrader"] = {"grade_id": gid, "solution": False, "grade": True, "points": 2,
                              "locked": True, "schema_version": 3}
    return c


SOLVED = '''@njit
def f(x):
    """Doc stays."""
    # Hint: loop over rows first
    # Hint: then columns
    ### BEGIN SOLUTION
    return x + 1
    ### END SOLUTION'''


def test_stub_keeps_signature_docstring_and_hint():
    out = rel.strip_source(SOLVED, grade_id="ex-a")
    assert out.splitlines()[:5] == SOLVED.splitlines()[:5]
    assert "return x + 1" not in out and "BEGIN SOLUTION" not in out
    assert "    # YOUR CODE HERE" in out
    assert "    raise NotImplementedError('loop over rows first; then columns')" in out
    compile(out, "<stub>", "exec")


def test_stub_without_hint_names_exercise():
    out = rel.strip_source("def g():\n    ### BEGIN SOLUTION\n    pass\n    ### END SOLUTION",
                           grade_id="ex-g")
    assert "exercise ex-g" in out


@pytest.mark.parametrize("src, what", [
    ("### BEGIN SOLUTION\n### BEGIN SOLUTION\n### END SOLUTION", "nested"),
    ("### BEGIN SOLUTION\nx = 1", "never closed"),
    ("x = 1\n### END SOLUTION", "without a BEGIN"),
])
def test_bad_markers_are_hard_errors(src, what):
    with pytest.raises(rel.ReleaseError, match=what):
        rel.strip_source(src, where="nb cell 1")


def test_markdown_region():
    out = rel.strip_source("Answer:\n### BEGIN SOLUTION\n42\n### END SOLUTION", cell_type="markdown")
    assert out == "Answer:\nYOUR ANSWER HERE"


def test_release_notebook_clears_outputs_and_locks_checks():
    nb = _nb([nbformat.v4.new_markdown_cell("# Title"), _ex(SOLVED), _check("check.a(f)")])
    out = rel.release_notebook(nb, "00_x.ipynb")
    assert "Student copy generated from `solutions/00_x.ipynb`" in out.cells[0].source
    ex, chk = out.cells[1], out.cells[2]
    assert ex.outputs == [] and ex.execution_count is None
    assert ex.metadata["nbgrader"]["grade_id"] == "ex-a"
    assert chk.metadata["nbgrader"]["locked"] is True
    assert chk.metadata["deletable"] is False and chk.metadata["editable"] is False
    assert nb.cells[1].outputs, "the input notebook must not be modified"
    nbformat.validate(out)


def test_markers_need_nbgrader_metadata():
    plain = nbformat.v4.new_code_cell(SOLVED)
    with pytest.raises(rel.ReleaseError, match="nbgrader"):
        rel.release_notebook(_nb([plain]), "x.ipynb")


def test_duplicate_grade_ids():
    with pytest.raises(rel.ReleaseError, match="duplicate grade_id"):
        rel.release_notebook(_nb([_ex(SOLVED), _ex(SOLVED)]), "x.ipynb")


def test_release_and_check_roundtrip(tmp_path, capsys):
    src, dst = tmp_path / "solutions", tmp_path / "notebooks"
    src.mkdir()
    nbformat.write(_nb([_ex(SOLVED), _check("check.a(f)")]), src / "01_demo.ipynb")
    assert cli_main(["release", "--check", "--src", str(src), "--dst", str(dst)]) == 1
    assert "make notebooks" in capsys.readouterr().out
    assert cli_main(["release", "--src", str(src), "--dst", str(dst)]) == 0
    assert cli_main(["release", "--check", "--src", str(src), "--dst", str(dst)]) == 0
    text = (dst / "01_demo.ipynb").read_text()
    assert "return x + 1" not in text and json.loads(text)["nbformat"] == 4
    (dst / "99_orphan.ipynb").write_text(text)
    assert rel.release(src, dst, check=True) == ["99_orphan.ipynb (no solution: remove it)"]


def test_repo_notebooks_in_sync():
    """notebooks/ is exactly release(solutions/) — fix with `make notebooks`."""
    changed = rel.release(check=True)
    assert not changed, f"out of date: {changed}; run `make notebooks` and commit notebooks/"


def test_nbval_markers_stripped_from_student_copy():
    c = nbformat.v4.new_code_cell("# NBVAL_IGNORE_OUTPUT\nprint(1)")
    out = rel.release_notebook(_nb([c]), "x.ipynb")
    assert out.cells[0].source == "print(1)"
