"""Lab 03's peer, numpy's BLAS, as the benchmark measures it: which BLAS and kernel set numpy
calls (``blas_info``, ``blas_kernel``), held to labkit's thread count (``blas_threads``), and —
when OPENBLAS_CORETYPE or OPENBLAS_L2_SIZE forces other kernels — the warning and the peer
measured again in a child process without them (``host_blas_child``)."""
from __future__ import annotations

import contextlib
import json
import subprocess
import sys

from labkit import bench

from .inputs import make_inputs
from .reference import blas_pcc

__all__ = ["blas_info", "blas_kernel", "blas_threads", "OPENBLAS_FORCING", "HOST_BLAS",
           "BLAS_TABLE", "forced_blas", "host_default_env", "blas_warning", "host_blas_child"]


def _flops(inputs):
    n, l = inputs.X.shape
    return n * (n + 1) / 2 * 2 * l


def blas_info() -> str:
    """The BLAS numpy calls, as threadpoolctl sees it: library, version, kernel set, threads."""
    try:
        import threadpoolctl
    except ImportError:
        return "BLAS unknown (threadpoolctl missing: pip install threadpoolctl)"
    import numpy  # noqa: F401 - loads numpy's BLAS so threadpoolctl finds it
    pools = [p for p in threadpoolctl.threadpool_info() if p.get("user_api") == "blas"]
    if not pools:
        return "no BLAS found by threadpoolctl"
    pools.sort(key=lambda p: "numpy" not in str(p.get("filepath", "")))   # numpy's own first
    return "; ".join(("numpy's " if "numpy" in str(p.get("filepath", "")) else "also loaded: ")
                     + f"{p.get('internal_api')} {p.get('version')} ({p.get('architecture') or '?'} "
                     f"kernels, {p.get('threading_layer') or '?'}, {p.get('num_threads')} threads)"
                     for p in pools)


#: The environment variables that make OpenBLAS run other kernels (``OPENBLAS_CORETYPE``) or
#: another blocking (``OPENBLAS_L2_SIZE``) than it would pick for this CPU; some shared machines
#: set them. The host-default BLAS row is measured in a child process without both.
OPENBLAS_FORCING = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")

#: the row of the BLAS peer as the host would choose it (measured in the child process)
HOST_BLAS = "numpy BLAS, host default"
#: the table with both BLAS rows (present only when OPENBLAS_FORCING variables are set)
BLAS_TABLE = "BLAS peer: forced and host-default kernels"


def _numpy_blas_pool() -> dict | None:
    """threadpoolctl's record of the BLAS numpy calls (None: no threadpoolctl or no BLAS)."""
    try:
        import threadpoolctl
    except ImportError:
        return None
    import numpy  # noqa: F401 - loads numpy's BLAS so threadpoolctl finds it
    pools = [p for p in threadpoolctl.threadpool_info() if p.get("user_api") == "blas"]
    pools.sort(key=lambda p: "numpy" not in str(p.get("filepath", "")))   # numpy's own first
    return pools[0] if pools else None


def blas_kernel() -> str | None:
    """The kernel set numpy's BLAS runs now (threadpoolctl's ``architecture``: ``SkylakeX``,
    ``Haswell``, …), or None when it cannot be read."""
    pool = _numpy_blas_pool()
    return (pool or {}).get("architecture") or None


def forced_blas(environ=None) -> dict:
    """The :data:`OPENBLAS_FORCING` variables set in ``environ`` (default: this process's)."""
    import os
    env = os.environ if environ is None else environ
    return {k: env[k] for k in OPENBLAS_FORCING if k in env}


def host_default_env(environ=None) -> dict:
    """A copy of ``environ`` (default: this process's) without OPENBLAS_CORETYPE and
    OPENBLAS_L2_SIZE — the environment of the child process that measures the BLAS the host
    would choose. ``environ`` itself is never changed."""
    import os
    env = dict(os.environ if environ is None else environ)
    for k in OPENBLAS_FORCING:
        env.pop(k, None)
    return env


def blas_warning(environ=None, kernel: str | None = None) -> str | None:
    """The warning ``labkit bench pcc`` prints when OPENBLAS_CORETYPE (or OPENBLAS_L2_SIZE)
    is set, naming the kernel in use; None when neither is."""
    forced = forced_blas(environ)
    if not forced:
        return None
    kernel = blas_kernel() if kernel is None else kernel
    what = ", ".join(f"{k}={v}" for k, v in forced.items())
    return (f"WARNING: {what} {'are' if len(forced) > 1 else 'is'} set: OpenBLAS runs its {kernel or '?'} kernels"
            + (" (forced by OPENBLAS_CORETYPE)" if "OPENBLAS_CORETYPE" in forced else "")
            + " — not necessarily what it picks for this CPU; the BLAS peer is measured again "
              "in a child process without " + " and ".join(OPENBLAS_FORCING)
            + ", and the target is judged against that host-default row")


def _child_main() -> None:
    """In the child process (``host_blas_child``): time the BLAS peer as the parent does and
    print one JSON line with the times, the kernel in use and a correctness check."""
    import os

    import numpy as np
    spec = json.loads(sys.argv[1])
    inp = make_inputs(spec["size"])
    X = inp.X
    n, l = X.shape
    with blas_threads(spec["threads"]) as pinned:
        res = bench.compare({"blas": (blas_pcc, (X,))}, repeat=spec["repeat"],
                            min_time=spec["min_time"], work=_flops(inp), unit="flop")
        info, arch = blas_info(), blas_kernel()
        R = blas_pcc(X)                       # a sample of pairs against numpy's corrcoef
    rng = np.random.default_rng(1)
    ij = rng.integers(0, n, (64, 2))
    err = max(abs(R[i, j] - np.corrcoef(X[i], X[j])[0, 1]) for i, j in ij)
    row = res.rows[0]
    print(json.dumps({"median_s": row["median_s"], "best_s": row["best_s"], "q1_s": row["q1_s"],
                      "q3_s": row["q3_s"], "compile_s": row["compile_s"], "loops": row["loops"],
                      "times": res.times["blas"], "architecture": arch, "blas": info,
                      "pinned": bool(pinned), "n": n, "l": l, "max_err": float(err),
                      "removed": [k for k in OPENBLAS_FORCING if k in spec["parent_env"]],
                      "child_env": {k: os.environ[k] for k in OPENBLAS_FORCING
                                    if k in os.environ}}))


def host_blas_child(size, threads: int, repeat: int = 5, min_time: float = 0.2,
                    timeout: float = 900, environ=None) -> dict:
    """Measure the BLAS peer (standardise + ``Z @ Z.T``) as the host would choose it: in a child
    process whose environment is this one's without OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE
    (:func:`host_default_env`; this process's environment is not changed), on the same inputs
    (``make_inputs(size)``), BLAS held to ``threads``, warm-up first, then the median of
    ``repeat`` wall-clock repeats as the parent's rows. Returns the child's JSON (times,
    ``architecture``, ``blas``, ``max_err`` of 64 pairs against numpy's corrcoef)."""
    import os
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    spec = {"size": size, "threads": int(threads), "repeat": int(repeat),
            "min_time": float(min_time), "parent_env": sorted(forced_blas(environ))}
    code = (f"import sys; sys.path.insert(0, {root!r}); "
            "from labkit.pcc._blas import _child_main; _child_main()")
    proc = subprocess.run([sys.executable, "-c", code, json.dumps(spec)], capture_output=True,
                          text=True, timeout=timeout, env=host_default_env(environ))
    if proc.returncode != 0:
        raise RuntimeError(f"the host-default BLAS child failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


@contextlib.contextmanager
def blas_threads(n):
    """BLAS held to ``n`` threads (threadpoolctl) inside the block; without threadpoolctl a
    no-op, and the benchmark label says so."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        yield False
        return
    with threadpool_limits(limits=int(n), user_api="blas"):
        yield True
