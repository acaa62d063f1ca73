"""Finding the notebooks: canonical (solution) notebooks and their exercises, the submissions
of a class folder, and which canonical notebook a submission is."""
from __future__ import annotations

import ast
import dataclasses
import json
import os
import re
import stat
from pathlib import Path
from typing import Any

from .cells import defines
from .settings import MAX_NOTEBOOK_BYTES, _short

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
    """One student notebook (or a student folder without any notebook: ``path`` is the folder).
    ``refused``: why the grader will not read it (a symbolic link), or ``None``."""

    student: str
    path: Path
    rel: str
    refused: str | None = None


SYMLINK = "refused: symbolic link"


class Refused(ValueError):
    """A submission the grader will not read (too big, not a regular file)."""


def _walk(top: Path) -> tuple[list[Path], list[Path]]:
    """``(notebooks, symbolic links)`` under ``top``, never following a link and skipping
    hidden names: the ``*.ipynb`` entries (a link named so among them too) and the links to
    follow (folders, notebooks) that are refused."""
    found, links = [], []
    for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
        d = Path(dirpath)
        dirnames[:] = sorted(n for n in dirnames if not n.startswith("."))
        for n in list(dirnames):
            if (d / n).is_symlink():            # os.walk lists a link to a folder as a folder
                dirnames.remove(n)
                links.append(d / n)
        for n in filenames:
            if n.startswith("."):
                continue
            if (d / n).is_symlink():
                if n.endswith(".ipynb") or (d / n).is_dir():
                    links.append(d / n)
            elif n.endswith(".ipynb"):
                found.append(d / n)
    return sorted(found), sorted(links)


def find_submissions(folder: str | Path) -> list[Submission]:
    """``DIR/<student>.ipynb`` (student = file stem) and ``DIR/<student>/**/*.ipynb``. A
    symbolic link (a student's file or folder, or anything inside a folder) is never followed:
    it is listed with ``refused`` set."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder} is not a folder of submissions")
    subs: list[Submission] = []
    for p in sorted(folder.iterdir()):
        if p.name.startswith("."):
            continue
        if p.is_symlink():
            if p.suffix == ".ipynb" or p.is_dir():
                student = p.stem if p.suffix == ".ipynb" else p.name
                subs.append(Submission(student, p, p.name, SYMLINK))
        elif p.is_file() and p.suffix == ".ipynb":
            subs.append(Submission(p.stem, p, p.name))
        elif p.is_dir():
            found, links = _walk(p)
            if not found and not links:
                subs.append(Submission(p.name, p, p.name + "/"))
            subs += [Submission(p.name, q, str(q.relative_to(folder))) for q in found]
            subs += [Submission(p.name, q, str(q.relative_to(folder)), SYMLINK) for q in links]
    return subs


def _read_bytes(path: Path, limit: int) -> bytes:
    """The file's bytes, opened without following a link; :class:`Refused` for a link, a
    non-regular file (a FIFO would block) or one over ``limit`` bytes (told by its size, not
    read)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)
                     | getattr(os, "O_NONBLOCK", 0))
    except OSError as e:
        if path.is_symlink():
            raise Refused(SYMLINK) from None
        raise ValueError(f"cannot read the file: {e}") from None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise Refused("refused: not a regular file")
        if limit and st.st_size > limit:
            raise Refused(_too_big(st.st_size, limit))
        data = f.read(limit + 1) if limit else f.read()
    if limit and len(data) > limit:                 # grew while being read
        raise Refused(_too_big(len(data), limit))
    return data


def _too_big(size: int, limit: int) -> str:
    return f"refused: notebook is {size / 2**20:.1f} MB, over the {limit / 2**20:g} MB limit"


def _read_submission(path: Path, max_bytes: int = MAX_NOTEBOOK_BYTES):
    """The submission as a notebook node, or raise ValueError saying why it is unreadable
    (:class:`Refused`: why it was not read at all)."""
    import nbformat

    if path.is_symlink():
        raise Refused(SYMLINK)
    if path.is_dir():
        raise ValueError(f"no notebook (*.ipynb) in folder {path.name}/")
    try:
        text = _read_bytes(path, max_bytes).decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"cannot read the file: {e}") from None
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"not a notebook: invalid JSON ({e})") from None
    except RecursionError:
        raise ValueError("not a notebook: its JSON is nested too deeply") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("cells"), list):
        raise ValueError("not a notebook: the JSON has no list of 'cells'")
    try:
        nb = nbformat.reads(text, as_version=4)
    except Exception as e:  # noqa: BLE001 - any nbformat failure is "not a notebook"
        raise ValueError(f"not a notebook: {type(e).__name__}: {_short(e, 200)}") from None
    meta = nb.get("metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get("labkit", {}), dict):
        raise ValueError("not a notebook: its metadata 'labkit' is not a mapping")
    for i, cell in enumerate(nb.cells):
        if not isinstance(cell, dict) or not isinstance(cell.get("source", ""), str):
            raise ValueError("not a notebook: a cell has no text source")
        cmeta = cell.get("metadata", {})
        nbg = cmeta.get("nbgrader", {}) if isinstance(cmeta, dict) else None
        if not isinstance(nbg, dict) or not isinstance(nbg.get("grade_id", ""), str):
            raise ValueError(f"not a notebook: cell {i} has nbgrader metadata that is not a "
                             "mapping with a text grade_id")
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
    ids = {g for c in nb.cells for g in [_nbg(c).get("grade_id")] if isinstance(g, str)} - {""}
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
    meta = nb.get("metadata")
    lk = meta.get("labkit") if isinstance(meta, dict) else None
    gen = lk.get("generated_from") if isinstance(lk, dict) else None
    gen = Path(gen).name if isinstance(gen, str) else None
    scored = [(_content_score(nb, c), c.name == gen, c) for c in canon.values()]
    best = max(scored, key=lambda t: (t[0], t[1]))
    if best[0] == (0, 0, 0):
        return None
    return best[2]
