"""OSACA's report of a hot loop, as the prediction exercises hand it to the student
(lesson 00's ``loop_bound``, lab 04's ``popcount_bound``).

:func:`osaca_report` is :func:`labkit.inspect.predict`'s analysis laid open: the loop's
instructions with OSACA's port pressure per instruction, the total per port, the loop-carried
dependencies and the one-iteration critical path — every number a reader needs to state the bound,
and not the bound itself (no ``bound`` or per-element figure: reading it off is the exercise).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field

__all__ = ["LoopReport", "osaca_report", "loop_report", "truth"]


@dataclass
class LoopReport:
    """OSACA's numbers for one loop on one core model, all per loop iteration."""

    name: str                   # the kernel
    cpu: str                    # the LLVM target the code was compiled for
    model: str                  # the OSACA core model
    ports: dict = field(default_factory=dict)   # port → cycles of work per iteration
    dependency: float = 0.0     # the longest loop-carried dependency: cycles per iteration
    chain: list = field(default_factory=list)   # its instructions
    critical_path: float = 0.0  # one iteration's latency path (it overlaps the next one's)
    elements: int | None = None  # elements (array items) the loop handles per iteration
    unknown: list = field(default_factory=list)  # instructions not in the model's tables
    instructions: int = 0
    approximation: str = ""
    text: str = ""              # OSACA's own combined table

    def __str__(self) -> str:
        head = (f"{self.name} compiled for {self.cpu}, OSACA model {self.model}"
                + (f" ({self.approximation})" if self.approximation else ""))
        busiest = sorted(self.ports.items(), key=lambda kv: -kv[1])[:4]
        lines = [head, "", self.text.rstrip(), "",
                 "port pressure per iteration (busiest first): "
                 + ", ".join(f"port {p}: {c:.2f}" for p, c in busiest),
                 f"longest loop-carried dependency: {self.dependency:g} cycles per iteration"
                 + (f" ({self.chain[0]}{' …' if len(self.chain) > 1 else ''})" if self.chain
                    else ""),
                 f"critical path of one iteration: {self.critical_path:g} cycles",
                 f"elements per iteration: {self.elements if self.elements else 'unknown'}"]
        if self.unknown:
            lines.append(f"not in the model's tables (counted as free): {len(self.unknown)} of "
                         f"{self.instructions} instructions, e.g. "
                         + ", ".join(sorted({u.split()[0] for u in self.unknown})[:5]))
        return "\n".join(lines)

    __repr__ = __str__


_CACHE: dict = {}


def osaca_report(fn, signature, cpu: str | None = None, name: str | None = None):
    """``(LoopReport, Prediction)`` for ``fn``'s hot loop on ``cpu`` (default: the host's model);
    ValueError when no model fits or OSACA cannot read the loop, ImportError without OSACA."""
    from labkit.inspect import predict
    key = (getattr(fn, "__qualname__", repr(fn)), getattr(fn, "__module__", ""), cpu,
           tuple((getattr(a, "dtype", None), getattr(a, "shape", None)) for a in signature))
    if key in _CACHE:
        return _CACHE[key]
    p = predict(fn, signature, cpu=cpu)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from osaca.frontend import Frontend
            from osaca.osaca import reduce_to_section
            from osaca.semantics import ArchSemantics, KernelDG

            from labkit.inspect.uarch import osaca_tools
            parser, mm, sem = osaca_tools(p.model)
            kernel = reduce_to_section(parser.parse_file("\n".join(p.loop) + "\n"), parser)
            sem.normalize_instruction_forms(kernel)
            sem.add_semantics(kernel)
            sem.assign_optimal_throughput(kernel)
            dg = KernelDG(kernel, parser, mm, sem, 10, False)
            ports = {str(q): round(float(v), 2) for q, v in
                     zip(mm.get_ports(), ArchSemantics.get_throughput_sum(kernel) or [])}
            try:
                text = Frontend(arch=p.model).combined_view(
                    kernel, dg.get_critical_path(), dg.get_loopcarried_dependencies(),
                    ignore_unknown=True)      # the unknown ones are listed below the table
            except Exception:  # noqa: BLE001 - the table is for reading; the numbers stand alone
                text = "\n".join(p.loop)
    except Exception as e:  # noqa: BLE001 - OSACA's own failure, in one line (as predict)
        first = str(e).splitlines()[0] if str(e) else ""
        raise ValueError(f"OSACA could not lay out its report for {p.model}: "
                         f"{type(e).__name__}: {first}") from None
    rep = LoopReport(name=name or getattr(fn, "__name__", "loop"), cpu=p.cpu, model=p.model,
                     ports={q: c for q, c in ports.items() if c > 0}, dependency=p.lcd_cycles,
                     chain=list(p.lcd_instructions), critical_path=p.critical_path,
                     elements=p.elements, unknown=list(p.unknown), instructions=p.instructions,
                     approximation=p.approximation, text=text)
    _CACHE[key] = (rep, p)
    return rep, p


def truth(rep: LoopReport) -> tuple[str, float, list[str]]:
    """What the report says (the checks' answer): ``("dependency" | "port", cycles per element,
    the ports that tie for busiest)`` — a port within 3 % of the busiest counts as busiest, a
    chain within 3 % of the busiest port makes both readings right (both are listed)."""
    busiest = max(rep.ports.values()) if rep.ports else 0.0
    ties = [q for q, c in rep.ports.items() if c >= 0.97 * busiest and c > 0]
    per = max(busiest, rep.dependency) / (rep.elements or 1)
    kind = "dependency" if rep.dependency > busiest else "port"
    if abs(rep.dependency - busiest) <= 0.03 * max(busiest, rep.dependency):
        ties = ties + ["dependency"]
    elif kind == "dependency":
        ties = ["dependency"]
    return kind, per, ties


def loop_report(fn, signature, cpu: str | None = None, name: str | None = None) -> LoopReport:
    """OSACA's report of ``fn``'s hot loop on ``cpu`` (default: this core's model) — the numbers
    to read a bound from, without the bound."""
    return osaca_report(fn, signature, cpu=cpu, name=name)[0]
