"""ISA features per architecture: which ones matter for the labs, what each means for them, and the
translation of every source's spelling (Linux ``/proc/cpuinfo``, macOS ``sysctl hw.optional.*`` /
``machdep.cpu.*``, LLVM's host features) into one canonical name per feature."""
from __future__ import annotations

import platform

# ---------------------------------------------------------------- x86-64 (canonical = /proc/cpuinfo)

X86_FEATURES = ("sse4_2", "popcnt", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl",
                "avx512_vpopcntdq")

X86_MEANING = {
    "sse4_2": "128-bit SSE4.2 (xmm), beyond the x86-64 baseline (SSE2): lab 01 lanes ×8 int16 without AVX",
    "popcnt": "scalar popcnt: lab 04 counts bits one 64-bit word per instruction",
    "avx": "256-bit float vectors (ymm): lab 02/03 evaluate 4 doubles per instruction",
    "avx2": "256-bit integer vectors: lab 01 lanes ×16 int16",
    "fma": "fused multiply-add: lab 02/03 do a*b+c in one instruction (with fastmath=True)",
    "avx512f": "512-bit registers (zmm): up to 8 doubles per instruction — whether numba's loops use them, and whether they double AVX2's throughput, depends on the core (see below)",
    "avx512bw": "512-bit byte/word ops: lab 01 lanes ×32 int16",
    "avx512vl": "AVX-512 masking/ops on xmm/ymm too: LLVM may prefer 256-bit AVX-512 code",
    "avx512_vpopcntdq": "lab 04: popcount runs as vpopcntq on 512-bit registers",
}

# /proc/cpuinfo spelling -> LLVM (llvmlite host features) spelling
X86_LLVM_NAMES = {
    "sse4_2": "sse4.2", "sse4_1": "sse4.1", "avx512_vpopcntdq": "avx512vpopcntdq",
    "avx512_bitalg": "avx512bitalg", "avx512_vbmi2": "avx512vbmi2", "avx512_vnni": "avx512vnni",
    "avx512_bf16": "avx512bf16", "pclmulqdq": "pclmul", "lahf_lm": "sahf", "abm": "lzcnt",
}
X86_ALIASES = {"sse4.2": "sse4_2", "sse42": "sse4_2", "avx512vpopcntdq": "avx512_vpopcntdq",
               "vpopcntdq": "avx512_vpopcntdq", "avx512": "avx512f", "avx-512": "avx512f",
               "avx1.0": "avx", "avx1_0": "avx", "avx2_0": "avx2", "sse4.1": "sse4_1"}

# ---------------------------------------------------------------- AArch64 (canonical = LLVM's names)

ARM_FEATURES = ("neon", "fp16", "dotprod", "i8mm", "lse", "sve", "sve2")

ARM_MEANING = {
    "neon": "128-bit NEON/ASIMD (v registers): the AArch64 baseline; lab 01 lanes ×8 int16, lab 02/03 "
            "2 doubles per instruction (fmla: FMA is baseline), lab 04 popcount as cnt + addp/uaddlv",
    "fp16": "half-precision arithmetic (fullfp16): float16 math in hardware; the labs compute in "
            "float32/float64, so it changes nothing there",
    "dotprod": "int8 dot products (sdot/udot): 4 int8 products summed per 32-bit lane per instruction",
    "i8mm": "int8 matrix multiply (smmla, Armv8.6): not used by the labs; marks a recent core",
    "lse": "large-system atomics (ldadd, cas): cheap atomic counters for parallel code",
    "sve": "scalable vectors (z registers, 128–2048 bit): numba's plain loops stay NEON unless "
           "NUMBA_CPU_NAME=neoverse-v1 NUMBA_CPU_FEATURES=+sve; gathers help lab 02's AoS layout",
    "sve2": "SVE2: integer/bit ops on z registers (e.g. lab 04's popcount as cnt on z registers)",
}

# every source's spelling -> canonical (Linux cpuinfo 'Features', macOS sysctl, LLVM host features)
ARM_ALIASES = {
    "asimd": "neon", "advsimd": "neon", "simd": "neon", "neon": "neon", "feat_advsimd": "neon",
    "asimdhp": "fp16", "fphp": "fp16", "fullfp16": "fp16", "feat_fp16": "fp16", "neon_fp16": "fp16",
    "asimddp": "dotprod", "dotprod": "dotprod", "feat_dotprod": "dotprod", "armv8_2_dotprod": "dotprod",
    "i8mm": "i8mm", "feat_i8mm": "i8mm",
    "atomics": "lse", "lse": "lse", "feat_lse": "lse", "armv8_1_atomics": "lse",
    "sve": "sve", "feat_sve": "sve", "sve2": "sve2", "feat_sve2": "sve2",
    "bf16": "bf16", "feat_bf16": "bf16", "crc32": "crc", "crc": "crc", "armv8_crc32": "crc",
    "aes": "aes", "feat_aes": "aes", "sha2": "sha2", "feat_sha256": "sha2", "sha3": "sha3",
    "feat_sha3": "sha3", "fcma": "complxnum", "feat_fcma": "complxnum", "jscvt": "jsconv",
    "sme": "sme", "feat_sme": "sme", "fp": "fp-armv8", "floatingpoint": "fp-armv8",
}

# /proc/cpuinfo 'CPU implementer' -> (vendor, {'CPU part' -> core}); the cores students meet
ARM_PARTS = {
    0x41: ("Arm", {0xd03: "Cortex-A53", 0xd05: "Cortex-A55", 0xd07: "Cortex-A57", 0xd08: "Cortex-A72",
                   0xd0b: "Cortex-A76", 0xd0c: "Neoverse-N1", 0xd0d: "Cortex-A77", 0xd41: "Cortex-A78",
                   0xd44: "Cortex-X1", 0xd40: "Neoverse-V1", 0xd46: "Cortex-A510", 0xd47: "Cortex-A710",
                   0xd48: "Cortex-X2", 0xd49: "Neoverse-N2", 0xd4f: "Neoverse-V2", 0xd8e: "Neoverse-N3",
                   0xd84: "Neoverse-V3"}),
    0x46: ("Fujitsu", {0x001: "A64FX"}),
    0x48: ("HiSilicon", {0xd01: "Kunpeng-920"}),
    0x61: ("Apple", {0x022: "M1 Icestorm", 0x023: "M1 Firestorm", 0x032: "M2 Blizzard",
                     0x033: "M2 Avalanche"}),
    0xc0: ("Ampere", {0xac3: "Ampere-1", 0xac4: "Ampere-1a"}),
}

# ---------------------------------------------------------------- per architecture

X86 = ("x86_64", "amd64", "i686", "i386", "x86")
ARM = ("aarch64", "arm64", "armv8", "armv8l")


def arch_of(machine: str | None = None) -> str:
    """'x86_64', 'aarch64', or the machine name itself (lower case) for any other architecture."""
    m = (machine if machine is not None else platform.machine()).lower()
    if m in X86:
        return "x86_64"
    if m in ARM or m.startswith("arm64"):
        return "aarch64"
    return m


FEATURES_BY_ARCH = {"x86_64": X86_FEATURES, "aarch64": ARM_FEATURES}
MEANING_BY_ARCH = {"x86_64": X86_MEANING, "aarch64": ARM_MEANING}


def features_of(arch: str) -> tuple[str, ...]:
    """The lab-relevant features of an architecture ('x86_64', 'aarch64'; others: none)."""
    return FEATURES_BY_ARCH.get(arch, ())


def meaning_of(arch: str) -> dict[str, str]:
    """feature → what it means for the labs, for an architecture."""
    return MEANING_BY_ARCH.get(arch, {})


def canonical(name: str, arch: str) -> str:
    """One spelling per feature: 'sse4.2' → 'sse4_2' (x86), 'asimd'/'FEAT_DotProd' → 'neon'/'dotprod'."""
    low = name.strip().lower()
    if arch == "aarch64":
        low = low.replace("-", "_")
        return ARM_ALIASES.get(low, low)
    if low == "avx-512":
        return "avx512f"
    low = X86_ALIASES.get(low, low)
    low = low.replace("-", "_")
    return X86_ALIASES.get(low, low)


def canonical_set(names, arch: str) -> set[str]:
    """Canonical names of a collection of feature spellings from any source."""
    out = {canonical(n, arch) for n in names if n}
    if arch == "x86_64":  # LLVM's spelling (sse4.2, avx512vpopcntdq…) back to /proc/cpuinfo's
        back = {v: k for k, v in X86_LLVM_NAMES.items()}
        out |= {back[n] for n in list(out) if n in back}
    elif arch == "aarch64" and out:
        out.add("neon")  # ASIMD is mandatory in the AArch64 Linux/macOS ABI
    return out


def arm_cpu_name(implementer: str | None, part: str | None) -> str | None:
    """'CPU implementer' 0x41 + 'CPU part' 0xd40 → 'Arm Neoverse-V1' (None if unknown)."""
    try:
        imp, prt = int(implementer or "", 0), int(part or "", 0)
    except ValueError:
        return None
    vendor, parts = ARM_PARTS.get(imp, (None, {}))
    if vendor is None:
        return None
    return f"{vendor} {parts[prt]}" if prt in parts else f"{vendor} core (part {prt:#x})"


def widest(arch: str, features: dict, machine: str, sve_bits: int | None = None) -> str:
    """The widest vector ISA in words: 'AVX-512 (bw/vl/vpopcntdq)', 'AVX2+FMA', 'NEON+dotprod', 'SVE2 (256-bit)'."""
    if arch == "aarch64":
        vl = f" ({sve_bits}-bit)" if sve_bits else ""
        if features.get("sve2"):
            return f"SVE2{vl} + NEON"
        if features.get("sve"):
            return f"SVE{vl} + NEON"
        return "NEON" + ("+dotprod" if features.get("dotprod") else "")
    if features.get("avx512f"):
        extra = [n for n in ("bw", "vl") if features.get(f"avx512{n}")]
        if features.get("avx512_vpopcntdq"):
            extra.append("vpopcntdq")
        return "AVX-512" + (f" ({'/'.join(extra)})" if extra else "")
    if features.get("avx2"):
        return "AVX2" + ("+FMA" if features.get("fma") else "")
    if features.get("avx"):
        return "AVX"
    if features.get("sse4_2"):
        return "SSE4.2"
    return "no x86 SIMD detected" if arch == "x86_64" else machine
