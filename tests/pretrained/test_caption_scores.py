"""sbert_sim_minilm over a study's saved test captions: files found, scores, CIs, seed summaries."""

from __future__ import annotations

import numpy as np
import pytest

from clapcap.data.prepare import load_dataset
from clapcap.errors import InputError
from clapcap.experiments.captioning.scores import (
    CaptionScoreParams,
    mean_interval,
    prediction_files,
    score_study,
    summarize_configs,
)
from clapcap.utils.io import read_json, write_json


def _study(tmp_path, corpus):
    m = load_dataset(corpus).manifest
    test = m[m["split"] == "test"]
    refs = {str(c): caps for c, caps in zip(test["clip_id"], test["captions"], strict=True)}
    root = tmp_path / "captioning"
    good = {c: caps[0] for c, caps in refs.items()}            # a reference itself: high score
    bad = {c: "static on an old radio" for c in refs}           # unrelated: low score
    write_json(root / "runs" / "gpt2_seed0" / "test_predictions.json", good)
    write_json(root / "runs" / "gpt2_seed1" / "test_predictions.json", bad)
    write_json(root / "decoding" / "gpt2" / "seed0" / "greedy.predictions.json", good)
    write_json(root / "decoding" / "gpt2" / "seed0" / "greedy.json", {"not": "predictions"})
    write_json(root / "runs" / "gpt2_seed0" / ".tmp.json", {})
    return root


def test_prediction_files(tmp_path, tiny_corpus):
    root = _study(tmp_path, tiny_corpus)
    assert sorted(prediction_files(root)) == ["decoding/gpt2/seed0/greedy", "gpt2_seed0", "gpt2_seed1"]


def test_score_study(tmp_path, tiny_corpus):
    root = _study(tmp_path, tiny_corpus)
    out = tmp_path / "s.json"
    rec = score_study(CaptionScoreParams(captioning_dir=str(root), dataset_dir=str(tiny_corpus), out=str(out),
                                         n_resamples=200, progress=False))
    assert read_json(out) == rec
    good, bad = rec["runs"]["gpt2_seed0"], rec["runs"]["gpt2_seed1"]
    assert good["corpus"] > bad["corpus"] + 0.2
    assert good["ci95"][0] <= good["corpus"] <= good["ci95"][1]
    cfg = rec["configs"]["gpt2"]
    assert cfg["seeds"] == [0, 1] and cfg["mean"] == pytest.approx((good["corpus"] + bad["corpus"]) / 2)
    assert rec["configs"]["decoding/gpt2/greedy"]["std"] is None


def test_unknown_clip_is_an_error(tmp_path, tiny_corpus):
    write_json(tmp_path / "c" / "runs" / "x_seed0" / "test_predictions.json", {"nope": "a dog"})
    with pytest.raises(InputError, match="no references"):
        score_study(CaptionScoreParams(captioning_dir=str(tmp_path / "c"), dataset_dir=str(tiny_corpus),
                                       out=str(tmp_path / "o.json"), progress=False))


def test_summaries_and_ci():
    s = summarize_configs({"a_seed0": {"corpus": 0.5}, "a_seed2": {"corpus": 0.7}, "nosuffix": {"corpus": 1.0}})
    assert s == {"a": {"mean": pytest.approx(0.6), "std": pytest.approx(np.std([0.5, 0.7], ddof=1)),
                       "seeds": [0, 2], "n_seeds": 2}}
    lo, hi = mean_interval(np.array([0.0, 1.0] * 50), n_resamples=500, seed=0)
    assert lo < 0.5 < hi and hi - lo < 0.3
