"""Walk an MLflow store and report what breaks the tracking conventions (docs/tracking.md).

:func:`check_store` finds, over every experiment's active runs:

- a metric key outside the vocabulary (:func:`clapcap.tracking.vocab.check_key`); MLflow's
  own system metrics (``system/*``, on training runs) keep MLflow's names;
- two runs with one name in an experiment, unless one reruns the other (same stage and
  same params hash);
- an empty run: no params and no metrics, or a FAILED (or KILLED) run that logged no metric
  (a crash before any result: nothing in it to compare; delete it once its stage has rerun);
- a parent run without metrics (a seed group without the mean and std over its seeds, a
  search without its best trial's value), which the runs table cannot compare;
- a captioning configuration whose training params or test metrics are not on its run;
- seeds of one configuration (``.../seedN`` siblings) that are not child runs of one parent;
- a run without the provenance tags;
- a stale RUNNING run: its recorded process (``clapcap.process``) is dead, or, with no such
  record or a process on another host, it started more than ``stale_after_hours`` ago (a
  kill -9 leaves its run RUNNING; the stage's rerun continues it, or end it KILLED).

``tools/check_mlflow_store.py`` runs it from the command line.
"""

from __future__ import annotations

import re
import time
from collections import defaultdict
from typing import Any

from clapcap.tracking.liveness import DEAD, PROCESS_TAG, UNKNOWN, process_state
from clapcap.tracking.runs import GROUP_TAG, PROVENANCE_TAGS
from clapcap.tracking.vocab import VocabularyError, check_key

_SEED = re.compile(r"^(.*)/seed\d+$")
_FAILED = ("FAILED", "KILLED")
SYSTEM_PREFIX = "system/"  # mlflow.system_metrics' namespace (cpu_utilization_percentage, gpu_0_...)
STALE_AFTER_HOURS = 24.0  # a RUNNING run whose process this host cannot see, older than this, is stale


def _runs(client: Any) -> dict[str, list[Any]]:
    out = {}
    for exp in client.search_experiments():
        if exp.name == "Default":
            continue
        out[exp.name] = client.search_runs([exp.experiment_id], max_results=50000)
    return out


def _run_problems(exp: str, run: Any) -> list[str]:
    name, data, tags = run.info.run_name, run.data, run.data.tags
    where = f"{exp}: run {name!r} ({run.info.run_id})"
    problems = []
    for key in data.metrics:
        if key.startswith(SYSTEM_PREFIX):
            continue
        try:
            check_key(key)
        except VocabularyError as exc:
            problems.append(f"{where}: {exc}")
    if not data.params and not data.metrics:
        problems.append(f"{where}: empty run (no params, no metrics)")
    elif not data.metrics and run.info.status in _FAILED:
        problems.append(f"{where}: empty {run.info.status} run (params but no metrics); delete it once its "
                        "stage has rerun")
    missing = [t for t in PROVENANCE_TAGS if t not in tags]
    if missing:
        problems.append(f"{where}: no provenance tags {missing}")
    if tags.get("clapcap.stage") == "captioning-run":
        if not any(k.startswith("train/") for k in data.params) or not any(k.startswith("test/") for k in data.metrics):
            problems.append(f"{where}: a captioning configuration needs its training params and test metrics on one run")
    return problems


def _experiment_problems(exp: str, runs: list[Any]) -> list[str]:
    problems = []
    by_name: dict[str, list[Any]] = defaultdict(list)
    for run in runs:
        by_name[run.info.run_name].append(run)
    for name, same in by_name.items():
        configs = {(r.data.tags.get("clapcap.stage"), r.data.tags.get("clapcap.params_hash")) for r in same}
        if len(same) > 1 and len(configs) > 1:
            problems.append(f"{exp}: {len(same)} runs named {name!r} for different configurations")
    ids = {r.info.run_id for r in runs}
    groups: dict[str, list[Any]] = defaultdict(list)
    for run in runs:
        found = _SEED.match(run.info.run_name or "")
        if found and GROUP_TAG not in run.data.tags:
            groups[found.group(1)].append(run)
    for config, seeds in groups.items():
        if len({r.info.run_name for r in seeds}) < 2:
            continue
        parents = {r.data.tags.get("mlflow.parentRunId") for r in seeds}
        if len(parents) != 1 or None in parents or not parents <= ids:
            problems.append(f"{exp}: the seeds of {config!r} are not child runs of one parent run")
    return problems + _parent_problems(exp, runs)


def _parent_problems(exp: str, runs: list[Any]) -> list[str]:
    """Parent runs (of seeds, of trials) without metrics: the runs table cannot compare them."""
    with_children = {r.data.tags.get("mlflow.parentRunId") for r in runs}
    return [f"{exp}: parent run {r.info.run_name!r} ({r.info.run_id}) has no metrics: its children's "
            "summary (mean and std over seeds, a search's best value) belongs on it"
            for r in runs if r.info.run_id in with_children and not r.data.metrics]


def _stale_problem(exp: str, run: Any, stale_after_hours: float) -> list[str]:
    """A RUNNING run whose process is dead, or unseen and older than ``stale_after_hours``."""
    if run.info.status != "RUNNING":
        return []
    where = f"{exp}: run {run.info.run_name!r} ({run.info.run_id})"
    record = run.data.tags.get(PROCESS_TAG)
    state = process_state(record)
    hours = (time.time() * 1000 - (run.info.start_time or 0)) / 3.6e6
    if state == DEAD:
        return [f"{where}: RUNNING, but its process ({record}) is gone: rerun its stage (which continues "
                "it) or end it KILLED"]
    if state == UNKNOWN and hours > stale_after_hours:
        seen = "no process recorded" if record is None else f"process {record} not on this host"
        return [f"{where}: RUNNING for {hours:.0f} h ({seen}, stale after {stale_after_hours:g} h): rerun its "
                "stage or end it KILLED"]
    return []


def check_store(tracking_uri: str, *, stale_after_hours: float = STALE_AFTER_HOURS) -> list[str]:
    """Every convention the store at ``tracking_uri`` breaks, one line each (empty: all good).

    ``stale_after_hours``: how old a RUNNING run whose process cannot be checked (none
    recorded, or another host's) may be before it counts as stale.
    """
    import mlflow

    client = mlflow.MlflowClient(tracking_uri)
    problems: list[str] = []
    for exp, runs in _runs(client).items():
        for run in runs:
            problems += _run_problems(exp, run) + _stale_problem(exp, run, stale_after_hours)
        problems += _experiment_problems(exp, runs)
    return problems
