"""Technique gates: each proves part of the lesson from the compiled code and ends the check
with one line and its evidence when it fails.

- :func:`vectorized_gate` — vector instructions at least the host's native width
  (:func:`native_bits`, from ``labkit.hardware``; ``LABKIT_NATIVE_BITS`` overrides it).
- :func:`lanes_gate` — ``<N x i16>`` (or another element type) in the hot loop, N ≥ native lanes.
- :func:`no_branch_gate` — no conditional branch inside the hot loop (optimised LLVM IR).
- :func:`fma_gate` — fused multiply-adds in the function's machine code.
- :func:`no_fastmath_gate` — no ``fast``/``reassoc`` flags (``fastmath=True``) on float adds.
- :func:`accumulators_gate` — at least k independent float accumulator lanes in the hot loop.
- :func:`not_blas_gate` — no matrix multiply / BLAS call doing the work.
- :func:`record_order` — the ids a numba helper (e.g. ``pcc.tile_coords``) was called with, in order.
- :func:`require_njit` — the function must be compiled by numba (a plain-Python wrapper
  does not skip the other gates).

Which of the IR's conditional branches run as data branches is :mod:`labkit.check.branches`'.
"""
from __future__ import annotations

import os
import re
from typing import Callable

from labkit.inspect import loops as _loops
from labkit.inspect.ir import own_ir

from .branches import _BR, _CALL, _called, _data_branches, _symbol_name  # noqa: F401
from .executed import executed
from .framework import current, note
from .guard import is_dispatcher, unwrap
from .result import CheckFailure

__all__ = ["native_bits", "native_lanes", "require_njit", "judged", "vectorized_gate", "lanes_gate",
           "no_branch_gate", "fma_gate", "no_fastmath_gate", "accumulators_gate",
           "not_blas_gate", "record_order", "hot_loop"]

_BITS = {"i8": 8, "i16": 16, "i32": 32, "i64": 64, "float": 32, "double": 64, "half": 16}
_DTYPE_IR = {"int8": "i8", "uint8": "i8", "int16": "i16", "uint16": "i16", "int32": "i32",
             "uint32": "i32", "int64": "i64", "uint64": "i64", "float32": "float",
             "float64": "double"}


def native_bits() -> int:
    """The widest vectors numba's LLVM emits for plain loops on this host (bits).

    ``LABKIT_NATIVE_BITS`` overrides it (tests simulate a 128-bit NEON host); otherwise
    ``labkit.hardware.native_vector_bits(preferred=True)`` (the loop vectoriser's width: 256 on
    Intel AVX-512 servers, whose registers are 512); without that: 256 on AVX/AVX2/AVX-512 x86,
    128 elsewhere."""
    env = os.environ.get("LABKIT_NATIVE_BITS", "").strip()
    if env:
        try:
            return max(64, int(env))
        except ValueError:
            pass
    try:
        from labkit import hardware
        fn = getattr(hardware, "native_vector_bits", None)
        if fn is not None:
            try:
                return int(fn(preferred=True))
            except TypeError:
                return int(fn())
    except Exception:  # noqa: BLE001 - fall back to the ISA guess below
        pass
    try:
        import llvmlite.binding as ll
        feats = ll.get_host_cpu_features()
        if feats.get("avx2") or feats.get("avx512f"):
            return 256
        if feats.get("avx"):
            return 256
    except Exception:  # noqa: BLE001
        pass
    return 128


def native_lanes(dtype: str) -> int:
    """Lanes of ``dtype`` (``"int16"``, ``"i16"``, ``"float64"`` …) in one native vector."""
    ir = _DTYPE_IR.get(str(dtype), str(dtype))
    return max(1, native_bits() // _BITS[ir])


def _detail(key, value):
    ctx = current()
    if ctx is not None:
        ctx.details[key] = value


def _as_signature(signature):
    """Turn a tuple of example arguments into numba types (types pass through)."""
    if isinstance(signature, tuple):
        import numba
        return tuple(a if isinstance(a, numba.types.Type) else numba.typeof(a) for a in signature)
    return signature


def require_njit(fn, verdict: str = "not vectorised") -> Callable:
    """The student's dispatcher, or ``verdict``: a plain-Python function has no compiled loop."""
    f = unwrap(fn)
    if is_dispatcher(f):
        return f
    name = getattr(f, "__name__", type(f).__name__)
    raise CheckFailure(verdict, f"{name} is not a numba function (no @njit): there is no "
                                "compiled loop to check — decorate it with @njit and write the "
                                "loop yourself")


def judged(fn, signature, verdict: str = "not vectorised"):
    """(dispatcher, numba signature) the gates read for the student's ``fn``: when ``signature``
    holds the check's argument values, the student's function without the blocks those inputs
    never execute (:mod:`labkit.check.executed`) — a loop behind a branch never taken is not
    the loop that runs."""
    disp = require_njit(fn, verdict)
    return executed(disp, signature), _as_signature(signature)


def _ir(fn, signature) -> str:
    """The optimised IR the gates judge: the function's own (numba's wrappers aside) and that of
    the functions of its module it calls and LLVM did not inline (the student's helpers, which
    may hold the loop; labkit's and numpy's code is in other modules) — of the code that runs
    (:func:`judged`)."""
    disp, sig = judged(fn, signature)
    own, _ = own_ir(disp, sig)
    helpers = _helper_parts(disp, sig, "llvm")
    return own if not helpers else own + "\n\n" + helpers


def _helper_parts(disp, sig, kind: str) -> str:
    from labkit.inspect.ir import helpers_text
    return helpers_text(disp, sig, kind)


def hot_loop(fn, signature, where: str | None = None):
    """(loop, all innermost loops) of ``fn``'s optimised IR; ``where``: a regex the loop must
    contain (e.g. ``r"@llvm\\.log"``), else the innermost loop with the most vector code."""
    ir = _ir(fn, signature)
    inner = [lp for lp in _loops.loops(ir) if lp.inner]
    if where:
        pat = re.compile(where)
        inner = [lp for lp in inner if any(pat.search(ln) for ln in lp.lines)] or inner
    if not inner:
        return None, []
    return max(inner, key=lambda lp: (_loops.vector_count(lp.lines), len(lp.lines))), inner


def vectorized_gate(fn: Callable, signature=None, *, min_bits: int | None = None) -> int:
    """Require vector instructions at least the host's native width (``min_bits`` caps the
    requirement, never raises it above the host's width); returns the widest vector in bits.
    On failure the message carries the vectoriser's own reason when it can be found."""
    from labkit import inspect as lk_inspect

    disp, signature = judged(fn, signature)
    native = native_bits()
    need = native if min_bits is None else min(int(min_bits), native)
    rep = lk_inspect.vector_report(disp, signature)
    if not rep.vectorized or int(rep.max_width_bits) < need:
        helpers = _helper_parts(disp, signature, "asm")      # the loop may be in a helper
        if helpers:
            alt = lk_inspect.vector_report_from_asm(helpers)
            if alt.vectorized and int(alt.max_width_bits) > int(rep.max_width_bits):
                rep = alt
    width = int(rep.max_width_bits)
    _detail("vector_bits", width)
    _detail("native_bits", native)
    if rep.vectorized and width >= need:
        note(f"vectorised, {width}-bit")
        return width
    reason = ""
    try:
        rem = lk_inspect.remarks(disp, signature)
        missed = [r for r in rem if not getattr(r, "vectorized", False)]
        if missed:
            r0 = missed[0]
            reason = f" — line {getattr(r0, 'line', '?')}: {getattr(r0, 'reason', '')}".rstrip(": ")
    except Exception:  # noqa: BLE001 - the reason is a bonus; the verdict stands without it
        reason = ""
    what = "no vector instructions" if not rep.vectorized else f"only {width}-bit vectors"
    raise CheckFailure("not vectorised", f"{what}, need ≥ {need}-bit (this host's native "
                                         f"width){reason}")


def lanes_gate(fn: Callable, signature, dtype: str = "int16", *, min_lanes: int | None = None,
               verdict: str = "not vectorised", hint: str = "") -> int:
    """Require ``<N x iK>`` vectors of ``dtype`` in the hot loop with N ≥ the native lane count."""
    ty = _DTYPE_IR.get(dtype, dtype)
    need = min_lanes or native_lanes(ty)
    lp, inner = hot_loop(fn, signature, where=rf"<\d+ x {ty}>")
    pat = re.compile(rf"<(\d+) x {re.escape(ty)}>")
    lanes = max((int(m) for ln in (lp.lines if lp else []) for m in pat.findall(ln)), default=0)
    _detail(f"{dtype}_lanes", lanes)
    if lanes >= need:
        note(f"{lanes} {dtype} lanes per instruction")
        return lanes
    if lanes:
        msg = f"only {lanes} {dtype} lanes (<{lanes} x {ty}>) in the hot loop, need {need}"
    else:
        msg = f"no <N x {ty}> vectors in the hot loop, need {need} {dtype} lanes"
    raise CheckFailure(verdict, msg + (f" — {hint}" if hint else ""))


def no_branch_gate(fn: Callable, signature, *, where: str | None = None, hint: str = "") -> None:
    """No conditional branch inside the hot loop(s) (those matching ``where``), back edges and
    loop exits aside — the optimised IR's ``br i1`` / ``switch`` — nor inside a function of the
    cell the loop calls and LLVM did not inline (a branchy helper runs its branch on every
    iteration as surely as an ``if`` in the loop; its own loops' control and numba's error paths
    aside). ``where`` matches a loop when its own lines or those of the helpers it calls do."""
    ir = _ir(fn, signature)
    inner = [lp for lp in _loops.loops(ir) if lp.inner]
    if not inner:
        raise CheckFailure("technique missing", "no loop found in your compiled function")
    calls = {id(lp): _called(ir, lp.lines) for lp in inner}
    if where:
        pat = re.compile(where)
        loops_ = [lp for lp in inner
                  if any(pat.search(ln) for ln in lp.lines)
                  or any(pat.search(ln) for body in calls[id(lp)].values() for ln in body)]
    else:
        loops_ = []
    if not loops_:
        loops_ = [max(inner, key=lambda lp: (_loops.vector_count(lp.lines), len(lp.lines)))]
    branches = [b for x in loops_ for b in _loops.conditional_branches(x)]
    seen = set()
    for x in loops_:
        for name, body in calls[id(x)].items():
            if name in seen:
                continue
            seen.add(name)
            branches += [f"{b} in {_symbol_name(name)}, called from the loop"
                         for b in _data_branches("\n".join(body))]
    _detail("hot_loop_branches", len(branches))
    if not branches:
        note("no branch in the hot loop")
        return
    first = re.sub(r",?\s*!prof[^,]*", "", branches[0])
    raise CheckFailure("technique missing",
                       f"{len(branches)} conditional branch{'es' * (len(branches) > 1)} inside "
                       f"the hot loop ({first}) — " + (hint or "replace the if by a mask"))


def fma_gate(fn: Callable, signature) -> int:
    """Require fused multiply-add instructions in the function's machine code."""
    from labkit import inspect as lk_inspect
    disp, signature = judged(fn, signature, "technique missing")
    text = lk_inspect.asm(disp, signature)
    text += "\n" + _helper_parts(disp, signature, "asm")        # the loop may be in a helper
    n = len(re.findall(r"\b(v?fn?m(add|sub)\w*|fmla|fmadd|fmsub)\b", text))
    _detail("fma", n)
    if n:
        note(f"{n} FMA instructions")
        return n
    raise CheckFailure("technique missing", "no fused multiply-add in your compiled code")


def no_fastmath_gate(fn: Callable, signature, *, hint: str = "") -> None:
    """No ``fastmath`` (``fast``/``reassoc`` on float adds): the reordering is the exercise."""
    disp = require_njit(fn)
    fm = disp.targetoptions.get("fastmath")
    ir = _ir(fn, signature)
    flagged = re.findall(r"= fadd (?:[a-z ]*\b(?:fast|reassoc)\b[a-z ]*) ", ir)
    if fm or flagged:
        why = "fastmath=True" if fm else f"'{flagged[0].strip()}' in the IR"
        raise CheckFailure("technique missing",
                           f"{why} lets LLVM reorder the sum for you — "
                           + (hint or "the exercise is to write the independent sums yourself"))


def accumulators_gate(fn: Callable, signature, k: int, *, dtype: str = "float64",
                      hint: str = "") -> int:
    """At least ``k`` independent accumulator lanes of ``dtype`` (phi nodes, scalar = 1 lane,
    ``<4 x double>`` = 4) carried around the hot loop."""
    ty = _DTYPE_IR.get(dtype, dtype)
    lp, _ = hot_loop(fn, signature)
    if lp is None:
        raise CheckFailure("technique missing",
                           "no loop in your compiled function — the work happens in a library "
                           "call, not in the loop the exercise asks for")
    lanes = 0
    for ln in lp.lines:
        m = re.match(rf"%\S+ = phi (?:(?:fast|reassoc|nnan|ninf|nsz|arcp|contract|afn) )*"
                     rf"(<(\d+) x {ty}>|{ty}) ", ln)
        if m:
            lanes += int(m.group(2)) if m.group(2) else 1
    _detail("accumulator_lanes", lanes)
    if lanes >= k:
        note(f"{lanes} independent {dtype} sums in the hot loop")
        return lanes
    raise CheckFailure("technique missing",
                       f"{lanes} {dtype} accumulator{'s' * (lanes != 1)} in the hot loop, need "
                       f"≥ {k} independent sums" + (f" — {hint}" if hint else ""))


_BLAS = re.compile(r"xxgemm|xxgemv|xxdot|cblas_|dgemm|sgemm|ddot_")
_MATMUL_NAMES = {"dot", "matmul", "einsum", "inner", "tensordot", "vdot", "outer"}


def not_blas_gate(fn: Callable, signature=None, *, hint: str = "") -> None:
    """The work is not a matrix multiply: no ``@``/``np.dot`` in Python bytecode, no BLAS call
    in numba's IR."""
    import dis
    f = unwrap(fn)
    msg = "a matrix multiply (BLAS) does the work instead of your loop"
    msg += f" — {hint}" if hint else ""
    if is_dispatcher(f):
        ir = _ir(fn, signature)
        if _BLAS.search(ir):
            raise CheckFailure("technique missing", msg)
        return
    code = getattr(getattr(f, "__code__", None), "co_code", None)
    if code is None:
        return
    for ins in dis.get_instructions(f):
        if ins.opname == "BINARY_OP" and ins.argrepr in ("@", "@="):
            raise CheckFailure("technique missing", msg)
        if ins.opname in ("LOAD_ATTR", "LOAD_METHOD", "LOAD_GLOBAL") and ins.argval in _MATMUL_NAMES:
            raise CheckFailure("technique missing", msg)


# ---------------------------------------------------------------- access order
_ORDER: list = []
_COPIES: dict = {}      # (id(py_func), target) -> (py_func, traced copy): compiled once per cell


def _record_id(j) -> None:
    _ORDER.append(int(j))


def _traced_njit(real, arg: int, nargs: int):
    """A numba function calling ``real`` that records its ``arg``-th argument (objmode)."""
    import numba
    names = ", ".join(f"a{i}" for i in range(nargs))
    src = (f"def traced({names}):\n"
           f"    with numba.objmode():\n"
           f"        _record_id(a{arg})\n"
           f"    return real({names})\n")
    ns = {"numba": numba, "_record_id": _record_id, "real": real}
    exec(compile(src, "<labkit order tracer>", "exec"), ns)
    return numba.njit(ns["traced"])


def record_order(fn: Callable, args, target: str, *, arg: int, nargs: int) -> list[int]:
    """Call a fresh copy of ``fn`` on ``args`` with ``target`` (``"labkit.pcc:tile_coords"``)
    replaced by a recording wrapper; returns its ``arg``-th argument per call, in order (empty
    when ``fn`` never calls it). The student's dispatcher and labkit stay untouched."""
    import importlib
    import sys
    import types

    import numba

    f = unwrap(fn)
    from .proxy import is_proxy
    if is_proxy(f):         # plain Python runs in a child process: its calls are not seen here
        require_njit(f, "technique missing")
    mod, _, attr = target.partition(":")
    real = getattr(importlib.import_module(mod), attr)
    py = getattr(f, "py_func", f)
    key = (id(py), target, arg)
    hit = _COPIES.get(key) if is_dispatcher(f) else None
    if hit is not None and hit[0] is py:          # compiled with the tracer already
        _ORDER.clear()
        hit[1](*args)
        return list(_ORDER)
    if is_dispatcher(f):
        traced = _traced_njit(real, arg, nargs)
    else:
        def traced(*a, _real=real):  # noqa: E306 - a plain-Python helper
            _record_id(a[arg])
            return _real(*a)
    glb = getattr(py, "__globals__", {})
    swaps = []
    top = mod.split(".")[0]
    for mname, m in list(sys.modules.items()):
        if isinstance(m, types.ModuleType) and (mname == top or mname.startswith(top + ".")) \
                and not mname.startswith("labkit.check"):
            for k, v in list(vars(m).items()):
                if v is real:
                    swaps.append((vars(m), k, v))
    for k, v in list(glb.items()):
        if v is real:
            swaps.append((glb, k, v))
    _ORDER.clear()
    try:
        for d, k, _ in swaps:
            d[k] = traced
        if is_dispatcher(f):
            opts = {k: v for k, v in f.targetoptions.items() if k not in ("cache",)}
            copy = numba.njit(**opts)(py)
            copy(*args)                 # compiles now, binding the tracer
            _COPIES[key] = (py, copy)
        else:
            f(*args)     # the raw function: the guard would see the swapped helper as tampering
    finally:
        for d, k, v in swaps:
            d[k] = v
    return list(_ORDER)
