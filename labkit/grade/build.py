"""What is graded from a submission, read statically (nothing of the student's notebook runs
in the grader): for each exercise the student's exercise cell (by ``grade_id``; with stripped
or renamed metadata, the code cell that defines the exercise's function), the import statements
of the notebook's other code cells, the plain constants the cell reads from earlier cells, and
flags for suspicious or edited cells."""
from __future__ import annotations

import ast
import dataclasses
import re
from labkit import registry

from .cells import defines, python_source
from .notebooks import Canonical, _nbg

__all__ = ["FoundCell", "read_exercises"]

_LAB_MODULE = (r"labkit\.(" + "|".join(re.escape(n) for n in registry.names()) + r")"
               r"|from\s+labkit\.\w+\s+import")

_FLAG_PATTERNS = [
    (r"get_ipython|\bIPython\b", "uses IPython internals"),
    (r"sys\.modules|importlib|__import__|\bbuiltins\b|__builtins__", "manipulates imports"),
    (r"labkit\.check|from\s+labkit\s+import\s+[^\n]*\bcheck\b|\bcheck\.\w+\s*=",
     "touches labkit.check"),
    (r"settrace|setprofile|_getframe|currentframe|gc\.get_objects|\bctypes\b",
     "introspects the interpreter"),
    (r"os\._exit|\bsignal\b|subprocess|os\.system|os\.popen|os\.kill|os\.fork",
     "controls processes/signals"),
    (r"sys\.(__)?stdout|sys\.displayhook|\bprint\s*=", "redirects output"),
    (r"LABKIT_", "reads labkit settings"),
    (r"\bsocket\b|urllib|http\.client|requests\b", "uses the network"),
    (_LAB_MODULE, "uses a labkit lab module (may call the reference kernel)"),
]


def _flags_for(source: str) -> list[str]:
    return [why for pat, why in _FLAG_PATTERNS if re.search(pat, source)]


def _code_lines(source: str) -> tuple[str, ...]:
    """A cell's code without comments, blank lines or formatting (what counts as an edit)."""
    try:
        return (ast.dump(ast.parse(source)),)
    except SyntaxError:
        return tuple(ln.strip() for ln in source.splitlines()
                     if ln.strip() and not ln.strip().startswith("#"))


def _imports(source: str) -> str:
    from labkit.check.loader import imports_only
    return imports_only(python_source(source))


def helper_defs(sources, cell: str, imports: str) -> str:
    from labkit.check.loader import helper_defs as defs
    return defs(sources, cell, imports)


def _constants(sources: list[str], wanted: set[str]) -> dict:
    """``NAME = <literal>`` of earlier cells for the names the exercise cell reads (the last
    assignment wins, as in the notebook); only values ``ast.literal_eval`` accepts."""
    out: dict = {}
    for src in sources:
        try:
            tree = ast.parse(python_source(src))
        except SyntaxError:
            continue
        for node in tree.body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                    isinstance(node.targets[0], ast.Name) and node.targets[0].id in wanted:
                try:
                    out[node.targets[0].id] = ast.literal_eval(node.value)
                except (ValueError, SyntaxError, TypeError, RecursionError):
                    out.pop(node.targets[0].id, None)
    return out


def _reads(source: str) -> set[str]:
    from labkit.check.loader import reads
    return reads(python_source(source))


@dataclasses.dataclass
class FoundCell:
    """The student's exercise cell for one exercise and what the check needs with it."""

    source: str
    imports: str
    constants: dict
    index: int
    how: str                    # "grade_id" or "function name"
    function: str | None = None  # the function to check, when not the exercise's own name


def _called_function(cells, code, name: str) -> str | None:
    """The function the last code cell ending in ``check.<name>(fn)`` passes, or None."""
    from .notebooks import parse_check_line

    for i in reversed(code):
        src = cells[i].get("source", "")
        if f"check.{name}(" not in src:
            continue
        try:
            got, fn, _ = parse_check_line(python_source(src))
        except ValueError:
            continue
        if got == name and fn.isidentifier():
            return fn
    return None


def _renamed_function(ex, src: str, check_src: str) -> str | None:
    """The function the student's own check cell passes to ``check.<ex.name>`` when the
    exercise cell defines that one and not the exercise's name (a renamed kernel, the check
    call edited to match): graded, not zeroed."""
    from .notebooks import parse_check_line

    have = defines(src)
    if not ex.fn_src.isidentifier() or ex.fn_src in have or not check_src:
        return None
    try:
        name, fn, _ = parse_check_line(python_source(check_src))
    except ValueError:
        return None
    return fn if name == ex.name and fn.isidentifier() and fn in have else None


@dataclasses.dataclass
class _Notebook:
    """What finding every exercise's cell shares: the student's cells, their grade_ids and code
    cells, the canonical notebook's cells and imports, the cells taken, and the flags."""

    cells: list
    by_gid: dict[str, int]
    code: list[int]
    canon_cells: dict
    canon_imports: str
    exercise_gids: set
    flags: dict[str, list[str]]
    used: set = dataclasses.field(default_factory=set)

    def flag(self, name: str, *notes: str) -> None:
        """Flag exercise ``name`` (``""``: the notebook) with ``notes``."""
        self.flags.setdefault(name, []).extend(notes)


def read_exercises(canon: Canonical, student_nb) -> tuple[dict[str, FoundCell], dict[str, str],
                                                            dict[str, list[str]]]:
    """``(found, missing, flags)``: the student's exercise cell per exercise name, why an
    exercise has none, and flags per exercise (``""``: the notebook)."""
    nb = _index(canon, student_nb)
    found: dict[str, FoundCell] = {}
    missing: dict[str, str] = {}
    for ex in canon.exercises:
        chk = _flag_check_cell(nb, ex)
        idx, how, why = _locate(nb, ex)
        if idx is None:
            missing[ex.name] = why
            continue
        nb.used.add(idx)
        found[ex.name] = _found_cell(nb, ex, idx, how, chk)
    return found, missing, {k: v for k, v in nb.flags.items() if v}


def _index(canon: Canonical, student_nb) -> _Notebook:
    """The student's notebook indexed (a repeated grade_id flagged: the first cell is used)."""
    cells = list(student_nb.cells)
    flags: dict[str, list[str]] = {"": []}
    by_gid: dict[str, int] = {}
    for i, c in enumerate(cells):
        gid = _nbg(c).get("grade_id")
        if gid:
            if gid in by_gid:
                flags[""].append(f"duplicate grade_id {gid} (the first cell is used)")
                continue
            by_gid[gid] = i
    canon_cells = {_nbg(c).get("grade_id"): c for c in canon.nb.cells if _nbg(c).get("grade_id")}
    canon_imports = "".join(_imports(c.source) for c in canon.nb.cells
                            if c.cell_type == "code" and not _nbg(c).get("solution"))
    return _Notebook(cells=cells, by_gid=by_gid,
                     code=[i for i, c in enumerate(cells) if c.get("cell_type") == "code"],
                     canon_cells=canon_cells, canon_imports=canon_imports,
                     exercise_gids={e.solution_id for e in canon.exercises if e.solution_id},
                     flags=flags)


def _flag_check_cell(nb: _Notebook, ex) -> int | None:
    """The exercise's check cell by grade_id (None: not found); its edits are ignored (the
    grader runs its own check) but flagged."""
    chk = nb.by_gid.get(f"check-{ex.name}")
    mine = nb.canon_cells.get(f"check-{ex.name}")
    if chk is not None and mine is not None:
        theirs = nb.cells[chk]
        if _code_lines(theirs.get("source", "")) != _code_lines(mine.source):
            nb.flag(ex.name, f"check cell check-{ex.name} was edited (ignored)")
        if _nbg(theirs).get("points") != _nbg(mine).get("points"):
            nb.flag(ex.name, f"check cell check-{ex.name}: points changed to "
                             f"{_nbg(theirs).get('points')!r} (ignored)")
    return chk


def _locate(nb: _Notebook, ex) -> tuple[int | None, str, str]:
    """``(index, how, why)``: the exercise cell by grade_id, else by the function it defines;
    without one, why not."""
    idx, how = nb.by_gid.get(ex.solution_id or ""), "grade_id"
    if idx is not None and nb.cells[idx].get("cell_type") != "code":
        return None, "", f"cell {ex.solution_id} is no longer a code cell"
    if idx is None and ex.fn_src.isidentifier():
        idx, how = _by_function(nb, ex), "function name"
    if idx is None:
        return None, "", (f"no cell with grade_id {ex.solution_id} and no cell defining "
                          f"{ex.fn_src}() (deleted or renamed?)")
    return idx, how, ""


def _by_function(nb: _Notebook, ex) -> int | None:
    """Stripped metadata or a renamed grade_id: the last cell that defines the exercise's
    function (or, renamed too, the function the cell calling its check names) — flagged. A cell
    that belongs to another exercise by grade_id is not taken."""
    def cells_defining(fn):
        return [i for i in nb.code if i not in nb.used and fn in defines(nb.cells[i].source)
                and _nbg(nb.cells[i]).get("grade_id") not in nb.exercise_gids - {ex.solution_id}
                and not _nbg(nb.cells[i]).get("grade")]
    fn_name = ex.fn_src
    cand = cells_defining(fn_name)
    if not cand:      # renamed too: the function the cell calling this check names
        fn_name = _called_function(nb.cells, nb.code, ex.name) or fn_name
        cand = cells_defining(fn_name) if fn_name != ex.fn_src else []
    if not cand:
        return None
    idx = cand[-1]
    gid = _nbg(nb.cells[idx]).get("grade_id")
    nb.flag(ex.name, f"exercise cell found by its function {fn_name}() "
            + (f"(its grade_id is {gid!r}, not {ex.solution_id!r})" if gid
               else "(its cell metadata is missing)") + "; graded")
    return idx


def _found_cell(nb: _Notebook, ex, idx: int, how: str, chk: int | None) -> FoundCell:
    """The exercise cell at ``idx`` with what its check needs: the notebook's imports, the
    helpers it calls from other cells, the constants it reads, the function to check."""
    cells, code = nb.cells, nb.code
    src = cells[idx].get("source", "")
    others = [cells[i].get("source", "") for i in code if i != idx]
    imports = nb.canon_imports + "".join(_imports(s) for s in others)
    if chk is None:       # stripped metadata: the first later cell that calls this check
        chk = next((i for i in code if i > idx
                    and f"check.{ex.name}(" in cells[i].get("source", "")), None)
    # helpers the cell calls, defined in other cells run before the check cell
    upto = chk if chk is not None and chk > idx else len(cells)
    helpers = helper_defs([python_source(cells[i].get("source", "")) for i in code
                           if i != idx and i < upto], python_source(src), imports)
    hits = _flags_for(src + helpers)
    if hits:
        nb.flag(ex.name, *(f"{ex.solution_id}: {h}" for h in hits))
    if helpers:
        nb.flag(ex.name, "functions from other cells it calls were graded with it: "
                + ", ".join(sorted(defines(helpers))))
    earlier = [cells[i].get("source", "") for i in code if i < idx]
    consts = _constants(earlier, (_reads(src) | _reads(helpers))
                        - defines(src) - defines(helpers))
    body = python_source(src)
    fn = _renamed_function(ex, src, cells[chk].get("source", "") if chk is not None else "")
    if fn:
        nb.flag(ex.name, f"graded {fn}(), the function its check cell names (the exercise's "
                f"name is {ex.fn_src}(), which the cell does not define)")
    return FoundCell(source=body.rstrip("\n") + "\n" + helpers if helpers else body,
                     imports=imports, constants=consts, index=idx, how=how, function=fn)
