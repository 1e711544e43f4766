"""Training and evaluation data for RobustCLAP: cached features plus aligned paraphrase views.

Views come from the ``robust_paraphrase`` manifest (``paraphrases_v1``/``paraphrases_v2``
aligned with ``captions``; ``None`` where the LLM failed). A batch holds, per clip, one
caption chosen at random and the views *of that same caption*, with a mask marking the
views that exist.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import pandas as pd

from clapcap.clap.features import FeatureCache
from clapcap.clap.preprocessing import tokenize

logger = logging.getLogger(__name__)

VIEW_COLUMNS = {"view1": "paraphrases_v1", "view2": "paraphrases_v2"}


def valid_text(value: Any) -> bool:
    """True for a non-empty string (a failed paraphrase is None or empty)."""
    return isinstance(value, str) and bool(value.strip())


def attach_views(cache: FeatureCache, manifest: pd.DataFrame) -> FeatureCache:
    """Add the manifest's view columns to ``cache.captions`` (aligned per clip and caption).

    Returns:
        ``cache`` (modified in place) with ``captions[view1|view2]`` lists; invalid views are None.

    Raises:
        ValueError: naming the clip when it is missing from the manifest or its views are
            not aligned with its captions.
    """
    rows = manifest.set_index("clip_id")
    for view, col in VIEW_COLUMNS.items():
        out = []
        for cid, caps in zip(cache.clip_ids, cache.captions["captions"], strict=True):
            if cid not in rows.index:
                raise ValueError(f"clip {cid} is in the feature cache but not in the manifest")
            paras = rows.at[cid, col] if col in rows.columns else None
            if not isinstance(paras, list) or len(paras) != len(caps):
                raise ValueError(f"clip {cid}: {col} must be a list aligned with its {len(caps)} captions, "
                                 f"found {paras!r}")
            out.append([p if valid_text(p) else None for p in paras])
        cache.captions[view] = out
    return cache


def subset(cache: FeatureCache, fraction: float, seed: int) -> np.ndarray:
    """Sorted indices of a seeded ``fraction`` of the cached clips (at least 2).

    Raises:
        ValueError: when ``fraction`` is not in (0, 1].
    """
    if not 0 < fraction <= 1:
        raise ValueError(f"data_fraction: expected a value in (0, 1], found {fraction}")
    n = max(2, int(round(fraction * len(cache))))
    return np.sort(np.random.default_rng(seed).permutation(len(cache))[:n])


def _tokens(tokenizer: Any, texts: list[str | None]) -> tuple[dict[str, Any], Any]:
    import torch

    mask = torch.tensor([t is not None for t in texts])
    enc = tokenize(tokenizer, [t if t is not None else "" for t in texts])
    return enc, mask


def view_batches(cache: FeatureCache, tokenizer: Any, clips: np.ndarray, *, batch_size: int,
                 seed: int) -> list[dict[str, Any]]:
    """Shuffled batches of ``clips``: features, caption tokens and each view's tokens + mask.

    Returns:
        Dicts with ``input_features`` (B, C, T, F), ``is_longer`` (B, 1), ``caption``
        (tokenizer output) and ``views`` = ``{view: (tokens, mask (B,))}``.
    """
    import torch

    rng = np.random.default_rng(seed)
    order = clips[rng.permutation(len(clips))]
    batches = []
    for start in range(0, len(order), batch_size):
        idx = order[start:start + batch_size]
        if len(idx) < 2:  # a contrastive batch needs negatives
            continue
        pick = [int(rng.integers(len(cache.captions["captions"][i]))) for i in idx]
        caps = [cache.captions["captions"][i][j] for i, j in zip(idx, pick, strict=True)]
        views = {v: _tokens(tokenizer, [cache.captions[v][i][j] for i, j in zip(idx, pick, strict=True)])
                 for v in VIEW_COLUMNS if v in cache.captions}
        batches.append({"input_features": torch.from_numpy(cache.features[idx].astype(np.float32)),
                        "is_longer": torch.from_numpy(cache.is_longer[idx]),
                        "caption": tokenize(tokenizer, caps), "views": views})
    return batches


def text_embeddings(model: Any, tokenizer: Any, texts: list[str], *, batch_size: int = 64) -> np.ndarray:
    """(N, D) float32 text embeddings of ``texts`` (eval mode, no gradient, on the model's device)."""
    import torch

    device = next(model.parameters()).device  # tokens follow the model (hand-written: one line)
    model.eval()
    out = []
    with torch.inference_mode():
        for s in range(0, len(texts), batch_size):
            tokens = {k: v.to(device) for k, v in tokenize(tokenizer, texts[s:s + batch_size]).items()}
            out.append(model.get_text_features(**tokens).float().cpu().numpy())
    return np.concatenate(out) if out else np.zeros((0, 1), dtype=np.float32)
