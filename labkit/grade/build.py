"""Building the notebook that runs: the canonical cells, the student's exercise cells (matched
by ``grade_id``) and the grader's check cells; flags for suspicious or edited cells."""
from __future__ import annotations

import ast
import dataclasses
import re
import secrets
from typing import Any

from labkit import registry

from .checkcell import _check_cell_source
from .notebooks import Canonical, _nbg

__all__ = ["build_notebook"]

_LAB_MODULE = (r"labkit\.(" + "|".join(re.escape(n) for n in registry.names()) + r")"
               r"|from\s+labkit\.\w+\s+import")

_FLAG_PATTERNS = [
    (r"get_ipython|\bIPython\b", "uses IPython internals"),
    (r"sys\.modules|importlib|__import__|\bbuiltins\b|__builtins__", "manipulates imports"),
    (r"labkit\.check|from\s+labkit\s+import\s+[^\n]*\bcheck\b|\bcheck\.\w+\s*=",
     "touches labkit.check"),
    (r"settrace|setprofile|_getframe|currentframe|gc\.get_objects|\bctypes\b",
     "introspects the interpreter"),
    (r"os\._exit|\bsignal\b|subprocess|os\.system|os\.kill", "controls processes/signals"),
    (r"sys\.(__)?stdout|sys\.displayhook|\bprint\s*=", "redirects output"),
    (r"LABKIT_", "reads labkit settings"),
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


@dataclasses.dataclass
class _Plan:
    kind: str                    # "code", "solution", "check", "skip"
    exercise: str | None = None
    nonce: str | None = None
    key: str | None = None
    seed: int | None = None


def build_notebook(canon: Canonical, student_nb, *, skip_tags=()) -> tuple[Any, list[_Plan], dict]:
    """The notebook to execute (canonical cells + student solution cells + grader checks), the
    plan per cell, and what is known before running: ``{"missing": {...}, "flags": {...}}``."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.metadata = {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                  "language": "python"}}
    student_cells: dict[str, Any] = {}
    flags: dict[str, list[str]] = {"": []}
    for c in student_nb.cells:
        gid = _nbg(c).get("grade_id")
        if gid:
            if gid in student_cells:
                flags[""].append(f"duplicate grade_id {gid} (the first cell is used)")
                continue
            student_cells[gid] = c
    ex_by_sol = {e.solution_id: e for e in canon.exercises if e.solution_id}
    ex_by_check = {e.check_index: e for e in canon.exercises}
    missing: dict[str, str] = {}
    plan: list[_Plan] = []
    from labkit.release import strip_source

    for i, cell in enumerate(canon.nb.cells):
        nbg = _nbg(cell)
        gid = nbg.get("grade_id")
        src = cell.source
        if cell.cell_type != "code":
            nb.cells.append(nbformat.v4.new_markdown_cell(src) if cell.cell_type == "markdown"
                            else nbformat.v4.new_raw_cell(src))
            plan.append(_Plan("skip"))
            continue
        if i in ex_by_check:
            ex = ex_by_check[i]
            nonce, key, seed = secrets.token_hex(16), secrets.token_hex(32), secrets.randbits(62)
            theirs = student_cells.get(gid)
            if theirs is not None:
                if _code_lines(theirs.get("source", "")) != _code_lines(src):
                    flags.setdefault(ex.name, []).append(f"check cell {gid} was edited (ignored)")
                if _nbg(theirs).get("points") != nbg.get("points"):
                    flags.setdefault(ex.name, []).append(
                        f"check cell {gid}: points changed to {_nbg(theirs).get('points')!r} "
                        "(ignored)")
            nb.cells.append(nbformat.v4.new_code_cell(_check_cell_source(ex, nonce, key, seed)))
            plan.append(_Plan("check", ex.name, nonce, key, seed))
            continue
        if nbg.get("solution"):
            ex = ex_by_sol.get(gid)
            theirs = student_cells.get(gid)
            if theirs is None or theirs.get("cell_type") != "code":
                why = (f"no cell with grade_id {gid} (deleted or renamed?)" if theirs is None
                       else f"cell {gid} is no longer a code cell")
                if ex is not None:
                    missing[ex.name] = why
                else:
                    flags[""].append(why)
                # the released stub keeps later cells (and other exercises) runnable
                nb.cells.append(nbformat.v4.new_code_cell(strip_source(src, grade_id=gid or "")))
                plan.append(_Plan("code"))
                continue
            s = theirs.get("source", "")
            hits = _flags_for(s)
            if hits:
                flags.setdefault(ex.name if ex else "", []).extend(f"{gid}: {h}" for h in hits)
            nb.cells.append(nbformat.v4.new_code_cell(s))
            plan.append(_Plan("solution", ex.name if ex else None))
            continue
        tags = (cell.get("metadata") or {}).get("tags") or []
        if set(tags) & set(skip_tags):
            nb.cells.append(nbformat.v4.new_code_cell(src))
            plan.append(_Plan("skip"))
            continue
        nb.cells.append(nbformat.v4.new_code_cell(src))
        plan.append(_Plan("code"))
    return nb, plan, {"missing": missing, "flags": {k: v for k, v in flags.items() if v}}
