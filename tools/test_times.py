"""Print the slowest tests of a pytest --junitxml file and the total (make test / test-all /
test-full call it; CI's log shows where the suite's time goes).

    python tools/test_times.py build/test-times/default.xml [N]
"""
from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip())
        return 2
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
