"""``labkit grade DIR --out grades.csv [--json F] [--wide F] [--html DIR] [--jobs N] …``."""
from __future__ import annotations

import argparse
import re
import sys

from pathlib import Path

from .report import summary, write_csv, write_json, write_wide_csv
from .run import SandboxUnavailable, grade
from .settings import CELL_TIMEOUT, MAX_NOTEBOOK_BYTES, MEMORY_LIMIT, NOTEBOOK_TIMEOUT

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
    p.add_argument("dir", nargs="?", default=None,
                   help="folder with one notebook per student, or one folder per student "
                        "(with --course: default its [submissions] dir)")
    p.add_argument("--course", default=None,
                   help="course.toml (roster, assignments, due dates): also write "
                        "gradebook*.csv and gradescope/ beside --out (docs/course.md)")
    p.add_argument("--out", default="grades.csv", help="CSV to write (default grades.csv)")
    p.add_argument("--json", default=None, help="also write full detail as JSON here")
    p.add_argument("--wide", default=None,
                   help="wide CSV, one row per student and one column per exercise (for an "
                        "LMS; default: <out>-wide.csv beside --out)")
    p.add_argument("--html", default=None,
                   help="folder for report.html and feedback/<student>.html (default: the "
                        "folder of --out)")
    p.add_argument("--cache", default=None,
                   help="cache folder for incremental regrading (default: .labkit-grade-cache "
                        "beside --out)")
    p.add_argument("--no-cache", action="store_true", help="grade everything again")
    p.add_argument("--no-sandbox", action="store_true",
                   help="run student code WITHOUT the bubblewrap sandbox (only in a throwaway "
                        "container or VM)")
    p.add_argument("--jobs", type=int, default=1, help="notebooks graded in parallel")
    p.add_argument("--cell-timeout", type=float, default=CELL_TIMEOUT,
                   help=f"seconds per cell (default {CELL_TIMEOUT:g})")
    p.add_argument("--notebook-timeout", type=float, default=NOTEBOOK_TIMEOUT,
                   help=f"seconds per notebook (default {NOTEBOOK_TIMEOUT:g})")
    p.add_argument("--memory-limit", type=_size, default=MEMORY_LIMIT,
                   help="address-space limit of the sandboxed check worker, e.g. 8G "
                        "(default); 0 = none")
    p.add_argument("--max-notebook-size", type=_size, default=MAX_NOTEBOOK_BYTES,
                   help="a bigger notebook is refused unread, one row (default "
                        f"{MAX_NOTEBOOK_BYTES >> 20}M); 0 = no limit")
    p.add_argument("--solutions", default=None, help="canonical notebooks (default solutions/)")
    p.add_argument("--skip-tag", action="append", default=[],
                   help="ignored (no notebook runs any more); kept for old scripts")
    p.add_argument("--exercise-module", action="append", default=[],
                   help="extra module registering exercises (besides the labs in "
                        "labkit.registry)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    a = p.parse_args(argv)
    out = Path(a.out)
    cache = None if a.no_cache else (a.cache or str(out.parent / ".labkit-grade-cache"))
    course = None
    try:
        if a.course:
            from .course import prepare
            course = prepare(a.course, a.solutions)
            a.dir = a.dir or (str(course.submissions) if course.submissions else None)
        if a.dir is None:
            raise ValueError("name the folder of submissions (DIR)")
        results = grade(a.dir, solutions=a.solutions, jobs=a.jobs, cell_timeout=a.cell_timeout,
                        notebook_timeout=a.notebook_timeout, memory_limit=a.memory_limit,
                        skip_tags=a.skip_tag, exercise_modules=a.exercise_module,
                        progress=not a.no_progress, sandbox=not a.no_sandbox, cache_dir=cache,
                        max_notebook_bytes=a.max_notebook_size)
    except SandboxUnavailable as e:
        print("!" * 78 + f"\nlabkit grade: {e}\n" + "!" * 78, file=sys.stderr)
        return 4
    except (FileNotFoundError, ValueError, ImportError) as e:
        print(f"labkit grade: {e}", file=sys.stderr)
        return 2
    out.parent.mkdir(parents=True, exist_ok=True)
    write_csv(results, out)
    wide = Path(a.wide) if a.wide else out.with_name(out.stem + "-wide.csv")
    write_wide_csv(results, wide)
    if course is not None:
        from .course import describe, grade_course
        try:
            told, warn = describe(*grade_course(course, results, a.dir, out.parent, a.solutions))
        except (FileNotFoundError, ValueError) as e:
            print(f"labkit grade: {e}", file=sys.stderr)
            return 2
        print(told)
        if warn:
            print(warn, file=sys.stderr)
    if a.json:
        write_json(results, a.json, {k: v for k, v in vars(a).items() if k != "json"})
    from .pages import write_pages
    report, feedback = write_pages(results, Path(a.html) if a.html else out.parent)
    print(summary(results))
    cached = sum(bool(r.get("cached")) for r in results)
    rows = [e for r in results for e in r.get("exercises", ())]
    again = sum(bool(e.get("remeasured")) for e in rows)
    undecided = sum(e.get("verdict") == "inconclusive" for e in rows)
    print(f"\nwrote {out}, {wide}" + (f", {a.json}" if a.json else "")
          + f", {report} and {len(feedback)} feedback pages ({len(results)} notebooks"
          + (f", {cached} unchanged since the last run" if cached else "")
          + (f", {again} check(s) re-measured alone after the batch" if again else "") + ")")
    if undecided:
        print(f"labkit grade: {undecided} check(s) still inconclusive (the machine was too busy "
              "to decide a speed target): run labkit grade again on a quieter machine — with the "
              "result cache only those notebooks are graded again", file=sys.stderr)
    bad = [r for r in results if r.get("status") == "tampered"]
    if bad:
        print("labkit grade: TAMPERING — " + "; ".join(
            f"{r['student']} ({r['notebook']}): {r['error']}" for r in bad)
              + ". Their points are withheld; every other student was graded.", file=sys.stderr)
        return 3
    return 0
