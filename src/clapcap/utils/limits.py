"""Concurrency caps that hold across processes and machines: Prefect's global concurrency limits.

Two named limits cap the scarce resources of a scaled-out run:

- :data:`API_LIMIT` (``clapcap-api``): HTTP requests in flight to LLM/caption APIs (judges,
  paraphrasing, API reference captioners). :class:`clapcap.llm.ChatClient` holds one slot
  per request attempt, never during a backoff sleep.
- :data:`GPU_LIMIT` (``clapcap-gpu``): model steps on a GPU (training, embedding, fine-tuning).
  The deployed flows (:mod:`clapcap.flows.jobs`) hold one slot per model step.

Where the cap comes from:

- **A Prefect API is configured** (``PREFECT_API_URL`` is set: a worker, a deployment, a
  team server, Prefect's test harness): the slot is taken from the server's global
  concurrency limit with ``strict=True``. A missing limit is an error naming the command that
  creates it (``prefect gcl create NAME --limit N``); a worker never runs uncapped silently.
  Slots are leased, so a killed process's slot returns when its lease expires.
- **No Prefect API** (plain library use, a notebook, unit tests, an ephemeral flow run):
  there is nothing shared to count against, so no cross-process cap applies; the caller's
  own thread count (for example ``workers`` of the paraphraser) bounds it. This is logged once
  per limit name at INFO.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator

logger = logging.getLogger(__name__)

API_LIMIT = "clapcap-api"
GPU_LIMIT = "clapcap-gpu"

_warned: set[str] = set()


class ConcurrencyLimitMissing(RuntimeError):
    """A Prefect API is configured but the named global concurrency limit does not exist."""


def prefect_api_url() -> str:
    """The configured Prefect API URL, or ``""`` when none (then no shared cap exists)."""
    env = os.environ.get("PREFECT_API_URL", "")
    if env:
        return env
    try:
        from prefect.settings import PREFECT_API_URL
    except ImportError:  # Prefect is a dependency; a stripped install just runs uncapped
        return ""
    return PREFECT_API_URL.value() or ""


@contextlib.contextmanager
def concurrency_slot(name: str, occupy: int = 1) -> Iterator[None]:
    """Hold ``occupy`` slots of the global concurrency limit ``name`` for the ``with`` body.

    Raises:
        ConcurrencyLimitMissing: when a Prefect API is configured and the limit does not
            exist there (the message names the ``prefect gcl create`` command).
    """
    if not prefect_api_url():
        if name not in _warned:
            _warned.add(name)
            logger.info("no Prefect API configured: concurrency limit %r is not enforced "
                        "across processes (set PREFECT_API_URL to use the server's limits)", name)
        yield
        return
    from prefect.concurrency._asyncio import ConcurrencySlotAcquisitionError
    from prefect.concurrency.sync import concurrency

    stack = contextlib.ExitStack()
    try:
        stack.enter_context(concurrency(name, occupy=occupy, strict=True))
    except ConcurrencySlotAcquisitionError as err:
        raise ConcurrencyLimitMissing(
            f"Prefect server {prefect_api_url()} has no global concurrency limit {name!r}: "
            f"create it with `prefect gcl create {name} --limit N` (see docs/scaling.md)") from err
    with stack:
        yield


def ensure_limit(name: str, limit: int) -> bool:
    """Create the global concurrency limit ``name`` with ``limit`` slots when it is missing.

    An existing limit is left as it is (the server's value is the team's setting; a
    different ``limit`` is logged). Does nothing without a Prefect API.

    Returns:
        True when the limit was created.

    Raises:
        ValueError: when ``limit`` < 1.
    """
    if limit < 1:
        raise ValueError(f"concurrency limit {name!r} must be >= 1, found {limit}")
    if not prefect_api_url():
        return False
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate
    from prefect.exceptions import ObjectNotFound

    with get_client(sync_client=True) as client:
        try:
            existing = client.read_global_concurrency_limit_by_name(name)
        except ObjectNotFound:
            client.create_global_concurrency_limit(GlobalConcurrencyLimitCreate(name=name, limit=limit))
            logger.info("created Prefect global concurrency limit %r with %d slots", name, limit)
            return True
    if existing.limit != limit:
        logger.info("Prefect global concurrency limit %r has %d slots (asked for %d): kept",
                    name, existing.limit, limit)
    return False
