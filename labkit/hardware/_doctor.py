"""`labkit doctor`: what this machine is (versions, CPU, caches, ISA features with what they mean for
the labs), optionally one core's roofline limits, and smoke tests with advice → exit code."""
from __future__ import annotations

import sys
from typing import Sequence

from . import roof
from .describe import _describe
from .probe import info


def _smoke_kernel():
    from ._smoke import parallel_sum  # numba on first use only
    return parallel_sum


def _check_numba() -> tuple[bool, str]:
    try:
        import numpy as np
        fn = _smoke_kernel()
        x = np.arange(10_000, dtype=np.float64)
        got = fn(x)
        want = float(x.sum())
        if abs(got - want) > 1e-6 * want:
            return False, f"parallel kernel returned {got}, expected {want}"
        import numba
        layer = numba.threading_layer()
        return True, f"numba compiled and ran a parallel kernel ({numba.get_num_threads()} threads, {layer} layer)"
    except Exception as e:
        return False, f"numba could not compile/run a parallel kernel: {type(e).__name__}: {e}"


def _check_import(mod: str, min_major: int | None = None) -> tuple[bool, str]:
    try:
        m = __import__(mod)
    except Exception as e:
        return False, f"cannot import {mod}: {type(e).__name__}: {e}"
    ver = getattr(m, "__version__", "?")
    if min_major is not None:
        try:
            if int(str(ver).split(".")[0]) < min_major:
                return False, f"{mod} {ver} is too old; labkit needs {mod} ≥ {min_major}"
        except ValueError:
            pass
    return True, f"{mod} {ver} importable"


def doctor(argv: Sequence[str] | None = None) -> int:
    """`labkit doctor`: print versions, CPU, caches, ISA features with meaning, smoke-test → exit code."""
    ns = _parse_args(argv)
    hw = info()
    print("\n".join(_describe(hw)))
    if not _target_runs():
        return 1
    _print_vector_notes(hw, smoke=not ns.no_smoke)
    if ns.measure:
        _print_roofs()
    if ns.no_smoke:
        return 0
    return _run_checks()


def _parse_args(argv: Sequence[str] | None):
    """The command line's options: --no-smoke, --measure (a leading "doctor" dropped)."""
    import argparse

    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "doctor":
        argv = argv[1:]
    p = argparse.ArgumentParser(prog="labkit doctor", description="Check that labkit works on this machine.")
    p.add_argument("--no-smoke", action="store_true", help="skip the numba/Jupyter smoke tests")
    p.add_argument("--measure", action="store_true",
                   help="also measure one core's memory bandwidth and FMA rate (a few seconds): "
                        "the two roofs of a roofline")
    return p.parse_args(argv)


def _target_runs() -> bool:
    """Whether code compiled for numba's target runs here; if not, prints why."""
    from labkit.target import TargetError, ensure_executable
    try:
        ensure_executable()
    except TargetError as e:
        print(f"  ✘ {e}")
        print("labkit is NOT ready for this target: nothing compiled for it can run here.")
        return False
    return True


def _print_vector_notes(hw, smoke: bool) -> None:
    """What the vector features mean here: missing ones, NEON, AVX-512's preferred width."""
    missing = [f for f in hw.feature_names if not hw.features.get(f)]
    if missing and hw.arch == "x86_64":
        print("  (missing features: the labs still run with narrower vectors; use "
              "labkit.inspect.compile_for(fn, 'znver4') to see the wider code)")
    elif hw.arch == "aarch64":
        print("  (numba compiles NEON here: checks expect 128-bit vectors; see other ISAs with "
              "labkit.inspect.compile_for(fn, 'neoverse-v1') for SVE or 'znver4' for AVX-512)")
    from .probe import has
    if hw.arch == "x86_64" and has("avx512f") and smoke:
        from .width import native_vector_bits
        pref = native_vector_bits(preferred=True)
        print(f"  numba's loops here: {pref}-bit vectors ({pref // 64} doubles per instruction) on "
              f"{native_vector_bits()}-bit registers"
              + (" — LLVM's tuning for this core prefers 256-bit code" if pref < 512 else "")
              + ". Whether 512-bit code doubles the FMA throughput of 256-bit code depends on "
                "the core (AMD Zen 4 runs each 512-bit operation as two 256-bit halves); "
                "`labkit doctor --measure` measures both rates here (labkit's fast kernels ask "
                "for the full width through labkit.jit).")


def _print_roofs() -> None:
    """One core's measured roofs: memory bandwidth (triad, read-only) and FMA rate."""
    bw, peak = roof.measure_bandwidth(), roof.measure_fma_rate()
    print(f"one core  {bw:.1f} GB/s memory bandwidth (triad, 96 MiB arrays), {peak:.1f} GFLOP/s "
          f"float64 FMA; ridge at {peak / bw:.1f} FLOP/byte (best of 7)")
    print(f"          {roof.measure_bandwidth(kind='read'):.1f} GB/s read-only (a sum over "
          "288 MiB: the roof of kernels that mostly read)")
    from labkit.jit import vector_bits
    if vector_bits():
        plain = roof.measure_fma_rate(full_width=False)
        print(f"          a plain @njit loop (LLVM's preferred width) reaches {plain:.1f} GFLOP/s "
              f"({plain / peak:.0%} of the {vector_bits()}-bit rate)")


def _run_checks() -> int:
    """The smoke tests with advice for each failure; 0 when all pass, else 1."""
    print("checks:")
    checks = [
        ("numba", _check_numba(), "reinstall: `make install` (or `.venv/bin/pip install -e .[test]`)"),
        ("jupyterlab", _check_import("jupyterlab", 4), "install JupyterLab ≥ 4: `make install`"),
        ("ipywidgets", _check_import("ipywidgets", 8), "install ipywidgets ≥ 8: `make install`"),
        ("matplotlib", _check_import("matplotlib"), "install matplotlib: `make install`"),
    ]
    ok = True
    for _name, (good, msg), advice in checks:
        print(f"  {'✔' if good else '✘'} {msg}")
        if not good:
            print(f"      → {advice}")
            ok = False
    print("labkit is ready." if ok else "labkit is NOT ready: fix the ✘ lines above, then run `labkit doctor` again.")
    return 0 if ok else 1


main = doctor
