"""Hand-built similarity matrices for retrieval metric tests."""

from __future__ import annotations

import numpy as np


def a2t_case(positions: list[int], n_captions: int) -> tuple[np.ndarray, np.ndarray]:
    """A 2-clip case: clip 0's positives sit at the given 1-based ranks of its column; clip 1
    owns the other captions. Returns ``(sim, caption_clip_index)``."""
    idx = np.ones(n_captions, dtype=np.int64)
    col = np.empty(n_captions)
    order = list(positions) + [r for r in range(1, n_captions + 1) if r not in positions]
    for cap, rank in enumerate(order):
        col[cap] = 1.0 - rank / 100.0
        idx[cap] = 0 if cap < len(positions) else 1
    return np.stack([col, np.zeros(n_captions)], axis=1), idx
