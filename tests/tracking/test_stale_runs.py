"""Runs left RUNNING by a killed process (docs/tracking.md, "Runs a kill leaves behind"): the
rerun continues the dead run of its configuration (or ends it KILLED), a run of a live
concurrent process is left alone, and the store check names the stale ones."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from clapcap import tracking
from clapcap.tracking.liveness import PROCESS_TAG, process_state, process_tag

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# A stage that opens its run, logs epoch 1, says so and hangs until killed.
_HANG = textwrap.dedent("""
    import json, pathlib, sys, time
    from clapcap import tracking
    spec = json.loads(sys.argv[1])
    with tracking.tracked("unit", experiment=spec["experiment"], name=spec["name"], params=spec["params"]) as run:
        tracking.log_metrics({"loss": 2.0}, scope="train", step=1)
        pathlib.Path(spec["marker"]).write_text(run.info.run_id)
        while True:
            time.sleep(60)
""")


@pytest.fixture
def fresh_store(tmp_path, monkeypatch):
    (tmp_path / "store").mkdir()
    uri = f"sqlite:///{tmp_path / 'store' / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    tracking.open_store(uri, "t-stale")  # the schema, before any subprocess races for it
    return uri


@pytest.fixture
def hanging_stage(tmp_path):
    """``start(name, params) -> (process, run id)``: a stage in its run, hanging; killed at teardown."""
    procs = []

    def start(name: str, params: dict) -> tuple[subprocess.Popen, str]:
        marker = tmp_path / f"marker{len(procs)}"
        spec = {"experiment": "t-stale", "name": name, "params": params, "marker": str(marker)}
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.path.join(REPO, "src"), os.environ.get("PYTHONPATH", "")])}
        proc = subprocess.Popen([sys.executable, "-c", _HANG, json.dumps(spec)], env=env)
        procs.append(proc)
        deadline = time.monotonic() + 120
        while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert marker.exists(), f"the stage never opened its run (exit {proc.poll()})"
        return proc, marker.read_text()

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)


def _runs(name: str):
    import mlflow

    exp = mlflow.get_experiment_by_name("t-stale")
    return [r for r in mlflow.MlflowClient().search_runs([exp.experiment_id]) if r.info.run_name == name]


def _kill_9(proc: subprocess.Popen) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


def test_a_rerun_after_kill_9_continues_the_dead_run(fresh_store, hanging_stage):
    import mlflow

    proc, killed_id = hanging_stage("unit/cfg/seed0", {"x": 1})
    _kill_9(proc)
    [left] = _runs("unit/cfg/seed0")
    assert left.info.status == "RUNNING" and process_state(left.data.tags[PROCESS_TAG]) == "dead"

    with tracking.tracked("unit", experiment="t-stale", name="unit/cfg/seed0", params={"x": 1}) as run:
        assert run.info.run_id == killed_id  # continued, not a second run
        tracking.log_metrics({"loss": 1.0}, scope="train", step=2)
    [run] = _runs("unit/cfg/seed0")
    assert run.info.status == "FINISHED" and run.info.end_time is not None
    history = mlflow.MlflowClient().get_metric_history(run.info.run_id, "train/loss")
    assert [(m.step, m.value) for m in history] == [(1, 2.0), (2, 1.0)]  # the epochs before the kill stay


def test_a_dead_run_of_another_configuration_ends_killed(fresh_store, hanging_stage):
    proc, killed_id = hanging_stage("unit/cfg", {"x": 1})
    _kill_9(proc)
    with tracking.tracked("unit", experiment="t-stale", name="unit/cfg", params={"x": 2}) as run:
        tracking.log_metrics({"loss": 1.0}, scope="train")
    status = {r.info.run_id: r.info.status for r in _runs("unit/cfg")}
    assert status == {killed_id: "KILLED", run.info.run_id: "FINISHED"}


def test_a_live_concurrent_run_is_left_alone(fresh_store, hanging_stage):
    from clapcap.tracking.check import check_store

    proc, live_id = hanging_stage("unit/cfg/seed1", {"x": 1})
    with tracking.tracked("unit", experiment="t-stale", name="unit/cfg/seed1", params={"x": 1}) as run:
        tracking.log_metrics({"loss": 1.0}, scope="train")
    assert run.info.run_id != live_id
    status = {r.info.run_id: r.info.status for r in _runs("unit/cfg/seed1")}
    assert status == {live_id: "RUNNING", run.info.run_id: "FINISHED"}
    assert not [p for p in check_store(fresh_store) if "RUNNING" in p]  # alive: not stale
    assert proc.poll() is None


def test_store_check_names_stale_running_runs(fresh_store):
    import mlflow

    from clapcap.tracking.check import check_store

    client = mlflow.MlflowClient()
    exp_id = mlflow.get_experiment_by_name("t-stale").experiment_id
    sleeper = subprocess.Popen(["sleep", "60"])
    dead_tag = process_tag(sleeper.pid)  # recorded while it runs, then it is gone
    sleeper.kill()
    sleeper.wait(timeout=30)
    planted = {}
    for name, tags, age_h in [("dead", {PROCESS_TAG: dead_tag}, 0), ("old", {}, 72), ("young", {}, 1),
                              ("mine", {PROCESS_TAG: process_tag()}, 72)]:
        run = client.create_run(exp_id, run_name=f"unit/{name}", tags={**tracking.provenance("unit", {}), **tags},
                                start_time=int((time.time() - age_h * 3600) * 1000))
        client.log_metric(run.info.run_id, "train/loss", 1.0)
        planted[name] = run.info.run_id
    stale = [p for p in check_store(fresh_store) if "RUNNING" in p]
    assert len(stale) == 2, stale
    for name in ("dead", "old"):
        assert any(f"t-stale: run 'unit/{name}' ({planted[name]})" in p for p in stale), stale
    assert "process" in " ".join(stale) and "24 h" in " ".join(stale)
