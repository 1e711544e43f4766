"""MLflow tracking module on a temporary SQLite store."""

from __future__ import annotations

import pytest

from clapcap import tracking


def test_safe_keys_and_flatten():
    assert tracking.safe_key("t2a/R@1") == "t2a/R1"
    assert tracking.flatten({"t2a": {"r@1": 0.5}, "n": 3}) == {"t2a/r@1": 0.5, "n": 3}


def test_stage_run_logs_params_metrics_and_drops_secrets(mlflow_uri):
    import mlflow

    with tracking.stage_run("unit", experiment="clapcap-test",
                            params={"lr": 1e-3, "api_key": "sk-SECRET", "llm": {"token": "t0k"}}) as run:
        tracking.log_metrics({"t2a": {"r@1": 0.25, "map@10": 0.5}, "note": "text"})
    data = mlflow.get_run(run.info.run_id).data
    assert data.metrics == {"t2a/r1": 0.25, "t2a/map10": 0.5}
    assert data.params == {"lr": "0.001"}
    assert "sk-SECRET" not in str(data.params) and data.tags["clapcap.stage"] == "unit"


def test_failed_stage_marks_run_failed(mlflow_uri):
    import mlflow

    with pytest.raises(RuntimeError):
        with tracking.stage_run("boom", experiment="clapcap-test") as run:
            raise RuntimeError("crash")
    assert mlflow.get_run(run.info.run_id).info.status == "FAILED"


def test_register_model_and_alias(mlflow_uri, tmp_path):
    import mlflow

    class Echo(mlflow.pyfunc.PythonModel):
        def predict(self, context, model_input, params=None):
            return model_input

    with tracking.stage_run("register", experiment="clapcap-test"):
        uri = tracking.log_pyfunc_model(Echo(), "echo")
    version = tracking.register_model(uri, "clapcap-echo", alias="champion")
    assert version == 1
    assert int(tracking.get_model_version_by_alias("clapcap-echo", "champion").version) == 1


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
    with tracking.stage_run("register", experiment="clapcap-test"):
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
