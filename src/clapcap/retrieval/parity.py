"""Metric-parity gate: the vectorised harness against the independent reference.

For every dump, both implementations compute every metric of both directions; a cell
passes when every absolute difference is at most ``tolerance``. Report schema (JSON)::

    {"cells": [{"source", "n_clips", "n_captions", "captions_per_clip", "multi_positive",
                "worst_abs_delta", "passed",
                "rows": [{"direction", "metric", "harness", "independent", "abs_delta"}]}],
     "n_cells", "cells_with_multi_positive_ap", "tolerance", "worst_abs_delta", "passed",
     "failures": ["<source> <direction> <metric>: ..."]}

:func:`run_parity_report` wraps it in the reference report's envelope
(``../shared/reference/metric_parity_example.json``) with a checkpoint-identity finding::

    {"metric_parity": {<the report above without "failures">},
     "checkpoint_identity": {"fixture", "n", "hf_checkpoint", "control",
                             "audio_embedding_cosine_per_clip", "text_embedding_cosine_per_clip",
                             "similarity_matrix_correlation", "similarity_matrix_max_abs_diff", "verdict"},
     "metric_parity_passed", "cross_pipeline_comparable", "failures"}

``failures`` are the metric-parity failures, plus the identity verdict only when identity is
asked to gate: "different checkpoints" is a finding, not a failure.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from clapcap.data.dump import EmbeddingDump, dump_labels, load_dump
from clapcap.errors import InputError
from clapcap.retrieval import metrics as harness
from clapcap.retrieval.identity import SAME
from clapcap.retrieval.independent import independent_metrics
from clapcap.utils.io import read_json, write_json

logger = logging.getLogger(__name__)

DEFAULT_TOLERANCE = 1e-9


def captions_per_clip(dump: EmbeddingDump) -> int | float:
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
            "captions_per_clip": captions_per_clip(dump), "multi_positive": ours["multi_positive"],
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


def _load_dumps(dump_paths: Sequence[str | Path]) -> list[tuple[str, EmbeddingDump]]:
    """``(source, dump)`` pairs. A cell is named by its file name, or by the path after the dumps'
    common folder when file names repeat (data/embeddings/<encoder>/<dataset>/test.npz)."""
    names = [Path(p).name for p in dump_paths]
    sources = names if len(set(names)) == len(names) else [f"{x}.npz" for x in dump_labels(dump_paths)]
    return [(src, load_dump(p)) for src, p in zip(sources, dump_paths, strict=True)]


def run_parity(dump_paths: Sequence[str | Path], out_path: str | Path,
               tolerance: float = DEFAULT_TOLERANCE) -> dict:
    """Load dumps, build the parity report and write it atomically to ``out_path``.

    Returns:
        The report (``report["passed"]`` is the gate).

    Raises:
        FileNotFoundError / DumpError: for a missing or invalid dump.
    """
    report = parity_report(_load_dumps(dump_paths), tolerance=tolerance)
    write_json(out_path, report)
    level = logging.INFO if report["passed"] else logging.ERROR
    logger.log(level, "metric parity %s: %d cell(s), worst abs delta %.3g (tolerance %g)",
               "passed" if report["passed"] else "FAILED", report["n_cells"],
               report["worst_abs_delta"], tolerance)
    for failure in report["failures"]:
        logger.error("parity failure: %s", failure)
    return report


NO_IDENTITY = "not run: no identity report given"


def _per_clip_text(per_item: dict[str, float]) -> list[float]:
    """Mean text cosine of each clip's captions (keys ``<clip id>#<caption row>``), in clip order."""
    by_clip: dict[str, list[float]] = {}
    for key, value in per_item.items():
        by_clip.setdefault(key.rsplit("#", 1)[0], []).append(value)
    return [math.fsum(v) / len(v) for v in by_clip.values()]


def reference_identity(report: dict | None) -> dict:
    """The reference report's ``checkpoint_identity`` block from an identity report
    (:func:`clapcap.retrieval.identity.identity_report`, or the stage's "not run" record)."""
    report = report or {"verdict": NO_IDENTITY}
    pipelines = report.get("pipelines") or [None, None]
    checkpoints = report.get("checkpoints") or [None, None]
    hf = pipelines.index("hf_transformers") if "hf_transformers" in pipelines else 1
    other = 1 - hf
    control = None
    if checkpoints[other] is not None:
        fusion = f" (enable_fusion={report['enable_fusion']})" if "enable_fusion" in report else ""
        control = f"{pipelines[other] or 'dump'} {checkpoints[other]}{fusion}"
    sim = report.get("similarity", {})
    return {"fixture": report.get("dataset"), "n": report.get("n_clips", 0), "hf_checkpoint": checkpoints[hf],
            "control": control,
            "audio_embedding_cosine_per_clip": list(report.get("audio_cosine", {}).get("per_item", {}).values()),
            "text_embedding_cosine_per_clip": _per_clip_text(report.get("text_cosine", {}).get("per_item", {})),
            "similarity_matrix_correlation": sim.get("pearson"),
            "similarity_matrix_max_abs_diff": sim.get("max_abs_diff"), "verdict": report["verdict"]}


def parity_envelope(parity: dict, identity: dict | None, *, gate_identity: bool = False) -> dict:
    """The reference's envelope around a :func:`parity_report` and an identity report.

    ``cross_pipeline_comparable`` comes from identity; ``failures`` holds the metric-parity
    failures, and the identity verdict only when ``gate_identity`` (or the identity report's
    own ``gated``, the stage's ``gate_identity``) asks for it and it is not "same checkpoint".
    """
    block = reference_identity(identity)
    failures = list(parity["failures"])
    if (gate_identity or (identity or {}).get("gated")) and block["verdict"] != SAME:
        failures.append(f"checkpoint identity (gated): {block['verdict']}")
    return {"metric_parity": {k: v for k, v in parity.items() if k != "failures"},
            "checkpoint_identity": block, "metric_parity_passed": bool(parity["passed"]),
            "cross_pipeline_comparable": bool((identity or {}).get("cross_pipeline_comparable", False)),
            "failures": failures}


def _read_identity(path: str | Path) -> dict:
    report = read_json(path)
    if not isinstance(report, dict) or not isinstance(report.get("verdict"), str):
        raise InputError(f"{path}: not an identity report (expected a JSON object with a \"verdict\", as "
                         "`clapcap retrieval identity` and the checkpoint_identity stage write)")
    return report


def run_parity_report(dump_paths: Sequence[str | Path], out_path: str | Path, *,
                      identity_path: str | Path | None = None, tolerance: float = DEFAULT_TOLERANCE,
                      gate_identity: bool = False) -> dict:
    """Build the reference-format parity report (module docstring) and write it atomically.

    Returns:
        The report; it passes when ``report["failures"]`` is empty.

    Raises:
        FileNotFoundError / DumpError: for a missing or invalid dump.
        InputError: when ``identity_path`` is not an identity report.
    """
    identity = _read_identity(identity_path) if identity_path is not None else None
    report = parity_envelope(parity_report(_load_dumps(dump_paths), tolerance=tolerance), identity,
                             gate_identity=gate_identity)
    write_json(out_path, report)
    logger.info("parity report: metric parity %s, identity %r, %d failure(s) -> %s",
                "passed" if report["metric_parity_passed"] else "FAILED",
                report["checkpoint_identity"]["verdict"], len(report["failures"]), out_path)
    return report
