"""Test-suite setup shared by unit tests and nbval notebook runs.

* Speed gates report instead of failing (``LABKIT_SPEED=report``): CI machines are noisy.
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
"""
import os

import pytest

os.environ.setdefault("LABKIT_SPEED", "report")


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


def _is_nbval(item) -> bool:
    return type(item).__module__.startswith("nbval")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    if _is_nbval(item):
        os.environ["LABKIT_CHECK_STRICT"] = "1"
    else:
        os.environ.pop("LABKIT_CHECK_STRICT", None)
