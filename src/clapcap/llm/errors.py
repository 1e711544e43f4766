"""Errors of the shared chat client and of API-key lookup (messages never hold a key)."""

from __future__ import annotations

from clapcap.errors import USAGE, ClapcapError


class LLMError(ClapcapError, RuntimeError):
    """The endpoint could not be used (non-retryable status, or retries exhausted): exit code 1.

    Attributes:
        reason: a short cause, such as ``HTTP 429`` or ``TimeoutError: timed out``.
        attempts: how many requests were sent.
        retryable: True when the cause was transient and the retries ran out.
    """

    def __init__(self, message: str, *, reason: str = "", attempts: int = 0,
                 retryable: bool = False) -> None:
        super().__init__(message)
        self.reason = reason
        self.attempts = attempts
        self.retryable = retryable


class LLMResponseError(LLMError):
    """The endpoint answered 200 but not with a chat completion (no ``choices[0].message.content``)."""


class MissingKeyError(LLMError, ValueError):
    """No API key in the environment variable nor in the ``.env`` file (names both, never a value).

    Exit code 2: the user must supply the key.
    """

    exit_code = USAGE


class EndpointError(LLMError):
    """The endpoint failed in a way that every further request would repeat: stop the run.

    Raised for a refused API key (:class:`KeyRefused`), no connection
    (:class:`EndpointUnreachable`) and transient failures (timeouts, 429, 5xx, answers
    that are not JSON or not UTF-8) that outlasted the retries. A caller looping over items stops at
    the first one instead of failing (and, on a paid API, paying for) every remaining
    item; the message names the endpoint URL.
    """


class KeyRefused(EndpointError):
    """HTTP 401 or 403: the endpoint refused the API key (or its absence).

    The message names the endpoint and where the key came from (``$OPENAI_API_KEY``),
    never its value. The client that got it sends no further request.
    """


class EndpointUnreachable(EndpointError):
    """No connection to the endpoint after several consecutive attempts (refused, reset,
    unresolvable host, connect timeout); the message names the URL. Raised at once
    instead of failing every remaining item one by one."""
