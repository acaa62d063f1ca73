"""False-fail benchmark: every check on its reference solution, N times, one core kept busy.

    python -m labkit.check.falsefail [-n 100] [--exercise NAME ...] [--no-load] [--json FILE]

The reference solutions are the exercise cells of ``solutions/NN_name.md`` (between
``### BEGIN SOLUTION`` / ``### END SOLUTION``), loaded with the import statements of the
notebook's earlier cells, through :func:`labkit.check.run_source` — the trusted worker, speed
gates enforced (``LABKIT_SPEED`` unset, as when grading). A busy loop in another process keeps
one of the machine's cores loaded unless ``--no-load``. Prints per check: runs, passes,
false fails by verdict, inconclusive, median seconds per check.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Solution", "solutions", "main"]

_ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Solution:
    lab: str
    name: str           # exercise
    source: str         # the exercise cell
    imports: str        # import statements of the earlier cells
    function: str       # the function the check cell passes
    constants: dict


def _cells(md: Path) -> list[tuple[dict, str]]:
    import jupytext
    nb = jupytext.read(md)
    return [(c.metadata, c.source) for c in nb.cells if c.cell_type == "code"]


def _constants(lab: str, name: str) -> dict:
    """Plain values a reference solution reads from other (non-import) cells (none today: every
    exercise cell is self-contained; the hook stays for one that is not)."""
    return {}


def solutions(root: Path | str = _ROOT) -> list[Solution]:
    """The reference solution of every exercise, from the notebooks' text sources."""
    from labkit import registry
    from labkit.check.loader import imports_only
    out = []
    for lab in registry.LABS:
        md = Path(root) / lab.source
        if not md.exists():
            continue
        cells = _cells(md)
        imports = []
        pending: dict[str, str] = {}
        for meta, src in cells:
            gid = (meta.get("nbgrader") or {}).get("grade_id", "")
            if gid.startswith("ex-"):
                pending[gid[3:]] = src
            elif gid.startswith("check-"):
                name = gid[6:]
                m = re.search(r"check\.(\w+)\(\s*(\w+)", src)
                fn = m.group(2) if m else None
                if name in pending:
                    out.append(Solution(lab.name, name, pending.pop(name), "".join(imports),
                                        fn or "", _constants(lab.name, name)))
            imports.append(imports_only(src))
    return out


def _busy(stop):
    x = 0
    while not stop.is_set():
        for _ in range(100000):
            x += 1


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m labkit.check.falsefail", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-n", type=int, default=100, help="runs per check (default 100)")
    p.add_argument("--exercise", action="append", default=[], help="only these exercises")
    p.add_argument("--no-load", action="store_true", help="do not keep another core busy")
    p.add_argument("--json", help="write the counts to this file")
    ns = p.parse_args(argv)
    os.environ.pop("LABKIT_SPEED", None)
    os.environ.pop("LABKIT_CHECK_STRICT", None)
    from labkit.check import run_source
    sols = [s for s in solutions() if not ns.exercise or s.name in ns.exercise]
    stop = mp.Event()
    load = None if ns.no_load else mp.Process(target=_busy, args=(stop,), daemon=True)
    if load is not None:
        load.start()
    rows = []
    try:
        for s in sols:
            verdicts: dict[str, int] = {}
            secs = []
            example = {}
            for i in range(ns.n):
                t0 = time.monotonic()
                r = run_source(s.name, s.source, s.imports, function=s.function,
                               constants=s.constants)
                secs.append(time.monotonic() - t0)
                verdicts[r.verdict] = verdicts.get(r.verdict, 0) + 1
                if not r.passed and r.verdict not in example:
                    example[r.verdict] = r.message
            secs.sort()
            row = {"exercise": s.name, "lab": s.lab, "runs": ns.n,
                   "passed": verdicts.get("passed", 0),
                   "false_fails": ns.n - verdicts.get("passed", 0),
                   "inconclusive": verdicts.get("inconclusive", 0),
                   "verdicts": verdicts, "median_s": round(secs[len(secs) // 2], 2),
                   "examples": example}
            rows.append(row)
            bad = ", ".join(f"{k} {v}" for k, v in verdicts.items() if k != "passed") or "none"
            print(f"{s.lab:10s} {s.name:18s} {row['passed']:4d}/{ns.n} passed; false fails: {bad}; "
                  f"{row['median_s']:.2f} s/check", flush=True)
            for k, msg in example.items():
                print(f"    e.g. {k}: {msg[:200]}", flush=True)
    finally:
        stop.set()
        if load is not None:
            load.join(timeout=5)
    if ns.json:
        Path(ns.json).write_text(json.dumps(rows, indent=1))
    total = sum(r["false_fails"] for r in rows)
    print(f"total false fails: {total} in {sum(r['runs'] for r in rows)} checks "
          f"({'one core busy' if load is not None else 'no extra load'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
