"""A handcrafted audio encoder: log-mel statistics (no learned weights).

For a clip resampled to 16 kHz, the embedding (145-d) concatenates
- the mean over time of the 64-band log-mel spectrogram (n_fft 1024, hop 320),
- its standard deviation over time,
- the log-energy envelope pooled to 16 bins, minus its maximum (loudness shape over time),
- the clip duration in seconds.

Each block is scaled by fixed constants (no statistics of any split), so that values are of
order one for the projection MLP: log-mel mean ``(x + 6) / 4``, std ``x / 2``, envelope
``x / 4``, duration ``x / 10``.

It is the classic feature baseline of audio captioning and a different kind of encoder
from CLAP (not contrastively trained, not text-aligned), for the encoder ablation.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from clapcap.encoders.base import EncoderConfig, check_waves

N_MELS, N_FFT, HOP, ENV_BINS = 64, 1024, 320, 16


class LogMelStatsEncoder:
    """Audio-only encoder returning (N, 145) log-mel statistics."""

    pipeline = "logmel_stats"
    sample_rate = 16000

    def __init__(self, batch_size: int = 16):
        import torchaudio

        self.batch_size = batch_size
        self._mel = torchaudio.transforms.MelSpectrogram(self.sample_rate, n_fft=N_FFT, hop_length=HOP,
                                                         n_mels=N_MELS)

    @classmethod
    def from_config(cls, cfg: EncoderConfig) -> LogMelStatsEncoder:
        return cls(batch_size=cfg.batch_size)

    def _one(self, wave: np.ndarray) -> np.ndarray:
        import torch

        x = torch.as_tensor(wave, dtype=torch.float32)
        if x.numel() < N_FFT:  # pad very short clips to one analysis window
            x = torch.nn.functional.pad(x, (0, N_FFT - x.numel()))
        power = self._mel(x)  # (N_MELS, T)
        logmel = torch.log(power + 1e-6)
        energy = torch.log(power.sum(0) + 1e-6)[None, None]  # (1, 1, T)
        env = torch.nn.functional.adaptive_avg_pool1d(energy, ENV_BINS)[0, 0]
        feats = [(logmel.mean(1) + 6.0) / 4.0, logmel.std(1, unbiased=False) / 2.0, (env - env.max()) / 4.0,
                 torch.tensor([wave.shape[0] / self.sample_rate / 10.0])]
        return torch.cat(feats).numpy().astype(np.float32)

    def embed_audio(self, waves: Sequence[np.ndarray]) -> np.ndarray:
        """(N, 145) float32 embeddings of 16 kHz mono waveforms."""
        import torch

        with torch.inference_mode():
            return np.stack([self._one(w) for w in check_waves(waves)])

    def describe(self) -> dict[str, Any]:
        return {"pipeline": self.pipeline, "checkpoint": "none (handcrafted)",
                "preprocessing": {"sample_rate": self.sample_rate, "n_mels": N_MELS, "n_fft": N_FFT,
                                  "hop_length": HOP, "envelope_bins": ENV_BINS}}
