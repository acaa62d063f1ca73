#!/usr/bin/env python3
"""Where a run's numba compilation went: the log of ``tools/compile_log/sitecustomize.py``.

    tools/compile_report.py LOG [--top N]

Prints the CPU seconds of compilation by kind (labkit's kernels, the exercise cells' and fake
students' code, numba's own helpers), by process, the labkit functions that cost most (their
own CPU, nested compilations of the functions they call counted there), and the
(function, argument types) pairs compiled in more than one process, each split into repeats
that overlapped the first (two processes compiling at once) and repeats that came after it
(the first's cache entry was there: another target, a cache the process does not read — the
check worker ignores cache files written after it first ran student code,
``labkit.check.hatches.guard_disk_cache`` — or a test that compiles afresh on purpose)."""
from __future__ import annotations

import argparse
import collections
import json
import sys


def kind(name: str) -> str:
    if name.startswith("labkit."):
        return "labkit"
    if name.startswith("numba.") or name.startswith("llvmlite."):
        return "numba"
    return "cells"


_KEYS = {"pid", "argv", "test", "name", "args", "start", "wall", "cpu", "self_cpu"}


def load(path: str) -> list[dict]:
    rows = []
    with open(path) as fh:
        for line in fh:
            try:
                row = json.loads(line)
            except ValueError:
                continue                        # a line cut short by a killed process
            if isinstance(row, dict) and _KEYS <= row.keys():
                rows.append(row)
    return rows


def report(rows: list[dict], top: int = 25, out=sys.stdout) -> dict:
    by_kind = collections.Counter()
    by_proc = collections.Counter()
    argv = {}
    for r in rows:
        by_kind[kind(r["name"])] += r["self_cpu"]
        by_proc[r["pid"]] += r["self_cpu"]
        argv[r["pid"]] = r["argv"]
    print(f"{len(rows)} compilations in {len(by_proc)} processes, "
          f"{sum(by_kind.values()):.1f} s of CPU:", file=out)
    for k, v in by_kind.most_common():
        print(f"  {v:8.1f} s  {k}", file=out)
    print("\nprocesses (CPU of compilation):", file=out)
    for pid, v in by_proc.most_common(top):
        print(f"  {v:8.1f} s  pid {pid}  {argv[pid]}", file=out)
    lab = collections.Counter()
    for r in rows:
        if kind(r["name"]) == "labkit":
            lab[r["name"]] += r["self_cpu"]
    print("\nlabkit's functions (own CPU, all signatures and processes):", file=out)
    for name, v in lab.most_common(top):
        print(f"  {v:8.1f} s  {name}", file=out)
    groups = collections.defaultdict(list)
    for r in rows:
        if kind(r["name"]) == "labkit":
            groups[(r["name"], r["args"])].append(r)
    overlap = after = 0.0
    repeats = []
    for (name, args), rs in groups.items():
        if len({r["pid"] for r in rs}) < 2:
            continue
        rs.sort(key=lambda r: r["start"])
        first = rs[0]
        for r in rs[1:]:
            if r["pid"] == first["pid"]:
                continue
            at_once = r["start"] < first["start"] + first["wall"]
            if at_once:
                overlap += r["self_cpu"]
            else:
                after += r["self_cpu"]
            repeats.append((r["self_cpu"], at_once, name, r["test"] or r["argv"]))
    print(f"\nlabkit compilations repeated in another process: {overlap:.1f} s of CPU at the "
          f"same time as the first, {after:.1f} s after it", file=out)
    for cpu, at_once, name, where in sorted(repeats, reverse=True)[:top]:
        print(f"  {cpu:8.1f} s  {'at once' if at_once else 'after  '}  {name}  [{where[:70]}]",
              file=out)
    return {"kinds": dict(by_kind), "repeat_overlap": overlap, "repeat_after": after}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log")
    ap.add_argument("--top", type=int, default=25)
    a = ap.parse_args(argv)
    report(load(a.log), a.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
