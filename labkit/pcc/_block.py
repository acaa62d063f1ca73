"""The engine's MR × NR register block, generated: ``_block_source`` writes ``block_tile`` for
any block shape (mr·nr scalar sums, which LLVM turns into vector accumulators of the k loop),
rather than the 24 sums of the 6 × 4 block written out by hand; ``BLOCK_SOURCE`` is its source
(print it to read the block)."""
from __future__ import annotations

from labkit.jit import njit

__all__ = ["MR", "NR", "BLOCK_SOURCE", "block_tile"]

#: register block: MR rows × NR columns of dot products per pass over a k-block
MR, NR = 6, 4


def _lines(indent, items):
    """``items`` indented by ``indent`` spaces."""
    return [" " * indent + s for s in items]


def _store(indent, pairs, dest, acc, mirror):
    """The accumulators into ``out``: the first k-block stores, later ones add; the last one of
    a sym tile clips each cell to [-1, 1] and mirrors it."""
    return (_lines(indent, ["if first:"]) + _lines(indent + 4, [f"{dest(*p)} = {acc(*p)}" for p in pairs])
            + _lines(indent, ["else:"]) + _lines(indent + 4, [f"{dest(*p)} += {acc(*p)}" for p in pairs])
            + _lines(indent, ["if last:"])
            + _lines(indent + 4, [f"{x}" for p in pairs for x in (
                f"v = min(1.0, max(-1.0, {dest(*p)}))", f"{dest(*p)} = v", f"{mirror(*p)} = v")]))


def _block_source(mr, nr):
    """Source of ``block_tile`` for an mr × nr register block (mr·nr scalar sums, which LLVM
    turns into mr·nr vector accumulators of the k loop), leftover columns mr × 1, rows 1 × 1."""
    src = _head(mr, nr) + _full_blocks(mr, nr) + _leftover_columns(mr) + _leftover_rows()
    return "\n".join(src) + "\n"


def _head(mr, nr):
    """The signature, the docstring and the loop over k-blocks."""
    return [
        "def block_tile(Z, i0, i1, j0, j1, diag, kb, out, oi, oj, sym):",
        f'    """out[i-oi, j-oj] = <Z_i, Z_j> for i in [i0,i1), j in [j0,j1) (on a diagonal tile',
        f'    only from i\'s {nr}-column block on): a {mr}×{nr} register block over k-blocks of kb.',
        "    sym (an off-diagonal tile of R itself, oi = oj = 0): the last k-block clips each cell to",
        '    [-1, 1] and writes it to out[j, i] too, from the block just computed (no second pass)."""',
        "    l = Z.shape[1]",
        "    for k0 in range(0, l, kb):",
        "        k1 = min(k0 + kb, l)",
        "        kk = k1 - k0",
        "        first = k0 == 0",
        "        last = sym and k1 == l",
        "        i = i0",
    ]


def _full_blocks(mr, nr):
    """mr rows at a time, nr columns at a time: the mr·nr sums of one block in registers."""
    rows, cols = range(mr), range(nr)
    cells = [(r, c) for r in rows for c in cols]
    return [
        f"        while i + {mr} <= i1:",
        *_lines(12, [f"a{r} = Z[i + {r}, k0:k1]" for r in rows]),
        f"            j = j0 + (i - i0) // {nr} * {nr} if diag else j0",
        "            r = i - oi",
        f"            while j + {nr} <= j1:",
        *_lines(16, [f"b{c} = Z[j + {c}, k0:k1]" for c in cols]),
        *_lines(16, [f"s{r}_{c} = 0.0" for r, c in cells]),
        "                for k in range(kk):",
        *_lines(20, [f"x{r} = a{r}[k]" for r in rows] + [f"y{c} = b{c}[k]" for c in cols]),
        *_lines(20, [f"s{r}_{c} += x{r} * y{c}" for r, c in cells]),
        "                c = j - oj",
        *_store(16, cells, lambda r, c: f"out[r + {r}, c + {c}]", lambda r, c: f"s{r}_{c}",
                lambda r, c: f"out[c + {c}, r + {r}]"),
        f"                j += {nr}",
    ]


def _leftover_columns(mr):
    """The columns left of the mr rows, one at a time (mr × 1)."""
    rows = range(mr)
    return [
        "            while j < j1:",
        "                b0 = Z[j, k0:k1]",
        *_lines(16, [f"t{r} = 0.0" for r in rows]),
        "                for k in range(kk):",
        "                    y0 = b0[k]",
        *_lines(20, [f"t{r} += a{r}[k] * y0" for r in rows]),
        *_store(16, [(r, 0) for r in rows], lambda r, _: f"out[r + {r}, j - oj]", lambda r, _: f"t{r}",
                lambda r, _: f"out[j - oj, r + {r}]"),
        "                j += 1",
        f"            i += {mr}",
    ]


def _leftover_rows():
    """The rows left below the last full block, one cell at a time (1 × 1)."""
    return [
        "        while i < i1:",
        "            a0 = Z[i, k0:k1]",
        "            j = i if diag else j0",
        "            while j < j1:",
        "                b0 = Z[j, k0:k1]",
        "                s = 0.0",
        "                for k in range(kk):",
        "                    s += a0[k] * b0[k]",
        *_store(16, [(0, 0)], lambda *_: "out[i - oi, j - oj]", lambda *_: "s",
                lambda *_: "out[j - oj, i - oi]"),
        "                j += 1",
        "            i += 1",
    ]


#: the generated source of ``block_tile`` (print it to read the register block)
BLOCK_SOURCE = _block_source(MR, NR)
_ns: dict = {"__name__": __name__}
# compiled under this file's name so numba's cache can locate (and invalidate) it with this module
exec(compile(BLOCK_SOURCE, __file__, "exec"), _ns)
block_tile = njit(cache=True, fastmath=True, nogil=True)(_ns["block_tile"])
