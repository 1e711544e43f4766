"""aisfx: the sound-effects CNN of Ma & Lerch (ISMIR 2022), 512-d embeddings (CC BY 4.0).

The PyPI package ``aisfx`` ships the X-Sequential-CE checkpoint
(``aisfx/models/checkpoint.pth``: a pickled ``(state_dict, dataset_dict)`` tuple, so it
needs ``torch.load(weights_only=False)``; it is a file of the installed package, not user
input). Only its ``EmbeddingNet`` is used: four conv blocks, mean over mel bins, max over
time -> 512.

Preprocessing follows the package (``aisfx.inference``, ``spectrogram_librosa``): 44.1 kHz,
peak-normalised waveform, 2048-sample Hann frames with a 1024-sample hop, 96 HTK mel bands
(0-22050 Hz, unit-sum filters) of the power spectrum, ``log10(1e4 * x + 1)``, divided by the
paper's maximum 9.4578. The package's librosa path returns bands x frames and blocks it
along the wrong axis; here the spectrogram is frames x bands, as its Essentia path gives
and ``EmbeddingNet`` expects. (Essentia normalises loudness by replay gain; the librosa
path, followed here, by the peak.)

Frames: the spectrogram is cut into blocks of 100 frames (2.3 s) every ``aisfx_hop`` x 100
frames, plus one block ending at the last frame when the hops do not reach it, so every
block is real audio and the tail is covered. A clip shorter than one block is one block of
its own length (the network pools over time, so no zero padding enters; clips under 8
frames, 0.19 s, are zero-padded to 8, the network's minimum). The clip embedding is the
mean of the block embeddings.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from clapcap.encoders.base import PretrainedEncoderConfig
from clapcap.encoders.pooling import FramePooledEncoder
from clapcap.pretrained.assets import package_dir, package_version
from clapcap.utils.io import sha256_file

SAMPLE_RATE = 44100
N_FFT, HOP, N_MELS = 2048, 1024, 96
BLOCK = 100  # spectrogram frames per block (about 2.3 s)
SPEC_MAX = 9.457798957824707  # the paper's normalisation maximum (aisfx.preprocessing)
MIN_FRAMES = 8  # three 2x2 max-pools


def aisfx_spectrogram(wave: np.ndarray) -> np.ndarray:
    """(T, 96) float32 normalised log-mel spectrogram of a 44.1 kHz waveform (module docstring)."""
    import librosa

    peak = float(np.max(np.abs(wave)))
    y = wave / peak if peak > 0 else wave
    spec = librosa.feature.melspectrogram(y=y.astype(np.float32), sr=SAMPLE_RATE, n_fft=N_FFT, hop_length=HOP,
                                          win_length=N_FFT, n_mels=N_MELS, fmin=0.0, fmax=SAMPLE_RATE / 2,
                                          htk=True, norm=1.0, power=2.0)
    return (np.log10(spec * 10000.0 + 1.0) / SPEC_MAX).T.astype(np.float32)


def block_starts(n_frames: int, hop: int) -> list[int]:
    """Start frames of the 100-frame blocks covering ``n_frames`` (``[0]`` for a shorter clip)."""
    if n_frames <= BLOCK:
        return [0]
    starts = list(range(0, n_frames - BLOCK + 1, hop))
    if starts[-1] + BLOCK < n_frames:
        starts.append(n_frames - BLOCK)
    return starts


class AisfxEncoder(FramePooledEncoder):
    """aisfx ``EmbeddingNet``: block embeddings (512-d) mean-pooled per clip."""

    sample_rate = SAMPLE_RATE
    dim = 512
    pipeline = "pretrained/aisfx"

    def __init__(self, cfg: PretrainedEncoderConfig) -> None:
        super().__init__(cfg)
        self.hop = max(1, int(round(BLOCK * cfg.aisfx_hop)))
        self.checkpoint = package_dir("aisfx", purpose="the aisfx encoder") / "models" / "checkpoint.pth"
        self.net = self._load(cfg.device)

    def _load(self, device: str) -> Any:
        import torch
        from aisfx.models.cnn2d import CrossNet, EmbeddingNet

        # A pickled (state_dict, dataset_dict) tuple shipped inside the package: weights_only=False.
        weights, ds_dict = torch.load(self.checkpoint, map_location="cpu", weights_only=False)
        model = CrossNet(EmbeddingNet("max", 3, 1, 64), ds_dict, "cpu")
        model.load_state_dict(weights)
        return model.embedding_net.to(device).eval()

    def _frames_batch(self, waves: list[np.ndarray]) -> list[np.ndarray]:
        import torch

        out = []
        for wave in waves:
            spec = aisfx_spectrogram(wave)  # (T, 96)
            if spec.shape[0] < MIN_FRAMES:
                spec = np.pad(spec, ((0, MIN_FRAMES - spec.shape[0]), (0, 0)))
            blocks = np.stack([spec[s:s + BLOCK] for s in block_starts(spec.shape[0], self.hop)])  # (B, <=100, 96)
            out.append(self.net(torch.from_numpy(blocks).to(self.cfg.device)).float().cpu().numpy())
        return out

    def describe(self) -> dict[str, Any]:
        meta = super().describe()
        meta["checkpoint"] = f"aisfx=={package_version('aisfx')}:models/checkpoint.pth"
        meta["weights_sha256"] = sha256_file(self.checkpoint)
        meta["preprocessing"] |= {"mel": f"{N_MELS} HTK bands, n_fft {N_FFT}, hop {HOP}, log10(1e4x+1)/{SPEC_MAX}",
                                  "peak_normalised": True, "block_frames": BLOCK, "block_hop_frames": self.hop}
        meta["pooling"] = "mean over 2.3-s block embeddings covering the clip"
        return meta
