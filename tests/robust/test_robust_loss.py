"""The multi-view loss: reference values, masking, schedule, gradient into the text tower."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from clapcap.robust.loss import MultiViewLossConfig, clip_loss, multiview_loss, schedule_factors


def _reference_clip(audio, text, sa, st):
    """Independent CLIP loss: explicit per-row log-softmax, both directions."""
    a = audio / audio.norm(dim=1, keepdim=True)
    t = text / text.norm(dim=1, keepdim=True)
    n = a.shape[0]
    t2a = sum(-torch.log_softmax(math.exp(st) * (t[i] @ a.T), 0)[i] for i in range(n)) / n
    a2t = sum(-torch.log_softmax(math.exp(sa) * (a[i] @ t.T), 0)[i] for i in range(n)) / n
    return (t2a + a2t) / 2


def _emb(seed, n=6, d=8):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, d, generator=g)


def test_clip_loss_matches_reference():
    a, t = _emb(0), _emb(1)
    sa, st = torch.tensor(math.log(10.0)), torch.tensor(math.log(20.0))
    assert torch.allclose(clip_loss(a, t, sa, st), _reference_clip(a, t, math.log(10.0), math.log(20.0)))


@pytest.mark.parametrize("cfg_kw,factors", [
    ({"w_view1": 0.0, "w_view2": 0.0, "w_align": 0.0}, {"view1": 1.0, "view2": 1.0}),
    ({}, {"view1": 0.0, "view2": 0.0}),
])
def test_equals_plain_clip_loss_without_views(cfg_kw, factors):
    a, c, v1, v2 = _emb(0), _emb(1), _emb(2), _emb(3)
    s = torch.tensor(math.log(1 / 0.07))
    cfg = MultiViewLossConfig(**cfg_kw)
    loss, parts = multiview_loss(a, c, {"view1": (v1, None), "view2": (v2, None)}, s, s, cfg, factors)
    assert torch.equal(loss, clip_loss(a, c, s, s))
    assert math.isclose(parts["clip"], float(_reference_clip(a, c, float(s), float(s))), rel_tol=1e-6)


def test_view_terms_and_masks():
    a, c, v1 = _emb(0), _emb(1), _emb(2)
    s = torch.tensor(2.0)
    cfg = MultiViewLossConfig(w_clip=0.0, w_view1=1.0, w_align=0.0)
    mask = torch.tensor([True, True, False, True, False, True])
    loss, parts = multiview_loss(a, c, {"view1": (v1, mask)}, s, s, cfg, {"view1": 1.0})
    assert torch.allclose(loss, _reference_clip(a[mask], v1[mask], 2.0, 2.0))
    cos = MultiViewLossConfig(w_clip=0.0, w_view1=0.0, w_align=1.0, align="cosine")
    loss, _ = multiview_loss(a, c, {"view1": (c * 3.0, None)}, s, s, cos, {"view1": 1.0})
    assert float(loss) == pytest.approx(0.0, abs=1e-6)  # a view equal to its caption costs nothing
    with pytest.raises(ValueError, match="unknown view"):
        multiview_loss(a, c, {"view3": (v1, None)}, s, s, cfg, {"view3": 1.0})


def test_progressive_schedule():
    cfg = MultiViewLossConfig(view1_start_epoch=0, view2_start_epoch=2)
    assert schedule_factors(0, cfg) == {"view1": 1.0, "view2": 0.0}
    assert schedule_factors(2.0, cfg) == {"view1": 1.0, "view2": 1.0}
    ramp = MultiViewLossConfig(view1_start_epoch=0, view2_start_epoch=1, ramp_epochs=2)
    assert schedule_factors(2.0, ramp) == {"view1": 1.0, "view2": 0.5}


def test_gradient_reaches_text_tower():
    from clapcap.clap.model import TinyClapConfig, build_tiny_clap
    from clapcap.clap.preprocessing import ClapPreprocessing, clap_features, tokenize

    texts = ["a loud beep", "a soft hum", "a bell twice", "a deep drum"]
    views = ["a booming bleep", "a faint murmur", "a gong in a pair", "a bassy thud"]
    vocab = sorted({w for t in texts + views for w in t.split()})
    model, tok, fe = build_tiny_clap(TinyClapConfig(), vocab, seed=0)
    rng = np.random.default_rng(0)
    feats, longer = clap_features(fe, [rng.standard_normal(16000).astype(np.float32) * 0.1 for _ in texts],
                                  ClapPreprocessing(mel_floor_db=-50.0))
    audio = model.get_audio_features(input_features=feats, is_longer=longer)
    cap = model.get_text_features(**tokenize(tok, texts))
    v2 = model.get_text_features(**tokenize(tok, views))
    cfg = MultiViewLossConfig(w_clip=0.0)  # only the view-2 terms: the text tower must still learn
    loss, parts = multiview_loss(audio, cap, {"view2": (v2, None)}, model.logit_scale_a, model.logit_scale_t,
                                 cfg, {"view2": 1.0})
    loss.backward()
    # With the views switched off it is the synthetic CLAP's own training loss.
    from clapcap.clap.train import symmetric_contrastive_loss

    batch = {"input_features": feats, "is_longer": longer, **tokenize(tok, texts)}
    plain, _ = multiview_loss(audio, cap, {"view2": (v2, None)}, model.logit_scale_a, model.logit_scale_t,
                              cfg, {"view2": 0.0})
    model.eval()  # no dropout: both losses see the same embeddings
    with torch.no_grad():
        a_eval = model.get_audio_features(input_features=feats, is_longer=longer)
        c_eval = model.get_text_features(**tokenize(tok, texts))
        clip_only, _ = multiview_loss(a_eval, c_eval, {}, model.logit_scale_a, model.logit_scale_t,
                                      MultiViewLossConfig(), {})
        assert torch.allclose(clip_only, symmetric_contrastive_loss(model, batch), atol=1e-6)
    assert float(plain.detach()) == 0.0  # w_clip=0 and the view off: nothing left
    assert parts["view2"] > 0 and parts["align2"] > 0
    emb = model.text_model.embeddings.word_embeddings.weight.grad
    view_only = tok.convert_tokens_to_ids(["booming", "murmur", "gong", "thud"])
    assert emb is not None and all(emb[i].abs().sum() > 0 for i in view_only)
    assert model.text_projection.linear1.weight.grad.abs().sum() > 0
    assert model.audio_projection.linear1.weight.grad.abs().sum() > 0
