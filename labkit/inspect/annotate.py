"""Source ↔ assembly: each source line of a numba function with the vectoriser's verdict on its
loop and the instructions it produced (:func:`annotate`)."""
from __future__ import annotations

import dataclasses
import html
import os
import re
import warnings

from .ir import _asm_functions, _is_own, _own_symbols
from .remarks import Remarks, _remarks_and_debug, _source_info
from .vector import VectorReport, vector_report

_PALETTE = ["#fff4c2", "#dff0ff", "#e6f7e6", "#fde2e4", "#efe3ff", "#ffe8cc", "#d9f2f2", "#f0f0d0"]


def _asm_by_line(asm_text: str, main: str, base: str, lo: int, hi: int, generated_ok=frozenset()):
    """{source line: [instructions]} for the function's own bodies, using ``.loc`` directives."""
    files: dict[str, str] = {}
    for m in re.finditer(r'^\s*\.file\s+(\d+)\s+"([^"]*)"(?:\s+"([^"]*)")?', asm_text, re.M):
        files[m.group(1)] = os.path.basename(m.group(3) or m.group(2))
    by_line: dict[int, list[str]] = {}
    other = 0
    for name, lines in _asm_functions(asm_text).items():
        if not _is_own(name, main):
            continue
        cur = None
        for line in lines:
            s = line.strip()
            m = re.match(r"^\.loc\s+(\d+)\s+(\d+)", s)
            if m:
                f, ln = files.get(m.group(1), ""), int(m.group(2))
                # prange bodies live in numba's generated gufunc ("<string>") but keep the user's
                # line numbers; its own scaffolding lines are small numbers, so only trust lines
                # strictly inside a prange loop
                ok = (f == base and lo <= ln <= hi) or (f == "<string>" and ln in generated_ok)
                cur = ln if ok else None
                continue
            if not s or s.startswith(".") or s.endswith(":") or s.startswith("#"):
                continue
            if cur is None:
                other += 1
            else:
                by_line.setdefault(cur, []).append(s.replace("\t", " "))
    return by_line, other


@dataclasses.dataclass
class Annotation:
    """Source of a numba function with loop verdicts and the assembly of each line."""

    name: str
    source: dict
    marks: dict
    asm: dict
    unattributed: int
    remarks: Remarks
    report: VectorReport | None = None
    note: str = ""

    def __repr__(self) -> str:
        return str(self)

    def __str__(self) -> str:
        out = [f"annotate {self.name}" + (f" — {self.report.summary()}" if self.report else "")]
        for ln in sorted(self.source):
            mark = ""
            for r in self.marks.get(ln, []):
                mark += f"  ✔ vectorised ×{r.width}" if r.vectorized else f"  ✘ {r.reason}"
            out.append(f"{ln:5d} | {self.source[ln]}{mark}")
            instrs = self.asm.get(ln, [])
            for ins in instrs[:8]:
                out.append(f"      |     {ins}")
            if len(instrs) > 8:
                out.append(f"      |     … {len(instrs) - 8} more")
        if self.unattributed:
            out.append(f"({self.unattributed} instructions have no source line: setup, spills, returns)")
        if self.note:
            out.append(f"note: {self.note}")
        return "\n".join(out)

    def _repr_html_(self) -> str:
        colour_of = {}
        for k, ln in enumerate(sorted(l for l in self.source if self.asm.get(l))):
            colour_of[ln] = _PALETTE[k % len(_PALETTE)]
        rows = []
        for ln in sorted(self.source):
            bg = colour_of.get(ln, "")
            marks = []
            for r in self.marks.get(ln, []):
                if r.vectorized:
                    marks.append(f"<span style='color:#1a7f37;font-weight:bold' title='{html.escape(r.verdict)}'>"
                                 f"✔ ×{r.width}</span>")
                else:
                    tip = html.escape(f"{r.reason} — {r.explanation} Fix: {r.fix}")
                    marks.append(f"<span style='color:#b35900;font-weight:bold' title='{tip}'>✘ "
                                 f"{html.escape(r.reason[:70])}</span>")
            instrs = self.asm.get(ln, [])
            if instrs:
                shown = "\n".join(html.escape(i) for i in instrs[:12])
                more = ""
                if len(instrs) > 12:
                    more = (f"<details><summary>{len(instrs) - 12} more</summary><pre style='margin:0'>"
                            + "\n".join(html.escape(i) for i in instrs[12:]) + "</pre></details>")
                asm_cell = f"<pre style='margin:0'>{shown}</pre>{more}"
            else:
                asm_cell = ""
            style = f"background:{bg};" if bg else ""
            rows.append(f"<tr style='vertical-align:top'><td style='color:#888;text-align:right'>{ln}</td>"
                        f"<td style='{style}'><pre style='margin:0'>{html.escape(self.source[ln])}</pre></td>"
                        f"<td>{' '.join(marks)}</td><td style='{style}font-size:11px'>{asm_cell}</td></tr>")
        summary = html.escape(self.report.summary()) if self.report else ""
        foot = []
        if self.unattributed:
            foot.append(f"{self.unattributed} instructions have no source line (setup, spills, returns).")
        if self.note:
            foot.append(self.note)
        return (f"<div class='labkit-annotate'><b>{html.escape(self.name)}</b> <span>{summary}</span>"
                f"<table style='font-size:12px;border-collapse:collapse'><tr><th>line</th><th>source</th>"
                f"<th>vectoriser</th><th>assembly from this line</th></tr>{''.join(rows)}</table>"
                f"<div style='color:#555;font-size:12px'>{html.escape(' '.join(foot))}</div></div>")


def annotate(fn, signature=None) -> Annotation:
    """Source of ``fn`` with ✔/✘ per loop and the assembly each line produced (HTML or text)."""
    rem, ddisp, args = _remarks_and_debug(fn, signature)
    file, src, loops = _source_info(fn.py_func)
    if not src:
        raise ValueError(f"cannot read the source of {fn.__name__} (defined with exec or in a "
                         f"closed session); use labkit.inspect.remarks(fn) and show(fn) instead.")
    main = _own_symbols(ddisp, args)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dasm = ddisp.inspect_asm(args)
    inside_prange = frozenset(ln for a, b, p in loops if p for ln in range(a + 1, b + 1))
    by_line, other = _asm_by_line(dasm, main, os.path.basename(file), min(src), max(src), inside_prange)
    marks: dict[int, list] = {}
    for r in rem:
        marks.setdefault(r.line, []).append(r)
    try:
        report = vector_report(fn, args)
    except Exception:  # noqa: BLE001 - the annotation stands without the summary
        report = None
    note = rem.note
    if any(l[2] for l in loops):
        note = (note + " " if note else "") + ("Lines inside a prange loop show the instructions of "
                                               "the generated parallel function.")
    return Annotation(name=fn.__name__, source=src, marks=marks, asm=by_line, unattributed=other,
                      remarks=rem, report=report, note=note)
