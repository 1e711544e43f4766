"""A tiny tracked captioning study, then the store check of docs/tracking.md over its store:
one run per configuration (training params, losses and caption metrics together), seeds as
child runs of a parent with the noise floor, vocabulary keys, provenance, no duplicate names."""

from __future__ import annotations

from pathlib import Path

import pytest
from caption_fixtures import TINY_MODEL, fake_score_captions, make_dump

from clapcap.config import from_dict
from clapcap.experiments.captioning import study as exp

TRAIN = {"batch_size": 32, "lm_pretrain_epochs": 1, "stage1": {"epochs": 1, "lr_projection": 3e-3},
         "stage2": {"epochs": 1, "lr_projection": 1e-3, "lr_lm": 1e-3}}


@pytest.fixture
def fresh_store(tmp_path, monkeypatch):
    uri = f"sqlite:///{tmp_path / 'store' / 'mlflow.db'}"
    (tmp_path / "store").mkdir()
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    return uri


def test_tracked_study_passes_the_store_check(tiny_corpus, tmp_path, fresh_store, monkeypatch):
    import mlflow
    import torch

    from clapcap.tracked.captioning import MLflowTracker
    from clapcap.tracking.check import check_store

    torch.set_num_threads(1)
    monkeypatch.setattr("clapcap.captioning.evaluate.score_captions", fake_score_captions)
    params = from_dict(exp.CaptioningParams, {
        "dataset_dir": str(tiny_corpus), "dump": str(make_dump(tiny_corpus, tmp_path / "dump.npz")),
        "out_dir": str(tmp_path / "out"), "models": {"gpt2": {"decoder": "gpt2", **TINY_MODEL}},
        "train": {"gpt2": TRAIN}, "lms": ["gpt2"], "use_lr_search": False, "noise_seeds": [0, 1], "track": True,
        "progress": False, "findings": {"decoding": ["beam3"]},
        "decoding_ablation": {"greedy": {}, "beam3": {"strategy": "beam", "num_beams": 3}}})
    floor = exp.noise_floor(params, "gpt2", tracker=MLflowTracker())
    exp.noise_floor(params, "gpt2")  # results exist: no new run
    assert check_store(fresh_store) == []
    runs = mlflow.search_runs(experiment_names=["clapcap-captioning"], output_format="list")
    by_name = {r.info.run_name: r for r in runs}
    assert len(by_name) == len(runs) == 3
    parent = by_name["captioning/gpt2/baseline"]
    child = by_name["captioning/gpt2/baseline/seed1"]
    assert child.data.tags["mlflow.parentRunId"] == parent.info.run_id
    metric = next(iter(floor["metrics"]))
    assert parent.data.metrics[f"test/{metric}_std"] == pytest.approx(floor["metrics"][metric]["std"])
    # One column ranks every configuration: the parent's plain key is its mean over seeds, with
    # the t interval over seeds; and the parent holds the configuration's params, not only names.
    mean = floor["metrics"][metric]["mean"]
    assert parent.data.metrics[f"test/{metric}"] == pytest.approx(mean)
    assert parent.data.metrics[f"test/{metric}_ci_low"] <= mean <= parent.data.metrics[f"test/{metric}_ci_high"]
    assert {"train/stage1/lr_projection", "model/decoder", "decoding/strategy"} <= set(parent.data.params)
    assert "train/seed" not in parent.data.params and "spec/seed" not in parent.data.params
    assert {"train/stage1/lr_projection", "model/decoder"} <= set(child.data.params)  # train params ...
    assert {f"test/{metric}", "train/loss_stage1", "val/loss_stage2"} <= set(child.data.metrics)  # ... and scores
    history = mlflow.MlflowClient().get_metric_history(child.info.run_id, "train/loss_stage1")
    assert [m.step for m in history] == [1]
    assert [i.dataset.name for i in child.inputs.dataset_inputs]  # what the run saw
    # The captions behind the run's scores, as an MLflow table.
    table = mlflow.load_table("test_predictions.json", run_ids=[child.info.run_id])
    saved = exp.read_json(exp.test_predictions_path(params.out_dir, "gpt2_seed1"))
    assert dict(zip(table["clip_id"], table["caption"], strict=True)) == saved
    # An eval-only decoding config on each seed's checkpoint (a finding's config) is a configuration
    # too: its run holds the checkpoint's training params with the decoding params, its seeds nest
    # under one parent, which gets their mean and std once both are done.
    for seed in (0, 1):
        exp.evaluate_decoding(params, "gpt2", "beam3", seed=seed, tracker=MLflowTracker())
    assert check_store(fresh_store) == []
    runs = {r.info.run_name: r for r in mlflow.search_runs(experiment_names=["clapcap-captioning"],
                                                          output_format="list")}
    dec = runs["captioning/gpt2/decoding_beam3/seed1"]
    assert {"train/stage1/lr_projection", "decoding/num_beams", "checkpoint_run"} <= set(dec.data.params)
    group = runs["captioning/gpt2/decoding_beam3"].data.metrics
    values = [runs[f"captioning/gpt2/decoding_beam3/seed{s}"].data.metrics[f"test/{metric}"] for s in (0, 1)]
    assert group[f"test/{metric}_mean"] == pytest.approx(sum(values) / 2) == pytest.approx(group[f"test/{metric}"])
    assert runs["captioning/gpt2/decoding_beam3"].data.params["decoding/num_beams"] == "3"
    # A decoding config of no finding runs on the first seed only: one run, no seed group.
    exp.evaluate_decoding(params, "gpt2", "greedy", seed=0, tracker=MLflowTracker())
    runs = {r.info.run_name: r for r in mlflow.search_runs(experiment_names=["clapcap-captioning"],
                                                          output_format="list")}
    assert "captioning/gpt2/decoding_greedy" not in runs
    assert "mlflow.parentRunId" not in runs["captioning/gpt2/decoding_greedy/seed0"].data.tags
    assert check_store(fresh_store) == []
    # The registered champion links back to the run that trained its weights.
    from clapcap.tracked.captioning_register import register_champion

    champion = register_champion(params)
    version = mlflow.MlflowClient().get_model_version("clapcap-captioner", str(champion["version"]))
    trained = mlflow.get_run(version.tags["clapcap.training_run_id"])
    seed_run = Path(champion["checkpoint"]).parts[Path(champion["checkpoint"]).parts.index("runs") + 1]
    assert trained.data.tags["clapcap.config"] == seed_run  # a seed run (gpt2_seed<k>), whatever decoding won


def test_store_check_finds_each_broken_convention(fresh_store):
    import mlflow

    from clapcap import tracking
    from clapcap.tracking.check import check_store

    with tracking.tracked("unit", experiment="t-check", name="a/model", params={"x": 1}):
        mlflow.log_metric("t2a/R10", 0.5)  # a second spelling, logged around the mapper
    with tracking.tracked("unit", experiment="t-check", name="a/model", params={"x": 2}):
        tracking.log_metrics({"r@10": 0.5}, scope="test", direction="t2a")
    with tracking.tracked("unit", experiment="t-check", name="a/empty"):
        pass
    for seed in (0, 1):
        with tracking.tracked("unit", experiment="t-check", name=f"a/cfg/seed{seed}", params={"seed": seed}):
            pass
    exp_id = mlflow.get_experiment_by_name("t-check").experiment_id
    with mlflow.start_run(run_name="a/bare", experiment_id=exp_id):  # no set_experiment: a global
        mlflow.log_param("y", 1)
    problems = "\n".join(check_store(fresh_store))
    assert "'t2a/R10' is not in the vocabulary" in problems
    assert "2 runs named 'a/model'" in problems
    assert "'a/empty'" in problems and "empty run" in problems
    assert "seeds of 'a/cfg' are not child runs of one parent" in problems
    assert "'a/bare'" in problems and "no provenance tags" in problems


def test_seed_interval_is_the_t_interval_of_the_mean():
    from clapcap.tracked.captioning import seed_interval

    low, high = seed_interval(1.0, 0.5, 3)  # t(0.975, 2 df) = 4.302653
    assert (high - 1.0) == pytest.approx(4.302653 * 0.5 / 3 ** 0.5, rel=1e-6) and low == pytest.approx(2 - high)
