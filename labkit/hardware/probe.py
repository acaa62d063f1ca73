"""Probe this machine: CPU name, cores, caches, ISA features (``/proc/cpuinfo``, ``/sys``, ``lscpu``, macOS ``sysctl``,
llvmlite's host data), numba's target → :class:`HardwareInfo`. Its words come from :mod:`.describe`;
the native SIMD width from :mod:`.width` (re-exported here)."""
from __future__ import annotations

import functools
import html
import os
import platform
import re
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from typing import Any

from . import isa, sources
from .isa import X86_LLVM_NAMES as _LLVM_NAMES
from .describe import _caches, _cores, _describe, _summary
from .width import native_lanes, native_vector_bits  # noqa: F401 - re-exported

ARCH = isa.arch_of()
# ISA features that matter for the labs on this machine's architecture (x86-64: in the spelling of
# /proc/cpuinfo; AArch64: LLVM's names), and one line per feature: what it means for the labs.
# Both architectures' tables: isa.FEATURES_BY_ARCH / isa.MEANING_BY_ARCH.
FEATURES = isa.features_of(ARCH) if ARCH in isa.FEATURES_BY_ARCH else isa.X86_FEATURES
MEANING = isa.meaning_of(ARCH) if ARCH in isa.MEANING_BY_ARCH else isa.X86_MEANING


@dataclass
class HardwareInfo:
    """Machine description: CPU, cores, caches (bytes), ISA features, versions; dict-like."""

    cpu: str
    machine: str
    logical_cores: int
    physical_cores: int
    l1d: int | None
    l2: int | None
    l3: int | None
    features: dict = field(default_factory=dict)
    flags: frozenset = field(default_factory=frozenset, repr=False)
    python: str = ""
    numpy: str = ""
    numba: str = ""
    llvmlite: str = ""
    numba_cpu: str = ""
    numba_cpu_env: str | None = None
    numba_threads: int = 1
    arch: str = ARCH
    system: str = sys.platform
    performance_cores: int | None = None
    efficiency_cores: int | None = None
    l2_shared_by: int | None = None
    sve_bits: int | None = None
    emulated_on: str | None = None
    target_note: str | None = None   # "targeting haswell (…) on a rocketlake host", when they differ
    host_cpu: str = ""               # LLVM's name for this machine's core (numba_cpu unless overridden)

    # -- dict-like access
    def __getitem__(self, key: str) -> Any:
        """Field by name, e.g. info()['l2']."""
        if key not in self.keys():
            raise KeyError(f"{key!r}; known keys: {', '.join(self.keys())}")
        return getattr(self, key)

    def __contains__(self, key: object) -> bool:
        """True if key names a field."""
        return key in self.keys()

    def keys(self) -> list[str]:
        """Field names."""
        return [k for k in self.__dataclass_fields__ if k != "flags"]

    def items(self):
        """(name, value) pairs."""
        return [(k, getattr(self, k)) for k in self.keys()]

    def get(self, key: str, default: Any = None) -> Any:
        """Field by name, or default."""
        return getattr(self, key) if key in self.keys() else default

    def to_dict(self) -> dict:
        """Plain dict of all fields (flags as a sorted list)."""
        d = asdict(self)
        d["flags"] = sorted(self.flags)
        return d

    def has(self, feature: str) -> bool:
        """True if the CPU has the ISA feature ('avx2', 'avx512_vpopcntdq', 'sse4.2', …)."""
        name = isa.canonical(_normalise(feature), self.arch)
        if name in self.features:
            return bool(self.features[name])
        if name in self.flags or _LLVM_NAMES.get(name, name) in self.flags:
            return True
        if self.flags and re.fullmatch(r"[a-z0-9_.]+", name):
            return False
        raise ValueError(f"unknown ISA feature {feature!r}; known: {', '.join(self.feature_names)}")

    @property
    def feature_names(self) -> tuple[str, ...]:
        """The lab-relevant features of this machine's architecture, in table order."""
        return isa.features_of(self.arch) or tuple(self.features)

    def meaning(self, feature: str) -> str:
        """What a feature means for the labs on this architecture ('' if the table has no line)."""
        return isa.meaning_of(self.arch).get(feature, "")

    def summary(self) -> str:
        """One line: CPU, cores, caches, widest vectors, numba target."""
        return _summary(self)

    def __str__(self) -> str:
        """Multi-line description (what `labkit doctor` prints before its checks)."""
        return "\n".join(_describe(self))

    def _repr_html_(self) -> str:
        """HTML table for Jupyter."""
        rows = [
            ("CPU", self.cpu + f" [{self.arch}]"), ("cores", _cores(self)),
            ("caches", _caches(self)),
            ("numba target", self.numba_cpu + (f" (NUMBA_CPU_NAME={self.numba_cpu_env})" if self.numba_cpu_env else "")),
            ("numba threads", str(self.numba_threads)),
            ("versions", f"Python {self.python}, numpy {self.numpy}, numba {self.numba}, llvmlite {self.llvmlite}"),
        ]
        trs = "".join(f"<tr><th style='text-align:left;padding:1px 8px'>{html.escape(k)}</th>"
                      f"<td style='text-align:left;padding:1px 8px'>{html.escape(v)}</td></tr>" for k, v in rows)
        feats = "".join(
            f"<tr><td style='padding:1px 8px;color:{'#2e7d32' if self.features.get(f) else '#c62828'}'>"
            f"{'✔' if self.features.get(f) else '✘'} {html.escape(f)}</td>"
            f"<td style='text-align:left;padding:1px 8px'>{html.escape(self.meaning(f))}</td></tr>"
            for f in self.feature_names)
        return (f"<table class='labkit-hardware' style='border-collapse:collapse'>{trs}</table>"
                f"<table class='labkit-features' style='border-collapse:collapse;margin-top:4px'>{feats}</table>")


def _normalise(feature: str) -> str:
    if not isinstance(feature, str) or not feature.strip():
        raise TypeError(f"feature must be a str like 'avx2', got {feature!r}")
    return feature.strip().lower()


# --------------------------------------------------------------------------- probing

def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return None


def _cpuinfo() -> tuple[str | None, set[str], int | None]:
    """(model name, flags, physical cores) from /proc/cpuinfo."""
    d = sources.parse_cpuinfo(_read("/proc/cpuinfo"))
    return d["name"], d["flags"], d["physical"]


def _size(text: str) -> int | None:
    m = re.fullmatch(r"\s*(\d+)\s*([KMG]?)(i?B)?\s*", text or "", re.I)
    if not m:
        return None
    return int(m.group(1)) * {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[m.group(2).upper()]


def _sys_caches() -> dict[str, int]:
    base = "/sys/devices/system/cpu/cpu0/cache"
    out: dict[str, int] = {}
    try:
        entries = sorted(e for e in os.listdir(base) if e.startswith("index"))
    except OSError:
        return out
    for e in entries:
        level = (_read(f"{base}/{e}/level") or "").strip()
        kind = (_read(f"{base}/{e}/type") or "").strip()
        size = _size((_read(f"{base}/{e}/size") or "").strip())
        if not size:
            continue
        if level == "1" and kind == "Data":
            out["l1d"] = size
        elif level in ("2", "3") and kind in ("Unified", "Data"):
            out[f"l{level}"] = size
    return out


def _lscpu_caches() -> dict[str, int]:
    try:
        text = subprocess.run(["lscpu", "-C", "-B"], capture_output=True, text=True, timeout=5).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    out: dict[str, int] = {}
    lines = text.splitlines()
    if not lines:
        return out
    head = lines[0].split()
    if "NAME" not in head or "ONE-SIZE" not in head:
        return out
    i_name, i_size = head.index("NAME"), head.index("ONE-SIZE")
    for line in lines[1:]:
        cols = line.split()
        if len(cols) <= max(i_name, i_size):
            continue
        key = cols[i_name].lower()
        if key in ("l1d", "l2", "l3"):
            size = _size(cols[i_size])
            if size:
                out[key] = size
    return out


def _physical_from_sys(logical: int) -> int | None:
    seen = set()
    for i in range(logical):
        pkg = _read(f"/sys/devices/system/cpu/cpu{i}/topology/physical_package_id")
        core = _read(f"/sys/devices/system/cpu/cpu{i}/topology/core_id")
        if pkg is None or core is None:
            return None
        seen.add((pkg.strip(), core.strip()))
    return len(seen) or None


def _llvm_flags() -> set[str]:
    """Host features as LLVM reports them (LLVM's spelling: 'sse4.2', 'neon', 'dotprod' …)."""
    try:
        import llvmlite.binding as llvm
        feats = llvm.get_host_cpu_features()
    except Exception:
        return set()
    return {k for k, v in feats.items() if v}


def _cpu_name_fallback() -> str:
    name = platform.processor() or ""
    if not name and sys.platform == "darwin":  # pragma: no cover - not our CI
        try:
            name = subprocess.run(["sysctl", "-n", "machdep.cpu.brand_string"], capture_output=True,
                                  text=True, timeout=5).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            name = ""
    return name or platform.machine() or "unknown CPU"


@functools.lru_cache(maxsize=1)
def _probe() -> HardwareInfo:
    import llvmlite.binding as llvm

    machine, arch = platform.machine(), ARCH
    darwin = sys.platform == "darwin"
    try:
        host = llvm.get_host_cpu_name()
    except Exception:  # pragma: no cover
        host = "unknown"
    hwcap = sources.read_hwcap() if arch == "aarch64" and sys.platform.startswith("linux") else set()
    hw = build(machine=machine, system=sys.platform,
               cpuinfo=None if darwin else _read("/proc/cpuinfo"),
               sysctl=sources.read_sysctl() if darwin else None,
               hwcap=hwcap, llvm_features=_llvm_flags(), llvm_cpu=host)
    if arch == "aarch64" and hw.features.get("sve") and not darwin:
        hw.sve_bits = sources.read_sve_bits()
    from labkit.target import target
    t = target()
    if t.overridden:            # what numba compiles for, and how it differs from the host
        hw.numba_cpu, hw.target_note = t.cpu, t.describe()
    return hw


def build(*, machine: str, system: str = "linux", cpuinfo: str | None = None,
          sysctl: dict | None = None, hwcap: set[str] = frozenset(), llvm_features=(),
          llvm_cpu: str = "unknown", logical: int | None = None) -> HardwareInfo:
    """A :class:`HardwareInfo` from recorded sources — how :func:`info` describes this machine, and
    how tests describe others: ``machine`` (``platform.machine()``), ``system`` (``sys.platform``),
    ``cpuinfo`` (Linux ``/proc/cpuinfo`` text), ``sysctl`` (macOS ``sysctl hw machdep.cpu`` as a
    dict, :func:`sources.parse_sysctl`), ``hwcap`` (Linux AArch64 aux-vector feature names),
    ``llvm_features`` (LLVM's host feature names that are on), ``llvm_cpu`` (LLVM's host CPU name).
    Caches and cores not in those sources come from this machine's /sys (Linux) or are None."""
    import llvmlite
    import numba
    import numpy

    arch = isa.arch_of(machine)
    logical = logical or os.cpu_count() or 1
    src = (_mac_facts(sysctl, logical) if sysctl
           else _linux_facts(cpuinfo, arch, hwcap, system, logical))
    flags, logical, caches = src["flags"], src["logical"], src["caches"]
    if not flags or sysctl:
        flags |= set(llvm_features)
    canon = isa.canonical_set(flags, arch)
    if arch == "aarch64":
        canon.add("neon")  # ASIMD is mandatory for AArch64 Linux and macOS
    name = src["name"] or _fallback_name(llvm_cpu, arch, src["emulated"])
    phys = src["physical"] or (None if sysctl else _physical_from_sys(logical)) or logical
    return HardwareInfo(
        cpu=name, machine=machine,
        logical_cores=logical, physical_cores=min(phys, logical),
        l1d=caches.get("l1d"), l2=caches.get("l2"), l3=caches.get("l3"),
        features={f: f in canon for f in isa.features_of(arch)}, flags=frozenset(flags | canon),
        python=platform.python_version(), numpy=numpy.__version__, numba=numba.__version__,
        llvmlite=llvmlite.__version__, numba_cpu=llvm_cpu,
        numba_cpu_env=os.environ.get("NUMBA_CPU_NAME") or None, numba_threads=_numba_threads(),
        host_cpu=llvm_cpu, arch=arch, system=system, performance_cores=src["performance"],
        efficiency_cores=src["efficiency"], l2_shared_by=src["l2_shared_by"],
        emulated_on=src["emulated"],
    )


def _mac_facts(sysctl: dict, logical: int) -> dict:
    """What macOS's sysctl says: name, flags, cores (performance and efficiency), caches."""
    mac = sources.mac_info(sysctl)
    return {"name": mac["name"], "flags": set(mac["flags"]), "physical": mac["physical"],
            "logical": mac["logical"] or logical, "performance": mac["performance"],
            "efficiency": mac["efficiency"], "l2_shared_by": mac["l2_shared_by"],
            "caches": {k: mac[k] for k in ("l1d", "l2", "l3") if mac[k]}, "emulated": None}


def _linux_facts(cpuinfo: str | None, arch: str, hwcap, system: str, logical: int) -> dict:
    """What /proc/cpuinfo, the AArch64 aux vector and this machine's /sys or lscpu say: name,
    flags, physical cores, caches, and the host's CPU under qemu's user-mode emulation."""
    d = sources.parse_cpuinfo(cpuinfo)
    name, flags, phys, emulated = d["name"], set(d["flags"]), d["physical"], None
    if arch == "aarch64" and d["kind"] == "x86":
        # qemu user-mode emulation shows the host's /proc/cpuinfo: it says nothing about this CPU
        emulated, name, flags, phys = d["name"] or "an x86 CPU", None, set(), None
    if arch == "aarch64" and not name:
        name = isa.arm_cpu_name(d["implementer"], d["part"])
    flags |= set(hwcap)
    caches: dict[str, int] = {}
    if not system.startswith("darwin"):
        caches = _sys_caches()
        if len(caches) < 3:
            caches = {**_lscpu_caches(), **caches}
    return {"name": name, "flags": flags, "physical": phys, "logical": logical,
            "performance": None, "efficiency": None, "l2_shared_by": None, "caches": caches,
            "emulated": emulated}


def _fallback_name(llvm_cpu: str, arch: str, emulated: str | None) -> str:
    """A CPU name when the sources gave none: LLVM's name for the core, or the platform's."""
    return (f"{llvm_cpu} ({arch})" if llvm_cpu not in ("", "unknown", "generic")
            else _cpu_name_fallback() if not emulated else f"generic {arch} CPU")


def _numba_threads() -> int:
    """numba's thread count (1 when its config cannot say)."""
    import numba
    try:
        return int(numba.config.NUMBA_NUM_THREADS)
    except Exception:  # pragma: no cover
        return 1


def info(refresh: bool = False) -> HardwareInfo:
    """Describe this machine (cached; refresh=True probes again) → HardwareInfo."""
    if refresh:
        _probe.cache_clear()
    return _probe()


def has(feature: str) -> bool:
    """True if code numba compiles here may use the ISA feature, e.g. has('avx2'),
    has('avx512_vpopcntdq'): the host's features, or the target's when ``NUMBA_CPU_NAME`` /
    ``NUMBA_CPU_FEATURES`` choose another CPU (:mod:`labkit.target`; a feature labkit
    does not probe counts as absent then). ``info().has`` always describes the host."""
    hw = info()
    if hw.arch == "x86_64":
        from labkit.target import PROBED, target
        t = target()
        if t.overridden:
            name = isa.canonical(_normalise(feature), hw.arch)
            if name in PROBED:
                return name in t.features
            hw.has(feature)           # an unknown name is still an error
            return False
    return hw.has(feature)


def summary() -> str:
    """One-line hardware summary for benchmark reports."""
    return info().summary()
