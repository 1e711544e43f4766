"""CTranslate2 -> transformers Whisper: config from shapes, and the converted model against an
independent numpy forward pass that reads CTranslate2's fused weights directly."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from scipy.special import erf

from clapcap.encoders.ct2 import read_ct2_model
from clapcap.encoders.whisper_ct2 import SOURCE_FILE, ensure_whisper_cache


def _gelu(x):
    return 0.5 * x * (1.0 + erf(x / np.sqrt(2.0)))


def _ln(x, ct2, scope):
    mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * ct2.get(f"{scope}/gamma") + ct2.get(f"{scope}/beta")


def _lin(x, ct2, scope):
    return x @ ct2.get(f"{scope}/weight").T + ct2.get(f"{scope}/bias")


def _conv1d(x, w, b, stride):  # x (C_in, T), w (C_out, C_in, 3), padding 1
    xp = np.pad(x, ((0, 0), (1, 1)))
    t_out = (xp.shape[1] - 3) // stride + 1
    cols = np.stack([xp[:, k:k + stride * t_out:stride] for k in range(3)], axis=-1)  # (C_in, T_out, 3)
    return np.einsum("oik,itk->ot", w, cols) + b[:, None]


def _mha(q, k, v, heads, causal=False):  # (Tq, d), (Tk, d)
    d = q.shape[1] // heads
    out = []
    for h in range(heads):
        s = slice(h * d, (h + 1) * d)
        att = q[:, s] @ k[:, s].T / np.sqrt(d)
        if causal:
            att = att + np.triu(np.full(att.shape, -np.inf), 1)
        att = np.exp(att - att.max(-1, keepdims=True))
        out.append((att / att.sum(-1, keepdims=True)) @ v[:, s])
    return np.concatenate(out, axis=1)


class _F64:
    """CTranslate2 variables as float64 (the reference computes in double precision)."""

    def __init__(self, model):
        self.model = model

    def get(self, name):
        return self.model.get(name).astype(np.float64)


def reference_encoder(ct2, mel):
    """Whisper encoder from CTranslate2's weights (fused qkv), mel (n_mels, 3000) -> (1500, d)."""
    heads, d = int(ct2.model.scalar("encoder/num_heads")), ct2.get("encoder/conv1/bias").shape[0]
    x = _gelu(_conv1d(mel, ct2.get("encoder/conv1/weight"), ct2.get("encoder/conv1/bias"), 1))
    x = _gelu(_conv1d(x, ct2.get("encoder/conv2/weight"), ct2.get("encoder/conv2/bias"), 2)).T
    x = x + ct2.get("encoder/position_encodings/encodings")
    for i in range(4):
        p = f"encoder/layer_{i}"
        h = _lin(_ln(x, ct2, f"{p}/self_attention/layer_norm"), ct2, f"{p}/self_attention/linear_0")
        x = x + _lin(_mha(h[:, :d], h[:, d:2 * d], h[:, 2 * d:], heads), ct2, f"{p}/self_attention/linear_1")
        h = _gelu(_lin(_ln(x, ct2, f"{p}/ffn/layer_norm"), ct2, f"{p}/ffn/linear_0"))
        x = x + _lin(h, ct2, f"{p}/ffn/linear_1")
    return _ln(x, ct2, "encoder/layer_norm")


def reference_logits(ct2, tokens, enc):
    """Whisper decoder logits from CTranslate2's weights (fused self qkv, fused cross kv)."""
    heads, d = int(ct2.model.scalar("decoder/num_heads")), enc.shape[1]
    emb = ct2.get("decoder/embeddings/weight")
    x = emb[tokens] + ct2.get("decoder/position_encodings/encodings")[: len(tokens)]
    for i in range(4):
        p = f"decoder/layer_{i}"
        h = _lin(_ln(x, ct2, f"{p}/self_attention/layer_norm"), ct2, f"{p}/self_attention/linear_0")
        x = x + _lin(_mha(h[:, :d], h[:, d:2 * d], h[:, 2 * d:], heads, causal=True), ct2,
                     f"{p}/self_attention/linear_1")
        q = _lin(_ln(x, ct2, f"{p}/attention/layer_norm"), ct2, f"{p}/attention/linear_0")
        kv = _lin(enc, ct2, f"{p}/attention/linear_1")
        x = x + _lin(_mha(q, kv[:, :d], kv[:, d:], heads), ct2, f"{p}/attention/linear_2")
        x = x + _lin(_gelu(_lin(_ln(x, ct2, f"{p}/ffn/layer_norm"), ct2, f"{p}/ffn/linear_0")), ct2,
                     f"{p}/ffn/linear_1")
    return _ln(x, ct2, "decoder/layer_norm") @ ct2.get("decoder/projection/weight").T


@pytest.fixture(scope="module")
def ct2(ct2_dir):
    return _F64(read_ct2_model(ct2_dir / "model.bin"))


@pytest.fixture(scope="module")
def mel(whisper_loaded, tone_clip):
    _, fe, _ = whisper_loaded
    return fe(tone_clip(4.0, 16000), sampling_rate=16000, return_tensors="np").input_features[0].astype(np.float64)


def test_config_inferred_from_shapes(whisper_loaded):
    cfg = whisper_loaded[0].config
    assert (cfg.d_model, cfg.encoder_layers, cfg.decoder_layers) == (384, 4, 4)
    assert (cfg.encoder_attention_heads, cfg.decoder_attention_heads) == (6, 6)
    assert (cfg.encoder_ffn_dim, cfg.num_mel_bins, cfg.vocab_size) == (1536, 80, 51864)
    assert (cfg.max_source_positions, cfg.max_target_positions) == (1500, 448)
    assert (cfg.decoder_start_token_id, cfg.eos_token_id) == (50257, 50256)
    assert whisper_loaded[1].feature_size == 80


def test_encoder_matches_reference(whisper_loaded, ct2, mel):
    model = whisper_loaded[0]
    with torch.inference_mode():
        hf = model.get_encoder()(torch.from_numpy(mel[None]).float()).last_hidden_state[0].numpy()
    ref = reference_encoder(ct2, mel)
    assert hf.shape == ref.shape == (1500, 384)
    np.testing.assert_allclose(hf, ref, atol=1e-4, rtol=1e-4)  # measured: 1e-5


def test_decoder_logits_match_reference(whisper_loaded, ct2, mel):
    model = whisper_loaded[0]
    tokens = [50257, 50362, 440, 2068, 7586]  # <|startoftranscript|><|notimestamps|> The quick brown
    with torch.inference_mode():
        enc = model.get_encoder()(torch.from_numpy(mel[None]).float()).last_hidden_state
        hf = model(encoder_outputs=(enc,), decoder_input_ids=torch.tensor([tokens])).logits[0].numpy()
    ref = reference_logits(ct2, tokens, enc[0].numpy().astype(np.float64))
    np.testing.assert_allclose(hf, ref, atol=1e-3, rtol=1e-4)
    assert (hf.argmax(-1) == ref.argmax(-1)).all()


def test_cache_is_reused_and_rebuilt_on_another_source(ct2_dir, whisper_cfg, whisper_loaded):
    cache = ensure_whisper_cache(ct2_dir, whisper_cfg.whisper_cache)
    weights = cache / "model.safetensors"
    stamp = weights.stat().st_mtime_ns
    assert ensure_whisper_cache(ct2_dir, cache) == cache and weights.stat().st_mtime_ns == stamp
    record = json.loads((cache / SOURCE_FILE).read_text())
    assert set(record) == {"converter_version", "model_bin_sha256"}  # content only, no path
    (cache / SOURCE_FILE).write_text(json.dumps({**record, "model_bin_sha256": "0" * 64}))
    ensure_whisper_cache(ct2_dir, cache)
    assert json.loads((cache / SOURCE_FILE).read_text()) == record
    assert not list(cache.parent.glob(".*.tmp"))
