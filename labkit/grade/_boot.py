"""``python -m labkit.grade._boot <read fd> <write fd> [MODULE ...]``: labkit's check worker
with extra exercise modules (``labkit grade --exercise-module``) imported first, so they are
registered before the worker binds its references and snapshots labkit."""
from __future__ import annotations

import importlib
import sys


def main() -> int:
    rfd, wfd, mods = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
    del sys.argv[3:]
    for m in mods:
        try:
            importlib.import_module(m)
        except Exception:  # noqa: BLE001 - the worker then reports the exercise as unknown
            pass
    from labkit.check import worker
    worker._read_fd, worker._write_fd = rfd, wfd
    return worker.main()


if __name__ == "__main__":
    sys.exit(main())
