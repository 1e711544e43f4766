"""``train.<lm>.train_clips``: rows trained on a subset of the training clips, the same clips for
every run with the same number (issue 43's budget for pretrained-LM rows on 2 cores)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from caption_fixtures import make_dump, tiny_train

from clapcap.captioning import train as train_mod
from clapcap.captioning.config import CaptionerConfig, StageConfig, TrainConfig
from clapcap.captioning.data import CaptionSplit


def _split(n: int) -> CaptionSplit:
    return CaptionSplit("train", [f"c{i}" for i in range(n)], np.arange(n * 2, dtype=np.float32).reshape(n, 2),
                        [[f"cap {i}"] for i in range(n)])


def test_subset_is_seed_fixed_ordered_and_nested():
    split = _split(20)
    five, eight = split.subset(5), split.subset(8)
    assert five.clip_ids == sorted(five.clip_ids, key=lambda c: int(c[1:]))  # split order kept
    assert set(five.clip_ids) < set(eight.clip_ids)  # a smaller draw is inside a larger one
    assert five.clip_ids == split.subset(5).clip_ids and five.clip_ids != split.subset(5, seed=1).clip_ids
    rows = [int(c[1:]) for c in five.clip_ids]
    assert np.array_equal(five.embeds, split.embeds[rows]) and five.captions == [[f"cap {i}"] for i in rows]
    assert split.subset(0) is split and split.subset(20) is split and split.subset(99) is split
    with pytest.raises(ValueError, match="n >= 0"):
        split.subset(-1)
    with pytest.raises(ValueError, match="train_clips"):
        TrainConfig(train_clips=-3)


def test_runs_with_one_train_clips_train_on_the_same_clips_whatever_their_seed(tiny_corpus, tmp_path,
                                                                                  monkeypatch):
    torch.set_num_threads(1)
    dump = make_dump(tiny_corpus, tmp_path / "dump.npz", dim=12)
    seen: dict[int, list[str]] = {}
    real_stage = train_mod.train_stage

    def spy(model, stage, data, cfg, folder, **kw):
        seen[cfg.seed] = data.train.clip_ids
        return real_stage(model, stage, data, cfg, folder, **kw)

    monkeypatch.setattr(train_mod, "train_stage", spy)
    model = CaptionerConfig(decoder="gpt2", hidden=16, layers=1, heads=2, vocab_size=80, prefix_length=2)
    results = {}
    for seed in (0, 1):
        cfg = tiny_train(seed=seed, stages=[1], lm_pretrain_epochs=0, train_clips=10,
                         stage1=StageConfig(epochs=1, lr_projection=3e-3))
        results[seed] = train_mod.train_captioner(model, cfg, dump=dump, dataset_dir=tiny_corpus,
                                                  out_dir=tmp_path / f"run{seed}", progress=False)
    assert len(seen[0]) == 10 and seen[0] == seen[1]
    assert results[0]["train"]["train_clips"] == 10
    subset = seen[0]
    full = train_mod.train_captioner(model, tiny_train(stages=[1], lm_pretrain_epochs=0), dump=dump,
                                     dataset_dir=tiny_corpus, out_dir=tmp_path / "all", progress=False)
    assert "train_clips" not in full["train"]  # a run on every clip records what it did before
    assert len(seen[0]) == len(train_mod.load_run_data(dump, tiny_corpus).train.clip_ids) > len(subset)
