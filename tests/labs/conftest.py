"""Fixtures the labs' fake-student tests share (``pytestmark = pytest.mark.usefixtures(...)``)."""
import pytest

from labkit import check


@pytest.fixture
def report_speed(monkeypatch):
    """Speed gates report instead of judging (these tests prove techniques, not timings), and
    no check-strict or grading mode leaks in from the environment."""
    monkeypatch.setenv("LABKIT_SPEED", "report")
    monkeypatch.delenv("LABKIT_CHECK_STRICT", raising=False)
    monkeypatch.delenv("LABKIT_GRADING", raising=False)


@pytest.fixture(scope="module")
def fresh_worker():
    """A check worker of this module's own: started fresh, stopped after the module."""
    check.restart_worker()
    yield
    check.restart_worker()
