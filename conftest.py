"""Test-suite setup shared by unit tests and nbval notebook runs.

* Speed gates report instead of failing (``LABKIT_SPEED=report``): CI machines are noisy.
* While nbval executes ``solutions/*.ipynb``, checks run strictly (``LABKIT_CHECK_STRICT=1``) so a
  check that fails in a solution notebook fails the build; every other kernel (student
  notebooks, browser, grader) starts without it.
"""
import os

import pytest

os.environ.setdefault("LABKIT_SPEED", "report")


def _is_nbval(item) -> bool:
    return type(item).__module__.startswith("nbval")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    if _is_nbval(item):
        os.environ["LABKIT_CHECK_STRICT"] = "1"
    else:
        os.environ.pop("LABKIT_CHECK_STRICT", None)
