"""``make test-hosts``: labkit run as the x86 machines students have, on whatever x86-64 host this is.

Each target is the CPU numba compiles for (``NUMBA_CPU_NAME``; labkit gives it that CPU's own
features, see ``labkit/target.py``). A target this host can execute runs the ISA-sensitive
tests (``tools/hosts/tests-x86.txt``); a target it cannot execute (AVX-512 on an AVX2 host) runs
the codegen-only test through ``labkit.inspect.compile_for``. ``TARGETS`` says how much each
target runs; the host runs the quick set, since ``make test`` has run everything on it already —
and so does a target that *is* the host's CPU (znver4 on a Zen 4 host: ``make test`` ran its ISA
tests natively). No target grades the solutions here: their checks pass as haswell with speed
enforced and one core busy in ``make test-load`` (strict nbval), and the grader's path is proven
on the host by ``make test-full`` (``tests/test_grade_solutions.py``).

    .venv/bin/python tools/hosts/matrix.py [--only haswell,znver4]

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

# (NUMBA_CPU_NAME or "host", the machines it stands for, what runs: "isa" = ISA tests, "quick" =
# the target and gate tests only). alderlake's ISA is haswell's (AVX2, FMA) plus tuning, so it
# gets the quick set; the host's ISA tests ran in `make test` already, so it gets the quick set
# too (it shows the host in the same table), as does a target named like the host's CPU.
TARGETS = (
    ("haswell", "AVX2 laptop or desktop: Intel Haswell to Comet Lake, AMD Zen 1–3 alike", "isa"),
    ("alderlake", "AVX2 laptop: Intel 12th generation and later (no AVX-512)", "quick"),
    ("icelake-server", "AVX-512 core whose LLVM tuning prefers 256-bit code (Intel Xeon)", "isa"),
    ("znver4", "AMD Zen 4: AVX-512, 512-bit code preferred", "isa"),
    ("host", "this machine, as numba sees it", "quick"),
)
# The solution notebooks are not re-executed or graded here: `make test-load` (tools/load_test.py)
# executes them as haswell with one core busy and speed enforced (strict: every check must pass),
# one pass for "an AVX2 laptop" and "a busy one" (~290 s saved in CI); grading them as haswell too
# proved the product of that and `make test-full`'s grading on the host (~160 s more)
QUICK = ["tests/test_target.py", "tests/test_check_gates.py",
         "tests/test_check.py::test_vectorized_gate_and_lesson00_checks"]
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
    code = ("from labkit.target import target; t = target(); "
            "print(t.executable); print(t.describe())")
    out = subprocess.run([sys.executable, "-c", code], env=_env(cpu), capture_output=True,
                         text=True, cwd=ROOT, timeout=120)
    lines = out.stdout.strip().splitlines()
    if out.returncode or len(lines) < 2:
        return False, (out.stderr.strip().splitlines() or ["?"])[-1]
    return lines[0] == "True", lines[1]


def _host_cpu() -> str:
    """The CPU name LLVM gives this host (numba's target when NUMBA_CPU_NAME is unset)."""
    out = subprocess.run([sys.executable, "-c", "import llvmlite.binding as ll; "
                          "print(ll.get_host_cpu_name())"], env=_env("host"),
                         capture_output=True, text=True, timeout=120)
    return out.stdout.strip() or "?"


def _summary(text: str) -> str:
    # pytest -q ends with a bare "N passed, M skipped in 12.3s" line; without -q it is framed by '='
    found = re.findall(r"^=* ?(\d+ (?:passed|failed|error|skipped|deselected)\b.*? in [\d.]+s\b.*?) ?=*$",
                       text, re.M)
    return found[-1] if found else "no pytest summary"


def run(only=None) -> int:
    if platform.machine().lower() not in ("x86_64", "amd64"):
        print(f"HOST MATRIX NOT RUN: {platform.machine()} is not x86-64 (the ARM64 job covers AArch64)")
        return 0
    rows, failed, start = [], 0, time.time()
    host_cpu = _host_cpu()
    logs = ROOT / "test-artifacts" / "hosts"
    logs.mkdir(parents=True, exist_ok=True)
    for cpu, stands_for, level in TARGETS:
        if only and cpu not in only:
            continue
        ok, described = _executable(cpu)
        if ok:
            same = cpu == host_cpu
            args = QUICK if level == "quick" or same else _isa_tests()
            how = ("target and gate tests" if level == "quick" or same else "ISA tests") + (
                f" (the host is a {host_cpu}: make test ran its ISA tests natively)"
                if same and level != "quick" else "")
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
    ns = p.parse_args(argv)
    only = set(ns.only.split(",")) if ns.only else None
    return run(only)


if __name__ == "__main__":
    raise SystemExit(main())
