"""Ablations, noise floor, trivial baseline, summary tables and champion registration (fake scorer)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from caption_fixtures import TINY_MODEL, fake_score_captions, make_dump

from clapcap.captioning import study as exp
from clapcap.captioning.config import DEFAULT_DECODING_ABLATION
from clapcap.config import ConfigError, from_dict

TRAIN = {"batch_size": 32, "lm_pretrain_epochs": 1, "stage1": {"epochs": 1, "lr_projection": 3e-3},
         "stage2": {"epochs": 1, "lr_projection": 1e-3, "lr_lm": 1e-3}}


@pytest.fixture(autouse=True)
def fake_scorer(monkeypatch):
    monkeypatch.setattr("clapcap.captioning.evaluate.score_captions", fake_score_captions)


def make_params(corpus, tmp, **kw):
    dump = make_dump(corpus, tmp / "dump.npz")
    frames = make_dump(corpus, tmp / "frames.npz", dim=8, frames=3, seed=1)
    return from_dict(exp.CaptioningParams, {
        "dataset_dir": str(corpus), "dump": str(dump), "out_dir": str(tmp / "out"),
        "models": {"gpt2": {"decoder": "gpt2", **TINY_MODEL}, "t5": {"decoder": "t5", **TINY_MODEL}},
        "train": {"gpt2": TRAIN, "t5": TRAIN}, "use_lr_search": False, "noise_seeds": [0, 1],
        "arch": {"prefix_length": [2], "dropout": [], "projection_depth": [1]},
        "decoding_ablation": {"greedy": {}, "beam3_trim": {"strategy": "beam", "num_beams": 3, "trim_words": 4}},
        "encoders": {"frames": {"dump": str(frames), "embedding_key": "audio_frames"}},
        "track": False, "progress": False, **kw})


@pytest.fixture(scope="module")
def study(tiny_corpus, tmp_path_factory):
    """The whole tiny study, run once for the module."""
    import torch

    torch.set_num_threads(1)
    mp = pytest.MonkeyPatch()
    mp.setattr("clapcap.captioning.evaluate.score_captions", fake_score_captions)
    params = make_params(tiny_corpus, tmp_path_factory.mktemp("study"))
    floors = {lm: exp.noise_floor(params, lm) for lm in params.lms}
    arch = exp.run_ablation(params, "arch", lm="gpt2")
    enc = exp.run_ablation(params, "encoder")
    dec = exp.run_ablation(params, "decoding", lm="gpt2")
    base = exp.evaluate_baseline(params)
    mp.undo()
    return params, floors, arch, enc, dec, base


def test_specs_cover_every_ablation(study):
    params = study[0]
    names = [s.name for s in exp.all_specs(params)]
    assert names == ["gpt2_seed0", "gpt2_seed1", "t5_seed0", "t5_seed1", "gpt2_prefix_length2_seed0",
                     "gpt2_projection_depth1_seed0", "t5_prefix_length2_seed0", "t5_projection_depth1_seed0",
                     "encoder_default_gpt2_s1_seed0", "encoder_frames_gpt2_s1_seed0"]
    assert len(DEFAULT_DECODING_ABLATION) >= 20
    for name in DEFAULT_DECODING_ABLATION:  # every default decoding config is valid
        exp.decoding_config(from_dict(exp.CaptioningParams, {}), name)


def test_noise_floor_has_mean_and_std_of_every_metric(study):
    _, floors, *_ = study
    assert set(floors) == {"gpt2", "t5"}
    for floor in floors.values():
        assert floor["seeds"] == [0, 1]
        for stats in floor["metrics"].values():
            assert len(stats["values"]) == 2
            assert stats["mean"] == pytest.approx(np.mean(stats["values"]))
            assert stats["std"] == pytest.approx(np.std(stats["values"], ddof=1))


def test_records_have_history_scores_and_encoder_stage1_only(study):
    params, _, arch, enc, dec, base = study
    assert arch[0]["model"]["prefix_length"] == 2 and arch[1]["model"]["projection_depth"] == 1
    for rec in arch:
        assert set(rec["history"]) == {"1", "2"} and rec["test"]["primary"] == "cider_d"
        assert "cider_d" in rec["val"]["corpus"] and "fense" in rec["test"]["unavailable"]
    assert [set(r["history"]) for r in enc] == [{"1"}, {"1"}]
    assert enc[1]["model"]["in_dim"] == 8  # derived from the frame-level dump (mean-pooled)
    assert dec[1]["decoding"]["num_beams"] == 3 and dec[1]["checkpoint"] == dec[0]["checkpoint"]
    preds = pd.read_json(f"{params.out_dir}/decoding/gpt2/beam3_trim.predictions.json", typ="series")
    assert all(len(c.split()) <= 4 for c in preds)
    assert base["caption"] and set(base["test"]["corpus"]) == {"cider_d", "meteor"}


def test_lm_warmup_is_shared_by_runs_with_the_same_lm_inputs(study):
    from pathlib import Path

    params = study[0]
    # gpt2 seeds 0/1 + prefix_length2, t5 seeds 0/1, frames encoder; projection_depth1 and
    # the default-encoder run reuse gpt2 seed 0's warm-up.
    assert len(list((Path(params.out_dir) / "lm_warmup").glob("lm_*.pt"))) == 6


def test_rerun_skips_finished_configs(study, monkeypatch):
    params = study[0]
    monkeypatch.setattr(exp, "train_captioner", lambda *a, **k: pytest.fail("retrained a finished config"))
    exp.run_ablation(params, "lm")
    exp.run_ablation(params, "decoding", lm="gpt2", name="greedy")


def test_summary_tables(study):
    from clapcap.reporting.captioning_tables import build_summary, write_summary

    params = study[0]
    summary = build_summary(params.out_dir)
    groups = [r["group"] for r in summary["rows"]]
    assert groups.count("lm") == 2 and groups.count("arch") == 2 and groups.count("decoding") == 2
    assert groups[0] == "baseline" and summary["primary"] == "cider_d"
    arch = next(r for r in summary["rows"] if r["group"] == "arch")
    floor = next(r for r in summary["rows"] if r["group"] == "lm" and r["lm"] == arch["lm"])
    assert arch["delta"] == pytest.approx(arch["metrics"]["cider_d"] - floor["metrics"]["cider_d"])
    paths = write_summary(params.out_dir)
    md, tex = paths["md"].read_text(), paths["tex"].read_text()
    assert "| decoding | beam3_trim | gpt2 |" in md and "±" in md
    assert "\\begin{tabular}" in tex and "beam3\\_trim" in tex and "$\\pm$" in tex


def test_champion_is_registered_and_serves_captions(study, mlflow_uri):
    from clapcap.captioning.registry import (
        candidates,
        load_champion,
        register_champion,
        select_champion,
    )

    params = study[0]
    found = candidates(params.out_dir)
    best, metric = select_champion(found)
    assert metric == "cider_d" and best["val"]["corpus"]["cider_d"] == max(c["val"]["corpus"]["cider_d"] for c in found)
    result = register_champion(params)
    assert result["name"] == best["name"] and result["alias"] == "champion" and result["version"] == 1
    model = load_champion()
    in_dim = 8 if "frames" in best["name"] else 16
    x = np.random.default_rng(0).standard_normal((3, in_dim)).astype(np.float32)
    out = model.predict(x)
    assert len(out) == 3 and all(isinstance(c, str) for c in out)
    assert model.predict(pd.DataFrame({"embedding": list(x)})) == out


def test_bad_params_are_rejected(tiny_corpus, tmp_path):
    with pytest.raises(ConfigError, match="unknown key"):
        from_dict(exp.CaptioningParams, {"modles": {}})
    params = make_params(tiny_corpus, tmp_path)
    with pytest.raises(ValueError, match="no models.opt"):
        exp.lm_specs(params, "opt")
    with pytest.raises(ValueError, match="unknown decoding config"):
        exp.decoding_config(params, "nope")
    with pytest.raises(ConfigError, match="num_beam"):
        exp.decoding_config(from_dict(exp.CaptioningParams, {"decoding_ablation": {"x": {"num_beam": 2}}}), "x")
    with pytest.raises(ValueError, match="unknown ablation kind"):
        exp.run_ablation(params, "prefix")
    with pytest.raises(ValueError, match="nothing matches"):
        exp.run_ablation(params, "arch", lm="gpt2", name="dropout0.9")


@pytest.mark.parametrize(("section", "key"), [
    ({"train": {"gpt2": {"stages": [3]}}}, "train.gpt2"),
    ({"train": {"gpt2": {"stage1": {"epochs": 0}}}}, "train.gpt2"),
    ({"decoding": {"top_p": 1.5}}, "decoding"),
    ({"decoding_ablation": {"x": {"num_beams": 0}}}, "decoding_ablation.x"),
    ({"lms": ["gpt2", "llama"]}, "llama"),
])
def test_bad_captioning_values_fail_at_load(tmp_path, section, key):
    """Every captioning sub-config checks its values when params.yaml is loaded, not when a step runs."""
    import yaml

    from clapcap.captioning.config import CaptioningParams
    from clapcap.config import load_section

    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump({"captioning": section}))
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        load_section(CaptioningParams, "captioning", path)
