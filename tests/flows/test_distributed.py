"""The captioning sweep on a real Prefect server with two process workers (make test-distributed).

The server and the MLflow store are on PostgreSQL, as Prefect and MLflow advise for several
concurrent writers: on SQLite the server logged ``database is locked`` for worker heartbeats,
and one CI run saw the first sweep fail.

One test, in phases, on one server: deploy with the repository's prefect.yaml; run the sweep
(every configuration completes exactly once, both workers ran configurations, results and
MLflow runs are in place); run it again on a second output folder and ``kill -9`` a worker
in the middle of a configuration (no half-written result); re-run the deployment, which
completes only the missing configurations.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
import yaml
from caption_fixtures import TINY_MODEL, make_dump
from prefect_cluster import Cluster, kill_tree
from services import create_database, start_postgres

pytestmark = pytest.mark.distributed

REPO = Path(__file__).resolve().parents[2]
SWEEP, CONFIG = "clapcap-captioning-sweep/local", "clapcap-captioning-config/local"
POOL = "clapcap-local"


def _write_params(root: Path, name: str, out_dir: str) -> Path:
    train = {"batch_size": 32, "lm_pretrain_epochs": 0, "stage1": {"epochs": 1}, "stage2": {"epochs": 1},
             "torch_threads": 1}
    section = {"dataset_dir": "data/corpus", "dump": "data/dump.npz", "out_dir": out_dir, "lms": ["gpt2"],
               "models": {"gpt2": {"decoder": "gpt2", **TINY_MODEL}}, "train": {"gpt2": train},
               "noise_seeds": [0], "use_lr_search": False,
               "arch": {"prefix_length": [2], "dropout": [], "projection_depth": []}, "decoding_ablation": {},
               "metrics": ["bleu_1", "cider_d"], "selection_metrics": ["cider_d"], "track": True,
               "progress": False}
    path = root / name
    path.write_text(yaml.safe_dump({"captioning": section}))
    return path


def _names(params_file: Path) -> set[str]:
    from clapcap.experiments.captioning.config import CaptioningParams
    from clapcap.experiments.captioning.study import all_specs
    from clapcap.flows.project import load_project_section

    return {s.name for s in all_specs(load_project_section(CaptioningParams, "captioning", params_file))}


def _run_sweep(params_file: Path, *, extras: bool = True) -> str:
    from prefect.deployments import run_deployment

    run = run_deployment(SWEEP, parameters={"params_file": str(params_file), "config_deployment": CONFIG,
                                            "register_best": False, "extras": extras, "gpu_slots": 4,
                                            "poll_s": 1.0},
                         timeout=0, as_subflow=False)
    return str(run.id)


def _runs(client):
    from prefect.client.schemas.filters import DeploymentFilter, DeploymentFilterName, FlowRunFilter

    deployments = client.read_deployments(deployment_filter=DeploymentFilter(
        name=DeploymentFilterName(any_=["local"])))
    config_id = next(d.id for d in deployments if d.entrypoint.endswith(":captioning_config"))
    from prefect.client.schemas.filters import FlowRunFilterDeploymentId

    return client.read_flow_runs(flow_run_filter=FlowRunFilter(
        deployment_id=FlowRunFilterDeploymentId(any_=[config_id])), limit=200)


def _wait_final(client, run_id: str, timeout_s: float = 240) -> str:
    start = time.monotonic()
    while time.monotonic() - start < timeout_s:
        state = client.read_flow_run(run_id).state
        if state and state.is_final():
            return state.type.value
        time.sleep(1)
    raise TimeoutError(f"flow run {run_id} not final after {timeout_s} s")


def _explain(client, cluster: Cluster, run_id: str) -> str:
    """Why a flow run did not complete: its state message, its children's, and the error lines
    of every process's log (so a CI failure names its cause)."""
    run = client.read_flow_run(run_id)
    lines = [f"parent {run.name}: {run.state.type.value}: {run.state.message}"]
    for name, child in sorted(_children(_runs(client), run_id).items()):
        lines.append(f"  {name}: {child.state.type.value}: {child.state.message}")
    for proc, log in cluster.logs.items():
        text = log.read_text(errors="replace").splitlines() if log.is_file() else []
        hits = [i for i, line in enumerate(text) if "Traceback" in line or "| ERROR" in line]
        for i in hits[:3]:
            lines.append(f"--- {proc}.log line {i + 1}:")
            lines.extend(text[i:i + 40])
    return "\n".join(lines)


def _flow_runs_in_postgres(port: int) -> int:
    import psycopg2

    conn = psycopg2.connect(host="127.0.0.1", port=port, user="postgres", dbname="prefect")
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT count(*) FROM flow_run")
            return int(cur.fetchone()[0])
    finally:
        conn.close()


def _children(runs, parent: str) -> dict[str, object]:
    return {r.name.removeprefix("config-"): r for r in runs if (r.idempotency_key or "").startswith(f"{parent}:")}


def _results_ok(out: Path) -> set[str]:
    """Names of the finished results; every visible result file must be complete JSON."""
    done = set()
    for path in (out / "results").glob("[!.]*.json"):
        record = json.loads(path.read_text())  # a truncated file fails here
        assert {"val", "test", "checkpoint"} <= set(record)
        done.add(path.stem)
    return done


@pytest.fixture
def project(tmp_path, tiny_corpus):
    root = tmp_path / "project"
    shutil.copytree(tiny_corpus, root / "data" / "corpus")
    make_dump(root / "data" / "corpus", root / "data" / "dump.npz")
    return root


@pytest.fixture
def pg():
    """A PostgreSQL cluster with the databases ``prefect`` and ``mlflow``, stopped by its PID after."""
    server = start_postgres()
    try:
        for database in ("prefect", "mlflow"):
            create_database(server.port, database)
        yield server
    finally:
        server.stop()


def test_sweep_on_two_workers_shares_work_and_survives_kill(project, tmp_path, pg):
    import mlflow
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, PREFECT_HOME, temporary_settings
    from prefect.states import Crashed

    tracking = pg.sqlalchemy_uri("mlflow")
    env = {"MLFLOW_TRACKING_URI": tracking,
           "PREFECT_API_DATABASE_CONNECTION_URL": f"postgresql+asyncpg://postgres@127.0.0.1:{pg.port}/prefect",
           "CLAPCAP_AAC_CACHE": str(tmp_path / "aac"), "HF_HUB_OFFLINE": "1",
           "PYTHONPATH": f"{REPO / 'src'}", "PREFECT_LOGGING_LEVEL": "INFO", "PREFECT_WORKER_QUERY_SECONDS": "1",
           "PREFECT_WORKER_PREFETCH_SECONDS": "2", "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
    params1 = _write_params(project, "params.yaml", "results/captioning")
    params2 = _write_params(project, "params_kill.yaml", "results/captioning_kill")
    names = _names(params1)
    assert len(names) == 3
    cluster = Cluster(tmp_path, env)
    try:
        took = cluster.start_server()
        print(f"prefect server healthy after {took:.1f} s")
        cluster.cli("work-pool", "create", POOL, "--type", "process")  # as a user would
        cluster.cli("--no-prompt", "deploy", "--all", cwd=REPO)
        for worker in ("w1", "w2"):
            cluster.start_worker(worker, POOL, cwd=project)
        with temporary_settings({PREFECT_API_URL: cluster.api_url, PREFECT_HOME: tmp_path / "prefect"}), \
                get_client(sync_client=True) as client:
            # 1. The sweep: every configuration exactly once, both workers ran some.
            t0 = time.monotonic()
            parent = _run_sweep(params1)
            assert _wait_final(client, parent) == "COMPLETED", _explain(client, cluster, parent)
            print(f"sweep of {len(names)} configurations: {time.monotonic() - t0:.1f} s")
            runs = _runs(client)
            children = _children(runs, parent)
            assert set(children) == names
            assert all(r.state.type.value == "COMPLETED" for r in children.values())
            mine = [r for r in runs if r.parameters.get("params_file") == str(params1)]
            assert sorted(r.name for r in mine) == sorted(f"config-{n}" for n in names)  # exactly once
            ids = {str(r.id) for r in children.values()}
            per_worker = {w: ids & cluster.flow_runs_of(w) for w in ("w1", "w2")}
            assert all(per_worker.values()), per_worker
            assert _results_ok(project / "results" / "captioning") == names
            assert (project / "results" / "captioning" / "summary.md").is_file()
            mlflow.set_tracking_uri(tracking)
            evals = mlflow.search_runs(experiment_names=["clapcap-captioning"],
                                       filter_string="tags.`clapcap.stage` = 'captioning-run'")
            assert sorted(evals["tags.clapcap.config"]) == sorted(names)  # one run per configuration
            assert set(evals["status"]) == {"FINISHED"}
            assert not (project / "mlruns").exists()  # MLFLOW_TRACKING_URI, not a store in a cwd
            assert _flow_runs_in_postgres(pg.port) >= len(names) + 1  # the server's store is PostgreSQL

            # 2. kill -9 a worker in the middle of a configuration.
            out2 = project / "results" / "captioning_kill"
            parent2 = _run_sweep(params2, extras=False)
            victim, killed_config = _kill_mid_run(client, cluster, parent2, out2)
            assert killed_config not in _results_ok(out2)  # no half-written result
            zombies = cluster.flow_runs_of(victim)
            for run in _runs(client) + [client.read_flow_run(parent2)]:
                if str(run.id) in zombies and not run.state.is_final():
                    client.set_flow_run_state(run.id, Crashed(message="worker killed"), force=True)
            _wait_final(client, parent2)
            for run in _children(_runs(client), parent2).values():
                _wait_final(client, str(run.id))
            done = _results_ok(out2)
            assert killed_config not in done

            # 3. Re-running the deployment completes only the missing configurations.
            parent3 = _run_sweep(params2, extras=False)
            assert _wait_final(client, parent3) == "COMPLETED", _explain(client, cluster, parent3)
            assert set(_children(_runs(client), parent3)) == names - done
            assert _results_ok(out2) == names
            completed = [r.name for r in _runs(client)
                         if r.parameters.get("params_file") == str(params2) and r.state.type.value == "COMPLETED"]
            assert sorted(completed) == sorted(f"config-{n}" for n in names)
            assert not (REPO / "results" / "captioning_kill").exists()  # the flow runs' cwd is REPO
    finally:
        cluster.close()


def _kill_mid_run(client, cluster: Cluster, parent: str, out: Path, timeout_s: float = 240) -> tuple[str, str]:
    """Wait until a configuration is training (its run folder exists, its result does not)
    on a worker, then kill -9 that worker and its flow runs. Returns (worker, configuration)."""
    start = time.monotonic()
    while time.monotonic() - start < timeout_s:
        for name, run in _children(_runs(client), parent).items():
            training = (out / "runs" / name).is_dir() and not (out / "results" / f"{name}.json").is_file()
            if run.state.type.value != "RUNNING" or not training:
                continue
            for worker in ("w1", "w2"):
                if str(run.id) in cluster.flow_runs_of(worker):
                    kill_tree(cluster.procs[worker].pid)
                    return worker, name
        time.sleep(0.3)
    raise TimeoutError("no configuration was seen training")
