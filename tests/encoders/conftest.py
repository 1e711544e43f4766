"""Fixtures for encoder tests: a tiny laion_clap ``CLAP`` built from laion's own model code.

``import laion_clap`` downloads tokenizers at import time, so the fast tests import its
``clap_module`` package directly (as ``laion_clap/__init__`` does, via sys.path) and swap
two factories for tiny versions: ``RobertaModel.from_pretrained('roberta-base')`` returns a
1-layer random RoBERTa (hidden 768, which laion's text projection expects) and
``create_htsat_model`` returns a 4-stage HTSAT with 16 channels at 16 kHz. Everything
else (mel front end, Swin blocks, projections, embedding functions) is laion's code.
"""

from __future__ import annotations

import importlib.util
import os

import numpy as np
import pytest

TINY_AUDIO_CFG = dict(model_type="HTSAT", model_name="tiny", sample_rate=16000, audio_length=1024,
                      window_size=1024, hop_size=640, fmin=50, fmax=8000, class_num=10, mel_bins=64,
                      clip_samples=160000)


@pytest.fixture(scope="session")
def tiny_audio_cfg() -> dict:
    """laion ``audio_cfg`` of the tiny HTSAT (16 kHz, 10 s window, hop 640)."""
    return dict(TINY_AUDIO_CFG)


@pytest.fixture(scope="session")
def clap_module(tmp_path_factory):
    """laion_clap's ``clap_module`` package, imported without laion_clap's import-time downloads."""
    import sys

    spec = importlib.util.find_spec("laion_clap")
    assert spec is not None and spec.origin, "laion_clap is not installed"
    path = os.path.dirname(spec.origin)
    if path not in sys.path:
        sys.path.append(path)
    import clap_module

    return clap_module


@pytest.fixture
def build_tiny_laion(clap_module, monkeypatch):
    """``build(seed) -> laion CLAP`` (tiny, eval mode, random weights)."""
    import clap_module.model as cm
    import torch
    from clap_module.htsat import HTSAT_Swin_Transformer
    from transformers import RobertaConfig, RobertaModel

    class _Roberta:
        @staticmethod
        def from_pretrained(_name):
            return RobertaModel(RobertaConfig(vocab_size=120, hidden_size=768, num_hidden_layers=1,
                                              num_attention_heads=12, intermediate_size=256,
                                              max_position_embeddings=40, type_vocab_size=1,
                                              layer_norm_eps=1e-5, pad_token_id=1))

    def _htsat(audio_cfg, enable_fusion=False, fusion_type="None"):
        return HTSAT_Swin_Transformer(spec_size=128, patch_size=4, patch_stride=(4, 4),
                                      num_classes=audio_cfg.class_num, embed_dim=16, depths=[1, 1, 1, 1],
                                      num_heads=[1, 2, 4, 4], window_size=4, config=audio_cfg,
                                      enable_fusion=enable_fusion, fusion_type=fusion_type)

    monkeypatch.setattr(cm, "RobertaModel", _Roberta)
    monkeypatch.setattr(cm, "create_htsat_model", _htsat)
    text_cfg = dict(context_length=32, vocab_size=120, width=768, heads=12, layers=1, model_type="roberta")

    def build(seed: int = 0):
        torch.manual_seed(seed)
        return cm.CLAP(embed_dim=128, audio_cfg=dict(TINY_AUDIO_CFG), text_cfg=text_cfg,
                       joint_embed_shape=32).eval()

    return build


@pytest.fixture
def waves():
    rng = np.random.default_rng(0)
    return [(0.1 * rng.standard_normal(int(16000 * d))).astype(np.float32) for d in (2.0, 4.5, 10.0)]
