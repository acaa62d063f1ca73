"""Which `nbval-ignore-output` tags of a solution could go? Run nbval with them removed.

    .venv/bin/python tools/nbval_candidates.py 00_tools [01_alignment ...]

Copies solutions/NN_name.ipynb (the executed copy) to build/nbval-candidates/ with every
`nbval-ignore-output` tag removed, runs nbval on it once (sanitized by tests/nbval_sanitize.cfg,
checks strict, as `make test` does) and lists each formerly tagged cell: "same" when its output
was reproduced on this run, "differs" when not. A "same" cell is only a candidate: drop its tag
in solutions/NN_name.md only if its output cannot depend on the machine either (CPU name, vector
width, assembly, cache sizes, a float sum's rounding under fastmath all do).
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "build" / "nbval-candidates"
TAG = "nbval-ignore-output"


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    OUT.mkdir(parents=True, exist_ok=True)
    for name in argv:
        src = ROOT / "solutions" / f"{Path(name).stem}.ipynb"
        nb = nbformat.read(src, as_version=4)
        tagged = {}
        k = 0
        for cell in nb.cells:
            if cell.cell_type != "code":
                continue
            tags = cell.metadata.get("tags", [])
            if TAG in tags:
                tags.remove(TAG)
                tagged[k] = cell.source.splitlines()[0][:70] if cell.source else ""
            k += 1
        path = OUT / src.name
        nbformat.write(nb, path)
        proc = subprocess.run([sys.executable, "-m", "pytest", str(path), "-q"],
                              cwd=ROOT, capture_output=True, text=True)
        failed = {int(m) for m in re.findall(rf"{re.escape(src.name)}::Cell (\d+)", proc.stdout)}
        print(f"{src.name}: {len(tagged)} cells tagged {TAG}")
        for i, first in tagged.items():
            print(f"  code cell {i:3d}  {'differs' if i in failed else 'same   '}  {first}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
