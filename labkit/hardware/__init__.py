"""What machine are we on: CPU name, cores, caches, ISA features, toolchain versions; `labkit doctor`.
Linux x86-64, Linux AArch64 (Graviton, Ampere, …) and macOS (Intel and Apple silicon).

>>> from labkit import hardware
>>> hardware.info().l2              # bytes per core
>>> hardware.has("avx512_vpopcntdq")
>>> print(hardware.summary())       # one line for benchmark reports
>>> hardware.native_lanes("int16")  # int16 elements per native vector register (16 with AVX2)
>>> hardware.info().features        # the lab-relevant features of this architecture: avx2 … / neon, sve …

The package, by concern: :mod:`.probe` (HardwareInfo, ``build`` from recorded sources),
:mod:`.describe` (a HardwareInfo in words: summary line, description), :mod:`.width` (the native
vector width numba compiles for), :mod:`.isa` (per-architecture feature tables, what each feature means for the labs,
every source's spelling), :mod:`.sources` (parsers of /proc/cpuinfo, the AArch64 aux vector and
SVE length, macOS sysctl),
:mod:`.roof` (one core's memory bandwidth and FMA rate, the two roofs of a roofline),
:mod:`.clock` (the core clock, from a chain of dependent one-cycle integer operations) and
:mod:`._doctor` (what `labkit doctor` prints and checks).  Importing it does not import numba.
"""
from __future__ import annotations

from ._doctor import doctor
from .probe import (FEATURES, MEANING, HardwareInfo, has, info, native_lanes, native_vector_bits,
                    summary)
from .clock import measure_clock
from .roof import measure_bandwidth, measure_fma_rate

__all__ = ["HardwareInfo", "info", "has", "summary", "doctor", "measure_bandwidth",
           "measure_fma_rate", "measure_clock", "native_vector_bits", "native_lanes", "FEATURES", "MEANING", "main"]

main = doctor
