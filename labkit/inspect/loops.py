"""Loops of one LLVM IR function: basic blocks, the CFG, natural loops, the hot loop."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

_LABEL = re.compile(r'^("?[\w.$\-]+"?):')
_DEFINE = re.compile(r'^define\b')
_TARGETS = re.compile(r'label %("?[\w.$\-]+"?)')


@dataclass
class Loop:
    header: str
    blocks: list            # block names, textual order
    latches: list
    lines: list = field(default_factory=list)
    inner: bool = True


def blocks(ir: str, entries: set | None = None) -> dict[str, list[str]]:
    """{block name: its instruction lines} of every function in ``ir`` (names made unique as
    ``f<n>:<label>``); ``entries`` receives each function's entry block."""
    out: dict[str, list[str]] = {}
    cur = None
    fn = 0
    entries = set() if entries is None else entries
    for line in ir.splitlines():
        if _DEFINE.match(line):
            fn += 1
            cur = f"f{fn}:entry"
            out[cur] = []
            entries.add(cur)
            continue
        if line.startswith("}"):
            cur = None
            continue
        m = _LABEL.match(line)
        if m and cur is not None:
            if cur.endswith(":entry") and not out[cur]:
                del out[cur]
                entries.discard(cur)
                entries.add(f"f{fn}:{m.group(1).strip(chr(34))}")
            cur = f"f{fn}:{m.group(1).strip(chr(34))}"
            out[cur] = []
            continue
        if cur is not None and line.strip() and not line.strip().startswith(";"):
            lines = out[cur]
            if lines and lines[-1].startswith("switch ") and not lines[-1].endswith("]"):
                lines[-1] += " " + line.strip()     # a switch's cases, one per line: one line
            else:
                lines.append(line.strip())
    return out


def _succ(name: str, lines: list[str]) -> list[str]:
    fn = name.split(":", 1)[0]
    for ln in reversed(lines):
        if ln.startswith(("br ", "switch ", "indirectbr ", "invoke ")) or " switch " in ln:
            return [f"{fn}:{t.strip(chr(34))}" for t in _TARGETS.findall(ln)]
        if ln.startswith(("ret", "unreachable", "resume")):
            return []
    return []


def loops(ir: str) -> list[Loop]:
    """Natural loops (one per header) of the IR, with ``inner`` set for innermost ones."""
    entries: set = set()
    bl = blocks(ir, entries)
    order = list(bl)
    succ = {b: [s for s in _succ(b, bl[b]) if s in bl] for b in order}
    pred: dict[str, list[str]] = {b: [] for b in order}
    for b, ss in succ.items():
        for s in ss:
            pred[s].append(b)
    # dominators per function (iterative)
    dom: dict[str, set] = {}
    for fn_entry in [b for b in order if b in entries]:
        fn = fn_entry.split(":", 1)[0]
        nodes = [b for b in order if b.startswith(fn + ":")]
        # reachable nodes only
        seen, stack = {fn_entry}, [fn_entry]
        while stack:
            for s in succ[stack.pop()]:
                if s not in seen:
                    seen.add(s)
                    stack.append(s)
        nodes = [b for b in nodes if b in seen]
        alls = set(nodes)
        for b in nodes:
            dom[b] = set(alls)
        dom[fn_entry] = {fn_entry}
        changed = True
        while changed:
            changed = False
            for b in nodes:
                if b == fn_entry:
                    continue
                ps = [dom[p] for p in pred[b] if p in alls]
                new = set.intersection(*ps) if ps else set()
                new = new | {b}
                if new != dom[b]:
                    dom[b] = new
                    changed = True
    by_header: dict[str, Loop] = {}
    for b in order:
        for s in succ[b]:
            if b in dom and s in dom.get(b, ()):     # back edge b -> s
                lp = by_header.setdefault(s, Loop(s, [], []))
                lp.latches.append(b)
    for h, lp in by_header.items():
        body = {h}
        stack = [l for l in lp.latches if l != h]
        body.update(stack)
        while stack:
            x = stack.pop()
            for p in pred[x]:
                if p not in body and p in dom:
                    body.add(p)
                    stack.append(p)
        lp.blocks = [b for b in order if b in body]
        lp.lines = [ln for b in lp.blocks for ln in bl[b]]
    for lp in by_header.values():
        lp.inner = not any(o is not lp and o.header in lp.blocks for o in by_header.values())
    return list(by_header.values())


_VEC = re.compile(r"<(\d+) x (i\d+|float|double|half|ptr)>")


def vector_count(lines) -> int:
    return sum(1 for ln in lines if _VEC.search(ln.split("=", 1)[-1]) and not ln.startswith("br"))


def hot_loop(ir: str) -> Loop | None:
    """The innermost loop with the most vector instructions (then the most instructions)."""
    inner = [lp for lp in loops(ir) if lp.inner]
    if not inner:
        return None
    return max(inner, key=lambda lp: (vector_count(lp.lines), len(lp.lines)))


def conditional_branches(lp: Loop, bl=None) -> list[str]:
    """Conditional branches / switches inside the loop other than its back edges and exits."""
    out = []
    body = set(lp.blocks)
    for ln in lp.lines:
        if ln.startswith("br i1") or ln.startswith("switch "):
            out.append(ln)
    # drop branches that leave the loop or take the back edge (loop control)
    fn = lp.header.split(":", 1)[0]
    keep = []
    for ln in out:
        targets = [f"{fn}:{t.strip(chr(34))}" for t in _TARGETS.findall(ln)]
        if any(t not in body for t in targets) or lp.header in targets:
            continue
        keep.append(ln)
    return keep
