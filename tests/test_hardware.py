"""Tests for labkit.hardware: probing, fallbacks, feature lookup, native width, summary, doctor."""
import platform
import subprocess
import sys

import numba
import numpy as np
import pytest

from labkit import hardware
from labkit.hardware import _doctor, probe, roof


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
    assert hardware.has("AVX2") == hardware.info().features["avx2"]
    with pytest.raises(TypeError, match="avx2"):
        hardware.has(3)
    with pytest.raises(TypeError):
        hardware.has("  ")


def test_meaning_for_every_feature():
    assert set(hardware.MEANING) == set(hardware.FEATURES)
    assert "vpopcntq" in hardware.MEANING["avx512_vpopcntdq"]
    assert "×16 int16" in hardware.MEANING["avx2"]


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
    assert hardware.measure_fma_rate(repeat=2) > 0
    for bad in (0, -1, 1.5, True, "4"):
        with pytest.raises(ValueError, match="mib"):
            hardware.measure_bandwidth(mib=bad)
    with pytest.raises(ValueError, match="repeat"):
        hardware.measure_fma_rate(repeat=0)
    from labkit import bspline
    assert bspline.measure_bandwidth is hardware.measure_bandwidth   # the notebook's names


def test_doctor_measure(monkeypatch, capsys):
    monkeypatch.setattr(roof, "measure_bandwidth", lambda: 30.0)
    monkeypatch.setattr(roof, "measure_fma_rate", lambda: 60.0)
    assert hardware.doctor(["--measure", "--no-smoke"]) == 0
    out = capsys.readouterr().out
    assert "30.0 GB/s" in out and "60.0 GFLOP/s" in out and "ridge at 2.0 FLOP/byte" in out


X86 = platform.machine().lower() in ("x86_64", "amd64")


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
    code = ("import sys, labkit.hardware as h; assert 'numba' not in sys.modules, 'numba'; "
            "h.measure_fma_rate(repeat=1); h.measure_bandwidth(mib=1, repeat=1); "
            "assert not [m for m in sys.modules if m.startswith('labkit.bench')], 'bench'")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
