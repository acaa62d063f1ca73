"""Print the slowest tests of a pytest --junitxml file and the total (make test / test-all /
test-full call it; CI's log shows where the suite's time goes).

    python tools/test_times.py build/test-times/default.xml [N]
    python tools/test_times.py --slow-files XML [XML ...]   # conftest.py's _SLOW_FILES, the mean
"""
from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip())
        return 2
    if argv[0] == "--slow-files":
        return slow_files([Path(p) for p in argv[1:]])
    path, top = Path(argv[0]), int(argv[1]) if len(argv) > 1 else 15
    if not path.is_file():
        print(f"test_times: no {path} (did pytest run?)")
        return 0
    rows = [(float(tc.get("time") or 0.0), f"{tc.get('classname')}::{tc.get('name')}")
            for tc in ET.parse(path).getroot().iter("testcase")]
    rows.sort(reverse=True)
    total = sum(t for t, _ in rows)
    root = ET.parse(path).getroot()
    suite = root if root.tag == "testsuite" else root.find("testsuite")
    wall = f", {float(suite.get('time')):.0f} s wall" if suite is not None and suite.get("time") else ""
    print(f"test times ({path}): {len(rows)} tests, {total:.0f} s in tests{wall}; slowest {top}:")
    for t, name in rows[:top]:
        print(f"  {t:7.1f} s  {name}")
    # by file: what pytest-xdist (--dist loadfile) hands a worker as one unit, longest first
    files: dict[str, float] = {}
    for t, name in rows:
        files[_file(name)] = files.get(_file(name), 0.0) + t
    print(f"slowest {min(top, len(files))} files (a worker runs a file whole):")
    for name, t in sorted(files.items(), key=lambda kv: -kv[1])[:top]:
        print(f"  {t:7.1f} s  {name}")
    return 0


def slow_files(paths: list[Path], floor: float = 3.0) -> int:
    """Print conftest.py's ``_SLOW_FILES`` (the order of a fresh clone's first run): each file's
    seconds, the mean over the runs given, the files of at least ``floor`` seconds."""
    runs = []
    for path in paths:
        files: dict[str, float] = {}
        for tc in ET.parse(path).getroot().iter("testcase"):
            f = _path(_file(f"{tc.get('classname')}::{tc.get('name')}"))
            files[f] = files.get(f, 0.0) + float(tc.get("time") or 0.0)
        runs.append(files)
    if not runs:
        print("test_times: --slow-files needs one or more junit files")
        return 2
    mean = {f: sum(r.get(f, 0.0) for r in runs) / len(runs) for r in runs for f in r}
    print("_SLOW_FILES = {")
    for f, t in sorted(mean.items(), key=lambda kv: -kv[1]):
        if t >= floor:
            print(f'    "{f}": {t:.0f},')
    print("}")
    return 0


def _path(unit: str) -> str:
    """tests.labs.test_pcc -> tests/labs/test_pcc.py; solutions.00_tools.ipynb -> solutions/…"""
    if unit.endswith(".ipynb"):
        head, _, name = unit[:-6].partition(".")
        return f"{head}/{name}.ipynb"
    return unit.replace(".", "/") + ".py"


def _file(name: str) -> str:
    """The file of a junit name: solutions.00_tools.ipynb::Cell 3 -> solutions.00_tools.ipynb,
    tests.labs.test_pcc::test_x or tests.test_a.TestB::test_c -> tests.labs.test_pcc / tests.test_a."""
    cls = name.split("::", 1)[0]
    if ".ipynb" in cls:
        return cls[:cls.index(".ipynb") + 6]
    parts = cls.split(".")
    for i, part in enumerate(parts):
        if part.startswith("test_"):
            return ".".join(parts[:i + 1])
    return cls


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
