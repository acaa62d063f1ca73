"""Judging a student's reading of an OSACA loop report (:mod:`labkit.inspect.loopreport`):
the answer's shape (:func:`stated`) and what was misread (:func:`reading_error`)."""
from __future__ import annotations

from labkit.inspect.loopreport import LoopReport, truth

__all__ = ["stated", "reading_error"]


def stated(answer, *, what: str = "(resource, cycles per element)"):
    """The student's ``(resource, cycles)`` normalised to ``("dependency" | port, float)``;
    CheckFailure ``wrong`` naming the expected shape otherwise."""
    from .result import CheckFailure
    import numpy as np
    if not isinstance(answer, (tuple, list)) or len(answer) != 2:
        raise CheckFailure("wrong", f"returned {type(answer).__name__} {answer!r:.60}; expected "
                                    f"a pair {what}, e.g. ('dependency', 4.0) or ('port 5', 1.5)")
    resource, cycles = answer
    if not isinstance(resource, str):
        raise CheckFailure("wrong", f"the resource is {type(resource).__name__}, expected a "
                                    "string: 'dependency' or a port's name ('port 5', '1D', …)")
    if isinstance(cycles, (bool, np.bool_)) or not isinstance(
            cycles, (int, float, np.integer, np.floating)) or not np.isfinite(cycles) \
            or cycles <= 0:
        raise CheckFailure("wrong", f"the cycles are {cycles!r}; expected a positive number "
                                    "(clock cycles per element)")
    r = " ".join(resource.strip().lower().replace("_", " ").split())
    if any(w in r for w in ("depend", "chain", "lcd", "loop-carried", "loop carried",
                            "latency")):
        return "dependency", float(cycles)
    for pre in ("port ", "port", "p"):
        if r.startswith(pre) and len(r) > len(pre):
            r = r[len(pre):].strip()
            break
    return r.upper(), float(cycles)


def reading_error(rep: LoopReport, answer, tolerance: float) -> str | None:
    """None when ``answer`` (normalised by :func:`stated`) is the report's bound: the resource
    exactly (a tie for busiest: any of them), the cycles per element within ``tolerance``; else
    the sentence saying what was misread."""
    resource, cycles = answer
    kind, per, ties = truth(rep)
    where = f"{rep.name} on {rep.model}"
    said = ("the dependency chain" if resource == "dependency" else f"port {resource}")
    busiest = max(rep.ports.values()) if rep.ports else 0.0
    if resource not in [t.upper() if t != "dependency" else t for t in ties]:
        if resource == "dependency":
            why = (f"its longest loop-carried chain takes {rep.dependency:g} cycles per iteration, "
                   f"less than the busiest port's {busiest:.2f}: the ports are the limit")
        elif kind == "dependency":
            why = (f"no port is as busy ({busiest:.2f} cycles per iteration at most) as the "
                   f"loop-carried chain is long ({rep.dependency:g} cycles): a chain bounds it")
        elif resource not in {q.upper() for q in rep.ports}:
            why = f"the model {rep.model} has no port {resource!r} with work in this loop"
        else:
            load = {q.upper(): c for q, c in rep.ports.items()}[resource]
            why = (f"port {resource} has {load:.2f} cycles of work per iteration, not the most "
                   f"({busiest:.2f})")
        return f"{where}: you said {said} — {why}"
    off = cycles / per
    if abs(off - 1) > tolerance:
        n = rep.elements or 1
        hint = (f" (the report's cycles are per iteration of {n} elements)"
                if n > 1 and abs(off - n) < 0.1 * n else "")
        return (f"{where}: {said} is right, but {cycles:.3g} cycles per element is "
                f"{off:.2f}× the report's bound (within {tolerance:.0%} passes){hint}")
    return None
