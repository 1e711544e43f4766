"""Fixtures for the evaluation tests: an offline aac-metrics cache and an empty model cache."""

from __future__ import annotations

import os

import pytest


@pytest.fixture(scope="session", autouse=True)
def _aac_cache(tmp_path_factory):
    """Keep aac-metrics' linked jars in a temporary cache, not the user's home."""
    old = os.environ.get("CLAPCAP_AAC_CACHE")
    os.environ["CLAPCAP_AAC_CACHE"] = str(tmp_path_factory.mktemp("aac_default"))
    yield
    if old is None:
        os.environ.pop("CLAPCAP_AAC_CACHE", None)
    else:
        os.environ["CLAPCAP_AAC_CACHE"] = old


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
