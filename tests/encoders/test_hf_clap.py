"""HF ClapModel backend: deterministic preprocessing, save/load, tiny config guards."""

import numpy as np
import pytest

from clapcap.clap.model import (
    TinyClapConfig,
    build_feature_extractor,
    build_tiny_clap,
    save_clap,
)
from clapcap.clap.preprocessing import ClapPreprocessing, clap_features
from clapcap.encoders.base import EncoderConfig
from clapcap.encoders.factory import create_encoder


@pytest.fixture(scope="module")
def encoder():
    return create_encoder(EncoderConfig(batch_size=2))


@pytest.fixture
def waves():
    rng = np.random.default_rng(0)
    return [(0.1 * rng.standard_normal(int(16000 * d))).astype(np.float32) for d in (2.0, 11.0, 3.5, 14.0)]


def test_embeddings_do_not_depend_on_batch_or_rng(encoder, waves):
    a = encoder.embed_audio(waves)
    np.random.seed(123)  # the extractor's random crop would use the global RNG
    b = encoder.embed_audio(waves[::-1])[::-1]
    one = np.concatenate([encoder.embed_audio([w]) for w in waves])
    assert a.shape == (4, 64) and a.dtype == np.float32
    np.testing.assert_allclose(a, b, atol=1e-5)
    np.testing.assert_allclose(a, one, atol=1e-5)
    t = encoder.embed_text(["a dog barks", "rain falls", "a dog barks"])
    np.testing.assert_allclose(t[0], t[2], atol=1e-6)


def test_texts_batched_by_length_come_back_in_input_order(encoder):
    texts = ["a dog barks loudly while rain falls on a tin roof and a car passes", "rain", "a dog barks",
             "music plays", "thunder rumbles far away over the hills tonight"]
    together = encoder.embed_text(texts)  # batches of 2, sorted by length inside the call
    alone = np.concatenate([encoder.embed_text([t]) for t in texts])
    np.testing.assert_allclose(together, alone, atol=1e-5)
    assert not np.allclose(together[0], together[1], atol=1e-3)  # rows differ, so order is checked


def test_text_tower_outputs_are_shared_by_encoders_with_the_same_tower(monkeypatch):
    import torch

    from clapcap.clap.preprocessing import tokenize
    from clapcap.encoders import hf_clap

    monkeypatch.setattr(hf_clap, "_TOWER_MEMO", {})
    texts = ["a dog barks", "rain falls on a roof", "a dog barks"]
    a = create_encoder(EncoderConfig(batch_size=2, tiny_seed=3))
    b = create_encoder(EncoderConfig(batch_size=2, tiny_seed=3))
    with torch.no_grad():  # b: same tower, another projection (a fine-tune with the tower frozen)
        b.model.text_projection.linear2.weight.copy_(b.model.text_projection.linear2.weight.flip(0))
    calls = []
    forward = b.model.text_model.forward
    monkeypatch.setattr(b.model.text_model, "forward", lambda *x, **k: (calls.append(1), forward(*x, **k))[1])
    ea = a.embed_text(texts)
    eb = b.embed_text(texts)
    assert calls == [] and len(hf_clap._TOWER_MEMO) == 1  # b read a's tower outputs
    with torch.inference_mode():
        want = b.model.get_text_features(**tokenize(b.tokenizer, texts)).numpy()
    np.testing.assert_allclose(eb, want, atol=1e-6)  # what get_text_features computes
    assert not np.allclose(ea, eb, atol=1e-3)
    c = create_encoder(EncoderConfig(batch_size=2, tiny_seed=4))  # another tower: its own entry
    c.embed_text(texts)
    assert len(hf_clap._TOWER_MEMO) == 2


def test_view_dumps_only_for_view_splits():
    from clapcap.encoders.config import EmbedParams

    cols = ["captions", "paraphrases_v1", "paraphrases_v2"]
    params = EmbedParams(splits=["train", "test"], caption_columns=cols, view_splits=["test"])
    assert params.columns_of("train") == ["captions"] and params.columns_of("test") == cols
    assert EmbedParams(caption_columns=cols).columns_of("train") == cols  # None: every split


def test_unfused_long_clip_is_cropped_deterministically():
    fe = build_feature_extractor(TinyClapConfig())
    rng = np.random.default_rng(1)
    long = rng.standard_normal(16000 * 14).astype(np.float32)
    head, _ = clap_features(fe, [long], ClapPreprocessing(crop="head"))
    first, _ = clap_features(fe, [long[:160000]], ClapPreprocessing(crop="head"))
    center, _ = clap_features(fe, [long], ClapPreprocessing(crop="center"))
    np.testing.assert_array_equal(head.numpy(), first.numpy())
    assert not np.allclose(head.numpy(), center.numpy())


def test_fusion_is_longer_flag_and_seeded_crops():
    from transformers import ClapFeatureExtractor

    fe = ClapFeatureExtractor(sampling_rate=16000, hop_length=640, max_length_s=4, frequency_max=8000,
                              truncation="fusion")
    rng = np.random.default_rng(2)
    short, long = rng.standard_normal(16000 * 2), rng.standard_normal(16000 * 9)
    prep = ClapPreprocessing(fusion=True, fusion_seed=7)
    state = np.random.get_state()
    f1, longer = clap_features(fe, [short, long], prep)
    assert longer.squeeze(1).tolist() == [False, True]  # HF would flag a random short clip when none is long
    f2, _ = clap_features(fe, [long], prep)
    np.testing.assert_array_equal(f1[1].numpy(), f2[0].numpy())  # crops independent of the batch
    assert f1.shape[1] == 4
    assert all((a == b).all() for a, b in zip(state[1:2], np.random.get_state()[1:2], strict=True))


def test_mel_floor_clamps_padding():
    fe = build_feature_extractor(TinyClapConfig())
    wave = np.zeros(16000 * 3, dtype=np.float32)
    wave[:100] = 0.5
    raw, _ = clap_features(fe, [wave], ClapPreprocessing())
    floored, _ = clap_features(fe, [wave], ClapPreprocessing(mel_floor_db=-50.0))
    assert raw.min() < -90 and floored.min() == pytest.approx(-50.0)


def test_save_load_roundtrip_and_fusion_mismatch(tmp_path, waves):
    cfg = TinyClapConfig()
    model, tok, fe = build_tiny_clap(cfg, ["dog", "barks", "rain"], seed=3)
    save_clap(model, tok, fe, tmp_path / "clap", preprocessing={"mel_floor_db": -50.0})
    enc = create_encoder(EncoderConfig(checkpoint=str(tmp_path / "clap")))
    assert enc.prep.mel_floor_db == -50.0
    assert "token_type_ids" not in tok(["a dog"])
    from clapcap.encoders.hf_clap import HFClapEncoder

    direct = HFClapEncoder(model, tok, fe, ClapPreprocessing(mel_floor_db=-50.0))
    np.testing.assert_allclose(enc.embed_audio(waves[:2]), direct.embed_audio(waves[:2]), atol=1e-5)
    np.testing.assert_allclose(enc.embed_text(["a dog barks"]), direct.embed_text(["a dog barks"]), atol=1e-6)
    assert enc.describe()["preprocessing"]["truncation"] == "rand_trunc"
    with pytest.raises(ValueError, match="enable_fusion=True but the model config has enable_fusion=False"):
        create_encoder(EncoderConfig(checkpoint=str(tmp_path / "clap"), enable_fusion=True))


def test_tiny_config_guards():
    with pytest.raises(ValueError, match="window_size"):
        TinyClapConfig(window_size=8).validate()
    with pytest.raises(ValueError, match="hop_length"):
        TinyClapConfig(hop_length=160).validate()
    with pytest.raises(ValueError, match="differ in length"):
        TinyClapConfig(depths=[1, 1]).validate()
