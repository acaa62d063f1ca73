"""Write a synthetic class for one solution notebook, to dry-run `labkit grade`.

    .venv/bin/python tools/grade_demo_class.py solutions/00_tools.ipynb /tmp/class
    .venv/bin/labkit grade /tmp/class --out /tmp/grades/grades.csv --jobs 2

One student per kind below (``-n`` repeats the list). Honest students — complete, stripped cell
metadata, saved under another lab's file name, a stray ``-Copy1`` stub beside the real notebook,
a renamed exercise ``grade_id``, edited check cells — must get full marks (flags allowed).
Cheats — hard-coded ✔ outputs, a monkeypatched ``labkit.check``, an endless loop, ``os._exit``,
reading the answer key through ``labkit.__file__``, reading a classmate's notebook found through
``/proc``, editing labkit on disk (also one that restores itself), a detached process that edits
labkit later, the network, ``id`` (root?), delegating to labkit's own answer kernel (a wrapper,
an alias, a computed ``getattr``), forging ``json.dumps``, the clock, an IPython ``pre_run_cell``
hook — must get zero points or a flag. A malformed notebook gets one ``unreadable`` row.
The expected outcome of each student is printed (and returned by :func:`make`).
"""
from __future__ import annotations

import argparse
import copy
import json
import sys
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from labkit.release import BEGIN, END, release_notebook  # noqa: E402

HONEST = ["complete", "stripped-metadata", "renamed-file", "copy1", "renamed-grade-id",
          "edited-checks"]
CHEATS = ["hard-coded", "monkeypatch", "loop", "exit", "answer-key", "classmate",
          "tamper-disk", "tamper-restore", "detached", "network", "root", "delegate-wrapper",
          "delegate-alias", "delegate-getattr", "forge-json", "forge-clock", "forge-hook"]
OTHER = ["malformed"]
KINDS = HONEST + CHEATS + OTHER
EXPECT = {**{k: "full" for k in HONEST}, **{k: "zero or flag" for k in CHEATS},
          "malformed": "unreadable"}


def _nbg(cell) -> dict:
    return (cell.get("metadata", {}).get("nbgrader") or {})


def _gid(cell) -> str:
    return _nbg(cell).get("grade_id", "")


def _region(src: str, body: list[str]) -> str:
    """Replace the marked solution region of ``src`` by ``body`` at the marker's indentation."""
    out, inside = [], False
    for line in src.split("\n"):
        s = line.strip()
        if s.startswith(BEGIN):
            inside = True
            ind = line[: len(line) - len(line.lstrip())]
            out += [ind + b for b in body]
        elif s.startswith(END):
            inside = False
        elif not inside:
            out.append(line)
    return "\n".join(out)


def _exercises(sol) -> list[tuple[int, str, str]]:
    """(cell index, exercise name, function name) of each exercise cell."""
    from labkit.grade import parse_check_line
    fns = {}
    for c in sol.cells:
        g = _nbg(c)
        if g.get("grade") and not g.get("solution") and c.cell_type == "code":
            name, fn, _ = parse_check_line(c.source)
            fns[f"ex-{name}"] = (name, fn)
    return [(i, *fns[_gid(c)]) for i, c in enumerate(sol.cells)
            if c.cell_type == "code" and _nbg(c).get("solution") and _gid(c) in fns]


def _answers(name: str) -> list[str]:
    try:
        from labkit import check
        return list(check.get(name).answers)
    except Exception:  # noqa: BLE001 - no answers declared: the delegation kinds are skipped
        return []


def _cheat_cell(kind: str, src: str, name: str, fn: str, gid: str, sol_name: str) -> str | None:
    """The exercise cell a cheat of ``kind`` hands in (None: this kind does not apply)."""
    stub = ["raise NotImplementedError"]
    if kind == "monkeypatch":
        return ("import labkit.check as _c\n"
                "_c.Exercise.__call__ = lambda self, s=None, *a, **k: _c.CheckResult("
                "self.name, True, self.points, self.points, 'passed', 'ok')\n"
                + _region(src, ["return None"]))
    if kind == "loop":
        return _region(src, ["while True:", "    pass"])
    if kind == "exit":
        return _region(src, ["import os", "os._exit(1)"])
    if kind == "answer-key":
        return (f"def {fn}(*args, **kw):\n"
                "    import json, pathlib, labkit\n"
                "    root = pathlib.Path(labkit.__file__).resolve().parent.parent\n"
                f"    nb = json.loads((root / 'solutions' / {sol_name!r}).read_text())\n"
                "    code = [''.join(c['source']) for c in nb['cells'] if c['cell_type'] == "
                "'code']\n"
                "    ns = {}\n"
                "    for s in code:\n"
                "        try:\n"
                "            exec(s, ns)\n"
                "        except Exception:\n"
                "            pass\n"
                f"    return ns[{fn!r}](*args, **kw)\n")
    if kind == "classmate":
        return (f"def {fn}(*args, **kw):\n"
                "    import json, os\n"
                "    # no classmate's notebook in the system's or Python's folders: prune them\n"
                "    SKIP = {'usr', 'lib', 'lib64', 'bin', 'sbin', 'etc', 'proc', 'sys', 'dev',\n"
                "            '.venv', '.pyenv', 'site-packages', '__pycache__'}\n"
                "    for pid in os.listdir('/proc'):\n"
                "        try:\n"
                "            argv = open(f'/proc/{pid}/cmdline').read().split('\\0')\n"
                "        except OSError:\n"
                "            continue\n"
                "        for a in argv:\n"
                "            if not a.startswith('/') or a.split('/')[1] in SKIP:\n"
                "                continue\n"
                "            for root, dirs, files in os.walk(a):\n"
                "                dirs[:] = [d for d in dirs if d not in SKIP]\n"
                "                for name in files:\n"
                "                    nbp = os.path.join(root, name)\n"
                "                    if not name.endswith('.ipynb') or 'complete' not in nbp:\n"
                "                        continue\n"
                "                    ns = {}\n"
                "                    for c in json.loads(open(nbp).read())['cells']:\n"
                "                        if c['cell_type'] == 'code':\n"
                "                            try:\n"
                "                                exec(''.join(c['source']), ns)\n"
                "                            except Exception:\n"
                "                                pass\n"
                f"                    if {fn!r} in ns:\n"
                f"                        return ns[{fn!r}](*args, **kw)\n"
                "    raise NotImplementedError\n")
    if kind in ("tamper-disk", "tamper-restore"):
        restore = ["p.write_text(old)"] if kind == "tamper-restore" else []
        return _region(src, ["import labkit, pathlib",
                             "p = pathlib.Path(labkit.__file__).parent / 'bench' / '__init__.py'",
                             "old = p.read_text()",
                             "p.write_text(old + '\\n# the next student passes\\n')",
                             *restore, *stub])
    if kind == "detached":
        return _region(src, ["import subprocess, labkit, pathlib",
                             "p = pathlib.Path(labkit.__file__).parent / 'timing' / 'timer.py'",
                             "subprocess.Popen(['/bin/sh', '-c', f'sleep 5; echo >> {p}'],",
                             "                 start_new_session=True)", *stub])
    if kind == "network":
        return _region(src, ["import urllib.request",
                             "urllib.request.urlopen('http://127.0.0.1:9/answers', timeout=2)",
                             *stub])
    if kind == "root":
        return _region(src, ["import os, subprocess",
                             "if subprocess.run(['id', '-u'], capture_output=True, "
                             "text=True).stdout.strip() == '0':",
                             "    os.system('touch /labkit-was-root')", *stub])
    answers = _answers(name)
    if kind.startswith("delegate") and not answers:
        return None
    if kind.startswith("delegate"):
        mod, attr = answers[0].split(":")
        if kind == "delegate-wrapper":
            return (f"import {mod} as _answers\n"
                    f"def {fn}(*args, **kw):\n    return _answers.{attr}(*args, **kw)\n")
        if kind == "delegate-alias":
            return f"from {mod} import {attr} as {fn}\n"
        head, tail = attr[: len(attr) // 2], attr[len(attr) // 2:]
        return (f"import importlib\n"
                f"def {fn}(*args, **kw):\n"
                f"    m = importlib.import_module({mod!r})\n"
                f"    return getattr(m, {head!r} + {tail!r})(*args, **kw)\n")
    if kind == "forge-json":
        return ("import json\n_dumps = json.dumps\n"
                "json.dumps = lambda o, *a, **k: _dumps(dict(o, passed=True, verdict='passed') "
                "if isinstance(o, dict) else o, *a, **k)\n" + _region(src, stub))
    if kind == "forge-clock":
        return ("import time\n_t = [0.0]\n"
                "def _fast():\n    _t[0] += 1e-9\n    return _t[0]\n"
                "time.perf_counter = _fast\n" + _region(src, stub))
    return None


def make(sol_path: Path, folder: Path, n: int = 1, kinds=KINDS) -> list[tuple[str, str]]:
    """Write the class into ``folder`` (``n`` students of each of ``kinds``, default every
    kind); return (student, expected) pairs — expected is ``full``, ``zero or flag`` or
    ``unreadable``."""
    unknown = sorted(set(kinds) - set(KINDS))
    if unknown:
        raise ValueError(f"unknown kinds {unknown}; the kinds are {KINDS}")
    sol_path = Path(sol_path)
    sol = nbformat.read(sol_path, as_version=4)
    stub = release_notebook(sol, sol_path.name)
    exs = _exercises(sol)
    if not exs:
        raise SystemExit(f"{sol_path} has no exercise cells")
    other_name = "01_alignment.ipynb" if not sol_path.name.startswith("01_") else "00_tools.ipynb"
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    kinds = list(kinds)
    for k in range(n * len(kinds)):
        kind = kinds[k % len(kinds)]
        student = f"s{k + 1:02d}_{kind}"
        nb = copy.deepcopy(sol if kind in HONEST else stub)
        path = folder / f"{student}.ipynb"
        if kind == "stripped-metadata":
            for c in nb.cells:
                c.metadata = {}
            nb.metadata.pop("labkit", None)
        if kind == "renamed-file":
            path = folder / student / other_name
        if kind == "copy1":
            path = folder / student / sol_path.name
            path.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(stub, path.with_name(path.stem + "-Copy1.ipynb"))
        if kind == "renamed-grade-id":
            nb.cells[exs[0][0]].metadata["nbgrader"]["grade_id"] = "ex-my_version"
        if kind == "edited-checks":
            for c in nb.cells:
                if _gid(c).startswith("check-"):
                    c.source = "print('I edited this')\n" + c.source
                    c.metadata["nbgrader"]["points"] = 99
        if kind == "hard-coded":
            for c in nb.cells:
                if _gid(c).startswith("check-"):
                    c.source = f"print('✔ {_gid(c)[6:]}: passed — all good')"
                    c.outputs = [nbformat.v4.new_output("stream", name="stdout",
                                                        text=f"✔ {_gid(c)[6:]}: passed\n")]
        if kind == "forge-hook":
            nb.cells.insert(1, nbformat.v4.new_code_cell(
                "ip = get_ipython()\n"
                "def _forge(info):\n"
                "    if 'check.' in info.raw_cell:\n"
                "        print('✔ passed — all good')\n"
                "ip.events.register('pre_run_cell', _forge)\n"))
        if kind.startswith("delegate") and not any(_answers(name) for _, name, _ in exs):
            continue                           # no exercise declares labkit's answer kernels
        if kind in CHEATS:
            shift = 1 if kind == "forge-hook" else 0
            for i, name, fn in exs:
                new = _cheat_cell(kind, sol.cells[i].source, name, fn, _gid(sol.cells[i]),
                                  sol_path.name)
                if new is not None:
                    nb.cells[i + shift].source = new
        path.parent.mkdir(parents=True, exist_ok=True)
        if kind == "malformed":
            path.write_text(nbformat.writes(nb)[:-200], encoding="utf-8")
        else:
            nbformat.write(nb, path)
        out.append((student, EXPECT[kind]))
    return out


def judge(results: list[dict], expected: list[tuple[str, str]]) -> list[str]:
    """What went against expectation (empty: every honest student full marks, every cheat
    zero or a flag) — ``results`` from ``labkit.grade.grade`` / the JSON's submissions."""
    from labkit.grade.report import counted
    per: dict[str, dict] = {}
    for r in counted(results):
        s = per.setdefault(r["student"], {"got": 0.0, "max": 0.0, "flags": 0, "status": set()})
        s["status"].add(r.get("status"))
        s["flags"] += sum(len(v) for v in (r.get("flags") or {}).values())
        for e in r["exercises"]:
            s["got"] += float(e["points"])
            s["max"] += float(e["max_points"])
    bad = []
    for student, exp in expected:
        s = per.get(student)
        if s is None:
            bad.append(f"{student}: no result")
        elif exp == "full" and not (s["got"] == s["max"] > 0):
            bad.append(f"{student}: honest but {s['got']:g} / {s['max']:g}")
        elif exp == "zero or flag" and s["got"] > 0 and not s["flags"]:
            bad.append(f"{student}: cheat scored {s['got']:g} / {s['max']:g} with no flag")
        elif exp == "unreadable" and s["status"] != {"unreadable"}:
            bad.append(f"{student}: expected unreadable, got {s['status']}")
    return bad


def main(argv=None) -> int:
    """CLI entry point."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("solution", type=Path)
    p.add_argument("folder", type=Path)
    p.add_argument("-n", type=int, default=1, help="how many times to repeat the list of kinds")
    p.add_argument("--judge", type=Path, default=None,
                   help="a grades JSON (labkit grade --json) to compare with the expectations")
    a = p.parse_args(argv)
    pairs = make(a.solution, a.folder, a.n)
    for name, exp in pairs:
        print(f"{name:<28} expect: {exp}")
    if a.judge:
        bad = judge(json.loads(a.judge.read_text())["submissions"], pairs)
        print("\n".join(bad) or "as expected: every honest student full marks, every cheat "
                                "zero or flagged")
        return 1 if bad else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
