"""Tests for labkit.hardware: probing, fallbacks, feature lookup, native width, summary, doctor."""
import platform
import subprocess
import sys

import numba
import numpy as np
import pytest

from labkit import hardware
from labkit.hardware import _doctor, isa, probe, roof, sources

X86 = platform.machine().lower() in ("x86_64", "amd64")
ARM = platform.machine().lower() in ("aarch64", "arm64")


def test_info_structure():
    hw = hardware.info()
    assert isinstance(hw, hardware.HardwareInfo)
    assert hw is hardware.info()  # cached
    assert isinstance(hw.cpu, str) and hw.cpu
    assert hw.logical_cores >= 1 and 1 <= hw.physical_cores <= hw.logical_cores
    for key in ("l1d", "l2", "l3"):
        assert hw[key] is None or (isinstance(hw[key], int) and hw[key] > 0)
    assert set(hw.features) == set(hardware.FEATURES)
    assert all(isinstance(v, bool) for v in hw.features.values())
    assert hw.numba and hw.llvmlite and hw.numpy and hw.python
    assert hw.numba_cpu and hw.numba_threads >= 1
    assert "cpu" in hw and hw.get("nope", 7) == 7
    assert dict(hw.items())["cpu"] == hw.cpu
    with pytest.raises(KeyError, match="known keys"):
        hw["nope"]
    d = hw.to_dict()
    assert isinstance(d["flags"], list) and d["l2"] == hw.l2


def test_info_refresh_reprobes():
    a = hardware.info()
    b = hardware.info(refresh=True)
    assert a.cpu == b.cpu and a.features == b.features


def test_has_spellings_and_errors():
    assert hardware.has("sse4.2") == hardware.has("sse4_2")
    assert hardware.has("avx512vpopcntdq") == hardware.has("avx512_vpopcntdq")
    if X86:
        assert hardware.has("AVX2") == hardware.info().features["avx2"]
        assert not hardware.has("neon") and not hardware.has("sve")
    if ARM:
        assert hardware.has("neon") and hardware.has("asimd") and hardware.has("AdvSIMD")
        assert not hardware.has("avx2")
    with pytest.raises(TypeError, match="avx2"):
        hardware.has(3)
    with pytest.raises(TypeError):
        hardware.has("  ")


def test_meaning_for_every_feature():
    assert set(hardware.MEANING) == set(hardware.FEATURES)
    for arch, feats in isa.FEATURES_BY_ARCH.items():
        assert set(isa.MEANING_BY_ARCH[arch]) == set(feats), arch
    x86, arm = isa.MEANING_BY_ARCH["x86_64"], isa.MEANING_BY_ARCH["aarch64"]
    assert "vpopcntq" in x86["avx512_vpopcntdq"]
    assert "×16 int16" in x86["avx2"]
    assert "×8 int16" in arm["neon"] and "cnt" in arm["neon"] and "z registers" in arm["sve"]
    if X86:
        assert hardware.MEANING is isa.X86_MEANING
    if ARM:
        assert hardware.MEANING is isa.ARM_MEANING


def test_summary_is_one_line():
    s = hardware.summary()
    hw = hardware.info()
    assert "\n" not in s and hw.cpu in s and "cores" in s and hw.numba in s
    html = hw._repr_html_()
    assert "<table" in html and hw.cpu in html and ("✔" in html or "✘" in html)
    assert "ISA features" in str(hw)


def test_size_parsing():
    assert probe._size("32K") == 32768
    assert probe._size("1024K") == 1 << 20
    assert probe._size("32 MiB") == 32 << 20
    assert probe._size("512") == 512
    assert probe._size("garbage") is None


CPUINFO = """processor\t: 0
model name\t: Test CPU 9000
physical id\t: 0
core id\t\t: 0
flags\t\t: fpu sse4_2 avx avx2 fma popcnt

processor\t: 1
model name\t: Test CPU 9000
physical id\t: 0
core id\t\t: 0
flags\t\t: fpu sse4_2 avx avx2 fma popcnt

"""


def test_cpuinfo_parsing(monkeypatch):
    monkeypatch.setattr(probe, "_read", lambda p: CPUINFO if p == "/proc/cpuinfo" else None)
    name, flags, phys = probe._cpuinfo()
    assert name == "Test CPU 9000" and "avx2" in flags and "avx512f" not in flags and phys == 1


def test_lscpu_fallback(monkeypatch):
    out = ("NAME ONE-SIZE ALL-SIZE WAYS TYPE LEVEL\nL1d 32768 65536 8 Data 1\n"
           "L1i 32768 65536 8 Instruction 1\nL2 1048576 2097152 8 Unified 2\nL3 33554432 33554432 16 Unified 3\n")
    monkeypatch.setattr(subprocess, "run",
                        lambda *a, **k: subprocess.CompletedProcess(a, 0, stdout=out, stderr=""))
    assert probe._lscpu_caches() == {"l1d": 32768, "l2": 1 << 20, "l3": 32 << 20}


def test_probe_without_proc_and_sys(monkeypatch):
    monkeypatch.setattr(probe, "_read", lambda p: None)
    monkeypatch.setattr(probe, "_lscpu_caches", lambda: {})
    try:
        hw = hardware.info(refresh=True)
        assert hw.cpu and hw.logical_cores >= 1
        assert hw.l1d is None and hw.l2 is None
        # ISA flags come from llvmlite's host features instead
        assert set(hw.features) == set(hardware.FEATURES)
        assert "cores" in hw.summary() and "?" in hw.summary()
    finally:
        monkeypatch.undo()
        hardware.info(refresh=True)


def test_doctor_no_smoke(capsys):
    assert hardware.doctor(["--no-smoke"]) == 0
    out = capsys.readouterr().out
    for f in hardware.FEATURES:
        assert f in out
    assert f"ISA features ({hardware.info().arch})" in out and "vectors" in out
    assert "numba" in out and "caches" in out and ("✔" in out or "✘" in out)


def test_doctor_full(capsys):
    assert hardware.doctor([]) == 0
    out = capsys.readouterr().out
    assert "parallel kernel" in out and "jupyterlab" in out and "ipywidgets" in out
    assert "labkit is ready." in out


def test_doctor_fails_with_advice(monkeypatch, capsys):
    monkeypatch.setattr(_doctor, "_check_import",
                        lambda mod, min_major=None: (False, f"cannot import {mod}: ImportError"))
    assert hardware.doctor(["doctor"]) == 1
    out = capsys.readouterr().out
    assert "✘ cannot import ipywidgets" in out and "make install" in out and "NOT ready" in out


def test_machine_limits_and_their_errors():
    assert hardware.measure_bandwidth(mib=4, repeat=2) > 0
    assert hardware.measure_bandwidth(mib=4, repeat=2, kind="read") > 0
    with pytest.raises(ValueError, match="kind"):
        hardware.measure_bandwidth(mib=4, kind="copy")
    assert hardware.measure_fma_rate(repeat=2) > 0
    for bad in (0, -1, 1.5, True, "4"):
        with pytest.raises(ValueError, match="mib"):
            hardware.measure_bandwidth(mib=bad)
    with pytest.raises(ValueError, match="repeat"):
        hardware.measure_fma_rate(repeat=0)
    with pytest.raises(TypeError, match="full_width"):
        hardware.measure_fma_rate(full_width="yes")
    assert hardware.measure_fma_rate(repeat=2, full_width=False) > 0
    from labkit import bspline
    assert bspline.measure_bandwidth is hardware.measure_bandwidth   # the notebook's names


def test_doctor_measure(monkeypatch, capsys):
    monkeypatch.setattr(roof, "measure_bandwidth", lambda **kw: 30.0)
    monkeypatch.setattr(roof, "measure_fma_rate", lambda **kw: 60.0)
    assert hardware.doctor(["--measure", "--no-smoke"]) == 0
    out = capsys.readouterr().out
    assert "30.0 GB/s" in out and "60.0 GFLOP/s" in out and "ridge at 2.0 FLOP/byte" in out


def test_native_vector_bits_follows_numbas_isa(monkeypatch):
    monkeypatch.delenv("LABKIT_NATIVE_BITS", raising=False)
    monkeypatch.delenv("NUMBA_CPU_FEATURES", raising=False)
    bits = hardware.native_vector_bits()
    if X86:
        want = 512 if hardware.has("avx512f") else 256 if hardware.has("avx2") or hardware.has("avx") else 128
        assert bits == want
        # numba compiles for NUMBA_CPU_FEATURES when it is set, so the width follows it
        for feats, want in (("+sse2,+avx,+avx2,-avx512f", 256), ("+avx2,+avx512f", 512),
                            ("+sse2,-avx,-avx2,-avx512f", 128), ("+avx,-avx2", 256)):
            monkeypatch.setenv("NUMBA_CPU_FEATURES", feats)
            assert hardware.native_vector_bits() == want, feats
    else:
        assert bits == 128  # NEON


def test_preferred_width_is_what_numba_vectorises_to(monkeypatch):
    from labkit import inspect as li

    monkeypatch.delenv("LABKIT_NATIVE_BITS", raising=False)
    preferred = hardware.native_vector_bits(preferred=True)
    assert 128 <= preferred <= hardware.native_vector_bits()

    @numba.njit
    def scale(a, out):
        for i in range(a.shape[0]):
            out[i] = a[i] * 3.0

    x = np.ones(64, dtype=np.float64)
    scale(x, x.copy())
    assert li.vector_report(scale).max_width_bits == preferred
    assert hardware.native_lanes(np.float64, preferred=True) == preferred // 64
    monkeypatch.setenv("LABKIT_NATIVE_BITS", "128")
    assert hardware.native_vector_bits(preferred=True) == 128
    assert hardware.native_lanes("int16", preferred=True) == 8


def test_native_width_override_and_lanes(monkeypatch):
    monkeypatch.setenv("LABKIT_NATIVE_BITS", "128")  # a simulated SSE2/NEON host
    assert hardware.native_vector_bits() == 128
    assert hardware.native_lanes(np.int16) == 8 and hardware.native_lanes("float64") == 2
    assert hardware.native_lanes(numba.float32) == 4 and hardware.native_lanes(np.dtype("uint8")) == 16
    monkeypatch.setenv("LABKIT_NATIVE_BITS", "512")
    assert hardware.native_lanes("int16") == 32 and hardware.native_lanes(np.float64) == 8
    monkeypatch.setenv("LABKIT_NATIVE_BITS", " 256 ")
    assert hardware.native_lanes(np.int16) == 16
    for bad in ("wide", "100", "0", "-128", "4096"):
        monkeypatch.setenv("LABKIT_NATIVE_BITS", bad)
        with pytest.raises(ValueError, match="LABKIT_NATIVE_BITS"):
            hardware.native_vector_bits()
    monkeypatch.delenv("LABKIT_NATIVE_BITS")
    for bad in ("garbage", "U3", object, 3.5):
        with pytest.raises(TypeError, match="dtype"):
            hardware.native_lanes(bad)


def test_hardware_imports_neither_numba_nor_bench():
    # at import time neither; measuring jits its kernels and times them with bench's timer,
    # imported inside the function (bench reaches hardware, so never at module level)
    code = ("import sys, labkit.hardware as h; assert 'numba' not in sys.modules, 'numba'; "
            "assert not [m for m in sys.modules if m.startswith('labkit.bench')], 'bench'; "
            "h.measure_fma_rate(repeat=1); h.measure_bandwidth(mib=1, repeat=1); "
            "assert 'labkit.timing.timer' in sys.modules, 'timed by bench'")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr


# --------------------------------------------------------------------------- other machines, recorded
# Their own sources fed through the same parsers (labkit.hardware.build): these run on any host.

NEOVERSE_V1_CPUINFO = "".join(f"""processor\t: {i}
BogoMIPS\t: 2100.00
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm jscvt fcma lrcpc dcpop sha3 sm3 sm4 asimddp sha512 sve asimdfhm dit uscat ilrcpc flagm ssbs paca pacg dcpodp svei8mm svebf16 i8mm bf16 dgh rng
CPU implementer\t: 0x41
CPU architecture: 8
CPU variant\t: 0x1
CPU part\t: 0xd40
CPU revision\t: 1

""" for i in range(4))   # an AWS Graviton3 (c7g.xlarge)

NEOVERSE_N1_FEATURES = "fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp ssbs"

M1_SYSCTL = """hw.ncpu: 8
hw.physicalcpu: 8
hw.logicalcpu: 8
hw.nperflevels: 2
hw.perflevel0.physicalcpu: 4
hw.perflevel0.logicalcpu: 4
hw.perflevel0.l1icachesize: 196608
hw.perflevel0.l1dcachesize: 131072
hw.perflevel0.l2cachesize: 12582912
hw.perflevel0.cpusperl2: 4
hw.perflevel0.name: Performance
hw.perflevel1.physicalcpu: 4
hw.perflevel1.logicalcpu: 4
hw.perflevel1.l1dcachesize: 65536
hw.perflevel1.l2cachesize: 4194304
hw.perflevel1.cpusperl2: 4
hw.perflevel1.name: Efficiency
hw.cachelinesize: 128
hw.l1icachesize: 131072
hw.l1dcachesize: 65536
hw.l2cachesize: 4194304
hw.optional.floatingpoint: 1
hw.optional.AdvSIMD: 1
hw.optional.neon: 1
hw.optional.neon_hpfp: 1
hw.optional.neon_fp16: 1
hw.optional.armv8_1_atomics: 1
hw.optional.armv8_crc32: 1
hw.optional.arm.FEAT_FP16: 1
hw.optional.arm.FEAT_DotProd: 1
hw.optional.arm.FEAT_LSE: 1
hw.optional.arm.FEAT_I8MM: 0
hw.optional.arm.FEAT_BF16: 0
hw.optional.arm64: 1
machdep.cpu.brand_string: Apple M1
"""

# an M2 Pro: 8 performance + 4 efficiency cores, Armv8.6 (i8mm, bf16)
M2_PRO_SYSCTL = """hw.physicalcpu: 12
hw.logicalcpu: 12
hw.nperflevels: 2
hw.perflevel0.physicalcpu: 8
hw.perflevel0.l1dcachesize: 131072
hw.perflevel0.l2cachesize: 16777216
hw.perflevel0.cpusperl2: 4
hw.perflevel0.name: Performance
hw.perflevel1.physicalcpu: 4
hw.perflevel1.l1dcachesize: 65536
hw.perflevel1.l2cachesize: 4194304
hw.perflevel1.name: Efficiency
hw.l1dcachesize: 65536
hw.l2cachesize: 4194304
hw.optional.AdvSIMD: 1
hw.optional.arm.FEAT_FP16: 1
hw.optional.arm.FEAT_DotProd: 1
hw.optional.arm.FEAT_I8MM: 1
hw.optional.arm.FEAT_BF16: 1
hw.optional.arm.FEAT_LSE: 1
machdep.cpu.brand_string: Apple M2 Pro
"""

INTEL_MAC_SYSCTL = """hw.physicalcpu: 8
hw.logicalcpu: 16
hw.l1dcachesize: 32768
hw.l2cachesize: 262144
hw.l3cachesize: 16777216
hw.optional.sse4_2: 1
hw.optional.avx1_0: 1
hw.optional.avx2_0: 1
hw.optional.avx512f: 0
machdep.cpu.brand_string: Intel(R) Core(TM) i9-9880H CPU @ 2.30GHz
machdep.cpu.features: FPU VME DE PSE TSC MSR PAE MCE CX8 APIC SEP MMX FXSR SSE SSE2 SS HTT SSE3 PCLMULQDQ SSSE3 FMA CX16 SSE4.1 SSE4.2 x2APIC MOVBE POPCNT AES XSAVE OSXSAVE AVX1.0 RDRAND F16C
machdep.cpu.leaf7_features: RDWRFSGS BMI1 HLE AVX2 SMEP BMI2 ERMS INVPCID RTM RDSEED ADX SMAP CLFSOPT
"""


def test_linux_neoverse_v1_from_its_cpuinfo():
    hw = probe.build(machine="aarch64", system="linux", cpuinfo=NEOVERSE_V1_CPUINFO,
                     llvm_features={"avx2"}, llvm_cpu="neoverse-v1", logical=4)
    assert hw.arch == "aarch64" and hw.cpu == "Arm Neoverse-V1" and hw.logical_cores == 4
    assert hw.features == {"neon": True, "fp16": True, "dotprod": True, "i8mm": True, "lse": True,
                           "sve": True, "sve2": False}
    assert hw.feature_names == isa.ARM_FEATURES
    assert hw.has("asimd") and hw.has("asimddp") and hw.has("SVE") and hw.has("bf16")
    assert not hw.has("sve2") and not hw.has("avx2")   # LLVM's list is not read: cpuinfo answers
    text = str(hw)
    assert "ISA features (aarch64)" in text and "SVE + NEON" in text
    for f in isa.ARM_FEATURES:
        assert isa.ARM_MEANING[f] in text
    assert "✘ sve2" in text and "✔ sve " in text
    assert "SVE + NEON" in hw.summary() and "Neoverse-V1" in hw._repr_html_()
    hw.sve_bits = 256
    assert "SVE (256-bit) + NEON" in hw.summary() and "SVE vector length 256 bits" in str(hw)


def test_linux_aarch64_parts_and_hwcap():
    n1 = "processor\t: 0\nFeatures\t: " + NEOVERSE_N1_FEATURES + "\nCPU implementer\t: 0x41\nCPU part\t: 0xd0c\n"
    hw = probe.build(machine="aarch64", cpuinfo=n1, llvm_cpu="neoverse-n1", logical=1)
    assert hw.cpu == "Arm Neoverse-N1" and hw.features["dotprod"] and not hw.features["sve"]
    assert probe.isa.widest("aarch64", hw.features, hw.machine) == "NEON+dotprod"
    assert isa.arm_cpu_name("0x46", "0x001") == "Fujitsu A64FX"
    assert isa.arm_cpu_name("0x41", "0xfff") == "Arm core (part 0xfff)"
    assert isa.arm_cpu_name(None, "0xd40") is None and isa.arm_cpu_name("0x99", "0x1") is None
    # aux-vector bits (what the kernel — or qemu-user — says), e.g. a Neoverse-V2: SVE2 too
    hwcap = (1 << 1) | (1 << 8) | (1 << 10) | (1 << 20) | (1 << 22)
    assert sources.hwcap_flags(hwcap, 1 << 1 | 1 << 13) == {"asimd", "atomics", "asimdhp", "asimddp",
                                                           "sve", "sve2", "i8mm"}
    v2 = probe.build(machine="aarch64", cpuinfo=None, hwcap=sources.hwcap_flags(hwcap, 2), logical=1)
    assert v2.features["sve2"] and v2.features["sve"] and "SVE2 + NEON" in v2.summary()


def test_aarch64_under_qemu_ignores_the_hosts_cpuinfo():
    # qemu user-mode passes the x86 host's /proc/cpuinfo through: its flags say nothing about ARM
    hw = probe.build(machine="aarch64", cpuinfo=CPUINFO, hwcap={"asimd", "sve"}, llvm_cpu="generic",
                     logical=2)
    assert hw.emulated_on == "Test CPU 9000" and hw.cpu == "generic aarch64 CPU"
    assert hw.features["neon"] and hw.features["sve"] and not hw.has("avx2")
    assert "emulated" in str(hw) and "Test CPU 9000" in str(hw)
    bare = probe.build(machine="aarch64", cpuinfo=CPUINFO, logical=2)   # nothing but the ABI
    assert bare.features == dict.fromkeys(isa.ARM_FEATURES, False) | {"neon": True}


def test_macos_apple_m1_from_sysctl():
    sysctl = sources.parse_sysctl(M1_SYSCTL)
    assert sysctl["hw.perflevel0.name"] == "Performance" and sysctl["hw.optional.arm.FEAT_I8MM"] == "0"
    hw = probe.build(machine="arm64", system="darwin", sysctl=sysctl, llvm_features={"neon", "fp-armv8"},
                     llvm_cpu="apple-m1")
    assert hw.arch == "aarch64" and hw.cpu == "Apple M1" and hw.system == "darwin"
    assert (hw.logical_cores, hw.physical_cores, hw.performance_cores, hw.efficiency_cores) == (8, 8, 4, 4)
    # the performance cores' caches (hw.l1dcachesize/hw.l2cachesize are the efficiency cores')
    assert (hw.l1d, hw.l2, hw.l3) == (128 << 10, 12 << 20, None) and hw.l2_shared_by == 4
    assert hw.features == {"neon": True, "fp16": True, "dotprod": True, "i8mm": False, "lse": True,
                           "sve": False, "sve2": False}
    text = str(hw)
    assert "4 performance + 4 efficiency" in text and "L2 shared by 4 cores" in text
    assert "L1d 128 KiB, L2 12 MiB, no L3 reported" in text and "darwin" in text
    assert "4P+4E" in hw.summary() and "NEON+dotprod" in hw.summary()


def test_macos_m2_pro_and_intel_mac():
    m2 = probe.build(machine="arm64", system="darwin", sysctl=sources.parse_sysctl(M2_PRO_SYSCTL))
    assert (m2.performance_cores, m2.efficiency_cores, m2.l2) == (8, 4, 16 << 20)
    assert m2.features["i8mm"] and m2.has("bf16") and not m2.features["sve"]
    intel = probe.build(machine="x86_64", system="darwin", sysctl=sources.parse_sysctl(INTEL_MAC_SYSCTL))
    assert intel.arch == "x86_64" and intel.cpu.startswith("Intel(R) Core(TM) i9")
    assert (intel.logical_cores, intel.physical_cores, intel.performance_cores) == (16, 8, None)
    assert (intel.l1d, intel.l2, intel.l3) == (32 << 10, 256 << 10, 16 << 20)
    assert {f for f, on in intel.features.items() if on} == {"sse4_2", "popcnt", "avx", "avx2", "fma"}
    assert intel.summary().count("AVX2+FMA") == 1 and "performance" not in str(intel)
    assert sources.mac_info({}) ["name"] is None and sources.parse_sysctl(None) == {}
