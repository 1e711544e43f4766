"""A run's plan is read once from the study section: configs, data, decoding, seed group."""

from __future__ import annotations

from dataclasses import FrozenInstanceError

import pytest
from caption_fixtures import TINY_MODEL

from clapcap.config import from_dict
from clapcap.experiments.captioning.config import CaptioningParams
from clapcap.experiments.captioning.plan import encoder_specs, lm_specs, music_specs, plan_run

TRAIN = {"batch_size": 8, "stage1": {"epochs": 1, "lr_projection": 3e-3},
         "stage2": {"epochs": 1, "lr_projection": 1e-3, "lr_lm": 1e-3}}


def _params(tmp_path):
    return from_dict(CaptioningParams, {
        "dataset_dir": "data/corpus", "dump": "data/clap.npz", "out_dir": str(tmp_path / "out"), "lms": ["gpt2"],
        "models": {"gpt2": {"decoder": "gpt2", **TINY_MODEL}}, "train": {"gpt2": TRAIN}, "use_lr_search": False,
        "noise_seeds": [0, 1, 2], "encoder_seeds": [4], "track": False, "progress": False,
        "decoding": {"max_new_tokens": 9}, "encoders": {"other": {"dump": "data/other.npz"}},
        "music": {"dataset_dir": "data/music", "baseline": "clap", "seeds": [5, 6],
                  "encoders": {"clap": {"dump": "data/clap.npz"}}}})


def test_a_plan_holds_what_its_run_reads(tmp_path):
    params = _params(tmp_path)
    plan = plan_run(params, lm_specs(params, "gpt2")[1])
    assert (plan.configuration, plan.seeds, plan.spec.seed) == ("baseline", [0, 1, 2], 1)
    assert plan.train.seed == 1 and plan.train.stage1.lr_projection == 3e-3 and plan.model.decoder == "gpt2"
    assert plan.decoding.max_new_tokens == 9 and plan.dataset_dir == "data/corpus"
    assert plan.out_dir == tmp_path / "out" and plan.metrics is None
    music = plan_run(params, music_specs(params)[0])
    assert (music.dataset_dir, music.seeds, music.train.stages) == ("data/music", [5, 6], [1])
    enc = plan_run(params, encoder_specs(params)[1], configs=False)
    assert enc.model is None and enc.train is None and enc.seeds == [4] and enc.spec.dump == "data/other.npz"
    with pytest.raises(FrozenInstanceError):  # read once: nothing below the run changes it
        plan.seeds = [9]
