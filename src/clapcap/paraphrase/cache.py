"""An append-only JSONL cache of LLM results, keyed by step, caption, prompt and model.

Each line is one finished call: ``{"key", "step", "model", "caption", "status", "value",
"raw", "error"}``. A rerun reads the file and skips every key already present, so an
interrupted run never pays twice; a half-written last line (a crash mid-write) is
ignored with a warning.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)


def cache_key(step: str, model: str, messages: list[dict[str, str]], **options: Any) -> str:
    """SHA-256 of the step, model, full prompt (which contains the caption) and options."""
    payload = json.dumps({"step": step, "model": model, "messages": messages, "options": options},
                         sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class JsonlCache:
    """Thread-safe JSONL cache; ``get`` returns the stored record or None."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._records: dict[str, dict[str, Any]] = {}
        self._load()

    def _load(self) -> None:
        if not self.path.is_file():
            return
        with self.path.open(encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                    self._records[rec["key"]] = rec
                except (json.JSONDecodeError, KeyError, TypeError):
                    logger.warning("%s: line %d is not a cache record; ignored", self.path, lineno)
        logger.info("cache %s: %d records", self.path, len(self._records))

    def __len__(self) -> int:
        return len(self._records)

    def get(self, key: str) -> dict[str, Any] | None:
        """The record stored under ``key``, or None."""
        return self._records.get(key)

    def put(self, record: dict[str, Any]) -> None:
        """Append ``record`` (which must hold ``key``) and flush it to disk."""
        line = json.dumps(record, ensure_ascii=False, sort_keys=True)
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as fh:
                fh.write(line + "\n")
                fh.flush()
                os.fsync(fh.fileno())
            self._records[record["key"]] = record
