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

import re
import warnings
from dataclasses import dataclass, field

__all__ = ["predict", "Prediction", "osaca_model", "MODELS"]

#: LLVM CPU name → (OSACA model, approximation note or "")
MODELS: dict[str, tuple[str, str]] = {
    "sandybridge": ("SNB", ""), "ivybridge": ("IVB", ""),
    "haswell": ("HSW", ""), "broadwell": ("BDW", ""),
    "skylake": ("SKX", "Skylake-SP model for the client Skylake core (same ports, no AVX-512)"),
    "skylake-avx512": ("SKX", ""), "cascadelake": ("CSX", ""), "cooperlake": ("CSX", "Cascade Lake model"),
    "icelake-client": ("ICL", ""), "icelake-server": ("ICX", ""),
    "tigerlake": ("ICL", "Ice Lake model for Tiger Lake (a close relative)"),
    "rocketlake": ("ICL", "Ice Lake model for Rocket Lake (the same Sunny Cove core)"),
    "sapphirerapids": ("SPR", ""), "emeraldrapids": ("SPR", "Sapphire Rapids model"),
    "graniterapids": ("SPR", "Sapphire Rapids model for Granite Rapids (Redwood Cove)"),
    "alderlake": ("SPR", "Sapphire Rapids (Golden Cove) model for the performance cores"),
    "raptorlake": ("SPR", "Sapphire Rapids (Golden Cove) model for the performance cores"),
    "meteorlake": ("SPR", "Sapphire Rapids (Golden Cove) model; Redwood Cove is close"),
    "znver1": ("ZEN1", ""), "znver2": ("ZEN2", ""), "znver3": ("ZEN3", ""), "znver4": ("ZEN4", ""),
    "znver5": ("ZEN4", "Zen 4 model; Zen 5 has wider vector and load units, so it may beat it"),
    "apple-m1": ("M1", ""), "apple-m2": ("M1", "Apple M1 model"),
    "apple-m3": ("M1", "Apple M1 model"), "apple-m4": ("M1", "Apple M1 model"),
    "neoverse-n1": ("N1", ""), "neoverse-v2": ("V2", ""),
    "neoverse-v1": ("V2", "Neoverse V2 model for V1"), "neoverse-n2": ("V2", "Neoverse V2 model"),
    "a64fx": ("A64FX", ""), "cortex-a72": ("A72", ""), "thunderx2t99": ("TX2", ""),
    "tsv110": ("TSV110", ""),
}


def osaca_model(cpu: str) -> tuple[str, str]:
    """(OSACA model, approximation note) for an LLVM CPU name; ValueError when none fits."""
    key = str(cpu).lower()
    if key in MODELS:
        return MODELS[key]
    raise ValueError(f"no OSACA core model for {cpu!r}: models exist for "
                     f"{', '.join(sorted(MODELS))} — pass cpu= one of those")


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


_STEP_X86 = re.compile(r"^\s*(?:add|sub)q\s+\$(-?\d+),\s*%(\w+)")
_INC_X86 = re.compile(r"^\s*incq\s+%(\w+)")
_STEP_ARM = re.compile(r"^\s*(?:add|sub)s?\s+(x\d+),\s*\1,\s*#(-?\d+)")


def _elements(loop: list[str], itemsize: int | None) -> int | None:
    """Elements per iteration from the loop's induction step: an index register (scaled by the
    element size) counts elements; a pointer bumped by k bytes moves k / itemsize. None when no
    step feeds an address the loop reads or writes (gathers, address arithmetic in vectors):
    a wrong count would be worse than none."""
    # memory operands of real accesses only (lea computes an address, it loads nothing)
    text = "\n".join(ln for ln in loop if not re.match(r"^\s*lea", ln))
    for ln in loop:
        m = _STEP_X86.match(ln) or _INC_X86.match(ln)
        if m:
            reg = m.group(2) if m.re is _STEP_X86 else m.group(1)
            step = abs(int(m.group(1))) if m.re is _STEP_X86 else 1
            idx = re.findall(rf"\(%\w+,%{reg}(?:,(\d))?\)", text)   # no scale: bytes
            if idx:
                scale = int(idx[0] or 1)
                return step if itemsize is None or scale == itemsize else \
                    max(1, step * scale // itemsize)
            if re.search(rf"\(%{reg}\)|\d\(%{reg}\)", text) and itemsize:
                return max(1, step // itemsize)
    post = re.findall(r"\], #(\d+)", text)          # AArch64 post-indexed: bytes per iteration
    if post and itemsize:
        return max(1, int(post[0]) // itemsize)
    for ln in loop:
        m = _STEP_ARM.match(ln)
        if m:
            reg, step = m.group(1), abs(int(m.group(2)))
            if re.search(rf"\[{reg}, x\d+, lsl #\d\]", text):
                return step
            if re.search(rf"\[{reg}\b", text):
                return max(1, step // itemsize) if itemsize else None
            return step                                 # a trip counter: LLVM counts elements
    return None


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
        from osaca.osaca import get_asm_parser, reduce_to_section
        from osaca.semantics import ArchSemantics, KernelDG, MachineModel
    except ImportError:
        raise ImportError("labkit.inspect.predict needs OSACA: pip install osaca") from None
    from labkit.hardware.target import target as numba_target
    target = cpu or numba_target().cpu
    model, approx = osaca_model(target)
    if cpu is None and target in ("icelake-server", "rocketlake", "tigerlake"):
        from labkit import hardware
        if hardware.has("amx_tile"):      # a VM's model number: AMX is Sapphire Rapids or newer
            model, approx = "SPR", (f"Sapphire Rapids model: LLVM names this core {target}, "
                                    "but it has AMX (a virtual machine's model number)")
    loop = _hot_loop_text(fn, signature, cpu, loop)
    itemsize = None
    if isinstance(signature, tuple):
        import numpy as np
        arrays = [a for a in signature if isinstance(a, np.ndarray)]
        itemsize = arrays[0].itemsize if arrays else None
    elements = elements_per_iteration or _elements(loop, itemsize)
    code = "\n".join(loop) + "\n"
    syntax = "ATT" if MachineModel.get_isa_for_arch(model) == "x86" else None
    parser = get_asm_parser(model, syntax)
    try:
        parsed = parser.parse_file(code)
        kernel = reduce_to_section(parsed, parser)
        mm = MachineModel(arch=model)
        sem = ArchSemantics(parser, mm)
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
