"""Frame-level audio encoders (``hf_frames`` backend) for the captioning encoder ablations.

Any transformers audio model whose output has ``last_hidden_state`` (B, T, H) works:
Wav2Vec2/HuBERT/WavLM (waveform input) or AST/Whisper encoders (spectrogram input),
loaded from a folder or hub id with ``AutoModel``/``AutoFeatureExtractor``. With an empty
checkpoint a tiny random ``Wav2Vec2Model`` is built (tests, smoke runs).

The clip embedding is the mean over the frames that cover real audio: the number of
valid frames comes from the model's ``_get_feat_extract_output_lengths`` when it has one
(convolutional front-ends), else from the share of real samples in the padded batch.
Padding frames never enter the mean, so an embedding does not depend on its batch.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

from clapcap.data.audio import crop_wave
from clapcap.encoders.base import EncoderConfig, check_waves

logger = logging.getLogger(__name__)


def tiny_wav2vec2(seed: int = 0, hidden: int = 32) -> tuple[Any, Any]:
    """A 2-layer random ``Wav2Vec2Model`` (hidden 32) and its feature extractor, at 16 kHz.

    Its convolutional front end hops 320 samples (20 ms, 50 frames a second), as the real
    wav2vec 2.0's does. (An earlier 80-sample hop gave 2,000 frames for a 10-s clip, and the
    T x T self-attention took 5 of the embed stage's 5.3 minutes.)"""
    import torch
    from transformers import Wav2Vec2Config, Wav2Vec2FeatureExtractor, Wav2Vec2Model

    cfg = Wav2Vec2Config(hidden_size=hidden, num_hidden_layers=2, num_attention_heads=2, intermediate_size=2 * hidden,
                         conv_dim=(32, 32, 32, 32), conv_stride=(5, 4, 4, 4), conv_kernel=(10, 4, 4, 4),
                         num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4, do_stable_layer_norm=True,
                         feat_extract_norm="layer")
    torch.manual_seed(seed)
    fe = Wav2Vec2FeatureExtractor(feature_size=1, sampling_rate=16000, padding_value=0.0, do_normalize=True,
                                  return_attention_mask=True)
    return Wav2Vec2Model(cfg).eval(), fe


class FrameEncoder:
    """HF audio model with frame-level output, mean-pooled over real-audio frames."""

    pipeline = "hf_frames"

    def __init__(self, model: Any, feature_extractor: Any, *, checkpoint: str, max_seconds: float = 30.0,
                 crop: str = "head", batch_size: int = 8, device: str = "cpu"):
        self.model = model.to(device).eval()
        self.feature_extractor = feature_extractor
        self.checkpoint = checkpoint
        self.sample_rate = int(feature_extractor.sampling_rate)
        self.max_samples = int(max_seconds * self.sample_rate)
        self.crop = crop
        self.batch_size = batch_size
        self.device = device

    @classmethod
    def from_config(cls, cfg: EncoderConfig) -> FrameEncoder:
        if cfg.checkpoint:
            from transformers import AutoFeatureExtractor, AutoModel

            model, fe = AutoModel.from_pretrained(cfg.checkpoint), AutoFeatureExtractor.from_pretrained(cfg.checkpoint)
        else:
            model, fe = tiny_wav2vec2(cfg.tiny_seed)
        return cls(model, fe, checkpoint=cfg.checkpoint or f"random-tiny-wav2vec2-seed{cfg.tiny_seed}",
                   crop=cfg.crop, batch_size=cfg.batch_size, device=cfg.device)

    def _valid_frames(self, lengths: list[int], n_frames: int, padded: int) -> list[int]:
        fn = getattr(self.model, "_get_feat_extract_output_lengths", None)
        if fn is not None:
            import torch

            return [int(min(n_frames, max(1, v))) for v in fn(torch.tensor(lengths)).tolist()]
        return [int(min(n_frames, max(1, np.ceil(n_frames * n / padded)))) for n in lengths]

    def embed_audio_frames(self, waves: Sequence[np.ndarray]) -> tuple[np.ndarray, list[np.ndarray]]:
        """Returns ``(pooled (N, H) float32, [frames (T_i, H) float32 per clip])``."""
        import torch

        waves = [crop_wave(w, self.max_samples, self.crop) for w in check_waves(waves)]
        pooled, frames = [], []
        with torch.inference_mode():
            for i in range(0, len(waves), self.batch_size):
                chunk = waves[i:i + self.batch_size]
                inputs = self.feature_extractor(chunk, sampling_rate=self.sample_rate, padding=True,
                                                return_tensors="pt")
                hidden = self.model(**{k: v.to(self.device) for k, v in inputs.items()}).last_hidden_state
                padded = max(len(w) for w in chunk)
                valid = self._valid_frames([len(w) for w in chunk], hidden.shape[1], padded)
                for h, n in zip(hidden.float().cpu().numpy(), valid, strict=True):
                    frames.append(h[:n])
                    pooled.append(h[:n].mean(axis=0))
        return np.stack(pooled).astype(np.float32), frames

    def embed_audio(self, waves: Sequence[np.ndarray]) -> np.ndarray:
        """(N, H) float32 clip embeddings: mean over real-audio frames."""
        return self.embed_audio_frames(waves)[0]

    def describe(self) -> dict[str, Any]:
        return {"pipeline": self.pipeline, "checkpoint": self.checkpoint,
                "preprocessing": {"sample_rate": self.sample_rate, "max_samples": self.max_samples,
                                  "crop": self.crop, "pooling": "mean over real-audio frames"}}
