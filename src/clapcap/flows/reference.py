"""Prefect flow over the reference captioners: one task per configured reference.

Each task calls :func:`clapcap.reference.generate.run_reference` (generate or import, then
score with the leakage check), the same function as the DVC stage and the CLI. Tasks retry
with exponential backoff; API-backed references share ``api_concurrency`` slots, so a
rate-limited service sees at most that many references at once. Finished references are
skipped by their scores file, and interrupted ones resume from their progress cache.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from prefect import flow, task
from prefect.cache_policies import NO_CACHE
from prefect.tasks import exponential_backoff

from clapcap.reference.config import ReferenceParams, ReferenceSpec

logger = logging.getLogger(__name__)

# Slots for API references, shared by the task threads of one flow run (see reference_flow).
_API_SLOTS: dict[str, threading.BoundedSemaphore] = {}


@task(name="dump_reference_split", cache_policy=NO_CACHE)
def dump_split_task(dataset_dir: str, split_dir: str, split: str) -> str:
    from clapcap.evaluation.shared_split import dump_split

    if (Path(split_dir) / "split.csv").is_file() and (Path(split_dir) / "split.json").is_file():
        return split_dir
    dump_split(dataset_dir, split_dir, split=split)
    return split_dir


@task(name="reference", cache_policy=NO_CACHE)
def reference_task(spec: ReferenceSpec, params: ReferenceParams, split_dir: str, slots_key: str) -> str:
    from clapcap.reference.generate import run_reference

    def run() -> str:
        return str(run_reference(spec, split_dir, params.out_dir, metrics=params.metrics,
                                 leakage=params.leakage))

    if spec.backend != "openai_api":
        return run()
    with _API_SLOTS[slots_key]:
        return run()


@flow(name="clapcap-reference")
def reference_flow(params: ReferenceParams) -> dict[str, str]:
    """Dump the split once, then run every reference as a retried task.

    Returns:
        ``{reference name: scores path}``.
    """
    split_dir = dump_split_task(params.dataset_dir, params.split_dir, params.split)
    key = f"{id(params)}-{threading.get_ident()}"
    _API_SLOTS[key] = threading.BoundedSemaphore(max(1, params.api_concurrency))
    delays = exponential_backoff(backoff_factor=params.task_retry_delay_s)(params.task_retries)
    try:
        futures = {
            spec.name: reference_task.with_options(
                name=f"reference-{spec.name}", retries=params.task_retries,
                retry_delay_seconds=delays).submit(spec, params, split_dir, key)
            for spec in params.references
        }
        return {name: fut.result() for name, fut in futures.items()}
    finally:
        _API_SLOTS.pop(key, None)
