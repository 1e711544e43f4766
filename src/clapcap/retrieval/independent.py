"""Independent reference implementation of the retrieval metrics (for the parity gate).

Written separately from :mod:`clapcap.retrieval.metrics` and sharing none of its code: it
normalises with its own loop, scores one query at a time, *sorts* each query's candidates
with Python's ``sorted`` (the harness counts instead of sorting), walks the ranked list
and averages with ``math.fsum``. Only the definitions are shared (docs/retrieval_metrics.md):

- similarity: dot product of L2-normalised embeddings, computed in float64 and rounded to
  float32; equal float32 scores are ties;
- pessimistic ties: at equal score, non-positives are ranked before positives;
- r@k, AP over the full ranking, AP@10 divided by the number of positives, reciprocal rank
  of the best positive, median of the best positive's rank;
- the cut-off metrics of :mod:`clapcap.retrieval.ir_metrics` (:func:`independent_ir_per_query`):
  AP@k, nDCG@k (binary gains, 1/log2(position + 1), ideal DCG of min(|P|, k) positives),
  MRR@k, recall@k (positives within k over all positives), precision@k (over k).

It is deliberately slow (a Python sort per query): use it on evaluation-sized dumps.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

CUTOFF = 10


def _unit_rows(x: np.ndarray) -> list[np.ndarray]:
    """Each row divided by its Euclidean norm (a zero row stays zero), float64."""
    rows = []
    for row in np.asarray(x, dtype=np.float64):
        norm = math.sqrt(float(np.dot(row, row)))
        rows.append(row / norm if norm > 0 else np.zeros_like(row))
    return rows


def _scores(query: np.ndarray, candidates: np.ndarray) -> list[float]:
    """float32-rounded similarity of one query to every candidate, as Python floats."""
    return [float(v) for v in (candidates @ query).astype(np.float32)]


def _positions(scores: list[float], positives: set[int]) -> list[int]:
    """1-based positions of the positives in the ranked list (score desc, non-positives
    first on ties), increasing."""
    ranked = sorted(range(len(scores)), key=lambda j: (-scores[j], j in positives))
    return [position for position, cand in enumerate(ranked, start=1) if cand in positives]


def _rank_one(scores: list[float], positives: set[int], ks: Sequence[int]) -> dict[str, float]:
    """Metrics of one query: sort candidates (score desc, non-positives first on ties)."""
    precisions = [(position, hits / position)
                  for hits, position in enumerate(_positions(scores, positives), start=1)]
    best = precisions[0][0] if precisions else None
    assert best is not None
    out = {f"r@{k}": 1.0 if best <= k else 0.0 for k in ks}
    out["map"] = math.fsum(p for _, p in precisions) / len(positives)
    out[f"map@{CUTOFF}"] = math.fsum(p for pos, p in precisions if pos <= CUTOFF) / len(positives)
    out["mrr"] = 1.0 / best
    out["rank"] = float(best)
    return out


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    n = len(ordered)
    mid = n // 2
    return ordered[mid] if n % 2 else (ordered[mid - 1] + ordered[mid]) / 2.0


def _summarise(per_query: list[dict[str, float]]) -> dict[str, float]:
    names = [k for k in per_query[0] if k != "rank"]
    out = {name: math.fsum(q[name] for q in per_query) / len(per_query) for name in names}
    out["median_rank"] = _median([q["rank"] for q in per_query])
    return out


def _ir_one(scores: list[float], positives: set[int], ks: Sequence[int]) -> dict[str, float]:
    """Cut-off metrics of one query, walking its ranked list (see the module docstring)."""
    positions = _positions(scores, positives)
    out: dict[str, float] = {}
    for k in ks:
        kept = [p for p in positions if p <= k]
        out[f"r@{k}"] = 1.0 if kept else 0.0
        out[f"map@{k}"] = math.fsum(i / p for i, p in enumerate(kept, start=1)) / len(positives)
        dcg = math.fsum(1.0 / math.log2(p + 1) for p in kept)
        ideal = math.fsum(1.0 / math.log2(j + 1) for j in range(1, min(len(positives), k) + 1))
        out[f"ndcg@{k}"] = dcg / ideal
        out[f"mrr@{k}"] = 1.0 / kept[0] if kept else 0.0
        out[f"recall@{k}"] = len(kept) / len(positives)
        out[f"precision@{k}"] = len(kept) / k
    return out


def independent_ir_per_query(audio_embeds: np.ndarray, text_embeds: np.ndarray,
                             caption_clip_index: Sequence[int], *,
                             ks: Sequence[int]) -> dict[str, list[dict[str, float]]]:
    """Per-query cut-off metrics (``r@k``, ``map@k``, ``ndcg@k``, ``mrr@k``, ``recall@k``,
    ``precision@k``) computed query by query.

    Returns:
        ``{"t2a": [one dict per caption], "a2t": [one dict per clip]}``.

    Raises:
        ValueError: when a clip has no caption or a caption points outside the clips.
    """
    audio, text, owner, captions_of = _prepare(audio_embeds, text_embeds, caption_clip_index)
    audio_m, text_m = np.stack(audio), np.stack(text)
    t2a = [_ir_one(_scores(text[q], audio_m), {owner[q]}, ks) for q in range(len(text))]
    a2t = [_ir_one(_scores(audio[c], text_m), captions_of[c], ks) for c in range(len(audio))]
    return {"t2a": t2a, "a2t": a2t}


def _prepare(audio_embeds: np.ndarray, text_embeds: np.ndarray, caption_clip_index: Sequence[int]
             ) -> tuple[list[np.ndarray], list[np.ndarray], list[int], dict[int, set[int]]]:
    """Unit rows, each caption's clip and each clip's captions; checks the index."""
    audio, text = _unit_rows(audio_embeds), _unit_rows(text_embeds)
    owner = [int(c) for c in caption_clip_index]
    captions_of: dict[int, set[int]] = {c: set() for c in range(len(audio))}
    for cap, clip in enumerate(owner):
        if clip not in captions_of:
            raise ValueError(f"caption {cap} points to clip row {clip}, outside 0..{len(audio) - 1}")
        captions_of[clip].add(cap)
    for clip, caps in captions_of.items():
        if not caps:
            raise ValueError(f"clip row {clip} has no caption")
    return audio, text, owner, captions_of


def independent_metrics(audio_embeds: np.ndarray, text_embeds: np.ndarray,
                      caption_clip_index: Sequence[int], *,
                      ks: Sequence[int] = (1, 5, 10)) -> dict[str, dict[str, float]]:
    """t2a and a2t metrics computed query by query.

    Args:
        audio_embeds: (n_clips, D); text_embeds: (n_captions, D);
        caption_clip_index: (n_captions,) clip row of each caption.

    Returns:
        ``{"t2a": {...}, "a2t": {...}}`` with ``r@k``, ``map``, ``map@10``, ``mrr``,
        ``median_rank``.

    Raises:
        ValueError: when a clip has no caption or a caption points outside the clips.
    """
    audio, text, owner, captions_of = _prepare(audio_embeds, text_embeds, caption_clip_index)
    audio_m, text_m = np.stack(audio), np.stack(text)
    t2a = [_rank_one(_scores(text[q], audio_m), {owner[q]}, ks) for q in range(len(text))]
    a2t = [_rank_one(_scores(audio[c], text_m), captions_of[c], ks) for c in range(len(audio))]
    return {"t2a": _summarise(t2a), "a2t": _summarise(a2t)}
