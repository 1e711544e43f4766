"""Append-only JSONL files that survive ``kill -9``: one durable record per line.

:func:`append_record` writes a whole line and syncs it, so a record is on disk before the
caller moves on. A crash can still cut the last line (a write split over several system
calls, or a power loss). :func:`read_records` drops such a torn tail from the file, so the
next append starts on a fresh line instead of gluing a good record onto the fragment, and
it skips (with a warning) any other line that is not a JSON object, instead of crashing.

:class:`ResumeCache` is the resume cache built on them, shared by every paid or slow loop
(the paraphrase LLM calls, keyed by a hash; the reference captioners, keyed by clip id):
a rerun reads the file and skips every key already recorded, so an interrupted run never
pays twice (``kill -9`` tests check it).
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Iterator, Sequence
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


class ResumeCache:
    """Thread-safe resume cache: the records of a JSONL file by the value of one field.

    A line is a record when it holds ``key`` and every field of ``text_fields`` is a
    string; other lines (and those :func:`read_records` skips) are ignored with a warning,
    so their work is redone. A later record replaces an earlier one with the same key.

    Args:
        path: the JSONL file (created on the first :meth:`put`).
        key: the field that names a record (stored as ``str``).
        text_fields: fields that must be strings for a line to count.
        sort_keys: write each record with sorted keys (the file format of its owner).
    """

    def __init__(self, path: str | Path, key: str, *, text_fields: Sequence[str] = (),
                 sort_keys: bool = False) -> None:
        self.path = Path(path)
        self.key = key
        self.sort_keys = sort_keys
        self._lock = threading.Lock()
        self._records: dict[str, dict[str, Any]] = {}
        needed = [key, *(f for f in text_fields if f != key)]
        for lineno, rec in read_records(self.path):
            if key not in rec or any(not isinstance(rec.get(f), str) for f in text_fields):
                logger.warning("%s: line %d is not a record (needs %s); ignored, it will be redone",
                               self.path, lineno, ", ".join(needed))
                continue
            self._records[str(rec[key])] = rec
        if self._records:
            logger.info("%s: %d record(s) already done", self.path, len(self._records))

    def __len__(self) -> int:
        return len(self._records)

    def __contains__(self, key: object) -> bool:
        return key in self._records

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._records))

    def __getitem__(self, key: str) -> dict[str, Any]:
        return self._records[key]

    def get(self, key: str) -> dict[str, Any] | None:
        """The record stored under ``key``, or None."""
        return self._records.get(key)

    def put(self, record: dict[str, Any]) -> None:
        """Append ``record`` (which must hold the key field) and sync it to disk."""
        with self._lock:
            append_record(self.path, record, sort_keys=self.sort_keys)
            self._records[str(record[self.key])] = record
