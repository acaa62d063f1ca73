"""Test-suite setup shared by unit tests and nbval notebook runs.

* Speed gates report instead of failing (``LABKIT_SPEED=report``): CI machines are noisy.
* Autoscaled timings call each function once per repeat (``LABKIT_TIMING=once``, as
  ``labkit.bench.single_loop``): a notebook's benchmark cells, the labs' ``run_benchmark`` and the
  browser's Run All prove that they run and what they print, not a speed (that is ``labkit
  bench``'s and ``make test-load``'s job); tests of the autoscaling itself unset it.
* While nbval executes ``solutions/*.ipynb``, checks run strictly (``LABKIT_CHECK_STRICT=1``) so a
  check that fails in a solution notebook fails the build; every other kernel (student
  notebooks, browser, grader) starts without it.
* nbval runs cells the way a notebook does: with ``store_history=True`` (nbval itself passes
  False). JupyterLab, nbclient (``labkit solutions``) and nbgrader keep the kernel's ``In``
  history, and ``labkit.check`` reads the imports of earlier cells from it.
* Two tiers (CONTRIBUTING.md, "Test tiers"): ``make test`` runs the default tier, which proves
  every property once; tests marked ``full`` (a second proof of a property, a wider variant, a
  whole-course run) run only with ``--tier full`` (those alone: what ``.ci/run`` adds after
  ``make test``) or ``--tier all`` (``make test-all``: both tiers). ``LABKIT_TEST_TIER`` sets the
  same.
* Under pytest-xdist (the Makefile's ``-n 2 --dist loadfile``: a file's tests, a notebook's cells
  among them, run in one worker, in order) the files go out longest first, by the last run's
  times (``build/test-times/<tier>.xml``, read once by the controller and passed to the
  workers, so both collect the same order), else by ``_SLOW_FILES``; xdist's own reordering by
  test count is off (it would send the one-test files, the slowest, last).
"""
import os
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

os.environ.setdefault("LABKIT_SPEED", "report")
os.environ.setdefault("LABKIT_TIMING", "once")


def _nbval_stores_history() -> None:
    try:
        from nbval.kernel import RunningKernel
    except ImportError:  # pragma: no cover - nbval not installed
        return

    def execute_cell_input(self, cell_input, allow_stdin=None):
        return self.kc.execute(cell_input, store_history=True, allow_stdin=allow_stdin,
                               stop_on_error=False)

    RunningKernel.execute_cell_input = execute_cell_input


_nbval_stores_history()


TIERS = ("default", "full", "all")


def pytest_addoption(parser):
    parser.addoption("--tier", choices=TIERS, default=os.environ.get("LABKIT_TEST_TIER", "default"),
                     help="default: make test's tier; full: only the tests marked full; all: both")


def pytest_collection_modifyitems(config, items):
    tier = config.getoption("--tier")
    if tier == "all":
        return
    keep, drop = [], []
    for item in items:
        full = item.get_closest_marker("full") is not None
        (keep if full == (tier == "full") else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
    times = getattr(config, "workerinput", {}).get("labkit_times")
    if times is not None:
        _longest_files_first(items, times)


# ------------------------------------------------------------------ xdist: longest files first
#: A fresh clone has no build/test-times/: these files' seconds (the default tier, 3 workers on
#: 2 cores, the mean of a warm and a cold run) order the first run; any other file counts 1 s.
#: The last run's times replace them (regenerate: tools/test_times.py --slow-files).
_SLOW_FILES = {
    "tests/test_grade.py": 103, "solutions/04_epistasis.ipynb": 97,
    "solutions/02_bspline.ipynb": 79, "solutions/01_alignment.ipynb": 79,
    "tests/test_browser.py": 69, "solutions/03_pcc.ipynb": 64,
    "tests/labs/test_alignment_exercises.py": 44, "tests/labs/test_alignment.py": 44,
    "tests/test_check_students.py": 43, "tests/labs/test_bspline_checks.py": 41,
    "tests/test_check_executed.py": 39, "tests/labs/test_bspline.py": 34,
    "tests/labs/test_epistasis_exercises.py": 31, "tests/test_check_forgery.py": 30,
    "solutions/00_tools.ipynb": 27, "tests/test_grade_sandbox.py": 26,
    "tests/test_grade_shard.py": 24, "tests/labs/test_pcc.py": 23, "tests/test_bench.py": 22,
    "tests/labs/test_pcc_exercises.py": 22, "tests/test_warm.py": 18, "tests/test_uarch.py": 15,
    "tests/test_grade_nbgrader.py": 13, "tests/labs/test_epistasis.py": 12,
    "tests/test_jit.py": 10, "tests/test_challenges.py": 9, "tests/test_cli.py": 8,
    "tests/test_check_inputs.py": 8, "tests/test_target.py": 7, "tests/test_inspect.py": 7,
    "tests/labs/test_pcc_engine.py": 7, "tests/labs/test_lesson00.py": 6,
    "tests/test_widgets.py": 4, "tests/test_notebooks.py": 4,
    "tests/labs/test_epistasis_bounds.py": 4, "tests/test_numba_keep.py": 3,
    "tests/test_grade_pages.py": 3, "tests/test_hardware.py": 3, "tests/test_grade_inputs.py": 3,
    "tests/test_imports.py": 3,
}


def _xml_times(config) -> dict[str, float]:
    """junit classname -> seconds summed, from the last run's --junitxml (or the tier's file)."""
    xml = getattr(config.option, "xmlpath", None)
    path = Path(config.invocation_params.dir, xml) if xml else \
        Path(config.rootpath, "build", "test-times", f"{config.getoption('--tier')}.xml")
    out: dict[str, float] = {}
    try:
        for tc in ET.parse(path).getroot().iter("testcase"):
            c = tc.get("classname") or ""
            out[c] = out.get(c, 0.0) + float(tc.get("time") or 0.0)
    except (OSError, ET.ParseError, ValueError):
        return {}
    return out


def _file_cost(path: str, times: dict[str, float]) -> float:
    """A file's seconds: its junit classnames are its path in dots (tests.labs.test_pcc, with
    .Class suffixes; solutions.00_tools.ipynb)."""
    stem = path[:-3] if path.endswith(".py") else path
    prefix = stem.replace("/", ".")
    got = [t for c, t in times.items() if c == prefix or c.startswith(prefix + ".")]
    return sum(got) if got else _SLOW_FILES.get(path, 1.0)


def _longest_files_first(items, times: dict[str, float]) -> None:
    files: dict[str, list] = {}
    for item in items:
        files.setdefault(item.nodeid.split("::", 1)[0], []).append(item)
    order = sorted(files, key=lambda f: -_file_cost(f, times))   # stable: ties keep their order
    items[:] = [item for f in order for item in files[f]]


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """xdist's controller, once per worker: the same times for every worker."""
    config = node.config
    if not hasattr(config, "_labkit_times"):
        config._labkit_times = _xml_times(config)
        config.option.loadscopereorder = False
    node.workerinput["labkit_times"] = config._labkit_times


def _is_nbval(item) -> bool:
    return type(item).__module__.startswith("nbval")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    if _is_nbval(item):
        os.environ["LABKIT_CHECK_STRICT"] = "1"
    else:
        os.environ.pop("LABKIT_CHECK_STRICT", None)
