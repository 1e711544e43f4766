"""A fair LR per ablation row: regret on the search's own objective, exact; one row end to end."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from clapcap.experiments.captioning.lr_check import check_row, regret, run_lr_check

S1 = [{"lr_projection": 0.001, "val_loss": 0.70}, {"lr_projection": 0.003, "val_loss": 0.66},
      {"lr_projection": 0.01, "val_loss": 0.72}]
S2 = [{"lr_projection": 0.001, "lr_lm": 0.001, "val_loss": 0.61}, {"lr_projection": 0.001, "lr_lm": 0.003,
                                                                    "val_loss": 0.60}]


def test_regret_is_the_loss_at_the_shared_lr_minus_the_best():
    assert regret(S1, lr_projection=0.003) == (0.0, 0.0)
    diff, rel = regret(S1, lr_projection=0.001)
    assert diff == pytest.approx(0.04) and rel == pytest.approx(0.04 / 0.66)
    assert regret(S1, lr_projection=0.1) == (None, None)  # not on the grid


def test_check_row_compares_both_stages_with_the_baseline():
    search = {"stage1_lr_projection": 0.003, "stage2_lr_projection": 0.001, "stage2_lr_lm": 0.003,
              "stage1_trials": S1, "stage2_trials": S2}
    same = check_row(search, {"stage1_lr_projection": 0.003, "stage2_lr_projection": 0.001, "stage2_lr_lm": 0.001},
                     "gpt2_x")
    assert same["same_stage1"] and not same["same_stage2"]
    assert same["stage1_regret"] == 0.0 and same["stage2_regret"] == pytest.approx(0.01)
    other = check_row(search, {"stage1_lr_projection": 0.001, "stage2_lr_projection": 0.001, "stage2_lr_lm": 0.003},
                      "gpt2_x")
    assert not other["same_stage1"] and other["stage1_regret"] == pytest.approx(0.04)
    assert other["stage2_regret"] is None  # its stage-2 trials started from another stage-1 checkpoint


def test_run_lr_check_on_one_architecture_row(tiny_corpus, tmp_path):
    from caption_fixtures import TINY_MODEL, make_dump

    from clapcap.config import from_dict
    from clapcap.experiments.captioning.config import CaptioningParams
    from clapcap.experiments.captioning.study import run_lr_search

    train = {"batch_size": 32, "lm_pretrain_epochs": 0, "stage1": {"epochs": 1, "lr_projection": 3e-3},
             "stage2": {"epochs": 1, "lr_projection": 1e-3, "lr_lm": 1e-3}}
    params = from_dict(CaptioningParams, {
        "dataset_dir": str(tiny_corpus), "dump": str(make_dump(tiny_corpus, tmp_path / "dump.npz")),
        "out_dir": str(tmp_path / "out"), "lms": ["gpt2"], "lr_search_lms": ["gpt2"], "arch_lms": ["gpt2"],
        "models": {"gpt2": {"decoder": "gpt2", **TINY_MODEL}}, "train": {"gpt2": train}, "noise_seeds": [0],
        "arch": {"prefix_length": [2], "dropout": [], "projection_depth": []},
        "lr_search": {"stage1_lrs": [1e-3, 1e-2], "stage2_projection_lrs": [1e-3], "stage2_lm_lrs": [1e-3],
                      "stage1_epochs": 1, "stage2_epochs": 1},
        "track": False, "progress": False})
    with pytest.raises(ValueError, match="has not finished"):
        run_lr_check(params, "gpt2", "prefix_length2")
    run_lr_search(params, "gpt2")
    with pytest.raises(ValueError, match="not an architecture row"):
        run_lr_check(params, "gpt2", "dropout0.9")
    record = run_lr_check(params, "gpt2", "prefix_length2")
    written = json.loads((Path(params.out_dir) / "lr_check" / "gpt2_prefix_length2" / "check.json").read_text())
    assert written == json.loads(json.dumps(record))
    assert {t["lr_projection"] for t in record["stage1_trials"]} == {1e-3, 1e-2}
    assert record["stage1_regret"] >= 0.0 and (record["stage1_regret"] == 0.0) == record["same_stage1"]
    # arch_lr: own trains the row at the LRs its own search chose; shared, at the baseline's
    from clapcap.experiments.captioning.study import arch_specs, lr_source, run_configs

    (spec,) = arch_specs(params, "gpt2")
    own = dataclasses.replace(params, arch_lr="own")
    assert lr_source(own, spec) == Path(params.out_dir) / "lr_check" / "gpt2_prefix_length2" / "search"
    assert lr_source(params, spec) == Path(params.out_dir) / "lr_search" / "gpt2"
    _, train_own = run_configs(own, spec)
    assert train_own.stage1.lr_projection == record["chosen"]["stage1_lr_projection"]
    assert train_own.stage2.lr_lm == record["chosen"]["stage2_lr_lm"]
    _, train_shared = run_configs(params, spec)
    assert train_shared.stage1.lr_projection == record["baseline"]["stage1_lr_projection"]
    missing = dataclasses.replace(own, out_dir=str(tmp_path / "elsewhere"))
    with pytest.raises(ValueError, match="run caption_lr_check@gpt2-prefix_length2"):
        run_configs(missing, spec)
    with pytest.raises(ValueError, match="arch_lr"):
        from_dict(CaptioningParams, {"arch_lr": "mine"})


def test_run_row_lr_check_searches_an_encoder_row_on_its_own_embeddings(tiny_corpus, tmp_path):
    """encoder_lr_rows: the row's search runs on its own dump (another input size), its record
    compares it with the LM's search, and the row's runs then train at the LRs it chose."""
    from caption_fixtures import TINY_MODEL, make_dump

    from clapcap.config import from_dict
    from clapcap.experiments.captioning.config import CaptioningParams
    from clapcap.experiments.captioning.lr_check import run_row_lr_check
    from clapcap.experiments.captioning.study import (
        encoder_specs,
        lr_source,
        run_configs,
        run_lr_search,
    )

    frames = make_dump(tiny_corpus, tmp_path / "frames.npz", dim=8, frames=3, seed=1)
    train = {"batch_size": 32, "lm_pretrain_epochs": 0, "stage1": {"epochs": 1, "lr_projection": 3e-3},
             "stage2": {"epochs": 1, "lr_projection": 1e-3, "lr_lm": 1e-3}}
    params = from_dict(CaptioningParams, {
        "dataset_dir": str(tiny_corpus), "dump": str(make_dump(tiny_corpus, tmp_path / "dump.npz")),
        "out_dir": str(tmp_path / "out"), "lms": ["gpt2"], "lr_search_lms": ["gpt2"],
        "models": {"gpt2": {"decoder": "gpt2", **TINY_MODEL}}, "train": {"gpt2": train}, "noise_seeds": [0],
        "encoders": {"frames": {"dump": str(frames), "embedding_key": "audio_frames"}},
        "encoder_lr_rows": ["encoder_frames"],
        "lr_search": {"stage1_lrs": [1e-3, 1e-2], "stage2_projection_lrs": [1e-3], "stage2_lm_lrs": [1e-3],
                      "stage1_epochs": 1, "stage2_epochs": 1},
        "track": False, "progress": False})
    with pytest.raises(ValueError, match="has not finished"):
        run_row_lr_check(params, "encoder_frames")
    with pytest.raises(ValueError, match="not in encoder_lr_rows"):
        run_row_lr_check(params, "encoder_default")
    run_lr_search(params, "gpt2")
    record = run_row_lr_check(params, "encoder_frames")
    out = Path(params.out_dir) / "lr_check" / "encoder_frames"
    assert json.loads((out / "check.json").read_text()) == json.loads(json.dumps(record))
    assert record["row"] == "encoder_frames" and {t["lr_projection"] for t in record["stage1_trials"]} == {1e-3, 1e-2}
    # the search trained on the frames dump: its trial checkpoints hold an 8-d projection input
    trial = json.loads(next((out / "search" / "trials").glob("s1_lr*/stage1/best/captioner.json")).read_text())
    assert trial["in_dim"] == 8
    spec = next(s for s in encoder_specs(params) if s.name == "encoder_frames_gpt2_s1_seed0")
    assert lr_source(params, spec) == out / "search"
    _, train_cfg = run_configs(params, spec)
    assert train_cfg.stage1.lr_projection == record["chosen"]["stage1_lr_projection"]
