"""The learned projection: an audio embedding to a prefix of pseudo-token embeddings."""

from __future__ import annotations

import torch
from torch import nn


class PrefixProjection(nn.Module):
    """MLP from a clip embedding (B, D_in) to a prefix (B, P, D_lm).

    ``depth`` 1 is a single linear map; depth 2 and 3 add hidden layers of width
    ``hidden`` with tanh (as in ClipCap's MLP) and dropout before every linear layer
    after the first.
    """

    def __init__(self, in_dim: int, lm_dim: int, prefix_length: int, *, depth: int = 2,
                 hidden: int = 0, dropout: float = 0.1) -> None:
        super().__init__()
        if in_dim < 1 or lm_dim < 1 or prefix_length < 1:
            raise ValueError(f"projection needs positive dims, found in_dim={in_dim}, "
                             f"lm_dim={lm_dim}, prefix_length={prefix_length}")
        if depth not in (1, 2, 3):
            raise ValueError(f"projection depth: expected 1, 2 or 3, found {depth}")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"projection dropout: expected 0 <= p < 1, found {dropout}")
        out_dim = lm_dim * prefix_length
        hidden = hidden or max(lm_dim, out_dim // 2)
        dims = [in_dim] + [hidden] * (depth - 1) + [out_dim]
        layers: list[nn.Module] = []
        for i in range(depth):
            if i > 0:
                layers += [nn.Tanh(), nn.Dropout(dropout)]
            layers.append(nn.Linear(dims[i], dims[i + 1]))
        self.input_dropout = nn.Dropout(dropout)
        self.mlp = nn.Sequential(*layers)
        self.prefix_length = prefix_length
        self.lm_dim = lm_dim

    def forward(self, embeds: torch.Tensor) -> torch.Tensor:
        """Map (B, D_in) to (B, P, D_lm)."""
        if embeds.ndim != 2:
            raise ValueError(f"expected audio embeddings of shape (B, D), found {tuple(embeds.shape)}")
        out = self.mlp(self.input_dropout(embeds))  # (B, P * D_lm)
        return out.view(embeds.shape[0], self.prefix_length, self.lm_dim)
