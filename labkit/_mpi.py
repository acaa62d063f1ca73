"""The MPI setup the labs' multi-rank entry points share (``python -m labkit.epistasis``,
``labkit.pcc.mpi``): mpi4py's ``COMM_WORLD``, or a one-rank stand-in when mpi4py is absent.

- ``world()``: the communicator; a clear error, not ranks that each think they are alone, when
  the process was started by ``mpiexec -n R`` (R > 1) but mpi4py or its MPI library cannot load.
- ``ranks(comm=None)``: ``(comm, rank, size)``, ``comm`` defaulting to ``world()``;
  ``cli_ranks(parser)`` the same for a command line, that error as ``parser``'s exit message.
- ``SerialComm``: the one-rank communicator (the calls the labs make: rank, size, gather,
  allgather, bcast, Barrier).

How the work is split (tile-id or first-SNP ranges) and merged stays in each lab.
"""
from __future__ import annotations

import os

__all__ = ["SerialComm", "world", "ranks", "cli_ranks", "launched_ranks"]

#: environment variables in which MPI launchers (MPICH/Hydra, Open MPI, MVAPICH) give the job size
_SIZE_VARS = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MV2_COMM_WORLD_SIZE")


class SerialComm:
    """Stand-in for an MPI communicator with one rank (when mpi4py is absent)."""

    def Get_rank(self):
        """Always rank 0."""
        return 0

    def Get_size(self):
        """Always one rank."""
        return 1

    def gather(self, obj, root=0):
        """Gather of one rank: a one-element list."""
        return [obj]

    def allgather(self, obj):
        """All-gather of one rank: a one-element list."""
        return [obj]

    def bcast(self, obj, root=0):
        """Broadcast of one rank: the object itself."""
        return obj

    def Barrier(self):
        """Nothing to wait for."""


def launched_ranks(environ=None) -> int:
    """The number of ranks an MPI launcher started this job with (1 when none did)."""
    env = os.environ if environ is None else environ
    for var in _SIZE_VARS:
        try:
            return max(1, int(env[var]))
        except (KeyError, ValueError):
            continue
    return 1


def world():
    """mpi4py's COMM_WORLD if mpi4py imports, else a one-rank SerialComm — unless a launcher
    started several ranks, which would each run the whole job alone: then RuntimeError."""
    try:
        from mpi4py import MPI
    except ImportError as e:
        n = launched_ranks()
        if n > 1:
            raise RuntimeError(
                f"started as one of {n} MPI ranks, but mpi4py does not import ({e}); every rank "
                "would run the whole job alone. Install it (pip install -e .[mpi]) against the "
                "MPI that mpiexec belongs to, or run without mpiexec") from e
        return SerialComm()
    return MPI.COMM_WORLD


def ranks(comm=None):
    """``(comm, rank, size)`` of ``comm`` (default: ``world()``)."""
    comm = world() if comm is None else comm
    return comm, int(comm.Get_rank()), int(comm.Get_size())


def cli_ranks(parser):
    """``ranks()`` for an argparse command line: world()'s error exits with status 2 and the
    message alone (no traceback), in ``parser``'s ``prog: error: …`` wording."""
    try:
        return ranks()
    except RuntimeError as e:
        parser.exit(2, f"{parser.prog}: error: {e}\n")
