"""Technique gates judge the code the check's inputs execute, not code that never runs. Fake
students hide the gated technique (a vector loop, an FMA block, a branch-free helper) behind a
branch the inputs never take, while the loop that runs lacks it; honest students with a branch
their inputs never take (a remainder, an empty-input guard) keep full marks. Every student is a
top-level definition: the trusted worker loads this file's definitions as it loads a cell's."""
import numpy as np
from numba import njit
from numba import prange as numba_prange

from labkit import check
from labkit.check import executed

from tests.fakes import FLAT_TILES, colsum_dead_vector

_IMPORTS = "import numpy as np\nfrom numba import njit\n"     # a cell's imports, for run_source


# ------------------------------------------------------------------ lesson 00: colsum
@njit
def colsum_vector_helper(a, out):
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            out[j] += a[i, j]
    return out


@njit
def colsum_dead_helper(a):
    """The vector loop sits in a helper called only when the matrix is empty."""
    n, m = a.shape
    out = np.zeros(m)
    if n * m == -1:
        return colsum_vector_helper(a, out)
    for j in range(m):
        s = 0.0
        for i in range(n):
            s += a[i, j]
        out[j] = s
    return out


@njit
def colsum_honest_guard(a):
    """Honest: an empty-input guard the 600×600 input never takes."""
    n, m = a.shape
    out = np.zeros(m)
    if n == 0 or m == 0:
        return out
    for i in range(n):
        for j in range(m):
            out[j] += a[i, j]
    return out


@njit
def colsum_honest_via_helper(a):
    """Honest: the vector loop in a helper that runs."""
    return colsum_vector_helper(a, np.zeros(a.shape[1]))


def test_colsum_vector_loop_behind_a_dead_branch_is_not_vectorised():
    r = check.colsum(colsum_dead_vector)
    assert r.verdict == "not vectorised" and r.points == 0, str(r)
    assert "never ran" in r.message and "line" in r.message, str(r)


def test_colsum_vector_helper_called_on_a_dead_branch_is_not_vectorised():
    r = check.colsum(colsum_dead_helper)
    assert r.verdict == "not vectorised" and r.points == 0, str(r)
    assert "never ran" in r.message, str(r)


def test_colsum_honest_students_with_untaken_guard_or_helper_pass():
    for student in (colsum_honest_guard, colsum_honest_via_helper):
        r = check.colsum(student)
        assert r.passed, (student.__name__, str(r))


# ------------------------------------------------------------------ lesson 00: softsign
@njit(error_model="numpy")
def softsign_dead_vector(x, out):
    """A vector loop for lengths that never occur; a loop with an early exit (not vectorised)
    does the work."""
    n = x.size
    if n > 1 << 40:
        for i in range(n):
            out[i] = x[i] / (1.0 + abs(x[i]))
        return out
    i = 0
    while i < n:
        out[i] = x[i] / (1.0 + abs(x[i]))
        if out[i] > 2.0:
            break
        i += 1
    return out


@njit(error_model="numpy")
def softsign_honest_tail(x, out):
    """Honest: a 4-wide main loop and a remainder loop (4096 elements: the remainder never runs)."""
    n = x.size
    m = n - n % 4
    for i in range(m):
        out[i] = x[i] / (1.0 + abs(x[i]))
    for i in range(m, n):
        out[i] = x[i] / (1.0 + abs(x[i]))
    return out


def test_softsign_dead_vector_loop_fails_and_honest_tail_passes():
    r = check.softsign(softsign_dead_vector)
    assert r.verdict == "not vectorised" and r.points == 0, str(r)
    assert "never ran" in r.message, str(r)
    r = check.softsign(softsign_honest_tail)
    assert r.passed, str(r)


# ------------------------------------------------------------------ lesson 00: dot_partials
@njit
def dot_dead_partials(x, y):
    """Eight sums written out, behind a branch taken only for odd lengths above 2**40; one sum
    runs."""
    n = x.size
    if n > (1 << 40) and n % 2 == 1:
        s0 = s1 = s2 = s3 = s4 = s5 = s6 = s7 = 0.0
        for i in range(0, n - 7, 8):
            s0 += x[i] * y[i]
            s1 += x[i + 1] * y[i + 1]
            s2 += x[i + 2] * y[i + 2]
            s3 += x[i + 3] * y[i + 3]
            s4 += x[i + 4] * y[i + 4]
            s5 += x[i + 5] * y[i + 5]
            s6 += x[i + 6] * y[i + 6]
            s7 += x[i + 7] * y[i + 7]
        return s0 + s1 + s2 + s3 + s4 + s5 + s6 + s7
    s = 0.0
    for i in range(n):
        s += x[i] * y[i]
    return s


def test_dot_partials_behind_a_dead_branch_is_technique_missing():
    r = check.dot_partials(dot_dead_partials)
    assert r.verdict == "technique missing" and r.points == 0, str(r)
    assert "accumulator" in r.message and "never ran" in r.message, str(r)


# ------------------------------------------------------------------ the probe itself
def test_probe_reports_blocks_and_keeps_the_students_function_when_all_ran():
    a = np.random.default_rng(1).random((50, 40))
    cov = executed.coverage(colsum_honest_via_helper, (a,))
    assert cov.skipped == 0 and cov.dispatcher is colsum_honest_via_helper and not cov.why
    cov = executed.coverage(colsum_dead_vector, (a,))
    assert cov.skipped == 1 and cov.dispatcher is not colsum_dead_vector
    assert cov.lines and cov.lines[0][0] == "colsum_dead_vector"
    # the pruned copy still computes what ran
    assert np.array_equal(cov.dispatcher(a), colsum_dead_vector(a))
    # example types (no values): nothing to run, the student's own function is judged
    import numba
    cov = executed.coverage(colsum_dead_vector, (numba.typeof(a),))
    assert cov.dispatcher is colsum_dead_vector and cov.why


def test_probe_does_not_change_the_callers_arrays():
    a = np.random.default_rng(2).random((8, 9))
    keep = a.copy()
    out = np.zeros(9)
    executed.coverage(colsum_vector_helper, (a, out))
    assert np.array_equal(a, keep) and not out.any()


# ------------------------------------------------------------------ lab 03: block4x4 (source)
def _pcc_solution():
    from labkit.check.falsefail import solutions
    return next(s for s in solutions() if s.lab == "pcc" and s.name == "block4x4")


_PAIR_MAIN = '''

@njit(fastmath=True)
def my_block4x4(Z, i, j, out):
    if Z[i, 0] > 1e300:                  # never: the inputs are standard normal
        fast_block(Z, i, j, out)
        return
    l = Z.shape[1]
    for r in range(4):
        for c in range(4):
            s = 0.0
            for k in range(l):
                s += Z[i + r, k] * Z[j + c, k]
            out[r, c] = s
'''


def test_block4x4_register_block_in_a_dead_helper_call_fails_the_block_gate():
    sol = _pcc_solution()
    helper = sol.source.replace(f"def {sol.function}(", "def fast_block(")
    r = check.run_source("block4x4", helper + _PAIR_MAIN, sol.imports, function="my_block4x4")
    assert r.verdict == "technique missing" and "per load" in r.message, str(r)
    assert "never ran" in r.message, str(r)
    # the same helper, called: the register block runs, and passes
    live = helper + _PAIR_MAIN.replace("if Z[i, 0] > 1e300:", "if Z.shape[0] > 0:")
    r = check.run_source("block4x4", live, sol.imports, function="my_block4x4")
    assert r.passed, str(r)


# ------------------------------------------------------------------ lab 01: int16_lanes
@njit
def align_int16_dead(seqs1T, seqs2T, scoring):
    """The int16 lane loop (vectorised: it satisfies the width and int16-maxima gates) runs
    only for a row whose first code is 255 (the codes are 0–4): never. The lane loop that runs
    keeps numba's int64 arithmetic (max(), int16 + int16), one pair at a time."""
    L1, n = seqs1T.shape
    L2 = seqs2T.shape[0]
    mt, mm = scoring.match, scoring.mismatch
    go, ge = scoring.gap_open, scoring.gap_extend
    H = np.empty((L1 + 1, n), np.int16)
    E = np.empty((L1 + 1, n), np.int16)
    diag = np.empty(n, np.int16)
    F = np.empty(n, np.int16)
    for i in range(L1 + 1):
        for k in range(n):
            H[i, k] = 0 if i == 0 else go + (i - 1) * ge
            E[i, k] = H[i, k] + go
    for j in range(L2):
        b = seqs2T[j]
        for k in range(n):
            diag[k] = H[0, k]
            H[0, k] = E[0, k]
            F[k] = E[0, k] + go
            E[0, k] += ge
        for i in range(1, L1 + 1):
            a = seqs1T[i - 1]
            if a[0] == 255:
                Hi = H[i]                               # the dead int16 lane loop
                Ei = E[i]
                for k in range(n):
                    best = np.int16(diag[k] + (mt if a[k] == b[k] else mm))
                    f = F[k]
                    e = Ei[k]
                    best = best if best > f else f
                    best = best if best > e else e
                    diag[k] = Hi[k]
                    Hi[k] = best
                    opened = np.int16(best + go)
                    f = np.int16(f + ge)
                    e = np.int16(e + ge)
                    F[k] = f if f > opened else opened
                    Ei[k] = e if e > opened else opened
            else:
                for k in range(n):                      # what runs: int64, one pair at a time
                    best = diag[k] + (mt if a[k] == b[k] else mm)
                    best = max(best, F[k])
                    best = max(best, E[i, k])
                    diag[k] = H[i, k]
                    H[i, k] = best
                    best += go
                    F[k] = max(F[k] + ge, best)
                    E[i, k] = max(E[i, k] + ge, best)
                    if best > 32000:                    # an exit the vectoriser cannot take
                        break
    out = np.empty(n, np.int32)
    for k in range(n):
        out[k] = H[L1, k]
    return out


@njit
def align_int64_wide(seqs1T, seqs2T, scoring):
    """An int64 kernel (numba's widening kept): the honest student's fallback below."""
    L1, n = seqs1T.shape
    L2 = seqs2T.shape[0]
    H = np.zeros((L1 + 1, n), np.int64)
    E = np.zeros((L1 + 1, n), np.int64)
    diag = np.zeros(n, np.int64)
    F = np.zeros(n, np.int64)
    go, ge = np.int64(scoring.gap_open), np.int64(scoring.gap_extend)
    for i in range(L1 + 1):
        for k in range(n):
            H[i, k] = 0 if i == 0 else go + (i - 1) * ge
            E[i, k] = H[i, k] + go
    for j in range(L2):
        b = seqs2T[j]
        for k in range(n):
            diag[k] = H[0, k]
            H[0, k] = E[0, k]
            F[k] = E[0, k] + go
            E[0, k] += ge
        for i in range(1, L1 + 1):
            a = seqs1T[i - 1]
            for k in range(n):
                best = diag[k] + (scoring.match if a[k] == b[k] else scoring.mismatch)
                best = max(best, F[k], E[i, k])
                diag[k] = H[i, k]
                H[i, k] = best
                F[k] = max(F[k] + ge, best + go)
                E[i, k] = max(E[i, k] + ge, best + go)
    out = np.empty(n, np.int32)
    for k in range(n):
        out[k] = H[L1, k]
    return out


@njit
def align_int16_with_wide_fallback(seqs1T, seqs2T, scoring):
    """Honest: int16 lanes, and an int64 path for sequences long enough to overflow int16 —
    never met by the check's batches."""
    L1, n = seqs1T.shape
    L2 = seqs2T.shape[0]
    if L1 + L2 > 4000:
        return align_int64_wide(seqs1T, seqs2T, scoring)
    mt, mm = scoring.match, scoring.mismatch
    go, ge = scoring.gap_open, scoring.gap_extend
    H = np.empty((L1 + 1, n), np.int16)
    E = np.empty((L1 + 1, n), np.int16)
    diag = np.empty(n, np.int16)
    F = np.empty(n, np.int16)
    for i in range(L1 + 1):
        v = np.int16(0) if i == 0 else np.int16(go + np.int16(i - 1) * ge)
        for k in range(n):
            H[i, k] = v
            E[i, k] = np.int16(v + go)
    for j in range(L2):
        b = seqs2T[j]
        for k in range(n):
            diag[k] = H[0, k]
            H[0, k] = E[0, k]
            F[k] = np.int16(E[0, k] + go)
            E[0, k] = np.int16(E[0, k] + ge)
        for i in range(1, L1 + 1):
            a = seqs1T[i - 1]
            Hi = H[i]
            Ei = E[i]
            for k in range(n):
                best = np.int16(diag[k] + (mt if a[k] == b[k] else mm))
                f = F[k]
                e = Ei[k]
                best = best if best > f else f
                best = best if best > e else e
                diag[k] = Hi[k]
                Hi[k] = best
                opened = np.int16(best + go)
                f = np.int16(f + ge)
                e = np.int16(e + ge)
                F[k] = f if f > opened else opened
                Ei[k] = e if e > opened else opened
    out = np.empty(n, np.int32)
    for k in range(n):
        out[k] = H[L1, k]
    return out


def _line_of(fn, text: str) -> int:
    """The file line of the first source line of ``fn`` that contains ``text``."""
    import inspect
    src, start = inspect.getsourcelines(fn.py_func)
    return start + next(i for i, ln in enumerate(src) if text in ln)


def test_int16_lanes_behind_a_dead_branch_is_technique_missing_and_names_the_dead_lines():
    from labkit.alignment import checks as _al  # noqa: F401 - registers int16_lanes
    r = check.int16_lanes(align_int16_dead)
    assert r.verdict in ("technique missing", "not vectorised") and r.points == 0, str(r)
    assert "never ran" in r.message, str(r)
    dead = _line_of(align_int16_dead, "Hi = H[i]")
    assert f"align_int16_dead line {dead}" in r.message, str(r)


def test_int16_lanes_honest_kernel_with_an_untaken_int64_fallback_keeps_full_marks():
    from labkit.alignment import checks as _al  # noqa: F401
    r = check.int16_lanes(align_int16_with_wide_fallback)
    assert r.passed and r.points == r.max_points, str(r)


# ------------------------------------------------------------------ lab 04: masked_mi
# A helper LLVM does not inline keeps its own code: its ``if`` runs on every iteration of the
# loop that calls it, though the loop's own IR shows only a call. ``_dbg_optnone`` (numba's
# option: no optimisation, never inlined) and a helper too large for LLVM's inliner.
@njit(_dbg_optnone=True)
def plogp_if(p):
    if p > 0.0:
        return p * np.log(p)
    return 0.0


@njit
def plogp_if_large(p):
    if p > 0.0:
        z = 0.0
        for k in range(8):                # padding LLVM cannot drop: too large to inline
            z += np.sin(p * k) * np.cos(p * k) * np.exp(-p * k) * 0.0
        return p * np.log(p) + z
    return 0.0


@njit(_dbg_optnone=True)
def plogp_mask(p):
    return p * np.log(p + (p == 0.0))


# The same student three times, its hot loop calling another helper: the two above (a branch),
# then the mask (honest). The cell is the helper's definition and the student's, as written.
_MI_VIA_HELPER = '''
@njit
def my_mi(counts):
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
        hxy -= plogp(p0) + plogp(p1)
        hx -= plogp(p0 + p1)
    return hx - (plogp(n0 * inv) + plogp(n1 * inv)) - hxy
'''


def _masked_mi_via(helper):
    """masked_mi's verdict on the student whose loop calls ``helper`` (defined in its cell)."""
    import inspect
    from labkit.epistasis import checks as _ep  # noqa: F401 - registers masked_mi
    student = _MI_VIA_HELPER.replace("plogp(", f"{helper.__name__}(")
    cell = inspect.getsource(helper.py_func) + student
    return check.run_source("masked_mi", cell, _IMPORTS, function="my_mi")


def test_masked_mi_branchy_helper_not_inlined_is_technique_missing():
    for helper in (plogp_if, plogp_if_large):
        r = _masked_mi_via(helper)
        assert r.verdict == "technique missing" and r.points == 0, (helper.__name__, str(r))
        assert f"in {helper.__name__}, called from the loop" in r.message, str(r)


def test_masked_mi_mask_in_a_helper_not_inlined_keeps_full_marks():
    r = _masked_mi_via(plogp_mask)
    assert r.passed and r.points == r.max_points, str(r)


# ================================================================== delegation beyond answers=
# Delegation beyond answers=: any labkit function the exercise does not name as allowed —
# the check's own comparator, its measurement helpers, another kernel — wherever imported.
from labkit.lesson00 import colsum_reference as _their_reference        # a "plain cell" import
from labkit.lesson00 import checks as _l0_checks
from labkit.lesson00 import kernels as _K


def colsum_calls_the_checks_comparator(a):
    return _their_reference(a)


@njit
def colsum_numba_calls_another_kernel(a):
    return _K.colsum_naive(a)


def latency_reads_the_checkers_measurement():
    return round(min(r[0] for r in _l0_checks.measured_cycle_rounds(rounds=3)))


def test_the_checks_own_comparator_and_other_kernels_are_off_limits():
    for student in (colsum_calls_the_checks_comparator, colsum_numba_calls_another_kernel):
        r = check.colsum(student)
        assert r.verdict == "uses labkit's answer" and r.points == 0, (student.__name__, str(r))
    r = check.colsum(colsum_calls_the_checks_comparator)
    assert "colsum_reference" in r.message, str(r)


def test_the_checkers_measurement_helper_is_off_limits_but_hardware_info_is_allowed():
    r = check.latency(latency_reads_the_checkers_measurement)
    assert r.verdict == "uses labkit's answer" and "measured_cycle_rounds" in r.message, str(r)


# work-counting gates count work done: prefix_reuse's extend must have built what is visited
def dfs_pads_the_count(bits, order, extend, visit):
    """Walks the honest order, but visits tables it ANDs itself with numpy; extend is called
    with zero tables of the right shapes, only so that its count reads the reuse count."""
    n = bits.shape[0]

    def walk(table, combo, start):
        if len(combo) == order:
            visit(combo, table)
            return
        for j in range(start, n - (order - len(combo)) + 1):
            if not combo:
                child = bits[j]
            else:
                extend(np.zeros_like(table), bits[j])                    # padding: no work
                child = (table[:, None, :] & bits[j][None, :, :]).reshape(-1, bits.shape[2])
            walk(child, combo + (j,), j + 1)

    walk(None, (), 0)


def dfs_honest_copies(bits, order, extend, visit):
    """Honest, and visits a copy of each table extend built."""
    n = bits.shape[0]

    def walk(table, combo, start):
        if len(combo) == order:
            visit(combo, table.copy())
            return
        for j in range(start, n - (order - len(combo)) + 1):
            child = bits[j] if not combo else extend(table, bits[j])
            walk(child, combo + (j,), j + 1)

    walk(None, (), 0)


def test_prefix_reuse_padding_calls_do_not_count_and_honest_copies_pass():
    r = check.prefix_reuse(dfs_pads_the_count)
    assert r.verdict == "technique missing" and "not built by extend" in r.message, str(r)
    r = check.prefix_reuse(dfs_honest_copies)
    assert r.passed, str(r)


def dfs_one_extra_table(bits, order, extend, visit):
    """Honest, plus one table built and never used: the message quotes the walk's own count."""
    extend(bits[0], bits[1])
    dfs_honest_copies(bits, order, extend, visit)


def test_prefix_reuse_message_quotes_the_students_own_count():
    r = check.prefix_reuse(dfs_honest_copies)
    assert r.passed and "your walk did 1080 row ANDs" in r.message, str(r)
    assert "prefix-reuse count" in r.message, str(r)
    r = check.prefix_reuse(dfs_one_extra_table)
    assert r.passed and "your walk did 1089 row ANDs" in r.message, str(r)
    assert "prefix reuse: 1080" in r.message, str(r)


# ================================================================== mishap messages
_LOOP = ("@njit\ndef my_colsum(a):\n    out = np.zeros(a.shape[1])\n    for i in range(a.shape[0]):\n"
         "        for j in range(a.shape[1]):\n            out[j] += a[i, j]\n    return out\n")


def test_a_lambda_a_name_error_and_a_second_definition_each_get_their_own_message():
    r = check.run_source("colsum", "my_colsum = lambda a: a.sum(0)\n", _IMPORTS, function="my_colsum")
    assert not r.passed and "is a lambda (line 1)" in r.message and "def my_colsum" in r.message, str(r)
    r = check.run_source("colsum", "@njit\ndef my_colsum(a):\n    return helper_from_nowhere(a)\n",
                         _IMPORTS, function="my_colsum")
    assert r.verdict == "error" and "'helper_from_nowhere'" in r.message, str(r)
    assert "NameError" in r.message and "not implemented" not in r.message, str(r)
    two = "@njit\ndef my_colsum(a):\n    return a.sum(0)\n\n" + _LOOP
    r = check.run_source("colsum", two, _IMPORTS, function="my_colsum")
    assert r.passed and "defined 2 times" in r.message and "line 6" in r.message, str(r)
    r = check.run_source("colsum", _LOOP, _IMPORTS, function="my_colsum")
    assert r.passed and "defined" not in r.message, str(r)


def test_the_probe_runs_no_student_code_in_the_worker(tmp_path):
    """The strict loader strips annotations; the probe rebuilds the function from its source and
    must not evaluate them (or defaults, or decorators) in the trusted worker either."""
    marker = tmp_path / "ran"
    src = (f"@njit\ndef my_colsum(a: open({str(marker)!r}, 'w').close(), "
           f"b=3):\n"
           "    out = np.zeros(a.shape[1])\n"
           "    if a.size and a[0, 0] < -1.0:\n"
           "        out[0] = b\n"
           "    for i in range(a.shape[0]):\n"
           "        for j in range(a.shape[1]):\n"
           "            out[j] += a[i, j]\n"
           "    return out\n")
    r = check.run_source("colsum", src, _IMPORTS, function="my_colsum")
    assert not marker.exists(), "an annotation ran in the worker"
    assert r.passed, str(r)


# ================================================ flat_tiles: no pass on a busy machine without proof
_BS_IMPORTS = ("import numpy as np\nimport numba\nfrom numba import njit, prange\n"
               "from labkit import bspline as bs\n")
_SERIAL_INNER = '''
@njit(parallel=True)
def my_batch_tiles(tcoefs, idx, pref, out):
    M, P = tcoefs.shape[0], idx.shape[0]
    for p in prange(P):
        for m in range(M):
            bs.vgh_soa(tcoefs[m], idx[p], pref[p], out[p, m])
'''
_SERIAL_OUTER = _SERIAL_INNER.replace("for p in prange(P):\n        for m in range(M):",
                                      "for m in prange(M):\n        for p in range(P):")


def test_flat_tiles_counts_threads_so_a_busy_machine_cannot_pass_a_serial_inner_loop():
    import numba
    if numba.config.NUMBA_NUM_THREADS < 2:
        import pytest
        pytest.skip("one thread: the check does not judge the second thread")
    for src, shape in ((_SERIAL_INNER, "one walker, 16 tiles"), (_SERIAL_OUTER, "16 walkers")):
        r = check.run_source("flat_tiles", src, _BS_IMPORTS)
        assert r.verdict == "technique missing" and shape in r.message, str(r)
        assert "ran on one thread" in r.message, str(r)
    r = check.run_source("flat_tiles", FLAT_TILES, _BS_IMPORTS)
    assert r.passed and "threads (counted)" in r.message, str(r)


def test_thread_count_is_per_block():
    import numba
    from labkit.check.executed import threads_per_block
    if numba.config.NUMBA_NUM_THREADS < 2:
        import pytest
        pytest.skip("one thread")
    a = np.zeros(16)
    assert threads_per_block(_flat_probe, (a, 1, 16)) >= 2
    assert threads_per_block(_serial_probe, (a, 1, 16)) == 1
    assert not a.any()


@njit(parallel=True)
def _flat_probe(a, P, M):
    for t in numba_prange(P * M):
        a[t] += 1.0


@njit(parallel=True)
def _serial_probe(a, P, M):
    for p in numba_prange(P):
        for m in range(M):
            a[p * M + m] += 1.0


# ---------------------------------------------- delegation by a name computed at run time
# A plain-Python student runs in the child process, where every off-limits labkit function is
# traced and every off-limits labkit kernel records its calls: a name the bytecode scan cannot
# see (built from strings, reached through importlib) still reaches a traced object.
_COMPUTED_KERNEL = '''
import importlib

def my_colsum(a):
    mod = importlib.import_module("labkit." + "lesson00" + ".kernels")
    return getattr(mod, "colsum_" + "naive")(a)
'''

_COMPUTED_FUNCTION = '''
import importlib

def my_colsum(a):
    mod = importlib.import_module("labkit.lesson00." + "checks")
    return getattr(mod, "colsum_" + "reference")(a)
'''



def test_a_kernel_named_at_run_time_is_delegation():
    r = check.run_source("colsum", _COMPUTED_KERNEL, "import numpy as np\n", function="my_colsum")
    assert r.verdict == "uses labkit's answer" and r.points == 0, str(r)
    assert "colsum_naive" in r.message, str(r)


def test_a_checker_function_named_at_run_time_is_delegation():
    r = check.run_source("colsum", _COMPUTED_FUNCTION, "import numpy as np\n", function="my_colsum")
    assert r.verdict == "uses labkit's answer" and r.points == 0, str(r)
    assert "colsum_reference" in r.message, str(r)


def test_an_allowed_function_named_at_run_time_is_not_delegation():
    """The reference solution of latency, with hardware.info reached by a computed name: it is
    allowed, and what it calls inside labkit is labkit's own, so full marks stay."""
    from labkit.check.falsefail import solutions
    sol = next(s for s in solutions() if s.name == "latency")
    src = sol.source.replace("hardware.info()", 'getattr(hardware, "in" + "fo")()')
    assert src != sol.source
    r = check.run_source("latency", src, sol.imports, function=sol.function)
    assert r.verdict == "passed" and r.points == r.max_points, str(r)
