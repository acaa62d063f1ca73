"""A :class:`~labkit.hardware.probe.HardwareInfo` in words: the one-line summary for benchmark
reports, the description `labkit doctor` prints, and the pieces the HTML table shares with them
(cores, caches, widest vectors). Each takes the HardwareInfo as ``hw`` (not imported here:
:mod:`.probe` imports this module).
"""
from __future__ import annotations

import sys

from . import isa


def _fmt_bytes(n: int | None) -> str:
    """A byte count as MiB, KiB or B ("?" when unknown)."""
    if not n:
        return "?"
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} B"


def _caches(hw) -> str:
    """The cache sizes in one phrase: "L1d 32 KiB, L2 1 MiB, L3 32 MiB"."""
    l3 = f"L3 {_fmt_bytes(hw.l3)}" if hw.l3 or hw.system != "darwin" else "no L3 reported"
    return f"L1d {_fmt_bytes(hw.l1d)}, L2 {_fmt_bytes(hw.l2)}, {l3}"


def _cores(hw) -> str:
    """The core counts in one phrase: logical, physical, performance + efficiency."""
    text = f"{hw.logical_cores} logical, {hw.physical_cores} physical"
    if hw.performance_cores or hw.efficiency_cores:
        text += f" ({hw.performance_cores or 0} performance + {hw.efficiency_cores or 0} efficiency)"
    return text


def _widest(hw) -> str:
    """The widest vectors the CPU has, in words (``AVX-512 (bw/vl)``, ``NEON+dotprod``)."""
    return isa.widest(hw.arch, hw.features, hw.machine, hw.sve_bits)


def _summary(hw) -> str:
    """One line: CPU, cores, caches, widest vectors, numba and its target."""
    target = hw.numba_cpu + (f" via NUMBA_CPU_NAME={hw.numba_cpu_env}" if hw.numba_cpu_env else "")
    perf = (f", {hw.performance_cores}P+{hw.efficiency_cores or 0}E" if hw.performance_cores else "")
    return (f"{hw.cpu} · {hw.logical_cores} cores ({hw.physical_cores} physical{perf}) · {_caches(hw)} · "
            f"{_widest(hw)} · numba {hw.numba} → {target}, {hw.numba_threads} threads")


def _describe(hw) -> list[str]:
    """The lines `labkit doctor` prints: versions, CPU, cores, caches, vectors, target, features."""
    shared = f"; L2 shared by {hw.l2_shared_by} cores" if hw.l2_shared_by and hw.l2_shared_by > 1 else ""
    per = "the performance cores'" if hw.performance_cores else "per core for L1d/L2"
    lines = [
        f"Python    {hw.python} ({sys.executable})",
        f"numpy     {hw.numpy}",
        f"numba     {hw.numba}  (llvmlite {hw.llvmlite})",
        f"CPU       {hw.cpu}  [{hw.machine}, {hw.system}]",
    ]
    if hw.emulated_on:
        lines.append(f"          emulated: /proc/cpuinfo describes the host, {hw.emulated_on}")
    lines += [
        f"cores     {_cores(hw)}; numba threads {hw.numba_threads}",
        f"caches    {_caches(hw)}  ({per}{shared})",
        f"vectors   {_widest(hw)}"
        + (f"; SVE vector length {hw.sve_bits} bits" if hw.sve_bits else ""),
        f"numba target CPU: {hw.numba_cpu}"
        + (f"  — {hw.target_note}" if hw.target_note
           else f"  (NUMBA_CPU_NAME={hw.numba_cpu_env} overrides the host)" if hw.numba_cpu_env
           else ""),
        f"ISA features ({hw.arch}):",
    ]
    names = hw.feature_names
    w = max((len(f) for f in names), default=0)
    for f in names:
        mark = "✔" if hw.features.get(f) else "✘"
        lines.append(f"  {mark} {f.ljust(w)}  {hw.meaning(f)}")
    if not names:
        lines.append(f"  (labkit has no feature table for {hw.arch}; LLVM's features: "
                     f"{', '.join(sorted(hw.flags)) or 'none'})")
    return lines
