"""How lab 02's checks judge threading: a parallel loop in the compiled code
(``parallel_gate``), no ``prange`` inside a ``prange`` (``_no_nested_prange``), the threads
counted per block of the student's code (``_threads_used``), and a second thread's gain timed
right beside labkit's own driver's (``_thread_ratios``)."""
from __future__ import annotations

import time

import numba
import numpy as np

from labkit.check import CheckFailure, note
from labkit.check.guard import unwrap
from labkit.check.speed import Measurement, _Student

from .kernels import prefactors
from .layouts import to_aosoa

__all__ = ["parallel_gate"]


def parallel_gate(fn, signature) -> None:
    """A numba parallel loop (``prange`` under ``parallel=True``) in the compiled function."""
    from labkit import inspect as lk_inspect
    from labkit.check.gates import judged

    disp, signature = judged(fn, signature, "technique missing")   # the code that runs
    ir = str(lk_inspect.llvm_ir(disp, signature))
    if not disp.targetoptions.get("parallel") or "__numba_parfor_gufunc" not in ir:
        raise CheckFailure("technique missing", "no parallel loop in your compiled code — "
                                                "@njit(parallel=True) and a prange over the tiles")
    note("parallel loop present")


def _threads_used(student, r) -> dict | None:
    """{shape: the most threads that ran one block of the student's code} for one walker × 16
    tiles and 16 walkers × one tile (:func:`labkit.check.executed.threads_per_block`), or None
    when the probe cannot count."""
    from labkit.check.executed import threads_per_block
    out = {}
    for label, (P, M) in (("one walker, 16 tiles", (1, 16)), ("16 walkers, one tile", (16, 1))):
        Nb, grid = 8, (4, 4, 4)
        tc = to_aosoa(r.standard_normal(grid + (M * Nb,)), Nb)
        idx, pref = prefactors(r.random((P, 3)), grid)
        n = threads_per_block(student, (tc, idx, pref, np.empty((P, M, 10, Nb))))
        if n is None:
            return None
        out[label] = n
    return out


def _timed(fn, args, th, loops):
    numba.set_num_threads(th)
    if isinstance(fn, _Student):         # the student: own copies, verified after the sample
        return fn.time(loops, clock=time.perf_counter)
    t0 = time.perf_counter()
    for _ in range(loops):
        fn(*args)
    return (time.perf_counter() - t0) / loops


def _gain(fn, args, loops, threads=2):
    """1-thread ÷ ``threads``-thread wall time of ``fn(*args)``, ABBA within the call."""
    a1, b1 = _timed(fn, args, 1, loops), _timed(fn, args, threads, loops)
    b2, a2 = _timed(fn, args, threads, loops), _timed(fn, args, 1, loops)
    return min(a1, a2) / max(min(b1, b2), 1e-12)


def _thread_ratios(student, reference, args, *, rounds=9, min_time=0.01, around=None):
    """(student's 2-thread gain ÷ labkit's, labkit's gain), each a Measurement over ``rounds``
    rounds in which the two are timed one right after the other — so a busy machine slows both.
    ``around``: a context manager entered around each of the student's timings (the guard)."""
    import contextlib
    around = around or contextlib.nullcontext
    prev = numba.get_num_threads()
    try:
        reference(*args)
        with around():
            student(*args)
        t = max(_timed(reference, args, 1, 1), 1e-7)
        loops = max(1, min(100_000, int(min_time / t)))
        rel, ref = [], []
        for _ in range(rounds):
            with around():
                g_s = _gain(student, args, loops)
            g_r = _gain(reference, args, loops)
            rel.append(g_s / max(g_r, 1e-12))
            ref.append(g_r)
        return Measurement(rel), Measurement(ref)
    finally:
        numba.set_num_threads(prev)


def _no_nested_prange(student) -> None:
    """Refuse a prange inside another prange's body (numba runs the inner one serially)."""
    import ast
    import inspect as _inspect
    import textwrap

    fn = getattr(unwrap(student), "py_func", None)
    try:
        tree = ast.parse(textwrap.dedent(_inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return

    def is_prange(node):
        f = node.iter.func if isinstance(node.iter, ast.Call) else None
        return f is not None and (getattr(f, "id", None) == "prange"
                                  or getattr(f, "attr", None) == "prange")

    for outer in ast.walk(tree):
        if isinstance(outer, ast.For) and is_prange(outer):
            for inner in ast.walk(outer):
                if inner is not outer and isinstance(inner, ast.For) and is_prange(inner):
                    raise CheckFailure(
                        "technique missing",
                        f"a prange inside a prange (line {inner.lineno} of your function): numba "
                        "runs the inner one serially, so one walker's tiles never share the "
                        "threads — make positions × tiles one prange")
