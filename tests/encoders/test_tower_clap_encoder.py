"""The tower CLAP as an encoder backend (clapcap.encoders.tower_clap): a dump written through
`retrieval embed` ranks exactly as the study's cached features do, so the stage's numbers and a
user's `retrieval evaluate` agree; a left-out checkpoint is refused."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from clapcap.clap.towers import ProjectionHeads, TowerClapConfig, save_tower_clap, tower_versions
from clapcap.clap.towers_train import similarity
from clapcap.data.dump import load_dump
from clapcap.encoders.base import EncoderConfig
from clapcap.encoders.embed import embed_dataset
from clapcap.errors import InputError
from clapcap.experiments.real.clap import dataset_features, load_features, split_features
from clapcap.retrieval.metrics import evaluate_dump, retrieval_metrics


def test_a_dump_ranks_as_the_cached_features_do(tiny_corpus, tmp_path):
    from clapcap.clap.towers import load_minilm_sentence_model, load_tower_clap
    from clapcap.pretrained.yamnet import load_yamnet

    torch.manual_seed(0)
    save_tower_clap(ProjectionHeads(TowerClapConfig(projection_dim=32)), tmp_path / "model", towers=tower_versions())
    dump_path = embed_dataset(EncoderConfig(name="tower", backend="tower_clap", checkpoint=str(tmp_path / "model")),
                              tiny_corpus, "test", tmp_path / "dump.npz")
    dataset_features(str(tiny_corpus), tmp_path / "f.npz", "the sound of {label}", load_yamnet(),
                     load_minilm_sentence_model(), progress=False)
    split, _ = split_features(load_features(tmp_path / "f.npz"), "test")
    heads, _ = load_tower_clap(tmp_path / "model")
    from_features = retrieval_metrics(similarity(heads, split), split.caption_clip_index, ks=(1, 5, 10))
    dump = load_dump(dump_path)
    assert dump.meta["pipeline"] == "tower_clap" and dump.meta["towers"] == tower_versions()
    from_dump = evaluate_dump(dump, ks=(1, 5, 10))
    for direction in ("t2a", "a2t"):
        for metric in ("r@1", "r@5", "r@10", "map@10"):
            assert from_dump[direction][metric] == pytest.approx(from_features[direction][metric], abs=1e-9)
    assert np.allclose(np.linalg.norm(dump.audio_embeds, axis=1), 1.0, atol=1e-5)


def test_no_checkpoint_is_refused_in_one_line():
    from clapcap.encoders.factory import create_encoder

    with pytest.raises(InputError, match="no random tower CLAP"):
        create_encoder(EncoderConfig(backend="tower_clap"))
