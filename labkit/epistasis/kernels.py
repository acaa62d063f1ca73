"""Lab 04's kernels by step: popcount of a word array (byte table, nibble table in memory or in a
register, Muła, hardware scalar and ``<8 x i64>``), fused combine + popcount of a prefix table with one SNP, contingency tables of one
combination, mutual information (branchy, masked, n·ln n lookup) one table or a batch at a time.

The depth-first search kernels are in ``engine.py`` and ``_stages.py``. Imports only numpy/numba and labkit tools —
never the package ``__init__``.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from labkit import hardware

from ._intrinsics import (_NIBBLE_POP, _and_popcount2_v8, _and_popcount_v8, _mula_avx2,
                          _popcount_v8, popcount64)

MAX_ORDER = 8          #: 3**8 = 6561 cells: beyond that almost every cell is empty anyway
_WORD_CHUNK = 8        #: words per 512-bit chunk; each class's row is padded to a multiple of it
_MI_SCALE = 1e11       #: ranking resolution (nats⁻¹): MI values closer than ~1e-11 tie

_HAS_AVX2 = hardware.has("avx2")
#: which Muła kernel this machine runs: "avx2-pshufb" (explicit vpshufb) or "scalar-nibble"
MULA_KIND = "avx2-pshufb" if _HAS_AVX2 else "scalar-nibble"


# ---------------------------------------------------------------------------------------------
# Popcount kernels over a 1-D uint64 array
# ---------------------------------------------------------------------------------------------

_BYTE_POP = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)
_NIBBLE_TABLE = np.array(_NIBBLE_POP, dtype=np.uint8)


@njit(cache=True)
def popcount_table(words):
    """Total set bits with a 256-entry byte lookup table (8 loads per word)."""
    b = words.view(np.uint8)
    total = 0
    for i in range(b.size):
        total += _BYTE_POP[b[i]]
    return total


@njit(cache=True)
def popcount_nibble(words):
    """Total set bits with a 16-entry nibble table, one byte at a time (portable Muła fallback)."""
    b = words.view(np.uint8)
    total = 0
    for i in range(b.size):
        x = b[i]
        total += _NIBBLE_TABLE[x & 15] + _NIBBLE_TABLE[x >> 4]
    return total


#: sixteen 4-bit entries in one register: entry v (bits 4v … 4v+3) is popcount(v)
_NIBBLE_LUT64 = np.uint64(sum(bin(v).count("1") << (4 * v) for v in range(16)))


@njit(cache=True)
def popcount_lut_register(words):
    """Total set bits nibble by nibble from a 16-entry table held in a 64-bit register: entry v is
    read with a variable shift, which LLVM vectorises (``vpsrlvq``) — Muła's idea without a
    shuffle instruction, and lab 04 exercise 3's technique (no ``ctpop``)."""
    lut = _NIBBLE_LUT64
    total = np.uint64(0)
    for i in range(words.size):
        x = words[i]
        s = np.uint64(0)
        for k in range(16):
            v = (x >> np.uint64(4 * k)) & np.uint64(15)
            s += (lut >> (v << np.uint64(2))) & np.uint64(15)
        total += s
    return total


@njit(cache=True)
def _popcount_mula_avx2(words):
    n4 = words.size // 4
    total = _mula_avx2(words, 0, n4)
    for i in range(4 * n4, words.size):
        total += popcount64(words[i])
    return total


#: Muła's nibble-lookup popcount (vpshufb + vpsadbw on AVX2 machines, scalar nibble elsewhere)
popcount_mula = _popcount_mula_avx2 if _HAS_AVX2 else popcount_nibble


@njit(cache=True)
def popcount_hw_scalar(words):
    """Total set bits, one scalar hardware popcnt per word (what LLVM makes of a ctpop loop)."""
    total = 0
    for i in range(words.size):
        total += popcount64(words[i])
    return total


@njit(cache=True)
def popcount_hw(words):
    """Total set bits with <8 x i64> ctpop (one zmm vpopcntq per 8 words on AVX-512 VPOPCNTDQ)."""
    n8 = words.size // 8
    total = _popcount_v8(words, 0, n8)
    for i in range(8 * n8, words.size):
        total += popcount64(words[i])
    return total


@njit(cache=True)
def and_popcount(a, b):
    """Σ popcount(a & b) without storing a & b (fused combine + count, <8 x i64>)."""
    n = min(a.size, b.size)
    n8 = n // 8
    total = _and_popcount_v8(a, 0, b, 0, n8)
    for i in range(8 * n8, n):
        total += popcount64(a[i] & b[i])
    return total


# ---------------------------------------------------------------------------------------------
# Combine + popcount: prefix table (R × W) with one SNP's 3 rows (3 × W) → R*3 counts
# ---------------------------------------------------------------------------------------------

@njit(cache=True)
def combine_then_popcount(prefix, snp):
    """Materialise the combined table prefix[r] & snp[g] (R*3 rows), then popcount each row."""
    R, W = prefix.shape
    table = np.empty((R * 3, W), dtype=np.uint64)
    for r in range(R):
        for g in range(3):
            for w in range(W):
                table[r * 3 + g, w] = prefix[r, w] & snp[g, w]
    out = np.zeros(R * 3, dtype=np.int64)
    for row in range(R * 3):
        s = 0
        for w in range(W):
            s += popcount64(table[row, w])
        out[row] = s
    return out


@njit(cache=True)
def combine_popcount_scalar(prefix, snp):
    """Fused combine + popcount with scalar popcnt: counts[r*3+g] = Σ_w pc(prefix[r,w] & snp[g,w])."""
    R, W = prefix.shape
    out = np.zeros(R * 3, dtype=np.int64)
    for r in range(R):
        for g in range(3):
            s = 0
            for w in range(W):
                s += popcount64(prefix[r, w] & snp[g, w])
            out[r * 3 + g] = s
    return out


@njit(cache=True)
def combine_popcount(prefix, snp):
    """Fused combine + popcount, <8 x i64> vectors; two SNP rows per pass, third by subtraction."""
    R, W = prefix.shape
    p = np.ascontiguousarray(prefix).ravel()
    s = np.ascontiguousarray(snp).ravel()
    n8 = W // 8
    out = np.zeros(R * 3, dtype=np.int64)
    for r in range(R):
        packed = _and_popcount2_v8(p, r * W, s, 0, W, n8)
        c0 = packed & 0xFFFFFFFF
        c1 = packed >> 32
        c2 = _and_popcount_v8(p, r * W, s, 2 * W, n8)
        for w in range(8 * n8, W):
            c0 += popcount64(p[r * W + w] & s[w])
            c1 += popcount64(p[r * W + w] & s[W + w])
            c2 += popcount64(p[r * W + w] & s[2 * W + w])
        out[r * 3] = c0
        out[r * 3 + 1] = c1
        out[r * 3 + 2] = c2
    return out


# ---------------------------------------------------------------------------------------------
# Contingency tables of one k-SNP combination
# ---------------------------------------------------------------------------------------------

@njit(cache=True)
def contingency_fused(bits, case_words, snps):
    """counts[class, cell] for SNPs ``snps``: AND of their k genotype rows per cell, fused with popcount."""
    k = snps.size
    W = bits.shape[2]
    ncell = 3 ** k
    out = np.zeros((2, ncell), dtype=np.int64)
    digits = np.zeros(k, dtype=np.int64)
    for cell in range(ncell):
        rem = cell
        for t in range(k - 1, -1, -1):
            digits[t] = rem % 3
            rem //= 3
        for w in range(W):
            x = bits[snps[0], digits[0], w]
            for t in range(1, k):
                x &= bits[snps[t], digits[t], w]
            if w < case_words:
                out[1, cell] += popcount64(x)
            else:
                out[0, cell] += popcount64(x)
    return out



@njit(cache=True)
def _mi_combinations(bits, case_words, combos, nlogn):
    out = np.empty(combos.shape[0])
    for i in range(combos.shape[0]):
        out[i] = mi_table(contingency_fused(bits, case_words, combos[i]), nlogn)
    return out



# ---------------------------------------------------------------------------------------------
# Mutual information of a contingency table counts[class, cell]
# ---------------------------------------------------------------------------------------------

@njit(cache=True)
def mi_branchy(counts):
    """MI (nats) of counts[2, cells] with ``if p > 0`` around every logarithm (the seed's base code)."""
    n0 = 0
    n1 = 0
    for c in range(counts.shape[1]):
        n0 += counts[0, c]
        n1 += counts[1, c]
    N = n0 + n1
    inv = 1.0 / N
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
    for py in (n0 * inv, n1 * inv):
        if py > 0.0:
            hy -= py * np.log(py)
    return hx + hy - hxy


@njit(cache=True)
def mi_masked(counts):
    """MI (nats) without branches: log(p + (p == 0)) — the 0/1 mask turns empty cells into log 1 = 0."""
    n0 = 0
    n1 = 0
    for c in range(counts.shape[1]):
        n0 += counts[0, c]
        n1 += counts[1, c]
    N = n0 + n1
    inv = 1.0 / N
    hxy = 0.0
    hx = 0.0
    for c in range(counts.shape[1]):
        p0 = counts[0, c] * inv
        p1 = counts[1, c] * inv
        px = p0 + p1
        # a mask, not a branch: (p == 0.0) is 0 or 1, so an empty cell adds 0 · log 1 = 0
        hxy -= p0 * np.log(p0 + (p0 == 0.0)) + p1 * np.log(p1 + (p1 == 0.0))
        hx -= px * np.log(px + (px == 0.0))
    q0 = n0 * inv
    q1 = n1 * inv
    hy = -(q0 * np.log(q0 + (q0 == 0.0)) + q1 * np.log(q1 + (q1 == 0.0)))
    return hx + hy - hxy


def nlogn_table(n: int) -> np.ndarray:
    """Lookup table T[c] = c·ln c for c = 0 … n (T[0] = 0), float64."""
    c = np.arange(int(n) + 1, dtype=np.float64)
    out = np.zeros_like(c)
    out[1:] = c[1:] * np.log(c[1:])
    return out


@njit(cache=True)
def mi_table(counts, nlogn):
    """MI (nats) from Σ n·ln n looked up in ``nlogn`` (no logarithm, no branch, T[0] = 0)."""
    n0 = 0
    n1 = 0
    sxy = 0.0
    sx = 0.0
    for c in range(counts.shape[1]):
        a = counts[0, c]
        b = counts[1, c]
        n0 += a
        n1 += b
        sxy += nlogn[a] + nlogn[b]
        sx += nlogn[a + b]
    N = n0 + n1
    # H(X)+H(Y)-H(X,Y) = [Σxy n ln n − Σx n ln n − Σy n ln n + N ln N] / N
    return (sxy - sx - nlogn[n0] - nlogn[n1] + nlogn[N]) / N


@njit(cache=True)
def mi_batch_branchy(tables):
    """mi_branchy over a batch tables[B, 2, cells]."""
    out = np.empty(tables.shape[0])
    for i in range(tables.shape[0]):
        out[i] = mi_branchy(tables[i])
    return out


@njit(cache=True)
def mi_batch_masked(tables):
    """mi_masked over a batch tables[B, 2, cells]."""
    out = np.empty(tables.shape[0])
    for i in range(tables.shape[0]):
        out[i] = mi_masked(tables[i])
    return out


@njit(cache=True)
def mi_batch_table(tables, nlogn):
    """mi_table over a batch tables[B, 2, cells]."""
    out = np.empty(tables.shape[0])
    for i in range(tables.shape[0]):
        out[i] = mi_table(tables[i], nlogn)
    return out


# ---------------------------------------------------------------------------------------------
