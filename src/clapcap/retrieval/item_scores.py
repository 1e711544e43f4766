"""Per-item test scores of a registered model, and the paired comparison of two of them.

A registered version carries the scores of each test item on the run that registered it
(artifact :data:`ITEM_SCORES_FILE`), so that two versions can be compared later, paired on
the same items, without re-running either model. The file is JSON::

    {"format": "clapcap.item_scores/1", "split": "test", "primary": "t2a/r@10",
     "dataset": "<content hash of the prepared dataset, or null>",
     "items": {"t2a": [query ids...], "a2t": [...]},
     "scores": {"t2a": {"r@10": [0.0, 1.0, ...], "mrr": [...], ...}, "a2t": {...}}}

A group (``t2a``, ``a2t``; a captioning family would use one group of clips) maps each
metric to one value per item, in the order of ``items[group]``. The corpus metric is the
metric table's aggregate of the items (:mod:`clapcap.retrieval.table`: the mean, or the
median for ``rank``), as in :mod:`clapcap.retrieval.bootstrap`,
whose paired bootstrap :func:`compare_item_scores` runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from clapcap.errors import InputError
from clapcap.retrieval.bootstrap import DEFAULT_RESAMPLES, paired_bootstrap
from clapcap.retrieval.metrics import per_query_metrics
from clapcap.retrieval.table import metric as table_metric

FORMAT = "clapcap.item_scores/1"
ITEM_SCORES_FILE = "evaluation/item_scores.json"
RETRIEVAL_PRIMARY = "t2a/r@10"


def retrieval_item_scores(audio: np.ndarray, text: np.ndarray, caption_clip_index: np.ndarray, *,
                          clip_ids: Sequence[str], split: str, dataset: str | None = None,
                          primary: str = RETRIEVAL_PRIMARY) -> dict[str, Any]:
    """Per-query retrieval scores of one model on one split (cosine similarity).

    Args:
        audio: (n_clips, D) clip embeddings; text: (n_captions, D) caption embeddings.
        caption_clip_index: (n_captions,) clip row of each caption.
        clip_ids: the clip ids, in row order (they name the items).
        dataset: the dataset's content hash (:func:`clapcap.data.prepare.dataset_fingerprint`):
            two versions scored on other data are not compared even when their ids agree.

    Returns:
        The item-scores dict (module docstring); t2a items are ``<clip_id>#<k>`` (k-th
        caption of the clip), a2t items the clip ids.
    """
    a = audio / np.linalg.norm(audio, axis=1, keepdims=True)
    t = text / np.linalg.norm(text, axis=1, keepdims=True)
    pq = per_query_metrics(t @ a.T, np.asarray(caption_clip_index))  # (n_captions, n_clips)
    seen: dict[int, int] = {}
    t2a_items = []
    for row in np.asarray(caption_clip_index).tolist():
        t2a_items.append(f"{clip_ids[row]}#{seen.get(row, 0)}")
        seen[row] = seen.get(row, 0) + 1
    return {"format": FORMAT, "split": split, "primary": primary, "dataset": dataset,
            "items": {"t2a": t2a_items, "a2t": [str(c) for c in clip_ids]},
            "scores": {d: {m: [float(x) for x in v] for m, v in pq[d].items()} for d in ("t2a", "a2t")}}


def check_item_scores(data: Any, origin: str) -> None:
    """Validate an item-scores dict read from ``origin``.

    Raises:
        InputError: naming ``origin`` and the first field that is missing or malformed.
    """
    if not isinstance(data, Mapping) or data.get("format") != FORMAT:
        found = data.get("format") if isinstance(data, Mapping) else type(data).__name__
        raise InputError(f"{origin}: expected item scores in format {FORMAT!r}, found {found!r}")
    for key in ("split", "primary", "items", "scores"):
        if key not in data:
            raise InputError(f"{origin}: item scores lack the key {key!r}")
    for group, metrics in data["scores"].items():
        items = data["items"].get(group)
        if not isinstance(items, list):
            raise InputError(f"{origin}: scores of group {group!r} but no items[{group!r}] list")
        for metric, values in metrics.items():
            if not isinstance(values, list) or len(values) != len(items):
                n = len(values) if isinstance(values, list) else type(values).__name__
                raise InputError(f"{origin}: scores[{group!r}][{metric!r}] has {n} values for {len(items)} items")


def _pairing_error(a: Mapping[str, Any], b: Mapping[str, Any], group: str, names: tuple[str, str]) -> str | None:
    if a["split"] != b["split"]:
        return f"{names[0]} was scored on split {a['split']!r}, {names[1]} on {b['split']!r}"
    if a.get("dataset") and b.get("dataset") and a["dataset"] != b["dataset"]:
        return (f"{names[0]} was scored on dataset {a['dataset'][:12]}..., "
                f"{names[1]} on {b['dataset'][:12]}... (another content)")
    ia, ib = a["items"].get(group, []), b["items"].get(group, [])
    if len(ia) != len(ib):
        return f"{names[0]} has {len(ia)} {group} items, {names[1]} has {len(ib)}"
    for row, (x, y) in enumerate(zip(ia, ib, strict=True), start=1):
        if x != y:
            return f"item {row} differs: {x!r} in {names[0]} vs {y!r} in {names[1]}"
    return None


def compare_item_scores(a: Mapping[str, Any], b: Mapping[str, Any], *, metric: str | None = None,
                        names: tuple[str, str] = ("A", "B"), n_resamples: int = DEFAULT_RESAMPLES,
                        seed: int = 0, confidence: float = 0.95) -> dict[str, Any]:
    """Paired bootstrap of metric(A) - metric(B) over the same items.

    Args:
        metric: ``group/metric`` (``t2a/r@10``); default: A's primary metric.

    Returns:
        ``{"metric", "split", "n_items", "a", "b", "difference", "ci": {"low", "high"},
        "p_value", "n_resamples", "seed", "confidence"}``; ``p_value`` is two-sided
        (:func:`clapcap.retrieval.bootstrap.paired_bootstrap`).

    Raises:
        InputError: on malformed scores, an unknown metric, or items that are not the same
            items in the same order (a paired test needs them).
    """
    check_item_scores(a, names[0])
    check_item_scores(b, names[1])
    metric = metric or a["primary"]
    group, _, name = metric.partition("/")
    for data, origin in ((a, names[0]), (b, names[1])):
        if name not in data["scores"].get(group, {}):
            known = sorted(f"{g}/{m}" for g, ms in data["scores"].items() for m in ms)
            raise InputError(f"{origin}: no per-item scores for {metric!r}; it has {', '.join(known)}")
    problem = _pairing_error(a, b, group, names)
    if problem:
        raise InputError(f"not the same test items, so no paired comparison: {problem}")
    pq_a = {group: {name: np.asarray(a["scores"][group][name], dtype=np.float64)}}
    pq_b = {group: {name: np.asarray(b["scores"][group][name], dtype=np.float64)}}
    row = paired_bootstrap(pq_a, pq_b, n_resamples=n_resamples, seed=seed, confidence=confidence)[group]
    row = row[table_metric(name, strict=False).name]
    return {"metric": metric, "split": a["split"], "n_items": len(a["items"][group]), **row,
            "n_resamples": n_resamples, "seed": seed, "confidence": confidence}


def compare_with_champion(candidate: Mapping[str, Any], champion: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`compare_item_scores` of a registration candidate against the current champion
    (primary metric, default bootstrap): the ``compare`` of every evidence-based promotion."""
    return compare_item_scores(candidate, champion, names=("candidate", "champion"))
