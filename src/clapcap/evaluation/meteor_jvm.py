"""METEOR 1.5 through one Java process per Python process.

aac-metrics' :func:`aac_metrics.functional.meteor.meteor` starts a JVM and loads METEOR's
62 MB paraphrase table on every call: 6-13 s on 2 cores, whatever the number of captions.
A captioning stage scores val and test for every run it trains, so most of a stage's time
went into restarting Java. aac-metrics has no way to keep the process (a missing feature),
so this module keeps one, hand-written, and changes nothing else:

- the command line is aac-metrics' own (``-stdio -l en -norm``, ``-Xmx2G``, the US locale);
- each candidate goes in as aac-metrics' own ``SCORE ||| refs ||| candidate`` line (its
  ``_encode_cand_and_refs``), answered by one statistics line;
- the ``EVAL ||| stats ||| ...`` line then answers one score per candidate and the corpus
  score, exactly as in aac-metrics.

METEOR's stdio mode computes each ``EVAL`` from the statistics on that line alone, so a
call's scores do not depend on earlier calls. ``tests/evaluation/test_meteor_jvm.py`` checks
equality with aac-metrics' ``meteor`` to the last digit, over several calls in a row.

The process is started on first use, reused by every later call with the same Java and
cache, restarted if it died, and closed at interpreter exit.

Across processes: :func:`serving` runs one METEOR process behind a 127.0.0.1 socket (JSON
lines), and a process whose ``$CLAPCAP_METEOR_SERVER`` names it scores there. ``make repro``
starts one for the whole build (:mod:`clapcap.repro`), so the captioning stages, each its own
process, stop paying the 13-s Java start one by one. Without the variable, or when the server
does not answer, scoring falls back to the process's own METEOR process: same values.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import socket
import socketserver
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from clapcap.evaluation.aac_assets import METEOR_JAR, AacEnv

logger = logging.getLogger(__name__)

JAVA_MAX_MEMORY = "2G"  # aac-metrics' default


class MeteorProcessError(RuntimeError):
    """The METEOR Java process ended or answered something that is not a score."""


def meteor_command(env: AacEnv, java_max_memory: str = JAVA_MAX_MEMORY) -> list[str]:
    """aac-metrics' METEOR command line for language ``en`` (default params and weights)."""
    return [env.java_path, "-Duser.country=US", "-Duser.language=en", "-jar", f"-Xmx{java_max_memory}",
            str(Path(env.cache_path) / METEOR_JAR), "-", "-", "-stdio", "-l", "en", "-norm"]


class MeteorProcess:
    """One running ``meteor-1.5.jar -stdio``; :meth:`score` may be called any number of times."""

    def __init__(self, env: AacEnv, java_max_memory: str = JAVA_MAX_MEMORY) -> None:
        self.command = meteor_command(env, java_max_memory)
        self._stderr = tempfile.TemporaryFile()  # a pipe could fill up and block the JVM
        self._proc = subprocess.Popen(self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=self._stderr)
        self._lock = threading.Lock()
        self.calls = 0

    @property
    def alive(self) -> bool:
        return self._proc.poll() is None

    def _stderr_tail(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read().decode(errors="replace")[-2000:]

    def _readline(self) -> str:
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline()
        if not line:
            raise MeteorProcessError(f"METEOR process ended (exit code {self._proc.poll()}); "
                                     f"stderr: {self._stderr_tail()!r}")
        return line.decode().strip()

    def _write(self, data: bytes) -> None:
        assert self._proc.stdin is not None
        try:
            self._proc.stdin.write(data)
            self._proc.stdin.flush()
        except BrokenPipeError as err:
            raise MeteorProcessError(f"METEOR process ended; stderr: {self._stderr_tail()!r}") from err

    def score(self, candidates: list[str], mult_references: list[list[str]]) -> tuple[float, list[float]]:
        """The corpus METEOR and one METEOR per candidate (aac-metrics' values).

        Raises:
            ValueError: when the lists differ in length or are empty.
            MeteorProcessError: when the process died or answered a non-number.
        """
        from aac_metrics.functional.meteor import _encode_cand_and_refs

        if len(candidates) != len(mult_references) or not candidates:
            raise ValueError(f"METEOR: expected as many candidates as reference lists (> 0), found "
                             f"{len(candidates)} and {len(mult_references)}")
        with self._lock:
            try:
                eval_line = "EVAL"
                for cand, refs in zip(candidates, mult_references, strict=True):
                    self._write(_encode_cand_and_refs(cand, refs))
                    eval_line += f" ||| {self._readline()}"
                self._write(f"{eval_line}\n".encode())
                try:
                    sents = [float(self._readline()) for _ in candidates]
                    corpus = float(self._readline())
                except ValueError as err:
                    raise MeteorProcessError(f"METEOR answered a non-number: {err}") from err
            except MeteorProcessError:
                self._proc.kill()  # out of step with its stream: never reused
                raise
            self.calls += 1
        return corpus, sents

    def close(self) -> None:
        if self._proc.stdin is not None and not self._proc.stdin.closed:
            try:
                self._proc.stdin.close()
            except BrokenPipeError:
                pass
        if self.alive:
            self._proc.kill()
        self._proc.wait()
        self._stderr.close()


_PROCESSES: dict[tuple[str, ...], MeteorProcess] = {}
_GUARD = threading.Lock()

# ``host:port`` of a METEOR server (:func:`serve`) shared by several processes: the stages
# that ``make repro`` runs side by side then pay the Java start once for the whole build.
SERVER_ENV = "CLAPCAP_METEOR_SERVER"


def shared_process(env: AacEnv) -> MeteorProcess:
    """This interpreter's METEOR process for ``env`` (started, or restarted if it ended)."""
    key = tuple(meteor_command(env))
    with _GUARD:
        proc = _PROCESSES.get(key)
        if proc is None or not proc.alive:
            if proc is not None:
                logger.warning("METEOR process ended; starting a new one")
                proc.close()
            proc = _PROCESSES[key] = MeteorProcess(env)
        return proc


def meteor(candidates: list[str], mult_references: list[list[str]], env: AacEnv) -> tuple[float, list[float]]:
    """METEOR 1.5 as aac-metrics computes it: on the METEOR server named by
    ``$CLAPCAP_METEOR_SERVER`` when one answers, else on this interpreter's one METEOR process.

    A process that dies mid-call is restarted once and the call repeated (each call is
    independent of the earlier ones). A server that cannot be reached is logged and skipped.
    """
    address = os.environ.get(SERVER_ENV)
    if address:
        try:
            return score_remote(address, candidates, mult_references, env)
        except (OSError, MeteorProcessError, ValueError) as err:
            logger.warning("METEOR server %s unusable (%s); scoring in this process", address, err)
    try:
        return shared_process(env).score(candidates, mult_references)
    except MeteorProcessError as err:
        logger.warning("%s; retrying on a new METEOR process", err)
        return shared_process(env).score(candidates, mult_references)


def _send(sock: socket.socket, obj: dict) -> None:
    sock.sendall(json.dumps(obj).encode() + b"\n")


def _receive(reader: Any) -> dict:
    line = reader.readline()
    if not line:
        raise MeteorProcessError("METEOR server closed the connection")
    return json.loads(line)


def score_remote(address: str, candidates: list[str], mult_references: list[list[str]],
                 env: AacEnv) -> tuple[float, list[float]]:
    """Score on a METEOR server (:func:`serve`) at ``host:port``. The server must run the same
    METEOR command (Java, jar) as ``env`` would here, or the call is refused.

    Raises:
        OSError: when the server cannot be reached; MeteorProcessError / ValueError: on a
            refused or failed call (the server's message).
    """
    host, _, port = address.rpartition(":")
    with socket.create_connection((host, int(port)), timeout=600) as sock, sock.makefile("rb") as reader:
        _send(sock, {"command": meteor_command(env), "candidates": candidates, "references": mult_references})
        answer = _receive(reader)
    if "error" in answer:
        raise MeteorProcessError(f"METEOR server: {answer['error']}")
    return float(answer["corpus"]), [float(x) for x in answer["sentences"]]


class _Handler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        server: MeteorServer = self.server  # type: ignore[assignment]
        for line in self.rfile:
            try:
                req = json.loads(line)
                if req.get("command") != server.process.command:
                    raise ValueError(f"this server runs {server.process.command}, not {req.get('command')}")
                corpus, sents = server.score(req["candidates"], req["references"])
                answer: dict[str, Any] = {"corpus": corpus, "sentences": sents}
            except (ValueError, KeyError, MeteorProcessError) as err:
                answer = {"error": str(err)}
            self.wfile.write(json.dumps(answer).encode() + b"\n")
            self.wfile.flush()


class MeteorServer(socketserver.ThreadingTCPServer):
    """One METEOR process served on 127.0.0.1 to other processes, one call at a time.

    Floats go back through JSON, which writes Python's shortest round-trip repr: the client
    reads the very doubles the process answered.
    """

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, env: AacEnv, port: int = 0) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.env = env
        self.process = MeteorProcess(env)

    @property
    def address(self) -> str:
        host, port = self.server_address[:2]
        return f"{host}:{port}"

    def score(self, candidates: list[str], mult_references: list[list[str]]) -> tuple[float, list[float]]:
        try:
            return self.process.score(candidates, mult_references)
        except MeteorProcessError:
            self.process.close()
            self.process = MeteorProcess(self.env)
            return self.process.score(candidates, mult_references)

    def server_close(self) -> None:
        super().server_close()
        self.process.close()


@contextlib.contextmanager
def serving(env: AacEnv | None = None) -> Iterator[MeteorServer]:
    """Serve METEOR on a free 127.0.0.1 port in a background thread while the block runs."""
    from clapcap.evaluation.aac_assets import setup_offline

    server = MeteorServer(env or setup_offline())
    thread = threading.Thread(target=server.serve_forever, name="meteor-server", daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def close_all() -> None:
    """Stop every METEOR process of this interpreter (also run at exit)."""
    with _GUARD:
        for proc in _PROCESSES.values():
            proc.close()
        _PROCESSES.clear()


atexit.register(close_all)
