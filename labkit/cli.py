"""The ``labkit`` console script: doctor | warm | bench | solutions | release | grade | course |
gradescope."""
from __future__ import annotations

import sys

USAGE = """usage: labkit <command> [options]

commands:
  doctor              check this machine and install for the labs (CPU, ISA, caches, versions)
  warm [LAB ...]      compile labkit's kernels into numba's cache once, so no notebook cell
                      waits for them (--if-needed: skip when already warm; --check)
  bench <lab|all>     run a lab's benchmark and print its table (labs: alignment, bspline, pcc, epistasis)
  solutions [NAME ...] execute solutions/NN_name.md into solutions/NN_name.ipynb, stamped
                      (NAME: 01_alignment, alignment or 1; default all; --check: exit 1 if stale)
  release [--check]   generate notebooks/ from solutions/ (--check: exit 1 if out of date)
  grade DIR --out F   grade a folder of student notebooks into CSV/JSON
                      (--course course.toml: roster, due dates, an LMS gradebook;
                      --shard i/N, then `grade merge`; --scheduler / --cluster local:N: Dask)
  course ...          import-roster FILE.csv (Canvas/Moodle/Gradescope) | check course.toml
  gradescope ...      build OUTDIR: a Gradescope autograder bundle | results | run

`labkit <command> --help` for a command's options."""


def main(argv: list[str] | None = None) -> int:
    """Dispatch ``labkit <command>`` to the module that implements it."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(USAGE)
        return 0
    cmd, rest = argv[0], argv[1:]
    if cmd in ("-V", "--version", "version"):
        from labkit import __version__
        print(f"labkit {__version__}")
        return 0
    if cmd == "doctor":
        from labkit.hardware import doctor
        return int(doctor(rest) or 0)
    if cmd == "warm":
        from labkit.warm import main as warm_main
        return int(warm_main(rest) or 0)
    if cmd == "bench":
        from labkit.bench import main as bench_main
        return int(bench_main(rest) or 0)
    if cmd == "solutions":
        from labkit.notebooks import main as solutions_main
        return int(solutions_main(rest) or 0)
    if cmd == "release":
        from labkit.release import main as release_main
        return int(release_main(rest) or 0)
    if cmd == "grade":
        from labkit.grade import main as grade_main
        return int(grade_main(rest) or 0)
    if cmd == "course":
        from labkit.grade.course import main as course_main
        return int(course_main(rest) or 0)
    if cmd == "gradescope":
        from labkit.grade.gradescope import main as gradescope_main
        return int(gradescope_main(rest) or 0)
    print(f"labkit: unknown command {cmd!r}\n\n{USAGE}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
