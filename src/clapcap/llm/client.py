"""A minimal client for OpenAI-compatible ``/chat/completions`` endpoints (stdlib only).

Rate limits (HTTP 429), server errors (5xx), timeouts, dropped connections and answers
that are not JSON (or not even UTF-8 text) are retried with exponential backoff (``Retry-After`` is honoured,
capped); when they outlast the retries an :class:`EndpointError` names the URL. Other
HTTP errors are raised at once (:class:`LLMError`), and HTTP 401/403 as
:class:`KeyRefused`, which names where the key came from (``$OPENAI_API_KEY``, never its
value); after one, the client sends nothing more. A dead endpoint is not retried item
after item: after ``max_connection_failures`` consecutive attempts that got no HTTP
answer at all (connection refused or reset, unknown host, connect timeout), counted
across requests, :class:`EndpointUnreachable` names the URL and stops the caller. Every
:class:`EndpointError` means "stop the run": each remaining request would fail the same
way. With ``"stream": true`` in the request body the server-sent events are read and
their deltas joined. The API key only ever goes into the ``Authorization`` header: error
messages are redacted, headers are never logged and the client's ``repr`` leaves the key
out. A ``base_url`` with credentials in it (``http://user:secret@host/v1``) is refused
(:func:`refuse_credentials`, whose message shows it through
:func:`clapcap.utils.urls.redact_url`), so :attr:`ChatClient.url`, the URL every message
shows, never holds any.
"""

from __future__ import annotations

import http.client
import json
import logging
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from clapcap.llm.errors import (
    EndpointError,
    EndpointUnreachable,
    KeyRefused,
    LLMError,
    LLMResponseError,
)
from clapcap.llm.secrets import SecretStr
from clapcap.utils.limits import API_LIMIT, concurrency_slot
from clapcap.utils.urls import has_user_info, redact_url

logger = logging.getLogger(__name__)

RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
# The key (or its absence) is refused: every request would be, so the run stops at once.
AUTH_STATUS = frozenset({401, 403})

Message = dict[str, Any]

# A malformed answer (not UTF-8, not JSON) is retried like a dropped one.
_TRANSIENT = (urllib.error.URLError, TimeoutError, ConnectionError, http.client.HTTPException,
              json.JSONDecodeError, UnicodeDecodeError)

DEFAULT_MAX_CONNECTION_FAILURES = 3


def refuse_credentials(base_url: str, key_env: str = "") -> None:
    """Refuse a ``base_url`` that carries ``user:password@``: it would be logged and printed.

    Raises:
        ValueError: naming the URL redacted and where the key belongs (``api_key_env``).
    """
    if has_user_info(base_url):
        where = f" (${key_env})" if key_env else ""
        raise ValueError(f"base_url {redact_url(base_url)!r} holds credentials (user:password@), "
                         "which would show in logs, MLflow params and error lines; remove them and "
                         f"put the API key in the variable named by api_key_env{where} or in env_file")


@dataclass
class RetryPolicy:
    """Backoff for transient errors: ``backoff_s * 2**attempt`` seconds, capped at ``max_backoff_s``."""

    max_retries: int = 5
    backoff_s: float = 1.0
    max_backoff_s: float = 60.0

    def delay(self, attempt: int, retry_after: str | None = None) -> float:
        """Seconds to wait before retry number ``attempt`` (0-based)."""
        if retry_after:
            try:
                return min(max(float(retry_after), 0.0), self.max_backoff_s)
            except ValueError:
                pass  # an HTTP date: fall back to exponential backoff
        return min(self.backoff_s * (2**attempt), self.max_backoff_s)


@dataclass
class _Failure:
    """One failed attempt: why, whether to retry, and the server's (redacted) words."""

    reason: str
    retryable: bool
    detail: str = ""
    retry_after: str | None = None
    no_connection: bool = False  # no HTTP answer at all (refused, reset, unknown host)
    status: int | None = None  # the HTTP status, when there was an answer


class ChatClient:
    """POSTs chat requests to ``{base_url}/chat/completions``.

    ``model`` is the model :meth:`complete` asks; :meth:`send` takes a whole request
    body, model included. ``max_connection_failures`` consecutive attempts without any
    HTTP answer (counted across requests and threads; any answer resets the count) raise
    :class:`EndpointUnreachable`; ``0`` turns the check off. Each request attempt holds one
    slot of the global concurrency limit ``concurrency_limit`` (:mod:`clapcap.utils.limits`:
    Prefect's limit when a Prefect API is configured, shared by every process and machine;
    none otherwise); ``None`` opts out.
    """

    def __init__(
        self,
        base_url: str,
        model: str = "",
        *,
        api_key: SecretStr | None = None,
        key_env: str = "",
        extra_body: dict[str, Any] | None = None,
        timeout_s: float = 60.0,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
        max_connection_failures: int = DEFAULT_MAX_CONNECTION_FAILURES,
        concurrency_limit: str | None = API_LIMIT,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must start with http:// or https://, found {redact_url(base_url)!r}")
        refuse_credentials(base_url, key_env)
        if max_connection_failures < 0:
            raise ValueError(f"max_connection_failures must be >= 0, found {max_connection_failures}")
        self.url = base_url.rstrip("/") + "/chat/completions"  # no credentials: refused above
        self.model = model
        self._key = api_key
        self._key_env = key_env  # the variable a missing key would come from (for the 401 hint)
        self.extra_body = dict(extra_body or {})  # every request body's defaults (engine options)
        self.timeout_s = timeout_s
        self.retry = retry or RetryPolicy()
        self._sleep = sleep
        self.n_requests = 0
        self.max_connection_failures = max_connection_failures
        self.connection_failures = 0  # consecutive, across requests
        self._lock = threading.Lock()
        self.concurrency_limit = concurrency_limit
        self._refused: KeyRefused | None = None  # set by a 401/403: send nothing more

    def __repr__(self) -> str:  # keeps the key out of any repr or log
        return f"{type(self).__name__}(url={self.url!r}, model={self.model!r})"

    def _redact(self, text: str) -> str:
        return self._key.redact(text) if self._key else text

    def _key_hint(self) -> str:
        """What to check after a 401/403: the key's variable, never its value."""
        if self._key is None:
            where = f" in ${self._key_env}" if self._key_env else ""
            return f"the request carried no API key; set one{where}"
        where = f" from {self._key.source}" if self._key.source else ""
        return f"the endpoint refused the API key{where}; check it"

    def _request(self, body: bytes, stream: bool) -> urllib.request.Request:
        accept = "text/event-stream" if stream else "application/json"
        headers = {"Content-Type": "application/json", "Accept": accept}
        if self._key is not None:
            headers["Authorization"] = f"Bearer {self._key.get()}"
        return urllib.request.Request(self.url, data=body, headers=headers, method="POST")

    def _post_once(self, body: bytes, stream: bool) -> str:
        if self.concurrency_limit is None:
            return self._post_unlimited(body, stream)
        with concurrency_slot(self.concurrency_limit):
            return self._post_unlimited(body, stream)

    def _post_unlimited(self, body: bytes, stream: bool) -> str:
        self.n_requests += 1
        with urllib.request.urlopen(self._request(body, stream), timeout=self.timeout_s) as resp:
            with self._lock:  # an HTTP answer: the endpoint is reachable
                self.connection_failures = 0
            if stream:
                return _read_stream(resp)
            return _content(json.loads(resp.read().decode("utf-8")), self.url)

    def complete(self, messages: Sequence[Message], *, temperature: float = 0.7,
                 max_tokens: int = 256, **extra: Any) -> str:
        """Ask :attr:`model` one chat request; return the first choice's message content.

        ``extra`` is merged into the request body (``stream``, ``seed``, ...).

        Raises:
            LLMError, EndpointError, KeyRefused, EndpointUnreachable, LLMResponseError:
                as :meth:`send` does.
        """
        return self.send({"model": self.model, "messages": list(messages),
                          "temperature": temperature, "max_tokens": max_tokens, **extra})

    def send(self, body: dict[str, Any]) -> str:
        """POST one request ``body`` (retrying transient failures); return the answer text.

        Returns:
            ``choices[0].message.content`` (``""`` when null), or with ``body["stream"]``
            the joined ``choices[*].delta.content`` of the event stream.

        Raises:
            LLMError: on a non-retryable HTTP status (400, 404, ...).
            KeyRefused: (an EndpointError) on HTTP 401 or 403, and at once, without a
                request, for every request after one.
            EndpointError: when transient failures outlast the retries.
            EndpointUnreachable: (an EndpointError) after ``max_connection_failures``
                consecutive attempts (this request's and earlier ones') got no HTTP answer.
            LLMResponseError: when the answer is not a chat completion.
        """
        refused = self._refused
        if refused is not None:  # the same key would be refused again: send nothing
            raise KeyRefused(str(refused), reason=refused.reason, attempts=0)
        payload = json.dumps({**self.extra_body, **body}).encode("utf-8")  # a request's own keys win
        who = f"model {body['model']}: " if body.get("model") else ""
        retries = self.retry.max_retries
        for attempt in range(retries + 1):
            try:
                return self._post_once(payload, bool(body.get("stream")))
            except _TRANSIENT as err:
                fail = self._failure(err)
            self._count_connection(fail, attempt + 1)
            if not fail.retryable or attempt == retries:
                error = _error(f"{self.url}: {who}", fail, attempt + 1, self._key_hint())
                if isinstance(error, KeyRefused):
                    self._refused = error
                raise error
            wait = self.retry.delay(attempt, fail.retry_after)
            logger.warning("%s: %s%s, retry %d/%d in %.1f s", self.url, who, fail.reason,
                           attempt + 1, retries, wait)
            self._sleep(wait)
        raise AssertionError("unreachable")  # the loop returns or raises

    def _count_connection(self, fail: _Failure, attempts: int) -> None:
        """Count consecutive attempts without an HTTP answer; raise when there are too many."""
        with self._lock:
            self.connection_failures = self.connection_failures + 1 if fail.no_connection else 0
            count = self.connection_failures
        if fail.no_connection and 0 < self.max_connection_failures <= count:
            raise EndpointUnreachable(
                f"{self.url}: endpoint unreachable: {count} consecutive connection failures "
                f"(last: {fail.reason}); check the base URL and that the server is running, "
                "then rerun (finished work is kept)",
                reason=fail.reason, attempts=attempts, retryable=False)

    def _failure(self, err: Exception) -> _Failure:
        if isinstance(err, urllib.error.HTTPError):
            detail = self._redact(err.read().decode("utf-8", "replace")[:200])
            retry_after = err.headers.get("Retry-After") if err.headers else None
            return _Failure(f"HTTP {err.code}", err.code in RETRY_STATUS, detail, retry_after,
                            status=err.code)
        if isinstance(err, TimeoutError):  # the server took the request but did not answer
            return _Failure(f"no answer within {self.timeout_s:g} s (TimeoutError)", True)
        if isinstance(err, json.JSONDecodeError):
            return _Failure(f"answer is not JSON ({err})", True)
        if isinstance(err, UnicodeDecodeError):
            byte = err.object[err.start:err.start + 1].hex()
            return _Failure(f"answer is not UTF-8 (byte 0x{byte} at position {err.start})", True)
        reason = getattr(err, "reason", None) or err
        no_connection = isinstance(err, urllib.error.URLError | ConnectionError)
        return _Failure(self._redact(f"{type(err).__name__}: {reason}"), True, no_connection=no_connection)


def _error(prefix: str, fail: _Failure, attempts: int, key_hint: str) -> LLMError:
    """The error for the last failed attempt; its message never holds the key."""
    detail = f": {fail.detail}" if fail.detail else ""
    if fail.status in AUTH_STATUS:
        return KeyRefused(f"{prefix}{fail.reason} (not retried): {key_hint}, then rerun{detail}",
                          reason=fail.reason, attempts=attempts)
    if fail.retryable:
        what = f"{fail.reason} after {attempts} attempt{'' if attempts == 1 else 's'}"
        return EndpointError(prefix + what + detail, reason=fail.reason, attempts=attempts,
                             retryable=True)
    return LLMError(f"{prefix}{fail.reason} (not retried){detail}", reason=fail.reason,
                    attempts=attempts)


def _content(data: Any, url: str) -> str:
    try:
        content = data["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise LLMResponseError(f"{url}: answer has no choices[0].message.content") from None
    if content is None:  # e.g. a refusal or a tool call: no text
        return ""
    if not isinstance(content, str):
        raise LLMResponseError(f"{url}: choices[0].message.content is {type(content).__name__}, expected str")
    return content


def _read_stream(lines: Iterable[bytes]) -> str:
    """Concatenate ``choices[*].delta.content`` of a server-sent-events stream."""
    parts = []
    for raw in lines:
        line = raw.decode("utf-8", errors="replace").strip()
        if not line.startswith("data:"):
            continue
        data = line[len("data:"):].strip()
        if data == "[DONE]":
            break
        chunk = json.loads(data)
        for choice in chunk.get("choices") or []:
            parts.append((choice.get("delta") or {}).get("content") or "")
    return "".join(parts)
