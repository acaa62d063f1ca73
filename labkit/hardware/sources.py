"""Readers of what the operating system says about the CPU, each a pure parser of recorded text
plus a thin reader of the live source: Linux ``/proc/cpuinfo`` (x86 ``flags`` and AArch64
``Features`` / ``CPU part``), Linux AArch64 ``getauxval(AT_HWCAP)`` bits and the SVE vector length
(``prctl``), macOS ``sysctl`` (cores by performance level, caches, ``hw.optional.*`` features)."""
from __future__ import annotations

import ctypes
import ctypes.util
import re
import subprocess

# ---------------------------------------------------------------- /proc/cpuinfo


def parse_cpuinfo(text: str | None) -> dict:
    """/proc/cpuinfo text → {'name', 'flags', 'physical', 'implementer', 'part', 'kind'}.

    ``kind`` is 'x86' (a ``flags`` line), 'arm' (``Features`` / ``CPU implementer``) or None;
    ``physical`` counts distinct (physical id, core id) pairs (None when the file has none)."""
    out = {"name": None, "flags": set(), "physical": None, "implementer": None, "part": None,
           "kind": None}
    if not text:
        return out
    cores = set()
    phys = core = None
    for line in text.splitlines():
        if ":" not in line:
            if phys is not None or core is not None:
                cores.add((phys, core))
            phys = core = None
            continue
        k, v = (s.strip() for s in line.split(":", 1))
        if k in ("model name", "Model Name", "cpu model") and out["name"] is None and v:
            out["name"] = v
        elif k in ("flags", "Features") and not out["flags"]:
            out["flags"] = set(v.split())
            out["kind"] = "x86" if k == "flags" else "arm"
        elif k == "CPU implementer" and out["implementer"] is None:
            out["implementer"], out["kind"] = v, out["kind"] or "arm"
        elif k == "CPU part" and out["part"] is None:
            out["part"] = v
        elif k == "physical id":
            phys = v
        elif k == "core id":
            core = v
    if phys is not None or core is not None:
        cores.add((phys, core))
    out["physical"] = len(cores) or None
    return out


# ---------------------------------------------------------------- Linux AArch64: HWCAP, SVE length

AT_HWCAP, AT_HWCAP2 = 16, 26
# bit → /proc/cpuinfo name (linux/arch/arm64/include/uapi/asm/hwcap.h)
HWCAP_BITS = {0: "fp", 1: "asimd", 3: "aes", 6: "sha2", 7: "crc32", 8: "atomics", 9: "fphp",
              10: "asimdhp", 17: "sha3", 20: "asimddp", 22: "sve"}
HWCAP2_BITS = {1: "sve2", 13: "i8mm", 14: "bf16"}
PR_SVE_GET_VL = 51


def hwcap_flags(hwcap: int, hwcap2: int = 0) -> set[str]:
    """AArch64 HWCAP / HWCAP2 bit masks → /proc/cpuinfo feature names."""
    names = {n for b, n in HWCAP_BITS.items() if hwcap >> b & 1}
    return names | {n for b, n in HWCAP2_BITS.items() if hwcap2 >> b & 1}


def _libc():
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
    except OSError:  # pragma: no cover
        return None


def read_hwcap() -> set[str]:
    """Features the kernel (or qemu-user) reports in the aux vector (Linux AArch64; else empty)."""
    libc = _libc()
    fn = getattr(libc, "getauxval", None) if libc is not None else None
    if fn is None:
        return set()
    fn.restype, fn.argtypes = ctypes.c_ulong, [ctypes.c_ulong]
    return hwcap_flags(int(fn(AT_HWCAP)), int(fn(AT_HWCAP2)))


def read_sve_bits() -> int | None:
    """This process's SVE vector length in bits (Linux AArch64 ``prctl(PR_SVE_GET_VL)``, else the
    default in ``/proc/sys/abi/sve_default_vector_length``); None without SVE."""
    libc = _libc()
    fn = getattr(libc, "prctl", None) if libc is not None else None
    if fn is not None:
        fn.restype = ctypes.c_int
        vl = fn(PR_SVE_GET_VL, ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0))
        if vl > 0 and vl & 0xFFFF:
            return (vl & 0xFFFF) * 8
    try:
        with open("/proc/sys/abi/sve_default_vector_length") as fh:
            vl = int(fh.read().strip())
        return vl * 8 if vl > 0 else None
    except (OSError, ValueError):
        return None


# ---------------------------------------------------------------- macOS sysctl

SYSCTL_KEYS = ("hw", "machdep.cpu")


def parse_sysctl(text: str | None) -> dict[str, str]:
    """``sysctl`` output ('hw.l2cachesize: 4194304' lines) → {key: value}."""
    out: dict[str, str] = {}
    for line in (text or "").splitlines():
        m = re.match(r"\s*([\w.]+)\s*[:=]\s*(.*?)\s*$", line)
        if m:
            out[m.group(1)] = m.group(2)
    return out


def read_sysctl() -> dict[str, str]:
    """The live ``sysctl hw machdep.cpu`` (macOS; {} elsewhere or on error)."""
    try:
        text = subprocess.run(["sysctl", *SYSCTL_KEYS], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    return parse_sysctl(text)


def _int(d: dict, key: str) -> int | None:
    try:
        v = int(str(d.get(key, "")).split()[0])
    except (ValueError, IndexError):
        return None
    return v if v > 0 else None


def mac_info(sysctl: dict[str, str]) -> dict:
    """macOS sysctl values → {'name', 'logical', 'physical', 'performance', 'efficiency', 'l1d', 'l2',
    'l3', 'l2_shared_by', 'flags'}.  Caches are the performance cores' (``hw.perflevel0.*``) where
    macOS reports performance levels (Apple silicon), else ``hw.l1dcachesize`` …; ``flags`` are the
    ``hw.optional.*`` names set to 1 plus the words of ``machdep.cpu.features`` /
    ``leaf7_features`` (Intel Macs), lower case."""
    levels = _int(sysctl, "hw.nperflevels") or 0
    perf = eff = None
    pre = ""
    if levels >= 1 and _int(sysctl, "hw.perflevel0.physicalcpu"):
        pre = "hw.perflevel0."
        if levels >= 2:
            names = {i: sysctl.get(f"hw.perflevel{i}.name", "").lower() for i in range(levels)}
            counts = {i: _int(sysctl, f"hw.perflevel{i}.physicalcpu") for i in range(levels)}
            perf = sum(c or 0 for i, c in counts.items() if names[i] != "efficiency") or None
            eff = sum(c or 0 for i, c in counts.items() if names[i] == "efficiency") or None
    flags: set[str] = set()
    for key, value in sysctl.items():
        if key.startswith("hw.optional.") and value.strip() == "1":
            flags.add(key.rsplit(".", 1)[1].lower())
    for key in ("machdep.cpu.features", "machdep.cpu.leaf7_features", "machdep.cpu.extfeatures"):
        flags |= {w.lower() for w in sysctl.get(key, "").split()}
    return {
        "name": sysctl.get("machdep.cpu.brand_string") or None,
        "logical": _int(sysctl, "hw.logicalcpu") or _int(sysctl, "hw.ncpu"),
        "physical": _int(sysctl, "hw.physicalcpu"),
        "performance": perf, "efficiency": eff,
        "l1d": _int(sysctl, pre + "l1dcachesize") or _int(sysctl, "hw.l1dcachesize"),
        "l2": _int(sysctl, pre + "l2cachesize") or _int(sysctl, "hw.l2cachesize"),
        "l3": _int(sysctl, pre + "l3cachesize") or _int(sysctl, "hw.l3cachesize"),
        "l2_shared_by": _int(sysctl, pre + "cpusperl2") if pre else None,
        "flags": flags,
    }
