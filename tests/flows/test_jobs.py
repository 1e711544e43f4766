"""Deployable flows: project-root paths, the MLflow store, Prefect's global concurrency limits."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
import yaml


def test_resolve_paths_anchors_relative_paths_at_the_root(tmp_path):
    from clapcap.flows.project import resolve_paths

    (tmp_path / "models").mkdir()
    raw = {"out_dir": "results/x", "dump": "", "dumps": ["data/a.npz", "/abs/b.npz"],
           "datasets": {"corpus": "data/corpus"}, "cache_path": "s3://bucket/c.jsonl", "ks": [1, 5],
           "encoders": {"hub": {"checkpoint": "laion/clap-htsat-unfused"},
                        "local": {"checkpoint": "models/synth_clap/model"}},
           "models": {"CLAP": "models/synth_clap/model", "gpt2": {"decoder": "gpt2", "pretrained_dir": ""}}}
    out = resolve_paths(raw, tmp_path)
    assert out["out_dir"] == str(tmp_path / "results/x") and out["dump"] == ""
    assert out["dumps"] == [str(tmp_path / "data/a.npz"), "/abs/b.npz"]
    assert out["datasets"] == {"corpus": str(tmp_path / "data/corpus")}
    assert out["cache_path"] == "s3://bucket/c.jsonl" and out["ks"] == [1, 5]
    assert out["encoders"]["hub"]["checkpoint"] == "laion/clap-htsat-unfused"  # a Hub id, kept
    assert out["encoders"]["local"]["checkpoint"] == str(tmp_path / "models/synth_clap/model")
    assert out["models"]["CLAP"] == str(tmp_path / "models/synth_clap/model")
    assert out["models"]["gpt2"] == {"decoder": "gpt2", "pretrained_dir": ""}


def test_params_resolve_against_the_project_not_the_cwd(tmp_path, monkeypatch):
    from clapcap.experiments.captioning.config import CaptioningParams
    from clapcap.flows.project import load_project_section, project_tracking

    project = tmp_path / "project"
    project.mkdir()
    (project / "params.yaml").write_text(yaml.safe_dump({"captioning": {"out_dir": "results/captioning"}}))
    monkeypatch.chdir(tmp_path)  # a worker's directory, not the project
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.delenv("CLAPCAP_PROJECT_ROOT", raising=False)
    params = load_project_section(CaptioningParams, "captioning", project / "params.yaml")
    assert params.out_dir == str(project / "results" / "captioning")
    assert Path(params.dataset_dir) == project / "data" / "corpus"  # a default, resolved too
    monkeypatch.setenv("CLAPCAP_PROJECT_ROOT", str(project))
    assert load_project_section(CaptioningParams, "captioning", "params.yaml").out_dir == params.out_dir
    with project_tracking("params.yaml") as uri:
        assert uri == f"sqlite:///{project / 'mlruns' / 'mlflow.db'}"
    assert "MLFLOW_TRACKING_URI" not in __import__("os").environ  # restored
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://mlflow.example:5000")
    with project_tracking("params.yaml") as uri:
        assert uri == "http://mlflow.example:5000"


def test_unknown_configuration_names_the_known_ones(tmp_path):
    from clapcap.flows.jobs import captioning_config

    (tmp_path / "params.yaml").write_text(yaml.safe_dump({"captioning": {"lms": ["gpt2"], "noise_seeds": [0]}}))
    with pytest.raises(ValueError, match=r"no configuration 'nope'.*gpt2_seed0"):
        captioning_config.fn("nope", str(tmp_path / "params.yaml"))


def test_without_a_prefect_api_limits_are_not_enforced(monkeypatch):
    from clapcap.utils import limits

    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    monkeypatch.setattr(limits, "prefect_api_url", lambda: "")
    with limits.concurrency_slot("clapcap-test"):
        pass
    assert limits.ensure_limit("clapcap-test", 2) is False
    with pytest.raises(ValueError, match=">= 1"):
        limits.ensure_limit("clapcap-test", 0)


def test_prefect_limit_caps_across_threads_and_is_never_skipped(prefect_env):
    from clapcap.utils import limits

    assert limits.prefect_api_url()  # the harness's server
    with pytest.raises(limits.ConcurrencyLimitMissing, match="prefect gcl create clapcap-missing"):
        with limits.concurrency_slot("clapcap-missing"):
            pass
    assert limits.ensure_limit("clapcap-one", 1) is True
    assert limits.ensure_limit("clapcap-one", 3) is False  # the server's value is kept
    active, peak, lock = [0], [0], threading.Lock()

    def hold() -> None:
        with limits.concurrency_slot("clapcap-one"):
            with lock:
                active[0] += 1
                peak[0] = max(peak[0], active[0])
            time.sleep(0.3)
            with lock:
                active[0] -= 1

    threads = [threading.Thread(target=hold) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert peak[0] == 1
