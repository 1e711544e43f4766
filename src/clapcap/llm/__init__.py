"""The shared OpenAI-compatible chat client and API-key handling.

- :mod:`clapcap.llm.secrets`: :class:`SecretStr` and the key lookup (environment
  variable, else a git-ignored ``.env`` file); a key is never printed or logged.
- :mod:`clapcap.llm.client`: :class:`ChatClient` for ``/chat/completions`` with retries
  (exponential backoff, ``Retry-After``), optional streaming, and a stop with an
  :class:`EndpointError` that names the URL: :class:`KeyRefused` at the first HTTP 401
  or 403, :class:`EndpointUnreachable` after consecutive connection failures, or the
  plain class when transient failures outlast the retries.
- :mod:`clapcap.llm.errors`: :class:`LLMError` and its subclasses.
- :mod:`clapcap.llm.jsonl`: the append-only JSONL files behind the paid-call caches
  (synced appends; a line torn by a crash is cut off, not glued to the next record) and
  :class:`~clapcap.llm.jsonl.ResumeCache`, the one resume cache on them (paraphrase calls
  by hash, reference captions by clip id).

Used by the paraphrase backend (:mod:`clapcap.paraphrase`), the pairwise LLM judges
(:mod:`clapcap.pairwise.llm_judge`) and the reference API captioner
(:mod:`clapcap.reference.api`), which keep their own prompts and parsing.
"""

from clapcap.llm.client import RETRY_STATUS, ChatClient, Message, RetryPolicy
from clapcap.llm.errors import (
    EndpointError,
    EndpointUnreachable,
    KeyRefused,
    LLMError,
    LLMResponseError,
    MissingKeyError,
)
from clapcap.llm.secrets import SecretStr, read_env_file, require_api_key, resolve_api_key

__all__ = [
    "RETRY_STATUS",
    "ChatClient",
    "EndpointError",
    "EndpointUnreachable",
    "KeyRefused",
    "LLMError",
    "LLMResponseError",
    "Message",
    "MissingKeyError",
    "RetryPolicy",
    "SecretStr",
    "read_env_file",
    "require_api_key",
    "resolve_api_key",
]
