"""solutions/ → notebooks/: stub the marked solutions, clear outputs, keep nbgrader metadata.

The source of each student copy is the notebook's MyST source ``solutions/NN_name.md`` (read with
jupytext, cell ids from :func:`labkit.notebooks.stable_ids`, the same ids the executed solution
has); a folder without a ``.md`` for a name falls back to its ``.ipynb``. Student copy and
solution are identical outside exercise cells (nbgrader checksums locked cells): only solution
regions are stubbed, outputs cleared and a generated-from note put in front of the first cell.

Markers follow nbgrader: inside a solution cell, the lines between ``### BEGIN SOLUTION`` and
``### END SOLUTION`` are replaced, at the same indentation, by ``# YOUR CODE HERE`` and a
``raise NotImplementedError("<hint>")``. The hint is taken from the ``# Hint: …`` comment lines
directly above the BEGIN marker (they stay in the stub). In markdown cells the region becomes
"YOUR ANSWER HERE". Nested or unterminated markers are hard errors, and so is an nbval comment
line (``# NBVAL_IGNORE_OUTPUT``): nbval reads cell tags (``nbval-ignore-output``) instead.

A challenge's exercise cell (the last section of labs 01–04, docs/challenges.md) starts from
working code instead of a stub: its cell metadata names where the starting point's source comes
from, ``labkit: {start: "labkit.<lab>.challenge:start_source"}`` (a function returning the
source, or a string attribute; ``module`` alone means ``module:start_source``). The release
replaces that cell's one solution region by the source — the very function the check times as
0 points, so the two cannot drift; ``labkit release --check`` reports a copy whose start has
changed. The source must compile and define the exercise's function (``ex-<name>`` →
``def <name>(``); anything else is a hard error. nbgrader's own ``generate_assignment`` knows
nothing of it (it stubs the region): release labkit's student copies.

No answer before it is earned: a cell that reveals an exercise's answer asks
``check.earned("name")`` and otherwise prints ``check.locked("name", what)``. Release refuses such
a cell when it does not print the locked line, or when it comes before the exercise's check cell
(grade_id ``check-name``): on Run All it would never unlock.
"""
from __future__ import annotations

import argparse
import copy
import json
import re
import sys
from pathlib import Path

import nbformat

BEGIN = "### BEGIN SOLUTION"
END = "### END SOLUTION"
GENERATED_NOTE = ("*Student copy generated from `solutions/{name}` by `labkit release` "
                  "(`make notebooks`); edit the solution, not this file.*")

__all__ = ["ReleaseError", "strip_source", "start_source", "release_notebook", "release", "main",
           "ROOT"]

ROOT = Path(__file__).resolve().parent.parent


class ReleaseError(ValueError):
    """A solution notebook whose markers or metadata cannot be released."""


def _hint_above(lines: list[str], i: int) -> str:
    hints = []
    j = i - 1
    while j >= 0 and lines[j].strip().lower().startswith("# hint:"):
        hints.append(lines[j].strip()[len("# hint:"):].strip())
        j -= 1
    text = ""
    for h in reversed(hints):  # a line that ends a clause continues with a space, else "; "
        text = h if not text else text + (" " if text[-1] in ",;:.—-(" else "; ") + h
    return text


def strip_source(source: str, *, cell_type: str = "code", where: str = "",
                 grade_id: str = "", start: str | None = None) -> str:
    """Replace every marked solution region in one cell's source by a stub — or, given
    ``start`` (a challenge's starting point), the one region by that source."""
    lines = source.split("\n")
    out: list[str] = []
    inside = False
    begin_line = 0
    regions = 0
    for i, line in enumerate(lines):
        s = line.strip()
        if s.startswith(BEGIN):
            if inside:
                raise ReleaseError(f"{where}: nested '{BEGIN}' at line {i + 1} "
                                   f"(previous one at line {begin_line + 1})")
            inside, begin_line = True, i
            regions += 1
            indent = line[: len(line) - len(line.lstrip())]
            if start is not None:
                if cell_type != "code" or regions > 1:
                    raise ReleaseError(f"{where}: a cell with a starting point (metadata "
                                       "labkit.start) holds exactly one solution region, in a "
                                       "code cell")
                out.extend(indent + ln if ln.strip() else ""
                           for ln in start.rstrip("\n").split("\n"))
            elif cell_type == "code":
                hint = _hint_above(lines, i)
                if not hint:
                    what = f"exercise {grade_id}" if grade_id else "this exercise"
                    hint = f"{what}: replace this line with your code"
                out.append(f"{indent}# YOUR CODE HERE")
                out.append(f"{indent}raise NotImplementedError({hint!r})")
            else:
                out.append("YOUR ANSWER HERE")
        elif s.startswith(END):
            if not inside:
                raise ReleaseError(f"{where}: '{END}' at line {i + 1} without a BEGIN")
            inside = False
        elif not inside:
            out.append(line)
    if inside:
        raise ReleaseError(f"{where}: '{BEGIN}' at line {begin_line + 1} is never closed")
    if start is not None and not regions:
        raise ReleaseError(f"{where}: metadata labkit.start names a starting point, but the cell "
                           f"has no '{BEGIN}' … '{END}' region to put it in")
    return "\n".join(out)


def start_source(spec, *, where: str = "", grade_id: str = "") -> str:
    """The starting point's source named by a cell's ``labkit.start`` metadata
    (``"labkit.<lab>.challenge:start_source"``; ``module`` alone: its ``start_source``),
    checked: it compiles and defines the exercise's function."""
    import importlib
    if not isinstance(spec, str) or not spec.strip():
        raise ReleaseError(f"{where}: labkit.start must name a function, e.g. "
                           "\"labkit.alignment.challenge:start_source\", got {spec!r}")
    mod, _, attr = spec.strip().partition(":")
    attr = attr or "start_source"
    if not mod.startswith("labkit."):
        raise ReleaseError(f"{where}: labkit.start {spec!r}: the starting point comes from "
                           "labkit's own modules (labkit.<lab>.challenge)")
    try:
        obj = getattr(importlib.import_module(mod), attr)
    except (ImportError, AttributeError) as e:
        raise ReleaseError(f"{where}: labkit.start {spec!r} cannot be read: {e}") from None
    text = obj() if callable(obj) else obj
    if not isinstance(text, str) or not text.strip():
        raise ReleaseError(f"{where}: labkit.start {spec!r} gave {type(text).__name__}, not the "
                           "starting point's source")
    try:
        compile(text, f"<{spec}>", "exec")
    except SyntaxError as e:
        raise ReleaseError(f"{where}: the starting point {spec!r} does not compile: {e}") from None
    name = str(grade_id)[3:] if str(grade_id).startswith("ex-") else ""
    if name and not re.search(rf"^def {re.escape(name)}\(", text, re.MULTILINE):
        raise ReleaseError(f"{where}: the starting point {spec!r} defines no function "
                           f"{name}() (the exercise {grade_id}'s check cell passes it)")
    return text


_TAGS = {"# NBVAL_IGNORE_OUTPUT": "nbval-ignore-output", "# NBVAL_SKIP": "nbval-skip",
         "# NBVAL_CHECK_OUTPUT": "nbval-check-output", "# NBVAL_RAISES_EXCEPTION": "raises-exception"}


def _refuse_test_markers(source: str, where: str) -> None:
    """nbval comment lines would differ between solution and student copy: use cell tags."""
    for i, line in enumerate(source.split("\n")):
        s = line.strip()
        if s.startswith("# NBVAL_"):
            tag = _TAGS.get(s, "nbval-ignore-output / nbval-skip / raises-exception")
            raise ReleaseError(f"{where}: line {i + 1} {s!r}: give the cell the tag {tag!r} "
                               "instead (in the .md: `:tags: [...]` under ```{code-cell})")


_EARNED = re.compile(r"check\.earned\(\s*[\"'](\w+)[\"']")


def _refuse_early_reveal(source: str, where: str, checked: set[str]) -> None:
    """A cell guarded by ``check.earned(name)`` shows ``check.locked(…)`` until the exercise's
    check (an earlier cell) has passed."""
    names = _EARNED.findall(source)
    for n in dict.fromkeys(names):
        if n not in checked:
            raise ReleaseError(f"{where}: check.earned({n!r}) comes before the exercise's check "
                               f"cell (grade_id 'check-{n}'): on Run All it never unlocks — move "
                               "the cell below that check")
    if names and "check.locked(" not in source:
        raise ReleaseError(f"{where}: a cell guarded by check.earned({names[0]!r}) must print "
                           f"check.locked({names[0]!r}, \"what it will show\") until then")


def release_notebook(nb, name: str = "notebook.ipynb"):
    """Return the student copy of solution notebook ``nb`` (a new object)."""
    nb = copy.deepcopy(nb)
    seen_ids: set[str] = set()
    checked: set[str] = set()           # exercises whose check cell came already
    for idx, cell in enumerate(nb.cells):
        where = f"{name} cell {idx}"
        meta = cell.setdefault("metadata", {})
        nbg = meta.get("nbgrader")
        gid = (nbg or {}).get("grade_id", "")
        if cell.cell_type == "code":
            _refuse_early_reveal(cell.source, where, checked)
        if nbg and nbg.get("grade") and str(gid).startswith("check-"):
            checked.add(str(gid)[len("check-"):])
        if gid:
            if gid in seen_ids:
                raise ReleaseError(f"{where}: duplicate grade_id {gid!r}")
            seen_ids.add(gid)
        has_marker = BEGIN in cell.source or END in cell.source
        spec = (meta.get("labkit") or {}).get("start") if isinstance(meta.get("labkit"),
                                                                      dict) else None
        if spec is not None and not has_marker:
            raise ReleaseError(f"{where}: metadata labkit.start names a starting point, but the "
                               f"cell has no '{BEGIN}' … '{END}' region to put it in")
        if has_marker:
            if not (nbg and nbg.get("solution")):
                raise ReleaseError(f"{where}: solution markers in a cell without "
                                   "nbgrader metadata {'solution': true, 'grade_id': …}")
            start = (start_source(spec, where=where, grade_id=gid)
                     if spec is not None else None)
            cell.source = strip_source(cell.source, cell_type=cell.cell_type, where=where,
                                       grade_id=gid, start=start)
        if nbg and nbg.get("grade") and not nbg.get("solution"):
            nbg["locked"] = True
            meta["deletable"] = False
            meta["editable"] = False
        for volatile in ("execution", "collapsed", "scrolled"):
            meta.pop(volatile, None)
        if cell.cell_type == "code":
            _refuse_test_markers(cell.source, where)
            cell.outputs = []
            cell.execution_count = None
    nb.metadata.pop("widgets", None)
    nb.metadata.pop("jupytext", None)    # student copies are not paired with a text file
    nb.metadata["labkit"] = {"generated_from": f"solutions/{name}", "command": "labkit release"}
    note = GENERATED_NOTE.format(name=name)
    first = nb.cells[0] if nb.cells else None
    if first is not None and first.cell_type == "markdown" and note not in first.source:
        first.source = note + "\n\n" + first.source
    return nb


def _dumps(nb) -> str:
    text = nbformat.writes(nb, version=4)
    return text if text.endswith("\n") else text + "\n"


def _sources(src: Path, names: list[str] | None) -> list[Path]:
    """One source per notebook name: the MyST ``.md``, else the ``.ipynb``."""
    by_stem: dict[str, Path] = {}
    for path in sorted(src.glob("*.ipynb")) + sorted(src.glob("*.md")):
        if path.suffix == ".md" and not _is_notebook_text(path):
            continue
        by_stem[path.stem] = path        # .md read last: it wins
    return [by_stem[s] for s in sorted(by_stem)
            if names is None or s in names or f"{s}.ipynb" in names or f"{s}.md" in names]


def _is_notebook_text(path: Path) -> bool:
    head = path.read_text(encoding="utf-8")[:2000]
    return head.startswith("---") and "jupytext:" in head


def release(src: str | Path = None, dst: str | Path = None, *, check: bool = False,
            names: list[str] | None = None) -> list[str]:
    """Write the student copies of the notebooks in ``src`` (``NN_name.md``, or ``.ipynb``
    where there is no ``.md``) into ``dst`` as ``NN_name.ipynb``; return the names that changed
    (with ``check=True`` nothing is written: the list says what is out of date)."""
    from labkit.notebooks import read_source

    src = Path(src) if src is not None else ROOT / "solutions"
    dst = Path(dst) if dst is not None else ROOT / "notebooks"
    if not src.is_dir():
        raise FileNotFoundError(f"no solutions folder at {src}")
    changed = []
    sources = _sources(src, names)
    for path in sources:
        nb = read_source(path)
        text = _dumps(release_notebook(nb, path.name))
        target = dst / f"{path.stem}.ipynb"
        old = target.read_text(encoding="utf-8") if target.exists() else None
        if old != text:
            changed.append(target.name)
            if not check:
                dst.mkdir(parents=True, exist_ok=True)
                target.write_text(text, encoding="utf-8")
    if names is None and dst.is_dir():
        wanted = {f"{p.stem}.ipynb" for p in sources}
        for extra in sorted(dst.glob("*.ipynb")):
            if extra.name not in wanted:
                changed.append(extra.name + " (no solution: remove it)")
    return changed


def main(argv: list[str] | None = None) -> int:
    """CLI: ``labkit release [--check] [--src DIR] [--dst DIR]``."""
    p = argparse.ArgumentParser(prog="labkit release",
                                description="Generate student notebooks from solutions/.")
    p.add_argument("--check", action="store_true",
                   help="write nothing; exit 1 if notebooks/ is out of date")
    p.add_argument("--src", default=None, help="solutions folder (default: solutions/)")
    p.add_argument("--dst", default=None, help="student folder (default: notebooks/)")
    a = p.parse_args(argv)
    try:
        changed = release(a.src, a.dst, check=a.check)
    except (ReleaseError, FileNotFoundError, json.JSONDecodeError) as e:
        print(f"labkit release: {e}", file=sys.stderr)
        return 2
    if a.check:
        if changed:
            print("notebooks/ is out of date with solutions/ for: " + ", ".join(changed))
            print("fix: run `make notebooks` (or `labkit release`) and commit notebooks/")
            return 1
        print("notebooks/ is in sync with solutions/")
        return 0
    for name in changed:
        print(f"wrote notebooks/{name}" if "(" not in name else name)
    if not changed:
        print("notebooks/ already up to date")
    return 0
