"""A helper the student wrote in another cell travels with the exercise cell to the checker
(labkit.check.loader.helper_defs), and the technique gates look into it when the checked
function has no loop of its own (the loop lives in the helper)."""
import numpy as np
import pytest

from labkit.check import gates
from labkit.check.loader import helper_defs
from labkit.check.result import CheckFailure


def test_helper_defs_takes_what_the_cell_reads_transitively_last_binding_wins():
    cells = ["import numpy as np\ndef a(x):\n    return b(x)\n\ndef b(x):\n    return x\n",
             "def b(x):\n    return 2 * x\n\ndef c(x):\n    return x\n",
             "@njit(fastmath=True)\ndef d(x):\n    return x\n",
             "c = 3\n"]
    cell = "def f(x):\n    return a(x) + c + d(x) + np.sum(x)\n"
    out = helper_defs(cells, cell, "import numpy as np\n")
    assert "def a(x)" in out and "return 2 * x" in out and "return x\n\n" not in out.split("def b")[1]
    assert "@njit(fastmath=True)\ndef d(x)" in out
    assert "def c" not in out                     # rebound to a constant later: not a helper
    assert out.index("def a") < out.index("def b") < out.index("def d")  # notebook order
    assert helper_defs(cells, "def f(x):\n    return 1\n") == ""
    assert helper_defs(cells, "def a(x):\n    return 0\ndef f(x):\n    return a(x)\n") == ""
    assert helper_defs(["def broken(:"], "def f(x):\n    return broken(x)\n") == ""


def test_gates_look_into_a_helper_that_holds_the_loop():
    from numba import njit

    @njit
    def _rows(a, out):
        for i in range(a.shape[0]):
            for j in range(a.shape[1]):
                out[j] += a[i, j]

    @njit
    def colsum(a):
        out = np.zeros(a.shape[1])
        _rows(a, out)
        return out

    @njit
    def scalar_rows(a, out):
        for j in range(a.shape[1]):
            for i in range(a.shape[0]):
                out[j] = out[j] * 0.5 + a[i, j] if out[j] > 0 else out[j] + a[i, j]

    @njit
    def colsum_scalar(a):
        out = np.zeros(a.shape[1])
        scalar_rows(a, out)
        return out

    a = np.ones((8, 64))
    colsum(a), colsum_scalar(a)
    assert gates.vectorized_gate(colsum, (a,)) >= 128
    lp, _ = gates.hot_loop(colsum, (a,))
    assert lp is not None
    with pytest.raises(CheckFailure):            # a scalar helper still fails
        gates.vectorized_gate(colsum_scalar, (a,), min_bits=128)
    # what the student sees: the listing of a function without a loop shows the helper's too
    from labkit import inspect as lk_inspect
    for kind in ("asm", "llvm"):
        shown = lk_inspect.show(colsum, kind, (a,))
        assert "the helpers it calls" in shown.title and "_rows" in shown.text, kind
        assert shown.loops, f"no loop marked in the {kind} listing"
    assert "helpers" not in lk_inspect.show(_rows, "asm").title   # its own loop: itself only


def test_a_workers_last_check_starts_no_spare_child(monkeypatch):
    """A plain-Python check takes a child and starts the next one (the spare) meanwhile —
    except when the caller says it is the worker's last check (LABKIT_CHECK_LAST=1)."""
    from labkit.check import proxy
    started = []

    class _FakeChild:
        def __init__(self):
            started.append(self)

    monkeypatch.setattr(proxy, "_Child", _FakeChild)
    monkeypatch.setattr(proxy, "_SPARE", [])
    monkeypatch.delenv("LABKIT_CHECK_LAST", raising=False)
    first = proxy._take()
    assert started == [first, proxy._SPARE[0]]                 # the spare is started now
    monkeypatch.setenv("LABKIT_CHECK_LAST", "1")
    second = proxy._take()
    assert second is started[1] and proxy._SPARE == [] and len(started) == 2
