"""labkit._mpi: the one-rank stand-in, the communicator or a clear error, and that both labs'
MPI entry points use it (their 2-rank mpiexec runs are tested in tests/labs/)."""
from __future__ import annotations

import argparse
import sys

import pytest

from labkit import _mpi


def test_serial_comm_is_one_rank():
    c = _mpi.SerialComm()
    assert (c.Get_rank(), c.Get_size()) == (0, 1)
    obj = {"a": 1}
    assert c.gather(obj, root=0) == [obj] and c.allgather(obj) == [obj]
    assert c.bcast(obj, root=0) is obj
    assert c.Barrier() is None


def test_ranks_of_a_given_comm():
    c = _mpi.SerialComm()
    assert _mpi.ranks(c) == (c, 0, 1)


@pytest.mark.parametrize("env, n", [({}, 1), ({"PMI_SIZE": "2"}, 2), ({"OMPI_COMM_WORLD_SIZE": "4"}, 4),
                                    ({"PMI_SIZE": "junk"}, 1), ({"PMI_SIZE": "0"}, 1)])
def test_launched_ranks(env, n):
    assert _mpi.launched_ranks(env) == n


def _hide_mpi4py(monkeypatch):
    monkeypatch.setitem(sys.modules, "mpi4py", None)   # `from mpi4py import MPI` → ImportError
    for var in _mpi._SIZE_VARS:
        monkeypatch.delenv(var, raising=False)


def test_without_mpi4py_one_process_runs_serially(monkeypatch):
    _hide_mpi4py(monkeypatch)
    comm, rank, size = _mpi.ranks()
    assert isinstance(comm, _mpi.SerialComm) and (rank, size) == (0, 1)


def test_without_mpi4py_under_mpiexec_is_a_clear_error(monkeypatch, capsys):
    _hide_mpi4py(monkeypatch)
    monkeypatch.setenv("PMI_SIZE", "2")
    with pytest.raises(RuntimeError, match=r"one of 2 MPI ranks.*mpi4py does not import.*pip install"):
        _mpi.world()
    p = argparse.ArgumentParser(prog="python -m labkit.x")
    with pytest.raises(SystemExit) as e:
        _mpi.cli_ranks(p)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("python -m labkit.x: error: started as one of 2 MPI ranks")
    assert "Traceback" not in err


def test_with_mpi4py_it_is_comm_world():
    # in a child process: MPI_Init stays out of the test process
    import subprocess
    pytest.importorskip("mpi4py", reason="mpi4py not installed (pip install -e .[mpi])")
    code = ("from mpi4py import MPI; from labkit._mpi import ranks; "
            "c, r, s = ranks(); assert c is MPI.COMM_WORLD and (r, s) == (0, 1), (c, r, s)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_both_labs_use_the_shared_setup():
    from labkit.pcc import mpi as pcc_mpi
    assert pcc_mpi.SerialComm is _mpi.SerialComm and pcc_mpi.world is _mpi.world
    import labkit.epistasis.__main__ as ep_main
    assert ep_main.cli_ranks is _mpi.cli_ranks


def test_epistasis_cli_one_process(monkeypatch, capsys):
    import json

    import labkit.epistasis.__main__ as ep_main
    _hide_mpi4py(monkeypatch)                        # one process: the SerialComm path
    assert ep_main.main(["--snps", "20", "--individuals", "64", "--order", "2", "--top", "3",
                         "--threads", "1", "--check"]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["ranks"] == 1 and out["same_as_one_process"] is True
    assert out["ranges"] == [[0, 19]] and sum(out["work"]) == out["combinations"] == 190
