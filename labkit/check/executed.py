"""Technique gates judge the code that runs, not the code a cell shows.

A gate reads the student's compiled code (IR, assembly). Code behind a branch the check's inputs
never take is compiled too: a vector loop under ``if a[0, 0] < -1.0:`` (the inputs are in
[0, 1)) satisfies a width gate while the loop that runs is scalar. :func:`executed` returns the function the gates should judge instead:

1. The student's function and its helpers of the same cell (numba functions it calls, found by
   name in its namespace, recursively) are rebuilt from their source with a counter at the start
   of every block (function body, ``if``/``else`` branch, loop body), compiled with the same
   options and run once on copies of the gate's own inputs (the arrays the speed rounds time).
2. When every block ran, the student's own function is judged, unchanged.
3. Otherwise a copy with every never-executed block replaced by ``raise`` is compiled for the
   same arguments, and the gates read *its* code: what the inputs never reach is gone from it.

Where that cannot be done (no source, a closure, example types instead of values, an
instrumented copy that does not compile or raises) the student's own function is judged, as
before — an honest student is never failed by the probe itself. What stays out of reach: a
block that runs but does almost no work (a vector loop run once, the rest scalar) — the speed
gates judge that.
"""
from __future__ import annotations

import ast
import inspect
import textwrap
from typing import Any

import numpy as np

__all__ = ["executed", "explain", "coverage", "Coverage", "threads_per_block"]

_COV = "_labkit_cov_"
_TID = "_labkit_thread_id_"
_PRUNED_MESSAGE = "labkit: this block never ran on the check's inputs"
_MAX_HELPERS = 12
#: (id(py_func), argument ids) -> Coverage, per check process (one probe serves every gate)
_CACHE: dict = {}
_THREAD_BUILDS: dict = {}       # id(py_func) -> (py_func, instrumented dispatcher, where, blocks)


class Coverage:
    """The probe's outcome: ``dispatcher`` is what the gates judge; ``skipped`` counts the
    blocks the inputs never executed (0: the student's own function); ``why`` says why the
    probe could not run (the student's own function is judged then)."""

    def __init__(self, dispatcher, skipped: int = 0, blocks: int = 0, why: str = "",
                 lines: tuple = ()):
        self.dispatcher, self.skipped, self.blocks, self.why = dispatcher, skipped, blocks, why
        self.lines = tuple(lines)       # (function name, first line) of each removed block

    def describe(self) -> str:
        if not self.skipped:
            return ""
        where = ", ".join(f"{f} line {ln}" for f, ln in self.lines[:3])
        return (f"{self.skipped} block{'s' * (self.skipped > 1)} of your code never ran on the "
                f"check's inputs ({where}) and {'were' if self.skipped > 1 else 'was'} left "
                "out: the gates judge the code that runs")


def _is_values(args) -> bool:
    import numba
    return isinstance(args, tuple) and not any(isinstance(a, numba.types.Type) for a in args)


def _copy(v):
    if isinstance(v, np.ndarray):
        return v.copy()
    if isinstance(v, tuple):        # a named tuple (lab 01's Scoring) stays one: numba types it
        items = [_copy(x) for x in v]
        return type(v)(*items) if hasattr(v, "_fields") else tuple(items)
    if isinstance(v, list):
        return [_copy(x) for x in v]
    return v


def _funcdef(py) -> ast.FunctionDef:
    src = textwrap.dedent(inspect.getsource(py))
    tree = ast.parse(src)
    fd = next((n for n in tree.body if isinstance(n, ast.FunctionDef)), None)
    if fd is None or fd.name != py.__name__:
        raise ValueError("source of the function not found")
    # Nothing but the body is kept: it is only compiled (nopython), never run as Python. The
    # decorators, default values and annotations would be evaluated by ``exec`` in the trusted
    # worker (which never runs student code): dropped, and the defaults copied from the
    # function the strict loader built.
    fd.decorator_list = []
    fd.returns = None
    fd.args.defaults, fd.args.kw_defaults = [], [None] * len(fd.args.kwonlyargs)
    for a in fd.args.posonlyargs + fd.args.args + fd.args.kwonlyargs + \
            [x for x in (fd.args.vararg, fd.args.kwarg) if x is not None]:
        a.annotation = None
    line0 = py.__code__.co_firstlineno - 1
    ast.increment_lineno(fd, line0)
    return fd


def _helpers(py) -> dict[str, Any]:
    """{name: dispatcher} of the numba functions of ``py``'s own namespace it calls (transitively)."""
    from .guard import is_dispatcher
    glb = py.__globals__
    out: dict[str, Any] = {}
    todo = [py]
    while todo:
        f = todo.pop()
        names = {n.id for n in ast.walk(ast.parse(textwrap.dedent(inspect.getsource(f))))
                 if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        for n in sorted(names):
            v = glb.get(n)
            if n in out or not is_dispatcher(v) or v.py_func is py:
                continue
            hp = v.py_func
            if getattr(hp, "__globals__", None) is not glb or hp.__closure__:
                continue
            out[n] = v
            todo.append(hp)
            if len(out) > _MAX_HELPERS:
                raise ValueError("too many helpers")
    return out


class _Blocks(ast.NodeTransformer):
    """Number every statement list; ``counters`` instruments them, ``prune`` (a set of block
    numbers) replaces those by ``raise``."""

    def __init__(self, start: int, helpers: set, counters: bool, prune: set | None = None,
                 threads: bool = False):
        self.n, self.helpers, self.counters, self.prune = start, helpers, counters, prune or set()
        self.threads = threads
        self.first_line: dict[int, int] = {}
        self.parent: dict[int, int | None] = {}
        self._stack: list[int] = []

    def _block(self, stmts: list, line: int) -> list:
        k = self.n
        self.n += 1
        self.first_line[k] = stmts[0].lineno if stmts else line
        self.parent[k] = self._stack[-1] if self._stack else None
        self._stack.append(k)
        stmts = [self.visit(s) for s in stmts]
        self._stack.pop()
        stmts = [s for s in stmts if s is not None]
        if k in self.prune:
            return [ast.parse(f"raise RuntimeError({_PRUNED_MESSAGE!r})").body[0]]
        if self.counters:
            at = f"{k}, {_TID}()" if self.threads else f"{k}"
            inc = ast.parse(f"{_COV}[{at}] += 1").body[0]
            return [inc] + stmts
        return stmts

    def visit_FunctionDef(self, node):
        if self.counters:
            node.args.args.insert(0, ast.arg(arg=_COV))
        node.body = self._block(node.body, node.lineno)
        return node

    def _compound(self, node):
        for field in ("body", "orelse", "finalbody"):
            stmts = getattr(node, field, None)
            if stmts:
                setattr(node, field, self._block(stmts, node.lineno))
        for h in getattr(node, "handlers", []) or []:
            h.body = self._block(h.body, h.lineno)
        for attr in ("test", "iter", "items"):          # expressions may call helpers
            v = getattr(node, attr, None)
            if isinstance(v, list):
                setattr(node, attr, [self.visit(x) for x in v])
            elif v is not None:
                setattr(node, attr, self.visit(v))
        return node

    visit_If = visit_For = visit_While = visit_With = visit_Try = _compound

    def visit_Call(self, node):
        self.generic_visit(node)
        if self.counters and isinstance(node.func, ast.Name) and node.func.id in self.helpers:
            node.args.insert(0, ast.Name(id=_COV, ctx=ast.Load()))
        return node


def _build(py, helpers: dict, disp, counters: bool, prune: set | None = None,
           threads: bool = False):
    """(njit'd main, {block: (function, line)}, {block: enclosing block or None}, block count)
    rebuilt in a copy of the namespace; ``threads``: the counters are per block and thread
    (``numba.get_thread_id``)."""
    import numba
    ns = dict(py.__globals__)
    ns[_TID] = numba.get_thread_id
    names = {py.__name__: disp, **helpers}
    where: dict[int, tuple[str, int]] = {}
    parent: dict[int, int | None] = {}
    start = 0
    module = ast.Module(body=[], type_ignores=[])
    for name, d in names.items():
        fd = _funcdef(d.py_func)
        tr = _Blocks(start, set(helpers), counters, prune, threads)
        fd = tr.visit(fd)
        for k, ln in tr.first_line.items():
            where[k] = (d.py_func.__name__, ln)
        parent.update(tr.parent)
        start = tr.n
        fd.name = name
        module.body.append(fd)
    ast.fix_missing_locations(module)
    code = compile(module, py.__code__.co_filename, "exec")
    exec(code, ns)      # noqa: S102 - bare function definitions: nothing of the student runs
    for name, d in names.items():
        f = ns[name]
        f.__defaults__ = d.py_func.__defaults__
        f.__kwdefaults__ = d.py_func.__kwdefaults__
        opts = {k: v for k, v in d.targetoptions.items() if k not in ("nopython", "cache")}
        ns[name] = numba.njit(**opts)(f)
    return ns[py.__name__], where, parent, start


def coverage(fn, args) -> Coverage:
    """The function the gates judge for ``fn`` on ``args`` (see the module's docstring)."""
    from .guard import is_dispatcher, unwrap
    disp = unwrap(fn)
    if not is_dispatcher(disp) or not _is_values(args):
        return Coverage(disp, why="no argument values")
    py = disp.py_func
    key = (id(py), tuple(id(a) for a in args))
    hit = _CACHE.get(key)
    if hit is not None and hit[0] is py:
        return hit[1]
    result = _probe(disp, py, args)
    if len(_CACHE) >= 8:                                # the inputs are kept alive: few
        _CACHE.clear()
    _CACHE[key] = (py, result, args)                    # args kept: their ids stay theirs
    return result


def _probe(disp, py, args) -> Coverage:
    import numba
    try:
        if py.__closure__:
            return Coverage(disp, why="a closure")
        helpers = _helpers(py)
        inst, where, parent, nblocks = _build(py, helpers, disp, counters=True)
        cov = np.zeros(max(nblocks, 1), np.int64)
        inst(cov, *_copy(args))
    except Exception as e:  # noqa: BLE001 - the probe failed: the student's own code is judged
        return Coverage(disp, why=f"probe: {type(e).__name__}")
    never = {k for k in range(nblocks) if cov[k] == 0}
    if not never:
        return Coverage(disp, blocks=nblocks)
    try:
        pruned, _, _, _ = _build(py, helpers, disp, counters=False, prune=never)
        from labkit.inspect.ir import with_defaults
        pruned.compile(with_defaults(pruned, tuple(numba.typeof(a) for a in args)))
    except Exception as e:  # noqa: BLE001
        return Coverage(disp, blocks=nblocks, why=f"pruned copy: {type(e).__name__}")
    # a block nested in a removed block is gone with it: report the outermost ones only
    outer = [k for k in never if parent.get(k) not in never]
    lines = sorted({where[k] for k in outer}, key=lambda t: (t[0] != py.__name__, t[1]))
    return Coverage(pruned, skipped=len(outer), blocks=nblocks, lines=lines)


def threads_per_block(fn, args) -> int | None:
    """The most threads that ran any one block of ``fn`` (and its same-cell helpers) on copies of
    ``args``: ≥ 2 when a parallel loop spread the block's iterations, 1 when one thread did all
    of them (a ``prange`` with one iteration and a serial loop inside). None when the probe
    cannot run (see the module's docstring). numba's parallel loops split their iterations
    among the threads up front, so the count does not depend on the machine's load."""
    import numba
    from .guard import is_dispatcher, unwrap
    disp = unwrap(fn)
    if not is_dispatcher(disp) or not _is_values(args) or disp.py_func.__closure__:
        return None
    try:
        py = disp.py_func
        hit = _THREAD_BUILDS.get(id(py))
        if hit is None or hit[0] is not py:    # one instrumented copy per function: compiled once
            _THREAD_BUILDS.clear()
            hit = _THREAD_BUILDS[id(py)] = (py,) + _build(py, _helpers(py), disp, counters=True,
                                                           threads=True)
        _, inst, _, _, nblocks = hit
        cov = np.zeros((max(nblocks, 1), numba.config.NUMBA_NUM_THREADS), np.int64)
        inst(cov, *_copy(args))
    except Exception:  # noqa: BLE001 - the probe failed: no count
        return None
    return int((cov > 0).sum(axis=1).max()) if cov.size else 0


def executed(fn, args):
    """The dispatcher whose compiled code the gates read for ``fn`` on ``args``; records in the
    running check's details how many blocks were left out (a failing gate's message says which:
    :func:`explain`)."""
    from .framework import current
    cov = coverage(fn, args)
    ctx = current()
    if ctx is not None and cov.skipped:
        ctx.details["blocks_not_executed"] = cov.skipped
        ctx.executed_note = cov.describe()
    return cov.dispatcher


def explain(message: str) -> str:
    """``message`` with, when the running check's gates judged a copy without never-executed
    blocks, the sentence that says so (once)."""
    from .framework import current
    ctx = current()
    extra = getattr(ctx, "executed_note", "") if ctx is not None else ""
    if not extra or extra in message:
        return message
    return f"{message} ({extra})"
