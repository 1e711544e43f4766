"""The LLM paraphrase backend: two steps against an OpenAI-compatible endpoint, cached.

Step 1 generates view 1 and view 2 of a caption from human-written in-context examples;
step 2 checks each view keeps every sound event and attribute and rewrites it when
specificity is lost. Every finished call (success or final failure) is cached in a JSONL
file keyed by step, caption, prompt and model (:func:`open_cache`, a
:class:`~clapcap.llm.jsonl.ResumeCache`): each line is ``{"key", "step", "model",
"caption", "status", "value", "raw", "error"}`` with sorted keys, and a rerun skips every
key already present, so an interrupted run never pays twice.

Failure handling:

- rate limits and transient errors: retried with backoff by :class:`ChatClient`; when
  they persist the run stops (:class:`LLMError`) and a rerun resumes from the cache;
- an endpoint that cannot be reached: the run stops with :class:`EndpointUnreachable`
  after ``max_connection_failures`` consecutive connection failures (pending captions
  are cancelled, not each tried in turn);
- a malformed answer: asked again ``malformed_retries`` times, then recorded as failed.
  A failed view is written as ``null`` in the output manifest, never as a paraphrase.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clapcap.llm import ChatClient, LLMResponseError, Message
from clapcap.llm.config import EndpointConfig
from clapcap.llm.engine import EngineConfig
from clapcap.llm.jsonl import ResumeCache
from clapcap.paraphrase.prompts import (
    PROMPT_VERSION,
    MalformedAnswer,
    correction_messages,
    generation_messages,
    parse_correction,
    parse_generation,
)

logger = logging.getLogger(__name__)

VIEWS = ("view1", "view2")


@dataclass(kw_only=True)
class LLMParams(EndpointConfig):
    """The paraphrase backend: the endpoint (:class:`~clapcap.llm.config.EndpointConfig`) and
    how it is asked (no secret here: the key is read from ``api_key_env``). ``engine``: the
    inference engine the step starts for itself (:mod:`clapcap.llm.engine`; ``kind: none``
    uses ``base_url`` as given)."""

    model: str = "meta-llama/Meta-Llama-3-70B-Instruct"
    temperature: float = 0.7
    correction_temperature: float = 0.0
    max_tokens: int = 256
    malformed_retries: int = 2
    correction: bool = True
    retry_failed: bool = False
    workers: int = 4
    cache_path: str = "data/robust/llm_cache.jsonl"
    engine: EngineConfig = field(default_factory=EngineConfig)


@dataclass
class ParaphraseResult:
    """Both views of one caption; a view is None when it failed (see ``errors``)."""

    caption: str
    views: dict[str, str | None] = field(default_factory=dict)
    rewritten: dict[str, bool] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)


def build_client(params: LLMParams) -> ChatClient:
    """A :class:`ChatClient` for ``params``; the key (from the environment or ``.env``) is
    optional, as a local server such as vLLM or llama.cpp's usually takes none."""
    return params.client(params.model, key_required=False)


def cache_key(step: str, model: str, messages: list[dict[str, str]], **options: Any) -> str:
    """SHA-256 of the step, model, full prompt (which contains the caption) and options."""
    payload = json.dumps({"step": step, "model": model, "messages": messages, "options": options},
                         sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def open_cache(path: str | Path) -> ResumeCache:
    """The call cache at ``path``: records by their ``key`` (:func:`cache_key`), written with sorted keys."""
    return ResumeCache(path, "key", text_fields=("key",), sort_keys=True)


class LLMParaphraser:
    """Two-step paraphrasing of single captions with a cache (thread-safe)."""

    def __init__(self, params: LLMParams, *, client: ChatClient | None = None,
                 cache: ResumeCache | None = None) -> None:
        self.params = params
        self.client = client or build_client(params)
        self.cache = cache or open_cache(params.cache_path)

    def _call(self, step: str, messages: list[Message], caption: str,
              parse: Callable[[str], Any], temperature: float) -> dict[str, Any]:
        """One cached step: ask, validate, re-ask on a malformed answer, record the outcome."""
        p = self.params
        # extra_body joins the key only when set, so the keys of existing caches stay valid.
        extra = {"extra_body": p.extra_body} if p.extra_body else {}
        key = cache_key(step, p.model, messages, temperature=temperature, prompt=PROMPT_VERSION, **extra)
        hit = self.cache.get(key)
        if hit is not None and (hit["status"] == "ok" or not p.retry_failed):
            return hit
        raw, error = None, ""
        for attempt in range(p.malformed_retries + 1):
            try:
                raw = self.client.complete(messages, temperature=temperature, max_tokens=p.max_tokens)
                value = parse(raw)
            except (MalformedAnswer, LLMResponseError) as err:
                error = f"attempt {attempt + 1}: {err}"
                logger.debug("%s of %r malformed: %s", step, caption, err)
                continue
            rec = {"key": key, "step": step, "model": p.model, "caption": caption,
                   "status": "ok", "value": value, "raw": raw, "error": None}
            self.cache.put(rec)
            return rec
        logger.warning("%s of %r failed after %d attempt(s): %s", step, caption,
                       p.malformed_retries + 1, error)
        rec = {"key": key, "step": step, "model": p.model, "caption": caption,
               "status": "failed", "value": None, "raw": raw, "error": error}
        self.cache.put(rec)
        return rec

    def paraphrase(self, caption: str) -> ParaphraseResult:
        """Generate (and, when ``correction``, check and fix) both views of ``caption``.

        Raises:
            LLMError: when the endpoint keeps failing (nothing is cached for this caption).
        """
        p = self.params
        out = ParaphraseResult(caption)
        gen = self._call("generate", generation_messages(caption), caption,
                         lambda raw: parse_generation(raw, caption), p.temperature)
        for view in VIEWS:
            out.rewritten[view] = False
            if gen["status"] != "ok":
                out.views[view], out.errors[view] = None, f"generate: {gen['error']}"
                continue
            draft = gen["value"][view]
            if not p.correction:
                out.views[view] = draft
                continue
            corr = self._call(f"correct-{view}", correction_messages(caption, view, draft), caption,
                              lambda raw, d=draft: list(parse_correction(raw, caption, d)),
                              p.correction_temperature)
            if corr["status"] != "ok":
                out.views[view], out.errors[view] = None, f"correct: {corr['error']}"
                continue
            out.views[view], out.rewritten[view] = corr["value"][0], bool(corr["value"][1])
        return out

    def paraphrase_many(self, captions: list[str], *, progress: bool = False) -> dict[str, ParaphraseResult]:
        """Paraphrase unique ``captions`` with ``workers`` threads; returns caption -> result.

        Raises:
            LLMError: from the first caption whose call failed for good; no caption starts
                after that (finished calls are in the cache, so a rerun resumes).
        """
        unique = list(dict.fromkeys(captions))
        stop = threading.Event()

        def work(caption: str) -> ParaphraseResult:
            if stop.is_set():  # an earlier caption failed: do not call the endpoint again
                raise _Skipped(caption)
            try:
                return self.paraphrase(caption)
            except Exception:
                stop.set()
                raise

        pool = ThreadPoolExecutor(max_workers=max(1, self.params.workers))
        try:
            # Tasks start in order, so the first error met in order is a real one, not a skip.
            results = pool.map(work, unique)
            if progress:
                from tqdm.auto import tqdm

                results = tqdm(results, total=len(unique), desc="paraphrase", unit="caption")
            return dict(zip(unique, results, strict=True))
        finally:
            pool.shutdown(wait=True, cancel_futures=True)


class _Skipped(RuntimeError):
    """A caption not started because an earlier one failed (never reaches the caller)."""
