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
    print(f"test times ({path}): {len(rows)} tests, {total:.0f} s in tests; slowest {top}:")
    for t, name in rows[:top]:
        print(f"  {t:7.1f} s  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
