"""labkit.release: markers → stubs, outputs cleared, metadata kept, sync check, hard errors;
student copies built from the MyST sources, identical to the solutions outside exercise cells."""
import json
from pathlib import Path

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
    """nbval reads a cell tag now: no comment line to strip, the copy keeps source and tag."""
    c = nbformat.v4.new_code_cell("print(1)")
    c.metadata["tags"] = ["nbval-ignore-output"]
    out = rel.release_notebook(_nb([c]), "x.ipynb")
    assert out.cells[0].source == "print(1)"
    assert out.cells[0].metadata["tags"] == ["nbval-ignore-output"]


def test_nbval_comment_lines_are_refused():
    c = nbformat.v4.new_code_cell("# NBVAL_IGNORE_OUTPUT\nprint(1)")
    with pytest.raises(rel.ReleaseError, match="nbval-ignore-output"):
        rel.release_notebook(_nb([c]), "x.ipynb")


def test_release_from_myst_source(tmp_path):
    """A folder of MyST sources (.md) releases to .ipynb; the .md wins over a stale .ipynb."""
    import jupytext

    src, dst = tmp_path / "solutions", tmp_path / "notebooks"
    src.mkdir()
    nb = _nb([nbformat.v4.new_markdown_cell("# Demo"), _ex(SOLVED), _check("check.a(f)")])
    (src / "01_demo.md").write_text(jupytext.writes(nb, fmt="md:myst"), encoding="utf-8")
    old = _nb([nbformat.v4.new_markdown_cell("# Old")])
    nbformat.write(old, src / "01_demo.ipynb")
    (src / "README.md").write_text("# not a notebook\n")
    assert rel.release(src, dst) == ["01_demo.ipynb"]
    out = nbformat.read(dst / "01_demo.ipynb", as_version=4)
    assert "`solutions/01_demo.md`" in out.cells[0].source and "# Demo" in out.cells[0].source
    assert "return x + 1" not in out.cells[1].source
    assert out.cells[2].metadata["nbgrader"]["grade_id"] == "check-a"
    assert rel.release(src, dst, check=True) == [], "ids are stable: a second release is a no-op"


def _solution_regions_only(sol, stu):
    """Cells of a solution (.md) and its student copy that differ outside exercise cells."""
    diffs = []
    assert len(sol.cells) == len(stu.cells)
    for i, (a, b) in enumerate(zip(sol.cells, stu.cells)):
        g = a.metadata.get("nbgrader", {})
        if g.get("solution"):
            continue
        src_a = a.source
        if i == 0:
            src_a = rel.GENERATED_NOTE.format(name="X") + "\n\n" + src_a
            b_src = b.source.split("\n\n", 1)
            b_src = rel.GENERATED_NOTE.format(name="X") + "\n\n" + (b_src[1] if len(b_src) > 1 else "")
        else:
            b_src = b.source
        meta_a = {k: v for k, v in a.metadata.items() if k not in ("execution",)}
        if src_a != b_src or meta_a != dict(b.metadata) or a.get("id") != b.get("id"):
            diffs.append(i)
    return diffs


def test_student_copies_identical_outside_exercise_cells():
    """nbgrader checksums locked cells: every non-solution cell (source, metadata, id) of
    notebooks/NN.ipynb equals the solution's — fix with `make notebooks`."""
    from labkit import notebooks as lknb
    from labkit import registry

    for lab in registry.LABS:
        sol = lknb.read_source(rel.ROOT / lab.source)
        stu_path = rel.ROOT / "notebooks" / f"{lab.notebook}.ipynb"
        stu = nbformat.read(stu_path, as_version=4)
        diffs = _solution_regions_only(sol, stu)
        assert not diffs, (f"notebooks/{lab.notebook}.ipynb differs from {lab.source} outside "
                           f"exercise cells at cells {diffs}; run `make notebooks`")


def test_a_cell_that_reveals_an_answer_must_come_after_its_check_and_show_the_locked_line():
    """No answer before it is earned. A cell guarded by check.earned("a") before a's
    check cell would never unlock on Run All; one without check.locked shows nothing useful."""
    reveal = nbformat.v4.new_code_cell(
        'if check.earned("a"):\n    print(answer)\nelse:\n    print(check.locked("a", "the answer"))\n')
    early = _nb([_ex(SOLVED), reveal, _check("check.a(f)")])
    with pytest.raises(rel.ReleaseError, match="before the exercise's check"):
        rel.release_notebook(early, "x.ipynb")
    silent = nbformat.v4.new_code_cell('if check.earned("a"):\n    print(answer)\n')
    with pytest.raises(rel.ReleaseError, match="check.locked"):
        rel.release_notebook(_nb([_ex(SOLVED), _check("check.a(f)"), silent]), "x.ipynb")
    ok = rel.release_notebook(_nb([_ex(SOLVED), _check("check.a(f)"), reveal]), "x.ipynb")
    assert ok.cells[2].source == reveal.source


# ------------------------------------------------------------------ challenges: the starting point
START = "labkit.alignment.challenge:start_source"
CHALLENGE_CELL = ("# make it fast\n### BEGIN SOLUTION\n@njit\ndef align_challenge(seqs1, seqs2):\n"
                  "    return fast(seqs1, seqs2)\n### END SOLUTION")


def _start_cell(source=CHALLENGE_CELL, gid="ex-align_challenge", spec=START):
    c = _ex(source, gid)
    c.metadata["labkit"] = {"start": spec}
    return c


def test_a_challenge_cell_releases_with_its_starting_point_not_a_stub():
    """The student copy of an open challenge starts from working code — the very source
    the check times as 0 points (labkit.<lab>.challenge.start_source()), in place of the
    solution region; lines outside the region stay."""
    from labkit.alignment.challenge import start_source
    nb = _nb([_start_cell(), _check("check.align_challenge(align_challenge)",
                                    "check-align_challenge")])
    out = rel.release_notebook(nb, "01_x.ipynb").cells[0]
    assert out.source == "# make it fast\n" + start_source().rstrip("\n")
    assert "fast(seqs1" not in out.source and "NotImplementedError" not in out.source
    assert "BEGIN SOLUTION" not in out.source
    assert out.metadata["labkit"] == {"start": START}          # kept: says where it came from
    compile(out.source, "<student>", "exec")


def test_a_module_alone_means_its_start_source():
    a = rel.start_source("labkit.alignment.challenge", grade_id="ex-align_challenge")
    assert a == rel.start_source(START, grade_id="ex-align_challenge")


@pytest.mark.parametrize("cell, what", [
    (lambda: _start_cell(gid="ex-other"), "defines no function other"),
    (lambda: _start_cell(spec="numpy:sum"), "labkit's own modules"),
    (lambda: _start_cell(spec="labkit.alignment.challenge:nope"), "cannot be read"),
    (lambda: _start_cell(spec="labkit.alignment.challenge:MAX_LENGTH"), "not the starting"),
    (lambda: _start_cell(spec=""), "must name a function"),
    (lambda: _start_cell(source="@njit\ndef align_challenge(a, b):\n    return a"),
     "no '### BEGIN SOLUTION'"),
    (lambda: _start_cell(source=CHALLENGE_CELL + "\n" + CHALLENGE_CELL), "exactly one solution"),
])
def test_a_bad_starting_point_is_a_hard_error(cell, what):
    with pytest.raises(rel.ReleaseError, match=what):
        rel.release_notebook(_nb([cell()]), "x.ipynb")


def test_release_check_sees_a_changed_starting_point(tmp_path, monkeypatch):
    """The student copy's start is computed at release: when the challenge's starting point
    changes, `labkit release --check` says the copy is out of date."""
    import jupytext

    from labkit.alignment import challenge
    src, dst = tmp_path / "solutions", tmp_path / "notebooks"
    src.mkdir()
    nb = _nb([nbformat.v4.new_markdown_cell("# Demo"), _start_cell(),
              _check("check.align_challenge(align_challenge)", "check-align_challenge")])
    (src / "01_demo.md").write_text(jupytext.writes(nb, fmt="md:myst"), encoding="utf-8")
    assert rel.release(src, dst) == ["01_demo.ipynb"]
    assert rel.release(src, dst, check=True) == []
    monkeypatch.setattr(challenge, "start_source",
                        lambda: "@njit\ndef align_challenge(seqs1, seqs2):\n    return 0\n")
    assert rel.release(src, dst, check=True) == ["01_demo.ipynb"]


def test_every_lab_student_copy_starts_its_challenge_from_the_starting_point():
    """notebooks/NN.ipynb: each lab's challenge cell holds the starting point (the check's own
    start_source()), not the solution, not a stub."""
    import importlib

    from labkit import registry
    seen = 0
    for lab in registry.LABS:
        try:
            mod = importlib.import_module(f"{lab.module}.challenge")
        except ModuleNotFoundError:
            continue
        stu = nbformat.read(rel.ROOT / "notebooks" / f"{lab.notebook}.ipynb", as_version=4)
        gid = f"ex-{mod.CHALLENGE.name}"
        cell = next(c for c in stu.cells
                    if (c.metadata.get("nbgrader") or {}).get("grade_id") == gid)
        start = mod.start_source().rstrip("\n")
        assert start in cell.source, lab.notebook
        rest = cell.source.replace(start, "")
        assert "def " not in rest and "NotImplementedError" not in rest, rest   # nothing else
        seen += 1
    assert seen == 4
