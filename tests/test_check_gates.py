"""Technique gates on small numba functions, in this process (no worker needed)."""
import numpy as np
import pytest
from numba import njit

from labkit import check
from labkit.check import CheckFailure
from labkit.inspect import loops


@njit(fastmath=True)
def _axpy_fast(a, x, y):
    for i in range(x.size):
        y[i] = a * x[i] + y[i]


@njit
def _branchy(x):
    s = 0.0
    for i in range(x.size):
        if x[i] > 0.5:
            s += np.log(x[i])
    return s


@njit
def _masked(x):
    s = 0.0
    for i in range(x.size):
        s += np.log(x[i] + (x[i] == 0.0))
    return s


@njit
def _i16(a, b, out):
    for i in range(a.size):
        out[i] = np.int16(a[i] + b[i])


def _sum(x):
    return x.sum()


X = np.random.default_rng(0).random(64)


def test_fma_and_fastmath_gates():
    y = np.zeros(64)
    assert check.fma_gate(_axpy_fast, (2.0, X, y)) > 0
    with pytest.raises(CheckFailure, match="fastmath=True"):
        check.no_fastmath_gate(_axpy_fast, (2.0, X, y))


def test_branch_gate_sees_the_if_and_not_the_mask():
    with pytest.raises(CheckFailure, match="conditional branch"):
        check.no_branch_gate(_branchy, (X,), where=r"llvm\.log|@log")
    check.no_branch_gate(_masked, (X,), where=r"llvm\.log|@log")


def test_lanes_gate_and_simulated_128_bit_host(monkeypatch):
    a = np.ones(256, np.int16)
    out = np.empty_like(a)
    _i16(a, a, out)
    lanes = check.lanes_gate(_i16, (a, a, out), "int16")
    assert lanes >= check.native_lanes("int16")
    monkeypatch.setenv("LABKIT_NATIVE_BITS", "128")
    assert check.native_lanes("int16") == 8
    assert check.vectorized_gate(_i16, (a, a, out)) >= 128
    with pytest.raises(CheckFailure, match="need 64"):
        check.lanes_gate(_i16, (a, a, out), "int16", min_lanes=64)


def test_require_njit_and_blas():
    with pytest.raises(CheckFailure, match="not a numba function"):
        check.require_njit(_sum)
    with pytest.raises(CheckFailure, match="matrix multiply"):
        check.not_blas_gate(lambda Z, t: Z @ Z.T)


def test_loops_finds_the_innermost_loop():
    ir = check.gates._ir(_masked, (X,))
    inner = [lp for lp in loops.loops(ir) if lp.inner]
    assert inner and all(lp.header in lp.blocks for lp in inner)


# a helper LLVM does not inline (``_dbg_optnone``: numba compiles it apart, unoptimised) keeps
# its own code: the loop's IR shows a call, the branch runs inside the helper on every iteration
@njit(_dbg_optnone=True)
def _plogp_if(p):
    if p > 0.5:
        return p * np.log(p)
    return 0.0


@njit(_dbg_optnone=True)
def _plogp_mask(p):
    return p * np.log(p + (p == 0.0)) / 1.0     # numba's zero-division check: not a branch of yours


@njit
def _branchy_via_helper(x):
    s = 0.0
    for i in range(x.size):
        s += _plogp_if(x[i])
    return s


@njit
def _masked_via_helper(x):
    s = 0.0
    for i in range(x.size):
        s += _plogp_mask(x[i])
    return s


def test_branch_gate_follows_the_loops_calls_into_helpers_not_inlined():
    with pytest.raises(CheckFailure, match="in _plogp_if, called from the loop"):
        check.no_branch_gate(_branchy_via_helper, (X,), where=r"llvm\.log|@log")
    check.no_branch_gate(_masked_via_helper, (X,), where=r"llvm\.log|@log")


def test_a_switch_written_over_several_lines_is_one_terminator():
    """LLVM prints a switch's cases one per line; the loop it closes is a loop (a call's status
    check in numba's IR is such a switch)."""
    ir = ("define i32 @f() {\n"
          "entry:\n  br label %loop\n"
          "loop:\n  %s = call i32 @g()\n  switch i32 %s, label %exit [\n"
          "    i32 0, label %loop\n    i32 -2, label %loop\n  ]\n"
          "exit:\n  ret i32 1\n}\n")
    found = loops.loops(ir)
    assert [lp.header for lp in found] == ["f1:loop"], found
    assert loops.conditional_branches(found[0]) == []      # its exit is loop control
