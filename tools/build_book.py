"""Build the course book (`make book`): a static website of the executed solutions, offline.

    .venv/bin/python tools/build_book.py [--out build/book] [--root .] [--student]

Stages ``build/book-src/`` from the repository: ``docs/book/_config.yml``, a ``_toc.yml`` and a
landing page (labs table, a download link to each student copy) generated from
``labkit.registry``, the executed ``solutions/NN_name.ipynb`` (outputs as committed — nothing is
executed here) and ``notebooks/NN_name.ipynb`` as downloads; then ``jupyter-book config sphinx``
writes the Sphinx ``conf.py`` and ``sphinx-build`` writes the site into ``--out``
(``index.html`` is the landing page). Why Jupyter Book 1 and not mystmd: docs/book/_config.yml.
A solution whose stamp is stale (``labkit solutions --check``) is built anyway, with a warning.

``--student`` (``make book-student``, default out ``build/book-student``) builds the site a course
can publish during term: its pages are the **student copies** (``labkit release``: solution
regions stubbed, hidden tests removed, no outputs — so no answer and no computed prose of a
solved run), with the same downloads; no ``solutions/`` file is read. After each exercise cell
(nbgrader ``grade_id`` ``ex-NAME``) the page gets a markdown cell of **hint toggles**: the tiers
of ``labkit.hints.get(NAME)`` (concept, approach, near-code — what ``hints.next`` shows in a live
kernel) as nested, closed ``<details class="labkit-hint">``, so a reader opens one tier at a time
and the near-code tier is never in plain view. Only the page gets them: the downloadable student
copy is ``notebooks/NN_name.ipynb`` byte for byte. The instructor book has no toggles.
"""
from __future__ import annotations

import argparse
import html
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "docs" / "book" / "_config.yml"
sys.path.insert(0, str(ROOT))

from labkit import hints, registry  # noqa: E402
from labkit.notebooks import stale  # noqa: E402

STUDENT_INTRO = """\
# labkit: CPU performance labs with numba

Hands-on labs in CPU performance engineering: each one measures a baseline, looks inside what
numba compiled (LLVM IR, assembly, vectoriser remarks), changes the data layout or the loop, and
measures again. These pages are the **student copies**: the lessons and exercises, without
outputs — the numbers are yours to measure. Under each exercise, its hints are folded away one
tier at a time (the concept, then the approach, then near-code): open the next one only when you
are stuck. Download a lab's notebook and run it in JupyterLab (`make lab` in the repository);
each check tells you what is missing and offers the same hints there (`hints.next("name")`).

| Lab | Topic | Lesson | Notebook |
| --- | --- | --- | --- |
{rows}
"""

INTRO = """\
# labkit: CPU performance labs with numba

Hands-on labs in CPU performance engineering: each one measures a baseline, looks inside what
numba compiled (LLVM IR, assembly, vectoriser remarks), changes the data layout or the loop, and
measures again. These pages are the **executed solutions**, with the outputs, figures and
tuner plots of their last run (`make solutions`); the numbers were measured on the machine that
ran them. To do a lab yourself, download its **student copy** (exercises stubbed, no outputs) or
run `make lab` in the repository.

| Lab | Topic | Executed solution | Student copy | Executed |
| --- | --- | --- | --- | --- |
{rows}

Every check in a solution passed when it was executed (checks run strictly there); in a student
copy the same checks fail with "not implemented" and the first hint until the exercise is solved.
"""


def _mathjax_static() -> Path | None:
    try:
        import jupyter_server_mathjax
    except ImportError:
        return None
    static = Path(jupyter_server_mathjax.__file__).parent / "static"
    return static if (static / "MathJax.js").exists() else None


HINT_CLASS = "labkit-hint"


def _inline(text: str) -> str:
    """A hint's text as HTML: escaped, `code` spans kept as code, on one line (a blank line would
    end the markdown cell's HTML block)."""
    parts = html.escape(" ".join(text.split()), quote=False).split("`")
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))


def hint_toggles(exercise: str) -> str:
    """The markdown source of ``exercise``'s hint tiers (from :mod:`labkit.hints`) as nested,
    closed ``<details>``: tier k+1's toggle is inside tier k's, so each opens only after the one
    before. KeyError when the exercise defines no hints."""
    h = hints.get(exercise)
    n = len(h.texts)
    out = []
    for k, text in enumerate(h.texts, start=1):
        name = hints.TIER_NAMES[k - 1] if k <= len(hints.TIER_NAMES) else f"tier {k}"
        out.append(f'<details class="{HINT_CLASS}" data-exercise="{exercise}" data-tier="{k}">'
                   f"<summary>Hint {k} of {n}: {name}</summary>"
                   f'<div class="{HINT_CLASS}-text">{_inline(text)}</div>')
    return "".join(out) + "</details>" * n + "\n"


def _exercise(cell: dict) -> str | None:
    """NAME of an exercise cell (nbgrader solution cell, grade_id ``ex-NAME``), else None."""
    meta = cell.get("metadata", {}).get("nbgrader", {})
    gid = meta.get("grade_id") or ""
    m = re.fullmatch(r"ex-(\w+)", gid)
    return m.group(1) if meta.get("solution") and cell.get("cell_type") == "code" and m else None


def with_hint_toggles(nb: dict, where: str) -> tuple[dict, list[str]]:
    """``nb`` with a hint-toggles markdown cell after each exercise cell; warnings for an
    exercise without hints (its page shows the stub's `# Hint:` line only)."""
    cells, warnings = [], []
    for cell in nb.get("cells", []):
        cells.append(cell)
        name = _exercise(cell)
        if name is None:
            continue
        try:
            source = hint_toggles(name)
        except KeyError:
            warnings.append(f"{where}: exercise {name!r} has no labkit.hints "
                            "(hints.define in its lab's checks.py); no hint toggles")
            continue
        cells.append({"cell_type": "markdown", "id": f"hints-{name}"[:64],
                      "metadata": {"labkit": {"hints": name}}, "source": source})
    return {**nb, "cells": cells}, warnings


def _stage_student(root: Path, src: Path) -> tuple[list[str], list[str], list[str]]:
    """The student book's pages: each lab's student copy (page and download) with its hint
    toggles; no solution."""
    rows, chapters, warnings = [], [], []
    for lab in registry.LABS:
        student = root / "notebooks" / f"{lab.notebook}.ipynb"
        if not student.exists():
            raise SystemExit(f"build_book: {student.relative_to(root)} is missing; "
                             "run `make notebooks` first")
        nb = json.loads(student.read_text(encoding="utf-8"))
        if not (nb.get("metadata", {}).get("labkit", {}).get("generated_from") or "").startswith(
                "solutions/"):
            raise SystemExit(f"build_book: {student.relative_to(root)} is not a student copy "
                             "(labkit release); refusing to publish it in the student book")
        if any(c.get("outputs") for c in nb.get("cells", [])):
            raise SystemExit(f"build_book: {student.relative_to(root)} has outputs; "
                             "run `make notebooks` (the student book shows none)")
        page, why = with_hint_toggles(nb, str(student.relative_to(root)))
        warnings += why
        (src / student.name).write_text(json.dumps(page, indent=1, ensure_ascii=False),
                                        encoding="utf-8")
        shutil.copy2(student, src / "student" / student.name)
        rows.append(f"| {lab.number:02d} | {lab.title} | {{doc}}`{lab.notebook}` | "
                    f"{{download}}`{student.name} <student/{student.name}>` |")
        chapters.append(lab.notebook)
    return rows, chapters, warnings


def stage(root: Path, src: Path, *, student: bool = False) -> list[str]:
    """Write the book's sources into ``src`` (wiped first); return warnings. ``student``: the
    student copies only (see the module's docstring)."""
    warnings = []
    if src.exists():
        shutil.rmtree(src)
    (src / "student").mkdir(parents=True)
    shutil.copy2(CONFIG, src / "_config.yml")
    rows, chapters = [], []
    if student:
        cfg = (src / "_config.yml").read_text(encoding="utf-8").splitlines()
        cfg = [ln if not ln.strip().startswith("extra_footer:") else
               '  extra_footer: "Student copies: the lessons and exercises, no solutions, no outputs."'
               for ln in cfg]
        (src / "_config.yml").write_text("\n".join(cfg) + "\n", encoding="utf-8")
        rows, chapters, why = _stage_student(root, src)
        warnings += why
    for lab in (() if student else registry.LABS):
        solution = root / "solutions" / f"{lab.notebook}.ipynb"
        copy = root / "notebooks" / f"{lab.notebook}.ipynb"
        if not solution.exists():
            raise SystemExit(f"build_book: {solution.relative_to(root)} is missing; "
                             "run `make solutions` first")
        why = stale(solution, root / lab.source, root / "labkit")
        if why:
            warnings.append(f"{solution.name} is stale ({'; '.join(why)}): "
                            f"the book shows its last outputs; fix: make solutions")
        nb = json.loads(solution.read_text(encoding="utf-8"))
        nb.get("metadata", {}).pop("widgets", None)   # no live widgets offline: their PNGs show
        (src / solution.name).write_text(json.dumps(nb, indent=1, ensure_ascii=False),
                                         encoding="utf-8")
        if copy.exists():
            shutil.copy2(copy, src / "student" / copy.name)
            download = f"{{download}}`{copy.name} <student/{copy.name}>`"
        else:
            warnings.append(f"{copy.relative_to(root)} is missing; run `make notebooks`")
            download = "(missing: `make notebooks`)"
        stamp = nb.get("metadata", {}).get("labkit", {}).get("stamp", {})
        executed = stamp.get("executed", "?")[:10]
        rows.append(f"| {lab.number:02d} | {lab.title} | {{doc}}`{lab.notebook}` | {download} "
                    f"| {executed} |")
        chapters.append(lab.notebook)
    intro = STUDENT_INTRO if student else INTRO
    (src / "index.md").write_text(intro.format(rows="\n".join(rows)), encoding="utf-8")
    toc = "format: jb-book\nroot: index\nchapters:\n" + "".join(f"  - file: {c}\n" for c in chapters)
    (src / "_toc.yml").write_text(toc, encoding="utf-8")
    mathjax = _mathjax_static()
    if mathjax is None:
        warnings.append("jupyter-server-mathjax is not installed: formulas stay TeX source "
                        "(pip install -e '.[book]')")
    else:
        shutil.copytree(mathjax, src / "_mathjax_static" / "mathjax",
                        ignore=shutil.ignore_patterns("localization", "*.md"))
    return warnings


def build(root: Path = ROOT, out: Path | None = None, *, quiet: bool = True,
          student: bool = False) -> Path:
    """Stage and build the book; return the path of its index.html."""
    out = Path(out) if out is not None else root / "build" / ("book-student" if student else "book")
    src = out.parent / (out.name + "-src")
    for w in stage(root, src, student=student):
        print(f"build_book: warning: {w}", file=sys.stderr)
    jb = Path(sys.executable).parent / "jupyter-book"
    cmd = [str(jb)] if jb.exists() else [sys.executable, "-m", "jupyter_book.cli.main"]
    subprocess.run(cmd + ["config", "sphinx", str(src)], check=True, stdout=subprocess.DEVNULL)
    if out.exists():
        shutil.rmtree(out)
    log = out.parent / (out.name + "-warnings.txt")
    cmd = [sys.executable, "-m", "sphinx", "-b", "html", str(src), str(out),
           "-d", str(src / "_doctrees"), "-w", str(log)] + (["-q"] if quiet else [])
    subprocess.run(cmd, check=True)
    index = out / "index.html"
    if not index.exists():
        raise SystemExit(f"build_book: sphinx wrote no {index}")
    return index


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default=None, help="output folder (default: build/book)")
    p.add_argument("--root", default=str(ROOT), help="repository root with solutions/, notebooks/")
    p.add_argument("--verbose", action="store_true", help="sphinx's progress output")
    p.add_argument("--student", action="store_true",
                   help="the student copies only (no solutions, no outputs): safe to publish in term")
    a = p.parse_args(argv)
    t0 = time.monotonic()
    index = build(Path(a.root), Path(a.out) if a.out else None, quiet=not a.verbose,
                  student=a.student)
    print(f"book: {index} ({time.monotonic() - t0:.0f} s); open it in a browser")
    return 0


if __name__ == "__main__":
    sys.exit(main())
