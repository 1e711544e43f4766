"""Experiments on DVC's queue: two queued parameter variants run by `dvc queue start --jobs 2`.

A temporary git + DVC repository holds one real stage (`evaluate_retrieval` on a committed
fixture dump). Both queued experiments run in DVC's temporary workspaces and must log to the
MLflow store named by an absolute ``MLFLOW_TRACKING_URI`` (not a store inside a workspace
that DVC throws away), and ``dvc exp show`` must list their metrics.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from dvc_repo import DVC, REPO, dvc_env, init_repo, run  # tests/support/dvc_repo.py

pytestmark = pytest.mark.distributed


def _repo(root: Path, env: dict[str, str]) -> None:
    (root / "pipelines").mkdir(parents=True)
    shutil.copy(REPO / "pipelines" / "evaluate_retrieval.py", root / "pipelines")
    (root / "data").mkdir()
    shutil.copy(REPO / "tests" / "fixtures" / "dumps" / "clotho_like.npz", root / "data" / "test.npz")
    params = {"retrieval": {"dumps": ["data/test.npz"], "out_dir": "metrics/retrieval", "ks": [1, 5],
                            "n_resamples": 50, "confidence": 0.95, "seed": 0, "track": True}}
    stage = {"cmd": "python pipelines/evaluate_retrieval.py", "deps": ["pipelines/evaluate_retrieval.py",
                                                                       "data/test.npz"],
             "params": ["retrieval"], "metrics": [{"metrics/retrieval/test.json": {"cache": False}}]}
    init_repo(root, params, {"evaluate_retrieval": stage}, env, "tiny experiment")


def _failed_logs(root, env, status: str) -> str:
    """``dvc queue logs`` of every experiment the status table lists as failed (so a CI failure
    names its cause)."""
    names = [line.split()[1] for line in status.splitlines() if "Failed" in line and len(line.split()) > 1]
    logs = [subprocess.run([*DVC, "queue", "logs", name], cwd=root, env=env, capture_output=True, text=True,
                           timeout=60).stdout[-4000:] for name in names]
    return "\n".join(f"--- dvc queue logs {n}:\n{text}" for n, text in zip(names, logs, strict=True))


def test_dvc_queue_runs_two_variants_into_the_project_mlflow_store(tmp_path):
    root = tmp_path / "repo"
    tracking = f"sqlite:///{tmp_path / 'store' / 'mlflow.db'}"
    (tmp_path / "store").mkdir()
    env = dvc_env(tracking)
    _repo(root, env)
    for conf in ("0.9", "0.8"):
        run([*DVC, "exp", "run", "--queue", "-S", f"retrieval.confidence={conf}", "-n", f"conf{conf[2:]}"],
             root, env)
    start = time.monotonic()
    # The queue's workers are detached daemons that inherit the command's stdout and stderr: a
    # captured pipe stays open until they exit, so waiting on it hung past its timeout twice
    # (the command itself had returned). Its output goes to a file instead.
    log = tmp_path / "queue_start.log"
    with log.open("w") as out:
        started = subprocess.run([*DVC, "queue", "start", "--jobs", "2"], cwd=root, env=env, stdout=out,
                                 stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, timeout=120)
    assert started.returncode == 0, log.read_text()[-3000:]
    try:
        while True:
            status = run([*DVC, "queue", "status"], root, env)
            if "Queued" not in status and "Running" not in status:
                break
            assert time.monotonic() - start < 240, status
            time.sleep(2)
    finally:
        subprocess.run([*DVC, "queue", "stop", "--kill"], cwd=root, env=env, capture_output=True, timeout=60)
    print(f"dvc queue, 2 experiments with --jobs 2: {time.monotonic() - start:.1f} s")
    assert status.count("Success") == 2, status + _failed_logs(root, env, status)

    shown = json.loads(run([*DVC, "exp", "show", "--json"], root, env))
    exps = {e["name"]: e for rev in shown for e in (rev.get("experiments") or [])
            for e in (e.get("revs") or [])}
    assert {"conf9", "conf8"} <= set(exps), sorted(exps)
    for name in ("conf9", "conf8"):
        metrics = exps[name]["data"]["metrics"]["metrics/retrieval/test.json"]["data"]
        assert metrics, name

    import mlflow

    mlflow.set_tracking_uri(tracking)
    runs = mlflow.search_runs(experiment_names=["clapcap-retrieval"])
    assert sorted(runs["params.confidence"]) == ["0.8", "0.9"]
    assert set(runs["status"]) == {"FINISHED"}
    assert not (root / "mlruns").exists()
