"""Append-only JSONL files that survive ``kill -9``: one durable record per line.

:func:`append_record` writes a whole line and syncs it, so a record is on disk before the
caller moves on. A crash can still cut the last line (a write split over several system
calls, or a power loss). :func:`read_records` drops such a torn tail from the file, so the
next append starts on a fresh line instead of gluing a good record onto the fragment, and
it skips (with a warning) any other line that is not a JSON object, instead of crashing.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)


def append_record(path: str | Path, record: dict[str, Any], *, sort_keys: bool = False) -> None:
    """Append ``record`` as one JSON line (UTF-8) and sync it to disk (write, flush, fsync)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    line = (json.dumps(record, ensure_ascii=False, sort_keys=sort_keys) + "\n").encode("utf-8")
    with path.open("ab") as fh:
        fh.write(line)
        fh.flush()
        os.fsync(fh.fileno())


def _parse(raw: bytes) -> dict[str, Any] | None:
    try:
        rec = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    return rec if isinstance(rec, dict) else None


def read_records(path: str | Path) -> list[tuple[int, dict[str, Any]]]:
    """The JSON objects of a JSONL file with their 1-based line numbers.

    Lines that are not JSON objects are skipped with a warning. A last line without its
    newline that does not parse (a write cut by a crash) is removed from the file; one
    that parses is kept and given its newline.

    Returns:
        ``[(line, record), ...]``; empty when the file does not exist.
    """
    path = Path(path)
    if not path.is_file():
        return []
    data = path.read_bytes()
    lines = data.split(b"\n")
    tail = lines.pop()  # b"" when the file ends with a newline
    out = []
    for lineno, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        rec = _parse(raw)
        if rec is None:
            logger.warning("%s: line %d is not a JSON record (an interrupted write?); ignored", path, lineno)
        else:
            out.append((lineno, rec))
    if tail.strip():
        rec = _parse(tail)
        with path.open("r+b") as fh:
            if rec is None:  # torn: cut it off so the next record starts on its own line
                fh.truncate(len(data) - len(tail))
                logger.warning("%s: line %d was cut by a crash (%d bytes); removed, it will be redone",
                               path, len(lines) + 1, len(tail))
            else:
                fh.seek(0, os.SEEK_END)
                fh.write(b"\n")
                out.append((len(lines) + 1, rec))
            fh.flush()
            os.fsync(fh.fileno())
    return out
