"""Test-suite setup shared by unit tests and nbval notebook runs.

* Speed gates report instead of failing (``LABKIT_SPEED=report``): CI machines are noisy.
* While nbval executes ``solutions/*.ipynb``, checks run strictly (``LABKIT_CHECK_STRICT=1``) so a
  check that fails in a solution notebook fails the build; every other kernel (student
  notebooks, browser, grader) starts without it.
* nbval runs cells the way a notebook does: with ``store_history=True`` (nbval itself passes
  False). JupyterLab, nbclient (``labkit solutions``) and nbgrader keep the kernel's ``In``
  history, and ``labkit.check`` reads the imports of earlier cells from it.
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


def _is_nbval(item) -> bool:
    return type(item).__module__.startswith("nbval")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    if _is_nbval(item):
        os.environ["LABKIT_CHECK_STRICT"] = "1"
    else:
        os.environ.pop("LABKIT_CHECK_STRICT", None)
