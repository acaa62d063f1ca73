"""One kernel at a time for one notebook: nbclient with an output cap that keeps the grader's
result line, an address-space limit, restart, and a probe that tells a stuck kernel."""
from __future__ import annotations

import os
import secrets
from pathlib import Path

from .build import _Plan
from .settings import MAX_CELL_OUTPUT, GradeSettings, _short

__all__: list[str] = []


def _make_client_class():
    from nbclient import NotebookClient

    class _Client(NotebookClient):
        """nbclient with a per-cell output cap that never drops the grader's own result line."""

        def __init__(self, *a, nonces=None, **kw):
            super().__init__(*a, **kw)
            self._nonces = nonces or {}
            self._sizes: dict[int, int] = {}
            self.truncated: set[int] = set()

        def output(self, outs, msg, display_id, cell_index):
            content = msg.get("content", {})
            text = content.get("text") if isinstance(content.get("text"), str) else None
            size = len(text) if text is not None else len(str(content.get("data", "")))
            nonce = self._nonces.get(cell_index)
            mine = nonce is not None and text is not None and nonce in text
            used = self._sizes.get(cell_index, 0)
            if not mine and used + size > MAX_CELL_OUTPUT:
                self.truncated.add(cell_index)
                return None
            self._sizes[cell_index] = used + (0 if mine else size)
            return super().output(outs, msg, display_id, cell_index)

    return _Client


class _Session:
    """One kernel at a time for one notebook, restartable."""

    def __init__(self, nb, plan: list[_Plan], workdir: Path, settings: GradeSettings):
        self.nb, self.plan, self.workdir, self.s = nb, plan, workdir, settings
        self.client = None
        self.restarts = 0
        self.last_reply: dict | None = None
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith(("LABKIT_", "JPY_", "NBGRADER_"))}
        # a fresh IPython profile per notebook: no startup files, nothing left for the next one
        self.env.update(LABKIT_GRADING="1", LABKIT_SEED=str(secrets.randbits(62)),
                        PYTHONDONTWRITEBYTECODE="1", MPLBACKEND="Agg",
                        IPYTHONDIR=str(workdir / ".ipython"))
        self.truncated: set[int] = set()

    def start(self) -> None:
        cls = _make_client_class()
        nonces = {i: p.nonce for i, p in enumerate(self.plan) if p.nonce}
        self.client = cls(self.nb, kernel_name="python3", timeout=int(self.s.cell_timeout),
                          allow_errors=True, interrupt_on_timeout=True,
                          error_on_timeout={"ename": "CellTimeoutError", "evalue": "timed out",
                                            "traceback": []},
                          iopub_timeout=2, startup_timeout=120, shutdown_kernel="immediate",
                          record_timing=False, nonces=nonces,
                          on_cell_executed=self._on_executed)
        self.client.create_kernel_manager()
        log = open(self.workdir / f"kernel-{self.restarts}.log", "wb")  # noqa: SIM115
        try:
            self.client.start_new_kernel(cwd=str(self.workdir), env=self.env, stdout=log,
                                         stderr=log)
        finally:
            log.close()
        self.client.start_new_kernel_client()
        self._limit_memory()

    def _limit_memory(self) -> None:
        if not self.s.memory_limit:
            return
        try:
            import resource
            pid = self.client.km.provisioner.process.pid
            lim = int(self.s.memory_limit)
            resource.prlimit(pid, resource.RLIMIT_AS, (lim, lim))
        except Exception:  # noqa: BLE001 - no prlimit (macOS) or no pid: run without the limit
            pass

    def kernel_log(self, n: int = 400) -> str:
        """The last ``n`` characters the current kernel wrote to stdout/stderr (crash clues)."""
        try:
            text = (self.workdir / f"kernel-{self.restarts}.log").read_text(errors="replace")
        except OSError:
            return ""
        lines = [ln for ln in text.splitlines() if ln.strip() and "without encryption" not in ln]
        return _short(" | ".join(lines), 10_000)[-n:]

    def _on_executed(self, cell, cell_index, execute_reply):
        self.last_reply = execute_reply

    def stop(self) -> None:
        if self.client is not None:
            try:
                self.truncated |= self.client.truncated
                self.client._cleanup_kernel()
            except Exception:  # noqa: BLE001 - already dead: nothing to clean
                pass
            self.client = None

    def run(self, index: int, timeout: float) -> tuple[str, str]:
        """Execute cell ``index``: returns (status, detail) with status ok|error|timeout|dead."""
        from nbclient.exceptions import DeadKernelError

        self.client.timeout = max(1, int(timeout + 0.999))
        self.last_reply = None
        cell = self.nb.cells[index]
        try:
            self.client.execute_cell(cell, index)
        except DeadKernelError:
            return "dead", "the kernel died"
        except Exception as e:  # noqa: BLE001 - nbclient/zmq trouble: treat as a dead kernel
            return "dead", f"{type(e).__name__}: {e}"
        reply = (self.last_reply or {}).get("content", {})
        if reply.get("status") == "error":
            if reply.get("ename") == "CellTimeoutError":
                return "timeout", f"no reply within {self.client.timeout} s"
            return "error", f"{reply.get('ename')}: {reply.get('evalue')}"
        return "ok", ""

    def responsive(self) -> bool:
        """After an interrupt: does the kernel run a trivial cell again?"""
        import nbformat

        probe = nbformat.v4.new_code_cell("pass")
        self.nb.cells.append(probe)
        try:
            status, _ = self.run(len(self.nb.cells) - 1, min(10.0, max(3.0, self.s.cell_timeout)))
        finally:
            self.nb.cells.pop()
        return status == "ok"
