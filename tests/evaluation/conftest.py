"""Fixtures for the evaluation tests: an offline aac-metrics cache and an empty model cache."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def aac_env(tmp_path_factory):
    """aac-metrics Java tools linked from pycocoevalcap into a temporary cache."""
    from clapcap.evaluation.aac_assets import setup_offline

    return setup_offline(tmp_path_factory.mktemp("aac_cache"))


@pytest.fixture
def no_models(tmp_path, monkeypatch):
    """Empty Hugging Face / FENSE caches, so model-based metrics are unavailable."""
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf"))
    monkeypatch.setenv("SENTENCE_TRANSFORMERS_HOME", str(tmp_path / "st"))
    monkeypatch.setenv("FENSE_DATA", str(tmp_path / "fense"))
