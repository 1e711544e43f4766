"""Captions from an OpenAI-compatible chat API that accepts audio (``input_audio`` parts).

Requests go to ``{base_url}/chat/completions`` with ``temperature`` 0 and ``max_tokens`` =
``max_new_tokens``. Rate limits (429), server errors (5xx), timeouts and connection errors
are retried with exponential backoff (``Retry-After`` honoured); other errors stop at once.
The API key comes from the environment or a ``.env`` file and never appears in logs or
error messages.
"""

from __future__ import annotations

import base64
import io
import json
import logging
import os
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from clapcap.reference.config import ApiConfig, GenerationConfig

logger = logging.getLogger(__name__)

RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504}


class ApiError(RuntimeError):
    """The API refused a request or kept failing after the retries."""


def resolve_api_key(cfg: ApiConfig) -> str:
    """The key from ``$<api_key_env>``, else from ``cfg.env_file``.

    Raises:
        ApiError: naming the variable and file (never a value) when no key is found.
    """
    key = os.environ.get(cfg.api_key_env)
    if not key and cfg.env_file and Path(cfg.env_file).is_file():
        from dotenv import dotenv_values

        key = dotenv_values(cfg.env_file).get(cfg.api_key_env)
    if not key:
        raise ApiError(f"no API key: set {cfg.api_key_env} in the environment or in {cfg.env_file}")
    return key


def encode_audio(path: str | Path) -> tuple[str, str]:
    """Base64 of the clip and its format (``wav``/``mp3``; other formats are converted to wav)."""
    path = Path(path)
    suffix = path.suffix.lower().lstrip(".")
    if suffix in ("wav", "mp3"):
        return base64.b64encode(path.read_bytes()).decode("ascii"), suffix
    import soundfile as sf

    from clapcap.data.audio import load_audio

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
        self.cfg, self.gen, self._sleep = cfg, gen, sleep
        self._key = resolve_api_key(cfg)
        self.url = cfg.base_url.rstrip("/") + "/chat/completions"

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
        return {**body, **self.cfg.extra_body}

    def caption(self, audio_path: str | Path) -> str:
        """Caption one clip, retrying transient failures.

        Raises:
            ApiError: on a non-retryable HTTP error or when the retries are exhausted.
        """
        payload = json.dumps(self.body(audio_path)).encode()
        for attempt in range(self.cfg.max_retries + 1):
            try:
                return self._post(payload)
            except urllib.error.HTTPError as err:
                detail = err.read()[:300].decode(errors="replace")
                if err.code not in RETRY_STATUS:
                    raise ApiError(f"{self.url}: HTTP {err.code}: {detail}") from err
                delay = _retry_after(err) or self._backoff(attempt)
                reason = f"HTTP {err.code}"
            except (urllib.error.URLError, TimeoutError, ConnectionError) as err:
                delay, reason = self._backoff(attempt), type(err).__name__
            if attempt == self.cfg.max_retries:
                break
            logger.warning("%s: %s, retry %d/%d in %.1f s", self.url, reason, attempt + 1,
                           self.cfg.max_retries, delay)
            self._sleep(delay)
        raise ApiError(f"{self.url}: still failing ({reason}) after {self.cfg.max_retries} retries")

    def _backoff(self, attempt: int) -> float:
        return min(self.cfg.max_backoff_s, self.cfg.backoff_s * 2 ** attempt)

    def _post(self, payload: bytes) -> str:
        req = urllib.request.Request(self.url, data=payload, method="POST", headers={
            "Content-Type": "application/json", "Authorization": f"Bearer {self._key}"})
        with urllib.request.urlopen(req, timeout=self.cfg.timeout_s) as resp:
            if self.cfg.stream:
                return _read_stream(resp)
            data = json.loads(resp.read())
        try:
            return (data["choices"][0]["message"]["content"] or "").strip()
        except (KeyError, IndexError, TypeError) as err:
            raise ApiError(f"{self.url}: unexpected response {str(data)[:200]}") from err


def _retry_after(err: urllib.error.HTTPError) -> float | None:
    value = err.headers.get("Retry-After") if err.headers else None
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _read_stream(resp: Any) -> str:
    """Concatenate ``choices[0].delta.content`` of a server-sent-events stream."""
    parts = []
    for raw in resp:
        line = raw.decode("utf-8", errors="replace").strip()
        if not line.startswith("data:"):
            continue
        data = line[len("data:"):].strip()
        if data == "[DONE]":
            break
        chunk = json.loads(data)
        for choice in chunk.get("choices") or []:
            parts.append((choice.get("delta") or {}).get("content") or "")
    return "".join(parts).strip()
