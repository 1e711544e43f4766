"""Training the tower CLAP's heads (:mod:`clapcap.clap.towers`) on cached tower features.

Symmetric InfoNCE (CLIP's loss) over batches of ``batch_size`` captions drawn in a seeded
order each epoch; a batch keeps one caption per clip (a clip's second caption in the same
batch would be a false negative). AdamW at ``lr`` with ``weight_decay`` and a linear warm-up
over ``warmup_steps``. After each epoch the heads are scored on the val split (t2a R@10 with
:func:`clapcap.retrieval.metrics.retrieval_metrics`); the best epoch's heads are kept (ties:
the earlier epoch), and the val history is returned for the training curve. Everything runs
in float32 on the CPU in seconds, so no accelerator settings apply.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from clapcap.clap.towers import ProjectionHeads, TowerClapConfig
from clapcap.errors import ConfigError
from clapcap.retrieval.metrics import retrieval_metrics

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class HeadTrainParams:
    """Optimiser settings of the heads (module docstring)."""

    epochs: int = 30
    batch_size: int = 256
    lr: float = 1e-3
    weight_decay: float = 0.01
    warmup_steps: int = 50

    def __post_init__(self) -> None:
        if self.epochs < 1 or self.batch_size < 2 or self.lr <= 0 or self.weight_decay < 0 or self.warmup_steps < 0:
            raise ConfigError(f"tower CLAP training: epochs >= 1, batch_size >= 2, lr > 0, weight_decay >= 0, "
                              f"warmup_steps >= 0; found {self}")


@dataclass(frozen=True)
class PairedFeatures:
    """Tower features of one split: clip rows, caption rows and each caption's clip row."""

    audio: np.ndarray  # (N, audio_dim)
    text: np.ndarray  # (M, text_dim)
    caption_clip_index: np.ndarray  # (M,) int

    def __post_init__(self) -> None:
        idx = np.asarray(self.caption_clip_index)
        if len(self.text) != len(idx) or len(self.audio) == 0 or idx.min() < 0 or idx.max() >= len(self.audio):
            raise ValueError(f"paired features: {len(self.text)} captions, {len(idx)} clip indices, "
                             f"{len(self.audio)} clips")


def similarity(heads: ProjectionHeads, split: PairedFeatures) -> np.ndarray:
    """(M, N) caption-by-clip cosine similarities, float64."""
    with torch.no_grad():
        a = heads.embed_audio(torch.from_numpy(split.audio))
        t = heads.embed_text(torch.from_numpy(split.text))
    return (t @ a.T).numpy().astype(np.float64)


def val_r10(heads: ProjectionHeads, split: PairedFeatures) -> float:
    return float(retrieval_metrics(similarity(heads, split), split.caption_clip_index, ks=(10,))["t2a"]["r@10"])


BatchLoss = Callable[[ProjectionHeads, torch.Tensor, torch.Tensor, np.ndarray, float], torch.Tensor]


def clip_batch_loss(heads: ProjectionHeads, a: torch.Tensor, t: torch.Tensor, _caps: np.ndarray,
                    _epoch: float) -> torch.Tensor:
    """CLIP's symmetric InfoNCE of a batch's audio and caption embeddings (the default loss)."""
    logits = heads.logit_scale.exp().clamp(max=100) * t @ a.T
    target = torch.arange(len(t))
    return (F.cross_entropy(logits, target) + F.cross_entropy(logits.T, target)) / 2


def train_heads(cfg: TowerClapConfig, params: HeadTrainParams, train: PairedFeatures, val: PairedFeatures, *,
                seed: int, start: ProjectionHeads | None = None,
                batch_loss: BatchLoss = clip_batch_loss) -> tuple[ProjectionHeads, list[dict[str, float]]]:
    """Train heads from a seeded initialisation, or fine-tune a copy of ``start``; returns the
    best epoch's heads and the history (``epoch``, ``train_loss`` mean over the epoch's batches,
    ``val_t2a_r@10``). With ``start``, epoch 0 is ``start`` itself (``train_loss`` None) and can
    be the one kept. ``batch_loss(heads, audio, text, caption rows, fractional epoch)`` gives a
    batch's loss from its embeddings (default: :func:`clip_batch_loss`)."""
    torch.manual_seed(seed)
    heads = copy.deepcopy(start) if start is not None else ProjectionHeads(cfg)
    opt = torch.optim.AdamW(heads.parameters(), lr=params.lr, weight_decay=params.weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: min(1.0, (step + 1) / max(1, params.warmup_steps)))
    audio, text = torch.from_numpy(train.audio), torch.from_numpy(train.text)
    owner = np.asarray(train.caption_clip_index)
    rng = np.random.default_rng(seed)
    best, best_state, history = -1.0, None, []
    if start is not None:
        heads.eval()
        best, best_state = val_r10(heads, val), {k: v.clone() for k, v in heads.state_dict().items()}
        history.append({"epoch": 0, "train_loss": None, "val_t2a_r@10": round(best, 6)})
    for epoch in range(1, params.epochs + 1):
        heads.train()
        losses = []
        order = rng.permutation(len(owner))
        for i in range(0, len(order), params.batch_size):
            caps = order[i:i + params.batch_size]
            _, first = np.unique(owner[caps], return_index=True)  # one caption per clip per batch
            caps = caps[np.sort(first)]
            if len(caps) < 2:
                continue
            a = heads.embed_audio(audio[torch.from_numpy(owner[caps])])
            t = heads.embed_text(text[torch.from_numpy(caps)])
            loss = batch_loss(heads, a, t, caps, epoch - 1 + i / len(order))
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            losses.append(float(loss.detach()))
        heads.eval()
        r10 = val_r10(heads, val)
        history.append({"epoch": epoch, "train_loss": round(float(np.mean(losses)), 6), "val_t2a_r@10": round(r10, 6)})
        if r10 > best:
            best, best_state = r10, {k: v.clone() for k, v in heads.state_dict().items()}
    heads.load_state_dict(best_state)
    logger.info("tower CLAP seed %d: best val t2a R@10 %.4f at epoch %d", seed, best,
                max(history, key=lambda h: (h["val_t2a_r@10"], -h["epoch"]))["epoch"])
    return heads.eval(), history
