"""Shared fixtures: offline environment, temporary stores, a tiny synthetic corpus."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# Offline and quiet for every test, before any heavy library is imported.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("DVC_NO_ANALYTICS", "1")
os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO_ROOT = Path(__file__).resolve().parents[1]

# Property-based tests (hypothesis). "ci", the default, is derandomized: every run, here and
# in CI, tries the same generated cases, writes no example database and prints a blob that
# reproduces a failure. "explore" draws new random cases and ten times as many
# (HYPOTHESIS_PROFILE=explore pytest tests/retrieval/test_metric_properties.py ...).
settings.register_profile("ci", derandomize=True, database=None, deadline=None, print_blob=True,
                          max_examples=250, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("explore", deadline=None, print_blob=True, max_examples=1000,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(scope="session", autouse=True)
def _aac_cache(tmp_path_factory):
    """Keep aac-metrics' linked jars in a temporary cache, not the user's home (every test)."""
    old = os.environ.get("CLAPCAP_AAC_CACHE")
    os.environ["CLAPCAP_AAC_CACHE"] = str(tmp_path_factory.mktemp("aac_cache"))
    yield
    if old is None:
        os.environ.pop("CLAPCAP_AAC_CACHE", None)
    else:
        os.environ["CLAPCAP_AAC_CACHE"] = old


@pytest.fixture(scope="session")
def _mlflow_session_store(tmp_path_factory) -> str:
    # One SQLite store per test session: creating the schema costs seconds, so tests share
    # it and isolate themselves by experiment and model names.
    folder = tmp_path_factory.mktemp("mlruns")
    return f"sqlite:///{folder / 'mlflow.db'}"


@pytest.fixture
def mlflow_uri(_mlflow_session_store, monkeypatch) -> str:
    """A temporary SQLite MLflow store, set as MLFLOW_TRACKING_URI for the test."""
    monkeypatch.setenv("MLFLOW_TRACKING_URI", _mlflow_session_store)
    return _mlflow_session_store


def _tiny_corpus_params(out: str | Path):
    from clapcap.data.config import DataParams
    from clapcap.data.synth import SynthConfig

    return DataParams(out_dir=str(out), synthetic=SynthConfig(n_clips=40, seed=1, min_duration_s=2.0,
                                                              max_duration_s=4.0, music_fraction=0.2))


@pytest.fixture(scope="session")
def tiny_corpus(tmp_path_factory) -> Path:
    """A prepared 40-clip synthetic corpus (2-4 s clips); returns its folder."""
    from clapcap.data.prepare import prepare_data

    out = tmp_path_factory.mktemp("tiny_corpus")
    prepare_data(_tiny_corpus_params(out), progress=False)
    return out


@pytest.fixture
def tiny_corpus_params(tiny_corpus):
    """The ``data`` params ``tiny_corpus`` was built from (a fresh copy per test)."""
    return _tiny_corpus_params(tiny_corpus)


def _write_wav(path: Path, freq: float = 440.0, seconds: float = 1.0, sr: int = 16000, *,
              subtype: str = "PCM_16", nan_at: int | None = None) -> Path:
    """A short sine WAV; ``nan_at`` plants a NaN sample (needs a float ``subtype``)."""
    import numpy as np
    import soundfile as sf

    path.parent.mkdir(parents=True, exist_ok=True)
    wave = (0.3 * np.sin(2 * np.pi * freq * np.arange(int(seconds * sr)) / sr)).astype(np.float32)
    if nan_at is not None:
        wave[nan_at] = np.nan
    sf.write(str(path), wave, sr, subtype=subtype, format="WAV")
    return path


@pytest.fixture
def write_wav():
    """The WAV writer ``write_wav(path, freq=440, seconds=1, sr=16000, subtype="PCM_16", nan_at=None)``."""
    return _write_wav


@pytest.fixture
def make_clotho():
    """Factory: ``make(root, n=3)`` writes a tiny Clotho-format dataset (``captions.csv`` with
    ``file_name, caption_1..caption_5`` and ``audio/clip<i>.wav``, 1 s sines); returns ``root``."""
    import csv

    def make(root: Path, n: int = 3) -> Path:
        root.mkdir(parents=True, exist_ok=True)
        with (root / "captions.csv").open("w", newline="") as fh:
            out = csv.writer(fh)
            out.writerow(["file_name"] + [f"caption_{i}" for i in range(1, 6)])
            for k in range(n):
                _write_wav(root / "audio" / f"clip{k}.wav", freq=220.0 * (k + 1))
                out.writerow([f"clip{k}.wav"] + [f"tone number {k} variant {j}" for j in range(5)])
        return root

    return make


@pytest.fixture
def fake_openai():
    """The suite's one fake OpenAI-compatible chat server (tests/support/fake_openai.py)."""
    from fake_openai import FakeOpenAI

    server = FakeOpenAI()
    yield server
    server.close()


@pytest.fixture
def closed_port_url() -> str:
    """``http://127.0.0.1:PORT/v1`` where nothing listens (a port bound, read, then closed)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


@pytest.fixture
def sigkill_at(tmp_path):
    """``run(kind, params, at=..., n=...) -> log``: run a stage in a subprocess
    (tests/crash_driver.py, one torch thread), wait until it reaches the pause point ``at``
    number ``n``, SIGKILL it there and return its log. Fails if it exits on its own."""

    def run(kind: str, params: dict, *, at: str, n: int, timeout: float = 120.0) -> str:
        marker, log = tmp_path / f".{kind}-{at}-{n}.frozen", tmp_path / f"{kind}-{at}-{n}.log"
        spec = {"kind": kind, "params": params, "at": at, "n": n, "marker": str(marker)}
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(REPO_ROOT / "src"),
                                                                      os.environ.get("PYTHONPATH")) if p)}
        with log.open("w") as fh:
            proc = subprocess.Popen([sys.executable, str(REPO_ROOT / "tests" / "crash_driver.py"), json.dumps(spec)],
                                    stdout=fh, stderr=subprocess.STDOUT, env=env)
            try:
                deadline = time.monotonic() + timeout
                while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
                    time.sleep(0.05)
                assert marker.exists(), f"{kind} never reached {at} {n} (exit {proc.poll()}):\n{log.read_text()}"
                os.kill(proc.pid, signal.SIGKILL)
            finally:
                if proc.poll() is None:
                    proc.kill()
                proc.wait(timeout=30)
        assert proc.returncode == -signal.SIGKILL, log.read_text()
        return log.read_text()

    return run


@pytest.fixture
def collapse_fit(monkeypatch):
    """``collapse_fit(on=True)``: from now on ``clapcap.clap.train.fit`` zeroes the audio
    projection after training (constant audio embeddings, every clip ties with every other:
    a collapsed model, for CLAP and RobustCLAP, which both train through ``fit``);
    ``collapse_fit(False)`` restores the real ``fit``."""
    import torch

    import clapcap.clap.train as clap

    real_fit = clap.fit

    def fit_then_collapse(model, **kw):
        history = real_fit(model, **kw)
        with torch.no_grad():
            for p in model.audio_projection.parameters():
                p.zero_()
        return history

    def collapse(on: bool = True) -> None:  # every family trains through clapcap.clap.train.train
        monkeypatch.setattr(clap, "fit", fit_then_collapse if on else real_fit)

    return collapse


@pytest.fixture
def one_torch_thread():
    """One intra-op torch thread for the test (as the SIGKILL driver uses), restored after:
    runs compared bit for bit must use the same thread count."""
    from threads import one_torch_thread as one_thread

    with one_thread():
        yield
