"""MLflow bookkeeping (docs/tracking.md): DVC provenance only under DVC, run names without
output paths, parents that carry their children's summary, and a store check that reports
failed runs that logged nothing."""

from __future__ import annotations

import pytest

from clapcap import tracking


@pytest.fixture
def fresh_store(tmp_path, monkeypatch):
    (tmp_path / "store").mkdir()
    uri = f"sqlite:///{tmp_path / 'store' / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    return uri


def test_dvc_stage_tag_only_under_dvc(monkeypatch):
    monkeypatch.delenv("DVC_STAGE", raising=False)
    assert tracking.provenance("train_clap", {})["clapcap.dvc_stage"] == "none"  # a `clapcap` verb
    assert tracking.dvc_stage() is None
    monkeypatch.setenv("DVC_STAGE", "caption_lm@0")  # what DVC sets for each stage command
    assert tracking.provenance("captioning-run", {})["clapcap.dvc_stage"] == "caption_lm@0"


def test_store_check_reports_a_failed_run_that_logged_no_metric(fresh_store):
    from clapcap.tracking.check import check_store

    with pytest.raises(RuntimeError):
        with tracking.tracked("unit", experiment="t-failed", name="a/crashed", params={"x": 1}):
            raise RuntimeError("crash before any metric")
    with tracking.tracked("unit", experiment="t-failed", name="a/fine", params={"x": 2}):
        tracking.log_metrics({"loss": 1.0}, scope="train")
    problems = check_store(fresh_store)
    assert len(problems) == 1 and "'a/crashed'" in problems[0] and "empty FAILED run" in problems[0]


def test_store_check_reports_a_parent_without_metrics(fresh_store):
    from clapcap.tracking.check import check_store

    parent = tracking.group_run("t-parents", "g/cfg", stage="unit", params={"seeds": [0, 1]})
    for seed in (0, 1):
        with tracking.tracked("unit", experiment="t-parents", name=f"g/cfg/seed{seed}", parent=parent,
                              params={"seed": seed}):
            tracking.log_metrics({"cider_d": 0.5 + seed}, scope="test")
    problems = check_store(fresh_store)
    assert len(problems) == 1 and "parent run 'g/cfg'" in problems[0] and "has no metrics" in problems[0]
    with tracking.resumed(parent, experiment="t-parents"):
        tracking.log_metrics({"cider_d": 1.0}, scope="test", stat="mean")
    assert check_store(fresh_store) == []


def test_lr_search_parent_carries_its_best_trials(fresh_store, tiny_corpus):
    import mlflow

    from clapcap.config import from_dict
    from clapcap.experiments.captioning import study as exp
    from clapcap.tracked.captioning import MLflowTracker
    from clapcap.tracking.check import check_store

    params = from_dict(exp.CaptioningParams, {"dataset_dir": str(tiny_corpus), "lms": ["gpt2"],
                                              "models": {"gpt2": {"decoder": "gpt2"}}})
    best = {"stage1_lr_projection": 1e-3, "stage2_lr_projection": 1e-3, "stage2_lr_lm": 3e-3,
            "stage1_trials": [{"lr_projection": 1e-3, "val_loss": 2.5}, {"lr_projection": 1e-2, "val_loss": 3.0}],
            "stage2_trials": [{"lr_projection": 1e-3, "lr_lm": 1e-3, "val_loss": 2.2},
                              {"lr_projection": 1e-3, "lr_lm": 3e-3, "val_loss": 2.0}]}
    with tracking.tracked("captioning-lr-search", experiment="t-lr", name="captioning/gpt2/lr_search",
                          params={"lm": "gpt2"}) as run:
        MLflowTracker().lr_trials(params, "gpt2", best)
    data = mlflow.get_run(run.info.run_id).data
    assert data.metrics == {"val/loss_stage1": 2.5, "val/loss_stage2": 2.0}  # the chosen trials' values
    assert data.params["stage2_lr_lm"] == "0.003"  # and their LRs
    assert check_store(fresh_store) == []


def test_robust_run_name_says_what_the_fine_tune_is_not_where_it_is_written():
    from clapcap.robust.config import RobustTrainParams
    from clapcap.robust.loss import MultiViewLossConfig
    from clapcap.robust.train import robust_model_label

    control = MultiViewLossConfig(w_view1=0.0, w_view2=0.0, w_align=0.0)
    assert robust_model_label(RobustTrainParams(out_dir="/abs/checkout/models/x")) == "robust_clap"
    assert robust_model_label(RobustTrainParams(out_dir="/abs/y", loss=control)) == "robust_control"
