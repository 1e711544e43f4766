"""laion_clap -> HF conversion, proven against laion's own model code (fast, tiny variant).

The full-size check through ``laion_clap.CLAP_Module`` and both embedding pipelines is
``test_laion_pipeline.py`` (slow).
"""

import numpy as np
import pytest
import torch

from clapcap.clap.preprocessing import ClapPreprocessing
from clapcap.data.dump import EmbeddingDump
from clapcap.encoders.convert import (
    ConversionError,
    convert_laion_state_dict,
    convert_state_dict,
    infer_config,
)
from clapcap.encoders.hf_clap import HFClapEncoder
from clapcap.retrieval.identity import DIFFERENT, SAME, checkpoint_identity

IDS = torch.tensor([[0, 5, 7, 9, 2, 1, 1], [0, 11, 2, 1, 1, 1, 1], [0, 4, 5, 6, 7, 8, 2]])


def laion_repeatpad(wave: np.ndarray, n: int) -> np.ndarray:
    """laion_clap's ``repeatpad`` filling (training/data.py get_audio_features)."""
    wave = np.tile(wave, n // len(wave))
    return np.pad(wave, (0, n - len(wave)))


def _laion_embed(model, waves, n):
    with torch.no_grad():
        audio = model.get_audio_embedding([{"waveform": torch.from_numpy(laion_repeatpad(w, n)),
                                            "longer": torch.tensor([False])} for w in waves])
        text = model.get_text_embedding({"input_ids": IDS, "attention_mask": (IDS != 1).long()})
    return audio.numpy(), text.numpy()


def _hf_embed(hf, waves, c):
    from transformers import ClapFeatureExtractor

    fe = ClapFeatureExtractor(feature_size=c["mel_bins"], sampling_rate=c["sample_rate"], hop_length=c["hop_size"],
                              max_length_s=c["clip_samples"] // c["sample_rate"], fft_window_size=c["window_size"],
                              frequency_min=c["fmin"], frequency_max=c["fmax"], truncation="rand_trunc")
    audio = HFClapEncoder(hf, None, fe, ClapPreprocessing()).embed_audio(waves)
    with torch.no_grad():
        text = hf.get_text_features(input_ids=IDS, attention_mask=(IDS != 1).long()).numpy()
    return audio, text


def _dump(audio, text, pipeline):
    return EmbeddingDump(audio, text, np.arange(len(text)) % len(audio), [f"c{i}" for i in range(len(audio))],
                         [f"t{i}" for i in range(len(text))], {"pipeline": pipeline})


def test_converted_tiny_laion_matches_laion_code(build_tiny_laion, waves, tiny_audio_cfg):
    laion = build_tiny_laion(seed=0)
    sd = {"module." + k: v for k, v in laion.state_dict().items()}
    hf = convert_laion_state_dict(sd, spec_size=128)  # no shifted block in stage 0: not inferable
    cfg = hf.config.audio_config
    assert (cfg.depths, cfg.window_size, cfg.spec_size, cfg.patch_embeds_hidden_size) == ([1, 1, 1, 1], 4, 128, 16)
    assert hf.config.text_config.layer_norm_eps == 1e-5
    la, lt = _laion_embed(laion, waves, tiny_audio_cfg["clip_samples"])
    ha, ht = _hf_embed(hf, waves, tiny_audio_cfg)
    report = checkpoint_identity(_dump(la, lt, "laion_clap"), _dump(ha, ht, "hf"))
    assert report["verdict"] == SAME and report["cross_pipeline_comparable"]
    assert report["audio_cosine"]["min"] > 0.9999 and report["text_cosine"]["min"] > 0.9999
    assert report["similarity"]["max_abs_diff"] < 1e-3

    other = build_tiny_laion(seed=1)
    oa, ot = _laion_embed(other, waves, tiny_audio_cfg["clip_samples"])
    report = checkpoint_identity(_dump(oa, ot, "laion_clap"), _dump(ha, ht, "hf"))
    assert report["verdict"] == DIFFERENT and not report["cross_pipeline_comparable"]


def test_conversion_renames_splits_qkv_and_drops_laion_only_keys(build_tiny_laion):
    sd = build_tiny_laion(seed=0).state_dict()
    out = convert_state_dict(sd)
    qkv = sd["audio_branch.layers.0.blocks.0.attn.qkv.weight"]
    base = "audio_model.audio_encoder.layers.0.blocks.0.attention.self."
    torch.testing.assert_close(torch.cat([out[base + n + ".weight"] for n in ("query", "key", "value")]), qkv)
    assert "text_projection.linear2.weight" in out and "audio_projection.linear1.bias" in out
    assert not any(k.startswith(("text_transform", "audio_transform")) or "logmel" in k or "tscam" in k for k in out)
    assert infer_config(sd).audio_config.num_attention_heads == [1, 2, 4, 4]


def test_conversion_error_lists_missing_keys(build_tiny_laion):
    sd = build_tiny_laion(seed=0).state_dict()
    del sd["audio_projection.2.weight"]
    with pytest.raises(ConversionError, match="missing keys.*audio_projection.linear2.weight"):
        convert_laion_state_dict(sd, spec_size=128)
