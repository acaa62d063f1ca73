"""Views: a highlighted listing of IR/assembly with its loops found (:func:`show`) and two
listings compared side by side (:func:`diff`)."""
from __future__ import annotations

import dataclasses
import difflib
import html
import re

from .ir import _require_dispatcher, asm, helpers_text, llvm_ir, own_ir
from .retarget import compile_for
from .vector import _IR_VTYPE, _asm_arch, _classify, _iter_instructions

_LOOP_COLOURS = ["#fff4c2", "#e3f2fd", "#fde7e7", "#e8f5e9", "#f3e5f5"]


def _find_loops(lines: list[str], kind: str) -> list[tuple[int, int]]:
    """(start, end) line indices of loops, from back-edges: a jump to a label defined above."""
    labels: dict[str, int] = {}
    loops = []
    for i, line in enumerate(lines):
        s = line.strip()
        if kind == "asm":
            m = re.match(r"^([.\w$]+):", s)
            if m:
                labels[m.group(1)] = i
                continue
            m = re.match(r"^j\w*\s+([.\w$]+)\s*$", s) or re.match(r"^b(?:\.\w+)?\s+([.\w$]+)\s*$", s) \
                or re.match(r"^(?:cbn?z|tbn?z)\s+.*,\s*([.\w$]+)\s*$", s) \
                or re.match(r"^b(?:eq|ne|lt|ge|ltu|geu|gt|le|gtu|leu)z?\s+.*,\s*([.\w$]+)\s*$", s)
            if m and m.group(1) in labels:
                loops.append((labels[m.group(1)], i))
        else:
            m = re.match(r"^([\w.$-]+):", line)
            if m:
                labels[m.group(1)] = i
                continue
            if s.startswith("br "):
                for t in re.findall(r"label %([\w.$-]+)", s):
                    if t in labels and labels[t] <= i:
                        loops.append((labels[t], i))
    return sorted(set(loops))


def _guess_kind(text: str) -> str:
    return "llvm" if re.search(r"^define\b|^\s+%\S+ = ", text, re.M) else "asm"


def _highlight(text: str, kind: str) -> str:
    try:
        from pygments import highlight
        from pygments.formatters import HtmlFormatter
        from pygments.lexers import GasLexer, LlvmLexer

        lexer = LlvmLexer() if kind == "llvm" else GasLexer()
        return highlight(text, lexer, HtmlFormatter(nowrap=True, noclasses=True, style="default"))
    except Exception:  # noqa: BLE001 - plain text is a fine fallback
        return html.escape(text) + "\n"


@dataclasses.dataclass
class Listing:
    """Highlighted IR/assembly with loops marked; HTML in Jupyter, text in a terminal."""

    text: str
    kind: str
    loops: list
    title: str = ""
    context: int = 3

    def _inner(self):
        """Innermost loops (those containing no other loop)."""
        return [l for l in self.loops
                if not any(o != l and l[0] <= o[0] and o[1] <= l[1] for o in self.loops)]

    def hot_loop(self):
        """(first, last) line index of the likely hot loop: the innermost loop with most SIMD work."""
        inner = self._inner()
        if not inner:
            return None
        lines = self.text.splitlines()

        def score(loop):
            a, b = loop
            seg = "\n".join(lines[a:b + 1])
            if self.kind == "asm":
                arch = _asm_arch(seg)
                vec = sum(1 for m, o in _iter_instructions(seg) if _classify(m, o, arch))
            else:
                vec = len(_IR_VTYPE.findall(seg))
            return (vec, b - a)
        return max(inner, key=score)

    def __repr__(self) -> str:
        return str(self)

    def __str__(self) -> str:
        lines = self.text.splitlines()
        inner = self._inner()
        hot = self.hot_loop()
        out = [f"── {self.title} ──"] if self.title else []
        if hot:
            out.append(f"   hot loop marked ▶ (lines {hot[0] + 1}–{hot[1] + 1}); other innermost loops marked ·")
        for i, line in enumerate(lines):
            mark = "▶ " if hot and hot[0] <= i <= hot[1] else ("· " if any(a <= i <= b for a, b in inner) else "  ")
            out.append(mark + line)
        return "\n".join(out)

    def _repr_html_(self) -> str:
        lines = self.text.splitlines()
        hot_one = self.hot_loop()
        hot = self._inner()
        n = len(lines)
        colour = [None] * n
        for a, b in hot:
            for i in range(a, b + 1):
                colour[i] = _LOOP_COLOURS[0] if (a, b) == hot_one else _LOOP_COLOURS[1]
        keep = [not hot] * n
        for a, b in hot:
            for i in range(max(0, a - self.context), min(n, b + self.context + 1)):
                keep[i] = True
        pieces: list[str] = []
        i = 0
        while i < n:
            j = i
            if keep[i]:
                while j < n and keep[j] and colour[j] == colour[i]:
                    j += 1
                body = _highlight("\n".join(lines[i:j]), self.kind)
                style = f"background:{colour[i]};" if colour[i] else ""
                label = ""
                if colour[i]:
                    what = "hot loop" if hot_one and hot_one[0] == i else "loop"
                    label = (f"<div style='font:11px sans-serif;color:#555'>▼ {what} "
                             f"(lines {i + 1}–{j}, back-edge at line {j})</div>")
                pieces.append(f"{label}<pre style='margin:0;{style}'>{body}</pre>")
            else:
                while j < n and not keep[j]:
                    j += 1
                body = _highlight("\n".join(lines[i:j]), self.kind)
                pieces.append(f"<details><summary style='color:#777;font:12px sans-serif'>… {j - i} "
                              f"lines outside the loop (click to show)</summary><pre style='margin:0'>"
                              f"{body}</pre></details>")
            i = j
        head = f"<div style='font-weight:bold'>{html.escape(self.title)}</div>" if self.title else ""
        note = (f"<div style='font:12px sans-serif;color:#555'>{len(hot)} innermost loop(s) "
                f"highlighted (hot loop in yellow: most SIMD instructions); the rest is folded.</div>"
                if hot else
                "<div style='font:12px sans-serif;color:#555'>no loop found (no back-edge).</div>")
        return (f"<div class='labkit-listing'>{head}{note}<div style='font-size:12px;max-height:40em;"
                f"overflow:auto;border:1px solid #ddd'>{''.join(pieces)}</div></div>")


def show(obj, kind: str = "asm", signature=None, *, cpu: str | None = None, full: bool = False,
         context: int = 3, features=None, prefer_vector_width: int | None = None) -> Listing:
    """Highlighted asm/LLVM IR of a numba function (or given text) with the hot loop found."""
    if kind not in ("asm", "llvm", "ir"):
        raise ValueError(f"kind must be 'asm' or 'llvm', got {kind!r}.")
    kind = "llvm" if kind == "ir" else kind
    if isinstance(obj, str):
        text, title = obj, ""
        if kind == "asm" and _guess_kind(obj) == "llvm":
            kind = "llvm"
    else:
        _require_dispatcher(obj)
        if cpu is not None:
            if kind != "asm":
                raise ValueError("cpu= is only available for kind='asm'.")
            text = compile_for(obj, cpu, signature, features, full=full,
                               prefer_vector_width=prefer_vector_width)
        else:
            text = asm(obj, signature, full=full) if kind == "asm" else llvm_ir(obj, signature, full=full)
        title = f"{obj.__name__}: {'assembly' if kind == 'asm' else 'LLVM IR'}" + (f" for {cpu}" if cpu else "")
        if not full and cpu is None and not own_ir(obj, signature)[1]:
            helpers = helpers_text(obj, signature, kind)     # its loop sits in a helper it calls
            if helpers:
                mark = ";" if kind == "llvm" else "#"
                text += (f"\n\n{mark} ---- functions of the same module it calls (not inlined): "
                         f"the loop is here ----\n" + helpers)
                title += " + the helpers it calls"
    if kind == "asm":  # drop noise that never helps a student
        text = "\n".join(l for l in text.splitlines()
                         if not l.strip().startswith((".cfi_", ".loc", ".p2align", ".Ltmp", ".file")))
    lines = text.splitlines()
    return Listing(text=text, kind=kind, loops=_find_loops(lines, kind), title=title, context=context)


def _normalise_asm(text: str) -> list[str]:
    labels: dict[str, str] = {}

    def rename(m):
        return labels.setdefault(m.group(0), f".L{len(labels)}")
    out = []
    for line in text.splitlines():
        s = line.strip()
        if not s or s.startswith((".cfi_", ".loc", ".p2align", ".Ltmp", ".file", "#")):
            continue
        out.append(re.sub(r"\.LBB\d+_\d+|\.LCPI\d+_\d+", rename, line.rstrip()))
    return out


@dataclasses.dataclass
class Diff:
    """Two listings compared; side-by-side HTML in Jupyter, unified diff as text."""

    a: list
    b: list
    names: tuple

    def __repr__(self) -> str:
        return str(self)

    def __str__(self) -> str:
        lines = list(difflib.unified_diff(self.a, self.b, self.names[0], self.names[1], lineterm="", n=2))
        return "\n".join(lines) if lines else f"{self.names[0]} and {self.names[1]} are identical"

    @property
    def changed(self) -> int:
        """Number of added plus removed lines."""
        sm = difflib.SequenceMatcher(None, self.a, self.b, autojunk=False)
        return sum(max(i2 - i1, j2 - j1) for tag, i1, i2, j1, j2 in sm.get_opcodes() if tag != "equal")

    def _repr_html_(self) -> str:
        table = difflib.HtmlDiff(tabsize=4, wrapcolumn=70).make_table(
            self.a, self.b, html.escape(self.names[0]), html.escape(self.names[1]), context=True, numlines=3)
        style = ("<style>.labkit-diff table.diff{font-family:monospace;font-size:12px;border:1px solid #ddd}"
                 ".labkit-diff .diff_add{background:#d7f5dd}.labkit-diff .diff_chg{background:#fff1b8}"
                 ".labkit-diff .diff_sub{background:#fbd5d5}.labkit-diff td{padding:0 4px}</style>")
        return f"<div class='labkit-diff'>{style}{table}</div>"


def diff(a, b, *, kind: str = "asm", names: tuple | None = None, signature=None) -> Diff:
    """Compare two listings (texts, or numba functions → their asm/IR) side by side."""
    def text_of(x, default):
        if isinstance(x, str):
            return x, default
        if isinstance(x, Listing):
            return x.text, x.title or default
        _require_dispatcher(x)
        t = asm(x, signature) if kind == "asm" else llvm_ir(x, signature)
        return t, x.__name__
    ta, na = text_of(a, "a")
    tb, nb = text_of(b, "b")
    names = tuple(names) if names else (na, nb)
    return Diff(_normalise_asm(ta), _normalise_asm(tb), names)
