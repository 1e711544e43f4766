"""LLM judges for the pairwise study, through an OpenAI-compatible chat API.

Two kinds of pool:

- ``audio``: the judge hears the clip (sent as an ``input_audio`` content part, base64)
  and reads the two captions;
- ``text``: the judge reads the reference caption and the two captions, no audio.

Each judge (one model) sees every item in both orders (``both_orders``, the default;
stored as the raters ``<model>#AB`` and ``<model>#BA``, :mod:`clapcap.pairwise.orders`), or
once in the order given by :func:`~clapcap.pairwise.store.shown_order` for
``(seed, model, item)``, and must answer ``1`` or ``2``. The answer is de-randomised and
stored in the :class:`VoteStore` like a human vote, with the pool's name. A malformed answer is asked again up to
``max_answer_attempts`` times, then recorded as a failure (never as a vote). Transport
errors (timeouts, HTTP 429 and 5xx) are retried with exponential backoff by the shared
:class:`clapcap.llm.ChatClient`.

Failures that are not the item's stop the run with one error naming the endpoint
(:class:`~clapcap.llm.EndpointError`), instead of failing every item in turn: a refused
key (HTTP 401/403, at the first request), an endpoint that cannot be reached
(``max_connection_failures`` consecutive connection failures), transient errors that
outlast the retries, and answers that are not chat completions on every attempt of an
item. Votes stored so far are kept and a rerun resumes. The API key comes from the
environment or a ``.env`` file and is never logged or written anywhere.
"""

from __future__ import annotations

import base64
import logging
import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pandas as pd

from clapcap.errors import ClapcapError
from clapcap.llm import ChatClient as LLMChatClient
from clapcap.llm import EndpointError, LLMError, LLMResponseError, RetryPolicy, SecretStr
from clapcap.llm.client import DEFAULT_MAX_CONNECTION_FAILURES
from clapcap.llm.config import EndpointConfig
from clapcap.pairwise.orders import ORDERS, order_rater
from clapcap.pairwise.pairs import read_pairs
from clapcap.pairwise.store import VoteStore, derandomize, shown_order
from clapcap.utils.io import atomic_path

logger = logging.getLogger(__name__)

_ANSWER = re.compile(r"(?<![\w.])([12])(?!\w|\.\d)")

SYSTEM_PROMPT = ("You compare two captions of an audio clip. Answer with a single digit: "
                 "1 if caption 1 is more accurate (less wrong), 2 if caption 2 is.")

ChatError = LLMError  # a chat request failed for good (kept name; see clapcap.llm)


class JudgeFailures(ClapcapError):
    """Some judgements of a finished run failed (recorded in the store): exit code 1."""


@dataclass(kw_only=True)
class JudgeConfig(EndpointConfig):
    """One judge pool: its models and mode, on an endpoint (:class:`~clapcap.llm.config.EndpointConfig`)."""

    pool: str
    models: list[str]
    mode: Literal["audio", "text"] = "text"
    base_url: str = "https://api.openai.com/v1"
    seed: int = 0
    temperature: float = 0.0
    max_tokens: int = 8
    max_answer_attempts: int = 3
    max_retries: int = 4
    # Ask every item in both orders (MT-Bench's swap; clapcap.pairwise.orders). False: once, in
    # a seeded random order per judge and item, as people on the rating page see it.
    both_orders: bool = True
    # ``extra_body.seed`` is the first model's sampling seed; the k-th model of ``models`` samples
    # with seed + k. One seed for all would make a sampled pool's raters copies of each other once
    # every rater sees both orders (and a greedy pool's raters are copies whatever the seed).
    # A hosted API needs a key; a local engine (clapcap.llm.engine, a vLLM server) takes none.
    key_required: bool = True


class ChatClient:
    """The judges' client: :class:`clapcap.llm.ChatClient` with the model chosen per request.

    Retries (HTTP 408/409/425/429/5xx, timeouts, dropped connections, non-JSON answers)
    back off ``backoff_s * 2**attempt`` seconds, or as the server's ``Retry-After`` says.
    """

    def __init__(self, base_url: str, *, api_key: str | SecretStr, timeout_s: float = 60.0,
                 max_retries: int = 4, backoff_s: float = 1.0,
                 sleep: Callable[[float], None] = time.sleep,
                 max_connection_failures: int = DEFAULT_MAX_CONNECTION_FAILURES) -> None:
        key = api_key if isinstance(api_key, SecretStr) else SecretStr(api_key)
        retry = RetryPolicy(max_retries, backoff_s, max_backoff_s=math.inf)
        self._chat = LLMChatClient(base_url, api_key=key, timeout_s=timeout_s, retry=retry, sleep=sleep,
                                   max_connection_failures=max_connection_failures)
        self.url = self._chat.url

    @classmethod
    def for_endpoint(cls, cfg: EndpointConfig) -> ChatClient:
        """The client of ``cfg``'s endpoint, with its key (required unless ``cfg.key_required``
        is false) and retry settings."""
        client = cls.__new__(cls)
        client._chat = cfg.client(key_required=getattr(cfg, "key_required", True))
        client.url = client._chat.url
        return client

    def __repr__(self) -> str:  # keeps the key out of any repr or log
        return f"ChatClient(url={self.url!r})"

    def complete(self, model: str, messages: list[dict[str, Any]], **params: Any) -> str:
        """Send one chat request to ``model``; return the first choice's message text.

        Raises:
            ChatError: on a non-retryable HTTP status.
            EndpointError: (a ChatError) when every retry failed, on HTTP 401/403
                (``KeyRefused``) or after consecutive connection failures
                (``EndpointUnreachable``).
            LLMResponseError: (a ChatError) when the answer is not a chat completion.
        """
        return self._chat.send({"model": model, "messages": messages, **params})


def parse_choice(text: str) -> str | None:
    """The position a judge picked (``1`` or ``2``), or None when the answer is malformed.

    Accepts answers such as ``2``, ``Caption 1.`` or ``Answer: 2``; an answer naming both
    or neither is malformed.
    """
    found = set(_ANSWER.findall(text or ""))
    return found.pop() if len(found) == 1 else None


def build_messages(item: pd.Series, order: str, mode: str) -> list[dict[str, Any]]:
    """Chat messages asking to compare the item's captions in ``order`` (``AB``/``BA``).

    Raises:
        FileNotFoundError: in audio mode when the item's audio file is missing.
    """
    first, second = (item["caption_a"], item["caption_b"]) if order == "AB" else (
        item["caption_b"], item["caption_a"])
    question = f"Caption 1: {first}\nCaption 2: {second}\n" \
               "Which caption is more accurate (less wrong)? Answer 1 or 2."
    if mode == "text":
        content: Any = f"Reference description of the clip: {item['reference']}\n{question}"
    else:
        path = Path(item["audio_path"]) if item["audio_path"] else None
        if path is None or not path.is_file():
            raise FileNotFoundError(f"item {item['item_id']}: audio file {item['audio_path']!r} not found")
        audio = base64.b64encode(path.read_bytes()).decode()
        fmt = path.suffix.lstrip(".").lower() or "wav"
        content = [{"type": "input_audio", "input_audio": {"data": audio, "format": fmt}},
                   {"type": "text", "text": question}]
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": content}]


def judge_item(client: ChatClient, cfg: JudgeConfig, model: str, item: pd.Series,
               order: str | None = None) -> tuple[str | None, str, str]:
    """Ask ``model`` about one item, captions in ``order`` (``AB``/``BA``; by default the
    seeded :func:`~clapcap.pairwise.store.shown_order` of ``model`` and the item).

    Returns:
        ``(choice, order, error)``: the de-randomised choice (None on failure), the order
        shown and the error text of a failure.

    Raises:
        EndpointError: from the client, or when no attempt got a chat completion back
            (the endpoint does not speak the chat-completions protocol).
        ChatError: on another failed request.
    """
    order = order or shown_order(cfg.seed, model, item["item_id"])
    messages = build_messages(item, order, cfg.mode)
    params = {"temperature": cfg.temperature, "max_tokens": cfg.max_tokens, **cfg.extra_body}
    if "seed" in params and model in cfg.models:  # each model of a pool samples with its own seed
        params["seed"] = int(params["seed"]) + cfg.models.index(model)
    answer, answered = "", False
    for _ in range(cfg.max_answer_attempts):
        try:
            answer = client.complete(model, messages, **params)
        except LLMResponseError as err:  # 200 but no chat completion: ask again
            answer = str(err)
            logger.info("model %s item %s: %s", model, item["item_id"], answer)
            continue
        answered = True
        position = parse_choice(answer)
        if position is not None:
            return derandomize(position, order), order, ""
        logger.info("model %s item %s: malformed answer %r", model, item["item_id"], answer[:80])
    if not answered and cfg.max_answer_attempts > 0:
        raise EndpointError(f"{answer} (every one of {cfg.max_answer_attempts} attempts on item "
                            f"{item['item_id']}); is it an OpenAI-compatible chat endpoint?",
                            reason="not a chat completion", attempts=cfg.max_answer_attempts)
    return None, order, f"malformed answer after {cfg.max_answer_attempts} attempts: {answer[:200]!r}"


def _make_client(cfg: JudgeConfig) -> ChatClient:
    return ChatClient.for_endpoint(cfg)


def run_judges(pairs: str | Path, db: str | Path, cfg: JudgeConfig, *, out: str | Path | None = None,
               client: ChatClient | None = None, strict: bool = False) -> dict[str, Any]:
    """Judge every item of ``pairs`` with every model of ``cfg``; resume from ``db``.

    Items a rater (a model, or a model in one order) already voted on are skipped; earlier
    failures are tried again.
    When ``out`` is given, the pool's votes are written there as a ratings CSV.

    Returns:
        ``{"pool", "votes", "failures", "skipped"}`` counts for this run.

    Raises:
        ValueError: when no API key is found (and no client is given).
        EndpointError: (a ChatError) at the first failure that is not the item's: a
            refused key (HTTP 401/403), an unreachable endpoint, transient errors that
            outlast the retries, or an endpoint that answers no chat completion. The
            message names the endpoint; the votes stored so far are kept.
        JudgeFailures: with ``strict``, after writing ``out``, when a judgement failed.
    """
    items = read_pairs(pairs)
    store = VoteStore(db)
    client = client or _make_client(cfg)
    counts = {"pool": cfg.pool, "votes": 0, "failures": 0, "skipped": 0}
    asks = [(order_rater(m, o), m, o) for m in cfg.models for o in ORDERS] if cfg.both_orders else \
        [(m, m, None) for m in cfg.models]
    for rater, model, fixed_order in asks:
        done = store.voted_items(rater)
        for _, item in items.iterrows():
            if item["item_id"] in done:
                counts["skipped"] += 1
                continue
            try:
                choice, order, error = judge_item(client, cfg, model, item, fixed_order)
            except EndpointError:
                logger.info("judge pool %s stopped at rater %s item %s: %s so far", cfg.pool,
                            rater, item["item_id"], counts)
                raise
            except (ChatError, FileNotFoundError) as err:
                choice, order, error = None, "", str(err)
            if choice is None:
                store.record_failure(item_id=item["item_id"], rater=rater, pool=cfg.pool,
                                     pair_id=item["pair_id"], error=error)
                counts["failures"] += 1
                continue
            store.record_vote(item_id=item["item_id"], rater=rater, pool=cfg.pool,
                              pair_id=item["pair_id"], choice=choice, shown_order=order)
            counts["votes"] += 1
    if out is not None:
        votes = store.votes()
        with atomic_path(out) as tmp:
            votes[votes["pool"] == cfg.pool].to_csv(tmp, index=False)
    logger.info("judge pool %s: %s", cfg.pool, counts)
    if strict and counts["failures"]:
        raise _failures_error(store, cfg, client.url, counts["failures"])
    return counts


def _failures_error(store: VoteStore, cfg: JudgeConfig, url: str, n: int) -> JudgeFailures:
    failures = store.failures()
    first = failures[failures["pool"] == cfg.pool].iloc[0]
    return JudgeFailures(
        f"judge pool {cfg.pool}: {n} judgement(s) failed at {url} (first: model {first['rater']} "
        f"item {first['item_id']}: {first['error'][:200]}); they are in the failures table of "
        f"{store.path}, and a rerun tries them again")
