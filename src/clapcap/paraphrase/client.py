"""A minimal client for OpenAI-compatible ``/chat/completions`` endpoints (stdlib only).

Rate limits (HTTP 429), server errors (5xx), timeouts and dropped connections are
retried with exponential backoff (``Retry-After`` is honoured, capped); other HTTP
errors are raised at once. The API key only ever goes into the ``Authorization``
header: error messages are redacted and headers are never logged.
"""

from __future__ import annotations

import http.client
import json
import logging
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from clapcap.paraphrase.secrets import SecretStr

logger = logging.getLogger(__name__)

RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})

Message = dict[str, str]


class LLMError(RuntimeError):
    """The endpoint could not be used (non-retryable status, or retries exhausted)."""


class LLMResponseError(LLMError):
    """The endpoint answered 200 but not with a chat completion (no ``choices[0].message.content``)."""


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


class ChatClient:
    """POSTs chat requests to ``{base_url}/chat/completions`` for one ``model``."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: SecretStr | None = None,
        timeout_s: float = 60.0,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must start with http:// or https://, found {base_url!r}")
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self._key = api_key
        self.timeout_s = timeout_s
        self.retry = retry or RetryPolicy()
        self._sleep = sleep
        self.n_requests = 0

    def _redact(self, text: str) -> str:
        return self._key.redact(text) if self._key else text

    def _request(self, body: bytes) -> urllib.request.Request:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._key is not None:
            headers["Authorization"] = f"Bearer {self._key.get()}"
        return urllib.request.Request(self.url, data=body, headers=headers, method="POST")

    def _post_once(self, body: bytes) -> dict[str, Any]:
        self.n_requests += 1
        with urllib.request.urlopen(self._request(body), timeout=self.timeout_s) as resp:
            return json.loads(resp.read().decode("utf-8"))

    def complete(self, messages: Sequence[Message], *, temperature: float = 0.7,
                 max_tokens: int = 256) -> str:
        """Send one chat request; return the first choice's message content.

        Raises:
            LLMError: on a non-retryable HTTP status or when retries are exhausted.
            LLMResponseError: when the answer is not a chat completion.
        """
        body = json.dumps({"model": self.model, "messages": list(messages),
                           "temperature": temperature, "max_tokens": max_tokens}).encode("utf-8")
        for attempt in range(self.retry.max_retries + 1):
            try:
                data = self._post_once(body)
            except urllib.error.HTTPError as err:
                detail = self._redact(err.read().decode("utf-8", "replace")[:200])
                if err.code not in RETRY_STATUS or attempt == self.retry.max_retries:
                    raise LLMError(f"{self.url}: HTTP {err.code} after {attempt + 1} attempt(s): {detail}") from None
                wait = self.retry.delay(attempt, err.headers.get("Retry-After"))
                logger.warning("%s: HTTP %d, retrying in %.1f s", self.url, err.code, wait)
            except (urllib.error.URLError, TimeoutError, ConnectionError,
                    http.client.HTTPException, json.JSONDecodeError) as err:
                reason = self._redact(str(getattr(err, "reason", err)))
                if attempt == self.retry.max_retries:
                    raise LLMError(f"{self.url}: {reason} after {attempt + 1} attempt(s)") from None
                wait = self.retry.delay(attempt)
                logger.warning("%s: %s, retrying in %.1f s", self.url, reason, wait)
            else:
                return _content(data, self.url)
            self._sleep(wait)
        raise AssertionError("unreachable")  # the loop returns or raises


def _content(data: Any, url: str) -> str:
    try:
        content = data["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise LLMResponseError(f"{url}: answer has no choices[0].message.content") from None
    if not isinstance(content, str):
        raise LLMResponseError(f"{url}: choices[0].message.content is {type(content).__name__}, expected str")
    return content
