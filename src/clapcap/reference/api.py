"""Captions from an OpenAI-compatible chat API that accepts audio (``input_audio`` parts).

Requests go to ``{base_url}/chat/completions`` with ``temperature`` 0 and ``max_tokens`` =
``max_new_tokens``, through the shared :class:`clapcap.llm.ChatClient`: rate limits (429),
server errors (5xx), timeouts and connection errors are retried with exponential backoff
(``Retry-After`` honoured); other errors stop at once (a refused key, HTTP 401/403, after
one request, naming the key's variable), and so does an endpoint that refused
``max_connection_failures`` consecutive connections
(:class:`~clapcap.llm.EndpointUnreachable`). The API key comes from the
environment or a ``.env`` file and never appears in logs or error messages.
"""

from __future__ import annotations

import base64
import io
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from clapcap.data.audio import load_audio
from clapcap.llm import EndpointUnreachable, LLMError, MissingKeyError
from clapcap.reference.config import ApiConfig, GenerationConfig

logger = logging.getLogger(__name__)


class ApiError(LLMError):
    """The API refused a request or kept failing after the retries."""


def encode_audio(path: str | Path) -> tuple[str, str]:
    """Base64 of the clip and its format (``wav``/``mp3``; other formats are converted to wav)."""
    path = Path(path)
    suffix = path.suffix.lower().lstrip(".")
    if suffix in ("wav", "mp3"):
        return base64.b64encode(path.read_bytes()).decode("ascii"), suffix
    import soundfile as sf


    wave, sr = load_audio(path)
    buf = io.BytesIO()
    sf.write(buf, wave, sr, format="WAV")
    return base64.b64encode(buf.getvalue()).decode("ascii"), "wav"


class ApiCaptioner:
    """Caption clips one request at a time through an OpenAI-compatible endpoint."""

    def __init__(self, cfg: ApiConfig, gen: GenerationConfig, *,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        if not cfg.base_url or not cfg.model:
            raise ValueError("reference api backend needs api.base_url and api.model")
        self.cfg, self.gen = cfg, gen
        try:
            self._client = cfg.client(cfg.model, key_required=True, sleep=sleep)
        except MissingKeyError as err:  # before any request, naming the variable and file
            raise ApiError(str(err)) from None
        self.url = self._client.url

    def __repr__(self) -> str:  # never show the key
        return f"ApiCaptioner(url={self.url!r}, model={self.cfg.model!r})"

    def body(self, audio_path: str | Path) -> dict[str, Any]:
        """The JSON request body for one clip."""
        data, fmt = encode_audio(audio_path)
        if self.cfg.audio_encoding == "data_uri":
            data = f"data:;base64,{data}"
        content: list[dict[str, Any]] = [{"type": "input_audio", "input_audio": {"data": data, "format": fmt}}]
        if self.gen.prompt:
            content.append({"type": "text", "text": self.gen.prompt})
        body = {"model": self.cfg.model, "messages": [{"role": "user", "content": content}],
                "max_tokens": self.gen.max_new_tokens, "temperature": 0, "stream": self.cfg.stream}
        return body  # the client adds api.extra_body to every request

    def caption(self, audio_path: str | Path) -> str:
        """Caption one clip, retrying transient failures.

        Returns:
            The answer text, stripped (streamed deltas joined when ``api.stream``).

        Raises:
            ApiError: on a non-retryable HTTP error (HTTP 401/403 naming the key's
                variable, never its value), an answer that is not a chat completion, or
                when the retries are exhausted; the message names the endpoint.
            EndpointUnreachable: after consecutive connection failures (names the URL).
        """
        try:
            return self._client.send(self.body(audio_path)).strip()
        except EndpointUnreachable:
            raise
        except LLMError as err:
            if err.retryable:
                raise ApiError(f"{self.url}: still failing ({err.reason}) after "
                               f"{err.attempts - 1} retries") from None
            raise ApiError(str(err)) from None
