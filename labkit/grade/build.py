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


def read_exercises(canon: Canonical, student_nb) -> tuple[dict[str, FoundCell], dict[str, str],
                                                            dict[str, list[str]]]:
    """``(found, missing, flags)``: the student's exercise cell per exercise name, why an
    exercise has none, and flags per exercise (``""``: the notebook)."""
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
    code = [i for i, c in enumerate(cells) if c.get("cell_type") == "code"]
    exercise_gids = {e.solution_id for e in canon.exercises if e.solution_id}
    used: set[int] = set()
    found: dict[str, FoundCell] = {}
    missing: dict[str, str] = {}
    for ex in canon.exercises:
        # the check cell: edits are ignored (the grader runs its own check) but flagged
        chk = by_gid.get(f"check-{ex.name}")
        mine = canon_cells.get(f"check-{ex.name}")
        if chk is not None and mine is not None:
            theirs = cells[chk]
            if _code_lines(theirs.get("source", "")) != _code_lines(mine.source):
                flags.setdefault(ex.name, []).append(f"check cell check-{ex.name} was edited "
                                                     "(ignored)")
            if _nbg(theirs).get("points") != _nbg(mine).get("points"):
                flags.setdefault(ex.name, []).append(
                    f"check cell check-{ex.name}: points changed to "
                    f"{_nbg(theirs).get('points')!r} (ignored)")
        idx, how = by_gid.get(ex.solution_id or ""), "grade_id"
        if idx is not None and cells[idx].get("cell_type") != "code":
            missing[ex.name] = f"cell {ex.solution_id} is no longer a code cell"
            continue
        if idx is None and ex.fn_src.isidentifier():
            # stripped metadata or a renamed grade_id: the cell that defines the function
            # (a cell that belongs to another exercise by grade_id is not taken)
            def cells_defining(fn):
                return [i for i in code if i not in used and fn in defines(cells[i].source)
                        and _nbg(cells[i]).get("grade_id") not in exercise_gids - {ex.solution_id}
                        and not _nbg(cells[i]).get("grade")]
            fn_name = ex.fn_src
            cand = cells_defining(fn_name)
            if not cand:      # renamed too: the function the cell calling this check names
                fn_name = _called_function(cells, code, ex.name) or fn_name
                cand = cells_defining(fn_name) if fn_name != ex.fn_src else []
            if cand:
                idx, how = cand[-1], "function name"
                gid = _nbg(cells[idx]).get("grade_id")
                flags.setdefault(ex.name, []).append(
                    f"exercise cell found by its function {fn_name}() "
                    + (f"(its grade_id is {gid!r}, not {ex.solution_id!r})" if gid
                       else "(its cell metadata is missing)") + "; graded")
        if idx is None:
            missing[ex.name] = (f"no cell with grade_id {ex.solution_id} and no cell defining "
                                f"{ex.fn_src}() (deleted or renamed?)")
            continue
        used.add(idx)
        src = cells[idx].get("source", "")
        others = [cells[i].get("source", "") for i in code if i != idx]
        imports = canon_imports + "".join(_imports(s) for s in others)
        if chk is None:       # stripped metadata: the first later cell that calls this check
            chk = next((i for i in code if i > idx
                        and f"check.{ex.name}(" in cells[i].get("source", "")), None)
        # helpers the cell calls, defined in other cells run before the check cell
        upto = chk if chk is not None and chk > idx else len(cells)
        helpers = helper_defs([python_source(cells[i].get("source", "")) for i in code
                               if i != idx and i < upto], python_source(src), imports)
        hits = _flags_for(src + helpers)
        if hits:
            flags.setdefault(ex.name, []).extend(f"{ex.solution_id}: {h}" for h in hits)
        if helpers:
            flags.setdefault(ex.name, []).append(
                "functions from other cells it calls were graded with it: "
                + ", ".join(sorted(defines(helpers))))
        earlier = [cells[i].get("source", "") for i in code if i < idx]
        consts = _constants(earlier, (_reads(src) | _reads(helpers))
                            - defines(src) - defines(helpers))
        body = python_source(src)
        fn = _renamed_function(ex, src, cells[chk].get("source", "") if chk is not None else "")
        if fn:
            flags.setdefault(ex.name, []).append(
                f"graded {fn}(), the function its check cell names (the exercise's name is "
                f"{ex.fn_src}(), which the cell does not define)")
        found[ex.name] = FoundCell(source=body.rstrip("\n") + "\n" + helpers if helpers else body,
                                   imports=imports, constants=consts, index=idx, how=how,
                                   function=fn)
    return found, missing, {k: v for k, v in flags.items() if v}

