"""One target knob: the CPU numba compiles for is the CPU every part of labkit sees.

x86-64 only (NUMBA_CPU_NAME names x86 CPUs here; the ARM64 job covers AArch64 targets)."""
from __future__ import annotations

import os
import platform
import subprocess
import sys

import numba
import numpy as np
import pytest

from labkit import target as T

X86 = platform.machine().lower() in ("x86_64", "amd64")
pytestmark = pytest.mark.skipif(not X86, reason="x86-64 targets")

HASWELL = frozenset({"sse4_2", "popcnt", "avx", "avx2", "fma"})
AVX512 = HASWELL | {"avx512f", "avx512bw", "avx512vl"}


def _run(code: str, **env) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("NUMBA_CPU", "LABKIT_NATIVE"))}
    full.update(env)
    return subprocess.run([sys.executable, "-c", code], env=full, capture_output=True, text=True,
                          timeout=300)


@pytest.mark.parametrize("cpu, has, lacks", [
    ("x86-64", set(), {"avx", "avx2", "avx512f"}),
    ("x86-64-v2", {"sse4_2", "popcnt"}, {"avx", "avx2"}),
    ("haswell", HASWELL, {"avx512f", "avx512bw", "avx512_vpopcntdq"}),
    ("alderlake", HASWELL, {"avx512f"}),
    ("skylake-avx512", AVX512, {"avx512_vpopcntdq"}),
    ("icelake-server", AVX512 | {"avx512_vpopcntdq"}, set()),
    ("znver3", HASWELL, {"avx512f"}),
    ("znver4", AVX512 | {"avx512_vpopcntdq"}, set()),
])
def test_llvm_tells_each_targets_features(cpu, has, lacks):
    """The probe reads LLVM's own answer per CPU model (no table to keep up to date)."""
    got, unknown = T.probe_features(cpu, "")
    assert not unknown
    assert has <= got and not (lacks & got), sorted(got)


@pytest.mark.parametrize("cpu", ["haswell", "skylake-avx512", "icelake-server", "znver4"])
def test_probed_features_match_the_code_numba_gets_for_that_cpu(cpu):
    """Codegen only (runs on any x86 host, whichever of these it can execute): the probe's
    VPOPCNTDQ and AVX-512F answers agree with what LLVM emits for a numba loop for that CPU."""
    from labkit import inspect as lk

    @numba.njit
    def pop(x):
        s = 0
        for i in range(x.size):
            s += (x[i] & 0x5555) + (x[i] >> 3)
        return s

    pop(np.ones(64, np.uint64))
    feats, _ = T.probe_features(cpu, "")
    asm = lk.compile_for(pop, cpu, prefer_vector_width=512)
    assert ("%zmm" in asm) == ("avx512f" in feats)
    assert ("%ymm" in asm or "%zmm" in asm) == ("avx2" in feats)


def test_an_unknown_cpu_name_is_flagged_without_crashing():
    assert T.probe_features("not-a-cpu", "") == (frozenset(), True)


def test_name_alone_means_that_cpus_own_features():
    """numba keeps the host's features beside NUMBA_CPU_NAME (AVX-512 code 'for haswell');
    ``import labkit`` makes the features the named CPU's own, unless the user set them."""
    probe = ("import os, labkit, numba\n"
             "print(repr(os.environ.get('NUMBA_CPU_FEATURES')), repr(numba.config.CPU_FEATURES))")
    assert _run(probe, NUMBA_CPU_NAME="haswell").stdout.split() == ["''", "''"]
    own = _run(probe, NUMBA_CPU_NAME="haswell", NUMBA_CPU_FEATURES="+avx2").stdout.split()
    assert own == ["'+avx2'", "'+avx2'"]
    assert _run(probe).stdout.split() == ["None", "None"]


def test_an_avx2_laptop_target_is_followed_everywhere():
    """NUMBA_CPU_NAME=haswell on any x86 host that can run it: widths, lanes, features, labkit.jit,
    numba's own code and doctor all say 256-bit — the promise of a laptop's run on a server."""
    if not {"avx2", "fma"} <= T.target().host_features:
        pytest.skip("this host cannot execute haswell code")
    code = (
        "import re, numpy as np, numba\n"
        "from labkit import hardware, jit\n"
        "from labkit.check import gates\n"
        "@numba.njit\n"
        "def add(a, b, o):\n"
        "    for i in range(a.size): o[i] = a[i] + b[i]\n"
        "a = np.ones(999); add(a, a, a.copy())\n"
        "asm = add.inspect_asm(add.signatures[0])\n"
        "print(hardware.native_vector_bits(), hardware.native_vector_bits(preferred=True),\n"
        "      hardware.native_lanes('int16'), gates.native_bits(), hardware.has('avx512f'),\n"
        "      hardware.has('avx2'), jit.vector_bits(), hardware.info().numba_cpu,\n"
        "      bool(re.search('%zmm', asm)), bool(re.search('%ymm', asm)), hardware.info().host_cpu)\n")
    out = _run(code, NUMBA_CPU_NAME="haswell")
    assert out.returncode == 0, out.stderr
    # host_cpu stays the core that runs the code (lesson 00's latency is that core's)
    assert out.stdout.split() == ["256", "256", "16", "256", "False", "True", "None", "haswell",
                                  "False", "True", T.target().host_cpu], out.stdout
    doc = subprocess.run([sys.executable, "-m", "labkit", "doctor", "--no-smoke"],
                         env={**os.environ, "NUMBA_CPU_NAME": "haswell"}, capture_output=True,
                         text=True, timeout=120)
    assert "targeting haswell (256-bit vectors; set by NUMBA_CPU_NAME=haswell) on a" in doc.stdout


def test_a_target_the_host_cannot_run_is_refused_with_what_to_do(monkeypatch):
    fake = T.Target(cpu="znver4", host_cpu="haswell", arch="x86_64",
                    features=AVX512 | {"avx512_vpopcntdq"}, host_features=HASWELL,
                    env=(("NUMBA_CPU_NAME", "znver4"),))
    monkeypatch.setattr(T, "target", lambda: fake)
    assert not fake.executable and "avx512f" in fake.missing
    with pytest.raises(T.TargetError) as e:
        T.ensure_executable()
    msg = str(e.value)
    assert "targeting znver4" in msg and "haswell host" in msg and "avx512f" in msg
    assert "compile_for(fn, 'znver4')" in msg and "illegal-instruction" in msg


def test_an_unknown_target_stops_labkit_with_a_message_not_a_crash():
    out = _run("import labkit.jit", NUMBA_CPU_NAME="not-a-cpu")
    assert out.returncode == 1
    assert "TargetError" in out.stderr and "LLVM does not know this CPU" in out.stderr
    assert "LLVM ERROR" not in out.stderr
    doc = _run("from labkit.hardware import doctor; raise SystemExit(doctor(['--no-smoke']))",
               NUMBA_CPU_NAME="not-a-cpu")
    assert doc.returncode == 1 and "LLVM does not know this CPU" in doc.stdout


def test_the_grading_sandbox_gets_the_same_target(monkeypatch):
    from labkit.grade.sandbox import SandboxSpec

    monkeypatch.setenv("NUMBA_CPU_NAME", "haswell")
    monkeypatch.setenv("NUMBA_CPU_FEATURES", "")
    env = SandboxSpec().env()
    assert env["NUMBA_CPU_NAME"] == "haswell" and env["NUMBA_CPU_FEATURES"] == ""


def test_host_target_is_not_overridden():
    t = T.target()
    if os.environ.get("NUMBA_CPU_NAME") or "NUMBA_CPU_FEATURES" in os.environ:
        assert t.overridden
    else:
        assert not t.overridden and t.cpu == t.host_cpu and t.executable
        assert t.features == t.host_features
        assert "targeting the host" in t.describe()


MATRIX = ("haswell", "alderlake", "icelake-server", "sapphirerapids", "znver4", "znver5")


@pytest.mark.parametrize("cpu", [os.environ["LABKIT_MATRIX_CPU"]] if os.environ.get(
    "LABKIT_MATRIX_CPU") else MATRIX)
def test_lab_kernels_compile_for_each_matrix_target(cpu):
    """Codegen only, for every target of the host matrix (tools/hosts/matrix.py runs it alone for
    a target this host cannot execute): lesson 00's loop is vectorised no wider than the target's
    registers, and at their full width when the kernel asks for it as labkit.jit does; lab 04's
    popcount uses vpopcntq exactly when the target has VPOPCNTDQ; lab 01's int8 sweep (what
    ``align`` runs) takes its maxima on int8 vectors of at least 256 bits (vpmaxsb)."""
    from labkit import inspect as lk
    from labkit.alignment import _int8
    from labkit.epistasis import kernels as ek
    from labkit.lesson00 import kernels as l0

    feats, unknown = T.probe_features(cpu, "")
    assert not unknown
    bits = 512 if "avx512f" in feats else 256 if "avx" in feats else 128
    x = np.ones(1000)
    l0.add_arrays(x, x, np.empty_like(x))
    plain = lk.vector_report(l0.add_arrays, cpu=cpu)
    assert plain.vectorized and plain.max_width_bits <= bits
    wide = lk.vector_report(l0.add_arrays, cpu=cpu, prefer_vector_width=512) if bits == 512 else plain
    assert wide.max_width_bits == bits
    w = np.arange(64, dtype=np.uint64)
    ek.popcount_hw(w)
    asm = lk.compile_for(ek.popcount_hw, cpu)
    assert ("vpopcntq" in asm) == ("avx512_vpopcntdq" in feats)
    rows, lanes = np.zeros((40, 64), np.uint8), np.zeros(64, np.uint8)
    diffs, cols = np.zeros((41, 64), np.int8), np.zeros(64, np.int8)
    example = (rows, *[lanes] * 4, diffs, diffs, *[cols] * 8, *[np.int8(1)] * 3)
    asm = lk.compile_for(_int8._sweep4, cpu, signature=example)
    assert "vpmaxsb" in asm and ("ymm" in asm or "zmm" in asm), f"{cpu}: int8 sweep not vectorised"
