"""``labkit grade DIR --out grades.csv [--json F] [--jobs N] …``."""
from __future__ import annotations

import argparse
import re
import sys

from .report import summary, write_csv, write_json
from .run import grade
from .settings import CELL_TIMEOUT, MEMORY_LIMIT, NOTEBOOK_TIMEOUT

__all__ = ["main"]


def _size(text: str) -> int:
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kKmMgGtT]?)i?[bB]?\s*", text)
    if not m:
        raise argparse.ArgumentTypeError(f"cannot read size {text!r}; write e.g. 4G, 512M or 0")
    mult = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}[m.group(2).lower()]
    return int(float(m.group(1)) * mult)


def main(argv: list[str] | None = None) -> int:
    """CLI: ``labkit grade DIR --out grades.csv [--json F] [--jobs N] …``."""
    p = argparse.ArgumentParser(prog="labkit grade",
                                description="Grade a folder of student notebooks headlessly.")
    p.add_argument("dir", help="folder with one notebook per student, or one folder per student")
    p.add_argument("--out", default="grades.csv", help="CSV to write (default grades.csv)")
    p.add_argument("--json", default=None, help="also write full detail as JSON here")
    p.add_argument("--jobs", type=int, default=1, help="notebooks graded in parallel")
    p.add_argument("--cell-timeout", type=float, default=CELL_TIMEOUT,
                   help=f"seconds per cell (default {CELL_TIMEOUT:g})")
    p.add_argument("--notebook-timeout", type=float, default=NOTEBOOK_TIMEOUT,
                   help=f"seconds per notebook (default {NOTEBOOK_TIMEOUT:g})")
    p.add_argument("--memory-limit", type=_size, default=MEMORY_LIMIT,
                   help="address-space limit per kernel, e.g. 8G (default); 0 = none")
    p.add_argument("--solutions", default=None, help="canonical notebooks (default solutions/)")
    p.add_argument("--skip-tag", action="append", default=[],
                   help="skip canonical (non-exercise) cells with this tag; repeatable")
    p.add_argument("--exercise-module", action="append", default=[],
                   help="extra module registering exercises (besides the labs in "
                        "labkit.registry)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    a = p.parse_args(argv)
    try:
        results = grade(a.dir, solutions=a.solutions, jobs=a.jobs, cell_timeout=a.cell_timeout,
                        notebook_timeout=a.notebook_timeout, memory_limit=a.memory_limit,
                        skip_tags=a.skip_tag, exercise_modules=a.exercise_module,
                        progress=not a.no_progress)
    except (FileNotFoundError, ValueError, ImportError) as e:
        print(f"labkit grade: {e}", file=sys.stderr)
        return 2
    write_csv(results, a.out)
    if a.json:
        write_json(results, a.json, {k: v for k, v in vars(a).items() if k != "json"})
    print(summary(results))
    print(f"\nwrote {a.out}" + (f" and {a.json}" if a.json else "")
          + f" ({len(results)} notebooks)")
    bad = [r for r in results if r.get("status") == "tampered"]
    if bad:
        print(f"labkit grade: STOPPED — while {bad[0]['student']}'s notebook ran, "
              f"{bad[0]['error']}; reinstall labkit and grade in a throwaway environment",
              file=sys.stderr)
        return 3
    return 0
