"""The vector classifier: which SIMD instructions a compiled function uses (x86 xmm/ymm/zmm,
AArch64 NEON v and SVE z registers, RISC-V V), how wide, of what kind, and the IR's vector types
→ :class:`VectorReport`.  SVE and RVV vectors are scalable (their length is the hardware's, known
only at run time): they count as their architectural minimum, 128 bits, with ``scalable=True``."""
from __future__ import annotations

import dataclasses
import html
import re
import warnings
from collections import Counter

from .ir import _asm_functions, _ir_functions, _is_own, _own_symbols, _resolve
from .retarget import _raw_modules, _retarget

_REG = re.compile(r"%([xyz])mm\d+\b")
_WIDTH = {"x": 128, "y": 256, "z": 512}
_REGNAME = {128: "xmm", 256: "ymm", 512: "zmm"}
_ARM_ARR = re.compile(r"\bv\d+\.(\d+)([bhsd])\b")
_ARM_BITS = {"b": 8, "h": 16, "s": 32, "d": 64}
_APPLE_ARR = re.compile(r"^([a-z0-9]+)\.(\d+)([bhsd])$")  # Apple syntax: fadd.2d v0, v1, v2
_SVE_REG = re.compile(r"\bz(?:[12]?\d|3[01])(?:\.[bhsdq])?\b")
_SVE_GATHER = re.compile(r"\[[^\]]*\bz\d+")  # a z register inside the address: gather/scatter
_RV_VREG = re.compile(r"\bv(?:[12]?\d|3[01])(?:\.t)?\b")

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
             ("mul", r"^f?mul|^[su]dot"), ("div", r"^f(div|sqrt)"), ("minmax", r"^f?(min|max)|^abs"),
             ("compare", r"^f?cm"), ("logic", r"^(and|orr|eor|bic|bsl|bit|bif|not)"),
             ("shift", r"^[su]?(shl|shr|sra|ushr|sshr|sli|sri)"), ("convert", r"^[su]?cvt|^[su]xtl|^xtn|^fcvt"),
             ("move", r"^(ld|st|ldr|str|ldp|stp|mov|dup|ins|umov)"), ("shuffle", r"^(zip|uzp|trn|ext|tbl|rev)"),
             ("other", r"")]
_ARM_CATS = [(c, re.compile(p)) for c, p in _ARM_CATS]
_SVE_CATS = [("fma", r"^f?n?m(ad|sb|la|ls)$"), ("add", r"^f?add[av]$|^[su]addv$"),
             ("minmax", r"^f?[su]?(min|max)(nm)?v$"),
             ("shuffle", r"^(sel|splice|compact|insr|lasta|lastb|clast[ab]|index)$"),
             ("move", r"^(movprfx|ld1r\w*|ldff1\w*|ldnf1\w*|ld[1-4]\w*|st[1-4]\w*)$")]
_SVE_CATS = [(c, re.compile(p)) for c, p in _SVE_CATS]
_RV_CATS = [("gather", r"^[ls][uo]xei"), ("fma", r"^f?w?n?m(acc|add|sac|sub)$"), ("popcount", r"^cpop$"),
            ("add", r"^f?w?(add|sub|rsub)u?$|^s(add|sub)u?$|^f?w?red(o|u)?sumu?$"),
            ("mul", r"^f?w?mul"), ("div", r"^f?(div|rem)u?$|^fsqrt|^frec7|^frsqrt7"),
            ("minmax", r"^f?(red)?(min|max)u?$"),
            ("compare", r"^mf?(seq|sne|sltu?|sleu?|sgtu?|sgeu?|eq|ne|lt|le|gt|ge)$"),
            ("logic", r"^(and|or|xor|not)$|^m(and|or|xor|nand|nor|andn|orn|xnor|not)$|^fsgnj"),
            ("shift", r"^(sll|srl|sra|nsrl|nsra|ssrl|ssra)$"), ("convert", r"^f?w?n?cvt|^[sz]ext"),
            ("shuffle", r"^(f?slide|rgather|compress|f?merge)"),
            ("move", r"^[ls]\w*\d|^[ls]m$|^f?mv$|^mv|^id$"), ("other", r"")]
_RV_CATS = [(c, re.compile(p)) for c, p in _RV_CATS]


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
    """(category, width_bits) for an AArch64 NEON or SVE instruction, None for anything else."""
    if _SVE_REG.search(ops):
        if _SVE_GATHER.search(ops):
            return "gather", 128
        cat = next((c for c, rx in _SVE_CATS if rx.search(mnem)), None)
        return cat or next(c for c, rx in _ARM_CATS if rx.search(mnem)), 128
    arr = _ARM_ARR.findall(ops)
    m = _APPLE_ARR.match(mnem)
    if m:  # Apple syntax puts the arrangement on the mnemonic: cnt.16b v0, v0
        mnem, arr = m.group(1), [(m.group(2), m.group(3))]
    lanes = [(int(n), _ARM_BITS[t]) for n, t in arr]
    if not lanes or max(n for n, _ in lanes) < 2:
        if re.search(r"\bq\d+\b", ops) and mnem.startswith(("ldr", "str", "ldp", "stp")):
            return "move", 128
        return None
    width = max(n * b for n, b in lanes)
    cat = next(c for c, rx in _ARM_CATS if rx.search(mnem))
    return cat, width


def _classify_riscv(mnem: str, ops: str):
    """(category, 128) for a RISC-V vector (V extension) instruction, None for anything else."""
    if not mnem.startswith("v") or mnem.startswith("vset") or not _RV_VREG.search(ops):
        return None
    base, _, form = mnem[1:].partition(".")
    if base in ("mv", "fmv") and form in ("x.s", "f.s", "s.x", "s.f"):
        return None  # one element between a scalar and a vector register
    if base == "cpop" and form == "m":
        return None  # counts mask bits into a scalar register
    return next(c for c, rx in _RV_CATS if rx.search(base)), 128


_X86_ARCH = re.compile(r"%(?:r[a-z0-9]+|e[a-z]{2}|[xyz]mm\d+|k[0-7])\b")  # not RISC-V's %pcrel_hi()
_RV_ARCH = re.compile(r"^\s*vset(i)?vli?\b|\d\((?:a[0-7]|t[0-6]|s\d+|sp|ra|gp|tp)\)", re.M)


def _asm_arch(body: str) -> str:
    """'x86-64', 'aarch64' or 'riscv64' from the look of the assembly text."""
    if _X86_ARCH.search(body):
        return "x86-64"
    if _RV_ARCH.search(body):
        return "riscv64"
    if re.search(r"\b[xw](?:[12]?\d|30)\b|\[\s*(?:x\d|sp)", body):
        return "aarch64"
    return "x86-64"


def _classify(mnem: str, ops: str, arch: str):
    if arch == "aarch64":
        return _classify_arm(mnem, ops)
    if arch == "riscv64":
        return _classify_riscv(mnem, ops)
    return _classify_x86(mnem, ops)


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
    arch: str = "x86-64"
    scalable: bool = False

    @property
    def widest_register(self) -> str:
        """Name of the widest vector register used by compute instructions ('' if none)."""
        if not self.max_width_bits:
            return ""
        if self.arch == "aarch64":
            return "z" if self.scalable else "v"  # SVE / NEON
        if self.arch == "riscv64":
            return "v"
        return _REGNAME.get(self.max_width_bits, f"{self.max_width_bits}-bit")

    def summary(self) -> str:
        """One-line verdict: vectorised?, widest width, the main kinds of vector instructions."""
        if not self.vectorized:
            head = "vectorised: no"
            if self.counts:
                head += " (only vector loads/stores/shuffles, no vector arithmetic)"
        elif self.scalable and self.arch == "aarch64":
            head = "vectorised: yes, scalable SVE vectors (z registers, 128 to 2048 bits: the hardware's length)"
        elif self.scalable:
            head = "vectorised: yes, scalable RVV vectors (v registers, VLEN bits: the hardware's length)"
        elif self.arch == "aarch64":
            head = f"vectorised: yes, widest {self.max_width_bits}-bit (NEON v registers)"
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
        s = line.split("#")[0].split("//")[0].split(";")[0].strip()
        if not s or s.startswith(".") or s.endswith(":") or s.startswith(";"):
            continue
        parts = s.split(None, 1)
        mnem = parts[0].lower()
        if mnem.startswith("{") or mnem in ("lock", "rep", "repne", "notrack"):
            continue
        yield mnem, parts[1] if len(parts) > 1 else ""


def vector_report_from_asm(text: str, ir: str = "", *, symbol: str | None = None,
                           target: str = "this machine") -> VectorReport:
    """Analyse assembly text (x86 AT&T, AArch64 NEON/SVE in GNU or Apple syntax, RISC-V V); with
    several functions keep ``symbol``'s body."""
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
    regs = {"xmm": 0, "ymm": 0, "zmm": 0, "v": 0, "z": 0}
    n = 0
    best = 0
    scalable = False
    arch = _asm_arch(body)
    x86 = arch == "x86-64"
    for mnem, ops in _iter_instructions(body):
        n += 1
        if x86:
            for r in _REG.findall(ops):
                regs[r + "mm"] += 1
        elif arch == "aarch64":
            regs["z"] += len(_SVE_REG.findall(ops))
            regs["v"] += len(re.findall(r"\bv(?:[12]?\d|3[01])\b", ops))
        else:
            regs["v"] += len(_RV_VREG.findall(ops))
        got = _classify(mnem, ops, arch)
        if got is None:
            continue
        cat, width = got
        counts[width] += 1
        instr[mnem] += 1
        cats[cat] += 1
        if cat in _COMPUTE and not (width == 128 and cat in _XMM_AMBIGUOUS and x86):
            best = max(best, width)
            scalable = scalable or arch == "riscv64" or (arch == "aarch64" and bool(_SVE_REG.search(ops)))
    if ir and symbol is not None:
        irf = _ir_functions(ir)
        ir = "\n".join("\n".join(v) for k, v in irf.items() if _is_own(k, symbol)) or ir
    types, ops = _ir_analysis(ir) if ir else (Counter(), Counter())
    return VectorReport(vectorized=best > 0, max_width_bits=best, counts=dict(counts),
                        instructions=instr, categories=cats, registers=regs,
                        ir_vector_types=types, ir_vector_ops=ops, n_instructions=n, target=target,
                        arch=arch, scalable=scalable)


def vector_report(fn, signature=None, *, cpu: str | None = None, features=None,
                  prefer_vector_width: int | None = None) -> VectorReport:
    """Did ``fn``'s loop vectorise and how wide (``cpu=``: as compiled for another CPU)."""
    disp, args = _resolve(fn, signature)
    main = _own_symbols(disp, args)
    if cpu is not None:
        ir_text, asm_text = _retarget(fn, args, cpu, features, prefer_vector_width)
        main = _raw_modules(fn, args)[1]  # the retargeted code is a fresh compile's: its symbol
        rep = vector_report_from_asm(asm_text, ir_text, symbol=main, target=cpu)
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rep = vector_report_from_asm(disp.inspect_asm(args), disp.inspect_llvm(args), symbol=main)
    rep.name = fn.__name__
    return rep
