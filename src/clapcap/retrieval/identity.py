"""Checkpoint identity: do two embedding dumps come from the same weights?

Two pipelines (for example laion_clap and transformers) that embed the same clips and
captions with the *same* checkpoint agree to a cosine of about 1.0 per clip and per
caption; different checkpoints do not, and then no amount of preprocessing alignment can
make their retrieval numbers match. The report (:func:`checkpoint_identity`) gives

- per-clip audio cosine and per-caption text cosine (min / mean / median / per item),
- Pearson correlation and maximum absolute difference of the two caption x clip cosine
  similarity matrices (``pearson`` is null, with ``pearson_reason``, when a matrix is
  constant and the correlation is undefined),
- ``verdict``: ``"same checkpoint"`` or ``"different checkpoints: cross-pipeline numeric
  parity is not attainable"``, and ``cross_pipeline_comparable`` (bool).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np

from clapcap.data.dump import DumpError, EmbeddingDump, load_dump, normalize
from clapcap.utils.io import write_json

logger = logging.getLogger(__name__)

SAME = "same checkpoint"
DIFFERENT = "different checkpoints: cross-pipeline numeric parity is not attainable"


def _align(a: EmbeddingDump, b: EmbeddingDump) -> tuple[np.ndarray, np.ndarray]:
    """Row order of ``b`` matching ``a``'s clips and captions. Raises DumpError on a mismatch."""
    pos = {cid: i for i, cid in enumerate(b.clip_ids)}
    missing = [c for c in a.clip_ids if c not in pos]
    if missing or len(a.clip_ids) != len(b.clip_ids):
        raise DumpError(f"dumps embed different clips: {len(a.clip_ids)} vs {len(b.clip_ids)}, "
                        f"e.g. {missing[:3]} only in A")
    clip_order = np.array([pos[c] for c in a.clip_ids])
    key_b: dict[tuple[str, str], list[int]] = {}
    for j, (ci, cap) in enumerate(zip(b.caption_clip_index, b.captions, strict=True)):
        key_b.setdefault((b.clip_ids[int(ci)], cap), []).append(j)
    cap_order = []
    for i, (ci, cap) in enumerate(zip(a.caption_clip_index, a.captions, strict=True)):
        rows = key_b.get((a.clip_ids[int(ci)], cap))
        if not rows:
            raise DumpError(f"caption {i} of A ({cap!r} for clip {a.clip_ids[int(ci)]!r}) is not in B")
        cap_order.append(rows.pop(0))
    if len(cap_order) != b.n_captions:
        raise DumpError(f"dumps embed different captions: {a.n_captions} vs {b.n_captions}")
    return clip_order, np.array(cap_order)


def _summary(values: np.ndarray, ids: list[str]) -> dict[str, Any]:
    return {"min": float(values.min()), "mean": float(values.mean()), "median": float(np.median(values)),
            "per_item": {i: float(v) for i, v in zip(ids, values, strict=True)}}


def _pearson(x: np.ndarray, y: np.ndarray) -> dict[str, Any]:
    """``{"pearson": r}``, or ``{"pearson": None, "pearson_reason": why}`` where r is undefined.

    A constant input has no correlation; JSON has no NaN, so it is written as null.
    """
    constant = [name for name, v in (("A", x), ("B", y)) if not v.std() > 0]
    if constant:
        return {"pearson": None,
                "pearson_reason": f"undefined: constant similarities in {' and '.join(constant)}"}
    return {"pearson": float(np.corrcoef(x, y)[0, 1])}


def checkpoint_identity(a: EmbeddingDump, b: EmbeddingDump, *, cos_threshold: float = 0.99) -> dict[str, Any]:
    """Compare two dumps of the same clips and captions.

    The verdict is "same checkpoint" when every clip and caption cosine is at least
    ``cos_threshold``; embeddings of different widths are different checkpoints.

    Returns:
        The report dict (see module docstring).

    Raises:
        DumpError: when the dumps do not embed the same clips and captions.
    """
    if not 0 < cos_threshold <= 1:
        raise ValueError(f"cos_threshold must be in (0, 1], found {cos_threshold}")
    clip_order, cap_order = _align(a, b)
    aa, at = normalize(a.audio_embeds), normalize(a.text_embeds)
    ba, bt = normalize(b.audio_embeds)[clip_order], normalize(b.text_embeds)[cap_order]
    sim_a, sim_b = at @ aa.T, bt @ ba.T  # (n_captions, n_clips) each
    report: dict[str, Any] = {"n_clips": a.n_clips, "n_captions": a.n_captions,
                              "dims": [int(aa.shape[1]), int(ba.shape[1])], "cos_threshold": cos_threshold}
    same = aa.shape[1] == ba.shape[1]
    if same:
        audio_cos, text_cos = (aa * ba).sum(1), (at * bt).sum(1)
        cap_ids = [f"{a.clip_ids[int(c)]}#{i}" for i, c in enumerate(a.caption_clip_index)]
        report["audio_cosine"] = _summary(audio_cos, a.clip_ids)
        report["text_cosine"] = _summary(text_cos, cap_ids)
        same = bool(audio_cos.min() >= cos_threshold and text_cos.min() >= cos_threshold)
    flat_a, flat_b = sim_a.ravel(), sim_b.ravel()
    report["similarity"] = {**_pearson(flat_a, flat_b), "max_abs_diff": float(np.abs(flat_a - flat_b).max())}
    report["verdict"] = SAME if same else DIFFERENT
    report["cross_pipeline_comparable"] = same
    report["pipelines"] = [a.meta.get("pipeline"), b.meta.get("pipeline")]
    report["checkpoints"] = [a.meta.get("checkpoint"), b.meta.get("checkpoint")]
    return report


def identity_report(a_path: str | Path, b_path: str | Path, out_path: str | Path | None = None,
                    *, cos_threshold: float = 0.99) -> dict[str, Any]:
    """Load two dumps, compare them and (optionally) write the JSON report atomically.

    Returns:
        The report, with ``a`` and ``b`` set to the dump paths.

    Raises:
        FileNotFoundError / DumpError: on a missing or malformed dump, or dumps of different data.
    """
    report = {"a": str(a_path), "b": str(b_path),
              **checkpoint_identity(load_dump(a_path), load_dump(b_path), cos_threshold=cos_threshold)}
    if out_path is not None:
        write_json(out_path, report)
    logger.info("identity %s vs %s: %s", a_path, b_path, report["verdict"])
    return report
