"""Shared fixtures: offline environment, temporary stores, a tiny synthetic corpus."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# Offline and quiet for every test, before any heavy library is imported.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("DVC_NO_ANALYTICS", "1")
os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO_ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def mlflow_uri(tmp_path, monkeypatch) -> str:
    """A temporary SQLite MLflow store, set as MLFLOW_TRACKING_URI for the test."""
    uri = f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}"
    (tmp_path / "mlruns").mkdir()
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    return uri


@pytest.fixture(scope="session")
def tiny_corpus(tmp_path_factory) -> Path:
    """A prepared 40-clip synthetic corpus (2-4 s clips); returns its folder."""
    from clapcap.data.prepare import DataParams, prepare_data
    from clapcap.data.synth import SynthConfig

    out = tmp_path_factory.mktemp("tiny_corpus")
    params = DataParams(out_dir=str(out), synthetic=SynthConfig(n_clips=40, seed=1, min_duration_s=2.0,
                                                                max_duration_s=4.0, music_fraction=0.2))
    prepare_data(params, progress=False)
    return out
