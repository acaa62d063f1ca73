"""``make test-load``: every solution notebook executed while another process keeps one core busy.

A student's laptop runs a browser, an IDE and a video call; a class server runs other students.
The solutions must still execute, every check in them must still pass (they run strictly under
nbval: a failed check raises), and every computed comparison still comes from ``bench.claim``
(a direction only when the repeats separate — tests/test_claims.py holds the solutions to it).

Speed is judged here, as when grading (``LABKIT_SPEED=enforce``; the test suite's conftest.py
sets ``report`` only when it is unset): every speed gate must pass on its own measurement under
the load, and strict mode fails the run on any other verdict, ``inconclusive`` included — labkit's
own answers clear their gates with room on this host (tests/test_answers_clear_gates.py), so a
gate that cannot decide under one busy core is a finding, not noise, and a notebook whose check
did not pass would hide its earned answers and differ from its committed outputs anyway. Every
check's verdict, and each speed gate's ratio, interval and target, is printed at the end.

On an x86-64 host that can run AVX2 code the notebooks run as the commonest student laptop,
numba targeting ``haswell`` (AVX2, no AVX-512; ``make test`` has run them as the host already),
so this one pass proves both "on an AVX2 laptop" and "on a busy one" (the host matrix,
tools/hosts/matrix.py, runs the ISA tests as haswell and leaves the solutions to here: their
checks pass as haswell here, and the grader's path is proven on the host by make test-full).

    .venv/bin/python tools/load_test.py [--spinners 1] [--target haswell|host|CPU] [NOTEBOOK ...]

Prints the load average seen and pytest's summary; exits with pytest's code.
"""
from __future__ import annotations

import argparse
import json
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
    p.add_argument("notebooks", nargs="*",
                   help="solution notebooks to run (default: every solutions/*.ipynb)")
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
    env["LABKIT_SPEED"] = "enforce"          # judged, as when grading (conftest: report if unset)
    env.pop("LABKIT_GRADING", None)
    results = ROOT / "test-artifacts" / "load" / "checks.jsonl"
    results.parent.mkdir(parents=True, exist_ok=True)
    results.unlink(missing_ok=True)
    env["LABKIT_RESULTS"] = str(results)     # every check's verdict, recorded by the kernels
    print(f"load test: the solutions as {target}"
          + (" (NUMBA_CPU_NAME)" if target != "host" else ""), flush=True)
    spinners = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(ns.spinners)]
    t0 = time.time()
    try:
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q",
                               *(ns.notebooks or ["solutions/"]),
                               "--basetemp", str(ROOT / "test-artifacts" / "load" / "tmp")],
                              cwd=ROOT, env=env)
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    finally:
        for s in spinners:
            s.kill()
    bad = _verdicts(results)
    print(f"load test: {ns.spinners} busy process(es) beside the solutions ({target}) on "
          f"{os.cpu_count()} "
          f"cores, load average {load:.1f} at the end, {time.time() - t0:.0f} s, "
          f"{'passed' if proc.returncode == 0 and not bad else 'FAILED'}")
    return proc.returncode or (1 if bad else 0)


def _verdicts(path: Path) -> int:
    """Print every check the notebooks ran (speed gates with ratio, interval and target); the
    number that did not pass."""
    try:
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
                if line.strip()]
    except (OSError, ValueError):
        rows = []
    print(f"load test: {len(rows)} checks run, speed judged", flush=True)
    bad = 0
    for r in rows:
        d = r.get("details") or {}
        speed = ""
        if isinstance(d.get("speed_ratio"), (int, float)):
            speed = (f"  {d['speed_ratio']:.2f}× [{d.get('speed_low', 0):.2f}, "
                     f"{d.get('speed_high', 0):.2f}] need {d.get('speed_need')}")
            if "speed_share" in d:
                speed += f", passed at {d['speed_share']:.0%} of labkit's answer"
        ok = r.get("passed") is True
        bad += not ok
        if ok and "not judged" in str(r.get("message", "")):     # passed on another proof
            speed = "  speed not judged under this load (passed on its other proof)"
        print(f"  {'✔' if ok else '✘'} {r.get('name', '?'):18s} {r.get('verdict', '?'):14s}"
              + speed + ("" if ok else f"\n      {str(r.get('message', ''))[:300]}"))
    return bad


if __name__ == "__main__":
    raise SystemExit(main())
