"""``labkit bench <lab|all>``: run each lab's ``run_benchmark()``, print its tables, then its
``TARGETS`` as ✔/✘ lines. Knows no lab: the labs come from :mod:`labkit.registry` and are
imported through it (importlib), only when the command runs."""
from __future__ import annotations

import sys
from typing import Any, Mapping, Sequence

from .results import BenchResult
from .targets import _format_target, check_targets

__all__ = ["main", "lab_names"]


def lab_names() -> tuple[str, ...]:
    """The labs ``labkit bench`` knows: those the registry lists with a benchmark."""
    from labkit import registry

    return registry.names(benchmark=True)


def _as_results(obj: Any) -> list[tuple[str | None, BenchResult]]:
    if isinstance(obj, BenchResult):
        return [(None, obj)]
    if isinstance(obj, Mapping):
        return [(str(k), v) for k, v in obj.items()]
    if isinstance(obj, (list, tuple)):
        return [(None, v) for v in obj]
    raise TypeError(f"run_benchmark returned {type(obj).__name__}; expected a BenchResult, a list or a dict of them")


def _load_lab(lab: str, failed: list[str]):
    """The lab's module with its ``run_benchmark`` (or None, after printing why not)."""
    import traceback

    from labkit import registry

    modname = registry.get(lab).module
    try:
        mod = registry.get(lab).load()
        run = getattr(mod, "run_benchmark", None)   # a lab package may import its bench lazily
    except ModuleNotFoundError as e:
        if e.name == modname:
            print(f"\n== {lab} ==\nlab {lab} not available yet")
            return None, None
        if (e.name or "").startswith(modname + "."):  # a lab package still being written
            print(f"\n== {lab} ==\nlab {lab} not available yet ({e})")
            return None, None
        print(f"\n== {lab} ==\nlab {lab} could not be imported: {e} (run `labkit doctor`)")
        failed.append(lab)
        return None, None
    except Exception as e:
        traceback.print_exc()
        print(f"\n== {lab} ==\nlab {lab} could not be imported: {type(e).__name__}: {e}")
        failed.append(lab)
        return None, None
    if run is None:
        print(f"\n== {lab} ==\nlab {lab} not available yet (no run_benchmark)")
        return None, None
    return mod, run


def main(argv: Sequence[str] | None = None) -> int:
    """CLI `labkit bench <lab|all> [--size small|seed|large] [--repeat N]`; returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "bench":
        argv = argv[1:]
    known = lab_names()
    ns = _parse_args(argv, known)
    from labkit import hardware
    print(hardware.summary())
    labs = known if ns.lab == "all" else (ns.lab,)
    if ns.uarch:
        print_uarch(labs)
        return 0
    failed: list[str] = []
    summary: list[tuple[str, dict]] = []
    tables: dict = {}                   # lab → its key kernel's table (the final line reuses it)
    host, ran = _run_labs(labs, ns, failed, summary, tables)
    steady = host_note(host, ran)
    print(steady + "\n")
    if not ns.no_uarch and ran:
        print_uarch(ran, tables)
    if len(labs) > 1 and summary:
        _print_targets_met(summary)
    if ns.markdown and summary:
        write_markdown(ns.markdown, summary, " ".join(["labkit bench", ns.lab]
                                                      + (["--size", ns.size] if ns.size else [])),
                       host=steady)
        print(f"targets written to {ns.markdown}")
    if failed:
        print(f"benchmark failed for: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


def _parser(known: Sequence[str]):
    """The command line's parser: a lab (or all), the size, repeats, --markdown, --uarch."""
    import argparse

    p = argparse.ArgumentParser(prog="labkit bench",
                                description="Run a lab's benchmark and print its table.")
    p.add_argument("lab", nargs="?", default="all", choices=list(known) + ["all"],
                   help="which lab to benchmark (default: all)")
    p.add_argument("--size", choices=["small", "seed", "large"], default=None,
                   help="input size (default: the lab's own default)")
    p.add_argument("--repeat", type=int, default=5, help="interleaved repeats (default 5)")
    p.add_argument("--markdown", metavar="FILE", default=None,
                   help="also write the targets as a Markdown table to FILE; if FILE has the "
                        f"lines {MARK_BEGIN} and {MARK_END}, only what is between them is "
                        "replaced (how README.md's benchmark table is made)")
    p.add_argument("--uarch", action="store_true",
                   help="only each lab's predicted-vs-measured line (OSACA's bound for its key "
                        "kernel beside its measured cycles per element; seconds, no tables)")
    p.add_argument("--no-uarch", action="store_true",
                   help="leave the predicted-vs-measured lines out")
    return p


def _parse_args(argv: list[str], known: Sequence[str]):
    """The parsed options, their combinations checked (and the --markdown file's markers, before
    a run of minutes, not after it)."""
    p = _parser(known)
    ns = p.parse_args(argv)
    if ns.uarch and (ns.no_uarch or ns.markdown):
        p.error("--uarch prints only the prediction lines: it takes no --no-uarch or --markdown")
    if ns.repeat < 1:
        p.error("--repeat must be ≥ 1")
    if ns.markdown:
        try:        # before a run of minutes, not after it
            _marked_parts(ns.markdown)
        except (ValueError, OSError) as e:
            p.error(str(e))
    return ns


def _run_labs(labs: Sequence[str], ns, failed: list[str], summary: list[tuple[str, dict]],
              tables: dict) -> tuple[list[float], list[str]]:
    """Run each lab's benchmark in turn (a failure reported, the others carry on), the host's
    rate read before the first and after each: (host rates, labs that ran)."""
    import traceback

    host, ran = [host_rate()], []       # host[i], host[i + 1]: before and after lab ran[i]
    for lab in labs:
        mod, run = _load_lab(lab, failed)
        if run is None:
            continue
        print(f"\n== {lab} ==", flush=True)
        try:
            summary.extend((lab, r) for r in _run_lab(mod, run, ns, lab, tables))
        except Exception as e:  # report and carry on with the other labs
            traceback.print_exc()
            print(f"lab {lab}: benchmark failed: {type(e).__name__}: {e}")
            failed.append(lab)
        finally:
            host.append(host_rate())
            ran.append(lab)
    return host, ran


def _print_targets_met(summary: Sequence[tuple[str, dict]]) -> None:
    """The run's count of targets met, and each target missed."""
    met = sum(1 for _, r in summary if r["met"])
    measured = sum(1 for _, r in summary if r["met"] is not None)
    unjudged = sum(1 for _, r in summary if r.get("not_judged"))
    print(f"targets met: {met} of {measured} measured ({len(summary)} stated"
          + (f"; {unjudged} not judged: other work ran beside the thread rows" if unjudged
             else "") + ")")
    for lab, r in summary:
        if r["met"] is False:
            print(f"  ✘ {lab}: {r['claim']}")


def uarch_header(from_tables: bool = False) -> str:
    """The line above :func:`print_uarch`'s lines: what they are and which clock (and how the
    kernel was timed: its table's best repeat, or 3 rounds of clock + kernel back to back)."""
    from .uarch import CLOCK_NOTE
    how = ("the best repeat of its table above" if from_tables
           else "its fastest of 3 rounds at their fastest clock, clock and kernel back to back")
    return ("predicted vs measured, each lab's key kernel (OSACA's bound for its hot loop, "
            f"labkit.inspect.predict; cycles from the {CLOCK_NOTE}; {how}):")


def print_uarch(labs: Sequence[str], tables: Mapping | None = None) -> list[str]:
    """Print (and return) one computed line per lab: its key kernel's measured and predicted
    cycles per element (:func:`labkit.bench.uarch.lab_line`; never raises). ``tables``: lab →
    the key kernel's table this run printed (its numbers are used, not measured again)."""
    from .uarch import lab_line
    print(uarch_header(from_tables=bool(tables) and all(lab in tables for lab in labs)),
          flush=True)
    lines = []
    for lab in labs:
        table = (tables or {}).get(lab)
        lines.append(lab_line(lab, table=table) if table is not None else lab_line(lab))
        print("  " + lines[-1], flush=True)
    print()
    return lines


def _run_lab(mod, run, ns, lab: str = "", tables: dict | None = None) -> list[dict]:
    """Run one lab's benchmark, print its tables, its key kernel's table (measured and predicted
    cycles per element, unless ``--no-uarch``) and its targets; the target rows."""
    results = _as_results(run(size=ns.size, repeat=ns.repeat))
    for key, res in results:
        if key:
            print(f"-- {key}")
        print(res)
        print()
    if lab and not ns.no_uarch:
        from .uarch import lab_table
        table, why = lab_table(lab)
        print("-- predicted beside measured (labkit.inspect.predict)")
        print(f"{table}\n" if table is not None else f"{why}\n", flush=True)
        if table is not None and tables is not None:
            tables[lab] = table
    stated = list(getattr(mod, "TARGETS", None) or ())
    targets = [t for t in stated if t.size == ns.size]
    if targets:
        rows = check_targets(targets, dict(results))
        print("-- targets (the lab's issue; a miss is a measurement on this machine, "
              "not a test failure)")
        print("\n".join(_format_target(r) for r in rows) + "\n")
        return rows
    if stated:
        sizes = sorted({t.size or "default" for t in stated})
        print(f"-- targets: stated for size {', '.join(sizes)}, not --size {ns.size}\n")
    return []


#: host rates further apart than this (max/min − 1) mark labs measured on a host whose speed
#: changed under them (throttled, or other work on its cores)
HOST_SPREAD = 0.08


def host_rate() -> float:
    """One core's FMA rate now (GFLOP/s, best of 5 × 50 ms): the host's speed between labs."""
    from labkit import hardware
    return hardware.measure_fma_rate(repeat=5)


def host_note(rates: Sequence[float], labs: Sequence[str] = ()) -> str:
    """One line on the host's speed during the run, from :func:`host_rate` before the first lab
    and after each (``rates[i]``, ``rates[i + 1]`` bracket ``labs[i]``): steady, or changed by
    more than :data:`HOST_SPREAD` — then it names the labs measured while the host was slower
    than its fastest reading (a throttled host slows every row of a lab, and a lab measured at
    another speed than its peer is not comparable): their ratios are suspect, run them again."""
    lo, hi = min(rates), max(rates)
    spread = hi / lo - 1 if lo > 0 else float("inf")
    vals = ", ".join(f"{r:.0f}" for r in rates)
    where = "before and after each lab" if labs else "during the run"
    if spread <= HOST_SPREAD:
        return f"host speed steady: one core's FMA rate {vals} GFLOP/s {where}"
    slow = [lab for k, lab in enumerate(labs)
            if min(rates[k], rates[min(k + 1, len(rates) - 1)]) * (1 + HOST_SPREAD) < hi]
    return (f"HOST SPEED CHANGED during this run: one core's FMA rate {vals} GFLOP/s {where} "
            f"({spread:.0%} apart, more than {HOST_SPREAD:.0%}) — the host was throttled or "
            f"shared" + (f" while {', '.join(slow)} ran" if slow else "")
            + ": those ratios are suspect, run them again")


MARK_BEGIN = "<!-- labkit bench: begin -->"
MARK_END = "<!-- labkit bench: end -->"


def markdown_table(summary: Sequence[tuple[str, dict]], command: str, host: str = "") -> str:
    """The targets of one run as Markdown: a line saying when, where and how it was measured
    (time, machine with numba's target and threads, load, ``host``: :func:`host_note`), then one
    row per target with ✔/✘ and the count."""
    import datetime
    import os

    from labkit import hardware, registry
    from .targets import _format_target

    def num(v):
        return f"{v:.3g}" if abs(v) < 100 else f"{v:.0f}"

    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    lines = [f"Written by `{command} --markdown …` at {when} on: {hardware.summary()}; "
             f"load average at the end {load}" + (f"; {host}" if host else "") + ".", "",
             "| lab | comparison | target | measured |", "| --- | --- | --- | --- |"]
    for lab, r in summary:
        need = f"{'<' if r['at_most'] else '≥'} {num(r['need'])}{r['unit']}"
        if r["met"] is None and r.get("not_judged"):
            got = f"not judged: {r['not_judged']}"
        elif r["met"] is None:
            got = "not measured in this run"
        else:   # the digits _format_target shows (more where they decide the verdict)
            got = _format_target(r).rsplit("measured ", 1)[1] + (" ✔" if r["met"] else " ✘")
        claim = r["claim"].replace("|", "\\|")
        lines.append(f"| {registry.get(lab).number:02d} | {claim} | {need.strip()} | {got} |")
    met = sum(1 for _, r in summary if r["met"])
    measured = sum(1 for _, r in summary if r["met"] is not None)
    lines += ["", f"Targets met: {met} of {measured} measured ({len(summary)} stated)."]
    return "\n".join(lines) + "\n"


def write_markdown(path: str, summary: Sequence[tuple[str, dict]], command: str,
                   host: str = "") -> None:
    """Write ``markdown_table`` to ``path``: between the two marker lines if the file has them
    (the rest of the file kept byte for byte), else as the whole file."""
    from pathlib import Path

    table = markdown_table(summary, command, host)
    parts = _marked_parts(path)
    body = table if parts is None else f"{parts[0]}{MARK_BEGIN}\n{table}{MARK_END}{parts[1]}"
    Path(path).write_text(body, encoding="utf-8")


def _marked_parts(path: str) -> tuple[str, str] | None:
    """(text before the begin marker, text after the end marker) of ``path``, or None when the
    file is missing or has neither marker; ValueError when the markers are broken."""
    from pathlib import Path

    f = Path(path)
    if f.is_dir():
        raise ValueError(f"--markdown {path}: is a folder; give a file")
    text = f.read_text(encoding="utf-8") if f.exists() else ""
    if MARK_BEGIN in text and MARK_END in text.split(MARK_BEGIN, 1)[1]:
        head, rest = text.split(MARK_BEGIN, 1)
        return head, rest.split(MARK_END, 1)[1]
    if MARK_BEGIN in text or MARK_END in text:
        raise ValueError(f"--markdown {path}: has one of the lines {MARK_BEGIN} / {MARK_END} "
                         "but not both in that order; fix the file or give another path")
    return None
