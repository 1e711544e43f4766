"""Per-clip progress cache: one JSON line per finished clip, appended and flushed at once.

An interrupted or rate-limited run loses at most the clip in flight; a rerun reads the
cache and skips finished clips. A truncated last line (a crash mid-write) is ignored.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

logger = logging.getLogger(__name__)


class ProgressCache:
    """Captions done so far, backed by a JSONL file of ``{"clip_id", "caption"}`` lines."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.done: dict[str, str] = {}
        if self.path.is_file():
            self._load()
            if self.path.stat().st_size and not self.path.read_bytes().endswith(b"\n"):
                with self.path.open("a") as fh:  # close a truncated line so appends stay parseable
                    fh.write("\n")

    def _load(self) -> None:
        for i, line in enumerate(self.path.read_text().splitlines(), start=1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
                self.done[str(rec["clip_id"])] = str(rec["caption"])
            except (json.JSONDecodeError, KeyError, TypeError):
                logger.warning("%s: line %d unreadable (interrupted write?), it will be redone", self.path, i)
        logger.info("%s: %d clip(s) already done", self.path, len(self.done))

    def add(self, clip_id: str, caption: str) -> None:
        """Record one finished clip durably (write, flush, fsync)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a") as fh:
            fh.write(json.dumps({"clip_id": clip_id, "caption": caption}, ensure_ascii=False) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        self.done[clip_id] = caption
