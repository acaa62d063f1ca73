"""Notebook sources, stamps, structure and the student copies.

solutions/NN_name.md (MyST, jupytext) is each notebook's only source; `make solutions` executes
it into solutions/NN_name.ipynb and stamps it (labkit.notebooks). Here: every stamp is fresh
(else: the command that fixes it), a change to labkit/ makes a stamp stale, nbgrader metadata
survives the text round trip, no nbval comment markers. nbval runs solutions/*.ipynb (strict
checks: every check must pass there). Then the exercise/check structure of each solution, and
every student copy executed end to end — each check fails with "not implemented" and the hint,
and no other cell shows an error.
"""
import os
import re
import shutil
from pathlib import Path

import nbformat
import pytest

from labkit import check, registry
from labkit import notebooks as lknb

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = sorted((ROOT / "solutions").glob("*.ipynb"))
STUDENT = sorted((ROOT / "notebooks").glob("*.ipynb"))
SOURCES = sorted((ROOT / "solutions").glob("*.md"))
CHECK_LINE = re.compile(r"^check\.(\w+)\((\w+)\)\s*$")
LABS = [lab.notebook for lab in registry.LABS]


def _nbgrader(cell):
    return cell.get("metadata", {}).get("nbgrader", {})


def test_lesson00_exists():
    assert (ROOT / "solutions" / "00_tools.ipynb").exists()


# ------------------------------------------------------------------ sources and stamps
def test_every_lab_has_one_source():
    """Each registry lab has solutions/NN_name.md; no other notebook source lies around."""
    assert [p.stem for p in SOURCES] == LABS, (
        f"solutions/*.md {[p.name for p in SOURCES]} != registry notebooks {LABS}")
    assert not list((ROOT / "tools").glob("build_*_nb.py")), "hand-written builders are gone"


@pytest.mark.parametrize("stem", LABS)
def test_solution_stamp_is_fresh(stem):
    """solutions/NN_name.ipynb was executed from the current .md against the current labkit/."""
    why = lknb.stale(ROOT / "solutions" / f"{stem}.ipynb", ROOT / "solutions" / f"{stem}.md")
    assert not why, (f"solutions/{stem}.ipynb is stale: {'; '.join(why)}.\n"
                     f"fix: {lknb.FIX.format(stem=stem)}, then `make notebooks`; commit both")


def _copy_package(tmp_path: Path) -> Path:
    pkg = tmp_path / "labkit"
    shutil.copytree(ROOT / "labkit", pkg, ignore=shutil.ignore_patterns("__pycache__", "*.nbi",
                                                                         "*.nbc", "*.pyc"))
    return pkg


def _stamped(tmp_path: Path, pkg: Path) -> tuple[Path, Path]:
    """A copy of lesson 00's source and an 'executed' notebook stamped against ``pkg``."""
    md = tmp_path / "00_tools.md"
    shutil.copy2(ROOT / "solutions" / "00_tools.md", md)
    nb = lknb.read_source(md)
    nb.metadata["labkit"] = {"stamp": lknb.make_stamp(md, pkg)}
    out = tmp_path / "00_tools.ipynb"
    nbformat.write(nb, out)
    return md, out


def test_stamp_goes_stale_when_alignment_changes(tmp_path):
    """One changed line in a copy of labkit/alignment* makes the stamp stale, with the fix."""
    pkg = _copy_package(tmp_path)
    md, out = _stamped(tmp_path, pkg)
    assert lknb.stale(out, md, pkg) == []
    target = sorted(p for p in pkg.rglob("*.py")
                    if p.relative_to(pkg).parts[0].startswith("alignment"))[0]
    lines = target.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[-1] = lines[-1].rstrip("\n") + "  # changed\n"
    target.write_text("".join(lines), encoding="utf-8")
    why = lknb.stale(out, md, pkg)
    assert len(why) == 1 and "labkit/ changed" in why[0], why
    # the real tree is untouched and its digest differs from the modified copy's
    assert lknb.labkit_digest() != lknb.labkit_digest(pkg)


def test_stamp_goes_stale_when_source_changes(tmp_path):
    pkg = _copy_package(tmp_path)
    md, out = _stamped(tmp_path, pkg)
    md.write_text(md.read_text(encoding="utf-8") + "\nOne more line.\n", encoding="utf-8")
    why = lknb.stale(out, md, pkg)
    assert len(why) == 1 and "00_tools.md changed" in why[0], why


def test_stamp_ignores_caches(tmp_path):
    """__pycache__ (numba's cache files included) does not change the digest."""
    pkg = _copy_package(tmp_path)
    before = lknb.labkit_digest(pkg)
    (pkg / "__pycache__").mkdir(exist_ok=True)
    (pkg / "__pycache__" / "x.nbi").write_bytes(b"cache")
    assert lknb.labkit_digest(pkg) == before


def test_unstamped_and_missing(tmp_path):
    md = tmp_path / "x.md"
    md.write_text("x")
    assert "does not exist" in lknb.stale(tmp_path / "x.ipynb", md)[0]
    nbformat.write(nbformat.v4.new_notebook(), tmp_path / "x.ipynb")
    assert "no labkit stamp" in lknb.stale(tmp_path / "x.ipynb", md)[0]


def test_solutions_check_command_names_the_fix(tmp_path, capsys, monkeypatch):
    from labkit.cli import main as cli_main

    pkg = _copy_package(tmp_path)
    md, out = _stamped(tmp_path, pkg)
    monkeypatch.setattr(lknb, "SOLUTIONS", tmp_path)
    monkeypatch.setattr(lknb, "PACKAGE", pkg)
    assert lknb.resolve(["00_tools"], tmp_path) == [md]
    assert lknb.resolve(["lesson00"], tmp_path)[0].name == "00_tools.md"
    with pytest.raises(KeyError, match="no notebook"):
        lknb.resolve(["nope"], tmp_path)
    monkeypatch.setattr(lknb, "resolve", lambda names, folder=tmp_path: [md])
    assert cli_main(["solutions", "--check", "00_tools"]) == 0
    md.write_text(md.read_text(encoding="utf-8") + "\nchanged\n", encoding="utf-8")
    assert cli_main(["solutions", "--check", "00_tools"]) == 1
    text = capsys.readouterr().out
    assert "stale" in text and "make solutions" in text and "labkit solutions 00_tools" in text


NBGRADER_CELLS = [
    ("code", "def f(x):\n    ### BEGIN SOLUTION\n    return x\n    ### END SOLUTION",
     {"nbgrader": {"grade_id": "ex-f", "solution": True, "grade": False, "locked": False,
                   "schema_version": 3}}),
    ("code", "check.f(f)",
     {"nbgrader": {"grade_id": "check-f", "solution": False, "grade": True, "points": 2,
                   "locked": True, "schema_version": 3}, "deletable": False, "editable": False,
      "tags": ["nbval-ignore-output"]}),
    ("markdown", "Answer:\n### BEGIN SOLUTION\n42\n### END SOLUTION",
     {"nbgrader": {"grade_id": "ex-why", "solution": True, "grade": True, "points": 1.5,
                   "locked": False, "schema_version": 3}}),
    ("code", "x = $1$ # not math\nprint(r'\\alpha')", {"tags": ["raises-exception"]}),
]


def test_nbgrader_metadata_survives_text_round_trip():
    """ipynb → MyST .md → ipynb keeps cell types, sources and the whole cell metadata."""
    import jupytext

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    for kind, src, meta in NBGRADER_CELLS:
        cell = (nbformat.v4.new_code_cell if kind == "code" else nbformat.v4.new_markdown_cell)(src)
        cell.metadata.update(meta)
        nb.cells.append(cell)
    back = jupytext.reads(jupytext.writes(nb, fmt="md:myst"), fmt="md:myst")
    assert [(c.cell_type, c.source, dict(c.metadata)) for c in back.cells] == [
        (k, s, m) for k, s, m in NBGRADER_CELLS]


@pytest.mark.parametrize("path", SOURCES, ids=[p.name for p in SOURCES])
def test_source_has_tags_not_markers_and_matches_its_executed_copy(path):
    """No nbval comment line in the .md; a fresh executed copy has exactly the source's cells."""
    nb = lknb.read_source(path)
    for i, c in enumerate(nb.cells):
        if c.cell_type == "code":
            bad = [ln for ln in c.source.splitlines() if ln.strip().startswith("# NBVAL_")]
            assert not bad, (f"{path.name} cell {i}: {bad[0]!r} — use the cell tag "
                             "(`:tags: [nbval-ignore-output]`) instead of a comment line")
    executed = path.with_suffix(".ipynb")
    if lknb.stale(executed, path):
        pytest.skip(f"{executed.name} is stale (test_solution_stamp_is_fresh says so)")
    run = nbformat.read(executed, as_version=4)
    strip = lambda m: {k: v for k, v in m.items() if k not in ("execution", "collapsed", "scrolled")}  # noqa: E731
    assert [(c.cell_type, c.source, strip(c.metadata)) for c in run.cells] == [
        (c.cell_type, c.source, strip(c.metadata)) for c in nb.cells]


@pytest.mark.parametrize("path", SOLUTIONS, ids=[p.name for p in SOLUTIONS])
def test_solution_structure(path):
    nb = nbformat.read(path, as_version=4)
    first = nb.cells[0]
    assert first.cell_type == "markdown" and first.source.startswith("# "), "starts with a title"
    ex = {_nbgrader(c)["grade_id"][3:] for c in nb.cells
          if _nbgrader(c).get("solution") and _nbgrader(c).get("grade_id", "").startswith("ex-")}
    checks = {}
    for c in nb.cells:
        g = _nbgrader(c)
        if g.get("grade") and not g.get("solution"):
            last = c.source.strip().splitlines()[-1]
            m = CHECK_LINE.match(last)
            assert m, f"{path.name}: check cell {g.get('grade_id')} must end in check.<name>(fn)"
            assert g["grade_id"] == f"check-{m.group(1)}"
            assert g.get("points", 0) > 0 and g.get("locked")
            checks[m.group(1)] = g["points"]
    assert len(checks) >= 2, f"{path.name}: at least two exercises with checks"
    assert ex <= set(checks), f"{path.name}: exercises without a check: {sorted(ex - set(checks))}"
    registered = set(check.names())
    assert set(checks) <= registered, f"unregistered checks: {sorted(set(checks) - registered)}"
    for c in nb.cells:
        if c.cell_type == "code":
            assert c.get("outputs") is not None
    assert any(c.cell_type == "code" and c.outputs for c in nb.cells), "committed with outputs"


def _run(path, tmp_path):
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    env_strict = os.environ.pop("LABKIT_CHECK_STRICT", None)
    try:
        NotebookClient(nb, timeout=300, kernel_name="python3", allow_errors=True,
                       resources={"metadata": {"path": str(tmp_path)}}).execute()
    finally:
        if env_strict is not None:
            os.environ["LABKIT_CHECK_STRICT"] = env_strict
    return nb


# full tier: lesson 00's copy is run in the default tier by JupyterLab itself
# (test_browser.py::test_student_copy_shows_hints_not_tracebacks: no error, every check 'not
# implemented' with its hint, no answer shown before it is earned); each lab's stub is proven
# 'not implemented' with its first hint by tests/labs/*::test_stub_*, the guards by
# test_earned_and_locked
@pytest.mark.full
@pytest.mark.parametrize("path", STUDENT, ids=[p.name for p in STUDENT])
def test_student_copy_checks_fail_with_hint(path, tmp_path):
    nb = _run(path, tmp_path)
    seen = 0
    for i, c in enumerate(nb.cells):
        if c.cell_type != "code":
            continue
        errors = [o for o in c.outputs if o.output_type == "error"]
        tags = c.metadata.get("tags", [])
        if errors and "raises-exception" not in tags:
            pytest.fail(f"{path.name} cell {i} raised {errors[0].ename}: {errors[0].evalue}\n{c.source}")
        g = _nbgrader(c)
        if g.get("grade") and not g.get("solution"):
            text = "".join(o.get("data", {}).get("text/plain", "") for o in c.outputs
                           if o.output_type in ("execute_result", "display_data"))
            assert text.startswith("✘"), f"{path.name} {g['grade_id']} should fail on the stub: {text!r}"
            if _is_challenge(g["grade_id"][len("check-"):]):
                # a challenge starts from working code: its start as given earns 0, 'no change'
                assert "no change" in text and "starting point" in text, text
            else:
                assert "not implemented" in text, text
            seen += 1
    assert seen >= 2
    _no_answer_before_it_is_earned(path, nb)


def _is_challenge(name: str) -> bool:
    """An open challenge (``labkit.<lab>.challenge``): its student copy holds the starting point."""
    return check.get(name).module.endswith(".challenge")


def _outputs(cell) -> str:
    return "".join(o.get("text", "") + "".join(str(v) for v in o.get("data", {}).values())
                   for o in cell.get("outputs", []))


def _exercises(nb) -> list[str]:
    """The exercises a notebook checks, in order (the names of its check cells)."""
    out = []
    for c in nb.cells:
        g = _nbgrader(c)
        if c.cell_type == "code" and g.get("grade") and not g.get("solution"):
            m = CHECK_LINE.match(c.source.strip().splitlines()[-1])
            if m:
                out.append(m.group(1))
    return out


def _reveals(name: str) -> list:
    """What would give exercise ``name``'s answer away, taken from labkit itself: the ``REVEALS``
    hook of the checks module that registers it (exact strings computed from the check's own
    reference, or compiled patterns where the answer is measured on the student's machine);
    [] for an exercise whose answer is code, not a value."""
    import importlib
    hook = getattr(importlib.import_module(check.get(name).module), "REVEALS", {})
    return list(hook[name]()) if name in hook else []


def _shows(item, text: str) -> bool:
    """``item`` (a string or a compiled pattern) occurs in ``text``; a string that starts or ends
    with a digit or letter must not be part of a longer number or word ("80 B" is not in "180 B")."""
    if isinstance(item, re.Pattern):
        return item.search(text) is not None
    pat = re.escape(item)
    if item[:1].isalnum():
        pat = r"(?<![\w.,])" + pat
    if item[-1:].isalnum():
        pat += r"(?![\w])" if not item[-1:].isdigit() else r"(?![\d]|[.,]\d)"
    return re.search(pat, text) is not None


def _no_answer_before_it_is_earned(path, nb):
    """Run All on an unsolved copy: a cell that reveals an exercise's answer (it asks
    check.earned(name)) shows only its locked line, and no output holds a graded answer — each
    answer taken from its check (``REVEALS`` in the lab's checks module)."""
    reveals = {name: _reveals(name) for name in _exercises(nb)}
    assert all(isinstance(r, (str, re.Pattern)) and (not isinstance(r, str) or r.strip())
               for rs in reveals.values() for r in rs), reveals
    guarded = 0
    for i, c in enumerate(nb.cells):
        if c.cell_type != "code":
            continue
        out = _outputs(c)
        for name in re.findall(r"check\.earned\(\s*[\"'](\w+)[\"']", c.source):
            guarded += 1
            assert check.locked(name, "").split(" shows ")[0] in out and f"check.{name}" in out, (
                f"{path.name} cell {i} should show its locked line before {name} is solved: {out[:300]!r}")
        for name, items in reveals.items():
            for item in items:
                assert not _shows(item, out), (
                    f"{path.name} cell {i} shows {name}'s answer "
                    f"({getattr(item, 'pattern', item)!r}) unsolved: guard it with "
                    f"check.earned({name!r}) / check.locked — {out[:300]!r}")
    assert guarded, f"{path.name}: no cell guards its answer with check.earned"


def test_reveals_hooks_give_text_for_their_exercises():
    """Every lab's checks module has a REVEALS hook; each key is an exercise the module
    registers, and each callable gives non-empty strings or compiled patterns (the OSACA-backed
    ones may give none on a core without a model). A lab's challenge module (``.challenge``)
    needs none: its answer is code, and its student copy shows the starting point."""
    import importlib
    from labkit import registry
    osaca = {"loop_bound", "popcount_bound"}
    for mod in registry.check_modules():
        hook = getattr(importlib.import_module(mod), "REVEALS", None)
        if mod.endswith(".challenge") and hook is None:
            continue
        assert isinstance(hook, dict) and hook, f"{mod} has no REVEALS hook"
        for name, fn in hook.items():
            assert check.get(name).module == mod, f"{mod}.REVEALS names {name!r}, not its exercise"
            if name in osaca:
                continue                     # proven by the student-copy run, where OSACA runs
            items = list(fn())
            assert items and all(isinstance(r, re.Pattern) or (isinstance(r, str) and r.strip())
                                 for r in items), (name, items)


def test_reveal_matching_respects_number_boundaries():
    assert _shows("80 B", "output writes 80 B per spline")
    assert not _shows("80 B", "output writes 180 B") and not _shows("80 B", "0.80 Bytes")
    assert _shows("5461", "up to 5461.") and _shows("5461", "(5461)")
    assert not _shows("5461", "15461 alignments") and not _shows("5461", "5461.5 µs")
    assert not _shows("5461", "5,461,000") and _shows("47,453,133", "n = 47,453,133: float")
    assert _shows(re.compile(r"\d cycles"), "3 cycles") and not _shows(re.compile(r"\d cycles"), "x")


def test_earned_and_locked():
    from labkit.check import framework
    from labkit.check.result import CheckResult
    with pytest.raises(AttributeError, match="no exercise named"):
        check.earned("no_such_exercise")
    framework._EARNED.discard("colsum")
    assert not check.earned("colsum")
    framework.finish(CheckResult("colsum", True, 1, 1, "passed", "ok"))
    assert check.earned("colsum")
    framework.finish(CheckResult("colsum", False, 0, 1, "wrong", "no"))  # a later failure locks it again
    assert not check.earned("colsum")
    assert "check.colsum" in check.locked("colsum", "the sums") and "🔒" in check.locked("colsum", "x")


TINY = """---
jupytext:
  formats: ipynb,md:myst
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---

# Tiny

```{code-cell} ipython3
import os
print(os.environ.get("LABKIT_CHECK_STRICT"), os.environ.get("LABKIT_SPEED"), os.getcwd())
```

```{code-cell} ipython3
:tags: [nbval-ignore-output]

6 * 7
```

```{code-cell} ipython3
import matplotlib.pyplot as plt
plt.plot([1, 2])
plt.show()
```
"""


def test_execute_writes_outputs_and_stamp(tmp_path, monkeypatch):
    """labkit solutions' executor: outputs kept (figures too, whatever MPLBACKEND says), strict
    checks, cwd = the source's folder, stamp fresh; a failing cell writes nothing."""
    from nbclient.exceptions import CellExecutionError

    monkeypatch.setenv("MPLBACKEND", "Agg")

    md = tmp_path / "99_tiny.md"
    md.write_text(TINY, encoding="utf-8")
    out = lknb.execute(md, timeout=120)
    nb = nbformat.read(out, as_version=4)
    first = nb.cells[1].outputs[0]["text"].split()
    assert first[:2] == ["1", "report"] and Path(first[2]).resolve() == tmp_path.resolve()
    assert nb.cells[2].outputs[0]["data"]["text/plain"] == "42"
    assert nb.cells[2].metadata["tags"] == ["nbval-ignore-output"]
    assert "execution" not in nb.cells[1].metadata
    assert any("image/png" in o.get("data", {}) for o in nb.cells[3].outputs), "figure kept"
    assert lknb.stale(out, md) == []
    ids = [c.id for c in nb.cells]
    assert ids == [c.id for c in lknb.read_source(md).cells], "same ids as the release reads"
    md.write_text(TINY + "\n```{code-cell} ipython3\nraise ValueError('boom')\n```\n",
                  encoding="utf-8")
    before = out.read_bytes()
    with pytest.raises(CellExecutionError, match="boom"):
        lknb.execute(md, timeout=120)
    assert out.read_bytes() == before, "a failed execution leaves the old copy alone"
    assert "99_tiny.md changed" in lknb.stale(out, md)[0]
