"""Fake students that try to forge the verdict through ``run_source`` (the grader's path): a
result frame written from plain Python, from a class body, a decorator, a default value; an
objmode block, a ctypes call or an intrinsic inside @njit; a thread left running; numpy
patched from inside the function. Each must end not passed with 0 points, and honest plain-
Python and @njit solutions must still pass (the student's Python never runs in the process
that writes the verdict: docs/grading.md, "Security")."""
from __future__ import annotations

import pytest

from labkit.check import runner

_FRAME = ('{"result": {"name": "colsum", "passed": True, "points": 2.0, "max_points": 2.0, '
          '"verdict": "passed", "message": "forged", "details": {}}, "restart": False}')

_WRITE = ("import sys, os\n"
          "from labkit.check.runner import write_frame\n"
          "for _fd in range(3, 40):\n"
          "    try:\n"
          f"        write_frame(_fd, {_FRAME})\n"
          "    except OSError:\n"
          "        pass\n")


def _indent(text: str, n: int) -> str:
    return "".join(" " * n + ln + "\n" for ln in text.splitlines())


_KERNEL = ("    n, m = a.shape\n    out = np.zeros(m)\n    for i in range(n):\n"
           "        for j in range(m):\n            out[j] += a[i, j]\n    return out\n")

_FORGE = "def forge():\n" + _indent(_WRITE, 4)      # a function that writes a forged frame

HONEST_NJIT = "import numpy as np\nfrom numba import njit\n\n@njit\ndef colsum(a):\n" + _KERNEL

ATTACKS = {
    "plain Python writes a frame":
        "import numpy as np\ndef colsum(a):\n" + _indent(_WRITE, 4) + "    return a.sum(axis=0)\n",
    "a class body writes a frame":
        "import numpy as np\nfrom numba import njit\nclass Evil:\n" + _indent(_WRITE, 4)
        + "\n@njit\ndef colsum(a):\n" + _KERNEL.replace("out[j] += a[i, j]", "out[j] += 0.0"),
    "a decorator writes a frame":
        "import numpy as np\nfrom numba import njit\n"
        "def deco(f):\n" + _indent(_WRITE, 4) + "    return f\n"
        "@deco\n@njit\ndef colsum(a):\n    return np.zeros(a.shape[1])\n",
    "a default value writes a frame":
        "import numpy as np\nfrom numba import njit\n"
        + _FORGE + "    return 0\n"
        "@njit\ndef colsum(a, _x=forge()):\n    return np.zeros(a.shape[1])\n",
    "an annotation writes a frame":
        "import numpy as np\nfrom numba import njit\n"
        + _FORGE + "    return int\n"
        "@njit\ndef colsum(a: forge()):\n    return np.zeros(a.shape[1])\n",
    "objmode inside @njit":
        "import numpy as np\nfrom numba import njit, objmode\n"
        + _FORGE + "\n"
        "@njit\ndef colsum(a):\n    with objmode():\n        forge()\n"
        "    return np.zeros(a.shape[1])\n",
    "objmode in a helper @njit calls":
        "import numpy as np\nimport numba\n"
        + _FORGE + "\n"
        "@numba.njit\ndef helper():\n    with numba.objmode():\n        forge()\n    return 0\n"
        "@numba.njit\ndef colsum(a):\n    helper()\n    return np.zeros(a.shape[1])\n",
    "a ctypes call inside @njit":
        "import numpy as np\nimport ctypes\nfrom numba import njit\n"
        "@njit\ndef colsum(a):\n    ctypes.pythonapi.Py_GetVersion()\n"
        "    return np.zeros(a.shape[1])\n",
    "object mode":
        "import numpy as np\nfrom numba import jit\n"
        + _FORGE + "\n"
        "@jit(forceobj=True)\ndef colsum(a):\n    forge()\n    return a.sum(axis=0)\n",
    "a thread left running writes later":
        "import numpy as np\nimport threading, time\n"
        "def _later():\n    time.sleep(0.3)\n" + _indent(_WRITE, 4) + "\n"
        "def colsum(a):\n    threading.Thread(target=_later, daemon=True).start()\n"
        "    return np.zeros(a.shape[1])\n",
    "numpy patched from inside the function":
        "import numpy as np\n"
        "def colsum(a):\n    np.testing.assert_array_equal = lambda *x, **k: None\n"
        "    np.allclose = lambda *x, **k: True\n    np.array_equal = lambda *x, **k: True\n"
        "    return np.zeros(a.shape[1])\n",
    "a module next to the notebook":
        "import numpy as np\nimport labkit_forgery_helper\nfrom numba import njit\n"
        "@njit\ndef colsum(a):\n    return np.zeros(a.shape[1])\n",
}


@pytest.fixture(autouse=True)
def _cwd_module(tmp_path, monkeypatch):
    """A module the 'next to the notebook' attack imports (in the checker's working directory)."""
    (tmp_path / "labkit_forgery_helper.py").write_text(_WRITE, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    runner.restart()
    yield
    runner.restart()


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_forgery_ends_not_passed_with_zero_points(attack):
    r = runner.run_source("colsum", ATTACKS[attack], function="colsum", timeout=120)
    assert not r.passed and r.points == 0 and "forged" not in r.message, f"{attack}: {r}"
    assert r.verdict != "passed"


def test_escape_hatches_are_named():
    r = runner.run_source("colsum", ATTACKS["objmode inside @njit"], function="colsum")
    assert "numba.objmode" in r.message and "not judged" in r.message, str(r)
    r = runner.run_source("colsum", ATTACKS["object mode"], function="colsum")
    assert "object mode" in r.message and "not judged" in r.message, str(r)


def test_ctypes_and_intrinsics_are_refused_before_the_first_call():
    """The loader cannot build a ctypes function (no calls at load time); where one is
    reachable anyway, the compiled overload names it."""
    import ctypes

    import numba
    import numpy as np
    from numba.core.unsafe.refcount import get_refcount

    from labkit.check import hatches
    getpid = ctypes.CDLL(None).getpid
    getpid.restype, getpid.argtypes = ctypes.c_int, ()

    @numba.njit
    def calls_c(x):
        return getpid() + x

    @numba.njit
    def intrinsic(a):
        return get_refcount(a)

    @numba.njit
    def honest(a):
        return a.sum()

    calls_c(1)
    intrinsic(np.ones(2))
    honest(np.ones(2))
    assert "ctypes" in hatches.refusal(calls_c)
    assert "intrinsic" in hatches.refusal(intrinsic)
    assert hatches.refusal(honest) is None


def test_dropped_definitions_are_named():
    r = runner.run_source("colsum", ATTACKS["a class body writes a frame"], function="colsum")
    assert r.verdict == "wrong" and "not run by the check" in r.message and "class Evil" in \
        r.message, str(r)


def test_honest_solutions_still_pass():
    r = runner.run_source("colsum", HONEST_NJIT, function="colsum")
    assert r.passed, str(r)
    src = "def split(rank, size, T):\n    q, r = divmod(T, size)\n" \
          "    lo = rank * q + min(rank, r)\n    return lo, lo + q + (rank < r)\n"
    r = runner.run_source("split_ids", src, function="split")
    assert r.passed, str(r)


def test_plain_python_with_a_class_helper_runs_in_the_child():
    src = ("class Split:\n    def __init__(self, size, T):\n        self.q, self.r = divmod(T, size)\n"
           "    def lo(self, rank):\n        return rank * self.q + min(rank, self.r)\n"
           "def split(rank, size, T):\n    s = Split(size, T)\n"
           "    return s.lo(rank), s.lo(rank + 1)\n")
    r = runner.run_source("split_ids", src, function="split")
    assert r.passed, str(r)


def test_callbacks_and_in_place_arrays_cross_the_process_boundary():
    src = '''
def walk(bits, order, extend, visit):
    n = bits.shape[0]

    def rec(table, combo, start):
        if len(combo) == order:
            visit(combo, table)
            return
        for j in range(start, n - (order - len(combo)) + 1):
            child = bits[j] if not combo else extend(table, bits[j])
            rec(child, combo + (j,), j + 1)

    rec(None, (), 0)
'''
    r = runner.run_source("prefix_reuse", src, function="walk")
    assert r.passed, str(r)


def test_what_the_child_sends_is_only_data():
    """W decodes tagged JSON: arrays of non-object dtypes, numbers, containers; an object
    dtype, a wrong size or an unknown tag is refused, a student object is opaque."""
    import numpy as np

    from labkit.check import wire
    a = np.arange(6, dtype=np.int16).reshape(2, 3)
    v = ("x", [1, 2.5, None], {"k": a}, np.float32(1.5), 3 + 4j, b"b")
    back = wire.decode(wire.loads_c2w(wire.dumps_c2w(wire.encode(v))))
    assert back[:2] == ("x", [1, 2.5, None]) and np.array_equal(back[2]["k"], a)
    assert back[2]["k"].dtype == np.int16 and back[3] == np.float32(1.5) and back[4:] == (3 + 4j, b"b")
    assert isinstance(wire.decode(wire.encode(object())), wire.Opaque)
    assert isinstance(wire.decode(wire.encode(np.array([object()]))), wire.Opaque)
    for bad in (["A", "|O", [1], "AAAAAAAAAAA="], ["A", "<i8", [2], "AAAAAAAAAAA="],
                ["Q", 1], [1, 2], {"a": 1}):
        with pytest.raises((ValueError, TypeError)):
            wire.decode(bad)
