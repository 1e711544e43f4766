"""A captioner's LM named by a hub id and a revision (``pretrained: gpt2``, ``pretrained_revision``),
resolved once to one snapshot of the Hugging Face cache, offline, and recorded by its commit.

The cache is in the hub's own layout (``models--gpt2/refs/main``, ``snapshots/<commit>/``), with
tiny random models of the real classes and tokenizers (tests/support/published_lm.py):
``gpt2`` at two revisions (``main`` and the tag ``v1``) and ``t5-base``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from caption_fixtures import fake_score_captions, make_dump, tiny_train
from published_clap import put_in_hub_cache
from published_lm import build_gpt2, build_t5

from clapcap.captioning.config import CaptionerConfig, DecodingConfig, StageConfig
from clapcap.captioning.generation import generate_captions
from clapcap.captioning.model import frozen_lm_dir, load_captioner
from clapcap.captioning.train import train_captioner
from clapcap.cli import main
from clapcap.config import from_dict
from clapcap.errors import InputError
from clapcap.utils.io import read_json

MAIN = "607a30d783dfa663caf39e06633721c8d4cfcd7e"
V1 = "11c5a3d5811f50298f278a704980280950aedb10"
T5 = "a9723ea7f1b39c1eae772870f3b547bf6ef7e6c1"
LM = {"prefix_length": 4, "max_caption_tokens": 24, "dropout": 0.0}


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("lms")
    return {"gpt2_main": build_gpt2(root / "gpt2_main", seed=0), "gpt2_v1": build_gpt2(root / "gpt2_v1", seed=1),
            "t5": build_t5(root / "t5", seed=0)}


@pytest.fixture
def hub(folders, tmp_path, monkeypatch) -> Path:
    import huggingface_hub.constants as constants

    cache = tmp_path / "hub"
    put_in_hub_cache(folders["gpt2_main"], cache, "gpt2", MAIN)
    put_in_hub_cache(folders["gpt2_v1"], cache, "gpt2", V1, ref="v1")
    put_in_hub_cache(folders["t5"], cache, "t5-base", T5)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    return cache


@pytest.fixture(scope="module")
def dump(tiny_corpus, tmp_path_factory) -> Path:
    return make_dump(tiny_corpus, tmp_path_factory.mktemp("hub_lm_dump") / "dump.npz")


def lm_config(**kw) -> CaptionerConfig:
    return from_dict(CaptionerConfig, {**LM, **kw})


def stage1():
    return tiny_train(stages=[1], stage1=StageConfig(epochs=1, lr_projection=3e-3), captions_per_clip=1)


def test_gpt2_from_the_hub_cache_trains_and_captions_at_the_asked_revision(hub, dump, tiny_corpus, tmp_path):
    from safetensors.torch import load_file

    runs = {}
    for ref in ("main", "v1"):
        runs[ref] = train_captioner(lm_config(decoder="causal", pretrained="gpt2", pretrained_revision=ref),
                                    stage1(), dump=dump, dataset_dir=tiny_corpus, out_dir=tmp_path / ref,
                                    progress=False)
    # Each run records the snapshot it resolved: two revisions are told apart by their commits.
    for ref, commit in (("main", MAIN), ("v1", V1)):
        assert runs[ref]["pretrained_lm"] == {"checkpoint": "gpt2", "checkpoint_kind": "hub",
                                              "checkpoint_revision": commit}
    assert read_json(tmp_path / "v1" / "result.json")["pretrained_lm"]["checkpoint_revision"] == V1
    # The saved captioner names its LM by that commit, and loads it back from that snapshot.
    saved = json.loads((Path(runs["v1"]["checkpoint"]) / "captioner.json").read_text())
    assert (saved["pretrained"], saved["pretrained_revision"]) == ("gpt2", V1)
    model = load_captioner(runs["v1"]["checkpoint"])
    assert type(model.lm).__name__ == "GPT2LMHeadModel" and not model.is_encoder_decoder
    snapshot = load_file(hub / "models--gpt2" / "snapshots" / V1 / "model.safetensors")
    # A registered champion carries that snapshot beside its projection-only weights.
    assert frozen_lm_dir(runs["v1"]["checkpoint"]) == str(hub / "models--gpt2" / "snapshots" / V1)
    assert torch.equal(model.lm.transformer.wte.weight, snapshot["transformer.wte.weight"])
    other = load_captioner(runs["main"]["checkpoint"]).lm.transformer.wte.weight
    assert not torch.equal(model.lm.transformer.wte.weight, other)
    captions = generate_captions(model, np.random.default_rng(0).standard_normal((3, 16)).astype(np.float32),
                                 DecodingConfig(max_new_tokens=6))
    assert len(captions) == 3 and all(isinstance(c, str) for c in captions)


def test_t5_base_from_the_hub_cache_is_an_encoder_decoder_lm(hub, dump, tiny_corpus, tmp_path):
    run = train_captioner(lm_config(decoder="t5", pretrained="t5-base"), stage1(), dump=dump,
                          dataset_dir=tiny_corpus, out_dir=tmp_path / "t5", progress=False)
    assert run["pretrained_lm"] == {"checkpoint": "t5-base", "checkpoint_kind": "hub", "checkpoint_revision": T5}
    model = load_captioner(run["checkpoint"])
    assert type(model.lm).__name__ == "T5ForConditionalGeneration" and model.is_encoder_decoder
    assert type(model.tokenizer).__name__ == "T5TokenizerFast" and model.tokenizer.eos_token == "</s>"
    # The prefix is the encoder's input: its width is the T5's d_model.
    assert model.prefix(torch.zeros(2, 16)).shape == (2, 4, 32)
    captions = generate_captions(model, np.zeros((2, 16), np.float32), DecodingConfig(max_new_tokens=5))
    assert len(captions) == 2


def _params_file(tmp_path: Path, corpus: Path, dump: Path, model: dict) -> Path:
    section = {"dataset_dir": str(corpus), "dump": str(dump), "out_dir": str(tmp_path / "out"),
               "lms": ["gpt2_hub"], "encoder_lm": "gpt2_hub", "models": {"gpt2_hub": {**LM, **model}},
               "train": {"gpt2_hub": {"batch_size": 32, "stages": [1], "captions_per_clip": 1,
                                      "stage1": {"epochs": 1, "lr_projection": 3e-3}}},
               "use_lr_search": False, "noise_seeds": [0], "progress": False}
    path = tmp_path / "params.yaml"
    path.write_text(json.dumps({"captioning": section}))  # JSON is YAML
    return path


def test_the_params_switch_trains_a_hub_lm_and_logs_its_commit(hub, dump, tiny_corpus, tmp_path, monkeypatch):
    """``captioning.models.<name>: {decoder: causal, pretrained: gpt2, pretrained_revision: v1}``
    through ``clapcap captioning train``: the run's record and its MLflow params hold the commit."""
    import mlflow

    (tmp_path / "store").mkdir()
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'store' / 'mlflow.db'}")
    monkeypatch.setattr("clapcap.captioning.evaluate.score_captions", fake_score_captions)
    params = _params_file(tmp_path, tiny_corpus, dump, {"decoder": "causal", "pretrained": "gpt2",
                                                        "pretrained_revision": "v1"})
    assert main(["captioning", "train", "--params", str(params), "--lm", "gpt2_hub", "--seed", "0"]) == 0
    record = read_json(tmp_path / "out" / "results" / "gpt2_hub_seed0.json")
    assert record["pretrained_lm"]["checkpoint_revision"] == V1 and record["model"]["pretrained_revision"] == V1
    run, = mlflow.search_runs(experiment_names=["clapcap-captioning"], output_format="list")
    assert run.data.params["pretrained_lm/checkpoint"] == "gpt2"
    assert run.data.params["pretrained_lm/checkpoint_revision"] == V1
    assert run.data.params["model/pretrained_revision"] == "v1"  # what params.yaml asked for


def test_an_uncached_lm_offline_is_one_line_naming_hf_download(hub, dump, tiny_corpus, tmp_path, capsys):
    params = _params_file(tmp_path, tiny_corpus, dump, {"decoder": "causal", "pretrained": "distilgpt2"})
    assert main(["captioning", "train", "--params", str(params), "--lm", "gpt2_hub", "--no-track"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("clapcap: error: distilgpt2: not in the Hugging Face cache")
    assert "`hf download distilgpt2`" in err[0] and "HF_HUB_OFFLINE=1" in err[0]
    assert not (tmp_path / "out" / "runs").exists()  # refused before any run folder is written


def test_a_revision_that_does_not_exist_is_refused(hub, dump, tiny_corpus, tmp_path, monkeypatch):
    import huggingface_hub
    import huggingface_hub.constants as constants
    from huggingface_hub.errors import RevisionNotFoundError

    cfg = lm_config(decoder="causal", pretrained="gpt2", pretrained_revision="v9")
    with pytest.raises(InputError, match=r"gpt2@v9: this revision is not in the Hugging Face cache "
                                         r"\(cached: refs \['main', 'v1'\]"):
        train_captioner(cfg, stage1(), dump=dump, dataset_dir=tiny_corpus, out_dir=tmp_path / "r", progress=False)

    def no_such_revision(*_, **__):
        raise RevisionNotFoundError("404 Client Error: Revision Not Found", response=None)

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(huggingface_hub, "snapshot_download", no_such_revision)
    with pytest.raises(InputError, match=r"gpt2@v9: no such revision on the hub"):
        train_captioner(cfg, stage1(), dump=dump, dataset_dir=tiny_corpus, out_dir=tmp_path / "r", progress=False)
    assert not (tmp_path / "r").exists()


def test_the_lm_fields_are_checked(hub, folders, tmp_path):
    from clapcap.captioning.decoders import resolve_lm

    with pytest.raises(ValueError, match="pretrained and pretrained_dir"):
        lm_config(decoder="causal", pretrained="gpt2", pretrained_dir=str(folders["gpt2_main"]))
    with pytest.raises(ValueError, match="pretrained_revision 'main' is for a hub id in pretrained"):
        lm_config(decoder="causal", pretrained_dir=str(folders["gpt2_main"]), pretrained_revision="main")
    # pretrained_dir keeps its name's meaning, a local folder: a hub id there says where it goes.
    with pytest.raises(InputError, match=r"pretrained_dir 'gpt2' is not a folder; a hub id goes in "
                                         r"`pretrained: gpt2`"):
        resolve_lm(lm_config(decoder="causal", pretrained_dir="gpt2"))
    # A local folder in pretrained is recorded by the SHA-256 of its weights.
    got = resolve_lm(lm_config(decoder="causal", pretrained=str(folders["gpt2_main"])))
    assert got.kind == "folder" and len(got.sha256) == 64 and got.revision is None
    with pytest.raises(InputError, match="a local folder has no revision"):
        resolve_lm(lm_config(decoder="causal", pretrained=str(folders["gpt2_main"]), pretrained_revision="v1"))
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "config.json").write_text("{}")
    with pytest.raises(InputError, match=r"bare: no weights"):
        resolve_lm(lm_config(decoder="causal", pretrained=str(bare)))


def test_a_deployed_flow_keeps_a_hub_lm_and_anchors_an_lm_folder(tmp_path):
    """Under a Prefect worker, a relative folder in ``pretrained`` is taken under the project root;
    a hub id stays a hub id."""
    from clapcap.flows.project import resolve_paths

    (tmp_path / "models").mkdir()
    out = resolve_paths({"models": {"hub": {"pretrained": "gpt2"}, "local": {"pretrained": "models/my_lm"}}},
                        tmp_path)
    assert out["models"]["hub"]["pretrained"] == "gpt2"
    assert out["models"]["local"]["pretrained"] == str(tmp_path / "models/my_lm")
