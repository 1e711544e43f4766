"""The MiniLM-text-tower CLAP: the converted tower is MiniLM, it trains, saves and loads as a ClapModel."""

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
from optim_kw import params_with

from clapcap.clap.config import TrainClapParams
from clapcap.clap.minilm import (
    build_minilm_clap,
    load_minilm_text_tower,
    set_text_trainable,
)
from clapcap.clap.model import TinyClapConfig
from clapcap.clap.train import train_clap
from clapcap.config import ConfigError
from clapcap.pretrained.assets import minilm_dir

CAPTIONS = ["a dog barks twice", "rain falls on a tin roof while thunder rumbles", "music"]


@pytest.fixture(scope="module")
def built():
    return build_minilm_clap(TinyClapConfig(), minilm_dir(), seed=0)


def test_converted_tower_reproduces_minilm_hidden_states(built):
    from transformers import BertModel

    model, tok, _ = built
    bert = BertModel.from_pretrained(str(minilm_dir())).eval()
    enc = tok(CAPTIONS, padding=True, return_tensors="pt")
    assert set(enc) == {"input_ids", "attention_mask"}  # ClapModel takes no token type ids
    with torch.no_grad():
        want = bert(**enc).last_hidden_state
        got = model.text_model.eval()(**enc).last_hidden_state
    mask = enc["attention_mask"][..., None].bool()
    assert torch.allclose(got.masked_fill(~mask, 0), want.masked_fill(~mask, 0), atol=1e-5)
    # Without the shifted position table the tower is another function: the check can fail.
    state = {k: v for k, v in bert.state_dict().items()}
    model.text_model.embeddings.position_embeddings.weight.data[:-1] = state["embeddings.position_embeddings.weight"]
    with torch.no_grad():
        off = model.text_model(**enc).last_hidden_state
    assert not torch.allclose(off.masked_fill(~mask, 0), want.masked_fill(~mask, 0), atol=1e-3)
    load_minilm_text_tower(model.text_model, state)  # restore for the other tests


def test_mismatched_checkpoint_is_refused(built):
    model, _, _ = built
    from transformers import BertModel

    state = BertModel.from_pretrained(str(minilm_dir())).state_dict()
    del state["encoder.layer.5.output.dense.weight"]
    with pytest.raises(ConfigError, match="encoder.layer.5.output.dense.weight"):
        load_minilm_text_tower(model.text_model, state)


def test_trainable_layers(built):
    model, _, _ = built
    tower = model.text_model
    assert set_text_trainable(model, 0) == []
    top2 = set_text_trainable(model, 2)
    assert all(p.requires_grad for p in tower.encoder.layer[5].parameters())
    assert not any(p.requires_grad for p in tower.encoder.layer[3].parameters())
    assert not tower.embeddings.word_embeddings.weight.requires_grad and top2
    assert len(set_text_trainable(model, -1)) == len(list(tower.parameters()))
    with pytest.raises(ConfigError):
        TrainClapParams(text_tower="minilm", text_trainable_layers=-2)


def test_train_frozen_tower_save_load_and_skip(tiny_corpus, tmp_path):
    from transformers import BertModel

    from clapcap.encoders.base import EncoderConfig
    from clapcap.encoders.factory import create_encoder

    params = params_with(TrainClapParams, dataset_dir=str(tiny_corpus), out_dir=str(tmp_path / "m"), epochs=2,
                         batch_size=8, warmup_steps=2, text_tower="minilm", text_trainable_layers=0,
                         collapse_alpha=0.0, track=False)
    res = train_clap(params, progress=False)
    assert len(res.history) == 2 and all(np.isfinite(r["loss"]) for r in res.history)
    sidecar = json.loads((tmp_path / "m" / "model" / "clapcap_encoder.json").read_text())
    assert sidecar["text_tower"].endswith("all-MiniLM-L6-v2") and sidecar["text_trainable_layers"] == 0
    enc = create_encoder(EncoderConfig(checkpoint=res.model_dir))  # the plain hf_clap backend loads it
    bert = BertModel.from_pretrained(str(minilm_dir()))
    frozen = enc.model.text_model.encoder.layer[0].attention.self.query.weight
    assert torch.equal(frozen, bert.encoder.layer[0].attention.self.query.weight)  # a frozen tower stays MiniLM
    assert type(enc.tokenizer).__name__ == "BertTokenizerFast"
    emb = enc.embed_text(CAPTIONS)
    assert emb.shape == (3, 64) and np.allclose(np.linalg.norm(emb, axis=1), 1, atol=1e-5)
    assert train_clap(params, progress=False).skipped
    other = train_clap(replace(params, text_trainable_layers=1, optim=replace(params.optim, epochs=1)),
                       progress=False)
    assert not other.skipped and other.signature != res.signature


def test_study_variants_evaluate_against_the_baseline(tiny_corpus, tmp_path):
    from clapcap.clap.config import TrainClapParams
    from clapcap.encoders.base import EncoderConfig
    from clapcap.encoders.embed import embed_dataset
    from clapcap.experiments.clap.variants import ClapVariantStudy, evaluate_variant
    from clapcap.tracked.clap import run_synth_clap

    base = params_with(TrainClapParams, dataset_dir=str(tiny_corpus), out_dir=str(tmp_path / "m"), epochs=1,
                       batch_size=8, warmup_steps=1, collapse_alpha=0.0, track=False, text_tower="minilm",
                       text_trainable_layers=2)
    baseline = embed_dataset(EncoderConfig(name="random", checkpoint=""), tiny_corpus, "test",
                             tmp_path / "emb" / "random" / "corpus" / "test.npz", progress=False)
    study = ClapVariantStudy(variants={"frozen": {"text_trainable_layers": 0},
                                       "scratch": {"text_tower": "scratch", "optim": {"epochs": 2}}},
                             out_root=str(tmp_path / "models"), split="test", dump_dir=str(tmp_path / "emb"),
                             baseline="random", baseline_dump=str(baseline), metrics_dir=str(tmp_path / "metrics"),
                             n_resamples=50)
    with pytest.raises(ConfigError, match="no 'full'"):
        study.params_for(base, "full")
    with pytest.raises(ConfigError, match="unknown field"):
        ClapVariantStudy(variants={"x": {"text_layers": 1}}).params_for(base, "x")
    scratch = study.params_for(base, "scratch")  # the MiniLM-only fields go back to their defaults
    assert (scratch.text_tower, scratch.text_trainable_layers, scratch.optim.epochs) == ("scratch", -1, 2)
    assert scratch.optim.batch_size == 8  # the rest of the optim block is the base's
    assert scratch.registered_model == "clapcap-clap-scratch"
    params = study.params_for(base, "frozen")
    assert params.out_dir == str(tmp_path / "models" / "clap_frozen") and params.text_trainable_layers == 0
    res = run_synth_clap(params, progress=False)
    sidecar = json.loads((Path(res.model_dir) / "clapcap_encoder.json").read_text())
    assert sidecar["text_trainable_layers"] == 0  # trained by the MiniLM loop
    out = evaluate_variant(study, base, "frozen", progress=False)
    r10 = out["metrics"]["t2a"]["r@10"]
    assert 0 <= r10 <= 1 and out["metrics"]["t2a"]["ci"]["r@10"]["low"] <= r10
    versus = json.loads((tmp_path / "metrics" / "clap_frozen_vs_random.json").read_text())
    assert versus["t2a"]["r@10"]["a"] == pytest.approx(r10)
    assert (tmp_path / "emb" / "clap_frozen" / "corpus" / "test.npz").is_file()


def test_train_clap_text_tower_is_checked_at_load():
    from clapcap.clap.config import TrainClapParams

    with pytest.raises(ConfigError, match="text_tower must be one of"):
        TrainClapParams(text_tower="bert")
    with pytest.raises(ConfigError, match="minilm only"):
        TrainClapParams(text_trainable_layers=2)  # a scratch tower trains whole
    assert TrainClapParams(text_tower="minilm", text_trainable_layers=2).text_lr == 5e-5

def test_cached_frozen_bottom_matches_the_plain_tower_and_restores_it():
    from clapcap.clap.frozen_text import cached_frozen_bottom

    model, tok, _ = build_minilm_clap(TinyClapConfig(), minilm_dir(), seed=0)
    set_text_trainable(model, 2)
    keys = list(model.state_dict())
    model.eval()
    enc = tok(CAPTIONS, padding=True, return_tensors="pt")
    with torch.no_grad():
        want = model.get_text_features(**enc)
    with cached_frozen_bottom(model, 2) as n:
        assert n == 4 and len(model.text_model.encoder.layer) == 2
        with torch.no_grad():
            got = model.get_text_features(**enc)
            # other batch compositions and paddings hit the cache and give the same rows
            alone = model.get_text_features(**tok(CAPTIONS[1:2], padding=True, return_tensors="pt"))
        assert torch.allclose(got, want, atol=1e-5) and torch.allclose(alone[0], want[1], atol=1e-5)
        model.train()  # gradients reach the trainable top layers only
        model.get_text_features(**enc).sum().backward()
        assert all(p.grad is not None for p in model.text_model.encoder.layer[1].parameters())
        with pytest.raises(ValueError, match="right-padded"):
            model.text_model.embeddings(input_ids=torch.tensor([[0, 101, 102]]))
    assert list(model.state_dict()) == keys and len(model.text_model.encoder.layer) == 6
    assert model.text_model.encoder.layer[4].attention.self.query.weight.grad is not None  # the trained layer is back
    assert model.text_model.encoder.layer[3].attention.self.query.weight.grad is None
    with cached_frozen_bottom(model, -1) as n:
        assert n == 0 and len(model.text_model.encoder.layer) == 6


def test_frozen_text_store_is_read_back_and_keyed_by_the_frozen_weights(tmp_path):
    from frozen_text_calls import counting_computes  # tests/support

    from clapcap.clap.frozen_text import cached_frozen_bottom

    model, tok, _ = build_minilm_clap(TinyClapConfig(), minilm_dir(), seed=0)
    set_text_trainable(model, 0)  # the whole tower frozen: its 6 layers cached
    model.eval()
    enc = tok(CAPTIONS, padding=True, return_tensors="pt")
    with torch.no_grad():
        want = model.get_text_features(**enc)
    with cached_frozen_bottom(model, 0, store=tmp_path) as n, torch.no_grad():
        assert n == 6
        first = model.get_text_features(**enc)
    files = list(tmp_path.glob("frozen_text_*.pt"))
    assert len(files) == 1 and torch.allclose(first, want, atol=1e-5)
    with counting_computes() as calls:
        with cached_frozen_bottom(model, 0, store=tmp_path), torch.no_grad():
            again = model.get_text_features(**enc)  # every caption read back: nothing computed
        assert calls == [] and torch.equal(again, first)
        with torch.no_grad():  # other frozen weights: another file, computed afresh
            model.text_model.embeddings.word_embeddings.weight[5] += 1.0
        with cached_frozen_bottom(model, 0, store=tmp_path), torch.no_grad():
            model.get_text_features(**enc)
        assert calls == [3] and len(list(tmp_path.glob("frozen_text_*.pt"))) == 2
    with torch.no_grad():
        model.text_model.embeddings.word_embeddings.weight[5] -= 1.0
    files[0].write_bytes(b"not a torch file")  # a damaged store is recomputed, never trusted
    with cached_frozen_bottom(model, 0, store=tmp_path), torch.no_grad():
        assert torch.allclose(model.get_text_features(**enc), want, atol=1e-5)
    assert files[0].stat().st_size > 100  # rewritten
