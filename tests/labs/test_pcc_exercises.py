"""Lab 03's five exercises with fake students, through the trusted worker (check.run_source):
the notebook's reference solutions pass (block4x4 also on a simulated 128-bit host), the stubs
give 'not implemented' with the first hint, delegation to labkit's kernels (direct, alias,
getattr with a computed name) gives "uses labkit's answer", and the shortcuts that once passed
fail: ``Z @ Z.T`` / ``np.dot`` for the tiles, tiles out of id order, the lower triangle written,
one dot product at a time for the register block, the seed's float formula and its ⌈T/R⌉ split,
a float split."""
import pytest

from labkit import check, hints
from labkit.check.falsefail import solutions
from labkit.pcc import checks as _checks  # noqa: F401 - registers the checks and hints

IMPORTS = ("import math\nimport numpy as np\nimport numba\nfrom numba import njit\n"
           "from labkit import pcc\n")
EXERCISES = ("job_coords", "float_breaks", "tile_loop", "block4x4", "split_ids")
SOL = {s.name: s for s in solutions() if s.lab == "pcc"}


pytestmark = pytest.mark.usefixtures("report_speed", "fresh_worker")


def _run(name, source, function):
    return check.run_source(name, source, IMPORTS, function=function)


def _stub(source: str) -> str:
    from labkit.release import strip_source
    return strip_source(source)


def test_the_notebook_has_the_five_exercises():
    # and the lab's open challenge (tests/test_challenges.py)
    assert set(EXERCISES) | {"pcc_challenge"} == set(SOL), sorted(SOL)
    assert "pick_tile" not in check.names()
    for name in EXERCISES:
        assert check.get(name).module == "labkit.pcc.checks"
        assert check.get(name).points >= 1
        assert hints.tiers(name) == 3, name
        # the stub's one hint is the concept, and no tier-1 text hands over code
        assert SOL[name].source.count("# Hint:") == 1, name


@pytest.mark.parametrize("name", EXERCISES)
@pytest.mark.full      # nbval runs this solution's check (strict) in the default tier
def test_reference_solution_passes(name):
    sol = SOL[name]
    r = check.run_source(name, sol.source, sol.imports, function=sol.function)
    assert r.passed, str(r)


def test_block4x4_passes_on_a_128_bit_host(monkeypatch):
    monkeypatch.setenv("LABKIT_NATIVE_BITS", "128")
    check.restart_worker()
    try:
        sol = SOL["block4x4"]
        r = check.run_source("block4x4", sol.source, sol.imports, function=sol.function)
    finally:
        monkeypatch.delenv("LABKIT_NATIVE_BITS")
        check.restart_worker()
    assert r.passed, str(r)


@pytest.mark.parametrize("name", EXERCISES)
def test_stub_is_not_implemented_with_the_first_hint(name):
    sol = SOL[name]
    r = check.run_source(name, _stub(sol.source), sol.imports, function=sol.function)
    assert r.verdict == "not implemented", str(r)
    assert hints.get(name).texts[0][:60] in r.message, r.message


# ------------------------------------------------------------------ job_coords
@pytest.mark.parametrize("body", [
    "return pcc.job_coords(n, J)",
    "from labkit.pcc.mapping import job_coords as jc\n    return jc(n, J)",
    "f = getattr(pcc, 'job_' + 'coords')\n    return f(n, J)",
])
def test_job_coords_delegation(body):
    r = _run("job_coords", f"def my_job_coords(n, J):\n    {body}\n", "my_job_coords")
    assert r.verdict == "uses labkit's answer", str(r)


def test_job_coords_seed_float_formula_is_wrong():
    src = '''
def my_job_coords(n, J):
    y = int(np.ceil(n - 0.5 - np.sqrt(n * n + n + 0.25 - 2.0 * (J + 1))))
    return y, J + y - y * (2 * n - y + 1) // 2
'''
    r = _run("job_coords", src, "my_job_coords")
    assert r.verdict == "wrong" and "float64 square root" in r.message, str(r)


# ------------------------------------------------------------------ float_breaks
@pytest.mark.parametrize("body, verdict", [
    ("return pcc.FLOAT_FIRST_BAD_N", "uses labkit's answer"),
    ("return math.isqrt(2**53)", "wrong"),          # the whole mantissa: 2× too high
    ("return math.isqrt(2**52)", "wrong"),          # one bit: 1.41× too high
    ("return 'big'", "wrong"),
    ("return math.isqrt(2**51)", "passed"),          # n² ≈ 2⁵¹, one below the exact n
])
def test_float_breaks_band(body, verdict):
    r = _run("float_breaks", f"def predict_first_bad_n():\n    {body}\n", "predict_first_bad_n")
    assert r.verdict == verdict, str(r)
    if verdict == "wrong" and "isqrt" in body:
        assert "too high" in r.message and "47" not in r.message.split("passes")[0], r.message


# ------------------------------------------------------------------ tile_loop
TILE_HEAD = "@njit\ndef my_tile_range(Z, tile, J0, J1, R):\n    n, l = Z.shape\n"
TILE_CELL = '''
    for Jt in {ids}:
        yt, xt = pcc.tile_coords(n, tile, Jt)
        for y in range(yt * tile, min(n, (yt + 1) * tile)):
            for x in range({x0}, min(n, (xt + 1) * tile)):
                {body}
'''
DOT = "s = 0.0\n                for k in range(l):\n                    s += Z[y, k] * Z[x, k]"
TILE_BLAS_PY = '''
def my_tile_range(Z, tile, J0, J1, R):
    n = Z.shape[0]
    full = Z @ Z.T
    for Jt in range(J0, J1):
        yt, xt = pcc.tile_coords(n, tile, Jt)
        for y in range(yt * tile, min(n, (yt + 1) * tile)):
            for x in range(max(y, xt * tile), min(n, (xt + 1) * tile)):
                R[y, x] = full[y, x]
'''


def _tile_src(ids="range(J0, J1)", x0="max(y, xt * tile)", body=DOT + "\n                R[y, x] = s"):
    return TILE_HEAD + TILE_CELL.format(ids=ids, x0=x0, body=body)


@pytest.mark.parametrize("src, verdict, needle", [
    (_tile_src(body="R[y, x] = np.dot(Z[y], Z[x])"), "technique missing", "BLAS"),
    (TILE_BLAS_PY, "technique missing", "numba"),
    (_tile_src(ids="range(J1 - 1, J0 - 1, -1)"), "technique missing", "order"),
    (_tile_src(x0="xt * tile", body=DOT + "\n                R[y, x] = s\n                R[x, y] = s"),
     "technique missing", "below the diagonal"),
    (_tile_src(ids="range(0, J1)"), "wrong", "outside the range"),
])
def test_tile_loop_shortcuts_fail(src, verdict, needle):
    r = _run("tile_loop", src, "my_tile_range")
    assert r.verdict == verdict and needle in r.message, str(r)


def test_tile_loop_delegation():
    src = ("def my_tile_range(Z, tile, J0, J1, R):\n"
           "    f = getattr(pcc, 'pcc_' + 'tiled')\n    R[:] = np.triu(f(Z, tile))\n")
    assert _run("tile_loop", src, "my_tile_range").verdict == "uses labkit's answer"


# ------------------------------------------------------------------ block4x4
PAIR_LOOP = '''
@njit(fastmath=True)
def my_block4x4(Z, i, j, out):
    l = Z.shape[1]
    for r in range(4):
        for c in range(4):
            s = 0.0
            for k in range(l):
                s += Z[i + r, k] * Z[j + c, k]
            out[r, c] = s
'''
DOT_BLOCK = '''
@njit
def my_block4x4(Z, i, j, out):
    for r in range(4):
        for c in range(4):
            out[r, c] = np.dot(Z[i + r], Z[j + c])
'''
NUMPY_BLOCK = '''
def my_block4x4(Z, i, j, out):
    out[:, :] = Z[i:i + 4] @ Z[j:j + 4].T
'''


@pytest.mark.parametrize("src, verdicts", [
    (PAIR_LOOP, {"technique missing"}),
    (DOT_BLOCK, {"technique missing"}),
    (NUMPY_BLOCK, {"technique missing"}),
])
def test_block4x4_shortcuts_fail(src, verdicts):
    r = _run("block4x4", src, "my_block4x4")
    assert r.verdict in verdicts, str(r)
    if src is PAIR_LOOP:
        assert "per load" in r.message, r.message


def test_block4x4_without_fastmath_is_not_vectorised():
    src = SOL["block4x4"].source.replace("@njit(fastmath=True)", "@njit")
    r = _run("block4x4", src, "my_block4x4")
    assert r.verdict in ("not vectorised", "technique missing"), str(r)


def test_block4x4_delegation():
    src = ("from labkit.pcc.kernels import tile_block as tb\n\n@njit\n"
           "def my_block4x4(Z, i, j, out):\n    tb(Z, i, i + 4, j, j + 4, False, 1024, out, i, j)\n")
    assert _run("block4x4", src, "my_block4x4").verdict == "uses labkit's answer"


def test_tile_loop_delegation_to_the_panel_engine():
    src = ("from labkit.pcc import panels\n\n"
           "def my_tile_range(Z, tile, J0, J1, R):\n"
           "    Zp = panels.as_panels(Z)\n"
           "    n = Z.shape[0]\n"
           "    for J in range(J0, J1):\n"
           "        y, x = pcc.tile_coords(J, -(-n // tile))\n"
           "        panels.panel_tile(Zp, n, y * tile, min(n, y * tile + tile), x * tile,\n"
           "                          min(n, x * tile + tile), y == x, 512, R, 0, 0, False)\n")
    assert _run("tile_loop", src, "my_tile_range").verdict == "uses labkit's answer"


# ------------------------------------------------------------------ split_ids
SEED_SPLIT = '''
def my_split(rank, size, T):
    chunk = -(-T // size)
    return min(T, rank * chunk), min(T, (rank + 1) * chunk)
'''
FLOAT_SPLIT = '''
def my_split(rank, size, T):
    return int(round(rank * T / size)), int(round((rank + 1) * T / size))
'''


@pytest.mark.parametrize("src, needle", [(SEED_SPLIT, "within one tile"),
                                         (FLOAT_SPLIT, "")])
def test_split_ids_shortcuts_are_wrong(src, needle):
    r = _run("split_ids", src, "my_split")
    assert r.verdict == "wrong" and needle in r.message, str(r)


def test_split_ids_floor_form_passes_and_delegation_does_not():
    src = "def my_split(rank, size, T):\n    return rank * T // size, (rank + 1) * T // size\n"
    assert _run("split_ids", src, "my_split").passed
    src = "def my_split(rank, size, T):\n    return pcc.rank_tile_range(rank, size, T)\n"
    assert _run("split_ids", src, "my_split").verdict == "uses labkit's answer"
