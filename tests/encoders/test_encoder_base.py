"""Encoder interface: deterministic crop, boundary checks, factory."""

import numpy as np
import pytest

from clapcap.data.audio import crop_wave
from clapcap.encoders.base import EncoderConfig, check_texts, check_waves
from clapcap.encoders.factory import create_encoder


def test_crop_wave_head_center_and_short():
    w = np.arange(10, dtype=np.float32)
    assert crop_wave(w, 4, "head").tolist() == [0, 1, 2, 3]
    assert crop_wave(w, 4, "center").tolist() == [3, 4, 5, 6]
    assert crop_wave(w, 20).tolist() == w.tolist()
    with pytest.raises(ValueError, match="unknown crop mode"):
        crop_wave(w, 4, "random")
    with pytest.raises(ValueError, match="mono 1-D"):
        crop_wave(np.zeros((2, 4)), 4)


def test_check_waves_and_texts_name_the_bad_item():
    with pytest.raises(ValueError, match="waveform 1: contains NaN"):
        check_waves([np.zeros(4), np.array([0.0, np.nan])])
    with pytest.raises(ValueError, match="waveform 0: expected a non-empty 1-D"):
        check_waves([np.zeros(0)])
    with pytest.raises(ValueError, match="single 1-D array"):
        check_waves(np.zeros(4))
    with pytest.raises(ValueError, match="caption 1: expected str, found int"):
        check_texts(["a", 3])
    with pytest.raises(ValueError, match="found a single str"):
        check_texts("a dog")


def test_create_encoder_rejects_unknown_backend():
    with pytest.raises(ValueError, match="unknown encoder backend 'x'"):
        create_encoder(EncoderConfig(backend="x"))  # type: ignore[arg-type]


def test_config_sections_are_strict(tmp_path):
    from clapcap.clap.config import TrainClapParams
    from clapcap.config import ConfigError, load_section
    from clapcap.encoders.config import EmbedParams, IdentityParams

    p = tmp_path / "params.yaml"
    p.write_text("train_clap:\n  optim: {epochs: 2}\n  model: {spec_size: 128}\n"
                 "embed:\n  encoders:\n    tiny: {backend: hf_clap, checkpoint: ''}\n"
                 "checkpoint_identity: {max_clips: 2}\n")
    assert load_section(TrainClapParams, "train_clap", p).model.spec_size == 128
    assert load_section(EmbedParams, "embed", p).encoders["tiny"].backend == "hf_clap"
    assert load_section(IdentityParams, "checkpoint_identity", p).max_clips == 2
    p.write_text("train_clap:\n  epoch: 2\n")
    with pytest.raises(ConfigError, match="unknown key.*train_clap.epoch"):
        load_section(TrainClapParams, "train_clap", p)
    p.write_text("embed:\n  encoders:\n    tiny: {backend: nope}\n")
    with pytest.raises(ConfigError, match="backend"):
        load_section(EmbedParams, "embed", p)
