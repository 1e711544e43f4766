"""A real Prefect server and process workers on 127.0.0.1, for the distributed tests.

Every process is started in its own session (process group) and stopped by its PID:
terminate, wait, terminate again (a worker exits on its second SIGTERM), then the whole
process tree is killed in ``close`` so nothing outlives a test.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import psutil

PREFECT = [sys.executable, "-m", "prefect"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _tree(pid: int) -> list[psutil.Process]:
    try:
        proc = psutil.Process(pid)
        return [proc, *proc.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def kill_tree(pid: int) -> list[int]:
    """SIGKILL ``pid`` and every descendant (a machine dying); returns the killed PIDs."""
    procs = _tree(pid)
    for proc in procs:
        try:
            proc.send_signal(signal.SIGKILL)
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(procs, timeout=10)
    return [p.pid for p in procs]


class Cluster:
    """One Prefect server plus named workers; ``env`` is what every process (and the test) uses."""

    def __init__(self, home: Path, env: dict[str, str]) -> None:
        self.home = home
        self.port = free_port()
        self.api_url = f"http://127.0.0.1:{self.port}/api"
        self.env = {**os.environ, **env, "PREFECT_HOME": str(home / "prefect"),
                    "PREFECT_API_URL": self.api_url, "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
        self.procs: dict[str, subprocess.Popen] = {}
        self.logs: dict[str, Path] = {}
        self.server_seconds = 0.0

    def _start(self, name: str, args: list[str], cwd: Path) -> subprocess.Popen:
        self.logs[name] = self.home / f"{name}.log"
        with self.logs[name].open("w") as log:
            proc = subprocess.Popen(args, cwd=cwd, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        self.procs[name] = proc
        return proc

    def start_server(self, timeout_s: float = 120) -> float:
        """Start the server; returns the seconds until ``/api/health`` answered."""
        start = time.monotonic()
        env = {k: v for k, v in self.env.items() if k != "PREFECT_API_URL"}
        self.logs["server"] = self.home / "server.log"
        with self.logs["server"].open("w") as log:
            self.procs["server"] = subprocess.Popen(
                [*PREFECT, "server", "start", "--host", "127.0.0.1", "--port", str(self.port)],
                cwd=self.home, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        while time.monotonic() - start < timeout_s:
            if self.procs["server"].poll() is not None:
                raise RuntimeError(f"prefect server exited: {self.logs['server'].read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{self.api_url}/health", timeout=2) as resp:
                    if resp.status == 200:
                        self.server_seconds = time.monotonic() - start
                        return self.server_seconds
            except OSError:
                time.sleep(0.5)
        raise TimeoutError(f"prefect server not healthy after {timeout_s} s")

    def cli(self, *args: str, cwd: Path | None = None, timeout: float = 180) -> str:
        """Run one ``prefect`` command against the server; returns its output (raises on failure)."""
        out = subprocess.run([*PREFECT, *args], cwd=cwd or self.home, env=self.env, capture_output=True,
                             text=True, timeout=timeout)
        if out.returncode != 0:
            raise RuntimeError(f"prefect {' '.join(args)} failed:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}")
        return out.stdout

    def start_worker(self, name: str, pool: str, cwd: Path, limit: int = 2) -> subprocess.Popen:
        return self._start(name, [*PREFECT, "worker", "start", "--pool", pool, "--name", name,
                                  "--limit", str(limit), "--type", "process"], cwd)

    def flow_runs_of(self, worker: str) -> set[str]:
        """Flow run ids the worker ``worker`` started (from its log): those it submitted, less
        those whose submission the server aborted (another worker had taken the run)."""
        lines = self.logs[worker].read_text(errors="replace").splitlines()

        def ids(marker: str) -> set[str]:
            return {line.split(marker, 1)[1][:36] for line in lines if marker in line}

        return ids(f"Worker '{worker}' submitting flow run '") - ids("Aborted submission of flow run '")

    def stop(self, name: str) -> None:
        """Terminate, wait, terminate again, then kill what is left of the process tree."""
        proc = self.procs.get(name)
        if proc is None or proc.poll() is not None:
            return
        tree = _tree(proc.pid)
        for wait_s in (3, 15):  # a worker exits on its second SIGTERM
            proc.terminate()
            try:
                proc.wait(timeout=wait_s)
                break
            except subprocess.TimeoutExpired:
                continue
        for child in tree:
            if child.is_running():
                kill_tree(child.pid)

    def close(self) -> None:
        for name in [n for n in self.procs if n != "server"] + ["server"]:
            try:
                self.stop(name)
            finally:
                proc = self.procs.get(name)
                if proc is not None:
                    try:
                        os.killpg(proc.pid, signal.SIGKILL)
                    except (ProcessLookupError, PermissionError):
                        pass
