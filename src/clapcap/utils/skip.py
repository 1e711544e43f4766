"""Stages that do not apply to a dataset: a skip marker instead of a failure.

Some stages need what only the synthetic corpus has: its paraphrase views (RobustCLAP) and its
music clips (the music-encoder ablation). On a real dataset such a stage writes its output
folder holding one ``SKIPPED.json`` (the stage and the reason) and exits 0, so a plain
``dvc repro`` runs through; every stage that reads a skipped folder skips in turn, and the
report stage leaves the skipped study's findings out (and logs why). A result file output
(a ``.json``) holds the same object itself.

The marker's bytes depend only on the stage and the reason (house style: content only).
"""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Iterable
from pathlib import Path

from clapcap.utils.io import write_json

logger = logging.getLogger(__name__)

MARKER = "SKIPPED.json"


def mark_skipped(outputs: Iterable[str | Path], *, stage: str, reason: str) -> None:
    """Write the skip marker into every output: ``<dir>/SKIPPED.json`` for a folder, the marker
    object itself for a ``.json`` file, a line for any other file. An old output is removed."""
    record = {"skipped": True, "stage": stage, "reason": reason}
    for out in map(Path, outputs):
        if out.is_dir():
            shutil.rmtree(out)
        elif out.exists():
            out.unlink()
        if out.suffix == ".json":
            write_json(out, record)
        elif out.suffix:
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(f"Skipped ({stage}): {reason}\n")
        else:
            write_json(out / MARKER, record)
    logger.info("%s skipped: %s", stage, reason)


def skip_reason(path: str | Path) -> str | None:
    """The reason ``path`` (an output folder, a file in one, or a ``.json`` result) was
    skipped, or None when it holds a real result (or does not exist)."""
    path = Path(path)
    candidates = [path / MARKER] if path.is_dir() else [path, path.parent / MARKER]
    for c in candidates:
        if c.is_file() and (c.name == MARKER or c.suffix == ".json"):
            try:
                record = json.loads(c.read_text())
            except (OSError, ValueError):
                continue
            if isinstance(record, dict) and record.get("skipped") is True:
                return f"{record.get('stage', '?')}: {record.get('reason', '')}"
    return None


def skip_if_inputs_skipped(inputs: Iterable[str | Path], outputs: Iterable[str | Path], *, stage: str) -> bool:
    """Mark ``outputs`` skipped when any of ``inputs`` is; True when the stage must stop."""
    for inp in inputs:
        reason = skip_reason(inp)
        if reason is not None:
            mark_skipped(outputs, stage=stage, reason=f"its input {Path(inp).as_posix()} was skipped ({reason})")
            return True
    return False
