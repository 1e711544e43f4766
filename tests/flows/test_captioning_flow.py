"""The Prefect captioning sweep on a tiny study, under Prefect's test harness."""

from __future__ import annotations

from pathlib import Path

import pytest
from caption_fixtures import TINY_MODEL, fake_score_captions, make_dump


def test_sweep_runs_every_config_then_skips_them(prefect_env, tiny_corpus, tmp_path, monkeypatch):
    import torch

    from clapcap.config import from_dict
    from clapcap.experiments.captioning import study as exp
    from clapcap.flows.captioning import run_sweep

    torch.set_num_threads(1)
    monkeypatch.setattr("clapcap.captioning.evaluate.score_captions", fake_score_captions)
    train = {"batch_size": 32, "lm_pretrain_epochs": 0, "stage1": {"epochs": 1}, "stage2": {"epochs": 1}}
    params = from_dict(exp.CaptioningParams, {
        "dataset_dir": str(tiny_corpus), "dump": str(make_dump(tiny_corpus, tmp_path / "d.npz")),
        "out_dir": str(tmp_path / "out"), "lms": ["gpt2"], "models": {"gpt2": {"decoder": "gpt2", **TINY_MODEL}},
        "train": {"gpt2": train}, "noise_seeds": [0, 1],
        "arch": {"prefix_length": [2], "dropout": [], "projection_depth": []},
        "lr_search": {"stage1_lrs": [1e-3], "stage2_projection_lrs": [1e-3], "stage2_lm_lrs": [1e-4],
                      "stage1_epochs": 1, "stage2_epochs": 1},
        "decoding_ablation": {"greedy": {}, "ngram2": {"no_repeat_ngram_size": 2}},
        "track": False, "progress": False})
    first = run_sweep(params, concurrency=2, retries=0, register_best=False)  # registry: see test_captioning_experiments
    assert first["skipped"] == [] and len(first["runs"]) == 4
    out = Path(params.out_dir)
    assert (out / "lr_search" / "gpt2" / "best.json").is_file()
    assert (out / "noise_floor" / "gpt2.json").is_file() and (out / "decoding" / "gpt2" / "seed0" / "ngram2.json").is_file()
    assert Path(first["summary"]).is_file() and first["champion"] is None
    monkeypatch.setattr(exp, "train_captioner", lambda *a, **k: pytest.fail("finished config retrained"))
    second = run_sweep(params, concurrency=1, retries=0, register_best=False)
    assert sorted(second["skipped"]) == sorted(first["runs"])


def test_concurrency_must_be_positive():
    from clapcap.config import from_dict
    from clapcap.experiments.captioning.config import CaptioningParams
    from clapcap.flows.captioning import run_sweep

    with pytest.raises(ValueError, match="concurrency"):
        run_sweep(from_dict(CaptioningParams, {}), concurrency=0)
