"""Fixtures of the retrieval-metric tests: small random embedding dumps."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from clapcap.data.dump import EmbeddingDump, save_dump


def random_dump(n_clips: int = 40, captions_per_clip: int | list[int] = 5, dim: int = 8,
                noise: float = 1.5, seed: int = 0) -> EmbeddingDump:
    """Captions are noisy copies of their clip's embedding: retrieval above chance, not perfect."""
    rng = np.random.default_rng(seed)
    counts = ([captions_per_clip] * n_clips if isinstance(captions_per_clip, int)
              else list(captions_per_clip))
    audio = rng.normal(size=(n_clips, dim)).astype(np.float32)
    idx = np.repeat(np.arange(n_clips), counts).astype(np.int64)
    text = (audio[idx] + noise * rng.normal(size=(idx.size, dim))).astype(np.float32)
    return EmbeddingDump(audio_embeds=audio, text_embeds=text, caption_clip_index=idx,
                         clip_ids=[f"clip{i:04d}" for i in range(n_clips)],
                         captions=[f"caption {j}" for j in range(idx.size)],
                         meta={"checkpoint": "random", "seed": seed})


@pytest.fixture
def make_dump() -> Callable[..., EmbeddingDump]:
    """Factory of random dumps (see :func:`random_dump`)."""
    return random_dump


@pytest.fixture
def dump_file(tmp_path) -> Callable[..., Path]:
    """Factory writing a random dump to ``tmp_path/<name>``; returns the path."""

    def _write(name: str = "dump.npz", **kwargs) -> Path:
        return save_dump(random_dump(**kwargs), tmp_path / name)

    return _write
