"""The one helper that stages call at their edges: :func:`tracked` opens an MLflow run, logs
its params, its provenance and its inputs, and closes it (FAILED when the body raises).

Provenance tags on every run (docs/tracking.md, "Provenance"):

- ``clapcap.stage`` (the library step), ``clapcap.dvc_stage`` (``$DVC_STAGE``, which DVC sets
  for every stage command of ``dvc repro`` and ``dvc exp run``; ``none`` for a run outside DVC:
  a ``clapcap`` verb, a Prefect flow, a notebook), ``clapcap.git_commit`` (``git rev-parse
  HEAD`` of the working folder, ``unknown`` outside a repository);
- ``clapcap.params_hash``: SHA-256 of the params section as logged;
- ``clapcap.data_version``: :func:`clapcap.data.prepare.dataset_fingerprint` of the prepared
  dataset (``none`` for a stage that reads none);
- the dataset and the embedding dump as MLflow dataset inputs (a meta dataset: name,
  relative path, content digest), so the runs table's Dataset column says what it saw.

Seed groups and searches: :func:`group_run` finds or creates the parent run of a group
(by its name, across processes), and ``tracked(..., parent=run_id)`` nests a run under it.

Runs a kill leaves behind: every run records its process (``clapcap.process``,
:mod:`clapcap.tracking.liveness`). A process killed with SIGKILL leaves its run RUNNING; when
:func:`tracked` opens a run of that name again, it continues the dead run of the same
configuration (stage, params hash, data version) instead of opening a second one, and ends any
other dead RUNNING run of that name KILLED. A run whose process is alive (a concurrent stage)
or cannot be seen (another host) is left alone.
"""

from __future__ import annotations

import logging
import os
import subprocess
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

from clapcap.tracking.liveness import DEAD, PROCESS_TAG, process_state, process_tag
from clapcap.utils.io import prepared_dataset_hash, sha256_file, sha256_json

logger = logging.getLogger(__name__)

PROVENANCE_TAGS = ("clapcap.stage", "clapcap.dvc_stage", "clapcap.git_commit", "clapcap.params_hash",
                   "clapcap.data_version")
GROUP_TAG = "clapcap.group"
CONFIGURATION_TAGS = ("clapcap.stage", "clapcap.params_hash", "clapcap.data_version")  # a rerun matches these
NOT_DVC = "none"  # clapcap.dvc_stage of a run that no DVC stage runs


def dvc_stage() -> str | None:
    """The DVC stage running this process (``$DVC_STAGE``, set by DVC for each stage command,
    e.g. ``train_clap`` or ``caption_lm@0``), or None outside DVC."""
    return os.environ.get("DVC_STAGE") or None


def git_commit(cwd: str | Path | None = None) -> str:
    """The commit of the working folder's repository, or ``unknown``."""
    try:
        done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else "unknown"


def run_name(area: str, model: str, configuration: str | None = None, seed: int | None = None) -> str:
    """A run name that says what the run is: ``area/model[/configuration][/seedN]``."""
    parts = [area, model, configuration, None if seed is None else f"seed{seed}"]
    return "/".join(str(p) for p in parts if p)


def provenance(stage: str, params: Mapping[str, Any] | None, *,
               dataset_dir: str | Path | None = None) -> dict[str, str]:
    """The provenance tags of a run of ``stage`` (see the module docstring).

    Raises:
        FileNotFoundError: when ``dataset_dir`` lacks ``manifest.csv`` or ``dataset.json``.
    """
    data_version = "none"
    if dataset_dir is not None:
        data_version = prepared_dataset_hash(dataset_dir)  # = clapcap.data.prepare.dataset_fingerprint
    return {"clapcap.stage": stage, "clapcap.dvc_stage": dvc_stage() or NOT_DVC,
            "clapcap.git_commit": git_commit(), "clapcap.params_hash": sha256_json(dict(params or {})),
            "clapcap.data_version": data_version}


def _relative(path: Path) -> str:
    """``path`` relative to the working folder when inside it (no absolute path in a run)."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return path.name


def log_inputs(*, dataset_dir: str | Path | None = None, dump: str | Path | None = None,
               data_version: str | None = None) -> None:
    """Log the prepared dataset and the embedding dump as dataset inputs of the active run."""
    entries = []
    if dataset_dir is not None:
        entries.append((Path(dataset_dir), data_version or "none", "dataset"))
    if dump is not None and Path(dump).is_file():
        entries.append((Path(dump), sha256_file(dump), "embedding_dump"))
    for path, digest, context in entries:
        _log_input(meta_dataset(path, digest), context=context, tags={"clapcap.digest": digest})


# What a store answers when another writer inserted the same dataset (experiment, name, digest)
# between MLflow's lookup and its insert: SQLite's and PostgreSQL's words, also through a server.
DUPLICATE_DATASET = ("UNIQUE constraint failed: datasets.", "duplicate key value violates unique constraint")
INPUT_ATTEMPTS = 3


def _log_input(dataset: Any, *, context: str, tags: Mapping[str, str]) -> None:
    """``mlflow.log_input``, tried again when it lost a race to insert the same dataset.

    MLflow looks a run's dataset up and inserts it when missing, in one transaction: two runs
    logging one dataset at once (two queued DVC experiments, two stages of ``make repro``) can
    both miss it, and the second insert then fails on the datasets table's unique key (seen in
    CI, 2026-12-06). Its transaction is rolled back, so trying again finds the dataset the other
    writer stored and links it. Hand-written: MLflow has no upsert for datasets.
    """
    import mlflow

    for attempt in range(1, INPUT_ATTEMPTS + 1):
        try:
            mlflow.log_input(dataset, context=context, tags=dict(tags))
            return
        except mlflow.exceptions.MlflowException as err:
            if attempt == INPUT_ATTEMPTS or not any(m in str(err) for m in DUPLICATE_DATASET):
                raise
            logger.info("dataset %s was stored by another run meanwhile; linking it (try %d)", dataset.name,
                        attempt + 1)


def meta_dataset(path: str | Path, digest: str) -> Any:
    """An MLflow dataset entity for a local dataset folder or file (its path relative to the
    project, its content digest): what a run's inputs and a logged model's metrics name."""
    from mlflow.data.dataset_source_registry import resolve_dataset_source
    from mlflow.data.meta_dataset import MetaDataset

    path = Path(path)
    with warnings.catch_warnings():  # a relative path "can be interpreted in multiple ways": all local
        warnings.simplefilter("ignore", UserWarning)
        source = resolve_dataset_source(_relative(path))
    return MetaDataset(source, name=f"{path.parent.name}/{path.name}", digest=digest[:32])


@contextmanager
def tracked(stage: str, *, experiment: str, name: str, params: Mapping[str, Any] | None = None,
            enabled: bool = True, dataset_dir: str | Path | None = None,
            dump: str | Path | None = None, parent: str | None = None, tags: Mapping[str, str] | None = None,
            tracking_uri: str | None = None, system_metrics: bool = False) -> Iterator[Any]:
    """Run the body inside one MLflow run of ``experiment`` named ``name``; yields the run (None
    when ``enabled`` is false: nothing is logged then).

    The run gets ``params`` (credentials dropped), the provenance tags and the inputs; it is
    nested under ``parent`` (a run id, see :func:`group_run`) or under the active run. The run
    ends FAILED when the body raises. A caller opens no run for a step that will do nothing
    (its result exists): check first, then enter.

    ``system_metrics`` (training runs): MLflow's own monitor samples CPU, memory, disk and
    network (and NVIDIA GPU utilisation and memory where ``pynvml`` finds one) every 10 s into
    the run's ``system/*`` metrics (``MLFLOW_SYSTEM_METRICS_SAMPLING_INTERVAL`` changes it).
    """
    if not enabled:
        with nullcontext():
            yield None
        return
    import mlflow

    from clapcap.tracking import store as tracking

    uri = tracking_uri or tracking.default_tracking_uri()
    exp_id = tracking.open_store(uri, experiment)
    prov = provenance(stage, params, dataset_dir=dataset_dir)
    all_tags = {**prov, **(tags or {}), PROCESS_TAG: process_tag()}
    if parent is not None:
        all_tags["mlflow.parentRunId"] = parent
    nested = mlflow.active_run() is not None
    dead = reclaim_dead_run(uri, exp_id, name, prov)
    if dead is not None:
        mlflow.set_experiment(experiment_id=exp_id)  # MLflow reopens runs of the active experiment only
    opened = mlflow.start_run(run_id=dead, tags=all_tags, nested=nested, log_system_metrics=system_metrics,
                              **({} if dead else {"experiment_id": exp_id, "run_name": name}))
    with opened as run:
        if params:
            tracking.log_params(params)
        log_inputs(dataset_dir=dataset_dir, dump=dump, data_version=prov["clapcap.data_version"])
        yield run


def reclaim_dead_run(uri: str, exp_id: str, name: str, configuration: Mapping[str, str]) -> str | None:
    """Settle the RUNNING runs named ``name`` in experiment ``exp_id`` whose process is dead (a
    kill -9): the newest whose :data:`CONFIGURATION_TAGS` match ``configuration`` is claimed for
    this process and its id returned, to be continued; every other one is ended KILLED. Runs of
    live processes, and of processes this host cannot see, are left alone.

    Returns:
        The id of the run to continue, or None (open a new run).
    """
    import mlflow

    from clapcap.tracking import store as tracking

    client = mlflow.MlflowClient()
    with tracking._store_lock(uri):  # two reruns at once do not both claim one dead run
        running = client.search_runs([exp_id], filter_string="attributes.status = 'RUNNING'",
                                     order_by=["attributes.start_time DESC"], max_results=1000)
        claimed = None
        for run in running:
            if run.info.run_name != name or process_state(run.data.tags.get(PROCESS_TAG)) != DEAD:
                continue
            where = (f"run {run.info.run_id} ({name!r}, experiment {client.get_experiment(exp_id).name!r}) of "
                     f"process {run.data.tags[PROCESS_TAG]}")
            if claimed is None and all(run.data.tags.get(k) == configuration.get(k) for k in CONFIGURATION_TAGS):
                claimed = run.info.run_id
                client.set_tag(claimed, PROCESS_TAG, process_tag())
                logger.warning("continuing %s, which died without ending it", where)
            else:
                client.set_terminated(run.info.run_id, status="KILLED")
                logger.warning("ended %s KILLED: its process died without ending it", where)
    return claimed


def group_run(experiment: str, name: str, *, stage: str, params: Mapping[str, Any] | None = None,
              dataset_dir: str | Path | None = None, tracking_uri: str | None = None) -> str:
    """The id of the parent run of group ``name`` (seeds of one configuration, a search),
    created finished with ``params`` and provenance when no run of ``experiment`` has it yet.

    Creation is serialised on a local store, so two seed stages at once share one parent.
    """
    import mlflow

    from clapcap.tracking import store as tracking

    uri = tracking_uri or tracking.default_tracking_uri()
    exp_id = tracking.open_store(uri, experiment)
    with tracking._store_lock(uri):
        found = mlflow.MlflowClient().search_runs([exp_id], filter_string=f"tags.`{GROUP_TAG}` = '{name}'",
                                                  max_results=1)
        if found:
            return found[0].info.run_id
        prov = provenance(stage, params, dataset_dir=dataset_dir)
        client = mlflow.MlflowClient()
        run = client.create_run(exp_id, run_name=name, tags={**prov, GROUP_TAG: name, PROCESS_TAG: process_tag()})
        flat = tracking.clean_params(params or {})
        for key, value in flat.items():
            client.log_param(run.info.run_id, key, value)
        client.set_terminated(run.info.run_id)
        logger.info("parent run %s of group %s", run.info.run_id, name)
        return run.info.run_id


@contextmanager
def resumed(run_id: str, *, experiment: str, tracking_uri: str | None = None) -> Iterator[Any]:
    """Reopen the finished run ``run_id`` (a group's parent) to add its aggregate metrics."""
    import mlflow

    from clapcap.tracking import store as tracking

    exp_id = tracking.open_store(tracking_uri or tracking.default_tracking_uri(), experiment)
    # MLflow refuses to reopen a run of an experiment other than the active one, which an
    # earlier stage in this process (or MLFLOW_EXPERIMENT_ID) may have set.
    mlflow.set_experiment(experiment_id=exp_id)
    with mlflow.start_run(run_id=run_id, nested=mlflow.active_run() is not None,
                          tags={PROCESS_TAG: process_tag()}) as run:
        yield run
