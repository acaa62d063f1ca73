"""``make test-load``: every solution notebook executed while another process keeps one core busy.

A student's laptop runs a browser, an IDE and a video call; a class server runs other students.
The solutions must still execute, every check in them must still pass (they run strictly under
nbval: a failed check raises), and every computed comparison still comes from ``bench.claim``
(a direction only when the repeats separate — tests/test_claims.py holds the solutions to it).

    .venv/bin/python tools/load_test.py [--spinners 1]

Prints the load average seen and pytest's summary; exits with pytest's code.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPIN = "while True: pass"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--spinners", type=int, default=1, help="busy processes beside the run (default 1)")
    ns = p.parse_args(argv)
    if ns.spinners < 0:
        p.error("--spinners must be ≥ 0")
    spinners = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(ns.spinners)]
    t0 = time.time()
    try:
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "solutions/",
                               "--basetemp", str(ROOT / "test-artifacts" / "load")], cwd=ROOT)
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    finally:
        for s in spinners:
            s.kill()
    print(f"load test: {ns.spinners} busy process(es) beside the solutions on {os.cpu_count()} "
          f"cores, load average {load:.1f} at the end, {time.time() - t0:.0f} s, "
          f"{'passed' if proc.returncode == 0 else 'FAILED'}")
    return proc.returncode


if __name__ == "__main__":
    raise SystemExit(main())
