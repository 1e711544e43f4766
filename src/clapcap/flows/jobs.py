"""The long jobs as deployable flows: what ``prefect.yaml`` deploys to a work pool.

Every flow takes the params file (``params_file``) and reads its section through
:func:`clapcap.flows.project.load_project_section`, so any worker polling the pool can run
any job: paths resolve against the project root, not the worker's directory, and MLflow logs
to ``$MLFLOW_TRACKING_URI`` (else the project's own store). Each model step holds a slot of
the ``clapcap-gpu`` global concurrency limit and each API request one of ``clapcap-api``
(:mod:`clapcap.utils.limits`); both hold across processes and machines.

The captioning sweep fans out as **one flow run per configuration** (the
``clapcap-captioning-config`` deployment), not as tasks inside one flow run: tasks of one
flow run all execute on the worker that picked that run up, while separate flow runs are
spread by the work pool over every worker polling it, on any machine. The dispatching flow
(:func:`captioning_sweep_dispatch`) submits only the configurations whose result file is
missing, waits for them, then writes the tables; re-running its deployment after a crash
therefore completes only what is missing. Result files are written atomically, so a killed
worker leaves no half-written result.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from prefect import flow, task
from prefect.cache_policies import NO_CACHE

from clapcap.compute import Compute, load_compute
from clapcap.experiments.captioning.config import CaptioningParams
from clapcap.flows.project import load_project_section, params_path, project_tracking
from clapcap.utils.limits import GPU_LIMIT, concurrency_slot, ensure_limit

logger = logging.getLogger(__name__)

CONFIG_DEPLOYMENT = "clapcap-captioning-config/local"
_FINAL = ("COMPLETED", "FAILED", "CRASHED", "CANCELLED")


@task(name="embed", cache_policy=NO_CACHE, retries=1, retry_delay_seconds=10)
def embed_task(params: Any, encoder: str, dataset: str, compute: Compute) -> list[str]:
    from clapcap.encoders.embed import embed_all

    with concurrency_slot(GPU_LIMIT):
        return [str(p) for p in embed_all(params, encoder, dataset, progress=False, compute=compute)]


@flow(name="clapcap-embed")
def embed_dumps(params_file: str = "params.yaml", encoders: list[str] | None = None,
                datasets: list[str] | None = None, gpu_slots: int = 1) -> dict[str, list[str]]:
    """Write the embedding dumps of ``encoders`` x ``datasets`` (default: all in ``embed``).

    ``gpu_slots`` sizes the ``clapcap-gpu`` limit only when the server has none.

    Returns:
        ``{"<encoder>/<dataset>": [dump paths]}``.
    """
    from clapcap.encoders.config import EmbedParams

    params = load_project_section(EmbedParams, "embed", params_file)
    ensure_limit(GPU_LIMIT, gpu_slots)
    compute = load_compute(params_path(params_file))
    futures = {f"{e}/{d}": embed_task.with_options(name=f"embed-{e}-{d}").submit(params, e, d, compute)
               for e in encoders or list(params.encoders) for d in datasets or list(params.datasets)}
    return {key: fut.result() for key, fut in futures.items()}


@flow(name="clapcap-captioning-config")
def captioning_config(config: str, params_file: str = "params.yaml") -> dict[str, Any]:
    """Train and evaluate one configuration of the captioning study (a run name).

    Returns:
        ``{"config", "result"}``: the name and its ``results/<name>.json`` path.

    Raises:
        ValueError: when ``config`` is not a configuration of the study (names the known ones).
    """
    from clapcap.experiments.captioning.study import all_specs, execute_run
    from clapcap.tracked.captioning import study_tracker

    params = load_project_section(CaptioningParams, "captioning", params_file)
    specs = {s.name: s for s in all_specs(params)}
    if config not in specs:
        raise ValueError(f"{params_path(params_file)}: captioning has no configuration {config!r}; "
                         f"have {sorted(specs)}")
    compute = load_compute(params_path(params_file))
    with project_tracking(params_file), concurrency_slot(GPU_LIMIT):
        execute_run(params, specs[config], compute=compute, tracker=study_tracker(params))
    return {"config": config, "result": str(_result_path(params, config))}


def _result_path(params: CaptioningParams, name: str) -> Path:
    return Path(params.out_dir) / "results" / f"{name}.json"


def _submit_configs(names: list[str], params_file: str, deployment: str) -> dict[str, Any]:
    """One flow run of ``deployment`` per configuration (idempotent within this parent run)."""
    from prefect.context import FlowRunContext
    from prefect.deployments import run_deployment

    ctx = FlowRunContext.get()
    parent = str(ctx.flow_run.id) if ctx and ctx.flow_run else "adhoc"
    return {name: run_deployment(deployment, parameters={"config": name, "params_file": params_file},
                                 flow_run_name=f"config-{name}", timeout=0, tags=["clapcap-config"],
                                 idempotency_key=f"{parent}:{name}").id
            for name in names}


def _wait_for(runs: dict[str, Any], poll_s: float, timeout_s: float | None) -> dict[str, str]:
    """Poll the server until every flow run is final; returns ``{name: state type}``."""
    from prefect.client.orchestration import get_client

    start, states = time.monotonic(), {}
    with get_client(sync_client=True) as client:
        while True:
            for name, run_id in runs.items():
                if name not in states or states[name] not in _FINAL:
                    state = client.read_flow_run(run_id).state
                    states[name] = state.type.value if state else "PENDING"
            if all(s in _FINAL for s in states.values()):
                return states
            if timeout_s is not None and time.monotonic() - start > timeout_s:
                return states
            time.sleep(poll_s)


@flow(name="clapcap-captioning-sweep")
def captioning_sweep_dispatch(params_file: str = "params.yaml", config_deployment: str = CONFIG_DEPLOYMENT,
                              lr_search: bool = True, extras: bool = True, register_best: bool = True,
                              gpu_slots: int = 1, poll_s: float = 2.0,
                              timeout_s: float | None = None) -> dict[str, Any]:
    """The captioning study over a work pool: one ``config_deployment`` flow run per missing config.

    The LR search (when enabled) runs first, in this flow run; then every configuration without
    a result file becomes a flow run of ``config_deployment``, picked up by any worker; then
    (``extras``) the trivial baseline, the decoding ablation, the noise floors and the summary
    tables run here, and (``register_best``) the champion is registered.

    Returns:
        ``{"submitted": [names], "skipped": [names], "states": {name: state}, "summary": path | None}``.

    Raises:
        RuntimeError: naming the configurations whose flow runs did not complete (re-run the
            deployment to complete only those).
    """
    from clapcap.experiments.captioning import study
    from clapcap.tracked.captioning import study_tracker

    path = str(params_path(params_file))
    params = load_project_section(CaptioningParams, "captioning", path)
    ensure_limit(GPU_LIMIT, gpu_slots)
    with project_tracking(path) as uri:
        if params.track:  # workers then only add runs to an initialised store
            from clapcap.tracking import prepare_store

            prepare_store(["clapcap-captioning"], uri)
        if lr_search and params.use_lr_search:
            for lm in params.lr_search_lms or []:
                with concurrency_slot(GPU_LIMIT):
                    study.run_lr_search(params, lm, tracker=study_tracker(params))
        names = [s.name for s in study.all_specs(params)]
        skipped = [n for n in names if _result_path(params, n).is_file()]
        missing = [n for n in names if n not in skipped]
        logger.info("captioning sweep: %d configurations, %d done, submitting %d to %s",
                    len(names), len(skipped), len(missing), config_deployment)
        states = _wait_for(_submit_configs(missing, path, config_deployment), poll_s, timeout_s)
        failed = sorted(n for n, s in states.items() if s != "COMPLETED")
        if failed:
            raise RuntimeError(f"captioning sweep: {len(failed)} configuration(s) did not complete: "
                               f"{failed}; re-run the deployment to complete only these")
        summary = _finish_sweep(params, register_best, load_compute(params_path(params_file))) if extras else None
    return {"submitted": missing, "skipped": skipped, "states": states, "summary": summary}


def _finish_sweep(params: CaptioningParams, register_best: bool, compute: Compute) -> str:
    """Baseline, decoding ablation, noise floors, summary tables and champion (after every run)."""
    from clapcap.experiments.captioning import study
    from clapcap.reporting.captioning_tables import write_summary
    from clapcap.tracked.captioning import study_tracker

    study.evaluate_baseline(params)
    for lm, name, seed in study.decoding_jobs(params, [params.lms[0]], None, None):
        with concurrency_slot(GPU_LIMIT):
            study.evaluate_decoding(params, lm, name, seed, compute=compute, tracker=study_tracker(params))
    for lm in params.lms:
        study.noise_floor(params, lm, compute=compute, tracker=study_tracker(params))
    summary = write_summary(params.out_dir, decoding_seed=params.noise_seeds[0])
    if register_best:
        from clapcap.tracked.captioning_register import register_champion

        register_champion(params)
    return str(summary["md"])


@task(name="robust-train", cache_policy=NO_CACHE, retries=1, retry_delay_seconds=10)
def robust_train_task(params: Any, compute: Compute) -> str:
    from clapcap.tracked.robust import run_robust_train

    with concurrency_slot(GPU_LIMIT):
        return str(run_robust_train(params, progress=False, compute=compute).model_dir)


@flow(name="clapcap-robust")
def robust_finetune_benchmark(params_file: str = "params.yaml",
                              sections: tuple[str, ...] = ("robust_train", "robust_control"),
                              gpu_slots: int = 1) -> dict[str, Any]:
    """Fine-tune RobustCLAP and its control (one task each), then the seed study when the
    registration decision rests on its verdicts (``robust_benchmark.register_on``), then the
    benchmark.

    Returns:
        ``{"models": {section: model dir}, "benchmark": the benchmark's result}``.
    """
    from clapcap.experiments.robust.config import RobustBenchParams, RobustSeedParams
    from clapcap.experiments.robust.seeds import run_seed_study
    from clapcap.robust.config import RobustTrainParams
    from clapcap.tracked.robust import run_robust_benchmark, run_robust_train

    ensure_limit(GPU_LIMIT, gpu_slots)
    compute = load_compute(params_path(params_file))
    train = {s: load_project_section(RobustTrainParams, s, params_file) for s in sections}
    bench_params = load_project_section(RobustBenchParams, "robust_benchmark", params_file)
    with project_tracking(params_file):
        futures = {s: robust_train_task.with_options(name=f"robust-train-{s}").submit(p, compute)
                   for s, p in train.items()}
        models = {s: fut.result() for s, fut in futures.items()}
        with concurrency_slot(GPU_LIMIT):
            if bench_params.register_on and {"robust_train", "robust_control"} <= set(train):
                run_seed_study(train["robust_train"], train["robust_control"], bench_params,
                               load_project_section(RobustSeedParams, "robust_seeds", params_file),
                               progress=False, compute=compute, trainer=run_robust_train)
            bench = run_robust_benchmark(bench_params, compute=compute)
    return {"models": models, "benchmark": bench}


@flow(name="clapcap-reference-scoring")
def reference_scoring(params_file: str = "params.yaml") -> dict[str, str]:
    """Generate (or import) and score every reference captioner of the ``reference`` section.

    Returns:
        ``{reference name: scores path}`` (see :func:`clapcap.flows.reference.reference_flow`).
    """
    from clapcap.flows.reference import reference_flow
    from clapcap.reference.config import ReferenceParams

    with project_tracking(params_file):
        return reference_flow(load_project_section(ReferenceParams, "reference", params_file),
                              compute=load_compute(params_path(params_file)))
