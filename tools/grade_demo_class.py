"""Write a demo class of submissions for one solution notebook, to dry-run `labkit grade`.

    .venv/bin/python tools/grade_demo_class.py solutions/00_tools.ipynb /tmp/class -n 10
    .venv/bin/labkit grade /tmp/class --out /tmp/grades.csv --json /tmp/grades.json --jobs 2

Students cycle through: complete, stubs, first exercise only, hard-coded ✔ outputs,
monkeypatched labkit.check, infinite loop, os._exit, malformed JSON, renamed exercise cell,
complete with edited check cells. The expected verdicts are printed.
"""
from __future__ import annotations

import argparse
import copy
import sys
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from labkit.release import BEGIN, END, release_notebook  # noqa: E402

KINDS = ["complete", "stubs", "first-only", "hard-coded", "monkeypatch", "loop", "exit",
         "malformed", "renamed", "edited-checks"]
EXPECT = {"complete": "all passed", "stubs": "all not implemented",
          "first-only": "first passed, rest not implemented",
          "hard-coded": "all not implemented (outputs ignored)",
          "monkeypatch": "first wrong/error, rest not implemented (patch undone), flagged",
          "loop": "first timed out, rest not implemented",
          "exit": "first crashed, rest not implemented (later cells replayed)",
          "malformed": "one row: unreadable", "renamed": "first missing, rest passed",
          "edited-checks": "all passed (edits ignored), flagged"}


def _gid(cell) -> str:
    return (cell.get("metadata", {}).get("nbgrader") or {}).get("grade_id", "")


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


def make(sol_path: Path, folder: Path, n: int) -> list[tuple[str, str]]:
    """Write ``n`` submissions into ``folder``; return (student, expected) pairs."""
    sol = nbformat.read(sol_path, as_version=4)
    stub = release_notebook(sol, sol_path.name)
    ex_cells = [i for i, c in enumerate(sol.cells) if c.cell_type == "code"
                and (c.metadata.get("nbgrader") or {}).get("solution")]
    if not ex_cells:
        raise SystemExit(f"{sol_path} has no exercise cells")
    first = ex_cells[0]
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for k in range(n):
        kind = KINDS[k % len(KINDS)]
        name = f"student{k + 1:02d}_{kind}"
        nb = copy.deepcopy(stub)
        if kind in ("complete", "edited-checks", "renamed"):
            nb = copy.deepcopy(sol)
        if kind == "first-only":
            nb.cells[first] = copy.deepcopy(sol.cells[first])
        if kind == "hard-coded":
            for c in nb.cells:
                if _gid(c).startswith("check-"):
                    c.source = f"print('✔ {_gid(c)[6:]}: passed — all good')"
                    c.outputs = [nbformat.v4.new_output("stream", name="stdout",
                                                        text=f"✔ {_gid(c)[6:]}: passed\n")]
        if kind == "monkeypatch":
            c = nb.cells[first]
            c.source = ("import labkit.check as _c\n"
                        "_c.Exercise.__call__ = lambda self, s=None, *a, **k: _c.CheckResult("
                        "self.name, True, self.points, self.points, 'passed', 'ok')\n"
                        + _region(sol.cells[first].source, ["return None"]))
        if kind == "loop":
            nb.cells[first].source = _region(sol.cells[first].source,
                                             ["while True:", "    pass"])
        if kind == "exit":
            nb.cells[first].source = "import os\nos._exit(1)\n" + sol.cells[first].source
        if kind == "renamed":
            nb.cells[first].metadata["nbgrader"]["grade_id"] = "ex-renamed_by_student"
        if kind == "edited-checks":
            for c in nb.cells:
                if _gid(c).startswith("check-"):
                    c.source = "print('I edited this')\n" + c.source
                    c.metadata["nbgrader"]["points"] = 99
        path = folder / f"{name}.ipynb"
        if kind == "malformed":
            path.write_text(nbformat.writes(nb)[:-200], encoding="utf-8")
        else:
            nbformat.write(nb, path)
        out.append((name, EXPECT[kind]))
    return out


def main(argv=None) -> int:
    """CLI entry point."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("solution", type=Path)
    p.add_argument("folder", type=Path)
    p.add_argument("-n", type=int, default=10)
    a = p.parse_args(argv)
    for name, exp in make(a.solution, a.folder, a.n):
        print(f"{name:<28} expect: {exp}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
