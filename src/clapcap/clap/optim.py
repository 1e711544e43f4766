"""The optimiser block every CLAP family's params nest as ``optim`` (``train_clap.optim``,
``robust_train.optim``, ``robust_control.optim``), and the optimiser and schedule built from it.

The schedule is the one :func:`clapcap.clap.train.fit` has always run: AdamW at ``lr`` with
``weight_decay`` for every parameter group (a group may set its own ``lr``), a linear warm-up
over ``warmup_steps`` optimizer steps from ``lr / warmup_steps`` to ``lr``, then a half cosine
to 0 at the last step of the last epoch. ``seed`` seeds the initialisation and the batch order
(epoch ``e`` draws its batches with ``seed * 1000 + e``).

open_clip keeps the same pieces apart from its tasks (``open_clip_train/scheduler.py``); here
they are small enough for one module.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from clapcap.config import ConfigError


@dataclass
class OptimConfig:
    """One CLAP training's optimiser settings (module docstring)."""

    epochs: int = 20
    batch_size: int = 32
    lr: float = 1e-3
    weight_decay: float = 0.01
    warmup_steps: int = 50
    seed: int = 0

    def __post_init__(self) -> None:
        # Each key checked on its own, so the message names the one to fix.
        limits = {"epochs": (self.epochs, 1, ">= 1"), "batch_size": (self.batch_size, 2, ">= 2 (a contrastive batch "
                  "needs negatives)"), "weight_decay": (self.weight_decay, 0, ">= 0"),
                  "warmup_steps": (self.warmup_steps, 0, ">= 0")}
        for key, (value, least, expected) in limits.items():
            if value < least:
                raise ConfigError(f"optim.{key}: expected {expected}, found {value}")
        if not self.lr > 0:
            raise ConfigError(f"optim.lr: expected > 0, found {self.lr}")


def lr_factor(warmup: int, total: int) -> Callable[[int], float]:
    """The schedule as ``LambdaLR``'s factor of each group's own ``lr`` at optimizer step ``step``
    (0-based): ``(step + 1) / warmup`` during the warm-up, then ``(1 + cos(pi * t)) / 2`` with
    ``t = (step - warmup) / max(1, total - warmup)`` capped at 1."""

    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        # numpy's cos, not math's: numpy may use its own vectorised kernel, and the trained
        # weights of every committed result were made with it.
        return 0.5 * (1 + np.cos(np.pi * min(1.0, (step - warmup) / max(1, total - warmup))))

    return factor


def make_optimizer(groups: Iterable[Any] | list[Mapping[str, Any]], cfg: OptimConfig,
                   total_steps: int) -> tuple[Any, Any]:
    """AdamW over ``groups`` (parameters or parameter groups) with ``cfg``'s ``lr`` and
    ``weight_decay`` as every group's defaults, and the warm-up-then-cosine schedule over
    ``total_steps`` optimizer steps.

    Returns:
        ``(optimizer, scheduler)``; step the scheduler once per optimizer step.
    """
    import torch

    from clapcap.compute import adamw

    opt = adamw(groups, lr=cfg.lr, weight_decay=cfg.weight_decay)
    return opt, torch.optim.lr_scheduler.LambdaLR(opt, lr_factor(cfg.warmup_steps, total_steps))
