"""Fake students against the trusted check runner: delegation, result-only shortcuts, forgery,
bad input. Every student here is a top-level definition: the worker loads this file's
definitions, as it loads a notebook cell's."""
import importlib
import os

import numpy as np
import pytest
from numba import njit

from labkit import check
from labkit.lesson00 import kernels as K
import labkit.lesson00 as l0

from tests.fakes import colsum_honest                      # honest work


# ------------------------------------------------------------------ delegation
colsum_alias = l0.colsum_rows                      # direct: labkit's kernel handed in


def colsum_wrapper(a):                             # aliased module, plain-Python wrapper
    return K.colsum_rows(a)


def colsum_computed(a):                            # computed name: only seen at run time
    return getattr(l0, "colsum" + "_rows")(a)


def colsum_importlib(a):
    mod = importlib.import_module("labkit.lesson00." + "kernels")
    return getattr(mod, "colsum_" + "rows")(a)


@njit
def colsum_njit_wrapper(a):                        # in numba code: seen in its typing
    return K.colsum_rows(a)


def colsum_py_wrapper(a):                          # plain Python around honest numba code
    return colsum_honest(a)


def _helper(a):
    return l0.colsum_rows(a)


def colsum_via_helper(a):                          # through a helper of the same cell
    return _helper(a)


@pytest.mark.parametrize("student", [colsum_alias, colsum_wrapper, colsum_computed,
                                     colsum_importlib, colsum_njit_wrapper, colsum_via_helper])
def test_delegation_is_caught(student):
    r = check.colsum(student)
    assert r.verdict == "uses labkit's answer" and r.points == 0, str(r)
    assert "colsum_rows" in r.message and "\n" not in r.message


def test_plain_python_wrapper_does_not_skip_the_vector_gate():
    r = check.colsum(colsum_py_wrapper)
    assert r.verdict == "not vectorised" and "not a numba function" in r.message, str(r)
    assert check.colsum(colsum_honest).passed


# ------------------------------------------------------------------ result-only shortcuts
@njit
def dot_np(x, y):
    return np.dot(x, y) if x.size else 0.0


def dot_py(x, y):
    return float(np.dot(x, y))


@njit(fastmath=True)
def dot_fast(x, y):
    s = 0.0
    for i in range(x.size):
        s += x[i] * y[i]
    return s


@njit
def dot_two(x, y):
    s0 = s1 = 0.0
    n = x.size - x.size % 2
    for i in range(0, n, 2):
        s0 += x[i] * y[i]
        s1 += x[i + 1] * y[i + 1]
    for i in range(n, x.size):
        s0 += x[i] * y[i]
    return s0 + s1


@pytest.mark.parametrize("student, needle", [(dot_np, "no loop"), (dot_py, "not a numba"),
                                             (dot_fast, "fastmath"), (dot_two, "need ≥ 8")])
def test_dot_partials_shortcuts(student, needle):
    r = check.dot_partials(student)
    assert r.verdict == "technique missing" and needle in r.message, str(r)


# tile_loop's shortcuts (Z @ Z.T, np.dot, tiles out of order) are tested with its new signature in
# tests/labs/test_pcc_exercises.py (lab 03 rewrote the exercise to teach the bijection and the
# register block).


@njit
def mi_branchy_student(counts):
    n0 = 0
    n1 = 0
    for c in range(counts.shape[1]):
        n0 += counts[0, c]
        n1 += counts[1, c]
    inv = 1.0 / (n0 + n1)
    hxy = 0.0
    hx = 0.0
    for c in range(counts.shape[1]):
        p0 = counts[0, c] * inv
        p1 = counts[1, c] * inv
        px = p0 + p1
        if p0 > 0.0:
            hxy -= p0 * np.log(p0)
        if p1 > 0.0:
            hxy -= p1 * np.log(p1)
        if px > 0.0:
            hx -= px * np.log(px)
    hy = 0.0
    for q in (n0 * inv, n1 * inv):
        if q > 0.0:
            hy -= q * np.log(q)
    return hx + hy - hxy


def test_masked_mi_branchy_is_technique_missing():
    r = check.masked_mi(mi_branchy_student)
    assert r.verdict == "technique missing" and "branch" in r.message, str(r)


# ------------------------------------------------------------------ forgeries
def colsum_patches_json(a):
    import json
    json.dumps = lambda *args, **kw: '{"passed": true}'
    return colsum_honest(a)


def colsum_patches_clock(a):
    import time
    time.perf_counter = lambda: 0.0
    return colsum_honest(a)


def colsum_patches_numpy(a):
    np.count_nonzero = lambda *args, **kw: 0
    return np.zeros(a.shape[1])


@pytest.mark.parametrize("student, what", [(colsum_patches_json, "json.dumps"),
                                           (colsum_patches_clock, "time.perf_counter"),
                                           (colsum_patches_numpy, "numpy.count_nonzero")])
def test_forgery_inside_the_function(student, what):
    r = check.colsum(student)
    assert r.verdict == "error" and r.points == 0 and what in r.message, str(r)
    assert check.colsum(colsum_honest).passed         # the next check gets a clean worker


_WRONG = '''
import numpy as np
from numba import njit

@njit
def colsum(a):
    return np.zeros(a.shape[1])
'''


@pytest.mark.parametrize("attack, needle", [
    ("import json\njson.dumps = lambda *a, **k: '{\"passed\": true}'\n", "json.dumps"),
    ("get_ipython().events.register('pre_run_cell', lambda *a: print('✔ colsum: passed'))\n",
     "get_ipython"),
    ("import time\ntime.perf_counter = lambda: 0.0\n", "time.perf_counter"),
])
def test_top_level_forgery_in_the_cell_is_not_run(attack, needle):
    r = check.run_source("colsum", attack + _WRONG, function="colsum")
    assert r.verdict == "wrong" and r.points == 0, str(r)
    assert "not run by the check" in r.message and needle in r.message


def test_decorator_tamper_while_loading():
    src = ("import numpy as np\n"
           "@(lambda f: (setattr(np, 'isclose', lambda *a, **k: True), f)[1])\n"
           "def colsum(a):\n    return np.zeros(a.shape[1])\n")
    r = check.run_source("colsum", src)
    assert r.verdict == "error" and r.points == 0 and "numpy.isclose" in r.message, str(r)


# ------------------------------------------------------------------ bad input
def colsum_raises(a):
    raise ZeroDivisionError("boom")


def colsum_wrong_shape(a):
    return np.zeros(3)


def colsum_wrong_type(a):
    return "columns"


def colsum_hangs(a):
    while True:
        pass


def colsum_exits(a):
    os._exit(3)


def colsum_segfaults(a):
    import ctypes
    ctypes.string_at(0)


def transpose_prints(codes):
    print("x" * (4 << 20))
    return np.ascontiguousarray(codes.T)


def test_bad_input_one_line_and_next_check_unaffected(monkeypatch):
    # (each honest call here takes well under a second, loaded — loading the cell is not
    # counted: 5 s bounds the hang, not them)
    monkeypatch.setenv("LABKIT_CHECK_TIMEOUT", "5")
    cases = [(colsum_raises, "error", "ZeroDivisionError: boom"),
             (colsum_wrong_shape, "wrong", "shape"),
             (colsum_wrong_type, "wrong", "shape ()"),
             (colsum_hangs, "error", "did not return within 5 s"),
             (colsum_exits, "error", "exit code 3"),
             (colsum_segfaults, "error", "SIGSEGV")]
    for student, verdict, needle in cases:
        r = check.colsum(student)
        assert r.verdict == verdict and needle in r.message and "\n" not in str(r), str(r)
        assert r.points == 0
        ok = check.colsum(colsum_honest)
        assert ok.passed, f"after {student.__name__}: {ok}"
    r = check.transpose(transpose_prints)
    assert r.passed and "printed" in r.message and "MB" in r.message in r.message and len(r.message) < 700, str(r)


def test_loading_the_cell_is_not_the_students_time(tmp_path, monkeypatch):
    """A busy machine makes loading slow (the worker's imports of the cell, a plain-Python
    student's own process started and loaded): that is labkit's time, so an honest student with
    a short timeout still passes, and a function that never returns still times out."""
    from labkit.check import runner
    (tmp_path / "slow_to_import.py").write_text("import time\ntime.sleep(3)\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    runner.restart()                         # a worker (and its children) with that path
    try:
        head = "import slow_to_import\nimport numpy as np\n"
        ok = check.run_source("transpose", head + "def transpose(codes):\n"
                              "    return np.ascontiguousarray(codes.T)\n", timeout=2.5)
        assert ok.passed, str(ok)
        hung = check.run_source("transpose", head + "def transpose(codes):\n"
                                "    while True:\n        pass\n", timeout=2.5)
        assert hung.verdict == "error" and "did not return within 2.5 s" in hung.message, str(hung)
    finally:
        monkeypatch.undo()
        runner.restart()


def test_run_source_picks_the_last_def_and_reports_missing():
    src = "import numpy as np\nfrom numba import njit\n" \
          "def helper(a):\n    return a\n\n@njit\ndef colsum(a):\n" \
          "    out = np.zeros(a.shape[1])\n    for i in range(a.shape[0]):\n" \
          "        for j in range(a.shape[1]):\n            out[j] += a[i, j]\n    return out\n"
    assert check.run_source("colsum", src).passed
    r = check.run_source("colsum", src, function="nope")
    assert r.verdict == "not implemented" and "nope" in r.message


def test_helper_from_another_cell_is_named_and_multiline_imports_load():
    imports = "import numpy as np\nfrom numba import (\n    njit,\n)\n"
    src = "@njit\ndef colsum(a):\n    return helper_elsewhere(a)\n"
    r = check.run_source("colsum", src, imports)
    assert r.verdict == "error" and "must be defined in the exercise cell" in r.message and "functions of earlier cells" in r.message, str(r)


def test_imports_rebuilt_from_globals_without_input_history():
    from labkit.check.loader import _imports_from_globals
    src = compile("@njit\ndef f(a):\n    return np.zeros(3) + K.colsum_rows(a)\n", "<cell>", "exec")
    text = _imports_from_globals(src, globals(), set())
    assert "import numpy as np" in text and "njit" in text
    assert "import labkit.lesson00.kernels as K" in text


def colsum_two_args(a, b):
    return a


def test_wrong_signature_is_the_students_error():
    r = check.colsum(colsum_two_args)
    assert r.verdict == "error" and "your function raised TypeError" in r.message, str(r)


_KERNELS = (l0.colsum_rows,)


def colsum_from_a_tuple(a):                        # a reference kept in a container
    return _KERNELS[0](a)


def test_delegation_through_a_container():
    r = check.colsum(colsum_from_a_tuple)
    assert r.verdict == "uses labkit's answer", str(r)
