"""Gemma 3 as the ClipCap decoder (``decoder: causal``): a tiny randomly initialised
``Gemma3ForCausalLM`` in the real GGUF format, converted by clapcap.captioning.gemma3, trains,
generates and stops on ``<eos>`` through clapcap's own captioning code (the Llama stand-in
for SmolLM2 is tests/captioning/test_pretrained_decoder.py)."""

from __future__ import annotations

import pytest
import torch
from caption_fixtures import make_dump, tiny_train
from lm_checks import saved_without_lm
from tiny_gguf import write_tiny_gemma3_gguf

from clapcap.captioning.config import CaptionerConfig, DecodingConfig
from clapcap.captioning.gemma3 import convert_gemma3
from clapcap.captioning.generation import generate_captions
from clapcap.captioning.model import create_captioner, frozen_lm_dir, load_captioner
from clapcap.captioning.tokenizer import encode_captions, load_pretrained_tokenizer
from clapcap.captioning.train import train_captioner

CAPTIONS = ["a dog barks twice", "rain falls on the roof", "a cat meows", "a bell rings twice"]


@pytest.fixture(scope="module")
def gemma_dir(tmp_path_factory):
    """A converted tiny Gemma 3 folder (2 layers, hidden 32) with its Gemma-format tokenizer."""
    root = tmp_path_factory.mktemp("tiny_gemma3")
    write_tiny_gemma3_gguf(root / "tiny.gguf", CAPTIONS * 3, merges=80)
    return convert_gemma3(root / "gemma3", source=root / "tiny.gguf")


def causal(folder, **kw) -> CaptionerConfig:
    return CaptionerConfig(decoder="causal", pretrained_dir=str(folder), tokenizer="pretrained", prefix_length=4,
                           max_caption_tokens=24, in_dim=12, **kw)


def test_gemma3_decoder_trains_a_step(gemma_dir):
    tok = load_pretrained_tokenizer(gemma_dir)
    torch.manual_seed(0)
    model = create_captioner(causal(gemma_dir), tok)
    assert type(model.lm).__name__ == "Gemma3ForCausalLM" and model.projection.mlp[-1].out_features == 4 * 32
    model.set_lm_trainable(False)
    x = torch.randn(4, 12)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    lm_before = {k: v.clone() for k, v in model.lm.state_dict().items()}
    losses = []
    for _ in range(2):
        loss = model.loss_on_captions(x, CAPTIONS)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert all(torch.isfinite(torch.tensor(losses))) and losses[1] < losses[0]
    assert all(torch.equal(v, model.lm.state_dict()[k]) for k, v in lm_before.items())  # stage 1: LM frozen


def test_gemma3_decoder_loads_in_bfloat16(gemma_dir):
    tok = load_pretrained_tokenizer(gemma_dir)
    model = create_captioner(causal(gemma_dir, lm_dtype="bfloat16"), tok)
    assert model.lm.get_input_embeddings().weight.dtype == torch.bfloat16
    loss = model.loss_on_captions(torch.randn(3, 12), CAPTIONS[:3])
    assert loss.dtype == torch.float32 and torch.isfinite(loss)


def test_learnt_captions_are_generated_and_stop_on_eos(gemma_dir):
    """With the LM trained too, each of two clips' captions is learnt; greedy generation
    through clapcap's code gives them back, and the LM stops on <eos> before max_new_tokens."""
    tok = load_pretrained_tokenizer(gemma_dir)
    torch.manual_seed(0)
    model = create_captioner(causal(gemma_dir), tok)
    model.set_lm_trainable(True)
    x, caps = torch.randn(2, 12), CAPTIONS[:2]
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    model.train()
    for _ in range(150):
        loss = model.loss_on_captions(x, caps)
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss.item() < 0.05
    assert generate_captions(model, x, DecodingConfig(max_new_tokens=20), stop_at_line_end=False) == caps
    with torch.no_grad():
        prefix = model.prefix(x)
        out = model.lm.generate(inputs_embeds=prefix, attention_mask=torch.ones(prefix.shape[:2], dtype=torch.long),
                                max_new_tokens=20, do_sample=False, eos_token_id=tok.eos_token_id,
                                pad_token_id=tok.pad_token_id)
    ids, _ = encode_captions(tok, [caps[1]], 24)  # the longer caption, then <eos>
    assert out.shape[1] == ids.shape[1] < 20
    assert out[1].tolist() == ids[0].tolist() and tok.bos_token_id not in out.tolist()[0]


def test_checkpoint_leaves_out_the_untrained_gemma(gemma_dir, tmp_path):
    tok = load_pretrained_tokenizer(gemma_dir)
    torch.manual_seed(1)
    model = create_captioner(causal(gemma_dir), tok)
    model.set_lm_trainable(False)
    loaded = saved_without_lm(model, tmp_path / "s1", gemma_dir)
    assert loaded.tokenizer.eos_token_id == 1 and loaded.tokenizer.pad_token_id == 0


def test_lora_on_gemma_starts_as_the_identity(gemma_dir):
    tok = load_pretrained_tokenizer(gemma_dir)
    torch.manual_seed(0)
    plain = create_captioner(causal(gemma_dir), tok).eval()
    torch.manual_seed(0)
    lora = create_captioner(causal(gemma_dir, lora_rank=4), tok).eval()
    x = torch.randn(3, 12)
    with torch.no_grad():
        assert torch.equal(plain.loss_on_captions(x, CAPTIONS[:3]), lora.loss_on_captions(x, CAPTIONS[:3]))
    lora.set_lm_trainable(True)
    assert len([n for n, p in lora.lm.named_parameters() if p.requires_grad]) == 2 * 2 * 2  # q, v; A, B; 2 layers


def test_stage1_run_of_gemma_keeps_it_frozen(gemma_dir, tiny_corpus, tmp_path):
    dump = make_dump(tiny_corpus, tmp_path / "dump.npz", dim=12)
    cfg = tiny_train(stages=[1], lm_pretrain_epochs=0, captions_per_clip=1, batch_size=16)
    res = train_captioner(causal(gemma_dir), cfg, dump=dump, dataset_dir=tiny_corpus, out_dir=tmp_path / "run",
                          progress=False)
    assert res["checkpoint"].endswith("stage1/best") and frozen_lm_dir(res["checkpoint"]) == str(gemma_dir)
    history = res["stages"]["1"]["history"]
    assert history[0]["train_loss"] > 0 and history[-1]["train_loss"] < history[0]["train_loss"]


def test_prefix_bos_puts_the_lms_bos_before_the_prefix(gemma_dir, tmp_path):
    """prefix_bos: the LM's own <bos> embedding leads the prefix in the loss and in generation,
    the loss is the LM's on [<bos>, prefix, caption] with only the caption scored, and a saved
    captioner keeps the option."""
    tok = load_pretrained_tokenizer(gemma_dir)
    torch.manual_seed(0)
    model = create_captioner(causal(gemma_dir, prefix_bos=True), tok).eval()
    x = torch.randn(2, 12)
    with torch.no_grad():
        prefix = model.prefix(x)
        bos = model.lm.get_input_embeddings()(torch.tensor([tok.bos_token_id]))
        assert prefix.shape == (2, 1 + 4, 32) and torch.equal(prefix[:, 0], bos.expand(2, -1))
        assert torch.equal(prefix[:, 1:], model.projection(x))
        ids, mask = encode_captions(tok, CAPTIONS[:2], 24)
        tokens = model.lm.get_input_embeddings()(ids)
        labels = torch.cat([torch.full((2, 5), -100), ids.masked_fill(mask == 0, -100)], dim=1)
        expect = model.lm(inputs_embeds=torch.cat([prefix, tokens], dim=1),
                          attention_mask=torch.cat([torch.ones(2, 5, dtype=mask.dtype), mask], dim=1),
                          labels=labels).loss
        assert torch.allclose(model.loss_on_captions(x, CAPTIONS[:2]), expect)
        torch.manual_seed(0)
        plain = create_captioner(causal(gemma_dir), tok).eval()
        assert plain.prefix(x).shape == (2, 4, 32)
        assert not torch.allclose(plain.loss_on_captions(x, CAPTIONS[:2]), expect)
    model.train()
    model.set_lm_trainable(True)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    for _ in range(150):
        loss = model.loss_on_captions(x, CAPTIONS[:2])
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert generate_captions(model, x, DecodingConfig(max_new_tokens=20), stop_at_line_end=False) == CAPTIONS[:2]
    model.save(tmp_path / "bos")
    assert load_captioner(tmp_path / "bos").cfg.prefix_bos


def test_prefix_bos_is_for_a_pretrained_decoder_only_lm():
    with pytest.raises(ValueError, match="prefix_bos"):
        CaptionerConfig(decoder="gpt2", prefix_bos=True)
    with pytest.raises(ValueError, match="prefix_bos"):
        CaptionerConfig(decoder="t5", pretrained_dir="models/t5", prefix_bos=True)
