"""Small helpers the notebook build scripts share: markdown/code/exercise/check cells.

Usage in a build script::

    from nbtools import md, code, exercise, check_cell, write
    cells = [md("# Title"), code("import labkit"), exercise("colsum", src), check_cell("colsum", "colsum", 2)]
    write(cells, "solutions/00_tools.ipynb")
"""
from __future__ import annotations

from pathlib import Path

import nbformat

KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}


def md(text: str):
    """A markdown cell (leading/trailing blank lines stripped)."""
    return nbformat.v4.new_markdown_cell(text.strip("\n"))


def code(text: str, *, ignore_output: bool = False, tags: tuple[str, ...] = ()):
    """A code cell; ``ignore_output`` prepends ``# NBVAL_IGNORE_OUTPUT`` (timings, CPU names)."""
    src = text.strip("\n")
    if ignore_output:
        src = "# NBVAL_IGNORE_OUTPUT\n" + src
    cell = nbformat.v4.new_code_cell(src)
    if tags:
        cell.metadata["tags"] = list(tags)
    return cell


def exercise(name: str, text: str):
    """An exercise cell: nbgrader solution cell ``ex-<name>`` holding the marked answer."""
    cell = nbformat.v4.new_code_cell(text.strip("\n"))
    cell.metadata["nbgrader"] = {"grade_id": f"ex-{name}", "solution": True, "grade": False,
                                 "locked": False, "schema_version": 3}
    return cell


def check_cell(name: str, fn: str, points: float):
    """A locked, graded check cell ``check-<name>`` whose last line is ``check.<name>(<fn>)``."""
    cell = nbformat.v4.new_code_cell(f"# NBVAL_IGNORE_OUTPUT\ncheck.{name}({fn})")
    cell.metadata["nbgrader"] = {"grade_id": f"check-{name}", "solution": False, "grade": True,
                                 "points": points, "locked": True, "schema_version": 3}
    cell.metadata["deletable"] = False
    cell.metadata["editable"] = False
    return cell


def write(cells, path: str | Path) -> Path:
    """Write a v4 notebook with the python3 kernelspec; returns the path."""
    nb = nbformat.v4.new_notebook()
    nb.cells = cells
    nb.metadata["kernelspec"] = KERNELSPEC
    nb.metadata["language_info"] = {"name": "python"}
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return path
