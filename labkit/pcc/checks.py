"""Exercise checks of lab 03: ``check.job_coords``, ``check.tile_loop``, ``check.pick_tile``."""
from __future__ import annotations

import numbers

import numpy as np

from labkit.check import CheckFailure, exercise, mismatch, not_blas_gate, note, record_order, rng
from labkit.check import speed_gate

from .mapping import FLOAT_FIRST_BAD_N, job_coords as _exact_coords, job_id as _job_id

__all__ = ["check_job_coords", "check_tile_loop", "check_pick_tile", "CHECKS"]


def _as_pair(v, call):
    try:
        y, x = v
        y, x = int(y), int(x)
    except Exception:  # noqa: BLE001 - anything that is not a pair of integers
        raise AssertionError(f"{call} returned {v!r}; return a pair (y, x) of integers") from None
    return y, x


def _hard_ids(n, g, k):
    """Ids where a float inverse fails first: first/last cells of the bottom and top rows."""
    rows = np.unique(np.concatenate([np.arange(min(n, 4)), n - 1 - np.arange(min(n, k))]))
    first = _job_id(n, rows, rows)
    last = _job_id(n, rows, np.full_like(rows, n - 1))
    T = n * (n + 1) // 2
    rand = g.integers(0, T, k)
    return np.unique(np.concatenate([first, last, rand]))


@exercise("job_coords", points=2, answers=("labkit.pcc.mapping:job_coords",
                                           "labkit.pcc.mapping:_job_coords_nb",
                                           "labkit.pcc.mapping:_job_coords_vec",
                                           "labkit.pcc.mapping:tile_coords"))
def check_job_coords(student):
    """job_coords(n, J) → (y, x): every id of small n, then large n up to 2**31 - 1."""
    g = rng()
    small = list(range(1, 31)) + [int(v) for v in g.integers(31, 400, 3)]
    checked = 0
    for n in small:
        T = n * (n + 1) // 2
        ids = range(T) if n <= 30 else g.integers(0, T, 300)
        for J in ids:
            J = int(J)
            call = f"job_coords({n}, {J})"
            got = _as_pair(student(n, J), call)
            exp = _exact_coords(n, J)
            assert got == exp, f"{call} = {got}, expected {exp}"
            checked += 1
    big = [1_000_003, FLOAT_FIRST_BAD_N, int(g.integers(2**30, 2**31)), 2**31 - 1]
    for n in big:
        ids = _hard_ids(n, g, 150)
        ys, xs = _exact_coords(n, ids)
        for J, y, x in zip(ids.tolist(), ys.tolist(), xs.tolist()):
            call = f"job_coords({n}, {J})"
            got = _as_pair(student(n, J), call)
            if got != (y, x):
                hint = ""
                if n >= FLOAT_FIRST_BAD_N and abs(got[0] - y) <= 30:
                    hint = (" — a float64 square root is not exact this large; correct y with "
                            "integer arithmetic (while F(y) > J: y -= 1, …)")
                raise AssertionError(f"{call} = {got}, expected {(y, x)}{hint}")
            checked += 1
    return f"{checked} ids exact, up to n = 2**31 - 1"


def _reference_R(Z):
    R = Z @ Z.T
    return np.clip(R, -1.0, 1.0)


#: labkit's kernels that compute a whole R (or a tile loop) — not to be handed in.
_TILE_ANSWERS = ("labkit.pcc.kernels:pcc_tiled", "labkit.pcc.kernels:pcc_transformed",
                 "labkit.pcc.kernels:pcc_tiles_static", "labkit.pcc.kernels:pcc_tiles_cyclic",
                 "labkit.pcc.kernels:pcc_tiles_dynamic", "labkit.pcc.kernels:pcc_tiles_rows",
                 "labkit.pcc.kernels:tile_block", "labkit.pcc.kernels:_do_tile",
                 "labkit.pcc:pearson_allpairs", "labkit.pcc:pcc_threads", "labkit.pcc:blas_pcc")


def _tile_order(student, Z, tile) -> None:
    """The lesson is the tile loop in id order: tiles 0, 1, 2, … through ``pcc.tile_coords``
    (recorded by an instrumented copy); a function that never calls it must at least not hand
    the work to a matrix multiply."""
    n = Z.shape[0]
    m = (n + tile - 1) // tile
    T = m * (m + 1) // 2
    order = record_order(student, (Z, tile), "labkit.pcc.mapping:tile_coords", arg=2, nargs=3)
    if order:
        if order != list(range(T)):
            shown = ", ".join(map(str, order[:6])) + (" …" if len(order) > 6 else "")
            raise CheckFailure("technique missing",
                               f"tiles visited in the order {shown} ({len(order)} calls of "
                               f"tile_coords for {T} tiles) — loop Jt over 0 … T-1, each tile once")
        note(f"{T} tiles visited in id order")
        return
    not_blas_gate(student, (Z, tile), hint="loop over tile ids and compute each tile's dot "
                                           "products yourself")
    note("tile order not traced (tile_coords not called)")


@exercise("tile_loop", points=3, answers=_TILE_ANSWERS)
def check_tile_loop(student):
    """pcc_tiled(Z, tile) → full n×n R from standardised rows Z, tile by tile id (the order
    traced through tile_coords; no BLAS matrix multiply)."""
    from . import pcc_naive, standardize
    g = rng()
    cases = [(1, 5, 4), (7, 3, 4), (50, 20, 16), (61, 33, 8), (97, 64, 32), (130, 40, 96)]
    for n, l, tile in cases:
        X = g.normal(size=(n, l))
        Z, _ = standardize(X)
        R = student(Z, tile)
        exp = _reference_R(Z)
        if R is None:
            raise AssertionError("pcc_tiled returned None — return the n×n matrix R")
        msg = mismatch(np.asarray(R), exp, name="R", rtol=1e-10, atol=1e-12)
        if msg is not None:
            Ra = np.asarray(R)
            if Ra.shape == exp.shape and np.allclose(np.triu(Ra), np.triu(exp), rtol=1e-10,
                                                     atol=1e-12):
                msg = "upper triangle right, lower wrong — also write R[x, y] = R[y, x]"
            raise AssertionError(f"n={n}, l={l}, tile={tile}: {msg}")
    X = g.normal(size=(61, 20))
    _tile_order(student, standardize(X)[0], 8)
    X = g.random((300, 500))
    Z, _ = standardize(X)
    speed_gate(student, pcc_naive, (X,), student_args=(Z, 32), need=1.3,
               vs="the naive pair loop (Eq. 1)")
    return f"{len(cases)} shapes exact, n not a multiple of the tile included"


@exercise("pick_tile", points=1, answers=())    # a choice, judged by measurement
def check_pick_tile(student):
    """choose_tile(n, l) → a tile side that runs pearson_allpairs at least as well as tile 96."""
    from . import DEFAULT_TILE, pearson_allpairs
    n, l = 1200, 1000
    t = student(n, l)
    if isinstance(t, (bool, np.bool_)) or not isinstance(t, (numbers.Integral, np.integer)):
        raise AssertionError(f"choose_tile({n}, {l}) returned {t!r}; return an int")
    t = int(t)
    if not 1 <= t <= n:
        raise AssertionError(f"choose_tile({n}, {l}) = {t}; a tile side must be in [1, n]")
    X = rng().random((n, l))
    ratio = speed_gate(lambda X: pearson_allpairs(X, tile=t),
                       lambda X: pearson_allpairs(X, tile=DEFAULT_TILE), (X,), need=0.8,
                       vs=f"tile {DEFAULT_TILE}")
    if t % 4:
        return f"tile {t} works; a multiple of 4 fills the 4×4 register block ({ratio:.2f}×)"
    return f"tile {t}"


#: The lab's exercises, by name (each is also ``labkit.check.<name>``).
CHECKS = {"job_coords": check_job_coords, "tile_loop": check_tile_loop,
          "pick_tile": check_pick_tile}
