"""Prefect flow over the reference captioners: one task per configured reference.

Each task calls :func:`clapcap.reference.generate.run_reference` (generate or import, then
score with the leakage check), the same function as the DVC stage and the CLI. Tasks retry
with exponential backoff. API requests are capped by Prefect's global concurrency limit
``clapcap-api`` (:mod:`clapcap.utils.limits`; every request of :class:`clapcap.llm.ChatClient`
holds a slot), which holds across processes and machines; the flow creates it with
``api_concurrency`` slots when the server has none (an existing limit is the team's setting
and is kept). Finished references are skipped by their scores file, and interrupted ones
resume from their progress cache.
"""

from __future__ import annotations

import logging
from pathlib import Path

from prefect import flow, task
from prefect.cache_policies import NO_CACHE
from prefect.tasks import exponential_backoff

from clapcap.compute import Compute, load_compute
from clapcap.reference.config import ReferenceParams, ReferenceSpec
from clapcap.utils.limits import API_LIMIT, ensure_limit

logger = logging.getLogger(__name__)


@task(name="dump_reference_split", cache_policy=NO_CACHE)
def dump_split_task(dataset_dir: str, split_dir: str, split: str) -> str:
    from clapcap.evaluation.shared_split import dump_split

    if (Path(split_dir) / "split.csv").is_file() and (Path(split_dir) / "split.json").is_file():
        return split_dir
    dump_split(dataset_dir, split_dir, split=split)
    return split_dir


@task(name="reference", cache_policy=NO_CACHE)
def reference_task(spec: ReferenceSpec, params: ReferenceParams, split_dir: str, compute: Compute) -> str:
    from clapcap.reference.generate import run_reference

    return str(run_reference(spec, split_dir, params.out_dir, metrics=params.metrics,
                             leakage=params.leakage, compute=compute))


@flow(name="clapcap-reference")
def reference_flow(params: ReferenceParams, compute: Compute | None = None) -> dict[str, str]:
    """Dump the split once, then run every reference as a retried task (local captioners on
    ``compute``; default: params.yaml's ``compute`` section with its environment overrides).

    Returns:
        ``{reference name: scores path}``.
    """
    if any(spec.backend == "openai_api" for spec in params.references):
        ensure_limit(API_LIMIT, max(1, params.api_concurrency))
    compute = compute or load_compute()
    split_dir = dump_split_task(params.dataset_dir, params.split_dir, params.split)
    delays = exponential_backoff(backoff_factor=params.task_retry_delay_s)(params.task_retries)
    futures = {
        spec.name: reference_task.with_options(
            name=f"reference-{spec.name}", retries=params.task_retries,
            retry_delay_seconds=delays).submit(spec, params, split_dir, compute)
        for spec in params.references
    }
    return {name: fut.result() for name, fut in futures.items()}
