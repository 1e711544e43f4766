"""The shared part of the pretrained encoders: check and crop the waveforms, compute each
clip's frame embeddings (the backend's part), mean-pool them.

Every backend returns, per clip, only the frames that cover real audio (no batch padding,
no padding up to a model's fixed window), so a clip's embedding does not depend on the
other clips in its batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from clapcap.data.audio import crop_wave
from clapcap.encoders.base import PretrainedEncoderConfig, check_waves


class FramePooledEncoder:
    """Base of the pretrained backends (implements :class:`clapcap.encoders.base.AudioEncoder`).

    Subclasses set ``sample_rate``, ``dim`` and ``pipeline`` and implement
    :meth:`_frames_batch`.
    """

    sample_rate: int = 16000
    dim: int = 0
    pipeline: str = ""

    def __init__(self, cfg: PretrainedEncoderConfig) -> None:
        self.cfg = cfg
        self.max_samples = int(round(cfg.max_seconds * self.sample_rate))

    def _frames_batch(self, waves: list[np.ndarray]) -> list[np.ndarray]:
        """Frame embeddings (T_i, dim) float32 of each (checked, cropped) waveform."""
        raise NotImplementedError

    def embed_audio_frames(self, waves: Sequence[np.ndarray]) -> tuple[np.ndarray, list[np.ndarray]]:
        """Frame embeddings and their mean per clip.

        Returns:
            ``(pooled (N, dim) float32, [frames (T_i, dim) float32 per clip])``.

        Raises:
            ValueError: naming the first waveform that is not a finite non-empty 1-D array.
        """
        import torch

        clips = [crop_wave(w, self.max_samples, self.cfg.crop) for w in check_waves(waves)]
        frames: list[np.ndarray] = []
        with torch.inference_mode():
            for start in range(0, len(clips), self.cfg.batch_size):
                frames.extend(self._frames_batch(clips[start:start + self.cfg.batch_size]))
        assert all(f.ndim == 2 and f.shape[0] >= 1 and f.shape[1] == self.dim for f in frames)
        pooled = np.stack([f.mean(axis=0, dtype=np.float64) for f in frames]).astype(np.float32)
        return pooled, [f.astype(np.float32) for f in frames]

    def embed_audio(self, waves: Sequence[np.ndarray]) -> np.ndarray:
        """(N, dim) float32 clip embeddings: the mean of each clip's real-audio frames (not normalised)."""
        return self.embed_audio_frames(waves)[0]

    def describe(self) -> dict[str, Any]:
        """Pipeline, weights and preprocessing, for a dump's meta (no machine path)."""
        return {"pipeline": self.pipeline, "embedding_dim": self.dim, "pretrained_encoder": self.cfg.identity(),
                "preprocessing": {"sample_rate": self.sample_rate, "max_samples": self.max_samples,
                                  "crop": self.cfg.crop}}
