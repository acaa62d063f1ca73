"""Finding the notebooks: canonical (solution) notebooks and their exercises, the submissions
of a class folder, and which canonical notebook a submission is."""
from __future__ import annotations

import ast
import dataclasses
import json
import re
from pathlib import Path
from typing import Any

__all__ = ["ExerciseSpec", "Canonical", "Submission", "parse_check_line", "load_canonical",
           "load_solutions", "find_submissions", "match_canonical"]

_NN = re.compile(r"^(\d\d)_")


@dataclasses.dataclass
class ExerciseSpec:
    """One graded exercise of a canonical notebook (from its nbgrader metadata)."""

    name: str
    points: float
    check_index: int
    fn_src: str
    extra_src: list[str]
    solution_id: str | None = None
    module: str | None = None


@dataclasses.dataclass
class Canonical:
    """A canonical (solution) notebook and the exercises its check cells grade."""

    name: str
    path: Path
    nb: Any
    exercises: list[ExerciseSpec]

    @property
    def max_points(self) -> float:
        """Total points of the notebook."""
        return float(sum(e.points for e in self.exercises))


def _nbg(cell) -> dict:
    meta = cell.get("metadata") or {}
    nbg = meta.get("nbgrader") if isinstance(meta, dict) else None
    return nbg if isinstance(nbg, dict) else {}


def parse_check_line(source: str, where: str = "check cell") -> tuple[str, str, list[str]]:
    """A check cell's last line ``check.<name>(<fn>, …)`` → ``(name, fn source, extra)``."""
    lines = [ln for ln in source.strip().splitlines() if ln.strip() and
             not ln.strip().startswith("#")]
    if not lines:
        raise ValueError(f"{where} is empty; its last line must be `check.<name>(<function>)`")
    last = lines[-1].strip()
    try:
        node = ast.parse(last, mode="eval").body
    except SyntaxError as e:
        raise ValueError(f"{where}: cannot parse last line {last!r} ({e.msg}); it must be "
                         "`check.<name>(<function>)`") from None
    ok = isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
    if ok and node.func.attr == "run" and node.args and isinstance(node.args[0], ast.Constant):
        name, args = str(node.args[0].value), node.args[1:]          # check.run("name", fn)
    elif ok:
        name, args = node.func.attr, node.args
    else:
        name, args = "", []
    base = node.func.value if ok else None
    base_ok = (isinstance(base, ast.Name) and base.id == "check") or (
        isinstance(base, ast.Attribute) and base.attr == "check")
    if not (ok and base_ok and args and name.isidentifier()):
        raise ValueError(f"{where}: last line {last!r} is not `check.<name>(<function>)`; "
                         "fix the solution notebook (see CONTRIBUTING.md)")
    return name, ast.unparse(args[0]), [ast.unparse(a) for a in args[1:]]


def load_canonical(path: str | Path) -> Canonical:
    """Read a solution notebook and list its exercises (check cells ``check-<name>``)."""
    import nbformat

    path = Path(path)
    nb = nbformat.read(path, as_version=4)
    exercises: list[ExerciseSpec] = []
    solution_ids = {_nbg(c).get("grade_id") for c in nb.cells if _nbg(c).get("solution")}
    for i, cell in enumerate(nb.cells):
        nbg = _nbg(cell)
        if not (nbg.get("grade") and not nbg.get("solution") and cell.cell_type == "code"):
            continue
        gid = str(nbg.get("grade_id", ""))
        where = f"{path.name} cell {i} ({gid or 'no grade_id'})"
        name, fn_src, extra = parse_check_line(cell.source, where)
        if gid and gid != f"check-{name}":
            raise ValueError(f"{where}: grade_id {gid!r} does not match its call check.{name}; "
                             f"use grade_id 'check-{name}'")
        sol = f"ex-{name}"
        exercises.append(ExerciseSpec(name=name, points=float(nbg.get("points", 0) or 0),
                                      check_index=i, fn_src=fn_src, extra_src=extra,
                                      solution_id=sol if sol in solution_ids else None))
    return Canonical(name=path.name, path=path, nb=nb, exercises=exercises)


def load_solutions(folder: str | Path | None = None) -> dict[str, Canonical]:
    """All canonical notebooks of ``folder`` (default ``solutions/`` of the repo), by file name."""
    if folder is None:
        from labkit.release import ROOT
        folder = ROOT / "solutions"
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"no solutions folder at {folder}; pass --solutions DIR")
    out = {p.name: load_canonical(p) for p in sorted(folder.glob("*.ipynb"))}
    if not out:
        raise FileNotFoundError(f"no *.ipynb in {folder}; pass --solutions DIR")
    return out


@dataclasses.dataclass
class Submission:
    """One student notebook (or a student folder without any notebook: ``path`` is the folder)."""

    student: str
    path: Path
    rel: str


def find_submissions(folder: str | Path) -> list[Submission]:
    """``DIR/<student>.ipynb`` (student = file stem) and ``DIR/<student>/**/*.ipynb``."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder} is not a folder of submissions")
    subs: list[Submission] = []
    for p in sorted(folder.iterdir()):
        if p.name.startswith("."):
            continue
        if p.is_file() and p.suffix == ".ipynb":
            subs.append(Submission(p.stem, p, p.name))
        elif p.is_dir():
            found = sorted(q for q in p.rglob("*.ipynb")
                           if not any(part.startswith(".") for part in q.relative_to(p).parts))
            if not found:
                subs.append(Submission(p.name, p, p.name + "/"))
            subs += [Submission(p.name, q, str(q.relative_to(folder))) for q in found]
    return subs


def _read_submission(path: Path):
    """The submission as a notebook node, or raise ValueError saying why it is unreadable."""
    import nbformat

    if path.is_dir():
        raise ValueError(f"no notebook (*.ipynb) in folder {path.name}/")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ValueError(f"cannot read the file: {e}") from None
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"not a notebook: invalid JSON ({e})") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("cells"), list):
        raise ValueError("not a notebook: the JSON has no list of 'cells'")
    try:
        nb = nbformat.reads(text, as_version=4)
    except Exception as e:  # noqa: BLE001 - any nbformat failure is "not a notebook"
        raise ValueError(f"not a notebook: {type(e).__name__}: {e}") from None
    for cell in nb.cells:
        if not isinstance(cell, dict) or not isinstance(cell.get("source", ""), str):
            raise ValueError("not a notebook: a cell has no text source")
    return nb


def _headings(nb) -> set[str]:
    out = set()
    for c in nb.cells:
        if c.get("cell_type") == "markdown":
            out |= {" ".join(ln.split()) for ln in c.get("source", "").splitlines()
                    if ln.lstrip().startswith("#") and len(ln.strip()) > 3}
    return out


def _content_score(nb, canon: Canonical) -> tuple[int, int, int]:
    """How much of ``canon`` a notebook carries: (shared grade ids, exercise functions it
    defines, shared markdown headings)."""
    from .build import defines

    ids = {_nbg(c).get("grade_id") for c in nb.cells} - {None, ""}
    theirs = {_nbg(x).get("grade_id") for x in canon.nb.cells} - {None, ""}
    defined: set[str] = set()
    for c in nb.cells:
        if c.get("cell_type") == "code":
            defined |= defines(c.get("source", ""))
    fns = {e.fn_src for e in canon.exercises if e.fn_src.isidentifier()}
    return len(ids & theirs), len(defined & fns), len(_headings(nb) & _headings(canon.nb))


def match_canonical(nb, path: Path, canon: dict[str, Canonical]) -> Canonical | None:
    """The canonical notebook a submission is, by its content — never its file name (a lab
    saved as another lab's name, ``-Copy1`` or a student's own name all match): most shared
    grade ids, then exercise function names it defines, then shared markdown headings;
    ``labkit.generated_from`` metadata only breaks ties. ``None`` if nothing is shared."""
    if nb is None or not canon:
        return next(iter(canon.values())) if len(canon) == 1 else None
    gen = ((nb.get("metadata") or {}).get("labkit") or {}).get("generated_from")
    gen = Path(gen).name if isinstance(gen, str) else None
    scored = [(_content_score(nb, c), c.name == gen, c) for c in canon.values()]
    best = max(scored, key=lambda t: (t[0], t[1]))
    if best[0] == (0, 0, 0):
        return None
    return best[2]
