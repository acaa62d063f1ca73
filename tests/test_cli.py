"""The `labkit` console script and the Makefile's entry points."""
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from labkit.cli import main

ROOT = Path(__file__).resolve().parent.parent


def test_help_and_version(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for cmd in ("doctor", "bench", "release", "grade"):
        assert cmd in out
    assert main(["--version"]) == 0
    assert "labkit 0.1.0" in capsys.readouterr().out


def test_unknown_command(capsys):
    assert main(["frobnicate"]) == 2
    assert "unknown command" in capsys.readouterr().err


def test_console_script_doctor_and_release_check():
    exe = Path(sys.executable).with_name("labkit")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "labkit"]
    r = subprocess.run(cmd + ["doctor"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "avx2" in r.stdout.lower()
    r = subprocess.run(cmd + ["release", "--check"], capture_output=True, text=True, timeout=120,
                       cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_lab_serves_lesson_00():
    """`make lab` starts JupyterLab on 127.0.0.1 with lesson 00 (fetched, then stopped)."""
    port, token = _free_port(), "labkit-test"
    args = f"--no-browser --IdentityProvider.token={token} --ServerApp.root_dir={ROOT}"
    # LABKIT_WARM=0: no background compile of every lab left running through the rest of the
    # suite (labkit warm itself: tests/test_warm.py)
    proc = subprocess.Popen(["make", "-s", "lab", f"PORT={port}", f"LAB_ARGS={args}"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True, env=dict(os.environ, LABKIT_WARM="0"))
    try:
        url = f"http://127.0.0.1:{port}/api/contents/notebooks/00_tools.ipynb?token={token}"
        deadline, last = time.time() + 120, None
        while time.time() < deadline:
            try:
                with urllib.request.urlopen(url, timeout=5) as r:
                    body = r.read().decode()
                    break
            except Exception as e:  # noqa: BLE001 - server still starting
                last = e
                if proc.poll() is not None:
                    pytest.fail(f"make lab exited: {proc.stdout.read()}")
                time.sleep(1)
        else:
            pytest.fail(f"JupyterLab did not answer on port {port}: {last}")
        assert '"name": "00_tools.ipynb"' in body or '"name":"00_tools.ipynb"' in body
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/lab?token={token}", timeout=10) as r:
            assert r.status == 200 and "JupyterLab" in r.read().decode()
    finally:
        os.killpg(proc.pid, 15)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
