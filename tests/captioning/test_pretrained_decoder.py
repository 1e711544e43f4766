"""A pretrained decoder-only LM (``decoder: causal``) as the ClipCap decoder: bfloat16 weights,
checkpoints without the never-trained LM, stage 1 only, one caption per clip per epoch, and
the study's per-LM seeds. A tiny Llama folder stands in for SmolLM2 (same class, same layout)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from caption_fixtures import make_dump, tiny_train
from lm_checks import saved_without_lm

from clapcap.captioning.config import CaptionerConfig, TrainConfig
from clapcap.captioning.data import CaptionSplit
from clapcap.captioning.model import create_captioner, frozen_lm_dir, load_captioner
from clapcap.captioning.tokenizer import build_tokenizer, load_pretrained_tokenizer
from clapcap.captioning.train import train_captioner
from clapcap.experiments.captioning.config import CaptioningParams
from clapcap.experiments.captioning.study import lm_specs, run_configs

CAPTIONS = ["A loud high-pitched beep sounds.", "A soft series of clicks plays.",
            "There is a quiet hum.", "A strong bell rings twice."] * 5


@pytest.fixture(autouse=True)
def _one_thread():
    torch.set_num_threads(1)


@pytest.fixture(scope="module")
def llama_dir(tmp_path_factory):
    """A tiny pretrained-format LlamaForCausalLM folder with its own tokenizer (eos = pad)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    folder = tmp_path_factory.mktemp("tiny_llama")
    tok = build_tokenizer("bpe", CAPTIONS, vocab_size=120)
    tok.save_pretrained(str(folder))
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=128,
                      eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id, tie_word_embeddings=True)
    LlamaForCausalLM(cfg).save_pretrained(str(folder))
    return folder


def causal(folder, **kw) -> CaptionerConfig:
    return CaptionerConfig(decoder="causal", pretrained_dir=str(folder), tokenizer="pretrained", prefix_length=4,
                           max_caption_tokens=24, in_dim=12, **kw)


def test_causal_decoder_loads_in_bfloat16_and_its_loss_is_finite(llama_dir):
    tok = load_pretrained_tokenizer(llama_dir)
    model = create_captioner(causal(llama_dir, lm_dtype="bfloat16"), tok)
    assert type(model.lm).__name__ == "LlamaForCausalLM"
    assert model.lm.get_input_embeddings().weight.dtype == torch.bfloat16
    assert model.projection.mlp[0].weight.dtype == torch.float32  # the trained part stays float32
    loss = model.loss_on_captions(torch.randn(3, 12), CAPTIONS[:3])
    assert loss.dtype == torch.float32 and torch.isfinite(loss)
    loss.backward()
    assert model.projection.mlp[0].weight.grad is not None


def test_causal_decoder_needs_a_folder_and_a_known_dtype(llama_dir):
    tok = load_pretrained_tokenizer(llama_dir)
    with pytest.raises(ValueError, match="pretrained_dir must be set"):
        create_captioner(CaptionerConfig(decoder="causal", in_dim=12), tok)
    with pytest.raises(ValueError, match="dtype"):
        create_captioner(dataclasses.replace(causal(llama_dir), lm_dtype="float16"), tok)


def test_checkpoint_leaves_out_an_untrained_pretrained_lm(llama_dir, tmp_path):
    tok = load_pretrained_tokenizer(llama_dir)
    torch.manual_seed(1)
    model = create_captioner(causal(llama_dir), tok)
    model.set_lm_trainable(False)
    saved_without_lm(model, tmp_path / "s1", llama_dir)  # the LM from its folder, the rest from weights.pt
    # Once the LM trains (stage 2), it is part of every checkpoint.
    model.set_lm_trainable(True)
    with torch.no_grad():
        next(model.lm.parameters()).add_(1.0)
    model.save(tmp_path / "s2")
    assert frozen_lm_dir(tmp_path / "s2") is None
    assert torch.equal(next(load_captioner(tmp_path / "s2").lm.parameters()), next(model.lm.parameters()))


def test_a_checkpoint_without_lm_is_refused_for_a_small_decoder(llama_dir, tmp_path):
    tok = load_pretrained_tokenizer(llama_dir)
    model = create_captioner(causal(llama_dir), tok)
    small = create_captioner(CaptionerConfig(hidden=32, heads=2, layers=1, in_dim=12, n_positions=64,
                                             max_caption_tokens=24, prefix_length=4), tok)
    with pytest.raises(RuntimeError, match="not pretrained"):
        small.load_weights(model.weights())
    with pytest.raises(RuntimeError, match="missing"):
        model.load_weights({k: v for k, v in model.weights().items() if "mlp.0" not in k})


def test_pairs_per_clip_cycle_through_every_caption():
    split = CaptionSplit("train", ["a", "b"], np.zeros((2, 3), np.float32), [["a0", "a1", "a2"], ["b0", "b1"]])
    assert split.pairs()[1] == ["a0", "a1", "a2", "b0", "b1"]
    seen = [split.pairs(1, offset=k)[1] for k in range(3)]
    assert seen == [["a0", "b0"], ["a1", "b1"], ["a2", "b0"]]
    rows, caps = split.pairs(2, offset=1)
    assert rows.tolist() == [0, 0, 1, 1] and caps == ["a1", "a2", "b1", "b0"]
    with pytest.raises(ValueError, match="per_clip"):
        split.pairs(-1)
    with pytest.raises(ValueError, match="captions_per_clip"):
        TrainConfig(captions_per_clip=-1)


def test_stage1_run_of_a_pretrained_lm_keeps_it_frozen_and_small(llama_dir, tiny_corpus, tmp_path):
    dump = make_dump(tiny_corpus, tmp_path / "dump.npz", dim=12)
    cfg = tiny_train(stages=[1], lm_pretrain_epochs=0, captions_per_clip=1, batch_size=16)
    res = train_captioner(causal(llama_dir, lm_dtype="bfloat16"), cfg, dump=dump, dataset_dir=tiny_corpus,
                          out_dir=tmp_path / "run", progress=False)
    assert res["checkpoint"].endswith("stage1/best") and not (tmp_path / "run" / "lm_pretrain").exists()
    assert frozen_lm_dir(res["checkpoint"]) == str(llama_dir)
    from transformers import AutoModelForCausalLM

    original = AutoModelForCausalLM.from_pretrained(str(llama_dir), dtype=torch.bfloat16)
    trained = load_captioner(res["checkpoint"])
    assert all(torch.equal(v, original.state_dict()[k]) for k, v in trained.lm.state_dict().items())
    assert res["stages"]["1"]["history"][0]["train_loss"] > 0


def test_lora_adapter_starts_as_the_identity_and_checkpoints_hold_only_it(llama_dir, tmp_path):
    """A LoRA-wrapped pretrained LM computes what the LM alone did until it trains; stage 2
    then trains the adapter (not the LM's own weights), and a checkpoint holds the adapter and
    the projection while the LM comes back from its folder."""
    tok = load_pretrained_tokenizer(llama_dir)
    torch.manual_seed(0)
    plain = create_captioner(causal(llama_dir), tok).eval()
    torch.manual_seed(0)
    lora = create_captioner(causal(llama_dir, lora_rank=4), tok).eval()
    assert type(lora.lm).__name__ == "PeftModelForCausalLM"
    x = torch.randn(3, 12)
    with torch.no_grad():
        assert torch.equal(plain.loss_on_captions(x, CAPTIONS[:3]), lora.loss_on_captions(x, CAPTIONS[:3]))
    lora.set_lm_trainable(False)
    assert not any(p.requires_grad for p in lora.lm.parameters())
    lora.set_lm_trainable(True)
    trainable = [n for n, p in lora.lm.named_parameters() if p.requires_grad]
    assert trainable and all(".lora_" in n for n in trainable)
    assert len(trainable) == 2 * 2 * 2  # A and B, on q_proj and v_proj, in 2 layers
    assert len(lora.lm_parameters()) == len(trainable)
    with torch.no_grad():
        for p in lora.lm_parameters():
            p.add_(0.05)
    lora.save(tmp_path / "s2")
    saved = torch.load(tmp_path / "s2" / "weights.pt", weights_only=True)
    lm_keys = [k for k in saved if k.startswith("lm.")]
    assert lm_keys and all(".lora_" in k for k in lm_keys)
    assert frozen_lm_dir(tmp_path / "s2") == str(llama_dir)  # a champion carries the LM folder
    back = load_captioner(tmp_path / "s2")
    for k, v in lora.state_dict().items():
        assert torch.equal(v, back.state_dict()[k]), k
    with torch.no_grad():
        assert not torch.equal(back.loss_on_captions(x, CAPTIONS[:3]), plain.loss_on_captions(x, CAPTIONS[:3]))
    from clapcap.captioning.config import DecodingConfig
    from clapcap.captioning.generation import generate_captions

    for strategy in ("greedy", "beam"):  # PEFT's generate takes the prefix as inputs_embeds
        captions = generate_captions(back, x.numpy(), DecodingConfig(strategy=strategy, max_new_tokens=6))
        assert len(captions) == 3 and all(isinstance(c, str) for c in captions)


def test_lora_options_are_checked(llama_dir):
    with pytest.raises(ValueError, match="pretrained LM"):
        CaptionerConfig(lora_rank=4)
    with pytest.raises(ValueError, match="lora_rank"):
        causal(llama_dir, lora_rank=-1)
    with pytest.raises(ValueError, match="no module named"):
        create_captioner(causal(llama_dir, lora_rank=4, lora_targets=["c_attn"]), load_pretrained_tokenizer(llama_dir))


def test_stage2_lora_run_trains_the_adapter_and_leaves_the_lm(llama_dir, tiny_corpus, tmp_path):
    from transformers import AutoModelForCausalLM

    dump = make_dump(tiny_corpus, tmp_path / "dump.npz", dim=12)
    cfg = tiny_train(stages=[1, 2], lm_pretrain_epochs=0, captions_per_clip=1, batch_size=16)
    res = train_captioner(causal(llama_dir, lm_dtype="bfloat16", lora_rank=4), cfg, dump=dump,
                          dataset_dir=tiny_corpus, out_dir=tmp_path / "run", progress=False)
    assert res["checkpoint"].endswith("stage2/best") and res["model"]["lora_rank"] == 4
    assert frozen_lm_dir(res["checkpoint"]) == str(llama_dir)
    stage1, stage2 = (load_captioner(tmp_path / "run" / f"stage{k}" / "best") for k in (1, 2))
    original = AutoModelForCausalLM.from_pretrained(str(llama_dir), dtype=torch.bfloat16).state_dict()
    base = {k.replace("base_model.model.", "").replace(".base_layer", ""): v
            for k, v in stage2.lm.state_dict().items() if ".lora_" not in k}
    assert base.keys() == original.keys() and all(torch.equal(v, original[k]) for k, v in base.items())
    b1 = [v for k, v in stage1.lm.state_dict().items() if ".lora_B" in k]
    b2 = [v for k, v in stage2.lm.state_dict().items() if ".lora_B" in k]
    assert all(not v.any() for v in b1)  # stage 1: the adapter is untouched (the identity)
    assert any(v.any() for v in b2)  # stage 2 trained it


def _params(**kw) -> CaptioningParams:
    base = CaptioningParams()
    models = {**base.models, "smol": CaptionerConfig(decoder="causal", pretrained_dir="/x")}
    train = {**base.train, "smol": TrainConfig(stages=[1])}
    return CaptioningParams(lms=["gpt2", "t5", "smol"], models=models, train=train, **kw)


def test_per_lm_seeds_stages_and_lr_search():
    params = _params(lm_seeds={"smol": [0, 1]}, lr_search_lms=["gpt2", "t5"])
    assert params.seeds_for("gpt2") == [0, 1, 2] and params.seeds_for("smol") == [0, 1]
    specs = lm_specs(params, "smol")
    assert [s.name for s in specs] == ["smol_seed0", "smol_seed1"] and all(s.stages == [1] for s in specs)
    assert lm_specs(params, "gpt2")[0].stages == [1, 2]
    assert run_configs(params, specs[0])[1].stages == [1]
    assert _params().lr_search_lms == ["gpt2", "t5", "smol"]  # default: every LM
    with pytest.raises(ValueError, match="lm_seeds.bert"):
        _params(lm_seeds={"bert": [0]})
    assert _params(lm_seeds={"bert": []}).seeds_for("gpt2") == [0, 1, 2]  # an LM left out keeps []
    with pytest.raises(ValueError, match="no repeats"):
        _params(lm_seeds={"smol": [0, 0]})
    with pytest.raises(ValueError, match="lr_search_lms"):
        _params(lr_search_lms=["bert"])


def test_lr_search_refuses_an_lm_outside_lr_search_lms():
    from clapcap.experiments.captioning.study import run_lr_search

    with pytest.raises(ValueError, match="lr_search_lms"):
        run_lr_search(_params(lr_search_lms=["gpt2"], track=False), "smol")


def test_served_captioner_takes_its_lm_from_the_lm_artifact(llama_dir, tmp_path):
    """A registered champion of a frozen pretrained LM carries the LM folder as its ``lm``
    artifact: the service loads from there, whatever folder the run recorded."""
    import shutil

    from clapcap.captioning.serving import load_for_pyfunc

    moved = tmp_path / "artifacts" / "lm"
    shutil.copytree(llama_dir, moved)
    recorded = tmp_path / "gone"
    tok = load_pretrained_tokenizer(moved)
    model = create_captioner(causal(moved, lm_dtype="bfloat16"), tok)
    model.cfg = dataclasses.replace(model.cfg, pretrained_dir=str(recorded))  # the run's folder, absent here
    model.save(tmp_path / "captioner")
    with pytest.raises(FileNotFoundError, match="config.json"):
        load_captioner(tmp_path / "captioner")
    service = load_for_pyfunc({"captioner": str(tmp_path / "captioner"), "lm": str(moved)})
    captions = service.predict(np.random.default_rng(0).standard_normal((2, 12)).astype(np.float32))
    assert len(captions) == 2 and all(isinstance(c, str) for c in captions)
