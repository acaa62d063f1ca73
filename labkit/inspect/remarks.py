"""The loop vectoriser's own remarks per loop of a numba function, with plain-language
explanations and fixes (:func:`remarks`).

``remarks`` (and ``annotate``) recompile a fresh ``debug=True`` dispatcher (bounds checks off,
lifetimes not extended, so the code is the same as the user's) in-process while LLVM's
``-pass-remarks*=loop-vectorize`` options are set, with file descriptor 2 redirected to a
temporary file, all under numba's global compiler lock.  Afterwards the options are set to a
pattern that matches no pass (LLVM cannot unset them), so later compiles print nothing.
In-process was chosen over a subprocess because a notebook function's globals (other jitted
functions, constants, closures) cannot be rebuilt reliably in another interpreter.
"""
from __future__ import annotations

import ast
import dataclasses
import html
import inspect as _pyinspect
import os
import re
import textwrap
import weakref
from typing import Any

from labkit.target import _Stderr as _StderrCapture   # fd 2 into a file, ``.text``

from .ir import _FRESH_LOCK, _compile_fresh, _require_dispatcher, _signature_args

EXPLANATIONS: list[tuple[str, str, str]] = [
    ("no reason given by LLVM",
     "The loop was legal to vectorise, but LLVM's cost model judged vector code no faster — "
     "typically strided or scattered loads and stores (e.g. an array-of-structures layout).",
     "Make the inner loop walk contiguous memory (structure-of-arrays, transpose), then compare "
     "vector_report before and after."),
    ("cannot prove it is safe to reorder floating-point operations",
     "A floating-point reduction (s += x) must add in source order: vectorising would add in a "
     "different order and could change the rounding.",
     "Use @njit(fastmath=True) (or fastmath={'reassoc'}), or keep several partial sums by hand."),
    ("unsafe dependent memory operations",
     "Each iteration reads a value an earlier iteration wrote (a loop-carried dependence, "
     "e.g. a[i] = a[i-1] + …), so iterations cannot run side by side.",
     "Reorganise the data so the inner loop runs over independent items (transpose / batch), "
     "or use a scan formula."),
    ("backward loop carried data dependence",
     "An iteration needs the result of the previous one.",
     "Vectorise across independent problems instead (an outer loop over items inside)."),
    ("cannot identify array bounds",
     "The loop reads through computed indices (a[idx[i]]) or an unknown stride, so LLVM cannot "
     "check that the loads and stores do not overlap.",
     "Use contiguous arrays and direct indices; gather into a temporary contiguous array first."),
    ("cannot check memory dependencies at runtime",
     "Too many arrays that might overlap to check at run time.",
     "Write into a fresh output array, or split the loop."),
    ("potentially faulting load",
     "The loop can stop early (a break or return inside it), and LLVM cannot prove that reading "
     "ahead of the exit stays inside the array.",
     "Remove the break: process all elements and combine with a mask/flag, or split off the search."),
    ("early exit",
     "The loop can stop early (break/return, a while condition on data, or an exception such as "
     "ZeroDivisionError or IndexError raised inside it).",
     "Remove every way out of the loop: a break (compute a mask and reduce it), an exception "
     "numba adds for you (which operation in the loop could raise?), an index that may fall "
     "outside the array (check the bounds before the loop)."),
    ("could not determine number of loop iterations",
     "The trip count is not known when the loop starts (a while loop, or a bound changed inside).",
     "Use `for i in range(n)` with n fixed before the loop."),
    ("call instruction cannot be vectorized",
     "The loop calls a function that has no vector version (a non-inlined numba function, a "
     "math function without a vector library, or a runtime helper).",
     "Inline the helper (@njit(inline='always')), use arithmetic instead of the call, or hoist it."),
    ("instruction cannot be vectorized",
     "One operation in the loop has no SIMD equivalent on this CPU.",
     "Replace that operation (e.g. integer division by a variable) or move it out of the loop."),
    ("value that could not be identified as reduction",
     "A value computed in the loop is used after it in a way LLVM does not recognise as a sum/min/max.",
     "Accumulate into a simple scalar (s += …, m = max(m, …)) and use it after the loop."),
    ("control flow",
     "The loop body branches in a way the vectoriser cannot turn into masks.",
     "Hoist the branch out of the loop, or compute both sides and select (np.where-style)."),
    ("unsupported switch",
     "A multi-way branch inside the loop.",
     "Replace it with arithmetic or a lookup table."),
    ("cost-model indicates that vectorization is not beneficial",
     "LLVM could vectorise but estimates it would not be faster (e.g. integer division, gathers, "
     "or too few iterations).",
     "Change the operation (multiply by a reciprocal, shift instead of divide) or the data layout."),
    ("cost-model indicates that interleaving is not beneficial",
     "LLVM decided not to unroll/interleave the loop.", "Usually nothing to do."),
    ("explicitly disabled, or the loop has already been vectorized",
     "This loop is the scalar remainder of (or a copy of) a loop that was already vectorised.",
     "Nothing to do."),
    ("loop not vectorized",
     "LLVM did not vectorise this loop; the line above usually says why.",
     "Look at the other remark for this loop."),
]


def explain(reason: str) -> tuple[str, str]:
    """Plain-language (explanation, fix) for an LLVM vectoriser remark text ('' if unknown)."""
    low = reason.lower()
    for key, text, fix in EXPLANATIONS:
        if key.lower() in low:
            return text, fix
    return "", ""


@dataclasses.dataclass
class LoopRemark:
    """The vectoriser's verdict on one loop: where, vectorised or not, width, LLVM's reason."""

    file: str
    line: int
    vectorized: bool
    width: int = 0
    interleave: int = 0
    reason: str = ""
    reason_line: int = 0
    explanation: str = ""
    fix: str = ""
    source: str = ""
    parallel: bool = False
    raw: tuple = ()
    note: str = ""

    @property
    def verdict(self) -> str:
        """'vectorised (width 8, interleave 4)' or 'not vectorised'."""
        if self.vectorized:
            return f"vectorised (width {self.width}, interleave {self.interleave})"
        return "not vectorised"

    def __str__(self) -> str:
        where = f"{os.path.basename(self.file)}:{self.line}"
        mark = "✔" if self.vectorized else "✘"
        s = f"{mark} line {self.line} ({where}): {self.verdict}"
        if self.source:
            s += f"   | {self.source.strip()}"
        if not self.vectorized and self.reason:
            s += f"\n    why: {self.reason}"
            if self.explanation:
                s += f"\n    meaning: {self.explanation}"
            if self.fix:
                s += f"\n    fix: {self.fix}"
        if self.note:
            s += f"\n    note: {self.note}"
        return s


class Remarks(list):
    """A list of LoopRemark with text and HTML rendering."""

    name = ""
    hidden = 0
    note = ""

    def for_line(self, line: int) -> list:
        """Remarks whose loop starts at source line ``line``."""
        return [r for r in self if r.line == line]

    @property
    def all_vectorized(self) -> bool:
        """True when there is at least one loop and every loop vectorised."""
        return bool(self) and all(r.vectorized for r in self)

    def __repr__(self) -> str:
        return str(self)

    def __str__(self) -> str:
        head = f"vectoriser remarks for {self.name}:" if self.name else "vectoriser remarks:"
        if not self:
            head += " no loop remarks (no loops, or loops fully unrolled/removed)"
        lines = [head] + [str(r) for r in self]
        if self.note:
            lines.append(f"note: {self.note}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        rows = []
        for r in self:
            colour = "#1a7f37" if r.vectorized else "#b35900"
            why = html.escape(r.reason) if not r.vectorized else ""
            expl = ""
            if not r.vectorized and (r.explanation or r.fix):
                expl = (f"{html.escape(r.explanation)}<br><b>fix:</b> {html.escape(r.fix)}")
            if r.note:
                expl += f"<div style='color:#555;font-size:11px'>{html.escape(r.note)}</div>"
            rows.append(f"<tr><td>{r.line}</td><td><code>{html.escape(r.source.strip())}</code></td>"
                        f"<td style='color:{colour};font-weight:bold'>{'✔' if r.vectorized else '✘'} "
                        f"{html.escape(r.verdict)}</td><td><code>{why}</code></td><td>{expl}</td></tr>")
        body = "".join(rows) or "<tr><td colspan=5>no loop remarks</td></tr>"
        note = f"<div style='color:#555;font-size:12px'>{html.escape(self.note)}</div>" if self.note else ""
        return (f"<div class='labkit-remarks'><b>vectoriser remarks{(' for ' + html.escape(self.name)) if self.name else ''}"
                f"</b><table style='text-align:left'><tr><th>line</th><th>source</th><th>verdict</th><th>LLVM says</th>"
                f"<th>what it means / fix</th></tr>{body}</table>{note}</div>")


_REMARK_OPTS = ("-pass-remarks", "-pass-remarks-missed", "-pass-remarks-analysis")
_NEVER = "^labkit-no-such-pass$"  # matches no pass name, not even the empty string
_REMARK_LINE = re.compile(r"^remark: (.*?):(\d+):(\d+): (.*)$")
_VEC_DONE = re.compile(r"vectorized loop \(vectorization width: (\d+), interleaved count: (\d+)\)")
_INTERLEAVED = re.compile(r"interleaved loop \(interleaved count: (\d+)\)")


def _set_remarks(on: bool) -> None:
    import llvmlite.binding as llvm

    for opt in _REMARK_OPTS:
        llvm.set_option("labkit", f"{opt}={'loop-vectorize' if on else _NEVER}")


def _capture_remarks(fn, args) -> tuple[str, Any]:
    """Compile a fresh debug dispatcher with LLVM remarks on; return (stderr text, dispatcher)."""
    from numba.core.compiler_lock import global_compiler_lock

    with global_compiler_lock:
        cap = _StderrCapture()
        with cap:
            _set_remarks(True)
            try:
                disp = _compile_fresh(fn, args, debug=True)
            finally:
                _set_remarks(False)
    return cap.text, disp


def _parse_remarks(text: str) -> list[list]:
    """[[file, line, col, message], …] with continuation lines joined to their remark."""
    out: list[list] = []
    for line in text.splitlines():
        m = _REMARK_LINE.match(line)
        if m:
            out.append([m.group(1), int(m.group(2)), int(m.group(3)), m.group(4).strip()])
        elif out and line.strip() and not line.startswith(("/", "  warnings.warn")):
            prev = out[-1][3].rstrip()
            out[-1][3] = prev + (" " if prev.endswith((".", ":", ";")) else ". ") + line.strip()
    return out


def _clean_reason(msg: str) -> str:
    msg = msg.replace("loop not vectorized: ", "")
    msg = re.sub(r"\s*Use #pragma clang loop distribute\(enable\)[^.]*\.?", ".", msg)
    return re.sub(r"\.\.+", ".", msg).strip()


def _is_terminal(msg: str) -> bool:
    return bool(_VEC_DONE.search(msg) or _INTERLEAVED.search(msg) or msg == "loop not vectorized"
                or "interleaving is not beneficial" in msg or "already been vectorized" in msg)


def _source_info(py_func):
    """(file, {line: text}, [(start, end, is_prange) loops]) of a Python function."""
    try:
        lines, start = _pyinspect.getsourcelines(py_func)
    except (OSError, TypeError):
        return py_func.__code__.co_filename, {}, []
    src = {start + i: l.rstrip("\n") for i, l in enumerate(lines)}
    loops = []
    try:
        tree = ast.parse(textwrap.dedent("".join(lines)))
        for node in ast.walk(tree):
            if isinstance(node, (ast.For, ast.While)):
                is_p = isinstance(node, ast.For) and "prange" in ast.unparse(node.iter)
                loops.append((node.lineno + start - 1, node.end_lineno + start - 1, is_p))
    except SyntaxError:
        pass
    return py_func.__code__.co_filename, src, sorted(loops)


def _innermost_loop(loops, line):
    best = None
    for a, b, p in loops:
        if a <= line <= b and (best is None or a >= best[0]):
            best = (a, b, p)
    return best


def _build_remarks(fn, text: str) -> Remarks:
    """``fn``'s loop verdicts from LLVM's remark text: the remarks grouped per loop version, each
    group placed on a source line and read as one verdict, one verdict per loop line, and a note
    on what is not shown."""
    file, src, loops = _source_info(fn.py_func)
    pranges = [l for l in loops if l[2]]
    result, hidden, seen = Remarks(), 0, set()
    for g in _remark_groups(_parse_remarks(text)):
        place = _group_place(g, file, pranges)
        if place is None:
            hidden += 1
            continue
        r = _group_remark(g, *place, file, src, loops, pranges)
        if r is None or (r.line, r.vectorized, r.reason) in seen:
            continue
        seen.add((r.line, r.vectorized, r.reason))
        result.append(r)
    final = _one_verdict_per_line(result)
    final.hidden = hidden
    final.note = _remarks_note(pranges, hidden)
    return final


def _remark_groups(entries: list[list]) -> list[list[list]]:
    """The remarks cut into groups, each ending at a loop's final verdict (the last may not)."""
    groups, pending = [], []
    for e in entries:
        pending.append(e)
        if _is_terminal(e[3]):
            groups.append(pending)
            pending = []
    if pending:
        groups.append(pending)
    return groups


def _group_place(g: list[list], file: str, pranges: list) -> tuple[list, bool] | None:
    """(the group's verdict remark, whether it comes from a prange body) — None when the group
    has no line in ``fn``'s file (a runtime helper or an already-compiled callee)."""
    located = [e for e in g if e[1] > 0]
    if not located:
        return None
    term = g[-1] if g[-1][1] > 0 else located[-1]
    if os.path.basename(term[0]) == os.path.basename(file):
        return term, False
    if term[0] == "<string>" and pranges:
        return term, True  # numba outlines a prange body into a generated gufunc
    return None


def _group_remark(g: list[list], term: list, parallel: bool, file: str, src: dict, loops: list,
                  pranges: list) -> LoopRemark | None:
    """One group's verdict as a LoopRemark; None for the remainder copy of a loop already
    vectorised."""
    msgs = [e[3] for e in g]
    if any("already been vectorized" in m for m in msgs) and len(set(msgs)) == 1:
        return None  # remainder/epilogue copy of an already-vectorised loop
    m = next((_VEC_DONE.search(x) for x in msgs if _VEC_DONE.search(x)), None)
    vec = m is not None
    reason = "; ".join(dict.fromkeys(_group_reasons(msgs))) if not vec else ""
    if not vec and not reason:
        reason = "no reason given by LLVM"
    line, reason_line = _remark_lines(g, term, parallel, loops, pranges)
    expl, fix = explain(reason) if reason else ("", "")
    return LoopRemark(file=file, line=line, vectorized=vec,
                      width=int(m.group(1)) if m else 0,
                      interleave=int(m.group(2)) if m else 0,
                      reason=reason, reason_line=reason_line, explanation=expl, fix=fix,
                      source=src.get(line, ""), parallel=parallel, raw=tuple(msgs))


def _group_reasons(msgs: list[str]) -> list[str]:
    """The group's reasons for not vectorising, cleaned of LLVM's boilerplate."""
    reasons = [x for x in msgs if not _is_terminal(x) or "interleaving is not beneficial" in x
               and not any("vectorization is not beneficial" in y for y in msgs)]
    return [_clean_reason(x) for x in reasons if x != "loop not vectorized"]


def _remark_lines(g: list[list], term: list, parallel: bool, loops: list,
                  pranges: list) -> tuple[int, int]:
    """(the loop's line, the line a reason points at or 0): a prange body's remarks go on the
    prange line; others on the innermost loop around the verdict's line."""
    if parallel:
        return pranges[0][0], 0
    loop = _innermost_loop(loops, term[1])
    rl = [e[1] for e in g if e[3] != term[3] and e[1] > 0]
    return (loop[0] if loop else term[1]), (rl[0] if rl else 0)


def _one_verdict_per_line(result: Remarks) -> Remarks:
    """One verdict per loop line, sorted by line: LLVM sometimes keeps several versions of a loop
    (e.g. unswitched on a parameter); the loop counts as vectorised when one version is, the
    others become notes."""
    final = Remarks()
    by_line: dict[int, list] = {}
    for r in result:
        by_line.setdefault(r.line, []).append(r)
    for rs in by_line.values():
        vec = [r for r in rs if r.vectorized]
        if vec:
            keep = max(vec, key=lambda r: (r.width, r.interleave))
            others = [r.reason for r in rs if not r.vectorized and r.reason]
            if others:
                keep.note = ("LLVM also kept another version of this loop that is not vectorised: "
                             + "; ".join(dict.fromkeys(others)))
        else:
            keep = rs[0]
            reasons = list(dict.fromkeys(r.reason for r in rs if r.reason))
            if len(reasons) > 1:
                keep.reason = "; ".join(reasons)
                keep.explanation, keep.fix = explain(keep.reason)
        final.append(keep)
    final.sort(key=lambda r: r.line)
    return final


def _remarks_note(pranges: list, hidden: int) -> str:
    """What the verdicts leave out: where prange bodies' remarks go, groups without a line."""
    notes = []
    if pranges:
        notes.append("parallel=True: numba moves each prange body into a generated function; its "
                     "loop remarks are shown on the prange line.")
    if hidden:
        notes.append(f"{hidden} remark group(s) from code without line information (numba runtime "
                     f"helpers or already-compiled callees) are not shown.")
    return " ".join(notes)


_REMARKS_CACHE: "weakref.WeakKeyDictionary[Any, dict]" = weakref.WeakKeyDictionary()


def _remarks_and_debug(fn, signature):
    _require_dispatcher(fn)
    args = _signature_args(fn, signature)
    with _FRESH_LOCK:
        per = _REMARKS_CACHE.setdefault(fn, {})
        if args not in per:
            text, disp = _capture_remarks(fn, args)
            per[args] = (text, disp)
        text, disp = per[args]
    rem = _build_remarks(fn, text)
    rem.name = fn.__name__
    return rem, disp, args


def remarks(fn, signature=None) -> Remarks:
    """LLVM's loop-vectoriser verdict per loop of ``fn`` (line, width or reason, explanation, fix)."""
    return _remarks_and_debug(fn, signature)[0]
