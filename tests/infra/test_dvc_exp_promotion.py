"""`dvc exp run` with a worse configuration leaves `@champion` where it was (docs/tracking.md).

A temporary git + DVC repository holds the real `train_clap` stage on the tiny corpus. The
first `dvc repro` trains and registers version 1 as `@champion` (no champion yet). A `dvc exp
run` with a learning rate too small to learn anything registers version 2; the paired
bootstrap on the test queries does not show it better, so it becomes `@challenger`, with the
decision as tags on the version, and the champion stays version 1.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from dvc_repo import DVC, REPO, dvc_env, init_repo, run  # tests/support/dvc_repo.py

pytestmark = pytest.mark.distributed

MODEL = "exp-promotion-clap"


def _repo(root: Path, corpus: Path, env: dict[str, str]) -> None:
    (root / "pipelines").mkdir(parents=True)
    shutil.copy(REPO / "pipelines" / "train_clap.py", root / "pipelines")
    shutil.copytree(corpus, root / "data" / "corpus")
    params = {"compute": {"device": "cpu", "precision": "fp32"},
              "train_clap": {"dataset_dir": "data/corpus", "out_dir": "models/clap",
                             "optim": {"epochs": 6, "batch_size": 8, "lr": 0.003, "warmup_steps": 2, "seed": 0},
                             "collapse_alpha": 0.0, "track": True,
                             "registered_model": MODEL, "torch_threads": 1}}
    stage = {"cmd": "python pipelines/train_clap.py", "deps": ["pipelines/train_clap.py", "data/corpus"],
             "params": ["compute", "train_clap"],
             "outs": ["models/clap/model", "models/clap/train_result.json",
                      {"models/clap/checkpoints": {"persist": True, "cache": False}},
                      {"models/clap/cache": {"persist": True, "cache": False}}],
             "metrics": [{"models/clap/metrics.json": {"cache": False}}]}
    init_repo(root, params, {"train_clap": stage}, env, "tiny train_clap")


def test_worse_experiment_becomes_challenger(tmp_path, tiny_corpus):
    import mlflow

    root = tmp_path / "repo"
    store = tmp_path / "store"
    store.mkdir()
    tracking = f"sqlite:///{store / 'mlflow.db'}"
    env = dvc_env(tracking, OMP_NUM_THREADS="1")
    _repo(root, tiny_corpus, env)
    run([*DVC, "repro"], root, env)
    run([*DVC, "exp", "run", "-n", "worse", "-S", "train_clap.optim.lr=1e-7", "-S", "train_clap.optim.epochs=1"], root, env)

    mlflow.set_tracking_uri(tracking)
    client = mlflow.MlflowClient()
    assert str(client.get_model_version_by_alias(MODEL, "champion").version) == "1"
    assert str(client.get_model_version_by_alias(MODEL, "challenger").version) == "2"
    tags = client.get_model_version(MODEL, "2").tags
    assert tags["clapcap.decision"] == "challenger" and tags["clapcap.compared_to"] == "1"
    assert tags["clapcap.metric"] == "t2a/r@10" and float(tags["clapcap.p_value"]) >= 0.05
    assert client.get_model_version(MODEL, "1").tags["clapcap.reason"] == "no champion yet"
