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

This module runs OSACA and words its answer; which core model stands for a CPU is
:mod:`.uarch_models`'s, and the elements per iteration are :mod:`.uarch_elements`'s (reading the
registers through :mod:`.uarch_steps`).
"""
from __future__ import annotations

import functools
import re
import warnings
from dataclasses import dataclass, field

from .uarch_elements import SVE_BITS, _elements, _itemsizes  # noqa: F401 - SVE_BITS re-exported
from .uarch_models import FAMILIES, MODELS, _host_model, osaca_model

__all__ = ["predict", "Prediction", "osaca_model", "MODELS", "FAMILIES"]


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
    """The lines of the loop to analyse: the one :func:`show` marks hot, or the innermost loop
    with the most ``loop`` vector instructions; labels kept, comments and directives left out."""
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
    """:func:`predict`'s steps: OSACA at hand, the core's model, the hot loop's lines, its
    elements per iteration, OSACA's analysis, the bound read from it."""
    _require_osaca()
    target, model, approx = _target_model(cpu)
    lines = _hot_loop_text(fn, signature, cpu, loop)
    elements = elements_per_iteration or _elements(lines, _itemsizes(fn, signature), target,
                                                   sve_bits=_host_sve_bits(cpu))
    kernel, pressure, chains, cp = _run_osaca(model, lines)
    port = max(pressure, key=pressure.get) if pressure else "?"
    lcd, lcd_lines = _longest_chain(chains)
    return Prediction(cpu=target, model=model, approximation=approx,
                      loop=[ln.strip() for ln in lines], port=port,
                      port_cycles=pressure.get(port, 0.0), lcd_cycles=lcd,
                      lcd_instructions=lcd_lines,
                      critical_path=float(sum((getattr(x, "latency_cp", 0) or 0) for x in cp)),
                      elements=elements, unknown=_unknown(kernel),
                      instructions=sum(1 for ins in kernel if ins.mnemonic))


def _require_osaca() -> None:
    """ImportError saying how to install OSACA when it is missing."""
    try:
        from osaca.osaca import reduce_to_section  # noqa: F401
        from osaca.semantics import ArchSemantics, KernelDG  # noqa: F401
    except ImportError:
        raise ImportError("labkit.inspect.predict needs OSACA: pip install osaca") from None


def _target_model(cpu: str | None) -> tuple[str, str, str]:
    """(LLVM CPU analysed, OSACA model, approximation note): ``cpu``, or the CPU numba compiles
    for here (a virtual machine's model number corrected by what the CPU has)."""
    from labkit.target import target as numba_target
    target = cpu or numba_target().cpu
    model, approx = osaca_model(target) if cpu else _host_model(target)
    if cpu is None and target in ("icelake-server", "rocketlake", "tigerlake"):
        from labkit import hardware
        if hardware.has("amx_tile"):      # a VM's model number: AMX is Sapphire Rapids or newer
            model, approx = "SPR", (f"Sapphire Rapids model: LLVM names this core {target}, "
                                    "but it has AMX (a virtual machine's model number)")
    return target, model, approx


def _host_sve_bits(cpu: str | None) -> int | None:
    """This host's SVE vector length when the loop is compiled for it and it has SVE, else None."""
    if cpu is not None:
        return None
    from labkit import hardware
    return hardware.info().get("sve_bits")


def _run_osaca(model: str, loop: list[str]) -> tuple:
    """OSACA's analysis of the loop on ``model``: (kernel, cycles per iteration by port,
    loop-carried chains, critical path); its own failure becomes a ValueError in one line."""
    from osaca.osaca import reduce_to_section
    from osaca.semantics import ArchSemantics, KernelDG
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
    return kernel, {p: float(v) for p, v in zip(ports, tp_sum)}, chains, cp


def _longest_chain(chains: dict) -> tuple[float, list[str]]:
    """(cycles per iteration, instructions) of the longest loop-carried dependency; (0, [])
    when there is none."""
    if not chains:
        return 0.0, []
    top = max(chains.values(), key=lambda c: float(c.get("latency") or 0))
    lines = [" ".join(str(getattr(ins, "line", "") or "").split())
             for ins, _lat in top.get("dependencies", [])]
    return float(top.get("latency") or 0), [ln for ln in lines if ln]


def _unknown(kernel) -> list[str]:
    """The loop's instructions the model has no throughput data for."""
    return [" ".join(str(ins.line or "").split()) for ins in kernel
            if ins.mnemonic and "tp_unknown" in [str(f) for f in (ins.flags or [])]]
