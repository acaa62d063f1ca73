"""Look inside numba functions: LLVM IR, assembly, vector-width reports, cross-CPU compiles,
the vectoriser's own remarks per loop, and source ↔ assembly annotation.

How the pieces get their text
-----------------------------
* ``llvm_ir`` / ``asm`` read the dispatcher's own compiled library.  Code loaded from numba's
  on-disk cache (``cache=True``) cannot be inspected, so labkit then recompiles a *fresh*
  dispatcher of ``fn.py_func`` with the same options (the user's dispatcher is never touched).
* ``compile_for`` captures numba's *unoptimised* LLVM modules while compiling such a fresh
  dispatcher, strips any target attributes, and lets llvmlite run the -O3 pipeline (new pass
  manager) and the code generator for the requested CPU.  Starting from unoptimised IR matters:
  the vector width is chosen by the vectoriser for *that* CPU, not inherited from the host.
  LLVM's tuning for Intel AVX-512 parts (skylake-avx512, icelake-server, sapphirerapids) and for
  x86-64-v4 *prefers 256-bit vectors*, exactly as numba does on such a machine; pass
  ``prefer_vector_width=512`` (or ``features="-prefer-256-bit"``) to see zmm code.  znver4/znver5
  use 512-bit vectors by default.
* ``remarks`` / ``annotate`` recompile a fresh ``debug=True`` dispatcher (bounds checks off,
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
import difflib
import functools
import html
import inspect as _pyinspect
import os
import re
import subprocess
import sys
import tempfile
import textwrap
import threading
import warnings
import weakref
from collections import Counter
from typing import Any

__all__ = [
    "llvm_ir", "asm", "vector_report", "vector_report_from_asm", "VectorReport",
    "compile_for", "show", "Listing", "diff", "Diff", "remarks", "Remarks", "LoopRemark",
    "annotate", "Annotation", "EXPLANATIONS", "explain", "known_cpus",
]

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
        return tuple(out)
    raise TypeError(f"signature must be None, numba types, a signature string or a tuple of "
                    f"example arguments, got {type(signature).__name__}.")


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
    """Compile a new dispatcher of ``fn.py_func`` (same options) for ``args``; never cached."""
    numba = _numba()
    disp = numba.njit(cache=False, **_fresh_options(fn, debug))(fn.py_func)
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


def _asm_functions(text: str) -> dict[str, list[str]]:
    """Split assembly into {function symbol: body lines} using ``.type x,@function`` labels."""
    names = set(m.group(1).strip('"') for m in _ASM_TYPE.finditer(text))
    out: dict[str, list[str]] = {}
    cur = None
    for line in text.splitlines():
        s = line.strip()
        if s.endswith(":") and not line.startswith((" ", "\t")):
            lab = s[:-1].strip('"')
            if lab in names:
                cur = lab
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


# --------------------------------------------------------------------------- vector report

_REG = re.compile(r"%([xyz])mm\d+\b")
_WIDTH = {"x": 128, "y": 256, "z": 512}
_REGNAME = {128: "xmm", 256: "ymm", 512: "zmm"}
_ARM_ARR = re.compile(r"\bv\d+\.(\d+)([bhsd])\b")
_ARM_BITS = {"b": 8, "h": 16, "s": 32, "d": 64}

_CATEGORIES = [
    ("gather", r"gather|scatter"),
    ("fma", r"^f(n)?m(add|sub)(sub|add)?\d*p[sdh]|^pmadd52"),
    ("popcount", r"^p?popcnt"),
    ("mask", r"movmsk"),
    ("add", r"^(add|sub|hadd|hsub|addsub)p[sdh]|^p(add|sub|hadd|hsub)|^psadbw"),
    ("mul", r"^mulp[sdh]|^pmul|^pmadd|^pdp"),
    ("div", r"^(div|sqrt|rcp|rsqrt)"),
    ("minmax", r"^(min|max)p|^p(min|max|abs)"),
    ("compare", r"^cmp\w*p[sdh]|^pcmp|^ptest|^fpclass"),
    ("logic", r"^(and|andn|or|xor)p[sdh]|^p(and|andn|or|xor)[dq]?$|^pternlog"),
    ("shift", r"^ps(ll|rl|ra)|^pro[lr]|^pshl|^pshr"),
    ("convert", r"^cvt|^pmov[sz]x|^pack|^pmov(us|s)?[qdw][bwd]$"),
    ("shuffle", r"^(shuf|unpck|perm|blend|insert|extract|align|compress|expand|broadcast)"
                r"|^p(shuf|unpck|perm|blend|align|insr|extr|compress|expand|broadcast)"
                r"|^movddup|^movs[hl]dup"),
    ("move", r"^mov|^pmov|^lddqu|^maskmov"),
    ("other", r""),
]
_CATEGORIES = [(c, re.compile(p)) for c, p in _CATEGORIES]
_COMPUTE = {"gather", "fma", "popcount", "add", "mul", "div", "minmax", "compare", "logic",
            "shift", "convert"}
_XMM_AMBIGUOUS = {"logic", "compare"}  # andpd/xorpd/cmpxxpd on xmm also appear in scalar code
_PLURAL = {"add": "vector adds/subs", "mul": "vector multiplies", "fma": "FMAs",
           "div": "vector divides/sqrts", "minmax": "vector min/max/abs",
           "compare": "vector compares", "popcount": "vector popcounts", "logic": "vector logic ops",
           "shift": "vector shifts", "convert": "vector conversions", "shuffle": "shuffles",
           "move": "vector loads/stores/moves", "gather": "gathers/scatters", "mask": "mask moves",
           "other": "other vector ops"}
_ARM_CATS = [("fma", r"^f?ml[as]"), ("popcount", r"^cnt"), ("add", r"^f?(add|sub)|^[su]?addl?v|^faddp"),
             ("mul", r"^f?mul"), ("div", r"^f(div|sqrt)"), ("minmax", r"^f?(min|max)|^abs"),
             ("compare", r"^f?cm"), ("logic", r"^(and|orr|eor|bic|bsl|bit|bif|not)"),
             ("shift", r"^[su]?(shl|shr|sra|ushr|sshr|sli|sri)"), ("convert", r"^[su]?cvt|^[su]xtl|^xtn|^fcvt"),
             ("move", r"^(ld|st|ldr|str|ldp|stp|mov|dup|ins|umov)"), ("shuffle", r"^(zip|uzp|trn|ext|tbl|rev)"),
             ("other", r"")]
_ARM_CATS = [(c, re.compile(p)) for c, p in _ARM_CATS]


def _classify_x86(mnem: str, ops: str):
    """Return (category, width_bits) for a packed SIMD instruction, None for anything else."""
    regs = _REG.findall(ops)
    if not regs or mnem in ("vzeroupper", "vzeroall"):
        return None
    width = max(_WIDTH[r] for r in regs)
    base = mnem[1:] if mnem.startswith("v") else mnem
    if not base.startswith("p") and "broadcast" not in base:
        if (re.search(r"s[sdh][lq]?$", base) or re.match(r"cvtt?s[sdh]2", base)
                or re.match(r"u?comis", base)):
            return None  # scalar SSE/AVX on the low lane: vaddsd, vmovsd, vcvtsi2sd, vucomisd…
    if base in ("movd", "movq") or re.match(r"p(insr|extr)[bwdq]$|insertps$|extractps$", base):
        return None  # moving one element between a GPR and a vector register
    reg_tokens = [t.strip() for t in ops.split(",")]
    all_regs = all(re.fullmatch(r"%[xyz]mm\d+", t) for t in reg_tokens if t)
    if re.match(r"p?xor", base) and all_regs and len(set(reg_tokens)) == 1:
        return None  # zeroing idiom: vxorps %xmm0, %xmm0, %xmm0
    cat = next(c for c, rx in _CATEGORIES if rx.search(base))
    if width == 128 and cat == "move" and all_regs:
        return None  # register copy; scalar double code uses vmovaps too
    return cat, width


def _classify_arm(mnem: str, ops: str):
    arr = _ARM_ARR.findall(ops)
    lanes = [(int(n), _ARM_BITS[t]) for n, t in arr]
    if not lanes or max(n for n, _ in lanes) < 2:
        if re.search(r"\bq\d+\b", ops) and mnem.startswith(("ldr", "str", "ldp", "stp")):
            return "move", 128
        return None
    width = max(n * b for n, b in lanes)
    cat = next(c for c, rx in _ARM_CATS if rx.search(mnem))
    return cat, width


@dataclasses.dataclass
class VectorReport:
    """Which SIMD instructions a compiled function uses; ``str()``/HTML give a one-line verdict."""

    vectorized: bool
    max_width_bits: int
    counts: dict
    instructions: Counter
    categories: Counter
    registers: dict
    ir_vector_types: Counter
    ir_vector_ops: Counter
    n_instructions: int
    target: str = "this machine"
    name: str = ""

    @property
    def widest_register(self) -> str:
        """Name of the widest vector register used by compute instructions ('' if none)."""
        return _REGNAME.get(self.max_width_bits, f"{self.max_width_bits}-bit" if self.max_width_bits else "")

    def summary(self) -> str:
        """One-line verdict: vectorised?, widest width, the main kinds of vector instructions."""
        if not self.vectorized:
            head = "vectorised: no"
            if self.counts:
                head += " (only vector loads/stores/shuffles, no vector arithmetic)"
        else:
            head = f"vectorised: yes, widest {self.max_width_bits}-bit"
            if self.widest_register:
                head += f" ({self.widest_register})"
        order = ["fma", "add", "mul", "div", "minmax", "popcount", "logic", "shift", "compare",
                 "convert", "gather", "shuffle", "move"]
        bits = [f"{self.categories[c]} {_PLURAL[c]}" for c in order if self.categories.get(c)]
        total = sum(self.counts.values())
        tail = ""
        if total:
            widths = ", ".join(f"{w}-bit: {n}" for w, n in sorted(self.counts.items(), reverse=True))
            tail = f"; {total} vector instructions ({widths}) of {self.n_instructions}"
        return head + (", " + ", ".join(bits[:5]) if bits else "") + tail

    def __repr__(self) -> str:
        return str(self)

    def __str__(self) -> str:
        top = self.instructions.most_common(6)
        s = self.summary()
        if top:
            s += "\n  top: " + ", ".join(f"{m}×{n}" for m, n in top)
        if self.ir_vector_types:
            s += "\n  IR vector types: " + ", ".join(f"{t}×{n}" for t, n in self.ir_vector_types.most_common(5))
        return s

    def _repr_html_(self) -> str:
        colour = "#1a7f37" if self.vectorized else "#b35900"
        mark = "✔" if self.vectorized else "✘"
        top = ", ".join(f"<code>{html.escape(m)}</code>×{n}" for m, n in self.instructions.most_common(6))
        irt = ", ".join(f"<code>{html.escape(t)}</code>×{n}" for t, n in self.ir_vector_types.most_common(5))
        regs = ", ".join(f"{k} {v}" for k, v in self.registers.items() if v)
        rows = [f"<div style='color:{colour};font-weight:bold'>{mark} {html.escape(self.summary())}</div>"]
        if top:
            rows.append(f"<div>top instructions: {top}</div>")
        if irt:
            rows.append(f"<div>IR vector types: {irt}</div>")
        if regs:
            rows.append(f"<div>register mentions: {regs} · target: {html.escape(self.target)}</div>")
        return "<div class='labkit-vector-report'>" + "".join(rows) + "</div>"


_IR_VTYPE = re.compile(r"<(\d+) x (i\d+|double|float|half|bfloat|ptr)>")
_IR_VOP = re.compile(r"=\s*(\w+)\s+(?:(?:nnan|ninf|nsz|arcp|contract|afn|reassoc|fast|nuw|nsw|exact|"
                     r"disjoint|samesign)\s+)*(<\d+ x [\w]+>)")
_IR_VCALL = re.compile(r"call\s+.*?@llvm\.([a-z.]+?)\.v(\d+)(i\d+|f64|f32)")


def _ir_analysis(ir_text: str):
    types, ops = Counter(), Counter()
    for line in ir_text.splitlines():
        s = line.strip()
        if not s or s.startswith(("define", "declare", ";", "!", "attributes")):
            continue
        types.update(m.group(0) for m in _IR_VTYPE.finditer(s))
        m = _IR_VOP.search(s)
        if m and m.group(1) not in ("load", "getelementptr", "alloca", "phi", "bitcast"):
            ops[f"{m.group(1)} {m.group(2)}"] += 1
        m = _IR_VCALL.search(s)
        if m:
            elt = {"f64": "double", "f32": "float"}.get(m.group(3), m.group(3))
            ops[f"{m.group(1)} <{m.group(2)} x {elt}>"] += 1
    return types, ops


def _iter_instructions(text: str):
    for line in text.splitlines():
        s = line.split("#")[0].split("//")[0].strip()
        if not s or s.startswith(".") or s.endswith(":") or s.startswith(";"):
            continue
        parts = s.split(None, 1)
        mnem = parts[0].lower()
        if mnem.startswith("{") or mnem in ("lock", "rep", "repne", "notrack"):
            continue
        yield mnem, parts[1] if len(parts) > 1 else ""


def vector_report_from_asm(text: str, ir: str = "", *, symbol: str | None = None,
                           target: str = "this machine") -> VectorReport:
    """Analyse assembly text (x86 AT&T or AArch64); with several functions keep ``symbol``'s body."""
    funcs = _asm_functions(text)
    if funcs:
        if symbol is not None:
            keep = [n for n in funcs if _is_own(n, symbol)]
        else:
            keep = [n for n in funcs if not n.startswith(("cfunc.", "_ZN7cpython", "NRT_", "nrt_"))]
        body = "\n".join("\n".join(funcs[n]) for n in (keep or list(funcs)))
    else:
        body = text
    counts, instr, cats = Counter(), Counter(), Counter()
    regs = {"xmm": 0, "ymm": 0, "zmm": 0}
    n = 0
    best = 0
    arm = bool(_ARM_ARR.search(body)) and not _REG.search(body)
    for mnem, ops in _iter_instructions(body):
        n += 1
        for r in _REG.findall(ops):
            regs[r + "mm"] += 1
        got = _classify_arm(mnem, ops) if arm else _classify_x86(mnem, ops)
        if got is None:
            continue
        cat, width = got
        counts[width] += 1
        instr[mnem] += 1
        cats[cat] += 1
        if cat in _COMPUTE and not (width == 128 and cat in _XMM_AMBIGUOUS and not arm):
            best = max(best, width)
    if ir and symbol is not None:
        irf = _ir_functions(ir)
        ir = "\n".join("\n".join(v) for k, v in irf.items() if _is_own(k, symbol)) or ir
    types, ops = _ir_analysis(ir) if ir else (Counter(), Counter())
    return VectorReport(vectorized=best > 0, max_width_bits=best, counts=dict(counts),
                        instructions=instr, categories=cats, registers=regs,
                        ir_vector_types=types, ir_vector_ops=ops, n_instructions=n, target=target)


def vector_report(fn, signature=None, *, cpu: str | None = None, features=None,
                  prefer_vector_width: int | None = None) -> VectorReport:
    """Did ``fn``'s loop vectorise and how wide (``cpu=``: as compiled for another CPU)."""
    disp, args = _resolve(fn, signature)
    main = _own_symbols(disp, args)
    if cpu is not None:
        ir_text, asm_text = _retarget(fn, args, cpu, features, prefer_vector_width)
        rep = vector_report_from_asm(asm_text, ir_text, symbol=main, target=cpu)
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rep = vector_report_from_asm(disp.inspect_asm(args), disp.inspect_llvm(args), symbol=main)
    rep.name = fn.__name__
    return rep


# --------------------------------------------------------------------------- compile_for

_RAW_IR: "weakref.WeakKeyDictionary[Any, dict]" = weakref.WeakKeyDictionary()


def _raw_modules(fn, args) -> tuple[list[str], str]:
    """Unoptimised LLVM modules numba generates for ``fn`` at ``args`` (and the main symbol)."""
    with _FRESH_LOCK:
        per = _RAW_IR.setdefault(fn, {})
        if args in per:
            return per[args]
    from numba.core import codegen as cg
    from numba.core.compiler_lock import global_compiler_lock

    captured: list[str] = []
    orig = cg.CPUCodeLibrary._optimize_functions

    def hook(self, ll_module):
        captured.append(str(ll_module))
        return orig(self, ll_module)

    with global_compiler_lock:  # every numba compile takes this lock, so the patch is private
        cg.CPUCodeLibrary._optimize_functions = hook
        try:
            disp = _compile_fresh(fn, args)
        finally:
            cg.CPUCodeLibrary._optimize_functions = orig
    result = (captured, _own_symbols(disp, args))
    with _FRESH_LOCK:
        _RAW_IR.setdefault(fn, {})[args] = result
    return result


@functools.lru_cache(maxsize=1)
def known_cpus() -> tuple[str, ...]:
    """CPU names LLVM (via llvmlite) accepts for this machine's target triple."""
    code = ("import llvmlite.binding as l; l.initialize_native_target(); "
            "l.initialize_native_asmprinter(); "
            "l.Target.from_triple(l.get_process_triple()).create_target_machine(cpu='help')")
    try:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
        text = out.stderr + out.stdout
    except Exception:  # noqa: BLE001
        return ()
    names = []
    in_cpus = False
    for line in text.splitlines():
        if line.startswith("Available CPUs"):
            in_cpus = True
            continue
        if line.startswith("Available features"):
            break
        m = re.match(r"^\s+(\S+)\s+- ", line)
        if in_cpus and m:
            names.append(m.group(1))
    return tuple(names)


@functools.lru_cache(maxsize=64)
def _check_cpu(cpu: str) -> str | None:
    """Compile a trivial function for ``cpu`` in a subprocess (LLVM aborts on some bad CPUs)."""
    code = ("import sys, llvmlite.binding as l; l.initialize_native_target(); "
            "l.initialize_native_asmprinter(); "
            "m = l.parse_assembly('define i64 @f(i64 %x) {\\n  ret i64 %x\\n}\\n'); "
            "m.triple = l.get_process_triple(); "
            "tm = l.Target.from_triple(m.triple).create_target_machine(cpu=sys.argv[1]); "
            "tm.emit_assembly(m)")
    out = subprocess.run([sys.executable, "-c", code, cpu], capture_output=True, text=True, timeout=60)
    if "not a recognized processor" in out.stderr:
        return "unknown"
    if out.returncode != 0:
        return out.stderr.strip().splitlines()[-1] if out.stderr.strip() else "LLVM failed"
    return None


_COMMON_CPUS = ("x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4", "haswell", "skylake",
                "skylake-avx512", "icelake-server", "sapphirerapids", "znver3", "znver4")


def _validate_cpu(cpu) -> str:
    if not isinstance(cpu, str) or not cpu.strip():
        raise TypeError(f"cpu must be a CPU name string such as 'haswell', got {cpu!r}.")
    cpu = cpu.strip()
    if cpu in ("host", "native"):
        import llvmlite.binding as llvm

        return llvm.get_host_cpu_name()
    problem = _check_cpu(cpu)
    if problem == "unknown":
        names = known_cpus()
        close = difflib.get_close_matches(cpu, names, n=3)
        hint = f" Did you mean {', '.join(close)}?" if close else ""
        common = [c for c in _COMMON_CPUS if not names or c in names]
        raise ValueError(f"unknown CPU {cpu!r} for LLVM.{hint} Try one of: {', '.join(common)} "
                         f"(labkit.inspect.known_cpus() lists all {len(names)}).")
    if problem:
        raise ValueError(f"cannot generate 64-bit code for CPU {cpu!r} ({problem}); "
                         f"pick a 64-bit CPU such as 'x86-64' or 'haswell'.")
    return cpu


def _features_string(features, prefer_vector_width) -> str:
    if features is None:
        feats = []
    elif isinstance(features, str):
        feats = [f.strip() for f in features.split(",") if f.strip()]
    elif isinstance(features, (list, tuple, set)):
        feats = [str(f).strip() for f in features]
    else:
        raise TypeError(f"features must be a string like '+avx2,-avx512f' or a list, got {features!r}.")
    feats = [f if f[:1] in "+-" else "+" + f for f in feats]
    if prefer_vector_width is not None:
        if prefer_vector_width not in (128, 256, 512):
            raise ValueError(f"prefer_vector_width must be 128, 256 or 512, got {prefer_vector_width!r}.")
        feats += {128: ["+prefer-128-bit"], 256: ["-prefer-128-bit", "+prefer-256-bit"],
                  512: ["-prefer-128-bit", "-prefer-256-bit"]}[prefer_vector_width]
    return ",".join(feats)


_TARGET_ATTR = re.compile(r'\s*"(target-cpu|target-features|tune-cpu|prefer-vector-width)"="[^"]*"')


def _retarget(fn, args, cpu, features=None, prefer_vector_width=None) -> tuple[str, str]:
    """(optimised IR, assembly) of ``fn`` at ``args`` compiled by llvmlite for ``cpu``."""
    import llvmlite.binding as llvm
    from numba.core.compiler_lock import global_compiler_lock

    cpu = _validate_cpu(cpu)
    feats = _features_string(features, prefer_vector_width)
    modules, _main = _raw_modules(fn, args)
    with global_compiler_lock:
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        mod = None
        for text in modules:
            m = llvm.parse_assembly(_TARGET_ATTR.sub("", text))
            if mod is None:
                mod = m
            else:
                mod.link_in(m)
        target = llvm.Target.from_triple(mod.triple or llvm.get_process_triple())
        with _StderrCapture() as cap:
            tm = target.create_target_machine(cpu=cpu, features=feats, opt=3, jit=False)
        bad = [ln for ln in cap.text.splitlines() if "not a recognized feature" in ln]
        if bad:
            raise ValueError(f"unknown CPU feature(s): {'; '.join(bad)}. Use LLVM names like "
                             f"'+avx2', '-avx512f', '+avx512vpopcntdq'.")
        mod.data_layout = str(tm.target_data)

        def run(level, loop, slp, extra=()):
            pto = llvm.create_pipeline_tuning_options(speed_level=level)
            pto.loop_vectorization = loop
            pto.slp_vectorization = slp
            pb = llvm.create_pass_builder(tm, pto)
            pm = pb.getModulePassManager()
            for name in extra:
                getattr(pm, name)()
            pm.add_refprune_pass()
            pm.run(mod, pb)

        # mirror numba: a cheap inlining pass, then the full -O3 pipeline with both vectorisers
        run(0, False, False, ("add_loop_rotate_pass", "add_instruction_combine_pass",
                              "add_jump_threading_pass"))
        run(3, True, True)
        return str(mod), tm.emit_assembly(mod)


def compile_for(fn, cpu: str, signature=None, features=None, *, full: bool = False,
                prefer_vector_width: int | None = None) -> str:
    """Assembly of ``fn`` recompiled by LLVM for another CPU ("x86-64", "haswell", "znver4", …)."""
    _require_dispatcher(fn)
    args = _signature_args(fn, signature)
    if fn.overloads.get(args) is None:
        _fresh(fn, args)  # type-check early so bad signatures give the friendly error
    ir_text, asm_text = _retarget(fn, args, cpu, features, prefer_vector_width)
    if full:
        return asm_text
    main = _raw_modules(fn, args)[1]
    return _own_text(asm_text, main, "asm")


# --------------------------------------------------------------------------- show / diff

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
                or re.match(r"^(?:cbn?z|tbn?z)\s+.*,\s*([.\w$]+)\s*$", s)
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
                vec = sum(1 for m, o in _iter_instructions(seg) if _classify_x86(m, o))
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


# --------------------------------------------------------------------------- remarks

# (substring of LLVM's remark text, plain-language explanation, usual fix)
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
     "Remove the break (compute a mask and reduce it), use error_model='numpy' for divisions, "
     "check bounds before the loop."),
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


class _StderrCapture:
    """Redirect the C-level file descriptor 2 into a temporary file for the duration."""

    def __enter__(self):
        self.text = ""
        try:
            sys.stderr.flush()
        except Exception:  # noqa: BLE001
            pass
        self._tmp = tempfile.TemporaryFile(mode="w+b")
        self._saved = os.dup(2)
        os.dup2(self._tmp.fileno(), 2)
        return self

    def __exit__(self, *exc):
        try:
            sys.stderr.flush()
        except Exception:  # noqa: BLE001
            pass
        os.dup2(self._saved, 2)
        os.close(self._saved)
        self._tmp.seek(0)
        self.text = self._tmp.read().decode("utf-8", "replace")
        self._tmp.close()
        return False


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
    file, src, loops = _source_info(fn.py_func)
    base = os.path.basename(file)
    pranges = [l for l in loops if l[2]]
    entries = _parse_remarks(text)
    groups, pending = [], []
    for e in entries:
        pending.append(e)
        if _is_terminal(e[3]):
            groups.append(pending)
            pending = []
    if pending:
        groups.append(pending)
    result = Remarks()
    hidden = 0
    seen = set()
    for g in groups:
        located = [e for e in g if e[1] > 0]
        if not located:
            hidden += 1
            continue
        term = g[-1] if g[-1][1] > 0 else located[-1]
        rfile, rline = term[0], term[1]
        parallel = False
        if os.path.basename(rfile) != base:
            if rfile == "<string>" and pranges:
                parallel = True  # numba outlines a prange body into a generated gufunc
            else:
                hidden += 1
                continue
        msgs = [e[3] for e in g]
        if any("already been vectorized" in m for m in msgs) and len(set(msgs)) == 1:
            continue  # remainder/epilogue copy of an already-vectorised loop
        m = next((_VEC_DONE.search(x) for x in msgs if _VEC_DONE.search(x)), None)
        vec = m is not None
        reasons = [x for x in msgs if not _is_terminal(x) or "interleaving is not beneficial" in x
                   and not any("vectorization is not beneficial" in y for y in msgs)]
        reasons = [_clean_reason(x) for x in reasons if x != "loop not vectorized"]
        if parallel:
            loop = pranges[0]
            line = loop[0]
            reason_line = 0
        else:
            loop = _innermost_loop(loops, rline)
            line = loop[0] if loop else rline
            rl = [e[1] for e in g if e[3] != term[3] and e[1] > 0]
            reason_line = rl[0] if rl else 0
        reason = "; ".join(dict.fromkeys(reasons)) if not vec else ""
        if not vec and not reason:
            reason = "no reason given by LLVM"
        expl, fix = explain(reason) if reason else ("", "")
        key = (line, vec, reason)
        if key in seen:
            continue
        seen.add(key)
        result.append(LoopRemark(file=file, line=line, vectorized=vec,
                                 width=int(m.group(1)) if m else 0,
                                 interleave=int(m.group(2)) if m else 0,
                                 reason=reason, reason_line=reason_line, explanation=expl, fix=fix,
                                 source=src.get(line, ""), parallel=parallel, raw=tuple(msgs)))
    # one verdict per loop line: LLVM sometimes keeps several versions of a loop (e.g. unswitched
    # on a parameter); the loop counts as vectorised when one version is, the others become notes
    final = Remarks()
    by_line: dict[int, list] = {}
    for r in result:
        by_line.setdefault(r.line, []).append(r)
    for line, rs in by_line.items():
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
    final.hidden = hidden
    notes = []
    if pranges:
        notes.append("parallel=True: numba moves each prange body into a generated function; its "
                     "loop remarks are shown on the prange line.")
    if hidden:
        notes.append(f"{hidden} remark group(s) from code without line information (numba runtime "
                     f"helpers or already-compiled callees) are not shown.")
    final.note = " ".join(notes)
    return final


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


# --------------------------------------------------------------------------- annotate

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
