"""``make test-hosts``: labkit run as the x86 machines students have, on whatever x86-64 host this is.

Each target is the CPU numba compiles for (``NUMBA_CPU_NAME``; labkit gives it that CPU's own
features, see ``labkit/hardware/target.py``). A target this host can execute runs the ISA-sensitive
tests (``tools/hosts/tests-x86.txt``) and, where marked, grades all five solution notebooks
sandboxed with speed enforced (``tests/test_grade_solutions.py``); a target it cannot execute
(AVX-512 on an AVX2 host) runs the codegen-only test through ``labkit.inspect.compile_for``.
``TARGETS`` says how much each target runs; the host runs the quick set, since ``make test`` has
run everything on it already.

    .venv/bin/python tools/hosts/matrix.py [--only haswell,znver4] [--no-grade]

Prints a line per target (how it ran, pytest's summary, seconds) and exits 1 if any failed.
"""
from __future__ import annotations

import argparse
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# (NUMBA_CPU_NAME or "host", the machines it stands for, what runs: "full" = ISA tests + the five
# solutions graded, "isa" = ISA tests, "quick" = the target and gate tests only). alderlake's
# ISA is haswell's (AVX2, FMA) plus tuning, so it gets the quick set; the host's ISA tests ran in
# `make test` already, so it gets the quick set too (it shows the host in the same table).
TARGETS = (
    ("haswell", "AVX2 laptop or desktop: Intel Haswell to Comet Lake, AMD Zen 1–3 alike", "full"),
    ("alderlake", "AVX2 laptop: Intel 12th generation and later (no AVX-512)", "quick"),
    ("icelake-server", "AVX-512 core whose LLVM tuning prefers 256-bit code (Intel Xeon)", "isa"),
    ("znver4", "AMD Zen 4: AVX-512, 512-bit code preferred", "isa"),
    ("host", "this machine, as numba sees it", "quick"),
)
# re-execute the solution notebooks under these targets and compare with the committed outputs
# (host-dependent cells are tagged nbval-ignore-output; the rest must not depend on the target).
# None here: `make test-load` (tools/load_test.py) re-executes them as haswell with one core busy,
# one pass for "an AVX2 laptop" and "a busy one" (~290 s saved in CI). znver4 runs the ISA tests
# only: its 512-bit code is what the host's `make test-full` grades (test_grade_solutions.py)
NBVAL: tuple[str, ...] = ()
QUICK = ["tests/test_target.py", "tests/test_check_gates.py",
         "tests/test_check.py::test_vectorized_gate_and_lesson00_checks"]
GRADE = "tests/test_grade_solutions.py"
CODEGEN = "tests/test_target.py::test_lab_kernels_compile_for_each_matrix_target"


def _isa_tests() -> list[str]:
    lines = (ROOT / "tools/hosts/tests-x86.txt").read_text().splitlines()
    return [ln.strip() for ln in lines if ln.strip() and not ln.lstrip().startswith("#")]


def _env(cpu: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_CPU_")}
    if cpu != "host":
        env["NUMBA_CPU_NAME"] = cpu
    return env


def _executable(cpu: str) -> tuple[bool, str]:
    code = ("from labkit.hardware.target import target; t = target(); "
            "print(t.executable); print(t.describe())")
    out = subprocess.run([sys.executable, "-c", code], env=_env(cpu), capture_output=True,
                         text=True, cwd=ROOT, timeout=120)
    lines = out.stdout.strip().splitlines()
    if out.returncode or len(lines) < 2:
        return False, (out.stderr.strip().splitlines() or ["?"])[-1]
    return lines[0] == "True", lines[1]


def _summary(text: str) -> str:
    # pytest -q ends with a bare "N passed, M skipped in 12.3s" line; without -q it is framed by '='
    found = re.findall(r"^=* ?(\d+ (?:passed|failed|error|skipped|deselected)\b.*? in [\d.]+s\b.*?) ?=*$",
                       text, re.M)
    return found[-1] if found else "no pytest summary"


def run(only=None, grade=True) -> int:
    if platform.machine().lower() not in ("x86_64", "amd64"):
        print(f"HOST MATRIX NOT RUN: {platform.machine()} is not x86-64 (the ARM64 job covers AArch64)")
        return 0
    rows, failed, start = [], 0, time.time()
    logs = ROOT / "test-artifacts" / "hosts"
    logs.mkdir(parents=True, exist_ok=True)
    for cpu, stands_for, level in TARGETS:
        if only and cpu not in only:
            continue
        ok, described = _executable(cpu)
        if ok:
            full = level == "full" and grade
            nbval = cpu in NBVAL
            args = ((QUICK if level == "quick" else _isa_tests()) + ([GRADE] if full else [])
                    + (["solutions/"] if nbval else []))
            how = ("target and gate tests" if level == "quick" else "ISA tests") + (
                " + five solutions graded (sandbox, speed enforced)" if full else "") + (
                " + the solutions re-executed against their outputs (nbval)" if nbval else "")
        else:
            args = [CODEGEN]
            how = "codegen only (compile_for): this host cannot run it"
        env = _env(cpu)
        env["LABKIT_TEST_TIER"] = "all"      # the listed tests, whichever tier they are in
        if not ok:
            env.pop("NUMBA_CPU_NAME", None)
            env["LABKIT_MATRIX_CPU"] = cpu
        t0 = time.time()
        print(f"── {cpu}: {stands_for}\n   {described}\n   runs: {how}", flush=True)
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                               "--basetemp", str(logs / f"tmp-{cpu}"), *args],
                              env=env, cwd=ROOT, capture_output=True, text=True)
        (logs / f"pytest-{cpu}.log").write_text(proc.stdout + proc.stderr)
        secs = time.time() - t0
        line = _summary(proc.stdout)
        short = sorted(set(re.findall(r"not gradable under \S+: \('[^']*', '(\w+)'", proc.stdout)))
        if short:
            line += f"; not gradable here (no report to read), inconclusive: {', '.join(short)}"
        status = "ok" if proc.returncode == 0 else "FAILED"
        failed += proc.returncode != 0
        rows.append((cpu, how, status, line, secs))
        print(f"   {status}: {line} ({secs:.0f} s)", flush=True)
        if proc.returncode:
            tail = "\n".join(proc.stdout.strip().splitlines()[-30:])
            print("   " + tail.replace("\n", "\n   "))
    print(f"\nhost matrix ({time.time() - start:.0f} s on this host, "
          f"{platform.processor() or platform.machine()}):")
    for cpu, how, status, line, secs in rows:
        print(f"  {status:6} {cpu:15} {secs:5.0f} s  {how} — {line}")
    return 1 if failed else 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", help="comma-separated targets (default: all)")
    p.add_argument("--no-grade", action="store_true", help="skip grading the solutions")
    ns = p.parse_args(argv)
    only = set(ns.only.split(",")) if ns.only else None
    return run(only, grade=not ns.no_grade)


if __name__ == "__main__":
    raise SystemExit(main())
