"""Per-clip progress cache: one JSON line per finished clip, appended and flushed at once.

An interrupted or rate-limited run loses at most the clip in flight; a rerun reads the
cache and skips finished clips, so no paid call is repeated (a ``kill -9`` test checks
it). A truncated last line (a crash mid-write) is removed and its clip redone; any other
unreadable line is ignored with a warning (:mod:`clapcap.llm.jsonl`).
"""

from __future__ import annotations

import logging
from pathlib import Path

from clapcap.llm.jsonl import append_record, read_records

logger = logging.getLogger(__name__)


class ProgressCache:
    """Captions done so far, backed by a JSONL file of ``{"clip_id", "caption"}`` lines."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.done: dict[str, str] = {}
        for lineno, rec in read_records(self.path):
            if "clip_id" not in rec or not isinstance(rec.get("caption"), str):
                logger.warning("%s: line %d has no clip_id and caption; it will be redone", self.path, lineno)
                continue
            self.done[str(rec["clip_id"])] = rec["caption"]
        if self.done:
            logger.info("%s: %d clip(s) already done", self.path, len(self.done))

    def add(self, clip_id: str, caption: str) -> None:
        """Record one finished clip durably (write, flush, fsync)."""
        append_record(self.path, {"clip_id": clip_id, "caption": caption})
        self.done[clip_id] = caption
