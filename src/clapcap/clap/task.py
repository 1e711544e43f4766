"""The pieces a CLAP family's training is made of, and the task object that holds them.

A :class:`ClapTask` is what differs between the CLAP families (the synthetic CLAP with its
scratch or MiniLM text tower, :mod:`clapcap.clap.tasks`; RobustCLAP, :mod:`clapcap.robust.train`):
the model, its batches, its loss, its parameter groups, how much of its text tower is frozen,
and its validation. :func:`clapcap.clap.train.train` runs any task with an
:class:`~clapcap.clap.optim.OptimConfig`. The shape follows open_clip's task objects
(``open_clip/task/``): the loop knows no family.

Shared pieces:

- :func:`clap_batches` - shuffled batches from a :class:`~clapcap.clap.features.FeatureCache`
  (one random caption per clip, seeded per epoch so a resumed run sees the same batches);
- :func:`symmetric_contrastive_loss` - the default ``loss(model, batch) -> Tensor``;
- :func:`embed_cache` / :func:`t2a_recall` - validation embeddings and text-to-audio R@k.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from clapcap.clap.features import FeatureCache
from clapcap.clap.preprocessing import tokenize
from clapcap.compute import full_precision
from clapcap.retrieval.ranking import single_positive_ranks

Batch = dict[str, Any]
LossFn = Callable[[Any, Batch], Any]


def clap_batches(cache: FeatureCache, tokenizer: Any, *, batch_size: int, seed: int,
                 column: str = "captions") -> list[Batch]:
    """Shuffled batches of distinct clips with one random caption each (deterministic per seed)."""
    import torch

    rng = np.random.default_rng(seed)
    order = rng.permutation(len(cache))
    batches = []
    for start in range(0, len(order) - 1, batch_size):
        idx = order[start:start + batch_size]
        if len(idx) < 2:  # a contrastive batch needs negatives
            continue
        caps = [cache.captions[column][i][rng.integers(len(cache.captions[column][i]))] for i in idx]
        batches.append({"input_features": torch.from_numpy(cache.features[idx].astype(np.float32)),
                        "is_longer": torch.from_numpy(cache.is_longer[idx]),
                        "clip_index": torch.from_numpy(idx), **tokenize(tokenizer, caps)})
    return batches


def symmetric_contrastive_loss(model: Any, batch: Batch) -> Any:
    """CLIP loss: mean of audio->text and text->audio cross-entropy over the batch.

    The towers may run under bf16 autocast; the logits, temperature and cross-entropy are
    computed in fp32 outside it (:func:`~clapcap.compute.full_precision`): a bf16 logit has
    8 bits of mantissa, too coarse for a softmax over the batch at temperature up to 100.
    """
    import torch
    import torch.nn.functional as F

    audio = model.get_audio_features(input_features=batch["input_features"], is_longer=batch["is_longer"])
    text = model.get_text_features(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
    with full_precision(audio.device.type):
        audio, text = audio.float(), text.float()  # no-ops on fp32 tensors
        logits_t2a = model.logit_scale_t.exp().clamp(max=100) * text @ audio.T  # (B, B)
        logits_a2t = model.logit_scale_a.exp().clamp(max=100) * audio @ text.T
        labels = torch.arange(audio.shape[0], device=audio.device)
        return (F.cross_entropy(logits_t2a, labels) + F.cross_entropy(logits_a2t, labels)) / 2


def embed_cache(model: Any, tokenizer: Any, cache: FeatureCache, *, column: str = "captions",
                batch_size: int = 64) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Embed cached clips and all their captions on the model's device, in fp32 (no autocast).

    Returns:
        ``(audio, text, caption_clip_index)`` as NumPy arrays (on the CPU).
    """
    import torch

    caps = [(i, c) for i, cs in enumerate(cache.captions[column]) for c in cs]
    audio, text = [], []
    device = next(model.parameters()).device  # batches follow the model (hand-written: one line)
    model.eval()
    with torch.inference_mode():
        for s in range(0, len(cache), batch_size):
            feats = torch.from_numpy(cache.features[s:s + batch_size].astype(np.float32)).to(device)
            longer = torch.from_numpy(cache.is_longer[s:s + batch_size]).to(device)
            audio.append(model.get_audio_features(input_features=feats, is_longer=longer).float().cpu().numpy())
        for s in range(0, len(caps), batch_size):
            enc = tokenize(tokenizer, [c for _, c in caps[s:s + batch_size]])
            text.append(model.get_text_features(**{k: v.to(device) for k, v in enc.items()}).float().cpu().numpy())
    return np.concatenate(audio), np.concatenate(text), np.array([i for i, _ in caps], dtype=np.int64)


def t2a_recall(audio: np.ndarray, text: np.ndarray, clip_index: np.ndarray, ks: Iterable[int] = (1, 10)) -> dict:
    """Text-to-audio recall@k (ties pessimistic) plus chance levels ``chance@k = k / n_clips``."""
    a = audio / np.linalg.norm(audio, axis=1, keepdims=True)
    t = text / np.linalg.norm(text, axis=1, keepdims=True)
    sim = t @ a.T  # (n_captions, n_clips)
    rank = single_positive_ranks(sim, clip_index)  # 1-based; equal scores count against the positive
    out = {}
    for k in ks:
        out[f"t2a_r@{k}"] = float((rank <= k).mean())
        out[f"chance@{k}"] = min(1.0, k / a.shape[0])
    return out



@dataclass
class ClapTask:
    """One CLAP family's training, as :func:`clapcap.clap.train.train` runs it.

    Attributes:
        model: the ``ClapModel`` to train (its frozen parameters already have
            ``requires_grad=False``).
        tokenizer: its tokenizer.
        batches: ``batches(epoch)``, that epoch's batches (the same for the same epoch, so a
            resumed run sees what an uninterrupted one saw).
        evaluate: ``evaluate(model)``, the validation row (must not draw from torch's RNG).
        loss: ``loss(model, batch)``, a scalar tensor.
        param_groups: ``param_groups(model)``, AdamW parameter groups (for example the text
            tower at its own ``lr``); None = one group.
        text_trainable_layers: -1 when the whole text tower trains; k >= 0 when only its top
            k layers do, and the frozen bottom's output is computed once per text
            (:func:`~clapcap.clap.frozen_text.cached_frozen_bottom`).
        text_store: the folder of the frozen-bottom store; None = memory only.
        text_store_read_only: read the store, never write it.
        precompute: texts whose frozen-bottom output is computed before the first epoch,
            in length order (:func:`~clapcap.clap.frozen_text.precompute`).
    """

    model: Any
    tokenizer: Any
    batches: Callable[[int], list[Batch]]
    evaluate: Callable[[Any], dict[str, float]]
    loss: LossFn = symmetric_contrastive_loss
    param_groups: Callable[[Any], list[dict[str, Any]]] | None = None
    text_trainable_layers: int = -1
    text_store: Path | None = None
    text_store_read_only: bool = False
    precompute: list[str] = field(default_factory=list)

    def chance_loss(self) -> float:
        """The CLIP loss of uninformative embeddings over epoch 0's batches (mean of ln B)."""
        return float(np.mean([np.log(len(b["clip_index"])) for b in self.batches(0)]))
