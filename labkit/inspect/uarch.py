"""Why that speed: the hot loop's predicted bound, from OSACA's port model of a core.

:func:`predict` takes the loop :func:`labkit.inspect.show` marks as hot (the host's code, or the
code LLVM emits for another CPU with ``cpu=``), hands it to OSACA (Open Source Architecture Code
Analyzer, a pure-Python analyser with port and latency tables for Intel, AMD and Arm cores) and
returns per loop iteration — and per element when the loop's step can be read — the throughput
bound (the busiest port and its cycles), the longest loop-carried dependency and its
instructions, and which of the two wins. :meth:`Prediction.explain` puts a measured number of
cycles per element beside it in one computed sentence.

OSACA models a steady state with every load in L1 and a perfect front end: a measured loop far
above its bound is waiting on memory (or the front end, or a slower clock), which the sentence
says.
"""
from __future__ import annotations

import functools
import re
import warnings
from dataclasses import dataclass, field

__all__ = ["predict", "Prediction", "osaca_model", "MODELS", "FAMILIES"]

#: LLVM CPU name → (OSACA model, approximation note or "")
MODELS: dict[str, tuple[str, str]] = {
    "sandybridge": ("SNB", ""), "corei7-avx": ("SNB", ""),
    "ivybridge": ("IVB", ""), "core-avx-i": ("IVB", ""),
    "haswell": ("HSW", ""), "core-avx2": ("HSW", ""), "broadwell": ("BDW", ""),
    "skylake": ("SKX", "Skylake-SP model for the client Skylake core (same ports, no AVX-512)"),
    "skylake-avx512": ("SKX", ""), "skx": ("SKX", ""),
    "cannonlake": ("SKX", "Skylake-SP model for Cannon Lake (a Skylake core with AVX-512)"),
    "cascadelake": ("CSX", ""), "cooperlake": ("CSX", "Cascade Lake model"),
    "icelake-client": ("ICL", ""), "icelake-server": ("ICX", ""),
    "tigerlake": ("ICL", "Ice Lake model for Tiger Lake (a close relative)"),
    "rocketlake": ("ICL", "Ice Lake model for Rocket Lake (the same Sunny Cove core)"),
    "sapphirerapids": ("SPR", ""), "emeraldrapids": ("SPR", "Sapphire Rapids model"),
    "graniterapids": ("SPR", "Sapphire Rapids model for Granite Rapids (Redwood Cove)"),
    "graniterapids-d": ("SPR", "Sapphire Rapids model for Granite Rapids (Redwood Cove)"),
    "alderlake": ("SPR", "Sapphire Rapids (Golden Cove) model for the performance cores"),
    "raptorlake": ("SPR", "Sapphire Rapids (Golden Cove) model for the performance cores"),
    "meteorlake": ("SPR", "Sapphire Rapids (Golden Cove) model; Redwood Cove is close"),
    "znver1": ("ZEN1", ""), "znver2": ("ZEN2", ""), "znver3": ("ZEN3", ""), "znver4": ("ZEN4", ""),
    "znver5": ("ZEN4", "Zen 4 model; Zen 5 has wider vector and load units, so it may beat it"),
    "apple-m1": ("M1", ""), "apple-a14": ("M1", ""),        # the same Firestorm core
    "apple-m2": ("M1", "Apple M1 model"),
    "apple-m3": ("M1", "Apple M1 model"), "apple-m4": ("M1", "Apple M1 model"),
    "neoverse-n1": ("N1", ""), "neoverse-v2": ("V2", ""), "grace": ("V2", ""),  # V2 cores
    "neoverse-v1": ("V2", "Neoverse V2 model for V1"), "neoverse-n2": ("V2", "Neoverse V2 model"),
    "neoverse-512tvb": ("V2", "Neoverse V2 model for V1"),
    "cortex-a76": ("N1", "Neoverse N1 model: N1 is the server version of the Cortex-A76 core"),
    "cortex-a76ae": ("N1", "Neoverse N1 model: N1 is the server version of the Cortex-A76 core"),
    "a64fx": ("A64FX", ""), "cortex-a72": ("A72", ""), "thunderx2t99": ("TX2", ""),
    "tsv110": ("TSV110", ""),
}

#: families of LLVM names without a model of their own, by pattern: (pattern, model, note with
#: {cpu}) — a later core of a line OSACA models, where the nearest model is plain
FAMILIES: tuple[tuple[str, str, str], ...] = (
    (r"(arrowlake.*|lunarlake|pantherlake|wildcatlake|novalake|diamondrapids)", "SPR",
     "Sapphire Rapids (Golden Cove) model, the newest Intel core OSACA has; {cpu}'s "
     "performance cores are later and wider, so they may beat it"),
    (r"znver([5-9]|\d\d)", "ZEN4", "Zen 4 model, the newest AMD core OSACA has; {cpu} is later "
     "and may beat it"),
    (r"apple-(m\d+|a1[5-9]|a[2-9]\d|latest)", "M1", "Apple M1 model, the only Apple core OSACA "
     "has; {cpu} is later and may beat it"),
    (r"neoverse-(v[3-9]\w*|n3)", "V2", "Neoverse V2 model, the newest Arm server core OSACA "
     "has; {cpu} is later and may beat it"),
    (r"cortex-(a7[78]\w*|x1\w*)", "N1", "Neoverse N1 (Cortex-A76) model for {cpu}, a later and "
     "wider descendant of the A76"),
    (r"cortex-(a71\d|a72\d|x[2-9]\w*|x9\d\d)", "V2", "Neoverse V2 (Cortex-X3 class) model for "
     "{cpu}, a core of the same generations"),
)

#: cores where no model is near enough to stand in: what they are, and the nearest models
_NO_MODEL: tuple[tuple[str, str, str], ...] = (
    (r"(bonnell|atom|silvermont|slm|goldmont.*|tremont|gracemont|sierraforest|grandridge|"
     r"clearwaterforest|knl|knm|lakemont)",
     "an Intel Atom-line (E-core) or Xeon Phi core; OSACA models only the big cores, which "
     "would understate its cycles", "skylake-avx512, icelake-client, sapphirerapids"),
    (r"(core2|penryn|nehalem|corei7|westmere|yonah|prescott|nocona|pentium.*|i[3-6]86)",
     "an Intel core older than Sandy Bridge, the oldest Intel core OSACA models",
     "sandybridge, haswell"),
    (r"(k[678]\w*|athlon.*|opteron.*|amdfam10|barcelona|btver\d|bdver\d|geode)",
     "an AMD core older than Zen, the oldest AMD core OSACA models", "znver1, znver2"),
    (r"(apple-a([7-9]|1[0-3])|cyclone)", "an Apple core older than the M1's (A14)", "apple-m1"),
    (r"(cortex-\w+|neoverse-\w+|ampere\w*|oryon\w*|exynos\w*|falkor|kryo|saphira|carmel|"
     r"thunderx\w*)", "an Arm core OSACA has no model of", "neoverse-n1, neoverse-v2, "
     "cortex-a72, apple-m1"),
)

_GENERIC = r"(generic|x86-64(-v[1-4])?|x86_64|i386|aarch64|arm64|armv[89][\w.-]*)"


def osaca_model(cpu: str, *, host: bool = False) -> tuple[str, str]:
    """(OSACA model, approximation note) for an LLVM CPU name — its own model, or the nearest
    one with the approximation named (:data:`FAMILIES`: ``arrowlake`` → Sapphire Rapids,
    ``znver6`` → Zen 4, ``apple-m5`` → M1). ValueError with a clear message when none fits: a
    generic target (``x86-64``, ``generic``: an instruction set, not a core) or a core no model
    is near, naming the nearest models. ``host``: the name is the CPU numba compiles for here
    (the message then says how to name another)."""
    key = str(cpu).strip().lower()
    if key in MODELS:
        return MODELS[key]
    for pattern, model, note in FAMILIES:
        if re.fullmatch(pattern, key):
            return model, note.format(cpu=key)
    where = (" (the CPU numba compiles for here; NUMBA_CPU_NAME sets it)" if host else "")
    if re.fullmatch(_GENERIC, key):
        raise ValueError(
            f"no OSACA core model for a generic target: {cpu!r}{where} names an instruction set, "
            "not a core, and OSACA's tables are per core — pass cpu= the core to predict for, "
            "e.g. cpu='skx' (Skylake-SP), 'znver4', 'neoverse-v2' or 'apple-m1' "
            "(labkit.inspect.uarch.MODELS lists them all)")
    for pattern, what, nearest in _NO_MODEL:
        if re.fullmatch(pattern, key):
            raise ValueError(f"no OSACA core model for {cpu!r}{where}: it is {what}; the nearest "
                             f"models are {nearest} — pass cpu= one of those to see that core's "
                             "bound (not this one's)")
    import difflib
    close = difflib.get_close_matches(key, list(MODELS), n=4, cutoff=0.6)
    arm = re.match(r"(apple|cortex|neoverse|a64fx|thunderx|tsv|ampere|grace)", key)
    nearest = close or (["neoverse-v2", "neoverse-n1", "apple-m1"] if arm else
                        ["sapphirerapids", "skylake-avx512", "znver4"])
    raise ValueError(f"no OSACA core model for {cpu!r}{where}: an LLVM name labkit does not "
                     f"know — pass cpu= a core that has one, e.g. {', '.join(nearest)} "
                     "(labkit.inspect.uarch.MODELS lists them all)")


def _host_model(cpu: str) -> tuple[str, str]:
    """:func:`osaca_model` for the CPU numba compiles for here; a name LLVM gives a core newer
    than its tables (no family pattern yet) falls back on the host's vendor: the newest Intel or
    AMD model, the approximation named."""
    try:
        return osaca_model(cpu, host=True)
    except ValueError:
        if re.fullmatch(_GENERIC, str(cpu).lower()) or any(
                re.fullmatch(p, str(cpu).lower()) for p, _, _ in _NO_MODEL):
            raise
        from labkit import hardware
        name = str(hardware.info().get("cpu") or "")
        for vendor, model, label in (("Intel", "SPR", "Sapphire Rapids (Golden Cove)"),
                                     ("AMD", "ZEN4", "Zen 4")):
            if re.search(rf"\b{vendor}\b", name, re.I):
                return model, (f"{label} model, the newest {vendor} core OSACA has, for this "
                               f"{name} (LLVM calls it {cpu!r}): a later core may beat it")
        raise


@dataclass
class Prediction:
    """OSACA's bound for one loop: cycles per iteration (and per element when known)."""

    cpu: str                    # the LLVM target analysed
    model: str                  # the OSACA model used
    approximation: str          # "" or what the model stands in for
    loop: list[str]             # the loop's instructions
    port: str                   # the busiest port
    port_cycles: float          # its cycles per iteration: the throughput bound
    lcd_cycles: float           # the longest loop-carried dependency per iteration
    lcd_instructions: list[str] = field(default_factory=list)
    critical_path: float = 0.0  # one iteration's latency path (not a bound across iterations)
    elements: int | None = None  # elements per iteration, when the loop's step was read
    unknown: list[str] = field(default_factory=list)  # instructions the model has no data for
    instructions: int = 0       # instructions in the loop

    @property
    def bound(self) -> str:
        """"ports" (throughput) or "dependency" (a loop-carried chain)."""
        return "dependency" if self.lcd_cycles > self.port_cycles else "ports"

    @property
    def cycles_per_iteration(self) -> float:
        return max(self.port_cycles, self.lcd_cycles)

    @property
    def cycles_per_element(self) -> float | None:
        return self.cycles_per_iteration / self.elements if self.elements else None

    def _what(self) -> str:
        if self.bound == "dependency":
            counts: dict[str, int] = {}
            for ln in self.lcd_instructions:
                counts[ln] = counts.get(ln, 0) + 1
            chain = ", ".join((f"{n} × {ln}" if n > 1 else ln)
                              for ln, n in list(counts.items())[:3]) or "a loop-carried chain"
            return f"the loop-carried dependency ({chain}: {self.lcd_cycles:g} cycles per iteration)"
        return f"port {self.port} ({self.port_cycles:.2f} cycles per iteration)"

    def summary(self) -> str:
        """The bound in a few words, without the model's name: "port 0, 4.00 cycles per
        element (a lower bound: 32 of 55 instructions not in the model)"."""
        per = self.cycles_per_element
        what = "a loop-carried dependency" if self.bound == "dependency" else f"port {self.port}"
        amount = (f"{per:.2f} cycles per element" if per is not None
                  else f"{self.cycles_per_iteration:.2f} cycles per loop iteration")
        low = (f" (a lower bound: {len(self.unknown)} of {self.instructions} instructions are "
               "not in the model's tables)" if self.unknown else "")
        return f"{what}, {amount}{low}"

    def explain(self, measured: float | None = None) -> str:
        """One sentence: the bound that wins and, given ``measured`` cycles per element, how
        close the loop runs to it and what that suggests."""
        per = self.cycles_per_element
        model = self.model + (f" — {self.approximation}" if self.approximation else "")
        head = (f"OSACA ({model}) bounds this loop by {self._what()}"
                + (f" = {per:.2f} cycles per element" if per is not None else ""))
        if self.unknown:
            head += (f" — a lower bound: {len(self.unknown)} of its {self.instructions} "
                     f"instructions (e.g. {self.unknown[0].split()[0]}) are not in the model's "
                     "tables and count as free")
        if measured is None or per is None:
            return head + "."
        if not (measured > 0):
            raise ValueError(f"measured must be positive cycles per element, got {measured!r}")
        r = measured / per
        tail = _verdict(r, self.bound, len(self.unknown))
        if r > 1.25:
            busy = _busy()
            if busy:
                tail += f" — or other jobs on this machine ({busy}), which slow any measurement"
        return f"{head}; it runs at {measured:.2f}, {r:.2f}× the bound: {tail}."

    def __str__(self) -> str:
        return self.explain()


def _verdict(r: float, bound: str = "ports", unknown: int = 0) -> str:
    """What measured ÷ predicted cycles per element suggests, in a few words (``unknown``:
    instructions the model has no data for, so the bound is a lower bound)."""
    if unknown and r > 1.25:
        return (f"above a lower bound: the model counts {unknown} instructions as free (not "
                "in its tables) and they may be the limit — not necessarily memory")
    if r < 0.8:
        return ("faster than the model allows: the model is pessimistic for this core "
                "(or the clock measured is not the one the loop ran at)")
    if r <= 1.25:
        return ("the dependency chain is the limit, as predicted" if bound == "dependency"
                else "the ports are the limit, as predicted")
    if r <= 2.5:
        return ("above the bound: part of the time goes to what the model leaves out — "
                "cache misses, the front end, a lower clock")
    return "far above the bound: look at memory — the loads do not come from L1"


def _busy() -> str:
    """'load 3.1 on 2 cores' when the 1-minute load average is at least half the cores, else ''."""
    import os
    try:
        one, cores = os.getloadavg()[0], os.cpu_count() or 1
    except (AttributeError, OSError):
        return ""
    return f"load {one:.1f} on {cores} cores" if one >= 0.5 * cores else ""


def _hot_loop_text(fn, signature, cpu: str | None, loop: str | None = None) -> list[str]:
    from .vector import _asm_arch, _classify, _iter_instructions
    from .views import show
    listing = show(fn, "asm", signature, cpu=cpu)
    hot = listing.hot_loop()
    if hot is None:
        raise ValueError(f"{getattr(fn, '__name__', 'the function')} has no loop in its "
                         "compiled code (a loop in a helper LLVM did not inline is not analysed)")
    lines = listing.text.splitlines()
    if loop is not None:          # the innermost loop with the most instructions of that kind
        def count(span):
            seg = "\n".join(lines[span[0]:span[1] + 1])
            arch = _asm_arch(seg)
            return sum(1 for m, o in _iter_instructions(seg)
                       if (_classify(m, o, arch) or ("",))[0] == loop)
        best = max(listing._inner(), key=lambda sp: (count(sp), sp[1] - sp[0]))
        if count(best) == 0:
            raise ValueError(f"{getattr(fn, '__name__', 'the function')} has no innermost loop "
                             f"with {loop!r} vector instructions (kinds: fma, add, mul, minmax, "
                             "popcount, gather, shuffle, move, …)")
        hot = best
    lines = lines[hot[0]:hot[1] + 1]
    return [ln for ln in lines if ln.strip() and not ln.strip().startswith(("#", ".", "//"))
            or re.match(r"^\s*[.\w$]+:", ln)]


# ------------------------------------------------------------------ elements per loop iteration
#
# The loop's registers are followed through one iteration as linear forms of their values at the
# loop's head ({register: coefficient, "#": constant}; "?" for a value the reading cannot follow:
# a load, a shift right, a conditional move). A register whose value at the loop's end is its
# own value plus k steps by k per iteration (a copy of another register steps with it). An
# address the loop reads or writes that moves with such a register says how many bytes of an
# array one iteration covers; with the element size of the function's arrays that is the
# number of elements. A register that only counts iterations (``sub x10, x10, #1``, ``decq``)
# feeds no address and so says nothing. When the addresses disagree, or no address moves, the
# count is None: a wrong count would be worse than none.

#: SVE vector length in bits of the cores whose LLVM name fixes it (``incb``/``incd`` step by it)
SVE_BITS = {"neoverse-v2": 128, "neoverse-n2": 128, "neoverse-v1": 256, "a64fx": 512}

_OPAQUE = {"?": 1}


def _lin_add(a: dict, b: dict, k: int = 1) -> dict:
    out = dict(a)
    for o, c in b.items():
        if o == "?":
            out["?"] = 1
        else:
            out[o] = out.get(o, 0) + k * c
    return {o: c for o, c in out.items() if c or o == "?"}


def _lin_scale(a: dict, k: int) -> dict:
    return {o: (1 if o == "?" else c * k) for o, c in a.items() if o == "?" or c * k}


def _imm(tok: str) -> int | None:
    try:
        return int(tok.strip().lstrip("#$"), 0)
    except ValueError:
        return None


def _split_operands(s: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for ch in s:
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return out + ([cur.strip()] if cur.strip() else [])


def _x86_gpr(tok: str) -> str | None:
    """'%eax' → 'rax', '%r9d' → 'r9'; None for anything but a general-purpose register."""
    r = tok.strip().split()[0].lstrip("%").lower() if tok.strip() else ""
    m = re.fullmatch(r"r(\d+)[dwb]?", r)
    if m and 8 <= int(m.group(1)) <= 15:
        return f"r{m.group(1)}"
    m = re.fullmatch(r"[re]?([abcd])x|([abcd])[lh]", r)
    if m:
        return f"r{m.group(1) or m.group(2)}x"
    m = re.fullmatch(r"[re]?(si|di|bp|sp)l?", r)
    return f"r{m.group(1)}" if m else None


def _arm_gpr(tok: str) -> str | None:
    """'x11'/'w11' → 'x11', 'sp', 'zr' for xzr/wzr; None for vector and other registers."""
    r = tok.strip().lower()
    if r in ("xzr", "wzr"):
        return "zr"
    if r in ("sp", "wsp"):
        return "sp"
    m = re.fullmatch(r"[xw](\d+)", r)
    return f"x{m.group(1)}" if m and int(m.group(1)) <= 30 else {"fp": "x29", "lr": "x30"}.get(r)


_X86_MEM = re.compile(r"(?P<disp>[^(,\s]*)\((?P<base>%\w+)?(?:,(?P<idx>%\w+)?(?:,(?P<scale>\d+))?)?\)")
_X86_NOWRITE = re.compile(r"(cmp|test|bt|ucomis|comis|vucomis|vcomis|ptest|vptest|prefetch|nop|j)"
                          r"|(push|call|ret)")


def _x86_addr(op: str, val) -> dict | None:
    m = _X86_MEM.search(op)
    if not m or ":" in op.split("(")[0]:
        return None
    disp = _imm(m.group("disp") or "0")
    addr = {"#": disp} if disp is not None else dict(_OPAQUE)     # a symbol: a constant address
    for part, scale in ((m.group("base"), 1), (m.group("idx"), int(m.group("scale") or 1))):
        if part:
            reg = _x86_gpr(part)
            if reg is None:                 # a vector of addresses (a gather): not followed
                return None
            addr = _lin_add(addr, _lin_scale(val(reg), scale))
    return addr


def _x86_step(mnem: str, ops: list[str], st: dict, mems: list, weak: list) -> None:
    m = mnem.lower()
    val = lambda r: dict(st.get(r, {r: 1}))          # noqa: E731
    base = re.sub(r"[qlwb]$", "", m) if re.fullmatch(r"(add|sub|inc|dec|lea|mov|shl|sal|neg|"
                                                    r"imul|xor)[qlwb]?", m) else m
    for op in ops:
        if "(" in op and base != "lea":
            a = _x86_addr(op, val)
            if a is not None:
                mems.append(a)
    if m in ("cltq", "cqto", "cqo", "cltd", "cdq") or (
            re.fullmatch(r"i?(mul|div)[qlwb]?", m) and len(ops) == 1):
        st["rax"] = st["rdx"] = dict(_OPAQUE)
        return
    if not ops or _X86_NOWRITE.match(m):
        return
    dest = _x86_gpr(ops[-1]) if "(" not in ops[-1] else None
    if dest is None:
        return
    src = ops[0] if len(ops) > 1 else None
    src_reg = _x86_gpr(src) if src and "(" not in src else None
    k = _imm(src) if src and src.startswith("$") else None
    new: dict | None = None
    if base in ("add", "sub") and len(ops) == 2:
        sign = 1 if base == "add" else -1
        if k is not None:
            new = _lin_add(val(dest), {"#": k}, sign)
        elif src_reg:
            new = _lin_add(val(dest), val(src_reg), sign)
    elif base in ("inc", "dec") and len(ops) == 1:
        new = _lin_add(val(dest), {"#": 1}, 1 if base == "inc" else -1)
    elif base == "neg" and len(ops) == 1:
        new = _lin_scale(val(dest), -1)
    elif base == "lea" and len(ops) == 2:
        a = _x86_addr(ops[0], val)
        mm = _X86_MEM.search(ops[0])
        if a is not None and mm and mm.group("base") and mm.group("idx"):
            weak.append(a)                  # base + index: most likely an address
        new = a
    elif base in ("mov", "movslq", "movsxd") and len(ops) == 2:
        new = {"#": k} if k is not None else (val(src_reg) if src_reg else None)
    elif base in ("shl", "sal") and len(ops) == 2 and k is not None:
        new = _lin_scale(val(dest), 1 << k)
    elif base == "imul" and len(ops) == 3 and k is not None and _x86_gpr(ops[1]):
        new = _lin_scale(val(_x86_gpr(ops[1])), k)
    elif base == "xor" and src_reg == dest:
        new = {"#": 0}
    st[dest] = new if new is not None else dict(_OPAQUE)


_ARM_NOWRITE = {"b", "bl", "br", "blr", "ret", "cbz", "cbnz", "tbz", "tbnz", "cmp", "cmn", "tst",
                "ccmp", "ccmn", "fcmp", "fcmpe", "nop", "prfm", "prfum"}


def _arm_step(mnem: str, ops: list[str], st: dict, mems: list, vl: int | None) -> None:
    m = mnem.lower()

    def val(tok: str) -> dict | None:
        tok = tok.strip()
        if tok.startswith("#"):
            k = _imm(tok)
            return {"#": k} if k is not None else dict(_OPAQUE)
        r = _arm_gpr(tok)
        if r == "zr":
            return {"#": 0}
        return dict(st.get(r, {r: 1})) if r else None

    def shifted(v: dict | None, how: str | None) -> dict | None:
        if v is None or not how:
            return v
        mm = re.fullmatch(r"(lsl|[su]xt[wx])\s*(?:#(\d+))?", how.strip().lower())
        return _lin_scale(v, 1 << int(mm.group(2) or 0)) if mm else dict(_OPAQUE)

    mi = next((i for i, o in enumerate(ops) if o.startswith("[")), None)
    wb = None
    if mi is not None:
        inner = ops[mi].rstrip("!").strip().strip("[]")
        parts = _split_operands(inner)
        breg = _arm_gpr(parts[0]) if parts else None
        addr = val(parts[0]) if breg else None
        off = dict(_OPAQUE)
        if addr is not None:
            if len(parts) == 1:
                off = {"#": 0}
            elif parts[1].startswith("#"):          # an immediate (also "#1, mul vl")
                off = {"#": 0} if "mul vl" in inner else (val(parts[1]) or dict(_OPAQUE))
            else:
                off = shifted(val(parts[1]), parts[2] if len(parts) > 2 else None) \
                    or dict(_OPAQUE)
            mems.append(_lin_add(addr, off))
            if ops[mi].endswith("!"):               # pre-indexed: the base takes the address
                wb = (breg, _lin_add(addr, off))
            elif mi + 1 < len(ops):                 # post-indexed: base += the next operand
                wb = (breg, _lin_add(addr, val(ops[mi + 1]) or dict(_OPAQUE)))
    if m in _ARM_NOWRITE or m.startswith(("b.", "st")):
        dests: list[str] = []
    elif m.startswith("ld") and mi is not None:
        dests = [r for r in map(_arm_gpr, ops[:mi]) if r]
        for d in dests:
            st[d] = dict(_OPAQUE)
        dests = []
    else:
        dests = [_arm_gpr(ops[0])] if ops and _arm_gpr(ops[0]) else []
    for d in dests:
        if d == "zr":
            continue
        new = None
        sve = re.fullmatch(r"(inc|dec|cnt)([bhwd])", m)
        if m in ("add", "adds", "sub", "subs") and len(ops) >= 3:
            a, b = val(ops[1]), shifted(val(ops[2]), ops[3] if len(ops) > 3 else None)
            if a is not None and b is not None:
                new = _lin_add(a, b, 1 if m.startswith("add") else -1)
        elif m in ("mov", "movz") and len(ops) == 2 and "lsl" not in ops[1]:
            new = val(ops[1])
        elif m == "lsl" and len(ops) == 3 and ops[2].startswith("#"):
            a = val(ops[1])
            new = _lin_scale(a, 1 << _imm(ops[2])) if a is not None and _imm(ops[2]) is not None \
                else None
        elif m == "neg" and len(ops) == 2:
            a = val(ops[1])
            new = _lin_scale(a, -1) if a is not None else None
        elif sve and vl:
            pattern = ops[1].lower() if len(ops) > 1 else "all"
            mul = re.search(r"mul\s+#(\d+)", ",".join(ops[2:]).lower())
            if pattern == "all":
                k = (vl // {"b": 8, "h": 16, "w": 32, "d": 64}[sve.group(2)]) \
                    * (int(mul.group(1)) if mul else 1)
                new = ({"#": k} if sve.group(1) == "cnt"
                       else _lin_add(val(ops[0]), {"#": k}, 1 if sve.group(1) == "inc" else -1))
        st[d] = new if new is not None else dict(_OPAQUE)
    if wb and wb[0] and wb[0] != "zr":
        st[wb[0]] = wb[1]


def _steps(final: dict) -> dict:
    """Per-iteration step of each register the loop writes (None: not a constant step)."""
    steps: dict = {}
    pending = {}
    for r, f in final.items():
        if f == {r: 1}:
            continue
        if "?" in f:
            steps[r] = None
        elif f.get(r, 0) == 1 and set(f) <= {r, "#"}:
            steps[r] = f.get("#", 0)                  # r + k
        elif f.get(r, 0) == 0:
            pending[r] = f                            # a copy of others: steps as they do
        else:
            steps[r] = None
    for _ in range(len(pending) + 1):
        for r, f in list(pending.items()):
            deps = [o for o in f if o != "#"]
            if all(o in steps or o not in final or final[o] == {o: 1} for o in deps):
                vals = [steps.get(o, 0) for o in deps]
                steps[r] = None if None in vals else sum(f[o] * v for o, v in zip(deps, vals))
                del pending[r]
    steps.update({r: None for r in pending})
    return steps


def _elements(loop: list[str], itemsizes=(), cpu: str | None = None,
              sve_bits: int | None = None) -> int | None:
    """Elements per iteration from the addresses the loop moves (see the comment above);
    ``itemsizes``: the element sizes in bytes of the function's arrays; ``cpu``/``sve_bits``: the
    core, for the SVE vector length. None unless every moving address agrees on one count."""
    from .vector import _asm_arch
    if isinstance(itemsizes, int):
        itemsizes = (itemsizes,)
    itemsizes = sorted({int(s) for s in (itemsizes or ()) if s})
    body = [ln for ln in loop if ln.strip() and not re.match(r"^\s*[.\w$]+:", ln)
            and not ln.strip().startswith(("#", ".", "//", ";"))]
    arch = _asm_arch("\n".join(body))
    if arch not in ("x86-64", "aarch64"):
        return None
    vl = SVE_BITS.get(str(cpu or "").lower()) or sve_bits
    st: dict = {}
    mems: list = []
    weak: list = []
    # an if/else inside the loop: what its branches write is not followed
    labels = [i for i, ln in enumerate(loop) if re.match(r"^\s*[.\w$]+:", ln)]
    instr = [i for i, ln in enumerate(loop) if ln in body]
    jumps = [i for i in instr[:-1] if re.match(r"^\s*(j\w+|b\.\w+|b|cbn?z|tbn?z)\s", loop[i])]
    inner_labels = [i for i in labels if instr and i > instr[0]]
    cond = (jumps[0], max(inner_labels)) if jumps and inner_labels else None
    for i in instr:
        text = loop[i].split("//")[0]
        if arch == "x86-64":
            text = text.split("#")[0]
        parts = text.strip().split(None, 1)
        if not parts:
            continue
        mnem, ops = parts[0], _split_operands(parts[1]) if len(parts) > 1 else []
        before = dict(st)
        if arch == "x86-64":
            _x86_step(mnem, ops, st, mems, weak)
        else:
            _arm_step(mnem, ops, st, mems, vl)
        if cond and cond[0] < i < cond[1]:
            for r in st:
                if st[r] != before.get(r):
                    st[r] = dict(_OPAQUE)
    steps = _steps(st)

    def candidates(addr: dict, sizes: set, scales: set) -> set | None:
        terms = {o: c for o, c in addr.items() if o not in ("#", "?") and c}
        if any(steps.get(o, 0) is None for o in terms):
            return None                               # moves by an unknown amount
        moving = {o: c for o, c in terms.items() if steps.get(o, 0)}
        nbytes = abs(sum(c * steps[o] for o, c in moving.items()))
        if not nbytes:
            return None                               # the same address every iteration
        if len(moving) == 1:
            (o, c), = moving.items()
            if abs(c) > 1 and abs(c) in scales:
                return {abs(steps[o])}                # an index scaled by its element's size
        return {nbytes // s for s in sizes if nbytes % s == 0}

    # the arguments' element sizes first (an element is one of theirs: a word, not its bytes);
    # when the addresses then disagree, arrays made inside the loop's function may be why:
    # again with the sizes its instructions name
    own = set(itemsizes)
    wider = own | _code_sizes(body, arch)
    for group in (mems, weak):
        for sizes, scales in (((own, own), (wider, wider | {2, 4, 8, 16, 32, 64})) if own
                              else ((wider, wider | {2, 4, 8, 16, 32, 64}),)):
            found = [c for c in (candidates(a, sizes, scales) for a in group) if c is not None]
            if not found:
                break
            common = set.intersection(*found)
            if common:
                return common.pop() if len(common) == 1 else None
    return None


_ARM_SIZE = {"b": 1, "h": 2, "s": 4, "d": 8}


def _code_sizes(body: list[str], arch: str) -> set:
    """Element sizes the loop's own instructions name (``v4.8h``, ``z1.d``; ``vpaddw``,
    ``vmulpd``, ``movzbl``): the arrays the function makes inside count too. A size too many
    only makes a count ambiguous (None), never wrong; a size missing could."""
    out: set = set()
    for ln in body:
        if arch == "aarch64":
            out |= {_ARM_SIZE[t] for t in re.findall(r"\b[vz]\d+\.\d*([bhsd])\b", ln)}
            continue
        mnem = ln.split()[0].lower() if ln.split() else ""
        m = (re.fullmatch(r"v?p[a-z]+?([bwdq])", mnem)
             or re.fullmatch(r"v?movdq[au](8|16|32|64)", mnem)
             or re.fullmatch(r"v?[a-z]+?[ps]([sd])", mnem)
             or re.fullmatch(r"movz([bw])[lq]", mnem))
        if m:
            t = m.group(1)
            out.add({"b": 1, "w": 2, "d": 4 if mnem.startswith(("vp", "p")) else 8, "q": 8,
                     "s": 4}.get(t) or int(t) // 8)
    return out


def _itemsizes(fn, signature) -> list[int]:
    """Element sizes (bytes) of the arrays among the arguments (values or numba types)."""
    import numpy as np
    if signature is None:
        sigs = list(getattr(fn, "signatures", None) or [])
        signature = sigs[0] if len(sigs) == 1 else ()
    if not isinstance(signature, (tuple, list)):
        signature = getattr(signature, "args", ())
    out = []
    for a in signature:
        if isinstance(a, np.ndarray):
            out.append(a.itemsize)
        elif hasattr(a, "dtype") and hasattr(a, "ndim"):          # a numba Array type
            try:
                from numba.np.numpy_support import as_dtype
                out.append(as_dtype(a.dtype).itemsize)
            except Exception:  # noqa: BLE001 - an array of objects: no size to use
                pass
    return out


@functools.lru_cache(maxsize=None)
def osaca_tools(model: str):
    """(parser, machine model, semantics) of OSACA for ``model``, made once per process: each
    machine model is a pickle of a few MB that takes a quarter of a second to load, and the
    analysis reads them without changing them."""
    from osaca.osaca import get_asm_parser
    from osaca.semantics import ArchSemantics, MachineModel
    syntax = "ATT" if MachineModel.get_isa_for_arch(model) == "x86" else None
    parser = get_asm_parser(model, syntax)
    mm = MachineModel(arch=model)
    return parser, mm, ArchSemantics(parser, mm)


def predict(fn, signature=None, *, cpu: str | None = None,
            elements_per_iteration: int | None = None, loop: str | None = None) -> Prediction:
    """OSACA's bound for ``fn``'s hot loop (compiled for ``signature``: example arguments or
    numba types) on ``cpu`` (an LLVM CPU name; default: the CPU numba compiles for). A CPU of
    another architecture is predicted from the code LLVM emits for it, without running it.
    ``loop``: a kind of vector instruction (``"fma"``, ``"minmax"``, ``"popcount"``, … — the
    categories of :func:`vector_report`) to analyse the innermost loop with the most of them
    instead of the one :func:`show` marks hot (a copy of the loop LLVM made for a case that never
    runs can carry more vector instructions than the loop that does)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # OSACA's parser uses deprecated pyparsing names
        return _predict(fn, signature, cpu, elements_per_iteration, loop)


def _predict(fn, signature, cpu, elements_per_iteration, loop=None) -> Prediction:
    try:
        from osaca.osaca import reduce_to_section
        from osaca.semantics import ArchSemantics, KernelDG
    except ImportError:
        raise ImportError("labkit.inspect.predict needs OSACA: pip install osaca") from None
    from labkit.target import target as numba_target
    target = cpu or numba_target().cpu
    model, approx = osaca_model(target) if cpu else _host_model(target)
    if cpu is None and target in ("icelake-server", "rocketlake", "tigerlake"):
        from labkit import hardware
        if hardware.has("amx_tile"):      # a VM's model number: AMX is Sapphire Rapids or newer
            model, approx = "SPR", (f"Sapphire Rapids model: LLVM names this core {target}, "
                                    "but it has AMX (a virtual machine's model number)")
    loop = _hot_loop_text(fn, signature, cpu, loop)
    sve_bits = None
    if cpu is None and not elements_per_iteration:
        from labkit import hardware
        sve_bits = hardware.info().get("sve_bits")      # this host's SVE length, if it has SVE
    elements = elements_per_iteration or _elements(loop, _itemsizes(fn, signature), target,
                                                   sve_bits=sve_bits)
    code = "\n".join(loop) + "\n"
    try:
        parser, mm, sem = osaca_tools(model)
        parsed = parser.parse_file(code)
        kernel = reduce_to_section(parsed, parser)
        sem.normalize_instruction_forms(kernel)
        sem.add_semantics(kernel)
        sem.assign_optimal_throughput(kernel)
        dg = KernelDG(kernel, parser, mm, sem, 10, False)
        tp_sum = ArchSemantics.get_throughput_sum(kernel) or []
        ports = list(mm.get_ports())
        chains = dg.get_loopcarried_dependencies() or {}
        cp = dg.get_critical_path() or []
    except Exception as e:  # noqa: BLE001 - OSACA's own failure, in one line
        raise ValueError(f"OSACA could not analyse the loop for {model}: "
                         f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}") from None
    pressure = {p: float(v) for p, v in zip(ports, tp_sum)}
    port = max(pressure, key=pressure.get) if pressure else "?"
    unknown = [" ".join(str(ins.line or "").split()) for ins in kernel
               if ins.mnemonic and "tp_unknown" in [str(f) for f in (ins.flags or [])]]
    lcd, lcd_lines = 0.0, []
    if chains:
        top = max(chains.values(), key=lambda c: float(c.get("latency") or 0))
        lcd = float(top.get("latency") or 0)
        lcd_lines = [" ".join(str(getattr(ins, "line", "") or "").split())
                     for ins, _lat in top.get("dependencies", [])]
        lcd_lines = [ln for ln in lcd_lines if ln]
    critical = float(sum((getattr(x, "latency_cp", 0) or 0) for x in cp))
    instructions = sum(1 for ins in kernel if ins.mnemonic)
    return Prediction(cpu=target, model=model, approximation=approx,
                      loop=[ln.strip() for ln in loop], port=port,
                      port_cycles=pressure.get(port, 0.0), lcd_cycles=lcd,
                      lcd_instructions=lcd_lines, critical_path=critical,
                      elements=elements, unknown=unknown, instructions=instructions)
