"""The project's DVC metrics: a few headline numbers, each a small file ``dvc metrics show``
prints as one row.

Every stage writes its detailed results as plain outputs (per-item scores, per-seed tables,
error messages). ``dvc metrics show`` and ``dvc metrics diff`` read only what this step writes:
``<out_dir>/<name>.json`` holding ``value`` and, where the source has a 95 % interval, ``low``
and ``high``. So the table is a handful of columns wide and a diff lists the numbers a reader
compares. Each entry of params.yaml ``metrics_summary.entries`` is the one definition of its
name: the source file and the dotted path of the value (and of its interval) in it.
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clapcap.errors import InputError
from clapcap.utils.io import atomic_dir, read_json

logger = logging.getLogger(__name__)


@dataclass
class SummaryEntry:
    """One headline number: ``file`` and the dotted paths of ``value`` and its interval."""

    file: str
    value: str
    low: str = ""
    high: str = ""

    def __post_init__(self) -> None:
        if bool(self.low) != bool(self.high):
            raise ValueError(f"{self.file}: give both low and high, or neither")


@dataclass
class MetricsSummaryParams:
    """``params.yaml`` section ``metrics_summary``."""

    out_dir: str = "metrics/summary"
    entries: dict[str, SummaryEntry] = field(default_factory=dict)


def lookup(doc: Any, dotted: str, where: str) -> float:
    """The number at ``dotted`` (keys joined by ``.``) in ``doc``.

    Raises:
        InputError: a key that is not there, or a value that is not a finite number.
    """
    node = doc
    for i, key in enumerate(dotted.split(".")):
        if not isinstance(node, dict) or key not in node:
            have = sorted(node)[:12] if isinstance(node, dict) else type(node).__name__
            raise InputError(f"{where}: no {'.'.join(dotted.split('.')[:i + 1])!r} (found {have})")
        node = node[key]
    if isinstance(node, bool) or not isinstance(node, int | float) or not math.isfinite(node):
        raise InputError(f"{where}: {dotted} is {node!r}, not a finite number")
    return float(node)


def summarise(entries: dict[str, SummaryEntry]) -> dict[str, dict[str, float]]:
    """``{name: {"value"[, "low", "high"]}}`` read from each entry's file."""
    docs: dict[str, Any] = {}
    out = {}
    for name, e in entries.items():
        if e.file not in docs:
            if not Path(e.file).is_file():
                raise InputError(f"metrics_summary.entries.{name}: {e.file} not found (run the stage that "
                                 "writes it first)")
            docs[e.file] = read_json(e.file)
        where = f"metrics_summary.entries.{name} ({e.file})"
        row = {"value": lookup(docs[e.file], e.value, where)}
        if e.low:
            row["low"] = lookup(docs[e.file], e.low, where)
            row["high"] = lookup(docs[e.file], e.high, where)
        out[name] = row
    return out


def write_summary(params: MetricsSummaryParams) -> list[Path]:
    """Write one ``<out_dir>/<name>.json`` per entry (the folder replaced as a whole, so a
    removed entry leaves no stale file); returns their paths."""
    rows = summarise(params.entries)
    with atomic_dir(params.out_dir) as tmp:
        for name, row in rows.items():
            path = tmp / f"{name}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(row, indent=1) + "\n", encoding="utf-8")
    logger.info("metrics_summary: %d headline metrics in %s", len(rows), params.out_dir)
    return [Path(params.out_dir) / f"{name}.json" for name in rows]
