"""MLflow tracking module on a temporary SQLite store."""

from __future__ import annotations

import pytest

from clapcap import tracking


def test_safe_keys_and_flatten():
    assert tracking.safe_key("t2a/R@1") == "t2a/R1"
    assert tracking.flatten({"t2a": {"r@1": 0.5}, "n": 3}) == {"t2a/r@1": 0.5, "n": 3}


def test_tracked_logs_params_vocabulary_metrics_provenance_and_drops_secrets(mlflow_uri):
    import mlflow

    with tracking.tracked("unit", experiment="clapcap-test", name="unit/secrets",
                          params={"lr": 1e-3, "api_key": "sk-SECRET", "llm": {"token": "t0k"}}) as run:
        tracking.log_metrics({"t2a": {"r@1": 0.25, "map@10": 0.5}, "note": "text"}, scope="test")
    data = mlflow.get_run(run.info.run_id).data
    assert data.metrics == {"test/t2a/r1": 0.25, "test/t2a/map10": 0.5}
    assert data.params == {"lr": "0.001"}
    assert "sk-SECRET" not in str(data.params) and data.tags["clapcap.stage"] == "unit"
    assert set(tracking.runs.PROVENANCE_TAGS) <= set(data.tags)
    assert data.tags["clapcap.data_version"] == "none" and len(data.tags["clapcap.params_hash"]) == 64


def test_training_runs_log_system_metrics_and_other_runs_do_not(mlflow_uri, monkeypatch):
    import time

    import mlflow

    monkeypatch.setenv("MLFLOW_SYSTEM_METRICS_SAMPLING_INTERVAL", "0.5")
    with tracking.tracked("unit", experiment="clapcap-test", name="unit/train", system_metrics=True) as run:
        time.sleep(2.0)
    with tracking.tracked("unit", experiment="clapcap-test", name="unit/eval") as plain:
        time.sleep(1.0)
    trained = mlflow.get_run(run.info.run_id).data.metrics
    assert {"system/cpu_utilization_percentage", "system/system_memory_usage_megabytes"} <= set(trained)
    assert not [k for k in mlflow.get_run(plain.info.run_id).data.metrics if k.startswith("system/")]
    from clapcap.tracking.check import check_store

    assert not [p for p in check_store(mlflow_uri) if "system/" in p]  # MLflow's own names are not flagged


def test_one_key_per_concept():
    """The five spellings of text-to-audio R@10 that stages used to log map to one key."""
    from clapcap.tracking.vocab import VocabularyError, check_key, metric_key, metric_keys

    assert metric_key("r@10", scope="test", direction="t2a") == "test/t2a/r10"
    assert metric_key("t2a_r@10", scope="val") == "val/t2a/r10"  # CLAP training rows
    assert metric_key("r@10", scope="test", view="original", direction="t2a") == "test/t2a/r10"
    assert metric_key("r@10", scope="test", view="view2", direction="t2a") == "test/view2/t2a/r10"
    assert metric_keys({"t2a": {"r@10": 0.5, "ci": {"r@10": {"low": 0.4, "high": 0.6}}}, "flag": True},
                       scope="test") == {"test/t2a/r10": 0.5, "test/t2a/r10_ci_low": 0.4, "test/t2a/r10_ci_high": 0.6}
    for bad in ("t2a/R10", "t2a_r10", "final_val/t2a_r10", "CLAP/original/t2a/r10", "test/t2a/R@10"):
        with pytest.raises(VocabularyError):
            check_key(bad)
    with pytest.raises(VocabularyError, match="scope"):
        metric_key("r@10", scope="final_val")
    with pytest.raises(VocabularyError):
        tracking.log_keyed({"t2a/R10": 0.5})


def test_group_run_is_found_across_calls_and_children_nest(mlflow_uri):
    import mlflow

    parent = tracking.group_run("clapcap-test-groups", "g/baseline", stage="unit", params={"seeds": [0, 1]})
    assert tracking.group_run("clapcap-test-groups", "g/baseline", stage="unit") == parent
    for seed in (0, 1):
        with tracking.tracked("unit", experiment="clapcap-test-groups", name=f"g/baseline/seed{seed}",
                              parent=parent):
            tracking.log_metrics({"loss": 1.0}, scope="train", step=1)
    with tracking.resumed(parent, experiment="clapcap-test-groups"):
        tracking.log_metrics({"cider_d": 0.5}, scope="test", stat="std")
    runs = mlflow.search_runs(experiment_names=["clapcap-test-groups"], output_format="list")
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent]
    assert len(children) == 2 and mlflow.get_run(parent).data.metrics == {"test/cider_d_std": 0.5}


def test_resumed_reopens_a_run_of_another_experiment_than_the_active_one(mlflow_uri):
    """A process that set another active experiment (mlflow.set_experiment, or MLFLOW_EXPERIMENT_ID)
    can still reopen a group's parent: MLflow refuses a run whose experiment is not the active one."""
    import mlflow

    parent = tracking.group_run("clapcap-test-resume-a", "g/x", stage="unit", params={"seeds": [0, 1]})
    mlflow.set_experiment("clapcap-test-resume-b")
    with tracking.resumed(parent, experiment="clapcap-test-resume-a"):
        tracking.log_metrics({"cider_d": 0.25}, scope="test", stat="mean")
    assert mlflow.get_run(parent).data.metrics == {"test/cider_d_mean": 0.25}


def test_failed_stage_marks_run_failed(mlflow_uri):
    import mlflow

    with pytest.raises(RuntimeError):
        with tracking.tracked("boom", experiment="clapcap-test", name="unit/boom") as run:
            raise RuntimeError("crash")
    assert mlflow.get_run(run.info.run_id).info.status == "FAILED"


def test_register_model_and_alias(mlflow_uri, tmp_path):
    import mlflow

    class Echo(mlflow.pyfunc.PythonModel):
        def predict(self, context, model_input, params=None):
            return model_input

    with tracking.tracked("register", experiment="clapcap-test", name="unit/register"):
        uri = tracking.log_pyfunc_model(Echo(), "echo")
    version = tracking.register_model(uri, "clapcap-echo", alias="champion")
    assert version == 1
    assert int(tracking.get_model_version_by_alias("clapcap-echo", "champion").version) == 1
    # The requirements are the pinned list given to MLflow, not inferred from a model load.
    reqs = open(mlflow.pyfunc.get_model_dependencies(uri)).read()
    pinned = tracking.model_requirements()
    assert [r.split("==")[0] for r in pinned] == list(tracking.MODEL_PACKAGES)
    assert all(r in reqs for r in pinned) and "torch==" in reqs


def test_registered_model_loads_from_the_project_store_outside_a_run(tmp_path, monkeypatch):
    """A fresh process (no MLFLOW_TRACKING_URI, no run) in the project finds the stages' models."""
    import os
    import subprocess
    import sys

    import mlflow
    import pandas as pd

    class Echo(mlflow.pyfunc.PythonModel):
        def predict(self, context, model_input, params=None):
            return model_input

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.chdir(tmp_path)
    with tracking.tracked("register", experiment="clapcap-test", name="unit/register"):
        uri = tracking.log_pyfunc_model(Echo(), "echo", input_example=pd.DataFrame({"x": [1.0]}))
    tracking.register_model(uri, "clapcap-echo-local", alias="champion")
    code = ("import pandas as pd; from clapcap import tracking; "
            "m = tracking.load_pyfunc_model('models:/clapcap-echo-local@champion'); "
            "print(m.predict(pd.DataFrame({'x': [2.0]}))['x'].tolist())")
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "[2.0]"


def _race_once(monkeypatch, message: str):
    """Make the store's first dataset insert lose a race: another run stores the same dataset
    first, then the insert fails with ``message`` (MLflow's own words in CI, 2026-12-06)."""
    import mlflow
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

    real = SqlAlchemyStore._log_inputs_impl
    calls = []

    def racing(self, experiment_id, run_id, datasets=None, models=None):
        calls.append(run_id)
        if len(calls) == 1:
            other = mlflow.MlflowClient().create_run(experiment_id)
            real(self, experiment_id, other.info.run_id, datasets, models)
            raise mlflow.exceptions.MlflowException(message)
        return real(self, experiment_id, run_id, datasets, models)

    monkeypatch.setattr(SqlAlchemyStore, "_log_inputs_impl", racing)
    return calls


def test_a_dataset_another_run_stored_meanwhile_is_linked_not_a_failure(mlflow_uri, tmp_path, monkeypatch):
    import mlflow

    dump = tmp_path / "dumps" / "test.npz"
    dump.parent.mkdir()
    dump.write_bytes(b"not really an npz")
    calls = _race_once(monkeypatch, "(sqlite3.IntegrityError) UNIQUE constraint failed: datasets.experiment_id, "
                                    "datasets.name, datasets.digest")
    with tracking.tracked("unit", experiment="clapcap-test", name="unit/race", dump=dump) as run:
        pass
    assert len(calls) == 2 and calls[0] == calls[1] == run.info.run_id
    inputs = mlflow.get_run(run.info.run_id).inputs.dataset_inputs
    assert [i.dataset.name for i in inputs] == ["dumps/test.npz"]
    assert mlflow.get_run(run.info.run_id).info.status == "FINISHED"


def test_other_input_errors_are_not_tried_again(mlflow_uri, tmp_path, monkeypatch):
    import mlflow

    dump = tmp_path / "test.npz"
    dump.write_bytes(b"x")
    calls = _race_once(monkeypatch, "some other store failure")
    with pytest.raises(mlflow.exceptions.MlflowException, match="some other store failure"):
        with tracking.tracked("unit", experiment="clapcap-test", name="unit/other", dump=dump):
            pass
    assert len(calls) == 1
