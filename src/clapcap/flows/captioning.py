"""Prefect flow over the captioning sweep, for GPU machines (and tested locally).

Every training/evaluation configuration is a task calling the same library functions as
the DVC stages (:mod:`clapcap.experiments.captioning.study`). The task runner's
``max_workers`` is the concurrency limit (one task per GPU); tasks retry on transient
failure; configurations whose result file exists are skipped without submitting a task
(and the library functions skip finished work too).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from prefect import flow, task
from prefect.cache_policies import NO_CACHE
from prefect.task_runners import ThreadPoolTaskRunner

from clapcap.compute import Compute, load_compute
from clapcap.experiments.captioning.study import (
    CaptioningParams,
    RunSpec,
    all_specs,
    configuration,
    decoding_jobs,
    evaluate_baseline,
    evaluate_decoding,
    execute_run,
    noise_floor,
    run_lr_search,
)
from clapcap.tracked.captioning import study_tracker

logger = logging.getLogger(__name__)


@task(name="captioning-lr-search", cache_policy=NO_CACHE)
def lr_search_task(params: CaptioningParams, lm: str, compute: Compute) -> dict[str, Any]:
    return run_lr_search(params, lm, compute=compute, tracker=study_tracker(params))


@task(name="captioning-lr-check", cache_policy=NO_CACHE)
def lr_check_task(params: CaptioningParams, lm: str, variant: str, compute: Compute) -> dict[str, Any]:
    from clapcap.tracked.caption_lr_check import run_lr_check_tracked

    return run_lr_check_tracked(params, lm, variant, compute=compute)


@task(name="captioning-row-lr-check", cache_policy=NO_CACHE)
def row_lr_check_task(params: CaptioningParams, row: str, compute: Compute) -> dict[str, Any]:
    from clapcap.tracked.caption_lr_check import run_row_lr_check_tracked

    return run_row_lr_check_tracked(params, row, compute=compute)


@task(name="captioning-run", cache_policy=NO_CACHE)
def run_task(params: CaptioningParams, spec: RunSpec, compute: Compute) -> dict[str, Any]:
    return execute_run(params, spec, compute=compute, tracker=study_tracker(params))


@task(name="captioning-decoding", cache_policy=NO_CACHE)
def decoding_task(params: CaptioningParams, lm: str, name: str, seed: int, compute: Compute) -> dict[str, Any]:
    return evaluate_decoding(params, lm, name, seed, compute=compute, tracker=study_tracker(params))


@task(name="captioning-noise-floor", cache_policy=NO_CACHE)
def noise_floor_task(params: CaptioningParams, lm: str, compute: Compute) -> dict[str, Any]:
    return noise_floor(params, lm, compute=compute, tracker=study_tracker(params))


@task(name="captioning-baseline", cache_policy=NO_CACHE)
def baseline_task(params: CaptioningParams) -> dict[str, Any]:
    return evaluate_baseline(params)


def _done(params: CaptioningParams, spec: RunSpec) -> bool:
    return (Path(params.out_dir) / "results" / f"{spec.name}.json").is_file()


@flow(name="captioning-sweep")
def captioning_sweep(params: CaptioningParams, *, retries: int = 1, lr_search: bool = True,
                     decoding_lm: str | None = None, register_best: bool = True,
                     compute: Compute | None = None) -> dict[str, Any]:
    """Run the whole study: LR search, every run, decoding ablation, noise floors, tables, champion.

    ``compute``: where the model steps run (default: params.yaml's ``compute`` section with
    the ``CLAPCAP_DEVICE``/``CLAPCAP_PRECISION`` overrides).

    Returns:
        ``{"runs": [names], "skipped": [names], "decoding": [names], "summary": path,
        "champion": {...} | None}``.
    """
    from clapcap.reporting.captioning_tables import write_summary
    from clapcap.tracked.captioning_register import register_champion

    compute = compute or load_compute()
    opts = {"retries": retries, "retry_delay_seconds": 5}
    if lr_search and params.use_lr_search:
        for fut in [lr_search_task.with_options(**opts).submit(params, lm, compute) for lm in params.lr_search_lms or []]:
            fut.result()
        if params.arch_lr == "own":  # each architecture row trains at its own searched LR
            rows = [(s.lm, configuration(s)) for s in all_specs(params)
                    if s.kind == "arch" and s.lm in (params.lr_search_lms or [])]
            for fut in [lr_check_task.with_options(**opts).submit(params, lm, row, compute) for lm, row in rows]:
                fut.result()
        # each encoder row of encoder_lr_rows trains at its own searched LR, on its own embeddings
        for fut in [row_lr_check_task.with_options(**opts).submit(params, row, compute) for row in params.encoder_lr_rows]:
            fut.result()
    specs = all_specs(params)
    skipped = [s.name for s in specs if _done(params, s)]
    futures = [run_task.with_options(**opts).submit(params, s, compute) for s in specs if not _done(params, s)]
    baseline = baseline_task.with_options(**opts).submit(params)
    for fut in futures:
        fut.result()
    lm = decoding_lm or params.lms[0]
    dec = [decoding_task.with_options(**opts).submit(params, m, n, seed, compute)
           for m, n, seed in decoding_jobs(params, [lm], None, None)]
    floors = [noise_floor_task.with_options(**opts).submit(params, m, compute) for m in params.lms]
    for fut in [*dec, *floors, baseline]:
        fut.result()
    summary = write_summary(params.out_dir, decoding_seed=params.noise_seeds[0])
    champion = register_champion(params) if register_best else None
    return {"runs": [s.name for s in specs], "skipped": skipped, "decoding": list(params.decoding_configs or params.decoding_ablation),
            "summary": str(summary["md"]), "champion": champion}


def run_sweep(params: CaptioningParams, *, concurrency: int = 1, **kwargs: Any) -> dict[str, Any]:
    """Run :func:`captioning_sweep` with at most ``concurrency`` tasks at a time.

    Raises:
        ValueError: when ``concurrency`` < 1.
    """
    if concurrency < 1:
        raise ValueError(f"concurrency must be >= 1, found {concurrency}")
    runner = ThreadPoolTaskRunner(max_workers=concurrency)
    return captioning_sweep.with_options(task_runner=runner)(params, **kwargs)
