"""Evaluation of a captioner on a split: generate, then score with aac-metrics.

Scoring is :func:`clapcap.evaluation.captioning_metrics.score_captions` (aac-metrics
itself); this module only produces predictions and assembles the record.
"""

from __future__ import annotations

import logging
import statistics
import time
from typing import Any

from clapcap.captioning.config import DecodingConfig
from clapcap.captioning.data import CaptionSplit, embeddings_by_clip, trivial_baseline
from clapcap.captioning.generation import generate_captions
from clapcap.captioning.model import load_captioner
from clapcap.compute import Compute, or_default
from clapcap.evaluation.captioning_metrics import score_captions

logger = logging.getLogger(__name__)


def predict_split(model: Any, split: CaptionSplit, decoding: DecodingConfig, *,
                  batch_size: int = 64) -> dict[str, str]:
    """Caption every clip of ``split``. Returns ``{clip_id: caption}``."""
    captions = generate_captions(model, split.embeds, decoding, batch_size=batch_size)
    return dict(zip(split.clip_ids, captions, strict=True))


def score_predictions(predictions: dict[str, str], references: dict[str, list[str]], *,
                      metrics: list[str] | None = None) -> dict[str, Any]:
    """Score predictions with aac-metrics (``score_captions``).

    Returns:
        ``score_captions``' result: ``corpus``, ``per_clip``, ``unavailable``, ``primary``.

    Raises:
        ValueError: on id mismatches or empty captions (from ``score_captions``).
    """

    return score_captions(predictions, references, metrics=metrics)


def guard_empty(predictions: dict[str, str], filler: str = "sound") -> dict[str, str]:
    """Replace empty generated captions by ``filler`` so scoring does not reject them.

    A model that emits EOS first produces an empty string; scoring rejects empty
    captions, so the evaluation counts them as a (poor) one-word caption and logs how many.
    """
    empty = [cid for cid, cap in predictions.items() if not cap.strip()]
    if empty:
        logger.warning("%d empty caption(s) replaced by %r, e.g. %s", len(empty), filler, empty[:3])
    return {cid: (cap if cap.strip() else filler) for cid, cap in predictions.items()}


def evaluate_split(model: Any, split: CaptionSplit, decoding: DecodingConfig, *,
                   metrics: list[str] | None = None) -> dict[str, Any]:
    """Generate and score captions for ``split``.

    Returns:
        ``{"split", "predictions", "scores": {"corpus", "unavailable", "primary"},
        "per_clip", "n_empty", "seconds"}``.
    """
    start = time.perf_counter()
    raw = predict_split(model, split, decoding)
    preds = guard_empty(raw)
    scores = score_predictions(preds, split.references(), metrics=metrics)
    return {"split": split.name, "predictions": preds,
            "scores": {k: scores[k] for k in ("corpus", "unavailable", "primary") if k in scores},
            "per_clip": scores.get("per_clip", {}),
            "n_empty": sum(1 for c in raw.values() if not c.strip()),
            "seconds": round(time.perf_counter() - start, 3)}


def evaluate_trivial_baseline(train: CaptionSplit, split: CaptionSplit, *,
                              metrics: list[str] | None = None) -> dict[str, Any]:
    """Score the most-common-training-caption baseline on ``split`` (same record layout)."""
    preds = trivial_baseline(train, split.clip_ids)
    scores = score_predictions(preds, split.references(), metrics=metrics)
    return {"split": split.name, "predictions": preds,
            "scores": {k: scores[k] for k in ("corpus", "unavailable", "primary") if k in scores},
            "per_clip": scores.get("per_clip", {}), "n_empty": 0, "seconds": 0.0}


def caption_dump(checkpoint: str, dump: str, decoding: DecodingConfig | None = None, *,
                 embedding_key: str = "audio_embeds", batch_size: int = 64,
                 compute: Compute | None = None) -> dict[str, str]:
    """Caption every clip of an embedding dump file with a saved captioner on ``compute.device`` (fp32).

    Returns:
        ``{clip_id: caption}``.

    Raises:
        FileNotFoundError / DumpError: on a missing checkpoint or a bad dump.
    """
    import numpy as np


    compute = or_default(compute)  # resolved first: a missing CUDA fails before any work
    by_clip = embeddings_by_clip(dump, embedding_key=embedding_key)
    model = load_captioner(checkpoint, device=compute.device)
    ids = list(by_clip)
    caps = generate_captions(model, np.stack([by_clip[c] for c in ids]), decoding, batch_size=batch_size)
    return dict(zip(ids, caps, strict=True))


def seed_stats(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Mean and sample std (0 for one seed) over the records' test corpus metrics:
    ``{metric: {"mean", "std", "values"}}``."""
    metrics: dict[str, Any] = {}
    for m in records[0]["test"]["corpus"]:
        values = [r["test"]["corpus"][m] for r in records]
        metrics[m] = {"mean": statistics.fmean(values),
                      "std": statistics.stdev(values) if len(values) > 1 else 0.0, "values": values}
    return metrics
