"""Experiments on DVC's queue: two queued parameter variants run by `dvc queue start --jobs 2`.

A temporary git + DVC repository holds one real stage (`evaluate_retrieval` on a committed
fixture dump). Both queued experiments run in DVC's temporary workspaces and must log to the
MLflow store named by an absolute ``MLFLOW_TRACKING_URI`` (not a store inside a workspace
that DVC throws away), and ``dvc exp show`` must list their metrics.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.distributed

REPO = Path(__file__).resolve().parents[2]
DVC = [sys.executable, "-m", "dvc"]


def _run(args: list[str], cwd: Path, env: dict[str, str], timeout: float = 120) -> str:
    out = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, f"{' '.join(args)}:\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}"
    return out.stdout


def _repo(root: Path, env: dict[str, str]) -> None:
    (root / "pipelines").mkdir(parents=True)
    shutil.copy(REPO / "pipelines" / "evaluate_retrieval.py", root / "pipelines")
    (root / "data").mkdir()
    shutil.copy(REPO / "tests" / "fixtures" / "dumps" / "clotho_like.npz", root / "data" / "test.npz")
    params = {"retrieval": {"dumps": ["data/test.npz"], "out_dir": "metrics/retrieval", "ks": [1, 5],
                            "n_resamples": 50, "confidence": 0.95, "seed": 0, "track": True}}
    (root / "params.yaml").write_text(yaml.safe_dump(params))
    stage = {"cmd": "python pipelines/evaluate_retrieval.py", "deps": ["pipelines/evaluate_retrieval.py",
                                                                       "data/test.npz"],
             "params": ["retrieval"], "metrics": [{"metrics/retrieval/test.json": {"cache": False}}]}
    (root / "dvc.yaml").write_text(yaml.safe_dump({"stages": {"evaluate_retrieval": stage}}))
    (root / ".gitignore").write_text("mlruns/\n")
    for cmd in (["git", "init", "-q"], ["git", "config", "user.email", "t@example.org"],
                ["git", "config", "user.name", "t"], [*DVC, "init", "-q"]):
        _run(cmd, root, env)
    _run(["git", "add", "-A"], root, env)
    _run(["git", "commit", "-qm", "tiny experiment"], root, env)


def test_dvc_queue_runs_two_variants_into_the_project_mlflow_store(tmp_path):
    root = tmp_path / "repo"
    tracking = f"sqlite:///{tmp_path / 'store' / 'mlflow.db'}"
    (tmp_path / "store").mkdir()
    bindir = str(Path(sys.executable).parent)
    env = {**os.environ, "MLFLOW_TRACKING_URI": tracking, "DVC_NO_ANALYTICS": "1",
           "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")]),
           "PATH": os.pathsep.join([bindir, os.environ.get("PATH", "")]), "GIT_TERMINAL_PROMPT": "0"}
    _repo(root, env)
    for conf in ("0.9", "0.8"):
        _run([*DVC, "exp", "run", "--queue", "-S", f"retrieval.confidence={conf}", "-n", f"conf{conf[2:]}"],
             root, env)
    start = time.monotonic()
    _run([*DVC, "queue", "start", "--jobs", "2"], root, env)
    try:
        while True:
            status = _run([*DVC, "queue", "status"], root, env)
            if "Queued" not in status and "Running" not in status:
                break
            assert time.monotonic() - start < 240, status
            time.sleep(2)
    finally:
        subprocess.run([*DVC, "queue", "stop", "--kill"], cwd=root, env=env, capture_output=True, timeout=60)
    print(f"dvc queue, 2 experiments with --jobs 2: {time.monotonic() - start:.1f} s")
    assert status.count("Success") == 2, status

    shown = json.loads(_run([*DVC, "exp", "show", "--json"], root, env))
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
