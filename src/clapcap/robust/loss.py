"""The RobustCLAP multi-view contrastive loss.

For a batch of B clips, each with one caption and its two paraphrase views::

    L = w_clip * CLIP(audio, caption)
      + g1 * (w_view1 * CLIP(audio, view1) + w_align * ALIGN(caption, view1))
      + g2 * (w_view2 * CLIP(audio, view2) + w_align * ALIGN(caption, view2))

``CLIP`` is the symmetric InfoNCE of CLAP (text->audio with the text logit scale,
audio->text with the audio logit scale, averaged). ``ALIGN`` pulls a paraphrase's text
embedding to its own caption's: ``contrastive`` (symmetric InfoNCE between the two text
sets, the other captions of the batch as negatives) or ``cosine`` (mean ``1 - cos``).
``g1``/``g2`` are the progressive schedule's factors (view 1 first, then view 2), see
:func:`schedule_factors`. A view missing for some rows (a failed paraphrase) is masked:
its terms use only the rows that have it. With ``g1 = g2 = 0`` or view weights and
``w_align`` at 0, ``L`` is exactly ``w_clip * CLIP(audio, caption)``.

Note: transformers' ``ClapModel(return_loss=True)`` averages two *text->audio* terms
(it transposes the audio logits back); :func:`clip_loss` uses both directions, as
LAION-CLAP's ``ClipLoss`` does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch
import torch.nn.functional as F

VIEWS = ("view1", "view2")


@dataclass
class MultiViewLossConfig:
    """Weights of the loss terms and the progressive schedule (epochs, may be fractional).

    A view's factor is 0 before ``<view>_start_epoch``, then rises linearly to 1 over
    ``ramp_epochs`` (a step when 0).
    """

    w_clip: float = 1.0
    w_view1: float = 1.0
    w_view2: float = 1.0
    w_align: float = 0.5
    align: Literal["contrastive", "cosine"] = "contrastive"
    view1_start_epoch: float = 0.0
    view2_start_epoch: float = 1.0
    ramp_epochs: float = 0.0


def schedule_factors(epoch: float, cfg: MultiViewLossConfig) -> dict[str, float]:
    """The schedule's factor of each view at (fractional) ``epoch``: ``{"view1": g1, "view2": g2}``."""
    out = {}
    for view, start in zip(VIEWS, (cfg.view1_start_epoch, cfg.view2_start_epoch), strict=True):
        if cfg.ramp_epochs > 0:
            out[view] = float(min(max((epoch - start) / cfg.ramp_epochs, 0.0), 1.0))
        else:
            out[view] = 1.0 if epoch >= start else 0.0
    return out


def info_nce(x: torch.Tensor, y: torch.Tensor, scale_xy: torch.Tensor,
             scale_yx: torch.Tensor | None = None) -> torch.Tensor:
    """Symmetric InfoNCE of paired rows of ``x`` and ``y`` (both (B, D), L2-normalised).

    Returns:
        ``(CE(scale_xy * x y^T) + CE(scale_yx * y x^T)) / 2`` with the diagonal as targets.
    """
    scale_yx = scale_xy if scale_yx is None else scale_yx
    target = torch.arange(x.shape[0], device=x.device)
    logits = x @ y.t()  # (B, B)
    return (F.cross_entropy(scale_xy * logits, target) + F.cross_entropy(scale_yx * logits.t(), target)) / 2


def clip_loss(audio: torch.Tensor, text: torch.Tensor, logit_scale_a: torch.Tensor,
              logit_scale_t: torch.Tensor) -> torch.Tensor:
    """CLAP's contrastive loss on paired (B, D) embeddings; the scales are log-scales.

    Returns:
        The mean of the text->audio (``exp(logit_scale_t)``) and audio->text
        (``exp(logit_scale_a)``) cross-entropies.
    """
    a, t = F.normalize(audio, dim=-1), F.normalize(text, dim=-1)
    # exp(scale) is capped at 100 as in CLIP and the synthetic CLAP training.
    return info_nce(t, a, logit_scale_t.exp().clamp(max=100.0), logit_scale_a.exp().clamp(max=100.0))


def _align(caption: torch.Tensor, view: torch.Tensor, scale: torch.Tensor, mode: str) -> torch.Tensor:
    c, v = F.normalize(caption, dim=-1), F.normalize(view, dim=-1)
    if mode == "cosine":
        return (1 - (c * v).sum(-1)).mean()
    return info_nce(v, c, scale)


def multiview_loss(
    audio: torch.Tensor,
    caption: torch.Tensor,
    views: dict[str, tuple[torch.Tensor, torch.Tensor | None]],
    logit_scale_a: torch.Tensor,
    logit_scale_t: torch.Tensor,
    cfg: MultiViewLossConfig,
    factors: dict[str, float],
) -> tuple[torch.Tensor, dict[str, float]]:
    """The multi-view loss of one batch.

    Args:
        audio, caption: (B, D) embeddings (normalised here).
        views: ``{"view1": (emb (B, D), mask (B,) bool or None), ...}``; absent views
            contribute nothing.
        factors: the schedule's factors (:func:`schedule_factors`).

    Returns:
        ``(loss, parts)``: the scalar loss and each unweighted term as a float
        (``clip``, ``view1``, ``align1``, ...) for logging.

    Raises:
        ValueError: on mismatched shapes or an unknown view name.
    """
    if audio.shape != caption.shape:
        raise ValueError(f"audio {tuple(audio.shape)} and caption {tuple(caption.shape)} embeddings differ in shape")
    base = clip_loss(audio, caption, logit_scale_a, logit_scale_t)
    loss = cfg.w_clip * base
    parts = {"clip": float(base.detach())}
    weights = {"view1": cfg.w_view1, "view2": cfg.w_view2}
    for view, (emb, mask) in views.items():
        if view not in weights:
            raise ValueError(f"unknown view {view!r}; expected one of {list(weights)}")
        if emb.shape != caption.shape:
            raise ValueError(f"{view} embeddings {tuple(emb.shape)} differ from caption {tuple(caption.shape)}")
        g = factors.get(view, 0.0)
        rows = mask if mask is not None else torch.ones(emb.shape[0], dtype=torch.bool, device=emb.device)
        if g == 0.0 or int(rows.sum()) < 2:  # a contrastive term needs a negative
            continue
        term = clip_loss(audio[rows], emb[rows], logit_scale_a, logit_scale_t)
        align = _align(caption[rows], emb[rows], logit_scale_t.exp().clamp(max=100.0), cfg.align)
        loss = loss + g * (weights[view] * term + cfg.w_align * align)
        parts[view], parts[f"align{view[-1]}"] = float(term.detach()), float(align.detach())
    return loss, parts
