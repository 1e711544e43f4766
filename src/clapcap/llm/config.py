"""The one declaration of an OpenAI-compatible endpoint's settings.

Every LLM path extends :class:`EndpointConfig` and adds only what is its own: the paraphrase
backend (``robust_paraphrase.llm``: :class:`clapcap.paraphrase.llm.LLMParams`), the reference
API captioner (``reference.captioners[].api``: :class:`clapcap.reference.config.ApiConfig`)
and the pairwise LLM judges (:class:`clapcap.pairwise.llm_judge.JudgeConfig`). So the same
keys mean the same thing in each, and :meth:`EndpointConfig.client` is the one place that
turns them into a :class:`~clapcap.llm.client.ChatClient`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from clapcap.llm.client import (
    DEFAULT_MAX_CONNECTION_FAILURES,
    ChatClient,
    RetryPolicy,
    refuse_credentials,
)
from clapcap.llm.secrets import SecretStr, require_api_key, resolve_api_key


@dataclass(kw_only=True)
class EndpointConfig:
    """Where the endpoint is, which key it takes, and how patient to be with it.

    ``base_url``: the OpenAI-compatible API root (``.../v1``): a hosted API, a vLLM or
    llama.cpp server, without credentials in it (``user:password@`` is refused). The key is read from the variable ``api_key_env``, else from
    ``env_file`` (a git-ignored ``KEY=VALUE`` file; ``""``: none); it is never stored in a
    config nor logged. Transient failures are retried ``max_retries`` times with exponential
    backoff (``backoff_s`` doubling up to ``max_backoff_s``); ``max_connection_failures``
    consecutive refused connections stop the run (0: never). ``extra_body`` is merged into
    every request body (engine-specific options).
    """

    base_url: str = "http://127.0.0.1:8000/v1"
    api_key_env: str = "OPENAI_API_KEY"
    env_file: str = ".env"
    timeout_s: float = 60.0
    max_retries: int = 5
    backoff_s: float = 1.0
    max_backoff_s: float = 60.0
    max_connection_failures: int = DEFAULT_MAX_CONNECTION_FAILURES
    extra_body: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        refuse_credentials(self.base_url, self.api_key_env)

    def api_key(self, *, required: bool) -> SecretStr | None:
        """The key from ``$api_key_env``, else ``env_file``; None when not ``required`` and absent.

        Raises:
            MissingKeyError: when ``required`` and neither holds it (naming both, never a value).
        """
        file = self.env_file or None
        return require_api_key(self.api_key_env, file) if required else resolve_api_key(self.api_key_env, file)

    def retry_policy(self) -> RetryPolicy:
        return RetryPolicy(self.max_retries, self.backoff_s, self.max_backoff_s)

    def client(self, model: str = "", *, key_required: bool, sleep: Callable[[float], None] | None = None) -> ChatClient:
        """A :class:`ChatClient` for this endpoint (``model``: the default model of its requests)."""
        extra = {"sleep": sleep} if sleep is not None else {}
        return ChatClient(self.base_url, model, api_key=self.api_key(required=key_required),
                          key_env=self.api_key_env, extra_body=self.extra_body, timeout_s=self.timeout_s,
                          retry=self.retry_policy(), max_connection_failures=self.max_connection_failures, **extra)
