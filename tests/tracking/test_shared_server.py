"""A shared tracking server, tested for real: PostgreSQL (backend store), a moto S3 server
(artifact store) and ``mlflow server``, all on 127.0.0.1 (tests/support/services.py).

Run with ``make test-services`` (``pytest -m services``); about a minute, most of it the
server's start-up.
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
import services
from optim_kw import params_with

from clapcap import tracking
from clapcap.clap.config import TrainClapParams
from clapcap.cli import main
from clapcap.retrieval.item_scores import ITEM_SCORES_FILE
from clapcap.tracked.clap import run_synth_clap

pytestmark = pytest.mark.services

REPO = Path(__file__).resolve().parents[2]
NAME = "services-synth-clap"

LOAD_CHAMPION = """
import json, sys
import numpy as np
from clapcap import tracking
model = tracking.load_pyfunc_model("models:/%s@champion")
emb = np.asarray(model.predict(["a dog barks", "rain falls on a roof"]))
print(json.dumps({"shape": list(emb.shape), "finite": bool(np.isfinite(emb).all()),
                  "version": tracking.alias_version("%s", "champion")}))
""" % (NAME, NAME)


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    """The three servers, started once for this module and stopped by PID afterwards."""
    t0 = time.monotonic()
    with services.mlflow_stack(tmp_path_factory.mktemp("servers")) as st:
        print(f"servers up in {time.monotonic() - t0:.1f} s: {st.startup_seconds}")
        yield st


def _other_machine_env(stack) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "AWS_"))}
    src = str(REPO / "src")
    return {**env, **stack.client_env(), "PYTHONPATH": os.pathsep.join([src, env.get("PYTHONPATH", "")])}


def _runs_in_postgres(stack) -> int:
    import psycopg2

    conn = psycopg2.connect(host=services.HOST, port=stack.postgres.port, user=services.PG_USER, dbname="mlflow")
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT count(*) FROM runs")
            return int(cur.fetchone()[0])
    finally:
        conn.close()


def test_stages_log_to_the_shared_server_and_another_machine_loads_the_champion(
        stack, tiny_corpus, tmp_path, monkeypatch, capsys):
    import mlflow

    t0 = time.monotonic()
    monkeypatch.setenv("MLFLOW_TRACKING_URI", stack.tracking_uri)
    monkeypatch.setenv("DVC_STAGE", "train_clap")  # as under `dvc repro`: only the pipeline moves @champion
    # A training stage and an evaluation stage, through the project's own library and CLI.
    params = params_with(TrainClapParams, dataset_dir=str(tiny_corpus), out_dir=str(tmp_path / "clap"), epochs=2, batch_size=8,
                             warmup_steps=2, collapse_alpha=0.0, registered_model=NAME, torch_threads=1)
    res = run_synth_clap(params, progress=False)
    dump = REPO / "tests" / "fixtures" / "dumps" / "clotho_like.npz"
    assert main(["retrieval", "evaluate", str(dump), "--out", str(tmp_path / "eval.json"), "--mlflow",
                 "--bootstrap", "50"]) == 0

    with capsys.disabled():
        print(f"train + evaluate stages: {time.monotonic() - t0:.1f} s")
    client = mlflow.MlflowClient(stack.tracking_uri)
    exp = client.get_experiment_by_name("clapcap-retrieval")
    runs = {r.data.tags["clapcap.stage"]: r for r in client.search_runs([exp.experiment_id])}
    assert set(runs) == {"train_clap", "evaluate_retrieval"}
    assert "val/t2a/r10" in runs["train_clap"].data.metrics  # the vocabulary (docs/tracking.md)
    assert runs["evaluate_retrieval"].data.metrics["test/t2a/r10"] >= 0
    assert _runs_in_postgres(stack) == 2  # the server's backend store is the PostgreSQL cluster

    # Artifacts went through the server into the S3 bucket, none to a local folder.
    keys = services.list_keys(stack.s3.url, stack.bucket)
    for suffix in ("train_result.json", "eval.json", ITEM_SCORES_FILE, "MLmodel"):
        assert any(k.endswith(suffix) for k in keys), f"no {suffix} in s3://{stack.bucket}: {keys}"
    assert all(r.info.artifact_uri.startswith("mlflow-artifacts:/") for r in runs.values())  # proxied

    # Aliases, and the registry verbs, against the server.
    assert tracking.alias_version(NAME, "champion") == 1
    v1 = client.get_model_version(NAME, "1")
    v2 = tracking.register_model(v1.source, NAME)
    assert client.get_model_version(NAME, str(v2)).run_id == v1.run_id
    assert main(["registry", "compare", NAME, "1", str(v2), "--bootstrap", "100"]) == 0
    assert "A-B +0.0000" in capsys.readouterr().out
    assert main(["registry", "promote", NAME, str(v2), "--by", "ci", "--reason", "services test"]) == 0
    assert client.get_model_version(NAME, str(v2)).tags["clapcap.previous_champion"] == "1"
    assert client.get_model_version_by_alias(NAME, "champion").version == str(v2)

    # Another machine: a fresh process in another folder, with only the server's address,
    # after the training folder is gone, loads models:/NAME@champion and embeds text with it.
    shutil.rmtree(res.model_dir)
    t0 = time.monotonic()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = subprocess.run([sys.executable, "-c", LOAD_CHAMPION], cwd=elsewhere, env=_other_machine_env(stack),
                         capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr[-3000:]
    with capsys.disabled():
        print(f"second process loaded @champion in {time.monotonic() - t0:.1f} s")
    loaded = json.loads(out.stdout.strip().splitlines()[-1])
    assert loaded == {"shape": [2, 64], "finite": True, "version": v2}
    assert not (elsewhere / "mlruns").exists()  # nothing fell back to a local store
