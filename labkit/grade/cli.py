"""``labkit grade DIR --out grades.csv [--json F] [--wide F] [--html DIR] [--jobs N] …``,
``--shard i/N``, ``--scheduler ADDRESS`` / ``--cluster local:N``; ``labkit grade merge``."""
from __future__ import annotations

import argparse
import re
import sys

from pathlib import Path

from .report import summary, write_csv, write_json, write_wide_csv
from .batch import grade
from .run import SandboxUnavailable
from .shard import parse_shard
from .settings import CELL_TIMEOUT, MAX_NOTEBOOK_BYTES, MEMORY_LIMIT, NOTEBOOK_TIMEOUT

__all__ = ["main"]


def _size(text: str) -> int:
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kKmMgGtT]?)i?[bB]?\s*", text)
    if not m:
        raise argparse.ArgumentTypeError(f"cannot read size {text!r}; write e.g. 4G, 512M or 0")
    mult = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}[m.group(2).lower()]
    return int(float(m.group(1)) * mult)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="labkit grade",
                                description="Grade a folder of student notebooks headlessly "
                                            "(labkit grade merge OUT SHARD.json …: merge "
                                            "shards).")
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
    p.add_argument("--exercise-module", action="append", default=[],
                   help="extra module registering exercises (besides the labs in "
                        "labkit.registry)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--seed", default=None,
                   help="class seed: each check's inputs are derived from it (student, notebook, "
                        "exercise), so shards and workers grade as one run; keep it secret; "
                        "@FILE reads it from FILE (default: a fresh secret seed per check)")
    p.add_argument("--shard", type=parse_shard, default=None, metavar="i/N",
                   help="grade only shard i of N (every N-th student of the sorted list) and "
                        "write its JSON (--json, default <out>.json) for labkit grade merge; "
                        "needs --seed")
    p.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="grade on a Dask cluster (tcp://host:8786 or a scheduler JSON file): "
                        "one submission per task, workers with --resources grade=1")
    p.add_argument("--cluster", default=None, metavar="local:N",
                   help="grade on a Dask cluster of N local worker processes")
    return p


def _prepare(a):
    """(course, shard identity or None, the submissions to grade or None: all)."""
    course = None
    if a.course:
        from .course import prepare
        course = prepare(a.course, a.solutions)
        a.dir = a.dir or (str(course.submissions) if course.submissions else None)
    if a.dir is None:
        raise ValueError("name the folder of submissions (DIR)")
    if a.seed is not None and a.seed.startswith("@"):      # out of the process listing
        try:
            a.seed = Path(a.seed[1:]).read_text(encoding="utf-8").strip()
        except OSError as e:
            raise ValueError(f"--seed {a.seed}: {e}") from None
        if not a.seed:
            raise ValueError("--seed @FILE: the file is empty")
    if a.scheduler and a.cluster:
        raise ValueError("give --scheduler or --cluster, not both")
    if a.shard is None:
        return course, None, None
    if a.seed is None:
        raise ValueError("--shard needs --seed S, the same on every shard (each check's inputs "
                         "are derived from it, so the merged shards are graded as one run)")
    from .notebooks import find_submissions, load_solutions
    from .shard import identity, pick
    every = find_submissions(a.dir)
    return course, (identity(a, load_solutions(a.solutions)), every), pick(every, *a.shard)


def main(argv: list[str] | None = None) -> int:
    """CLI: ``labkit grade DIR --out grades.csv [--json F] [--jobs N] …`` and
    ``labkit grade merge OUT SHARD.json …`` (:func:`.shard.merge_main`)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["merge"]:
        from .shard import merge_main
        return merge_main(argv[1:])
    a = _parser().parse_args(argv)
    out = Path(a.out)
    cache = None if a.no_cache else (a.cache or str(out.parent / ".labkit-grade-cache"))
    runner = None
    try:
        course, shard, subs = _prepare(a)
        if a.scheduler or a.cluster:
            from .cluster import DaskRunner
            try:
                runner = DaskRunner(scheduler=a.scheduler, cluster=a.cluster,
                                    modules=tuple(a.exercise_module), sandbox=not a.no_sandbox,
                                    progress=not a.no_progress)
            except OSError as e:        # no scheduler there, no worker came (a timeout)
                raise ValueError(f"no Dask cluster at {a.scheduler or a.cluster}: "
                                 f"{type(e).__name__}: {e}") from None
        results = grade(a.dir, solutions=a.solutions, jobs=a.jobs, cell_timeout=a.cell_timeout,
                        notebook_timeout=a.notebook_timeout, memory_limit=a.memory_limit,
                        exercise_modules=a.exercise_module,
                        progress=not a.no_progress, sandbox=not a.no_sandbox, cache_dir=cache,
                        max_notebook_bytes=a.max_notebook_size, seed=a.seed,
                        submissions=subs, runner=runner)
    except SandboxUnavailable as e:
        print("!" * 78 + f"\nlabkit grade: {e}\n" + "!" * 78, file=sys.stderr)
        return 4
    except (FileNotFoundError, ValueError, ImportError) as e:
        print(f"labkit grade: {e}", file=sys.stderr)
        return 2
    finally:
        if runner is not None:
            runner.close()
    if shard is not None:
        return _write_shard(results, a, shard, course)
    return write_outputs(results, a, course)


def _settings(a) -> dict:
    """The options written into the JSON (never the class seed itself)."""
    return {k: v for k, v in vars(a).items() if k not in ("json", "seed")}


def _write_shard(results: list[dict], a, shard, course) -> int:
    from .shard import write_shard
    ident, every = shard
    a.json = a.json or str(Path(a.out).with_suffix(".json"))
    Path(a.json).parent.mkdir(parents=True, exist_ok=True)
    write_shard(a.json, results, ident, a.shard, every,
                dict(_settings(a), dir=str(Path(a.dir).resolve())))
    if course is not None:
        print("labkit grade: --course with --shard: the gradebook is written by "
              "labkit grade merge --course", file=sys.stderr)
    code = write_outputs(results, a, None, json_writer=lambda r, p: None)
    print(f"shard {a.shard[0]}/{a.shard[1]}: {len(results)} of {len(every)} notebooks; "
          f"merge with labkit grade merge OUT {a.json} …")
    return code


def _course(results: list[dict], a, course) -> int:
    from .course import describe, grade_course
    try:
        told, warn = describe(*grade_course(course, results, a.dir, Path(a.out).parent,
                                            a.solutions))
    except (FileNotFoundError, ValueError) as e:
        print(f"labkit grade: {e}", file=sys.stderr)
        return 2
    print(told)
    if warn:
        print(warn, file=sys.stderr)
    return 0


def write_outputs(results: list[dict], a, course=None, json_writer=None) -> int:
    """Write the CSV, wide CSV, gradebook (``course``), JSON, pages; tell what was written;
    the exit code (3: tampering)."""
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if course is not None:      # the copy that counts: the best after the late penalty, so
        from .course import choose_copies       # grades.csv and the pages agree with it
        choose_copies(course, results, a.dir)
    write_csv(results, out)
    wide = Path(a.wide) if a.wide else out.with_name(out.stem + "-wide.csv")
    write_wide_csv(results, wide)
    if course is not None and _course(results, a, course):
        return 2
    if a.json:
        if json_writer is None:
            write_json(results, a.json, _settings(a))
        else:
            json_writer(results, a.json)
    from .course import leaderboard_names
    from .pages import write_pages
    report, feedback = write_pages(results, Path(a.html) if a.html else out.parent,
                                   leaderboard_names(course))
    print(summary(results))
    _tell(results, f"{out}, {wide}" + (f", {a.json}" if a.json else ""), report, feedback)
    bad = [r for r in results if r.get("status") == "tampered"]
    if bad:
        print("labkit grade: TAMPERING — " + "; ".join(
            f"{r['student']} ({r['notebook']}): {r['error']}" for r in bad)
              + ". Their points are withheld; every other student was graded.", file=sys.stderr)
        return 3
    return 0


def _tell(results: list[dict], files: str, report, feedback) -> None:
    cached = sum(bool(r.get("cached")) for r in results)
    rows = [e for r in results for e in r.get("exercises", ())]
    again = sum(bool(e.get("remeasured")) for e in rows)
    undecided = sum(e.get("verdict") == "inconclusive" for e in rows)
    print(f"\nwrote {files}"
          + f", {report} and {len(feedback)} feedback pages ({len(results)} notebooks"
          + (f", {cached} unchanged since the last run" if cached else "")
          + (f", {again} check(s) re-measured alone after the batch" if again else "") + ")")
    if undecided:
        print(f"labkit grade: {undecided} check(s) still inconclusive (the machine was too busy "
              "to decide a speed target): run labkit grade again on a quieter machine — with the "
              "result cache only those notebooks are graded again", file=sys.stderr)
