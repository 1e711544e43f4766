"""Scoped seeding of NumPy's global RNG (third-party feature extractors draw from it)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np


@contextmanager
def numpy_seed(seed: int) -> Iterator[None]:
    """Seed NumPy's global RNG inside the block and restore its previous state after."""
    state = np.random.get_state()
    np.random.seed(seed)
    try:
        yield
    finally:
        np.random.set_state(state)
