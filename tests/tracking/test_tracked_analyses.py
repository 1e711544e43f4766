"""The studies' analyses as MLflow runs (clapcap.tracked.seed_study, clapcap.tracked.caption_*)
on a temporary store."""

from __future__ import annotations

import pytest

from clapcap.tracked.caption_lr_check import log_lr_check
from clapcap.tracked.seed_study import log_seed_study
from clapcap.tracking.check import check_store
from clapcap.utils.io import write_json

STUDY = {"metric": "t2a/r@10", "split": "test", "models": {
    "CLAP": {"original": {"mean": 0.75, "per_seed": {"0": 0.75}},
             "events": {"mean": 0.36, "per_seed": {"0": 0.36}, "drop": -0.39}},
    "RobustCLAP": {"original": {"mean": 0.74, "per_seed": {"0": 0.75, "1": 0.73}},
                   "events": {"mean": 0.56, "per_seed": {"0": 0.58, "1": 0.54}, "drop": -0.18}}}}


def test_a_seed_study_becomes_a_parent_per_model_with_a_child_per_seed(mlflow_uri, tmp_path):
    import mlflow

    write_json(tmp_path / "kinds.json", STUDY)
    parents = log_seed_study(tmp_path / "kinds.json", stage="robust_kinds", experiment="clapcap-test-analyses",
                             analysis="kinds")
    client = mlflow.MlflowClient()
    runs = {r.info.run_name: r for r in client.search_runs(
        [client.get_experiment_by_name("clapcap-test-analyses").experiment_id])}
    assert set(runs) == {"robust/clap/kinds", "robust/clap/kinds/seed0", "robust/robustclap/kinds",
                         "robust/robustclap/kinds/seed0", "robust/robustclap/kinds/seed1"}
    robust = runs["robust/robustclap/kinds"].data.metrics
    assert robust["test/t2a/r10_mean"] == 0.74 and robust["test/events/t2a/r10_drop"] == -0.18
    assert robust["test/events/t2a/r10_std"] == pytest.approx(0.028284271, abs=1e-8)
    assert "test/t2a/r10_std" not in runs["robust/clap/kinds"].data.metrics  # one seed: no std
    seed1 = runs["robust/robustclap/kinds/seed1"]
    assert seed1.data.metrics == {"test/t2a/r10": 0.73, "test/events/t2a/r10": 0.54}
    assert seed1.data.tags["mlflow.parentRunId"] == runs["robust/robustclap/kinds"].info.run_id
    assert len(parents) == 2
    assert [p for p in check_store(mlflow_uri) if "clapcap-test-analyses" in p] == []
    assert log_seed_study(tmp_path / "kinds.json", stage="s", experiment="e", analysis="a", enabled=False) == []


def test_an_lr_check_is_a_run_with_its_regret(mlflow_uri):
    import mlflow

    record = {"row": "gpt2_prefix_length4", "chosen": {"stage1_lr_projection": 0.003},
              "baseline": {"stage1_lr_projection": 0.001}, "same_stage1": False, "same_stage2": False,
              "stage1_regret": 0.0043, "stage2_regret": None}
    run_id = log_lr_check(record, experiment="clapcap-test-analyses-lr")
    run = mlflow.get_run(run_id)
    assert run.info.run_name == "captioning/gpt2_prefix_length4/lr_check"
    assert run.data.metrics == {"val/stage1/loss_diff": 0.0043}
    assert run.data.params["chosen_stage1_lr_projection"] == "0.003"


def test_vocab_is_a_run_per_configuration_and_one_for_the_references(mlflow_uri):
    import mlflow

    from clapcap.tracked.caption_vocab import log_vocab

    record = {"configs": {
        "gpt2": {"seeds": [0, 1], "n_seeds": 2, "n_clips": [200, 200], "vocab": {"mean": 80.0, "std": 2.0},
                 "mean_words": {"mean": 15.5, "std": 0.5}},
        "decoding/gpt2/beam3": {"seeds": [0], "n_seeds": 1, "n_clips": [200], "vocab": {"mean": 81.0, "std": None},
                                "mean_words": {"mean": 15.6, "std": None}}},
        "references": {"vocab": 100, "vocab_single": 100.0, "mean_words": 13.97, "n_captions": 1000}}
    ids = log_vocab(record, experiment="clapcap-test-vocab")
    runs = {mlflow.get_run(i).info.run_name: mlflow.get_run(i).data.metrics for i in ids}
    assert runs["captioning/gpt2/vocab"] == {"test/vocab_mean": 80.0, "test/vocab_std": 2.0,
                                             "test/mean_words_mean": 15.5, "test/mean_words_std": 0.5}
    assert runs["captioning/decoding_gpt2_beam3/vocab"] == {"test/vocab_mean": 81.0, "test/mean_words_mean": 15.6}
    assert runs["captioning/references/vocab"]["test/vocab"] == 100.0
    parents = {mlflow.get_run(i).data.tags.get("mlflow.parentRunId") for i in ids}
    assert len(parents) == 1 and mlflow.get_run(parents.pop()).info.run_name == "captioning/vocab"
    real = log_vocab(record, experiment="clapcap-test-vocab", prefix="real_captioning")  # same experiment
    assert {mlflow.get_run(i).info.run_name for i in real} == {
        "real_captioning/gpt2/vocab", "real_captioning/decoding_gpt2_beam3/vocab", "real_captioning/references/vocab"}
    assert not set(real) & set(ids)  # its own runs, not the synthetic study's


def test_pipeline_vs_reference_per_subset(mlflow_uri):
    import mlflow

    from clapcap.tracked.caption_findings import log_pipeline_vs_reference

    def finding(fid, a, b):
        return {"id": fid, "metric": "cider_d", "a": a, "b": b, "effect": a - b}

    findings = [finding("captioning.pipeline.gpt2.vs_retrieval_captioner", 0.9, 0.8),
                finding("captioning.pipeline.gpt2.vs_retrieval_captioner.music", 2.0, 0.5),
                finding("captioning.pipeline.t5.vs_retrieval_captioner.music", 1.5, 0.5),
                finding("captioning.lm.t5.vs_gpt2", 0.1, 0.2),  # not a pipeline finding: left out
                # the real corpus's study: its own runs, not merged into the synthetic study's
                finding("real_captioning.pipeline.gpt2.vs_retrieval_captioner.unseen", 0.05, 0.04)]
    ids = log_pipeline_vs_reference(findings, experiment="clapcap-test-subsets")
    runs = {mlflow.get_run(i).info.run_name: mlflow.get_run(i).data.metrics for i in ids}
    assert set(runs) == {"captioning/gpt2/vs_retrieval_captioner", "captioning/t5/vs_retrieval_captioner",
                         "captioning/retrieval_captioner/subsets", "real_captioning/gpt2/vs_retrieval_captioner",
                         "real_captioning/retrieval_captioner/subsets"}
    assert runs["real_captioning/gpt2/vs_retrieval_captioner"] == {"test/unseen/cider_d_mean": 0.05,
                                                                    "test/unseen/cider_d_diff": pytest.approx(0.01)}
    gpt2 = runs["captioning/gpt2/vs_retrieval_captioner"]
    assert gpt2["test/cider_d_mean"] == 0.9 and gpt2["test/music/cider_d_mean"] == 2.0
    assert gpt2["test/music/cider_d_diff"] == pytest.approx(1.5)
    assert runs["captioning/retrieval_captioner/subsets"] == {"test/cider_d": 0.8, "test/music/cider_d": 0.5}
