"""``make test-load``: every solution notebook executed while another process keeps one core busy.

A student's laptop runs a browser, an IDE and a video call; a class server runs other students.
The solutions must still execute, every check in them must still pass (they run strictly under
nbval: a failed check raises), and every computed comparison still comes from ``bench.claim``
(a direction only when the repeats separate — tests/test_claims.py holds the solutions to it).

On an x86-64 host that can run AVX2 code the notebooks run as the commonest student laptop,
numba targeting ``haswell`` (AVX2, no AVX-512; ``make test`` has run them as the host already),
so this one pass proves both "on an AVX2 laptop" and "on a busy one" (the host matrix,
tools/hosts/matrix.py, grades the solutions as haswell but leaves this re-execution to here).

    .venv/bin/python tools/load_test.py [--spinners 1] [--target haswell|host|CPU]

Prints the load average seen and pytest's summary; exits with pytest's code.
"""
from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools" / "hosts"))
from matrix import _env, _executable  # noqa: E402 - the host matrix's target handling

SPIN = "while True: pass"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--spinners", type=int, default=1, help="busy processes beside the run (default 1)")
    p.add_argument("--target", default=None,
                   help="NUMBA_CPU_NAME for the run, or 'host' (default: haswell on an x86-64 "
                        "host that can execute it, else the host)")
    ns = p.parse_args(argv)
    if ns.spinners < 0:
        p.error("--spinners must be ≥ 0")
    target = ns.target or ("haswell" if platform.machine().lower() in ("x86_64", "amd64")
                           else "host")
    if target != "host" and not _executable(target)[0]:
        if ns.target:
            p.error(f"this host cannot execute code compiled for {target}")
        target = "host"
    env = _env(target)
    print(f"load test: the solutions as {target}"
          + (" (NUMBA_CPU_NAME)" if target != "host" else ""), flush=True)
    spinners = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(ns.spinners)]
    t0 = time.time()
    try:
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "solutions/",
                               "--basetemp", str(ROOT / "test-artifacts" / "load")], cwd=ROOT,
                              env=env)
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    finally:
        for s in spinners:
            s.kill()
    print(f"load test: {ns.spinners} busy process(es) beside the solutions ({target}) on "
          f"{os.cpu_count()} "
          f"cores, load average {load:.1f} at the end, {time.time() - t0:.0f} s, "
          f"{'passed' if proc.returncode == 0 else 'FAILED'}")
    return proc.returncode


if __name__ == "__main__":
    raise SystemExit(main())
