"""tools/test_times.py and the order a fresh clone's first `make test` runs its files in."""
import ast
from pathlib import Path

from tooling import ROOT, load_tool

JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" time="9">
<testcase classname="tests.labs.test_pcc" name="test_a" time="4.0"/>
<testcase classname="tests.labs.test_pcc" name="test_b" time="2.0"/>
<testcase classname="tests.test_grade.TestX" name="test_c" time="8.0"/>
<testcase classname="solutions.00_tools.ipynb" name="Cell 1" time="5.0"/>
<testcase classname="tests.test_tiny" name="test_d" time="0.5"/>
</testsuite></testsuites>"""


def _slow_files_table() -> dict:
    tree = ast.parse((ROOT / "conftest.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "_SLOW_FILES":
            return ast.literal_eval(node.value)
    raise AssertionError("conftest.py has no _SLOW_FILES")


def test_slow_files_prints_each_file_as_conftest_names_it(tmp_path, capsys):
    a, b = tmp_path / "a.xml", tmp_path / "b.xml"
    a.write_text(JUNIT, encoding="utf-8")
    b.write_text(JUNIT.replace('time="8.0"', 'time="4.0"'), encoding="utf-8")
    assert load_tool("test_times").main(["--slow-files", str(a), str(b)]) == 0
    table = ast.literal_eval(capsys.readouterr().out.split("=", 1)[1])
    assert table == {"tests/test_grade.py": 6, "tests/labs/test_pcc.py": 6,
                     "solutions/00_tools.ipynb": 5}          # the mean; under 3 s left out


def test_the_first_run_order_names_files_that_exist():
    table = _slow_files_table()
    assert len(table) >= 10
    missing = [f for f in table if not (ROOT / f).is_file()]
    assert not missing, f"conftest.py's _SLOW_FILES names files that are gone: {missing}"
