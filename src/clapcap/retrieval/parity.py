"""Metric-parity gate: the vectorised harness against the independent reference.

For every dump, both implementations compute every metric of both directions; a cell
passes when every absolute difference is at most ``tolerance``. Report schema (JSON)::

    {"cells": [{"source", "n_clips", "n_captions", "captions_per_clip", "multi_positive",
                "worst_abs_delta", "passed",
                "rows": [{"direction", "metric", "harness", "independent", "abs_delta"}]}],
     "n_cells", "cells_with_multi_positive_ap", "tolerance", "worst_abs_delta", "passed",
     "failures": ["<source> <direction> <metric>: ..."]}
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from clapcap.data.dump import EmbeddingDump, dump_labels, load_dump
from clapcap.retrieval import metrics as harness
from clapcap.retrieval.independent import independent_metrics
from clapcap.utils.io import write_json

logger = logging.getLogger(__name__)

DEFAULT_TOLERANCE = 1e-9


def _captions_per_clip(dump: EmbeddingDump) -> int | float:
    counts = np.bincount(np.asarray(dump.caption_clip_index), minlength=dump.n_clips)
    # An int when every clip has the same number of captions, else the mean.
    return int(counts[0]) if (counts == counts[0]).all() else float(counts.mean())


def _delta(a: float, b: float) -> float:
    if math.isnan(a) or math.isnan(b):
        return math.inf
    return abs(a - b)


def parity_cell(dump: EmbeddingDump, source: str, *, tolerance: float = DEFAULT_TOLERANCE) -> dict:
    """Compare harness and reference on one dump.

    Returns:
        One report cell (see module docstring).

    Raises:
        DumpError: when the dump is invalid.
    """
    ours = harness.evaluate_dump(dump, origin=source)
    theirs = independent_metrics(dump.audio_embeds, dump.text_embeds, dump.caption_clip_index)
    rows = []
    for direction in harness.DIRECTIONS:
        for metric in harness.metric_names():
            a, b = float(ours[direction][metric]), float(theirs[direction][metric])
            rows.append({"direction": direction, "metric": metric, "harness": a,
                         "independent": b, "abs_delta": _delta(a, b)})
    worst = max(r["abs_delta"] for r in rows)
    return {"source": source, "n_clips": dump.n_clips, "n_captions": dump.n_captions,
            "captions_per_clip": _captions_per_clip(dump), "multi_positive": ours["multi_positive"],
            "worst_abs_delta": worst, "passed": bool(worst <= tolerance), "rows": rows}


def parity_report(dumps: Sequence[tuple[str, EmbeddingDump]], *,
                  tolerance: float = DEFAULT_TOLERANCE) -> dict:
    """The parity report over ``(source, dump)`` pairs.

    Raises:
        ValueError: when ``dumps`` is empty or ``tolerance`` is negative.
    """
    if not dumps:
        raise ValueError("parity needs at least one dump")
    if not tolerance >= 0:
        raise ValueError(f"tolerance must be >= 0, found {tolerance!r}")
    cells = [parity_cell(d, src, tolerance=tolerance) for src, d in dumps]
    failures = [
        f"{c['source']} {r['direction']} {r['metric']}: harness {r['harness']!r} vs independent "
        f"{r['independent']!r} (abs delta {r['abs_delta']:.3g} > {tolerance:g})"
        for c in cells for r in c["rows"] if not r["abs_delta"] <= tolerance
    ]
    return {"cells": cells, "n_cells": len(cells),
            "cells_with_multi_positive_ap": sum(1 for c in cells if c["multi_positive"]),
            "tolerance": tolerance, "worst_abs_delta": max(c["worst_abs_delta"] for c in cells),
            "passed": not failures, "failures": failures}


def run_parity(dump_paths: Sequence[str | Path], out_path: str | Path,
               tolerance: float = DEFAULT_TOLERANCE) -> dict:
    """Load dumps, build the parity report and write it atomically to ``out_path``.

    Returns:
        The report (``report["passed"]`` is the gate).

    Raises:
        FileNotFoundError / DumpError: for a missing or invalid dump.
    """
    # A cell is named by its file name, or by the path after the dumps' common folder when
    # file names repeat (data/embeddings/<encoder>/<dataset>/test.npz).
    names = [Path(p).name for p in dump_paths]
    sources = names if len(set(names)) == len(names) else [f"{x}.npz" for x in dump_labels(dump_paths)]
    dumps = [(src, load_dump(p)) for src, p in zip(sources, dump_paths, strict=True)]
    report = parity_report(dumps, tolerance=tolerance)
    write_json(out_path, report)
    level = logging.INFO if report["passed"] else logging.ERROR
    logger.log(level, "metric parity %s: %d cell(s), worst abs delta %.3g (tolerance %g)",
               "passed" if report["passed"] else "FAILED", report["n_cells"],
               report["worst_abs_delta"], tolerance)
    for failure in report["failures"]:
        logger.error("parity failure: %s", failure)
    return report
