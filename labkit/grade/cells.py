"""What a notebook's code cell says, read statically (nothing runs): its text as Python
(:func:`python_source`) and the names it defines at top level (:func:`defines`). Below both
:mod:`.notebooks` (which canonical notebook a submission is) and :mod:`.build` (what is graded
from it); it imports neither.
"""
from __future__ import annotations

import ast

__all__ = ["python_source", "defines"]


def python_source(source: str) -> str:
    """A cell's text as Python (IPython magics turned into calls, as IPython would; nothing
    runs): what the check worker loads and what import statements are read from. A cell that
    already is Python is returned unchanged."""
    try:
        ast.parse(source)
        return source
    except SyntaxError:
        pass
    try:
        from IPython.core.inputtransformer2 import TransformerManager
        return TransformerManager().transform_cell(source)
    except Exception:  # noqa: BLE001 - no IPython, or a cell it cannot transform
        return source


def defines(source: str) -> set[str]:
    """Names a cell defines at top level (functions, classes, assignments)."""
    try:
        tree = ast.parse(python_source(source))
    except SyntaxError:
        return set()
    out: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, ast.Assign):
            out |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out.add(node.target.id)
    return out
