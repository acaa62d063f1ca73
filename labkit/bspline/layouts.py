"""Lab 02 data layouts: the 64-byte-aligned buffers, the 10 SoA output streams and their padded
stride, and the conversions AoS → SoA, SoA → canonical ``(value, grad, hess)``, and the
AoSoA copy of the coefficients (tiles of Nb splines, ragged last tile zero-padded); the check of
the coefficient table itself, ``(nx, ny, nz, N)`` C-contiguous float.
"""
from __future__ import annotations

import sys
import threading

import numpy as np

from labkit._common import aligned_empty, check_tile

__all__ = ["ALIGN", "STREAMS", "aligned_empty", "aligned_zeros", "stream_stride", "new_output",
           "to_aosoa", "soa_to_canonical", "aos_to_soa"]

#: The 10 SoA output streams, in order (the Hessian is symmetric: 6 of its 9 entries).
STREAMS = ("v", "gx", "gy", "gz", "hxx", "hxy", "hxz", "hyy", "hyz", "hzz")
_HESS_INDEX = ((4, 5, 6), (5, 7, 8), (6, 8, 9))   # stream of hess[a, b]


def _tile(tile, n: int) -> int:
    # the shared tile check (splines per tile); a tile larger than N becomes N
    return check_tile(tile, n, what="splines")


# ----------------------------------------------------------------------------- aligned buffers
#: Byte alignment of every array labkit allocates for this lab: one cache line = one zmm register.
ALIGN = 64


def _refcount_pool_works() -> bool:
    # the reuse test below reads reference counts: only where they mean what CPython's do
    probe = [np.empty(1, dtype=np.uint8)]
    return sys.getrefcount(probe[0]) == 2


#: Blocks (uint8, 64-byte-aligned views inside) that evaluate_vgh's canonical outputs were
#: carved from, newest first, at most _POOL_SIZE: a block whose only reference left is this list
#: (the caller dropped every array and view of a previous result) is reused by the next call of
#: the same size, so a loop ``value, grad, hess = evaluate_vgh(...)`` no longer page-faults
#: 13.6 MB of fresh memory per call on the seed grid (the kernel moves ≈ 600 B per VGH; the
#: fresh canonical arrays' faults and zeroing cost another ≈ 5 %). Two blocks: in that loop the
#: previous result is still alive during the call.
_POOL: list = []
_POOL_SIZE = 2
_POOL_OK = _refcount_pool_works()
_POOL_LOCK = threading.Lock()


def _nbytes(shape, dtype) -> int:
    return int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize


def _rounded(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


def _carve(block, offset, shape, dtype):
    return block[offset:offset + _nbytes(shape, dtype)].view(dtype).reshape(shape)


#: Page-offset distance kept between the scratch block and the coefficients: the scratch's 10
#: streams sit 64 B apart in page offset (stream_stride), and a scratch stream at the page offset
#: of the coefficient rows read in the same iteration makes their loads wait on its stores (4 KiB
#: aliasing), as it did right after the 13.6 MB outputs (measured: docs/bspline.md, 'Session 6').
_SCRATCH_SKEW = 2048


def canonical_outputs(P: int, N: int, scratch_shape=(), scratch_dtype=np.float64,
                      avoid: int | None = None, extra: int = 0):
    """Uninitialised float64 ``value (P, N)``, ``grad (P, N, 3)``, ``hess (P, N, 3, 3)``, a
    ``scratch`` array and, with ``extra`` > 0, a flat scratch of that many elements (both in
    ``scratch_dtype``), each 64-byte-aligned, carved from one block — a block of a previous call
    when nothing references it any more (see ``_POOL``), else a new one. ``avoid``: an address
    (the coefficients') whose page offset the scratch keeps ``_SCRATCH_SKEW`` bytes away from."""
    shapes = [((P, N), np.float64), ((P, N, 3), np.float64), ((P, N, 3, 3), np.float64)]
    starts, end = [], 0
    for shape, dtype in shapes:                     # each start rounded up to ALIGN, once
        starts.append(end)
        end += _rounded(_nbytes(shape, dtype))
    n_scratch = _rounded(_nbytes(scratch_shape, scratch_dtype))
    need = end + 4096 + n_scratch + _nbytes(extra, scratch_dtype) + ALIGN   # + skew, + alignment
    block = None
    with _POOL_LOCK:      # two threads must not both take a free block (check, then pop)
        if _POOL_OK:
            for i in range(len(_POOL)):
                if _POOL[i].size == need and sys.getrefcount(_POOL[i]) == 2:
                    block = _POOL.pop(i)
                    break
        if block is None:
            block = np.empty(need, dtype=np.uint8)
        _POOL.insert(0, block)          # held by `block` too until the views exist: not free
        del _POOL[_POOL_SIZE:]
    base = (-block.ctypes.data) % ALIGN
    out = [_carve(block, base + s, shape, dtype) for s, (shape, dtype) in zip(starts, shapes)]
    off = base + end
    if avoid is not None:                   # scratch at page offset avoid + _SCRATCH_SKEW
        off += (int(avoid) + _SCRATCH_SKEW - (block.ctypes.data + off)) % 4096 // ALIGN * ALIGN
    out.append(_carve(block, off, scratch_shape, scratch_dtype))
    if extra:
        out.append(_carve(block, off + n_scratch, (int(extra),), scratch_dtype))
    return tuple(out)


def aligned_zeros(shape, dtype=np.float64, align: int = ALIGN) -> np.ndarray:
    """Like :func:`aligned_empty`, filled with zeros."""
    out = aligned_empty(shape, dtype, align)
    out.fill(0)
    return out


# ----------------------------------------------------------------------------- streams
def stream_stride(nb: int, dtype=np.float64) -> int:
    """Elements between two SoA output streams: ``nb``, plus one cache line when the streams
    would otherwise sit a multiple of 2 KiB apart (10 streams on the same L1 sets thrash, and
    4 KiB-aliased loads wait on unrelated stores)."""
    item = np.dtype(dtype).itemsize
    return int(nb) + (64 // item if (int(nb) * item) % 2048 == 0 else 0)


def new_output(n: int, layout: str = "soa", dtype=np.float64, tile: int | None = None):
    """Output buffer(s) for one position: AoS ``(v, g, h)``, SoA ``(10, ld)``, AoSoA ``(M, 10, ld)``
    with the padded stream stride of :func:`stream_stride` (kernels loop over the first N/Nb)."""
    if layout == "aos":
        return (aligned_zeros(n, dtype), aligned_zeros((n, 3), dtype),
                aligned_zeros((n, 3, 3), dtype))
    if layout == "soa":
        return aligned_zeros((10, stream_stride(n, dtype)), dtype)
    if layout == "aosoa":
        tile = _tile(tile, n)
        return aligned_zeros((-(-n // tile), 10, stream_stride(tile, dtype)), dtype)
    raise ValueError(f"layout must be 'aos', 'soa' or 'aosoa', got {layout!r}")


# ----------------------------------------------------------------------------- conversions
def to_aosoa(coefs, tile: int) -> np.ndarray:
    """Coefficients ``(nx, ny, nz, N)`` → tiles ``(M, nx, ny, nz, Nb)``, M = ceil(N/Nb); a ragged
    last tile is padded with zero splines (their outputs are dropped)."""
    coefs = _check_coefs(coefs)
    N = coefs.shape[3]
    tile = _tile(tile, N)
    M = -(-N // tile)
    out = aligned_zeros((M,) + coefs.shape[:3] + (tile,), dtype=coefs.dtype)
    for m in range(M):
        lo, hi = m * tile, min(N, (m + 1) * tile)
        out[m, ..., : hi - lo] = coefs[..., lo:hi]
    return out


def soa_to_canonical(out):
    """SoA streams ``(..., 10, N)`` → ``(value, grad, hess)`` with shapes ``(..., N)``,
    ``(..., N, 3)``, ``(..., N, 3, 3)`` (float64)."""
    out = np.asarray(out)
    if out.ndim < 2 or out.shape[-2] != 10:
        raise ValueError(f"SoA output must have shape (..., 10, N), got {out.shape}")
    o = np.moveaxis(out, -2, 0).astype(np.float64)          # (10, ..., N)
    value = o[0].copy()
    grad = np.stack([o[1], o[2], o[3]], axis=-1)
    hess = np.stack([np.stack([o[_HESS_INDEX[a][b]] for b in range(3)], axis=-1)
                     for a in range(3)], axis=-2)
    return value, grad, hess


def aos_to_soa(v, g, h):
    """AoS ``v (N,)``, ``g (N, 3)``, ``h (N, 3, 3)`` → SoA ``(10, N)`` (upper triangle of h)."""
    v, g, h = np.asarray(v), np.asarray(g), np.asarray(h)
    N = v.shape[-1]
    if g.shape[-2:] != (N, 3) or h.shape[-3:] != (N, 3, 3):
        raise ValueError(f"expected v (N,), g (N, 3), h (N, 3, 3); got {v.shape}, {g.shape}, {h.shape}")
    return np.stack([v, g[..., 0], g[..., 1], g[..., 2], h[..., 0, 0], h[..., 0, 1],
                     h[..., 0, 2], h[..., 1, 1], h[..., 1, 2], h[..., 2, 2]], axis=-2)


def _check_coefs(coefs) -> np.ndarray:
    """The coefficient array ``(nx, ny, nz, N)`` as C-contiguous float32/float64, or a clear error."""
    if not isinstance(coefs, np.ndarray):
        raise TypeError(f"coefficients must be a numpy array (nx, ny, nz, N), not "
                        f"{type(coefs).__name__}")
    if coefs.ndim != 4:
        raise ValueError(f"coefficients must have rank 4 (nx, ny, nz, N), got shape {coefs.shape}; "
                         "for one spline add a trailing axis: coefs[..., None]")
    if coefs.dtype not in (np.float32, np.float64):
        raise TypeError(f"coefficients must be float32 or float64, got {coefs.dtype}; "
                        "convert with coefs.astype(np.float64)")
    if coefs.shape[3] == 0:
        raise ValueError("N = 0 splines: the coefficient array (nx, ny, nz, N) needs N ≥ 1")
    if min(coefs.shape[:3]) < 1:
        raise ValueError(f"every grid axis needs at least 1 point, got {coefs.shape[:3]}")
    if not coefs.flags.c_contiguous:
        coefs = np.ascontiguousarray(coefs)
    return coefs
