"""Conditional branches in optimised LLVM IR that run as data branches: those of a function
other than its own loops' back edges and exits and numba's error paths (:func:`_data_branches`),
and the functions of the module a loop calls that LLVM did not inline (:func:`_called`), named
as Python names (:func:`_symbol_name`). :func:`labkit.check.gates.no_branch_gate` reads them.
"""
from __future__ import annotations

import re

from labkit.inspect import loops as _loops

_CALL = re.compile(r'\bcall\b[^@]*@("[^"]+"|[\w.$\-]+)\(')
_BR = ("br i1", "switch ")


def _symbol_name(sym: str) -> str:
    """The Python name in a numba symbol (``_ZN8mi_probe5plogpB2v2…`` → ``plogp``)."""
    s = sym.strip('"')
    if not s.startswith("_ZN"):
        return s
    i, parts = 3, []
    while i < len(s) and s[i].isdigit():
        j = i
        while j < len(s) and s[j].isdigit():
            j += 1
        n = int(s[i:j])
        parts.append(s[j:j + n])
        i = j + n
    return parts[-1] if parts else s


def _exception_target(bl: dict, name: str, steps: int = 8) -> bool:
    """The block ``name`` leads, through unconditional jumps, to a numba error return (``ret
    i32`` other than 0 or -2): the raise path of a check numba inserted."""
    for _ in range(steps):
        lines = bl.get(name)
        if not lines:
            return False
        last = lines[-1]
        m = re.match(r"ret i32 (-?\d+)", last)
        if m:
            return m.group(1) not in ("0", "-2")
        m = re.match(r'br label %("?[\w.$\-]+"?)$', last)
        if not m:
            return False
        name = f"{name.split(':', 1)[0]}:{m.group(1).strip(chr(34))}"
    return False


def _data_branches(fn_ir: str) -> list[str]:
    """Conditional branches of one function's IR other than its own loops' back edges and
    exits and numba's error paths: what runs as branches wherever the function is called."""
    bl = _loops.blocks(fn_ir)
    control = set()
    for lp in _loops.loops(fn_ir):
        fn = lp.header.split(":", 1)[0]
        body = set(lp.blocks)
        for b in lp.blocks:
            for ln in bl[b]:
                if ln.startswith(_BR):
                    targets = [f"{fn}:{t.strip(chr(34))}" for t in _loops._TARGETS.findall(ln)]
                    if lp.header in targets or any(t not in body for t in targets):
                        control.add((b, ln))
    out = []
    for b, lines in bl.items():
        fn = b.split(":", 1)[0]
        for ln in lines:
            if not ln.startswith(_BR) or (b, ln) in control:
                continue
            targets = [f"{fn}:{t.strip(chr(34))}" for t in _loops._TARGETS.findall(ln)]
            if any(_exception_target(bl, t) for t in targets):
                continue
            out.append(ln)
    return out


def _called(ir: str, lines) -> dict[str, list[str]]:
    """{symbol: its IR lines} of the functions defined in ``ir`` that ``lines`` call, directly
    or through one another: the student's helpers LLVM did not inline run inside the caller."""
    from labkit.inspect.ir import _ir_functions
    funcs = _ir_functions(ir)
    out: dict[str, list[str]] = {}
    todo = [n.strip('"') for ln in lines for n in _CALL.findall(ln)]
    while todo:
        name = todo.pop()
        if name in out or name not in funcs:
            continue
        out[name] = funcs[name]
        todo += [n.strip('"') for ln in funcs[name] for n in _CALL.findall(ln)]
    return out
