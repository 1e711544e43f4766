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
"""

from __future__ import annotations

import atexit
import logging
import subprocess
import tempfile
import threading
from pathlib import Path

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
    """METEOR 1.5 as aac-metrics computes it, on this interpreter's one METEOR process.

    A process that dies mid-call is restarted once and the call repeated (each call is
    independent of the earlier ones).
    """
    try:
        return shared_process(env).score(candidates, mult_references)
    except MeteorProcessError as err:
        logger.warning("%s; retrying on a new METEOR process", err)
        return shared_process(env).score(candidates, mult_references)


def close_all() -> None:
    """Stop every METEOR process of this interpreter (also run at exit)."""
    with _GUARD:
        for proc in _PROCESSES.values():
            proc.close()
        _PROCESSES.clear()


atexit.register(close_all)
