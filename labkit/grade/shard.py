"""One class graded in parts: ``labkit grade DIR --shard i/N --seed S`` grades the students of
shard ``i`` (of the sorted submission list, every N-th student from the i-th: all of one
student's notebooks in one shard, so duplicates are resolved as in one run) and writes a shard
JSON; ``labkit grade merge OUT SHARD.json …`` checks that the shards are one class graded by
the same labkit, settings and class seed, each submission exactly once, and writes the CSV,
wide CSV, JSON, feedback pages and one ``report.html`` as a single run would.

Nothing here schedules: a Slurm array job, a Kubernetes Job with N completions or N shells run
the shards; see ``docs/grading.md`` ("Grading across machines")."""
from __future__ import annotations

import argparse
import hashlib
import html
import json
import re
import sys
from pathlib import Path

from .integrity import trusted_roots
from .notebooks import Submission
from .report import counted
from .batch import _seed_id

__all__ = ["parse_shard", "pick", "identity", "write_shard", "merge_shards", "merge_main",
           "ShardError", "cpu_section"]

SHARD_VERSION = 1
#: the grading settings every shard must share (``labkit grade``'s option names)
SAME = ("cell_timeout", "notebook_timeout", "memory_limit", "max_notebook_size", "no_sandbox",
        "exercise_module")


class ShardError(ValueError):
    """Shards that cannot be merged into one class."""


def parse_shard(text: str) -> tuple[int, int]:
    """``"2/5"`` → ``(2, 5)`` (argparse type of ``--shard``)."""
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text or "")
    if not m or not 1 <= int(m.group(1)) <= int(m.group(2)):
        raise argparse.ArgumentTypeError(f"cannot read shard {text!r}: write i/N with "
                                         "1 ≤ i ≤ N, e.g. --shard 2/5")
    return int(m.group(1)), int(m.group(2))


def pick(subs: list[Submission], i: int, n: int) -> list[Submission]:
    """The submissions of shard ``i`` of ``n``: students in the order of the sorted
    submission list, every ``n``-th from the ``i``-th; a student's notebooks stay together."""
    students = list(dict.fromkeys(s.student for s in subs))
    mine = set(students[i - 1::n])
    return [s for s in subs if s.student in mine]


def _files_digest(modules=()) -> str:
    """sha256 of labkit's and the exercise modules' ``.py`` files, by path relative to their
    folder (the same install at another path, on another machine, gives the same digest)."""
    h = hashlib.sha256()
    for root in trusted_roots(modules):
        files = [root] if root.is_file() else sorted(
            p for p in root.rglob("*.py") if "__pycache__" not in p.parts)
        for f in files:
            rel = f.relative_to(root.parent).as_posix()
            h.update(rel.encode() + b"\0" + hashlib.sha256(f.read_bytes()).digest())
    return h.hexdigest()[:24]


def labkit_identity(modules=()) -> dict:
    """labkit's version and the digest of its files (and the exercise modules')."""
    import labkit
    return {"labkit": labkit.__version__, "labkit_files": _files_digest(modules)}


def identity(args: argparse.Namespace, canon: dict) -> dict:
    """What every shard of one class must share: labkit, the class seed (its id, not the seed),
    the grading settings and the solution notebooks."""
    h = hashlib.sha256()
    for name, c in sorted(canon.items()):
        h.update(name.encode() + b"\0" + Path(c.path).read_bytes())
    return {**labkit_identity(tuple(args.exercise_module)),
            "seed": None if args.seed is None else _seed_id(args.seed),
            "settings": {k: getattr(args, k) for k in SAME},
            "solutions": h.hexdigest()[:24]}


def write_shard(path, results: list[dict], ident: dict, shard: tuple[int, int],
                every: list[Submission], settings: dict) -> None:
    """The shard's JSON: the usual one plus a ``shard`` block (what merge checks)."""
    import time
    i, n = shard
    doc = {"labkit_grade": 2, "generated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "settings": settings,
           "shard": {"version": SHARD_VERSION, "index": i, "count": n, "identity": ident,
                     "class": [s.rel for s in every],
                     "mine": [s.rel for s in pick(every, i, n)]},
           "submissions": results}
    Path(path).write_text(json.dumps(doc, indent=1, default=str) + "\n", encoding="utf-8")


# ------------------------------------------------------------------ merge
def _load(paths) -> list[tuple[str, dict]]:
    """(name, doc) per shard file; a file given twice (same bytes) counts once."""
    seen: dict[str, str] = {}
    docs = []
    for p in paths:
        try:
            raw = Path(p).read_bytes()
            doc = json.loads(raw)
        except (OSError, ValueError) as e:
            raise ShardError(f"cannot read shard {p}: {e}") from None
        if not isinstance(doc, dict) or not isinstance(doc.get("shard"), dict):
            raise ShardError(f"{p} is not a shard (no 'shard' block): write shards with "
                             "labkit grade DIR --shard i/N --seed S --json FILE")
        if doc["shard"].get("version") != SHARD_VERSION:
            raise ShardError(f"{p}: shard format {doc['shard'].get('version')!r}, this labkit "
                             f"reads {SHARD_VERSION}")
        key = hashlib.sha256(raw).hexdigest()
        if key not in seen:
            seen[key] = str(p)
            docs.append((str(p), doc))
    return docs


def _differs(what: str, docs, get) -> None:
    first_name, first = docs[0]
    for name, d in docs[1:]:
        if get(d) != get(first):
            raise ShardError(f"refusing to merge: the shards were graded with different "
                             f"{what} ({first_name}: {get(first)!r}; {name}: {get(d)!r}); "
                             "grade every shard with the same labkit, settings and --seed")


def check_shards(docs: list[tuple[str, dict]]) -> None:
    """Raise :class:`ShardError` unless ``docs`` are the N shards of one class, graded alike,
    covering each submission exactly once."""
    if not docs:
        raise ShardError("no shards to merge")
    ident = lambda d: d["shard"].get("identity") or {}  # noqa: E731
    _differs("labkit versions", docs, lambda d: ident(d).get("labkit"))
    _differs("labkit files (another install or a changed checkout)", docs,
             lambda d: ident(d).get("labkit_files"))
    _differs("seeds (--seed)", docs, lambda d: ident(d).get("seed"))
    for k in SAME:
        _differs(f"settings (--{k.replace('_', '-')})", docs,
                 lambda d, k=k: (ident(d).get("settings") or {}).get(k))
    _differs("solution notebooks", docs, lambda d: ident(d).get("solutions"))
    _differs("shard counts (--shard i/N)", docs, lambda d: d["shard"].get("count"))
    _differs("classes (the class folder changed between shards)", docs,
             lambda d: hashlib.sha256(json.dumps(d["shard"].get("class")).encode()).hexdigest())
    n = docs[0][1]["shard"]["count"]
    by: dict[int, str] = {}
    for name, d in docs:
        i = d["shard"]["index"]
        if i in by:
            raise ShardError(f"overlapping shards: {by[i]} and {name} are both shard {i}/{n} "
                             "(graded twice, differently); merge one of them")
        by[i] = name
    missing = [f"{i}/{n}" for i in range(1, n + 1) if i not in by]
    if missing:
        raise ShardError(f"missing shard(s) {', '.join(missing)}: not merged (their students "
                         "would have no grades); grade them with --shard and merge again")
    _cover(docs)


def _cover(docs) -> None:
    every = docs[0][1]["shard"]["class"]
    where: dict[str, str] = {}
    for name, d in docs:
        got = [r.get("notebook") for r in d.get("submissions", ())]
        if sorted(got) != sorted(d["shard"]["mine"]):
            raise ShardError(f"{name}: its results are not the submissions of its shard "
                             "(an edited or truncated file?)")
        for rel in got:
            if rel in where:
                raise ShardError(f"overlapping shards: {rel} is in {where[rel]} and {name}")
            where[rel] = name
    lost = [rel for rel in every if rel not in where]
    if lost or len(where) != len(every):
        raise ShardError(f"submissions in no shard: {', '.join(lost[:5])}")


def merge_shards(paths) -> tuple[list[dict], dict]:
    """(the class's results in the order one run gives, the merged JSON's head)."""
    docs = _load(paths)
    check_shards(docs)
    order = {rel: k for k, rel in enumerate(docs[0][1]["shard"]["class"])}
    results = sorted((r for _, d in docs for r in d["submissions"]),
                     key=lambda r: order[r["notebook"]])
    first = docs[0][1]
    keep = {k: v for k, v in (first.get("settings") or {}).items()
            if k not in ("shard", "out", "wide", "html", "cache", "jobs", "scheduler",
                         "cluster", "no_progress")}
    head = {"generated": max(str(d.get("generated", "")) for _, d in docs),
            "settings": dict(keep, merged_from=sorted(n for n, _ in docs)),
            "identity": first["shard"]["identity"]}
    return results, head


def write_merged_json(results: list[dict], head: dict, path) -> None:
    """The merged JSON: what one run's ``--json`` writes (the same inputs → the same bytes)."""
    doc = {"labkit_grade": 2, "generated": head["generated"], "settings": head["settings"],
           "submissions": results}
    Path(path).write_text(json.dumps(doc, indent=1, default=str) + "\n", encoding="utf-8")


def merge_main(argv: list[str] | None = None) -> int:
    """CLI: ``labkit grade merge OUT SHARD.json … [--json F] [--wide F] [--html DIR]``."""
    p = argparse.ArgumentParser(prog="labkit grade merge",
                                description="Merge the shard JSONs of one class (labkit grade "
                                            "DIR --shard i/N --seed S) into one class's outputs.")
    p.add_argument("out", help="CSV to write (as labkit grade --out)")
    p.add_argument("shards", nargs="+", help="the shards' JSON files (all N of them)")
    p.add_argument("--json", default=None, help="also write the merged JSON here")
    p.add_argument("--wide", default=None, help="wide CSV (default: <out>-wide.csv)")
    p.add_argument("--html", default=None, help="folder for report.html and feedback/ "
                                                "(default: the folder of OUT)")
    p.add_argument("--course", default=None, help="course.toml: also write the gradebook")
    p.add_argument("--solutions", default=None, help="canonical notebooks (with --course)")
    a = p.parse_args(argv)
    try:
        results, head = merge_shards(a.shards)
    except ShardError as e:
        print(f"labkit grade merge: {e}", file=sys.stderr)
        return 2
    from .cli import write_outputs
    a.dir = head["settings"].get("dir")
    course = None
    if a.course:
        from .course import prepare
        try:
            course = prepare(a.course, a.solutions)
        except (FileNotFoundError, ValueError) as e:
            print(f"labkit grade merge: {e}", file=sys.stderr)
            return 2
    print(f"labkit grade merge: {len(results)} notebooks from {len(a.shards)} shard file(s), "
          f"labkit {head['identity'].get('labkit')}", file=sys.stderr)
    return write_outputs(results, a, course,
                         json_writer=lambda r, path: write_merged_json(r, head, path))


# ------------------------------------------------------------------ machines
_SPEED = ("slower", "no change", "not fast enough", "inconclusive")


def cpu_section(results: list[dict]) -> str:
    """report.html's section for a class measured on more than one CPU (a cluster, shards on
    several nodes): speed verdicts per CPU. ``""`` for one CPU."""
    per: dict[str, list] = {}
    for r in counted(results):
        cpu = str((r.get("environment") or {}).get("cpu") or "unknown")
        s = per.setdefault(cpu, [0, 0, 0, []])
        s[0] += 1
        for e in r.get("exercises", ()):
            ratio = (e.get("details") or {}).get("speed_ratio")
            if isinstance(ratio, (int, float)) or e.get("verdict") in _SPEED:
                s[1] += 1
                s[2] += e.get("verdict") == "passed"
            if isinstance(ratio, (int, float)):
                s[3].append(float(ratio))
    if len(per) < 2:
        return ""
    rows = []
    for cpu, (nb, judged, ok, ratios) in sorted(per.items()):
        med = sorted(ratios)[len(ratios) // 2] if ratios else None
        rows.append(f"<tr><td>{html.escape(cpu)}</td><td>{nb}</td><td>{ok} / {judged}</td>"
                    f"<td>{'—' if med is None else f'{med:.2f}×'}</td></tr>")
    return ("<h2>Measured on more than one CPU</h2><p>This class was graded on "
            f"{len(per)} kinds of CPU. Each speed verdict compares the student's kernel with "
            "labkit's on the same worker, so verdicts are fair on each; speedups differ "
            "between CPUs.</p><table><tr><th>CPU</th><th>notebooks</th><th>speed checks "
            "passed / judged</th><th>median speedup</th></tr>" + "".join(rows) + "</table>")
