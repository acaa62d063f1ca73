"""Exercise checks of lab 03 and their hints: ``job_coords`` (the exact inverse of the job
numbering), ``float_breaks`` (predict where the seed's float closed form first fails),
``tile_loop`` (the tiles of a contiguous id range, in id order, upper triangle only),
``block4x4`` (the 4×4 register-blocked micro-kernel) and ``split_ids`` (tile ids over R ranks,
balanced to one tile)."""
from __future__ import annotations

import math
import numbers
import re

import numpy as np

from labkit import hints
from labkit._common import is_int
from labkit.check import (CheckFailure, exercise, fma_gate, mismatch, not_blas_gate, note,
                          record_order, require_njit, rng, speed_gate, vectorized_gate)
from labkit.check.gates import hot_loop
from labkit.check.guard import unwrap

from .kernels import KBLOCK, pcc_tiled, tile_block
from .mapping import job_coords as _exact_coords, job_coords_float, job_id as _job_id

__all__ = ["check_job_coords", "check_float_breaks", "check_tile_loop", "check_block4x4",
           "check_split_ids", "first_bad_n", "CHECKS"]


# ---------------------------------------------------------------- 1. job_coords
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
    big = [1_000_003, first_bad_n(), int(g.integers(2**30, 2**31)), 2**31 - 1]
    for n in big:
        ids = _hard_ids(n, g, 150)
        ys, xs = _exact_coords(n, ids)
        for J, y, x in zip(ids.tolist(), ys.tolist(), xs.tolist()):
            call = f"job_coords({n}, {J})"
            got = _as_pair(student(n, J), call)
            if got != (y, x):
                hint = ""
                if n >= first_bad_n() and abs(got[0] - y) <= 30:
                    hint = (" — a float64 square root is not exact this large; correct y with "
                            "integer arithmetic (while F(y) > J: y -= 1, …)")
                raise AssertionError(f"{call} = {got}, expected {(y, x)}{hint}")
            checked += 1
    return f"{checked} ids exact, up to n = 2**31 - 1"


# ---------------------------------------------------------------- 2. float_breaks
def _float_wrong(n, k=2000) -> int:
    """Wrong rows the seed's float Eq. 14 gives on the last cell of n's bottom k rows."""
    rows = np.arange(max(0, n - 1 - k), n - 1, dtype=np.int64)
    ids = _job_id(n, rows, np.full_like(rows, n - 1))
    y, _ = job_coords_float(n, ids)
    return int(np.count_nonzero(y != rows))


_FIRST_BAD: list[int] = []


def first_bad_n() -> int:
    """The first n at which the float closed form (Eq. 14) returns a wrong row, computed here:
    the radicand n² + n + ¼ − 2(J+1) needs 2 bits below the integer, so float64 (53 bits) holds
    it exactly while n² + n < 2⁵¹; the n found is confirmed (wrong rows at n, none at n − 1)."""
    if not _FIRST_BAD:
        n = math.isqrt(2 ** 51)
        while n * (n + 1) < 2 ** 51:
            n += 1
        if not (_float_wrong(n) > 0 and _float_wrong(n - 1) == 0):  # pragma: no cover
            raise RuntimeError(f"float Eq. 14 does not first fail at n = {n} on this numpy")
        _FIRST_BAD.append(n)
    return _FIRST_BAD[0]


#: a predicted n within this fraction of the computed first failing n passes
FLOAT_BAND = 0.01


def _names(code) -> set[str]:
    out = set(code.co_names)
    for c in code.co_consts:
        if hasattr(c, "co_names"):
            out |= _names(c)
    return out


@exercise("float_breaks", points=1)
def check_float_breaks(student):
    """The predicted first n at which the seed's float64 Eq. 14 returns a wrong (y, x), within
    1 % of the n the check computes and confirms (wrong rows at n, none at n − 1)."""
    code = getattr(getattr(unwrap(student), "py_func", unwrap(student)), "__code__", None)
    if code is not None and "FLOAT_FIRST_BAD_N" in _names(code):
        raise CheckFailure("uses labkit's answer", "pcc.FLOAT_FIRST_BAD_N is labkit's answer — "
                                                   "derive n from float64's 53-bit mantissa")
    pred = student()
    if isinstance(pred, (bool, np.bool_)) or not isinstance(pred, (numbers.Real, np.number)):
        raise CheckFailure("wrong", f"returned {type(pred).__name__}, expected a number (n)")
    pred = float(pred)
    if not math.isfinite(pred) or pred < 1:
        raise CheckFailure("wrong", f"predicted n = {pred!r}; n is a positive count of variables")
    n = first_bad_n()
    off = pred / n
    if abs(off - 1) > FLOAT_BAND:
        how = f"{off:.2f}× too high" if off > 1 else f"{1 / off:.2f}× too low"
        raise CheckFailure("wrong", f"predicted n = {pred:,.0f}: {how} (within "
                                    f"{FLOAT_BAND:.0%} of the first failing n passes) — which "
                                    "number must float64 hold exactly, and how many bits does "
                                    "its ¼ need?")
    return (f"predicted n = {pred:,.0f}; Eq. 14 first fails at n = {n:,} (computed here: "
            f"{_float_wrong(n)} wrong rows among its last 2000, none at n − 1)")


# ---------------------------------------------------------------- 3. tile_loop
#: labkit's kernels that compute tiles or a whole R — not to be handed in.
_TILE_ANSWERS = ("labkit.pcc.kernels:pcc_tiled", "labkit.pcc.kernels:pcc_transformed",
                 "labkit.pcc.kernels:pcc_tiles_static", "labkit.pcc.kernels:pcc_tiles_cyclic",
                 "labkit.pcc.kernels:pcc_tiles_dynamic", "labkit.pcc.kernels:pcc_tiles_rows",
                 "labkit.pcc.kernels:tile_block", "labkit.pcc.engine:block_tile",
                 "labkit.pcc.engine:_do_tile", "labkit.pcc.engine:tiles_to_buffer",
                 "labkit.pcc._panels:panel_tile", "labkit.pcc._panels:_ukernel",
                 "labkit.pcc._panels:_edge_block",
                 "labkit.pcc:pearson_allpairs", "labkit.pcc:pcc_threads", "labkit.pcc:blas_pcc")


def _range_mask(n, tile, J0, J1):
    """Boolean n×n mask of the upper-triangle cells (y ≤ x) of tiles J0 … J1−1, and each cell's tile id."""
    m = -(-n // tile)
    yt = np.arange(n) // tile
    Jt = yt[:, None] * (2 * m - yt[:, None] + 1) // 2 + yt[None, :] - yt[:, None]
    upper = np.triu(np.ones((n, n), dtype=bool))
    return upper & (Jt >= J0) & (Jt < J1), np.where(upper, Jt, -1)


def _tile_order(student, args, J0, J1) -> None:
    """Tiles J0, J0+1, …, J1−1 in this order, each mapped once through pcc.tile_coords (or
    pcc.job_coords on the tile matrix), recorded by an instrumented copy of the function."""
    order = record_order(student, args, "labkit.pcc.mapping:tile_coords", arg=2, nargs=3)
    via = "tile_coords"
    if not order:
        order = record_order(student, args, "labkit.pcc.mapping:job_coords", arg=1, nargs=2)
        via = "job_coords"
    if not order:
        raise CheckFailure("technique missing",
                           "pcc.tile_coords was never called — map each tile id Jt of the range "
                           "to (yt, xt) with pcc.tile_coords(n, tile, Jt): the bijection is the "
                           "lesson, and the check follows the ids through it")
    want = list(range(J0, J1))
    if order != want:
        shown = ", ".join(map(str, order[:6])) + (" …" if len(order) > 6 else "")
        raise CheckFailure("technique missing",
                           f"tiles visited in the order {shown} ({len(order)} calls of {via} for "
                           f"{len(want)} tiles {J0} … {J1 - 1}) — loop Jt from J0 to J1 − 1, "
                           "each tile once, in id order")
    note(f"tiles {J0} … {J1 - 1} visited in id order")


@exercise("tile_loop", points=3, answers=_TILE_ANSWERS, outputs=(4,),
          allowed=("labkit.pcc:tile_coords",))    # the bijection one level up: traced in order
def check_tile_loop(student):
    """tile_range(Z, tile, J0, J1, R) fills R[y, x], y ≤ x, of the tiles J0 … J1−1 and nothing
    else: exact on random ranges, tiles traced in id order through tile_coords, @njit, no BLAS."""
    from . import pcc_naive, standardize
    g = rng()
    cases = [(1, 5, 4), (7, 3, 4), (50, 20, 16), (61, 33, 8), (97, 64, 32), (130, 40, 96)]
    checked = 0
    for n, l, tile in cases:
        Z, _ = standardize(g.normal(size=(n, l)))
        m = -(-n // tile)
        T = m * (m + 1) // 2
        a = int(g.integers(0, T))
        b = int(g.integers(a, T + 1))
        ranges = sorted({(0, T), (a, b), (T - 1, T), (a, a)})
        full = np.clip(Z @ Z.T, -1.0, 1.0)
        for J0, J1 in ranges:
            R = np.full((n, n), np.nan)
            student(Z, tile, J0, J1, R)
            mask, tid = _range_mask(n, tile, J0, J1)
            where = f"n={n}, l={l}, tile={tile}, tiles {J0} … {J1 - 1}"
            msg = mismatch(np.where(mask, R, 0.0), np.where(mask, full, 0.0), name="R",
                           rtol=1e-10, atol=1e-12)
            if msg is not None:
                if np.isnan(R[mask]).any():
                    y, x = np.argwhere(mask & np.isnan(R))[0]
                    msg = (f"R[{y}, {x}] (tile {tid[y, x]}) was not written — every upper cell "
                           "of the range's tiles")
                raise AssertionError(f"{where}: {msg}")
            extra = ~mask & ~np.isnan(R)
            if extra.any():
                y, x = np.argwhere(extra)[0]
                if y > x:
                    raise CheckFailure("technique missing",
                                       f"{where}: R[{y}, {x}] below the diagonal was written — "
                                       "compute only the upper triangle (y ≤ x); the caller "
                                       "mirrors it")
                raise AssertionError(f"{where}: R[{y}, {x}] belongs to tile {tid[y, x]}, "
                                     f"outside the range [{J0}, {J1}) — write only its tiles")
            checked += 1
    require_njit(student, "technique missing")
    Z, _ = standardize(g.normal(size=(61, 20)))
    m = -(-61 // 8)
    T = m * (m + 1) // 2
    J0, J1 = 3, T - 2
    args = (Z, 8, J0, J1, np.full((61, 61), np.nan))
    not_blas_gate(student, args, hint="loop over the tile's cells and compute each dot product "
                                      "yourself")
    _tile_order(student, args, J0, J1)
    X = g.random((300, 500))
    Z, _ = standardize(X)
    m = -(-300 // 32)
    speed_gate(student, pcc_naive, (X,), student_args=(Z, 32, 0, m * (m + 1) // 2,
                                                       np.empty((300, 300))),
               need=1.3, vs="the naive pair loop (Eq. 1)", answer=pcc_tiled, answer_args=(Z, 32))
    return f"{checked} id ranges exact (n not a multiple of the tile included), upper triangle only"


# ---------------------------------------------------------------- 4. block4x4
_TILE_ANSWERS4 = _TILE_ANSWERS + ("labkit.pcc.engine:_finish_tile",)
#: FMAs per vector load a 4×4 register block reaches (8 loads → 16 FMAs = 2); one dot product
#: at a time gives 0.5, a 2×2 block 1.
FMA_PER_LOAD = 1.5
#: fraction of labkit's tile_block (same 4×4 block) the micro-kernel must reach
BLOCK_SPEED = 0.7


def register_block_gate(fn, signature) -> float:
    """Packed multiplies per vector load in the hot loop ≥ ``FMA_PER_LOAD`` (a register block
    reuses each loaded vector for several FMAs), and the multiplies contractible to FMAs
    (``fast``/``contract`` on the ``fmul``)."""
    lp, _ = hot_loop(fn, signature)
    if lp is None:
        raise CheckFailure("technique missing", "no loop found in your compiled function")
    muls = [ln for ln in lp.lines if re.search(r"= fmul\b[^<]*<\d+ x double>", ln)
            or re.search(r"@llvm\.fmuladd\.v|@llvm\.fma\.v", ln)]
    loads = [ln for ln in lp.lines if re.search(r"= load <\d+ x double>", ln)]
    if not muls or not loads:
        raise CheckFailure("not vectorised", "no packed multiply and load of doubles in the hot "
                                             "loop — the k loop did not vectorise")
    fused = [ln for ln in muls if "fmul" not in ln or re.search(r"\b(fast|contract)\b", ln)]
    if len(fused) < len(muls):
        raise CheckFailure("technique missing",
                           f"{len(muls) - len(fused)} of {len(muls)} packed multiplies in the hot "
                           "loop may not be fused with their add (no fast/contract flag) — "
                           "compile with @njit(fastmath=True)")
    ratio = len(muls) / len(loads)
    from labkit.check import current
    ctx = current()
    if ctx is not None:
        ctx.details.update(hot_loop_fma=len(muls), hot_loop_vector_loads=len(loads))
    if ratio < FMA_PER_LOAD:
        raise CheckFailure("technique missing",
                           f"{len(muls)} packed FMAs per {len(loads)} vector loads in the hot "
                           f"loop ({ratio:.2f} per load), need ≥ {FMA_PER_LOAD:g}: keep 4 row "
                           "values and 4 column values per k and 16 sums, so each load feeds 4 "
                           "FMAs")
    note(f"hot loop: {len(muls)} packed FMAs per {len(loads)} vector loads")
    return ratio


@exercise("block4x4", points=3, answers=_TILE_ANSWERS4, outputs=(3,))
def check_block4x4(student):
    """block4x4(Z, i, j, out) → out[r, c] = <Z[i+r], Z[j+c]> for r, c < 4: exact for any l,
    @njit, vectorised at the host's width, FMAs in the hot loop with ≥ 1.5 FMAs per vector load
    (the register block), ≥ 0.7× labkit's tile_block on the same block (interval rule)."""
    g = rng()
    lengths = [1, 2, 3, 8, 17, int(g.integers(100, 1100))]
    for l in lengths:
        Z = g.normal(size=(12, l))
        for i, j in ((0, 4), (4, 4), (8, 0), (2, 5)):
            out = np.full((4, 4), np.nan)
            exp = Z[i:i + 4] @ Z[j:j + 4].T      # bound before the call
            student(Z, i, j, out)
            msg = mismatch(out, exp, name="out", rtol=1e-10, atol=1e-12)
            assert msg is None, f"l={l}, i={i}, j={j}: {msg}"
    require_njit(student, "technique missing")
    Z = g.normal(size=(8, KBLOCK))
    out = np.zeros((4, 4))
    sig = (Z, 0, 4, out)
    not_blas_gate(student, sig, hint="the 16 dot products are the exercise: write the k loop")
    vectorized_gate(student, sig)
    fma_gate(student, sig)
    register_block_gate(student, sig)
    ref_out = np.zeros((4, 4))

    def labkit_block(Z, o):
        tile_block(Z, 0, 4, 4, 8, False, KBLOCK, o, 0, 4)

    speed_gate(student, labkit_block, (Z, ref_out), student_args=sig, need=BLOCK_SPEED,
               vs="labkit's tile_block on the same block")
    return f"16 dot products exact for l = {', '.join(map(str, lengths))}"


# ---------------------------------------------------------------- 5. split_ids
@exercise("split_ids", points=2, answers=("labkit.pcc.mapping:rank_tile_range",
                                          "labkit.pcc:rank_tile_range"))
def check_split_ids(student):
    """split(rank, size, T) → (J0, J1): the ranks' ranges cover 0 … T−1 in rank order, no
    overlap, counts differing by at most one tile — exactly, for T up to 2⁶¹ (n = 2³¹)."""
    g = rng()
    cases = [(size, T) for size in range(1, 10) for T in range(0, 41)]
    big_T = [2**31 * (2**31 + 1) // 2, 2**61 - 1, int(g.integers(2**53, 2**61))]
    cases += [(int(s), T) for T in big_T for s in (3, 7, int(g.integers(100, 1000)))]
    cases += [(int(s), int(g.integers(1000, 10**6))) for s in g.integers(2, 64, 5)]
    for size, T in cases:
        got = []
        for r in range(size):
            v = student(r, size, T)
            call = f"split({r}, {size}, {T})"
            try:
                a, b = v
            except Exception:  # noqa: BLE001 - anything that is not a pair
                raise AssertionError(f"{call} returned {v!r}; return a pair (J0, J1)") from None
            if not (is_int(a) and is_int(b)):
                raise AssertionError(f"{call} = ({a!r}, {b!r}); tile ids are integers — "
                                     "a float cannot hold every id above 2⁵³")
            got.append((int(a), int(b)))
        where = f"size={size}, T={T}"
        if got[0][0] != 0:
            raise AssertionError(f"{where}: rank 0 starts at {got[0][0]}, not 0")
        if got[-1][1] != T:
            raise AssertionError(f"{where}: the last rank ends at {got[-1][1]}, not T = {T}")
        for r in range(size):
            a, b = got[r]
            if b < a:
                raise AssertionError(f"{where}: rank {r} has J1 = {b} < J0 = {a}")
            if r + 1 < size and got[r + 1][0] != b:
                gap = "overlap" if got[r + 1][0] < b else "gap"
                raise AssertionError(f"{where}: rank {r} ends at {b}, rank {r + 1} starts at "
                                     f"{got[r + 1][0]} ({gap})")
        counts = [b - a for a, b in got]
        if max(counts) - min(counts) > 1:
            r_max, r_min = counts.index(max(counts)), counts.index(min(counts))
            raise AssertionError(f"{where}: rank {r_max} gets {max(counts)} tiles, rank {r_min} "
                                 f"{min(counts)} — balance them to within one tile")
    return f"{len(cases)} (size, T) splits exact and balanced to one tile, T up to 2⁶¹"


#: The lab's exercises, by name (each is also ``labkit.check.<name>``).
CHECKS = {"job_coords": check_job_coords, "float_breaks": check_float_breaks,
          "tile_loop": check_tile_loop, "block4x4": check_block4x4,
          "split_ids": check_split_ids}


hints.define(
    "job_coords",
    "the row y of job J is the one with F_n(y) ≤ J < F_n(y+1); Eq. 14 finds it with a float "
    "square root, which is not exact for ids near 2⁶¹ — which integer tools give an exact root?",
    "count from the end instead: R = n(n+1)/2 − 1 − J ids follow J, and the last r rows hold "
    "r(r+1)/2 cells, so J sits r rows above the bottom for the largest r with r(r+1)/2 ≤ R. "
    "Solve that with an exact integer square root (math.isqrt), then x from Eq. 15.",
    "R = n*(n+1)//2 - 1 - J; r = (math.isqrt(8*R + 1) - 1) // 2; y = n - 1 - r; "
    "x = J + y - y*(2*n - y + 1)//2; return y, x")
hints.define(
    "float_breaks",
    "Eq. 14 takes the square root of n² + n + ¼ − 2(J+1); the ceiling is only right if that "
    "radicand is stored exactly — how many bits does a float64 give an integer, and how many "
    "bits below the integer does the ¼ need?",
    "float64 has a 53-bit significand. The radicand is about n² + n, and its ¼ needs two bits "
    "below the units, so it is exact while n² + n < 2^(53−2). Find the first n where that stops "
    "being true.",
    "n = math.isqrt(2**51); while n * (n + 1) < 2**51: n += 1; return n")
hints.define(
    "tile_loop",
    "a tile id Jt ∈ [J0, J1) is all a worker gets: the bijection one level up, "
    "pcc.tile_coords(n, tile, Jt), turns it into the tile's place (yt, xt) — which cells of R "
    "does that tile own, and which of them are above the diagonal?",
    "for Jt in range(J0, J1): yt, xt = pcc.tile_coords(n, tile, Jt); the tile holds rows "
    "yt·tile … min(n, (yt+1)·tile) − 1 and columns xt·tile … min(n, (xt+1)·tile) − 1; in a "
    "diagonal tile (yt == xt) start each row's columns at x = y. Each cell is one dot product "
    "of two rows of Z, written to R[y, x] only.",
    "for y in range(yt*tile, min(n, (yt+1)*tile)): for x in range(max(y, xt*tile), "
    "min(n, (xt+1)*tile)): s = 0.0; for k in range(l): s += Z[y, k]*Z[x, k]; R[y, x] = s")
hints.define(
    "block4x4",
    "one dot product loads two values per multiply-add; with 4 rows and 4 columns in "
    "registers, how many multiply-adds can each loaded value feed, and how many sums must "
    "stay live across the k loop?",
    "take the 8 rows a0 = Z[i] … a3 = Z[i+3], b0 = Z[j] … b3 = Z[j+3]; keep 16 scalar sums "
    "s00 … s33 and, per k, load x0 … x3 and y0 … y3 once and add every product xr·yc to src. "
    "The sums are reductions: @njit(fastmath=True) lets LLVM vectorise them over k and fuse "
    "each multiply with its add.",
    "for k in range(l): x0 = a0[k]; …; y3 = b3[k]; s00 += x0*y0; s01 += x0*y1; … "
    "s33 += x3*y3; after the loop out[0, 0] = s00; … out[3, 3] = s33")
hints.define(
    "split_ids",
    "T tile ids over size ranks: ⌈T/size⌉ each (the seed's split) can leave the last rank far "
    "fewer, or none — how many ranks must get one tile more than the others, and can you say "
    "where a rank starts with integers only?",
    "every rank gets ⌊T/size⌋ tiles and the first T mod size ranks one more; rank r then starts "
    "at r·⌊T/size⌋ + min(r, T mod size). Equivalently J0 = ⌊r·T/size⌋ in exact integer "
    "arithmetic (// on Python ints, never / with floats: ids reach 2⁶¹).",
    "q, e = divmod(T, size); J0 = rank*q + min(rank, e); J1 = J0 + q + (rank < e); "
    "return J0, J1")


# ---------------------------------------------------------------- answers on the screen
# REVEALS: exercise → a callable returning what would give its graded answer away if a cell
# printed it before the exercise's check has passed (exact strings, computed from the check's
# own reference). tests/test_notebooks.py runs every student copy unsolved and finds none of
# them in any output.
def _float_breaks_reveals():
    """The first n where float Eq. 14 fails, in the ways a cell would print it."""
    n = first_bad_n()
    return [str(n), f"{n:,}", f"{n:_}", f"{n:,}".replace(",", " ")]


REVEALS = {"float_breaks": _float_breaks_reveals}
