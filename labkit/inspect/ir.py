"""Dispatchers and text: which compiled overload to read (a fresh copy when numba's disk cache
hides the code), numba's own LLVM IR and assembly of it, and splitting module text into the
function's own bodies.

``llvm_ir`` / ``asm`` read the dispatcher's own compiled library.  Code loaded from numba's
on-disk cache (``cache=True``) cannot be inspected, so labkit then recompiles a *fresh*
dispatcher of ``fn.py_func`` with the same options (the user's dispatcher is never touched).
"""
from __future__ import annotations

import re
import threading
import warnings
import weakref
from typing import Any

# --------------------------------------------------------------------------- dispatchers


def _numba():
    import numba  # local: importing labkit stays cheap

    return numba


def _require_dispatcher(fn) -> None:
    """Raise TypeError unless ``fn`` is a numba CPU dispatcher (``@njit`` function)."""
    from numba.core.dispatcher import Dispatcher

    if isinstance(fn, Dispatcher):
        return
    name = getattr(fn, "__name__", type(fn).__name__)
    if callable(fn) and hasattr(fn, "__code__"):
        raise TypeError(f"{name} is a plain Python function; labkit.inspect needs a numba "
                        f"function: decorate it with @numba.njit (and call it once).")
    raise TypeError(f"labkit.inspect needs a numba @njit function, got {type(fn).__name__} "
                    f"({name!r}); decorate a Python function with @numba.njit.")


def _fmt_sig(args) -> str:
    return "(" + ", ".join(str(a) for a in args) + ")"


def _signature_args(fn, signature) -> tuple:
    """Turn ``signature`` (None, numba Signature, types, string, or example args) into arg types."""
    numba = _numba()
    from numba.core import sigutils
    from numba.core.typing.templates import Signature

    if signature is None:
        sigs = list(fn.signatures)
        if not sigs:
            raise ValueError(f"{fn.__name__} has not been compiled yet: call it once first "
                             f"(e.g. {fn.__name__}(*args)), or pass signature=... "
                             f"(numba types or a tuple of example arguments).")
        if len(sigs) > 1:
            listed = "; ".join(_fmt_sig(s) for s in sigs)
            raise ValueError(f"{fn.__name__} has {len(sigs)} compiled signatures: {listed}. "
                             f"Pick one with signature=fn.signatures[i] (or example arguments).")
        return tuple(sigs[0])
    if isinstance(signature, Signature):
        return tuple(signature.args)
    if isinstance(signature, str):
        try:
            args, _ret = sigutils.normalize_signature(signature)
        except Exception as exc:  # noqa: BLE001
            raise ValueError(f"cannot read signature {signature!r} ({exc}); write it like "
                             f"'(float64[::1], int64)' or pass example arguments.") from None
        return tuple(args)
    if isinstance(signature, numba.types.Type):
        return (signature,)
    if isinstance(signature, (tuple, list)):
        out = []
        for a in signature:
            if isinstance(a, numba.types.Type):
                out.append(a)
            else:
                try:
                    out.append(numba.typeof(a))
                except Exception:  # noqa: BLE001
                    raise ValueError(f"cannot infer a numba type for example argument "
                                     f"{type(a).__name__}; pass numba types instead.") from None
        return with_defaults(fn, tuple(out))
    raise TypeError(f"signature must be None, numba types, a signature string or a tuple of "
                    f"example arguments, got {type(signature).__name__}.")


def with_defaults(fn, args: tuple) -> tuple:
    """``args`` (numba types) completed with ``Omitted(default)`` for the trailing parameters of
    ``fn`` the example arguments leave out — how numba types a call that uses the defaults (a
    student's ``def f(a, b=3)`` called as ``f(a)``)."""
    numba = _numba()
    py = getattr(fn, "py_func", fn)
    code = getattr(py, "__code__", None)
    defaults = getattr(py, "__defaults__", None) or ()
    if code is None or not defaults:
        return args
    nparams = code.co_argcount
    missing = nparams - len(args)
    if missing <= 0 or missing > len(defaults):
        return args
    return args + tuple(numba.types.Omitted(d) for d in defaults[len(defaults) - missing:])


_FRESH: "weakref.WeakKeyDictionary[Any, dict]" = weakref.WeakKeyDictionary()
_FRESH_LOCK = threading.RLock()


def _fresh_options(fn, debug: bool) -> dict:
    opts = dict(fn.targetoptions)
    for k in ("cache", "nopython", "forceobj", "looplift"):
        opts.pop(k, None)
    if debug:
        opts["debug"] = True
        opts["_dbg_extend_lifetimes"] = False
        if opts.get("boundscheck") is None:  # debug=True would otherwise turn bounds checks on
            opts["boundscheck"] = False
    return opts


def _compile_fresh(fn, args, debug=False):
    """Compile a new dispatcher of ``fn.py_func`` (same options and pipeline — e.g. labkit.jit's
    wide one) for ``args``; never cached."""
    numba = _numba()
    opts = _fresh_options(fn, debug)
    pipeline = getattr(getattr(fn, "_compiler", None), "pipeline_class", None)
    if pipeline is not None:
        opts["pipeline_class"] = pipeline
    disp = numba.njit(cache=False, **opts)(fn.py_func)
    from numba.core.errors import NumbaWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NumbaWarning)
        try:
            disp.compile(args)
        except Exception as exc:  # noqa: BLE001 - turn numba's typing traceback into one line
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ValueError(f"numba cannot compile {fn.__name__} for {_fmt_sig(args)}: {first}. "
                             f"Check the signature / example arguments.") from None
    return disp


def _fresh(fn, args, debug=False):
    """A cached fresh dispatcher of ``fn`` compiled for ``args`` (debug info optional)."""
    with _FRESH_LOCK:
        per = _FRESH.setdefault(fn, {})
        key = (args, debug)
        if key not in per:
            per[key] = _compile_fresh(fn, args, debug)
        return per[key]


def _inspectable(fn, args):
    """Return a dispatcher whose compiled ``args`` overload can be inspected (maybe a fresh one)."""
    _require_dispatcher(fn)
    ov = fn.overloads.get(args)
    if ov is not None and not getattr(ov.library, "_disable_inspection", False):
        return fn
    return _fresh(fn, args)


def _resolve(fn, signature):
    _require_dispatcher(fn)
    args = _signature_args(fn, signature)
    return _inspectable(fn, args), args


def _own_symbols(disp, args) -> str:
    return disp.overloads[args].fndesc.mangled_name


_PARFOR_MARK = "__numba_parfor_gufunc"


def _is_own(name: str, main: str) -> bool:
    return name.strip('"') == main or (_PARFOR_MARK in name and not name.startswith(("cfunc.", "_ZN7cpython")))


# --------------------------------------------------------------------------- text splitting

_ASM_TYPE = re.compile(r"^\s*\.type\s+(\"[^\"]+\"|\S+?),\s*[@%]function", re.M)


_ASM_GLOBL = re.compile(r"^\s*\.(?:globl|private_extern)\s+(\"[^\"]+\"|\S+)", re.M)


def _asm_functions(text: str) -> dict[str, list[str]]:
    """Split assembly into {function symbol: body lines} using ``.type x,@function`` labels (ELF),
    or, in Mach-O assembly (macOS: no ``.type``), the ``.globl`` labels without their leading ``_``."""
    names = set(m.group(1).strip('"') for m in _ASM_TYPE.finditer(text))
    macho = not names
    if macho:
        names = set(m.group(1).strip('"') for m in _ASM_GLOBL.finditer(text))
    out: dict[str, list[str]] = {}
    cur = None
    for line in text.splitlines():
        s = line.strip()
        if s.endswith(":") and not line.startswith((" ", "\t")):
            lab = s[:-1].strip('"')
            if lab in names:
                cur = lab[1:] if macho and lab.startswith("_") else lab
                out[cur] = []
                continue
            if lab.startswith(".Lfunc_end"):
                cur = None
                continue
        if cur is not None:
            if s.startswith(".size") or s.startswith(".cfi_endproc"):
                if s.startswith(".size"):
                    cur = None
                continue
            out[cur].append(line)
    return out


_IR_DEFINE = re.compile(r"^define\b[^@]*@(\"[^\"]+\"|[\w.$-]+)\(")


def _ir_functions(text: str) -> dict[str, list[str]]:
    """Split LLVM IR into {function name: lines of its ``define … { … }`` block}."""
    out: dict[str, list[str]] = {}
    cur = None
    for line in text.splitlines():
        if cur is None:
            m = _IR_DEFINE.match(line)
            if m:
                cur = m.group(1).strip('"')
                out[cur] = [line]
        else:
            out[cur].append(line)
            if line.startswith("}"):
                cur = None
    return out


def _own_text(text: str, main: str, kind: str) -> str:
    funcs = _asm_functions(text) if kind == "asm" else _ir_functions(text)
    parts = []
    for name, lines in funcs.items():
        if _is_own(name, main):
            head = f"{name}:" if kind == "asm" else ""
            parts.append("\n".join(([head] if head else []) + lines))
    return "\n\n".join(parts) if parts else text


# --------------------------------------------------------------------------- IR / asm


def llvm_ir(fn, signature=None, *, full: bool = False) -> str:
    """Optimised LLVM IR of ``fn`` for one signature (its own functions; ``full=True``: module)."""
    disp, args = _resolve(fn, signature)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        text = disp.inspect_llvm(args)
    return text if full else _own_text(text, _own_symbols(disp, args), "llvm")


def asm(fn, signature=None, *, full: bool = False) -> str:
    """Assembly of ``fn`` for one signature, without numba's wrappers (``full=True``: all)."""
    disp, args = _resolve(fn, signature)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        text = disp.inspect_asm(args)
    return text if full else _own_text(text, _own_symbols(disp, args), "asm")


def own_ir(fn, signature=None) -> tuple[str, bool]:
    """(``fn``'s own optimised IR, whether it has a loop of its own — a natural loop as the
    checks' gates find them; when it has none, its loop sits in a helper it calls)."""
    from . import loops as _loops
    text = llvm_ir(fn, signature)
    return text, bool(_loops.loops(text))


def helpers_text(fn, signature=None, kind: str = "asm") -> str:
    """Assembly (``kind="asm"``) or optimised IR (``"llvm"``) of the other functions of ``fn``'s
    own module compiled into its code and not inlined — the student's helper that holds the loop
    (labkit's and numpy's code lives in other modules) — or ``""`` when there are none."""
    from numba.core.itanium_mangler import mangle_identifier

    try:
        disp, args = _resolve(fn, signature)
        fd = disp.overloads[args].fndesc
        prefix = "_ZN" + "".join(mangle_identifier(p) for p in fd.modname.split("."))
        main = _own_symbols(disp, args)
        text = (llvm_ir if kind == "llvm" else asm)(disp, args, full=True)
    except Exception:  # noqa: BLE001 - no helpers found: the function alone
        return ""
    funcs = _ir_functions(text) if kind == "llvm" else _asm_functions(text)
    return "\n\n".join((f"{name}:\n" if kind == "asm" else "") + "\n".join(lines)
                       for name, lines in funcs.items()
                       if name.strip('"').startswith(prefix) and name.strip('"') != main)

