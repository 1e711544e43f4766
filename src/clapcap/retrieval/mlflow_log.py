"""MLflow logging of retrieval results, only through :mod:`clapcap.tracking`.

JSON files keep readable names (``r@1``, ``map@10``); MLflow gets safe keys
(``t2a/R1``, ``t2a/mAP10``, ``t2a/MedR``, ``t2a/R1_ci_low``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

logger = logging.getLogger(__name__)

_NAMES = {"map": "mAP", "mrr": "MRR", "median_rank": "MedR"}


def mlflow_metric_name(name: str) -> str:
    """``r@10`` -> ``R10``, ``map@10`` -> ``mAP10``, ``map`` -> ``mAP``, ``mrr`` -> ``MRR``."""
    if name in _NAMES:
        return _NAMES[name]
    head, _, cut = name.partition("@")
    if head == "r" and cut:
        return f"R{cut}"
    if head == "map" and cut:
        return f"mAP{cut}"
    return name.replace("@", "")


def mlflow_metrics(result: Mapping[str, Any], prefix: str = "") -> dict[str, float]:
    """Flatten an ``evaluate`` result into MLflow-safe keys (numbers only).

    Returns:
        e.g. ``{"t2a/R1": 0.2, "t2a/R1_ci_low": 0.18, ..., "n_clips": 957.0}``.
    """
    pre = f"{prefix}/" if prefix else ""
    out: dict[str, float] = {}
    for direction in ("t2a", "a2t"):
        for name, value in result.get(direction, {}).items():
            if name == "ci":
                for metric, bounds in value.items():
                    key = f"{pre}{direction}/{mlflow_metric_name(metric)}"
                    out[f"{key}_ci_low"] = float(bounds["low"])
                    out[f"{key}_ci_high"] = float(bounds["high"])
            else:
                out[f"{pre}{direction}/{mlflow_metric_name(name)}"] = float(value)
    for name in ("n_clips", "n_captions"):
        if name in result:
            out[f"{pre}{name}"] = float(result[name])
    return out


def log_evaluation(result: Mapping[str, Any], *, prefix: str = "") -> dict[str, float]:
    """Log an ``evaluate`` result to the active MLflow run via :func:`clapcap.tracking.log_metrics`.

    Returns:
        The logged ``{key: value}``.
    """
    from clapcap import tracking

    metrics = mlflow_metrics(result, prefix)
    tracking.log_metrics(metrics)
    logger.debug("logged %d retrieval metrics to MLflow", len(metrics))
    return metrics
