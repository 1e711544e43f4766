"""An append-only JSONL cache of LLM results, keyed by step, caption, prompt and model.

Each line is one finished call: ``{"key", "step", "model", "caption", "status", "value",
"raw", "error"}``. A rerun reads the file and skips every key already present, so an
interrupted run never pays twice (a ``kill -9`` test checks it). A half-written last
line (a crash mid-write) is removed and its call redone; any other unreadable line is
ignored with a warning (:mod:`clapcap.llm.jsonl`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from pathlib import Path
from typing import Any

from clapcap.llm.jsonl import append_record, read_records

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
        for lineno, rec in read_records(self.path):
            if not isinstance(rec.get("key"), str):
                logger.warning("%s: line %d is not a cache record (no key); ignored", self.path, lineno)
                continue
            self._records[rec["key"]] = rec
        if self.path.is_file():
            logger.info("cache %s: %d records", self.path, len(self._records))

    def __len__(self) -> int:
        return len(self._records)

    def get(self, key: str) -> dict[str, Any] | None:
        """The record stored under ``key``, or None."""
        return self._records.get(key)

    def put(self, record: dict[str, Any]) -> None:
        """Append ``record`` (which must hold ``key``) and sync it to disk."""
        with self._lock:
            append_record(self.path, record, sort_keys=True)
            self._records[record["key"]] = record
